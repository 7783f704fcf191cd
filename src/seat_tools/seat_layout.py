"""A mapped event's seat layout, uncompressed, for pages that draw the map.

See docs/guides/seat-maps.md and docs/reference/http-api.md.

The seat map item (`SEATMAP#<event>`/`MAP`) is zlib-compressed, which API Gateway's mapping
templates cannot read. So `seats event create --seat-map` also writes one layout item per section,
all in one partition so that one `Query` returns an event's whole layout:

| item          | pk                       | sk                           |
|---------------|--------------------------|------------------------------|
| section layout| `SEATLAYOUT#<event_id>`  | `SECTION#<class>#<section>`  |

Attributes: `event_id`, `seat_class`, `section`, `section_rank` (N, 0 is best), `orphans`
(the class's rule), `seat_count` (N) and `layout` (S): the section's rows front to back as
compact JSON, `[{"row": "R1", "seats": 14, "flags": {"blocked": [1, 2]}}, ...]` (flags omitted
when none). A seat's id is `<section>-<row>-<position>`. Written once, never changed (a map never
changes), like the map item. Nothing in the service reads it.
"""

from __future__ import annotations

import json
from typing import Any

from seat_inventory.dal.items import number
from seat_inventory.logic.seat_map import SeatMap

SEATLAYOUT_PREFIX = "SEATLAYOUT#"
SECTION_SK_PREFIX = "SECTION#"


def layout_key(event_id: str, seat_class: str, section: str) -> dict[str, Any]:
    return {
        "pk": {"S": SEATLAYOUT_PREFIX + event_id},
        "sk": {"S": f"{SECTION_SK_PREFIX}{seat_class}#{section}"},
    }


def section_layouts(seat_map: SeatMap) -> dict[tuple[str, str], list[dict[str, Any]]]:
    """(class, section) -> its rows front to back: row name, seat count, flag -> positions."""
    layouts: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for name, class_map in seat_map.classes.items():
        for row in sorted(class_map.rows, key=lambda r: (r.section, r.order)):
            flags: dict[str, list[int]] = {}
            for seat in row.seats:
                for flag in sorted(seat.flags):
                    flags.setdefault(flag.value, []).append(seat.position)
            entry: dict[str, Any] = {"row": row.name, "seats": len(row.seats)}
            if flags:
                entry["flags"] = flags
            layouts.setdefault((name, row.section), []).append(entry)
    return layouts


def layout_items(event_id: str, seat_map: SeatMap) -> list[dict[str, Any]]:
    """One item per section of the map (the table above)."""
    ranks = {(r.seat_class, r.section): r.section_rank for c in seat_map.classes.values() for r in c.rows}
    items = []
    for (seat_class, section), rows in section_layouts(seat_map).items():
        items.append(
            {
                **layout_key(event_id, seat_class, section),
                "entity": {"S": "seat_layout"},
                "event_id": {"S": event_id},
                "seat_class": {"S": seat_class},
                "section": {"S": section},
                "section_rank": number(ranks[(seat_class, section)]),
                "orphans": {"S": seat_map.classes[seat_class].orphans.value},
                "seat_count": number(sum(r["seats"] for r in rows)),
                "layout": {"S": json.dumps(rows, separators=(",", ":"))},
            }
        )
    return items
