"""The one transaction builder and the one refusal reader.

A take (`models.Take`) or a status change (`models.Transition`s of a group) becomes a list of
actions, one per item, each tagged with its role: a class's item (`SEATS`), a mapped class's row
item (`ROW`), a reservation's record (`RECORD`), a customer's counter (`COUNTER`), a capacity
pool's item (`POOL`), an admission token's use (`TOKEN`). The table renders each action as a
DynamoDB expression (`dal.expressions`), the in-memory store checks and applies it; both hand
the actions whose guard failed, with the item as it was, to `take_refusal` or `status_refusal`,
which say what the planner learns. No item is written twice in one transaction (DynamoDB refuses
it): an item of a pool several parts of an order take from is one action, guarded on their sum.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, ClassVar, TypeVar

from seat_inventory.models import (
    TAKES_SEATS,
    ClassRules,
    ClassTake,
    LineTake,
    Outcome,
    PoolInventory,
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
    row_item_of,
)

_V = TypeVar("_V")


class Role(StrEnum):
    SEATS = "seats"
    ROW = "row"
    RECORD = "record"
    COUNTER = "counter"
    POOL = "pool"
    TOKEN = "token"


@dataclass(frozen=True, slots=True)
class SeatsDelta:
    """How a status change moves one class or pool item: seats back to available, off held, off
    sold, and onto sold (held seats confirmed)."""

    released: int = 0
    unheld: int = 0
    unsold: int = 0
    sold: int = 0


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
    capacity the caller believes, for a class of one item)."""

    role: ClassVar[Role] = Role.SEATS
    key: SeatKey
    shard: int
    delta: SeatsDelta
    capacity: int | None


@dataclass(frozen=True, slots=True)
class ReleaseRow:
    """A mapped class's seats on one row item, each guarded on the state its record says
    (`seats`: position, state it must be in, sold after)."""

    role: ClassVar[Role] = Role.ROW
    key: SeatKey
    row_id: str
    seats: tuple[tuple[int, SeatState, bool], ...]


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
) -> list[Action]:
    """The class items the records' seats came from (each its own shard item, or each line's of an
    order: `ReservationRecord.takes`), a mapped class's row items, the records, the customers'
    counters and the pool items; `capacity` guards only `key`'s shard 0."""
    moved = _StatusMoves.of(transitions)
    actions: list[Action] = [
        ReturnSeats(k, shard, _delta(moved.items[(k, shard)]), capacity if (k, shard) == (key, 0) else None)
        for k, shard in sorted(moved.items, key=lambda item: (item[0].seat_class, item[1]))
    ]
    ordered_rows = sorted(moved.rows, key=lambda row: (row[0].seat_class, row[1]))
    actions += [ReleaseRow(k, row_id, tuple(moved.rows[(k, row_id)])) for k, row_id in ordered_rows]
    actions += [ChangeStatus(t, now, release_expires_at) for t in transitions]
    actions += [UncountCustomer(k, customer, seats) for (k, customer), seats in moved.counters.items()]
    return actions + [
        ReturnPoolSeats(key.event_id, ref, _delta(moved.pools[ref])) for ref in sorted(moved.pools)
    ]


@dataclass(slots=True)
class _StatusMoves:
    """What status changes move, per item: (transition, seats) per class shard item and pool item,
    (position, state it must be in, sold after) per row item, and seats per customer counter."""

    items: dict[tuple[SeatKey, int], list[tuple[Transition, int]]] = field(default_factory=dict)
    rows: dict[tuple[SeatKey, str], list[tuple[int, SeatState, bool]]] = field(default_factory=dict)
    counters: dict[tuple[SeatKey, str], int] = field(default_factory=dict)
    pools: dict[str, list[tuple[Transition, int]]] = field(default_factory=dict)

    @classmethod
    def of(cls, transitions: Sequence[Transition]) -> _StatusMoves:
        moved = cls()
        for t in transitions:
            for line in t.record.takes():
                moved.add(t, line)
        return moved

    def add(self, t: Transition, line: LineTake) -> None:
        was = SeatState.HELD if t.record.status is Outcome.HELD else SeatState.SOLD
        for seat in line.seats:
            row_id, position = row_item_of(seat)
            self.rows.setdefault((line.key, row_id), []).append((position, was, not t.releases_seats))
        if not line.seats:
            self.items.setdefault((line.key, line.shard), []).append((t, line.quantity))
        if t.releases_seats and line.customer_counted:
            counter = (line.key, t.record.answer.customer_id or "")
            self.counters[counter] = self.counters.get(counter, 0) + line.quantity
        for pool in line.pools:
            self.pools.setdefault(pool, []).append((t, line.quantity))


def _delta(moved: Sequence[tuple[Transition, int]]) -> SeatsDelta:
    released = unheld = unsold = sold = 0
    for transition, seats in moved:
        if transition.record.status is Outcome.HELD:
            unheld += seats
        else:
            unsold += seats
        if transition.to is Outcome.CONFIRMED:
            sold += seats
        else:
            released += seats
    return SeatsDelta(released, unheld, unsold, sold)


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
    """What a status change's failed guards tell. A seat not in the state its record says, while
    every record is as read, means the rows and the records disagree: `StoreInconsistency` (a row
    refused because its record changed meanwhile is that record's refusal)."""
    items = [old for action, old in failures if isinstance(action, ReturnSeats)]
    records: dict[str, ReservationRecord | None] = {
        action.transition.record.reservation_id: old
        for action, old in failures
        if isinstance(action, ChangeStatus)
    }
    if any(isinstance(action, ReleaseRow) for action, _ in failures) and not records:
        raise StoreInconsistency(f"{key}: seats are not in the state their records say")
    return TransitionsRefused(
        inventory_refused=bool(items),
        inventory=items[0] if items else None,
        records=records,
        counters_refused=frozenset(a.customer for a, _ in failures if isinstance(a, UncountCustomer)),
        pools_refused=frozenset(a.ref for a, _ in failures if isinstance(a, ReturnPoolSeats)),
    )
