"""Spreading containers over a mapped class's rows, as shard routing spreads them over shard items
(docs/guides/seat-maps.md, "At scale").

Containers with the same view would all aim at the same best block. So the class's rows (best
first) are dealt into slices like cards (row i to slice i mod n): each slice holds rows from the
front to the back, and each container places in its own slice first. Only placement uses slices:
every take is guarded on exactly the seats it takes.
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
