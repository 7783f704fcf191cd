"""Which waiting entries a round offers seats to, and which seats: pure, from what the round read.

The list is served in join order and never past its head: each entry in turn is offered its
quantity while the list's seats (the seats set aside for it) have them; the first entry they do
not fit waits, and every entry behind it with it (docs/guides/waiting-list.md).

- A counted class: the list's seats are counted in its lanes' ledgers, by the shard item and pool
  items they are held on (`models.ledger_key`). An entry's seats come from one such place (its
  record names one shard item); when none holds enough alone, seats of the same pool items move
  into the fullest shard item first (`ShardMove`). Then the lanes' seats are moved so that each
  lane holds what its own entries are offered (`LedgerMove`): each lane's offers are written
  together, and lanes apart, with no item all of them write.
- A mapped class: the list's seats are the row items' seats in state L. Each entry gets the best
  block among them for its quantity by the rules of best available (`seat_placement.place_best`:
  the fewest orphans, then the best ranked; pieces only with `split`; wheelchair and companion
  seats only with `accessible`), counting every free or set-aside seat as free.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from seat_inventory.logic.seat_map import ClassMap
from seat_inventory.logic.seat_placement import Placement, place_best
from seat_inventory.models import (
    EntryOffer,
    Lane,
    LedgerMove,
    Place,
    SeatRow,
    SeatState,
    ShardMove,
    ledger_key,
    ledger_place,
)


@dataclass(frozen=True, slots=True)
class CountedPlan:
    """A counted class's round: the offers in join order, the seats moved first (between shard
    items, then between lanes), and each lane's ledger change (seats moved in or out)."""

    offers: tuple[EntryOffer, ...]
    shard_moves: tuple[ShardMove, ...] = ()
    ledger_moves: tuple[LedgerMove, ...] = ()


def offer_expiry(now: int, offer_seconds: int, *ends: int | None) -> int:
    """When an offer made at `now` stops holding its seats: after `offer_seconds`, or at the
    first of `ends` (the list's `until`, the sale's end) before that."""
    return min([now + offer_seconds, *(end for end in ends if end is not None)])


def plan_counted(
    places: Sequence[Place], lanes: Sequence[Lane], *, expires_at: int, counted: bool = False
) -> CountedPlan:
    """The offers to the first entries (in join order) the list's seats fit, and the moves that
    put each offer's seats on one shard item and in its entry's lane."""
    pooled: Counter[str] = Counter()
    for lane in lanes:
        pooled.update({k: n for k, n in lane.seats.items() if n > 0})
    offers: list[EntryOffer] = []
    shard_moves: list[ShardMove] = []
    for place in places:
        found = _seats_for(place.quantity, pooled, shard_moves)
        if found is None:
            break
        pooled[found] -= place.quantity
        offers.append(EntryOffer(place, expires_at, ledger=found, counted=counted))
    converted = _converted(shard_moves)
    return CountedPlan(tuple(offers), tuple(shard_moves), tuple(_ledger_moves(offers, lanes, converted)))


def _seats_for(quantity: int, pooled: Counter[str], moves: list[ShardMove]) -> str | None:
    """The ledger key an entry's `quantity` seats come from: the one with the fewest seats that
    has enough (the others stay whole for larger entries); or, when none has, the fullest of a
    group of keys with the same pool items that has enough together, after moving seats into it
    (recorded in `moves`, applied to `pooled`). None when the seats do not fit."""
    fits = [k for k, n in pooled.items() if n >= quantity]
    if fits:
        return min(fits, key=lambda k: (pooled[k], k))
    groups: dict[tuple[str, ...], list[str]] = {}
    for k, n in pooled.items():
        if n > 0:
            groups.setdefault(ledger_place(k)[1], []).append(k)
    for pools, keys in sorted(groups.items()):
        if sum(pooled[k] for k in keys) < quantity:
            continue
        keys.sort(key=lambda k: (-pooled[k], k))
        target = keys[0]
        for donor in keys[1:]:
            seats = min(pooled[donor], quantity - pooled[target])
            if seats <= 0:
                break
            moves.append(ShardMove(ledger_place(donor)[0], ledger_place(target)[0], seats, pools))
            pooled[donor] -= seats
            pooled[target] += seats
        return target
    return None


def _converted(moves: Iterable[ShardMove]) -> Counter[str]:
    """Per ledger key, the seats the shard moves add (negative: take away)."""
    delta: Counter[str] = Counter()
    for move in moves:
        delta[ledger_key(move.donor, move.pools)] -= move.seats
        delta[ledger_key(move.target, move.pools)] += move.seats
    return delta


def _ledger_moves(
    offers: Sequence[EntryOffer], lanes: Sequence[Lane], converted: Counter[str]
) -> list[LedgerMove]:
    """The moves that leave each lane holding, per ledger key, at least what its own entries are
    offered: seats a shard move takes away come out of the lanes that need them least, seats it
    adds and surpluses go to the lanes short of them (lowest lane first)."""
    have = {lane.lane: Counter({k: n for k, n in lane.seats.items() if n > 0}) for lane in lanes}
    need: dict[int, Counter[str]] = {lane.lane: Counter() for lane in lanes}
    for offer in offers:
        need.setdefault(offer.place.lane, Counter())[offer.ledger] += offer.place.quantity
        have.setdefault(offer.place.lane, Counter())
    moves: list[LedgerMove] = []
    for key in sorted(set(converted) | {o.ledger for o in offers}):
        moves += _key_moves(key, have, need, converted.get(key, 0))
    return moves


def _key_moves(
    key: str, have: dict[int, Counter[str]], need: dict[int, Counter[str]], delta: int
) -> list[LedgerMove]:
    """The moves of one ledger key's seats between lanes (`delta`: what shard moves add or take
    away); `have` is updated."""
    moves: list[LedgerMove] = []
    spare = {lane: have[lane][key] - need[lane][key] for lane in sorted(have)}
    while delta < 0:  # seats converted away: from the lanes with the most to spare
        lane = max(spare, key=lambda n: (spare[n], -n))
        taken = min(-delta, have[lane][key])
        moves.append(LedgerMove(key, lane, -1, taken))
        have[lane][key] -= taken
        spare[lane] -= taken
        delta += taken
    for lane in sorted(spare):
        short = need[lane][key] - have[lane][key]
        if short <= 0:
            continue
        if delta > 0:  # seats converted into this key go to the lanes short of them first
            given = min(short, delta)
            moves.append(LedgerMove(key, -1, lane, given))
            have[lane][key] += given
            spare[lane] += given
            delta -= given
            short -= given
        for donor in sorted(spare, key=lambda n: (-spare[n], n)):
            if short <= 0 or spare[donor] <= 0:
                break
            given = min(short, spare[donor])
            moves.append(LedgerMove(key, donor, lane, given))
            spare[donor] -= given
            have[donor][key] -= given
            have[lane][key] += given
            spare[lane] += given
            short -= given
    if delta > 0:  # converted seats no entry needs now: kept in the lowest lane
        moves.append(LedgerMove(key, -1, min(have), delta))
    return moves


def lane_changes(moves: Iterable[LedgerMove]) -> dict[int, dict[str, int]]:
    """Per lane, what the ledger moves change (ledger key -> seats in, negative: out); -1 is the
    shard moves' side (seats converted from one key to another), in no lane."""
    changes: dict[int, dict[str, int]] = {}
    for move in moves:
        if move.source >= 0:
            mine = changes.setdefault(move.source, {})
            mine[move.ledger] = mine.get(move.ledger, 0) - move.seats
        if move.target >= 0:
            mine = changes.setdefault(move.target, {})
            mine[move.ledger] = mine.get(move.ledger, 0) + move.seats
    return {lane: {k: n for k, n in change.items() if n} for lane, change in changes.items()}


def listed_seats(rows: Mapping[str, SeatRow]) -> set[str]:
    """The seat ids the rows hold for the list (state L)."""
    return {
        f"{row_id.split('#', 1)[0]}-{position}"
        for row_id, row in rows.items()
        for position, state in row.states.items()
        if state is SeatState.LISTED
    }


def not_free_seats(rows: Mapping[str, SeatRow]) -> set[str]:
    """The seat ids the rows show neither free nor the list's: held, sold or blocked."""
    return {
        f"{row_id.split('#', 1)[0]}-{position}"
        for row_id, row in rows.items()
        for position, state in row.states.items()
        if state is not SeatState.LISTED
    }


def plan_mapped(
    places: Sequence[Place],
    class_map: ClassMap,
    rows: Mapping[str, SeatRow],
    *,
    expires_at: int,
    counted: bool = False,
) -> tuple[EntryOffer, ...]:
    """The offers to the first entries (in join order) a placement among the list's seats fits."""
    listed = listed_seats(rows)
    taken = not_free_seats(rows)
    offers: list[EntryOffer] = []
    for place in places:
        placed = place_best(
            class_map, taken, place.quantity, split=place.split, accessible=place.accessible, within=listed
        )
        if not isinstance(placed, Placement):
            break
        listed.difference_update(placed.seats)
        taken.update(placed.seats)
        offers.append(EntryOffer(place, expires_at, seats=placed.seats, counted=counted))
    return tuple(offers)
