"""Spreading containers over a mapped class's rows, the way shard routing spreads them over shard
items (docs/guides/seat-maps.md, "At scale").

Every container places best available on the same rule, so containers with the same view aim at
the same best block: one commits, the others' guards fail and their transactions meet on the same
row items. So the class's rows (best first) are dealt into *slices* like cards: row i goes to
slice i mod n. Each slice thus holds rows from the front to the back of the class, in the same
order. A container places in its own slice (drawn at random when it has none), best first; when
its slice has no block for a request it moves to another slice at random among those its view
shows with enough seats, and when a take is refused by a seat another container took there (it
shares the slice) it moves too. Requests are answered in arrival order by containers that all go
through their slices front to back at about the same pace, so on average earlier requests still
get better seats (`seats simulate --seat-map` measures the mean rank by arrival decile); the
price is that a request may get the best block of its container's slice rather than of the
class. When no slice a container tries has a block, the whole class is placed on (so a request is
SOLD_OUT only when no block fits anywhere on the view).

Only placement uses slices: every take is still guarded on exactly the seats it takes.
"""

from __future__ import annotations

from dataclasses import dataclass

from seat_inventory.logic.seat_map import ClassMap
from seat_inventory.models import ROW_BLOCK, SeatRow

# Rows per slice: enough that a slice holds a few requests' blocks in each depth of the class.
ROWS_PER_SLICE = 8
MAX_SLICES = 256


@dataclass(frozen=True, slots=True)
class Slice:
    """One slice: a class map of its rows only (best first) and the ids of their row items."""

    index: int
    class_map: ClassMap
    items: tuple[str, ...]

    def available(self, rows: dict[str, SeatRow]) -> int:
        """Seats the view shows free on the slice's row items."""
        return sum(rows[item].available for item in self.items if item in rows)

    def rows_of(self, rows: dict[str, SeatRow]) -> dict[str, SeatRow]:
        return {item: rows[item] for item in self.items if item in rows}


def deal(class_map: ClassMap) -> tuple[Slice, ...]:
    """The class's slices: its rows dealt round-robin, best first, into
    min(MAX_SLICES, rows // ROWS_PER_SLICE) slices (at least one)."""
    count = max(1, min(MAX_SLICES, len(class_map.rows) // ROWS_PER_SLICE))
    slices = []
    for index in range(count):
        rows = class_map.rows[index::count]
        items = tuple(
            f"{row.section}-{row.name}#{block}"
            for row in rows
            for block in range(-(-len(row.seats) // ROW_BLOCK))
        )
        sub = ClassMap(class_map.seat_class, rows, class_map.orphans, class_map.seats)
        slices.append(Slice(index, sub, items))
    return tuple(slices)
