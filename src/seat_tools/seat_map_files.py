"""Seat map files for the tools (docs/guides/seat-maps.md): a map read from a `.json` or `.csv` file, the
JSON the table stores (`dump_json`), and a map's row items (`row_items`: what `seats event
create --seat-map` writes, and the in-memory store builds)."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from seat_inventory.logic.seat_map import (
    CLASS_NAME,
    ClassMap,
    OrphanPolicy,
    SeatMap,
    SeatMapError,
    SeatRecord,
    build_seat_map,
    check_int,
    check_name,
    load_json,
    read_flags,
)
from seat_inventory.models import ROW_BLOCK

CSV_COLUMNS = ("class", "section", "section_rank", "row", "position", "flags")


def load_csv(text: str, policies: Mapping[str, OrphanPolicy] | None = None) -> SeatMap:
    """The CSV map: one seat per line with the header `class,section,section_rank,row,position,flags`
    (flags separated by `|`); rows in a section in order of first appearance (front first). Every
    class named is mapped with the `refuse` orphan policy unless `policies` says otherwise."""
    reader = csv.DictReader(io.StringIO(text))
    if tuple(reader.fieldnames or ()) != CSV_COLUMNS:
        raise SeatMapError(f"line 1: the header must be {','.join(CSV_COLUMNS)}")
    records: list[SeatRecord] = []
    for line, raw in enumerate(reader, start=2):
        where = f"line {line}"
        if None in raw or any(v is None for v in raw.values()):
            raise SeatMapError(f"{where}: expected {len(CSV_COLUMNS)} columns")
        section = check_name(raw["section"], "section", where)
        row = check_name(raw["row"], "row", where)
        rank = check_int(_as_int(raw["section_rank"]), "section_rank", where, 0)
        position = check_int(_as_int(raw["position"]), "position", where, 1)
        flags = read_flags([f for f in raw["flags"].split("|") if f.strip()], where)
        records.append(SeatRecord(raw["class"], section, rank, row, position, flags, where))
    if policies is None:
        policies = {r.seat_class: OrphanPolicy.REFUSE for r in records if CLASS_NAME.match(r.seat_class)}
    return build_seat_map(records, policies)


def _as_int(text: str) -> Any:
    try:
        return int(text.strip())
    except ValueError:
        return text


def load_file(path: str) -> SeatMap:
    """A map from a `.json` or `.csv` file."""
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    if path.lower().endswith(".csv"):
        return load_csv(text)
    if path.lower().endswith(".json"):
        return load_json(text)
    raise SeatMapError(f"{path}: a seat map is a .json or .csv file")


@dataclass(frozen=True, slots=True)
class RowItem:
    """One row item of a mapped class: its id, its first position and size, its blocked positions."""

    row_id: str
    section: str
    first: int
    size: int
    blocked: tuple[int, ...]


def row_items(class_map: ClassMap) -> list[RowItem]:
    """The class's row items, best row first."""
    items = []
    for row in class_map.rows:
        for start in range(0, len(row.seats), ROW_BLOCK):
            block = row.seats[start : start + ROW_BLOCK]
            items.append(
                RowItem(
                    f"{row.section}-{row.name}#{start // ROW_BLOCK}",
                    row.section,
                    start + 1,
                    len(block),
                    tuple(s.position for s in block if s.blocked),
                )
            )
    return items


def dump_json(seat_map: SeatMap) -> str:
    """The map in the JSON format `load_json` reads (compact): what the table stores."""
    classes = {name: {"orphans": c.orphans.value} for name, c in seat_map.classes.items()}
    sections: dict[str, dict[str, Any]] = {}
    for name, class_map in seat_map.classes.items():
        for row in class_map.rows:
            section = sections.setdefault(
                row.section, {"id": row.section, "class": name, "rank": row.section_rank, "rows": []}
            )
            flags: dict[str, list[int]] = {}
            for seat in row.seats:
                for flag in sorted(seat.flags):
                    flags.setdefault(flag.value, []).append(seat.position)
            entry: dict[str, Any] = {"id": row.name, "seats": len(row.seats)}
            if flags:
                entry["flags"] = flags
            section["rows"].append(entry)
    return json.dumps({"classes": classes, "sections": list(sections.values())}, separators=(",", ":"))
