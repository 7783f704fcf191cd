"""Seat maps: the seats of an event's mapped classes, their order for "best", and the map files.

Pure (no boto3): `load_json` turns a map as stored (and as written by hand, or converted from a
CSV by `seat_tools.seat_map_files`) into a validated `SeatMap`, or raises `SeatMapError` with a
one-line reason. docs/guides/seat-maps.md describes the formats and the rank rule.

A row here is a run of physically adjacent seats (an aisle splits a physical row into two rows of
the map); positions in a row are 1..n without gaps. A seat's id is `<section>-<row>-<position>`.

Rank rule (lower is better): the section's rank (from the map), then the row's order in its
section (listed front to back), then the seat's distance from the row's centre, then its position.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any


class SeatFlag(StrEnum):
    WHEELCHAIR = "wheelchair"
    COMPANION = "companion"
    RESTRICTED_VIEW = "restricted_view"
    BLOCKED = "blocked"


# Seats only requests that ask for them (`accessible`) may take.
ACCESSIBLE_FLAGS = frozenset({SeatFlag.WHEELCHAIR, SeatFlag.COMPANION})


class OrphanPolicy(StrEnum):
    """What a chosen-seat request that would leave a single empty seat gets (per mapped class)."""

    REFUSE = "refuse"
    ALLOW = "allow"


# Letters, digits, `_`: ids become parts of DynamoDB keys and attribute names.
_NAME = re.compile(r"^[A-Za-z0-9_]{1,16}$")
CLASS_NAME = re.compile(r"^[A-Za-z0-9_.:-]{1,64}$")
MAX_ROW_SEATS = 400


class SeatMapError(ValueError):
    """A seat map that cannot be loaded; the message is one line saying what is wrong and where."""


@dataclass(frozen=True, slots=True)
class Seat:
    seat_id: str
    seat_class: str
    section: str
    row: str
    position: int  # 1..row length
    flags: frozenset[SeatFlag] = frozenset()
    rank: int = 0  # 0 is the class's best seat (the rank rule above)
    # From the flags, once: placement asks them of every seat of every row it looks at.
    accessible: bool = field(init=False, repr=False, compare=False)
    blocked: bool = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "accessible", bool(self.flags & ACCESSIBLE_FLAGS))
        object.__setattr__(self, "blocked", SeatFlag.BLOCKED in self.flags)


@dataclass(frozen=True, slots=True)
class Row:
    """One row of a mapped class: its seats by position (index 0 is position 1)."""

    seat_class: str
    section: str
    name: str
    section_rank: int
    order: int  # the row's place in its section, 0 the front
    seats: tuple[Seat, ...]

    @property
    def row_id(self) -> str:
        return f"{self.section}-{self.name}"

    def centre_distance2(self, position: int) -> int:
        """Twice the distance of `position` from the row's centre (an integer for even rows too)."""
        return abs(2 * position - (len(self.seats) + 1))


@dataclass(frozen=True, slots=True)
class ClassMap:
    """One mapped class: its rows best first (section rank, then row order) and its orphan policy."""

    seat_class: str
    rows: tuple[Row, ...]
    orphans: OrphanPolicy = OrphanPolicy.REFUSE
    seats: Mapping[str, Seat] = field(default_factory=dict)

    @property
    def capacity(self) -> int:
        """Seats that can be sold (blocked seats excluded)."""
        return sum(1 for seat in self.seats.values() if not seat.blocked)


@dataclass(frozen=True, slots=True)
class SeatMap:
    classes: Mapping[str, ClassMap]

    def seat(self, seat_id: str) -> Seat | None:
        for class_map in self.classes.values():
            found = class_map.seats.get(seat_id)
            if found is not None:
                return found
        return None

    @property
    def seat_count(self) -> int:
        return sum(len(c.seats) for c in self.classes.values())


@dataclass(frozen=True, slots=True)
class SeatRecord:
    """One seat as read from a file, before validation."""

    seat_class: str
    section: str
    section_rank: int
    row: str
    position: int
    flags: frozenset[SeatFlag]
    where: str  # for errors: "line 12", "section S101 row R3"


def seat_id(section: str, row: str, position: int) -> str:
    return f"{section}-{row}-{position}"


def read_flags(raw: Iterable[Any], where: str) -> frozenset[SeatFlag]:
    out = set()
    for flag in raw:
        try:
            out.add(SeatFlag(str(flag).strip()))
        except ValueError:
            known = ", ".join(f.value for f in SeatFlag)
            raise SeatMapError(f"{where}: unknown flag {flag!r} (known: {known})") from None
    if SeatFlag.WHEELCHAIR in out and SeatFlag.COMPANION in out:
        raise SeatMapError(f"{where}: a seat cannot be both wheelchair and companion")
    return frozenset(out)


def check_name(value: Any, what: str, where: str) -> str:
    if not isinstance(value, str) or not _NAME.match(value):
        raise SeatMapError(f"{where}: {what} must be 1-16 letters, digits or '_', got {value!r}")
    return value


def check_int(value: Any, what: str, where: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise SeatMapError(f"{where}: {what} must be an integer >= {minimum}, got {value!r}")
    return value


def build_seat_map(records: Sequence[SeatRecord], policies: Mapping[str, OrphanPolicy]) -> SeatMap:
    """Validates the seats and ranks them: every class known, ids unique, rows 1..n without gaps,
    one section rank per section, a section in one class."""
    if not records:
        raise SeatMapError("the seat map has no seats")
    by_row: dict[tuple[str, str], dict[int, SeatRecord]] = {}
    row_order: dict[str, list[str]] = {}
    section_meta: dict[str, tuple[str, int]] = {}
    for rec in records:
        if rec.seat_class not in policies:
            known = ", ".join(sorted(policies)) or "none"
            raise SeatMapError(f"{rec.where}: unknown class {rec.seat_class!r} (classes: {known})")
        meta = section_meta.setdefault(rec.section, (rec.seat_class, rec.section_rank))
        if meta[0] != rec.seat_class:
            raise SeatMapError(
                f"{rec.where}: section {rec.section} is in classes {meta[0]} and {rec.seat_class}"
            )
        if meta[1] != rec.section_rank:
            raise SeatMapError(
                f"{rec.where}: section {rec.section} has ranks {meta[1]} and {rec.section_rank}"
            )
        row = by_row.setdefault((rec.section, rec.row), {})
        if not row:
            row_order.setdefault(rec.section, []).append(rec.row)
        if rec.position in row:
            raise SeatMapError(
                f"{rec.where}: duplicate seat {seat_id(rec.section, rec.row, rec.position)}"
                f" (position {rec.position} twice in row {rec.row} of section {rec.section})"
            )
        row[rec.position] = rec
    rows_by_class: dict[str, list[Row]] = {name: [] for name in policies}
    for section, names in row_order.items():
        seat_class, section_rank = section_meta[section]
        for order, name in enumerate(names):
            built = _row(seat_class, section, section_rank, order, by_row[(section, name)])
            rows_by_class[seat_class].append(built)
    classes = {}
    for name, rows in rows_by_class.items():
        if not rows:
            raise SeatMapError(f"class {name} has no seats")
        classes[name] = _rank_class(name, rows, policies[name])
    return SeatMap(classes)


def _row(seat_class: str, section: str, section_rank: int, order: int, recs: Mapping[int, SeatRecord]) -> Row:
    positions = sorted(recs)
    if len(positions) > MAX_ROW_SEATS:
        raise SeatMapError(f"section {section} row {recs[positions[0]].row}: more than {MAX_ROW_SEATS} seats")
    for expected, position in enumerate(positions, start=1):
        if position != expected:
            rec = recs[position]
            raise SeatMapError(
                f"{rec.where}: gap in row {rec.row} of section {section}: position {expected} is missing"
            )
    seats = tuple(
        Seat(seat_id(section, r.row, r.position), seat_class, section, r.row, r.position, r.flags)
        for r in (recs[p] for p in positions)
    )
    return Row(seat_class, section, seats[0].row, section_rank, order, seats)


def _rank_class(name: str, rows: list[Row], policy: OrphanPolicy) -> ClassMap:
    rows.sort(key=lambda r: (r.section_rank, r.section, r.order))
    keyed = [
        ((row.section_rank, row.section, row.order, row.centre_distance2(s.position), s.position), i, s)
        for i, row in enumerate(rows)
        for s in row.seats
    ]
    keyed.sort(key=lambda k: k[0])
    ranked: dict[str, Seat] = {}
    for rank, (_key, _i, seat) in enumerate(keyed):
        ranked[seat.seat_id] = replace(seat, rank=rank)
    final_rows = tuple(replace(r, seats=tuple(ranked[s.seat_id] for s in r.seats)) for r in rows)
    return ClassMap(name, final_rows, policy, ranked)


def _policies(raw: Any, where: str) -> dict[str, OrphanPolicy]:
    if not isinstance(raw, dict) or not raw:
        raise SeatMapError(f"{where}: 'classes' must be an object of class name -> settings")
    out = {}
    for name, settings in raw.items():
        if not CLASS_NAME.match(name):
            raise SeatMapError(f"{where}: bad class name {name!r}")
        settings = settings or {}
        if not isinstance(settings, dict):
            raise SeatMapError(f"{where}: class {name}: settings must be an object")
        unknown = set(settings) - {"orphans"}
        if unknown:
            raise SeatMapError(f"{where}: class {name}: unknown setting {sorted(unknown)[0]!r}")
        try:
            out[name] = OrphanPolicy(settings.get("orphans", OrphanPolicy.REFUSE.value))
        except ValueError:
            raise SeatMapError(f"{where}: class {name}: 'orphans' must be 'refuse' or 'allow'") from None
    return out


def load_json(text: str) -> SeatMap:
    """The JSON map (docs/guides/seat-maps.md): classes with their orphan policy, sections with their class
    and rank, rows front to back with their seat count and the flags of some positions."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SeatMapError(f"not JSON: {exc.msg} at line {exc.lineno}") from None
    if not isinstance(doc, dict):
        raise SeatMapError("the seat map must be a JSON object with 'classes' and 'sections'")
    policies = _policies(doc.get("classes"), "classes")
    sections = doc.get("sections")
    if not isinstance(sections, list) or not sections:
        raise SeatMapError("'sections' must be a non-empty list")
    records: list[SeatRecord] = []
    for index, section in enumerate(sections):
        records.extend(_json_section(section, index))
    return build_seat_map(records, policies)


def _json_section(section: Any, index: int) -> list[SeatRecord]:
    where = f"sections[{index}]"
    if not isinstance(section, dict):
        raise SeatMapError(f"{where}: a section must be an object")
    name = check_name(section.get("id"), "id", where)
    where = f"section {name}"
    rank = check_int(section.get("rank", index), "rank", where, 0)
    seat_class = section.get("class")
    if not isinstance(seat_class, str):
        raise SeatMapError(f"{where}: 'class' is required")
    rows = section.get("rows")
    if not isinstance(rows, list) or not rows:
        raise SeatMapError(f"{where}: 'rows' must be a non-empty list")
    records: list[SeatRecord] = []
    for row in rows:
        if not isinstance(row, dict):
            raise SeatMapError(f"{where}: a row must be an object")
        row_name = check_name(row.get("id"), "row id", where)
        row_where = f"section {name} row {row_name}"
        count = check_int(row.get("seats"), "seats", row_where, 1)
        flagged = _json_row_flags(row.get("flags", {}), count, row_where)
        records.extend(
            SeatRecord(seat_class, name, rank, row_name, p, flagged.get(p, frozenset()), row_where)
            for p in range(1, count + 1)
        )
    return records


def _json_row_flags(raw: Any, count: int, where: str) -> dict[int, frozenset[SeatFlag]]:
    """`{"wheelchair": [1, 2], "blocked": [9]}`: flag -> positions."""
    if not isinstance(raw, dict):
        raise SeatMapError(f"{where}: 'flags' must be an object of flag -> positions")
    by_position: dict[int, list[str]] = {}
    for flag, positions in raw.items():
        if not isinstance(positions, list):
            raise SeatMapError(f"{where}: flag {flag!r}: positions must be a list")
        for p in positions:
            check_int(p, f"flag {flag!r} position", where, 1)
            if p > count:
                raise SeatMapError(f"{where}: flag {flag!r} on position {p} of a row of {count} seats")
            by_position.setdefault(p, []).append(flag)
    return {p: read_flags(flags, f"{where} seat {p}") for p, flags in by_position.items()}
