"""The one transaction builder and the one refusal reader.

A take (`models.Take`), a status change (`models.Transition`s of a group) or a write of a class's
waiting list (a join, a leave, a round's offers and moves, seats going back on sale) becomes a
list of actions, one per item, each tagged with its role: a class's item (`SEATS`), a mapped
class's row item (`ROW`), a reservation's record (`RECORD`), a customer's counter (`COUNTER`), a
capacity pool's item (`POOL`), an admission token's use (`TOKEN`), and the waiting list's lane
items (`LANE`), places (`PLACE`) and customers' entries (`ENTRY`). The table renders each action as a
DynamoDB expression (`dal.expressions`), the in-memory store checks and applies it; both hand
the actions whose guard failed, with the item as it was, to `take_refusal` or `status_refusal`,
which say what the planner learns. No item is written twice in one transaction (DynamoDB refuses
it): an item of a pool several parts of an order take from is one action, guarded on their sum.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, ClassVar, TypeVar

from seat_inventory.models import (
    TAKES_SEATS,
    ClassRules,
    ClassTake,
    EntryOffer,
    Join,
    LaneWrite,
    LineTake,
    ListedReturn,
    ListRefused,
    Outcome,
    Place,
    PoolInventory,
    Rebalance,
    ReservationOutcome,
    ReservationRecord,
    SeatClassInventory,
    SeatKey,
    SeatRow,
    SeatState,
    StoreInconsistency,
    Take,
    TokenUse,
    Transition,
    TransitionsRefused,
    WriteRefused,
    ledger_key,
    ledger_place,
    pool_ref,
    row_item_of,
    seats_by_row,
)

_V = TypeVar("_V")


class Role(StrEnum):
    SEATS = "seats"
    ROW = "row"
    RECORD = "record"
    COUNTER = "counter"
    POOL = "pool"
    TOKEN = "token"
    LANE = "lane"
    PLACE = "place"
    ENTRY = "entry"


@dataclass(frozen=True, slots=True)
class SeatsDelta:
    """How a status change moves one class or pool item: seats back to available, off held, off
    sold, onto sold (held seats confirmed), and onto held for the class's waiting list (`listed`:
    seats given back that the list takes, docs/guides/waiting-list.md)."""

    released: int = 0
    unheld: int = 0
    unsold: int = 0
    sold: int = 0
    listed: int = 0


# ---------------------------------------------------------------------------- take actions


@dataclass(frozen=True, slots=True)
class TakeSeats:
    """`seats` (`held` of them held) off a class's shard item, after `moved` seats moved into it,
    guarded on the seats, the sale at `now` and the rules assumed."""

    role: ClassVar[Role] = Role.SEATS
    part: int
    key: SeatKey
    shard: int
    seats: int
    held: int
    moved: int
    rules: ClassRules
    now: int | None
    taken_at: float | None


@dataclass(frozen=True, slots=True)
class MoveSeats:
    """`seats` available seats (and as much capacity) off shard item `donor` of a class."""

    role: ClassVar[Role] = Role.SEATS
    part: int
    key: SeatKey
    donor: int
    seats: int


@dataclass(frozen=True, slots=True)
class TakeRow:
    """Exactly `positions` of a mapped class's row item, held or sold, guarded on each being free."""

    role: ClassVar[Role] = Role.ROW
    part: int
    key: SeatKey
    row_id: str
    positions: tuple[int, ...]
    held: bool
    rules: ClassRules
    now: int | None


@dataclass(frozen=True, slots=True)
class PutRecord:
    """A reservation's record, written only if none exists."""

    role: ClassVar[Role] = Role.RECORD
    part: int
    answer: ReservationOutcome
    expires_at: int | None
    counted: bool
    shard: int
    pools: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class CountCustomer:
    """`seats` more on a customer's counter of a class, guarded by the class's limit."""

    role: ClassVar[Role] = Role.COUNTER
    part: int
    key: SeatKey
    customer: str
    seats: int
    limit: int


@dataclass(frozen=True, slots=True)
class UseToken:
    """An admission token spent, unless another reservation spent it first."""

    role: ClassVar[Role] = Role.TOKEN
    part: int
    use: TokenUse


@dataclass(frozen=True, slots=True)
class TakeFromPool:
    """The seats of the parts taking from item `item` of a pool (`held` of them held), after
    `moved` seats moved into it (negative: out of it, into another part's item)."""

    role: ClassVar[Role] = Role.POOL
    event_id: str
    pool: str
    item: int
    seats: int
    held: int
    moved: int
    now: int | None


@dataclass(frozen=True, slots=True)
class MovePoolSeats:
    """`seats` available seats (and as much capacity) off item `donor` of a pool."""

    role: ClassVar[Role] = Role.POOL
    event_id: str
    pool: str
    donor: int
    seats: int


# ---------------------------------------------------------------------------- status actions


@dataclass(frozen=True, slots=True)
class ReturnSeats:
    """A status change's seats on a class's shard item; `capacity` guards seats given back (the
    capacity the caller believes, for a class of one item); `waitlist` guards the class's rule on
    seats given back (True: they go to its waiting list; False: it has none open; None: no guard)."""

    role: ClassVar[Role] = Role.SEATS
    key: SeatKey
    shard: int
    delta: SeatsDelta
    capacity: int | None
    waitlist: bool | None = None


@dataclass(frozen=True, slots=True)
class ReleaseRow:
    """A mapped class's seats on one row item, each guarded on the state it must be in and set to
    its state after (`seats`: position, state before, state after; None: free); `waitlist` guards
    the class's rule as `ReturnSeats` does, `now` (an offer) the sale being open then."""

    role: ClassVar[Role] = Role.ROW
    key: SeatKey
    row_id: str
    seats: tuple[tuple[int, SeatState, SeatState | None], ...]
    waitlist: bool | None = None
    now: int | None = None


@dataclass(frozen=True, slots=True)
class ChangeStatus:
    """A record's move to its new status, guarded on the status it was read with."""

    role: ClassVar[Role] = Role.RECORD
    transition: Transition
    now: int
    release_expires_at: int


@dataclass(frozen=True, slots=True)
class UncountCustomer:
    """`seats` off a customer's counter of a class."""

    role: ClassVar[Role] = Role.COUNTER
    key: SeatKey
    customer: str
    seats: int


@dataclass(frozen=True, slots=True)
class ReturnPoolSeats:
    """A status change's seats on the pool item `ref` names (`models.pool_ref`)."""

    role: ClassVar[Role] = Role.POOL
    event_id: str
    ref: str
    delta: SeatsDelta


# ---------------------------------------------------------------------------- waiting list actions


@dataclass(frozen=True, slots=True)
class ChangeLane:
    """One lane of a class's waiting list (docs/guides/waiting-list.md): `waiting` entries more
    (negative: fewer, guarded on the lane having them), its ledger's seats by ledger key (negative:
    taken, guarded on the lane holding them); a join's order keys (`join`: guarded on the list
    being open and the lane's frontier below the first, which the last then becomes); an offer's
    time (`offer_at`: guarded on the list offering then); `empty`: guarded on no entry waiting.
    With nothing to change it only checks its guards."""

    role: ClassVar[Role] = Role.LANE
    key: SeatKey
    lane: int
    waiting: int = 0
    ledger: Mapping[str, int] = field(default_factory=dict)
    join: tuple[str, str] | None = None
    offer_at: int | None = None
    empty: bool = False

    @property
    def changes(self) -> bool:
        return bool(self.waiting or any(self.ledger.values()) or self.join)


@dataclass(frozen=True, slots=True)
class PutPlace:
    """An entry's place on its lane, written only if none is there."""

    role: ClassVar[Role] = Role.PLACE
    place: Place


@dataclass(frozen=True, slots=True)
class DropPlace:
    """An entry's place taken off its lane (offered, or off the list), guarded on it being there."""

    role: ClassVar[Role] = Role.PLACE
    place: Place


@dataclass(frozen=True, slots=True)
class ClaimEntry:
    """A customer's entry on a class's list, written only if they have none: one entry per
    customer per class, for good."""

    role: ClassVar[Role] = Role.ENTRY
    place: Place


@dataclass(frozen=True, slots=True)
class JoinRecord:
    """A request refused SOLD_OUT joins the list: its record, guarded on still being that refusal,
    takes the WAITLISTED answer and the place's lane and key, and no longer expires."""

    role: ClassVar[Role] = Role.RECORD
    answer: ReservationOutcome
    place: Place


@dataclass(frozen=True, slots=True)
class OfferRecord:
    """An entry's offer: its record, guarded on WAITLISTED, becomes a hold (HELD, the OFFERED
    answer, the shard item and pool items its seats are on), in the holds' index and the offers'
    outbox."""

    role: ClassVar[Role] = Role.RECORD
    answer: ReservationOutcome
    shard: int
    pools: tuple[str, ...]
    counted: bool


@dataclass(frozen=True, slots=True)
class EndEntry:
    """An entry off the list without an offer: its record, guarded on WAITLISTED, moves to `to`
    (taking `answer` when given) and expires at `expires_at`; with `announce`, it enters the
    offers' outbox (its answer is published by the sweeper: no message asked for it)."""

    role: ClassVar[Role] = Role.RECORD
    reservation_id: str
    to: Outcome
    answer: ReservationOutcome | None
    expires_at: int
    announce: bool = False


@dataclass(frozen=True, slots=True)
class MoveHeld:
    """`seats` of the held seats a counted class sets aside for its list (and as much capacity)
    onto its shard item `shard` (negative: off it, guarded on it holding them); with `capacity`,
    guarded on the item's capacity being that, and with `waitlist`, on the class's list rule (seats
    the operator adds for the list)."""

    role: ClassVar[Role] = Role.SEATS
    key: SeatKey
    shard: int
    seats: int
    capacity: int | None = None
    waitlist: bool | None = None


Action = (
    TakeSeats
    | MoveSeats
    | TakeRow
    | PutRecord
    | CountCustomer
    | UseToken
    | TakeFromPool
    | MovePoolSeats
    | ReturnSeats
    | ReleaseRow
    | ChangeStatus
    | UncountCustomer
    | ReturnPoolSeats
    | ChangeLane
    | PutPlace
    | DropPlace
    | ClaimEntry
    | JoinRecord
    | OfferRecord
    | EndEntry
    | MoveHeld
)
# An action whose guard failed, and its item as it was (None: missing), decoded by its role.
Failure = tuple[Action, Any]


# ---------------------------------------------------------------------------- building


def take_actions(take: Take) -> list[Action]:
    """Each part's seats (its shard item and donors, or its row items), records, counters and
    token uses, then one action per pool item the parts touch, in (pool, item) order."""
    _check_parts(take.parts)
    actions: list[Action] = []
    for index, part in enumerate(take.parts):
        actions += _seats_actions(index, part, take.now)
        actions += [
            PutRecord(index, answer, *_where_recorded(part, answer, take.rejection_expires_at))
            for answer in part.outcomes
        ]
        limit = part.rules.max_per_customer
        actions += [
            CountCustomer(index, part.key, customer, seats, limit)
            for customer, seats in part.counters.items()
            if limit is not None
        ]
        actions += [UseToken(index, use) for use in part.token_uses]
    return actions + _pool_actions(take)


def _seats_actions(index: int, part: ClassTake, now: int | None) -> list[Action]:
    if part.seats <= 0:
        return []
    if part.rows:
        held = part.held > 0
        return [
            TakeRow(index, part.key, row_id, positions, held, part.rules, now)
            for row_id, positions in part.rows.items()
        ]
    moved = sum(part.moves.values())
    take = TakeSeats(
        index, part.key, part.shard, part.seats, part.held, moved, part.rules, now, part.taken_at
    )
    return [take, *(MoveSeats(index, part.key, donor, seats) for donor, seats in part.moves.items())]


def _where_recorded(
    part: ClassTake, answer: ReservationOutcome, rejection_expires_at: int
) -> tuple[int | None, bool, int, tuple[str, ...]]:
    """A record's TTL, whether its seats count against the customer's limit, and the shard item
    and pool items they came from (a rejection: none; it expires)."""
    if answer.outcome not in TAKES_SEATS:
        return rejection_expires_at, False, 0, ()
    return None, part.rules.max_per_customer is not None, part.shard, part.pool_refs


def _check_parts(parts: Sequence[ClassTake]) -> None:
    """Raises ValueError unless the parts fit one transaction: several parts are distinct classes
    of one event, each taking seats; moves never into their own item nor more than the seats."""
    keys = [p.key for p in parts]
    if len(parts) > 1 and (len(set(keys)) != len(keys) or len({k.event_id for k in keys}) != 1):
        raise ValueError(f"parts of one take must be distinct classes of one event: {keys}")
    if len(parts) > 1 and any(p.seats <= 0 for p in parts):
        raise ValueError("parts of one take must each take seats")
    for p in parts:
        if p.rows and p.moves:
            raise ValueError("a mapped class's take moves no seats between shard items")
        _check_moves(p.moves, p.shard, p.seats, f"shard {p.shard}")
        for pool, donors in p.pool_moves.items():
            item = p.pool_shards.get(pool, 0)
            _check_moves(donors, item, p.seats, f"item {item} of pool {pool}")


def _check_moves(moves: Mapping[int, int], target: int, seats: int, what: str) -> None:
    if target in moves or sum(moves.values()) > seats:
        raise ValueError(f"moves {dict(moves)} into {what} do not fit {seats} seat(s)")


def _pool_actions(take: Take) -> list[Action]:
    """One action per pool item: the seats of every part that takes from it (guarded on their
    sum) after the seats moved into it, less those it gives another part's item; an item that
    only gives is a donor's move."""
    takers: dict[tuple[str, int], list[ClassTake]] = {}
    moved_in: dict[tuple[str, int], int] = {}
    moved_out: dict[tuple[str, int], int] = {}
    for part in take.parts:
        if part.seats <= 0:
            continue
        for pool in part.rules.pools:
            target = (pool, part.pool_shards.get(pool, 0))
            takers.setdefault(target, []).append(part)
            for donor, seats in part.pool_moves.get(pool, {}).items():
                moved_in[target] = moved_in.get(target, 0) + seats
                moved_out[(pool, donor)] = moved_out.get((pool, donor), 0) + seats
    event_id = take.parts[0].key.event_id if take.parts else ""
    actions: list[Action] = []
    for pool, item in sorted(takers.keys() | moved_out.keys()):
        mine = takers.get((pool, item), [])
        moved = moved_in.get((pool, item), 0) - moved_out.get((pool, item), 0)
        if mine:
            seats, held = sum(p.seats for p in mine), sum(p.held for p in mine)
            actions.append(TakeFromPool(event_id, pool, item, seats, held, moved, take.now))
        else:
            actions.append(MovePoolSeats(event_id, pool, item, -moved))
    return actions


def status_actions(
    key: SeatKey,
    transitions: Sequence[Transition],
    *,
    now: int,
    capacity: int | None,
    release_expires_at: int,
    lists: Mapping[SeatKey, int] | None = None,
) -> list[Action]:
    """The class items the records' seats came from (each its own shard item, or each line's of an
    order: `ReservationRecord.takes`), a mapped class's row items, the records, the customers'
    counters and the pool items; `capacity` guards only `key`'s shard 0. Seats given back to a
    class in `lists` go to its waiting list (held for it; a counted class's counted in the lane
    `lists` names), to any other class back on sale, each item guarded on that rule."""
    lists = lists or {}
    moved = _StatusMoves.of(transitions, lists)
    actions: list[Action] = [
        ReturnSeats(
            k,
            shard,
            _delta(moved.items[(k, shard)]),
            capacity if (k, shard) == (key, 0) else None,
            waitlist=k in lists,
        )
        for k, shard in sorted(moved.items, key=lambda item: (item[0].seat_class, item[1]))
    ]
    ordered_rows = sorted(moved.rows, key=lambda row: (row[0].seat_class, row[1]))
    actions += [
        ReleaseRow(k, row_id, tuple(moved.rows[(k, row_id)]), waitlist=k in lists)
        for k, row_id in ordered_rows
    ]
    actions += [ChangeStatus(t, now, release_expires_at) for t in transitions]
    actions += [UncountCustomer(k, customer, seats) for (k, customer), seats in moved.counters.items()]
    actions += [ReturnPoolSeats(key.event_id, ref, _delta(moved.pools[ref])) for ref in sorted(moved.pools)]
    return actions + [
        ChangeLane(k, lists[k], ledger=ledger)
        for k, ledger in sorted(moved.ledgers.items(), key=lambda item: item[0].seat_class)
    ]


# A move of seats by a status change: its transition, the seats, and whether the list takes them.
_Moved = tuple[Transition, int, bool]


@dataclass(slots=True)
class _StatusMoves:
    """What status changes move, per item: (transition, seats, to the list) per class shard item and
    pool item, (position, state it must be in, state after) per row item, seats per customer
    counter, and the seats a counted class's list takes per ledger key."""

    lists: Mapping[SeatKey, int]
    items: dict[tuple[SeatKey, int], list[_Moved]] = field(default_factory=dict)
    rows: dict[tuple[SeatKey, str], list[tuple[int, SeatState, SeatState | None]]] = field(
        default_factory=dict
    )
    counters: dict[tuple[SeatKey, str], int] = field(default_factory=dict)
    pools: dict[str, list[_Moved]] = field(default_factory=dict)
    ledgers: dict[SeatKey, dict[str, int]] = field(default_factory=dict)

    @classmethod
    def of(cls, transitions: Sequence[Transition], lists: Mapping[SeatKey, int]) -> _StatusMoves:
        moved = cls(lists)
        for t in transitions:
            for line in t.record.takes():
                moved.add(t, line)
        return moved

    def add(self, t: Transition, line: LineTake) -> None:
        was = SeatState.HELD if t.record.status is Outcome.HELD else SeatState.SOLD
        listed = t.releases_seats and line.key in self.lists
        after = SeatState.SOLD if not t.releases_seats else SeatState.LISTED if listed else None
        for seat in line.seats:
            row_id, position = row_item_of(seat)
            self.rows.setdefault((line.key, row_id), []).append((position, was, after))
        if not line.seats:
            self.items.setdefault((line.key, line.shard), []).append((t, line.quantity, listed))
            if listed:
                ledger = self.ledgers.setdefault(line.key, {})
                place = ledger_key(line.shard, line.pools)
                ledger[place] = ledger.get(place, 0) + line.quantity
        if t.releases_seats and line.customer_counted:
            counter = (line.key, t.record.answer.customer_id or "")
            self.counters[counter] = self.counters.get(counter, 0) + line.quantity
        for pool in line.pools:
            self.pools.setdefault(pool, []).append((t, line.quantity, listed))


def _delta(moved: Sequence[_Moved]) -> SeatsDelta:
    released = unheld = unsold = sold = listed = 0
    for transition, seats, to_list in moved:
        if transition.record.status is Outcome.HELD:
            unheld += seats
        else:
            unsold += seats
        if transition.to is Outcome.CONFIRMED:
            sold += seats
        elif to_list:
            listed += seats
        else:
            released += seats
    return SeatsDelta(released, unheld, unsold, sold, listed)


# ---------------------------------------------------------------------------- the waiting list


def join_actions(join: Join) -> list[Action]:
    """Each joining request's record (still its SOLD_OUT refusal), its customer's entry and its
    place, then the lane, which counts them and moves its frontier to the last key."""
    actions: list[Action] = []
    for answer, place in join.entries:
        actions += [JoinRecord(answer, place), ClaimEntry(place), PutPlace(place)]
    join_keys = (join.first, join.last)
    return [*actions, ChangeLane(join.key, join.lane, waiting=len(join.entries), join=join_keys)]


def lane_actions(write: LaneWrite) -> list[Action]:
    """One lane's offers (each record a hold of its seats, its place dropped, its customer counted
    under a limit) and ends (each record moved on, its place dropped), the row items of a mapped
    class's offered seats (each seat the list's, held now), and the lane (its entries and the
    ledger seats offered off it)."""
    actions: list[Action] = []
    rows: dict[str, list[tuple[int, SeatState, SeatState | None]]] = {}
    for offer in write.offers:
        actions += _offer_actions(write, offer)
        for row_id, positions in seats_by_row(offer.seats).items():
            rows.setdefault(row_id, []).extend((p, SeatState.LISTED, SeatState.HELD) for p in positions)
    for end in write.ends:
        announce = end.to is not Outcome.LEFT  # a leave is answered to its own message
        record = EndEntry(end.place.reservation_id, end.to, end.answer, end.expires_at, announce)
        actions += [record, DropPlace(end.place)]
    actions += [
        ReleaseRow(write.key, row_id, tuple(seats), now=write.now) for row_id, seats in sorted(rows.items())
    ]
    entries = len(write.offers) + len(write.ends)
    ledger = {k: -n for k, n in _ledger_taken(write.offers).items()}
    offer_at = write.now if write.offers else None
    return [*actions, ChangeLane(write.key, write.lane, waiting=-entries, ledger=ledger, offer_at=offer_at)]


def _offer_actions(write: LaneWrite, offer: EntryOffer) -> list[Action]:
    if offer.answer is None:
        raise ValueError(f"the offer to {offer.place.reservation_id!r} has no answer")
    shard, pools = ledger_place(offer.ledger) if offer.ledger else (0, write.pools)
    counted = offer.counted and write.limit is not None
    actions: list[Action] = [OfferRecord(offer.answer, shard, pools, counted), DropPlace(offer.place)]
    if counted and write.limit is not None:
        place = offer.place
        actions.append(CountCustomer(0, write.key, place.customer_id, place.quantity, write.limit))
    return actions


def _ledger_taken(offers: Iterable[EntryOffer]) -> dict[str, int]:
    taken: dict[str, int] = {}
    for offer in offers:
        if offer.ledger:
            taken[offer.ledger] = taken.get(offer.ledger, 0) + offer.place.quantity
    return taken


def rebalance_actions(rebalance: Rebalance) -> list[Action]:
    """The shard items seats move between, then each lane's ledger change."""
    per_shard: dict[int, int] = {}
    for move in rebalance.shards:
        per_shard[move.donor] = per_shard.get(move.donor, 0) - move.seats
        per_shard[move.target] = per_shard.get(move.target, 0) + move.seats
    key = rebalance.key
    actions: list[Action] = [
        MoveHeld(key, shard, seats) for shard, seats in sorted(per_shard.items()) if seats
    ]
    changes = sorted(rebalance.lanes.items())
    return actions + [ChangeLane(key, lane, ledger=dict(change)) for lane, change in changes if change]


def added_seats_actions(key: SeatKey, seats: int, *, capacity: int, lane: int) -> list[Action]:
    """Seats the operator adds to a class for its waiting list: capacity and held up on its shard
    item 0 (guarded on the capacity read, `capacity`, and on the list rule), counted in `lane`."""
    return [
        MoveHeld(key, 0, seats, capacity=capacity, waitlist=True),
        ChangeLane(key, lane, ledger={ledger_key(0): seats}),
    ]


def return_actions(back: ListedReturn) -> list[Action]:
    """The list's seats back on sale: off held onto available on each shard item (a counted class)
    or row item (a mapped class: each seat the list's, then free) and pool item they are held on,
    off the lanes' ledgers; with `empty`, every lane guarded on no entry waiting."""
    key = back.key
    by_place: dict[str, int] = {}
    for ledger in back.ledgers.values():
        for place, seats in ledger.items():
            by_place[place] = by_place.get(place, 0) + seats
    by_shard: dict[int, int] = {}
    by_pool: dict[str, int] = {}
    for place, seats in by_place.items():
        shard, pools = ledger_place(place)
        by_shard[shard] = by_shard.get(shard, 0) + seats
        for ref in pools:
            by_pool[ref] = by_pool.get(ref, 0) + seats
    actions: list[Action] = [
        ReturnSeats(key, shard, SeatsDelta(released=n, unheld=n), None)
        for shard, n in sorted(by_shard.items())
    ]
    for row_id, positions in sorted(back.rows.items()):
        actions.append(ReleaseRow(key, row_id, tuple((p, SeatState.LISTED, None) for p in positions)))
        for pool in back.pools:
            by_pool[pool_ref(pool)] = by_pool.get(pool_ref(pool), 0) + len(positions)
    delta = {ref: SeatsDelta(released=n, unheld=n) for ref, n in by_pool.items()}
    actions += [ReturnPoolSeats(key.event_id, ref, delta[ref]) for ref in sorted(delta)]
    lanes = range(back.lanes) if back.empty else sorted(back.ledgers)
    taken = {lane: {k: -n for k, n in back.ledgers.get(lane, {}).items()} for lane in lanes}
    return actions + [ChangeLane(key, lane, ledger=taken[lane], empty=back.empty) for lane in lanes]


# ---------------------------------------------------------------------------- reading refusals


def take_refusal(take: Take, failures: Sequence[Failure]) -> WriteRefused:
    """What a take's failed guards tell, part by part and for the take as a whole."""
    by_part: list[list[Failure]] = [[] for _ in take.parts]
    pools: dict[str, PoolInventory | None] = {}
    for action, old in failures:
        if isinstance(action, TakeFromPool | MovePoolSeats):
            pools.setdefault(action.pool, old)
        else:
            by_part[action.part].append((action, old))  # type: ignore[union-attr]
    parts = tuple(_part_refusal(part) for part in by_part)
    found = [p for p in parts if p is not None]
    first_item = next((p for p in found if p.inventory_refused), None)
    return WriteRefused(
        inventory_refused=first_item is not None,
        inventory=first_item.inventory if first_item is not None else None,
        already_recorded=_merged(p.already_recorded for p in found),
        customer_seats=_merged(p.customer_seats for p in found),
        tokens_used=_merged(p.tokens_used for p in found),
        pools_refused=pools,
        rows=_merged(p.rows for p in found),
        parts=parts,
    )


def _merged(maps: Iterable[Mapping[str, _V]]) -> dict[str, _V]:
    return {k: v for m in maps for k, v in m.items()}


def _part_refusal(failures: Sequence[Failure]) -> WriteRefused | None:
    """One part's refusal (its class item or rows, records, counters, token uses); None when
    nothing of it refused."""
    if not failures:
        return None
    refused_item = False
    inventory: SeatClassInventory | None = None
    rows: dict[str, SeatRow | None] = {}
    recorded: dict[str, ReservationOutcome] = {}
    counters: dict[str, int] = {}
    tokens: dict[str, str] = {}
    for action, old in failures:
        if isinstance(action, MoveSeats) and old is None:
            raise StoreInconsistency("a shard item that seats move from does not exist")
        if isinstance(action, TakeSeats | MoveSeats) and not refused_item:
            refused_item, inventory = True, old
        elif isinstance(action, TakeRow):
            rows[action.row_id] = old
        elif isinstance(action, PutRecord):
            recorded[action.answer.reservation_id] = _present(old, "record").answer
        elif isinstance(action, CountCustomer):
            counters[action.customer] = _present(old, "counter")
        elif isinstance(action, UseToken):
            tokens[action.use.token_id] = _present(old, "token")
    return WriteRefused(
        inventory_refused=refused_item or bool(rows),
        inventory=inventory,
        already_recorded=recorded,
        customer_seats=counters,
        tokens_used=tokens,
        rows=rows,
    )


def _present(old: Any, what: str) -> Any:
    if old is None:
        raise RuntimeError(f"{what} condition failed without ALL_OLD item")
    return old


def status_refusal(key: SeatKey, failures: Sequence[Failure]) -> TransitionsRefused:
    """What a status change's failed guards tell. An item or row whose waiting list rule is not
    the one assumed, or a lane missing, names its class (`lists_changed`). A seat not in the state
    its record says, while every record is as read, means the rows and the records disagree:
    `StoreInconsistency` (a row refused because its record changed meanwhile is that record's
    refusal)."""
    lists_changed = _lists_changed(failures)
    items = [old for a, old in failures if isinstance(a, ReturnSeats) and a.key not in lists_changed]
    records: dict[str, ReservationRecord | None] = _keyed(
        failures, ChangeStatus, lambda a: a.transition.record.reservation_id
    )
    rows = [a for a, _ in failures if isinstance(a, ReleaseRow) and a.key not in lists_changed]
    if rows and not records:
        raise StoreInconsistency(f"{key}: seats are not in the state their records say")
    return TransitionsRefused(
        inventory_refused=bool(items),
        inventory=items[0] if items else None,
        records=records,
        counters_refused=frozenset(_keyed(failures, UncountCustomer, lambda a: a.customer)),
        pools_refused=frozenset(_keyed(failures, ReturnPoolSeats, lambda a: a.ref)),
        lists_changed=frozenset(lists_changed),
    )


def _keyed(failures: Sequence[Failure], kind: Any, key: Callable[[Any], _V]) -> dict[_V, Any]:
    """The failures of actions of `kind`, each item as it was by `key` of its action."""
    return {key(action): old for action, old in failures if isinstance(action, kind)}


def _lists_changed(failures: Sequence[Failure]) -> set[SeatKey]:
    """The classes whose waiting list rule refused a status change (`_rule_refused`)."""
    return {
        a.key
        for a, old in failures
        if isinstance(a, ReturnSeats | ReleaseRow | ChangeLane) and _rule_refused(a, old)
    }


def _rule_refused(action: ReturnSeats | ReleaseRow | ChangeLane, old: Any) -> bool:
    """Whether a status change's action was refused for its class's waiting list rule: an item or
    row with another rule than assumed, or a lane (the list's seats) missing."""
    if isinstance(action, ChangeLane):
        return True
    if action.waitlist is None or old is None:
        return False
    return bool(old.waitlist) != action.waitlist


def list_refusal(failures: Sequence[Failure]) -> ListRefused:
    """What a waiting list write's failed guards tell: records not as assumed (as they are), places
    gone, lanes as they are, rows whose seats are no longer the list's, customers' entries found
    (their reservation), shard items short of held seats, customers' counters."""
    return ListRefused(
        records=_keyed(failures, JoinRecord | OfferRecord | EndEntry, _record_id),
        places_gone=frozenset(_keyed(failures, DropPlace | PutPlace, lambda a: a.place.order)),
        lanes=_keyed(failures, ChangeLane, lambda a: a.lane),
        rows=frozenset(_keyed(failures, ReleaseRow, lambda a: a.row_id)),
        entries=_keyed(failures, ClaimEntry, lambda a: a.place.customer_id),
        shards=frozenset(_keyed(failures, MoveHeld | ReturnSeats, lambda a: a.shard)),
        counters=_keyed(failures, CountCustomer, lambda a: a.customer),
        pools=frozenset(_keyed(failures, ReturnPoolSeats, lambda a: a.ref)),
    )


def _record_id(action: JoinRecord | OfferRecord | EndEntry) -> str:
    if isinstance(action, EndEntry):
        return action.reservation_id
    return action.answer.reservation_id
