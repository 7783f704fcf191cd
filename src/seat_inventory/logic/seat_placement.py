"""Placing a request on a seat map: chosen seats, or the best block of N adjacent seats.

Pure: given a mapped class and the seats already taken, which seats a request gets, or why none
(the store then takes exactly those, each guarded). Rules (docs/guides/seat-maps.md): an orphan is a free
seat between two that are not; best available takes N adjacent seats in one row, creating the
fewest orphans, then best ranked (section, row, distance from the row's centre, position);
`split` takes the largest blocks that fit when none holds all; wheelchair and companion seats go
only to `accessible` requests; chosen seats are all free or refused (SEATS_TAKEN), and refused
(ORPHAN_SEAT) when they strand a seat in a class whose policy refuses orphans.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from enum import StrEnum

from seat_inventory.logic.seat_map import ClassMap, OrphanPolicy, Row


class Refused(StrEnum):
    SEATS_TAKEN = "SEATS_TAKEN"  # chosen seats not free: `seats` names them
    ORPHAN_SEAT = "ORPHAN_SEAT"  # chosen seats would strand a single seat: `seats` names it
    NO_BLOCK = "NO_BLOCK"  # best available: no placement fits (answered SOLD_OUT)
    NOT_IN_CLASS = "NOT_IN_CLASS"  # a chosen seat is not one of the class's seats (INVALID)
    NOT_ACCESSIBLE = "NOT_ACCESSIBLE"  # a chosen accessible seat without `accessible` (INVALID)


@dataclass(frozen=True, slots=True)
class Placement:
    """A request's seats (ids, best first for best available, as asked for chosen seats)."""

    seats: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Refusal:
    why: Refused
    seats: tuple[str, ...] = ()

    @property
    def reason(self) -> str:
        names = ", ".join(self.seats)
        return {
            Refused.SEATS_TAKEN: f"seats not free: {names}",
            Refused.ORPHAN_SEAT: f"the seats would leave a single empty seat: {names}",
            Refused.NO_BLOCK: "no placement fits",
            Refused.NOT_IN_CLASS: f"not seats of this class: {names}",
            Refused.NOT_ACCESSIBLE: f"wheelchair or companion seats need 'accessible': {names}",
        }[self.why]


def free_positions(row: Row, taken: Collection[str]) -> list[bool]:
    """Per position (index 0 is position 1): True when the seat is free (not blocked, not taken)."""
    return [not seat.blocked and seat.seat_id not in taken for seat in row.seats]


def orphans(free: Sequence[bool]) -> set[int]:
    """Indexes of free seats with no free neighbour in the row."""
    n = len(free)
    return {
        i for i in range(n) if free[i] and (i == 0 or not free[i - 1]) and (i == n - 1 or not free[i + 1])
    }


def place_chosen(
    class_map: ClassMap, taken: Collection[str], seat_ids: Sequence[str], accessible: bool = False
) -> Placement | Refusal:
    """Exactly `seat_ids` or none."""
    unknown = tuple(s for s in seat_ids if s not in class_map.seats)
    if unknown:
        return Refusal(Refused.NOT_IN_CLASS, unknown)
    seats = [class_map.seats[s] for s in seat_ids]
    if not accessible:
        special = tuple(s.seat_id for s in seats if s.accessible)
        if special:
            return Refusal(Refused.NOT_ACCESSIBLE, special)
    not_free = tuple(s.seat_id for s in seats if s.blocked or s.seat_id in taken)
    if not_free:
        return Refusal(Refused.SEATS_TAKEN, not_free)
    if class_map.orphans is OrphanPolicy.REFUSE:
        stranded = stranded_by(class_map, taken, seat_ids)
        if stranded:
            return Refusal(Refused.ORPHAN_SEAT, stranded)
    return Placement(tuple(seat_ids))


def stranded_by(class_map: ClassMap, taken: Collection[str], seat_ids: Collection[str]) -> tuple[str, ...]:
    """The seats that taking `seat_ids` would leave as new orphans."""
    rows = {(class_map.seats[s].section, class_map.seats[s].row) for s in seat_ids}
    after = set(taken) | set(seat_ids)
    out: list[str] = []
    for row in class_map.rows:
        if (row.section, row.name) in rows:
            new = orphans(free_positions(row, after)) - orphans(free_positions(row, taken))
            out.extend(row.seats[i].seat_id for i in sorted(new))
    return tuple(out)


# A candidate block: (orphans created, not accessible-preferred, row index, centre distance, first index)
_Key = tuple[int, int, int, int, int]


def _best_in_row(
    row: Row,
    row_index: int,
    taken: Collection[str],
    quantity: int,
    accessible: bool,
    within: Collection[str] | None = None,
) -> _Key | None:
    free = free_positions(row, taken)
    if free.count(True) < quantity:
        return None  # no block of `quantity` seats in a row with fewer free
    usable = [
        f and (accessible or not s.accessible) and (within is None or s.seat_id in within)
        for f, s in zip(free, row.seats, strict=True)
    ]
    keys = [
        key
        for start, end in _runs(usable)
        for key in _blocks(row, row_index, free, start, end, quantity, accessible)
    ]
    return min(keys, default=None)


def _runs(usable: Sequence[bool]) -> list[tuple[int, int]]:
    """The runs [start, end) of usable seats in a row."""
    runs: list[tuple[int, int]] = []
    start = 0
    while start < len(usable):
        if not usable[start]:
            start += 1
            continue
        end = start
        while end < len(usable) and usable[end]:
            end += 1
        runs.append((start, end))
        start = end
    return runs


def _blocks(
    row: Row, row_index: int, free: Sequence[bool], start: int, end: int, quantity: int, accessible: bool
) -> list[_Key]:
    """The keys of the blocks of `quantity` seats in the usable run [start, end)."""
    # The usable run sits inside a free run [lo, hi) (accessible seats may border it).
    n = len(free)
    lo, hi = start, end
    while lo > 0 and free[lo - 1]:
        lo -= 1
    while hi < n and free[hi]:
        hi += 1
    keys: list[_Key] = []
    for first in range(start, end - quantity + 1):
        last = first + quantity - 1
        made = (first - lo == 1) + (hi - last - 1 == 1)
        has_special = any(row.seats[i].accessible for i in range(first, last + 1))
        centre = abs(first + last + 2 - (n + 1))
        keys.append((made, int(accessible and not has_special), row_index, centre, first))
    return keys


def _best_block(
    class_map: ClassMap,
    taken: Collection[str],
    quantity: int,
    accessible: bool,
    within: Collection[str] | None = None,
) -> _Key | None:
    best: _Key | None = None
    for index, row in enumerate(class_map.rows):
        if len(row.seats) < quantity:
            continue
        key = _best_in_row(row, index, taken, quantity, accessible, within)
        if key is not None and (best is None or key < best):
            best = key
            if key[0] == 0 and key[1] == 0:
                break  # rows are best first: no later row beats a block creating no orphan
    return best


def _block_ids(class_map: ClassMap, key: _Key, quantity: int) -> tuple[str, ...]:
    row = class_map.rows[key[2]]
    return tuple(s.seat_id for s in row.seats[key[4] : key[4] + quantity])


def place_best(
    class_map: ClassMap,
    taken: Collection[str],
    quantity: int,
    split: bool = False,
    accessible: bool = False,
    within: Collection[str] | None = None,
) -> Placement | Refusal:
    """The best block of `quantity` adjacent seats; with `split`, pieces when no block fits.
    With `within`, only those seats are placed on (the waiting list's), every seat not `taken`
    counting as free for the orphan rule."""
    key = _best_block(class_map, taken, quantity, accessible, within)
    if key is not None:
        return Placement(_block_ids(class_map, key, quantity))
    if not split or quantity == 1:
        return Refusal(Refused.NO_BLOCK)
    now_taken = set(taken)
    seats: list[str] = []
    remaining = quantity
    while remaining:
        for size in range(remaining, 0, -1):
            key = _best_block(class_map, now_taken, size, accessible, within)
            if key is not None:
                piece = _block_ids(class_map, key, size)
                seats.extend(piece)
                now_taken.update(piece)
                remaining -= size
                break
        else:
            return Refusal(Refused.NO_BLOCK)
    return Placement(tuple(seats))
