"""Writes a stadium seat map (docs/guides/seat-maps.md's JSON format) of about 60,000 seats.

    python scripts/make_stadium_map.py examples/seat_maps/stadium.json

A bowl of 4 stands x 2 tiers; each stand has sections 101-... (lower tier) and 201-... (upper
tier); rows widen going back. Deterministic: the same file every run.
"""

from __future__ import annotations

import json
import sys
from typing import Any

STANDS = ("N", "E", "S", "W")
# (tier, class, sections per stand, rows, first row's seats, seats added every 3 rows)
TIERS = ((1, "LOWER", 12, 30, 18, 1), (2, "UPPER", 12, 24, 24, 1))


def stadium() -> dict[str, Any]:
    sections = []
    for tier, seat_class, per_stand, rows, first, grow in TIERS:
        for stand in STANDS:
            for s in range(per_stand):
                # The long stands (E, W) face the pitch: their middle sections rank best.
                centre = abs(2 * s - (per_stand - 1)) // 2
                rank = centre + (0 if stand in ("E", "W") else per_stand // 2)
                section_rows = []
                for r in range(rows):
                    row: dict[str, Any] = {"id": f"R{r + 1}", "seats": first + (r // 3) * grow}
                    if tier == 1 and r == 0 and s % 3 == 0:
                        row["flags"] = {"wheelchair": [1, 3], "companion": [2, 4]}
                    if tier == 2 and r == rows - 1:
                        row["flags"] = {"restricted_view": list(range(1, row["seats"] + 1))}
                    section_rows.append(row)
                sections.append(
                    {
                        "id": f"{stand}{tier}{s + 1:02d}",
                        "class": seat_class,
                        "rank": rank,
                        "rows": section_rows,
                    }
                )
    return {"classes": {"LOWER": {"orphans": "refuse"}, "UPPER": {"orphans": "allow"}}, "sections": sections}


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: make_stadium_map.py OUT.json", file=sys.stderr)
        return 2
    with open(argv[1], "w", encoding="utf-8") as out:
        json.dump(stadium(), out, separators=(",", ":"))
        out.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
