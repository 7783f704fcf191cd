"""Seat maps: loading (JSON and CSV), the one-line errors, and the rank rule."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from seat_inventory.logic.seat_map import OrphanPolicy, SeatFlag, SeatMapError, load_json
from seat_tools.seat_map_files import load_csv, load_file

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "seat_maps"


def _doc(**section: object) -> str:
    base: dict[str, object] = {"id": "S1", "class": "A", "rank": 0, "rows": [{"id": "R1", "seats": 3}]}
    base.update(section)
    return json.dumps({"classes": {"A": {}}, "sections": [base]})


def test_json_map_ids_flags_and_ranks() -> None:
    text = json.dumps(
        {
            "classes": {"A": {"orphans": "allow"}},
            "sections": [
                {"id": "S2", "class": "A", "rank": 1, "rows": [{"id": "R1", "seats": 2}]},
                {
                    "id": "S1",
                    "class": "A",
                    "rank": 0,
                    "rows": [
                        {"id": "R1", "seats": 5, "flags": {"wheelchair": [1], "blocked": [5]}},
                        {"id": "R2", "seats": 4},
                    ],
                },
            ],
        }
    )
    seat_map = load_json(text)
    cls = seat_map.classes["A"]
    assert cls.orphans is OrphanPolicy.ALLOW
    assert len(cls.seats) == 11 and cls.capacity == 10
    assert cls.seats["S1-R1-1"].flags == {SeatFlag.WHEELCHAIR}
    assert cls.seats["S1-R1-5"].blocked
    # Section rank first (S1 before S2 though listed second), then row, then centre distance.
    by_rank = sorted(cls.seats.values(), key=lambda s: s.rank)
    assert [s.seat_id for s in by_rank[:5]] == ["S1-R1-3", "S1-R1-2", "S1-R1-4", "S1-R1-1", "S1-R1-5"]
    assert [s.seat_id for s in by_rank[5:9]] == ["S1-R2-2", "S1-R2-3", "S1-R2-1", "S1-R2-4"]
    assert {s.seat_id for s in by_rank[9:]} == {"S2-R1-1", "S2-R1-2"}
    assert [s.rank for s in by_rank] == list(range(11))
    assert [r.row_id for r in cls.rows] == ["S1-R1", "S1-R2", "S2-R1"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[1", "not JSON"),
        (json.dumps({"classes": {}, "sections": []}), "'classes' must be an object"),
        (_doc(**{"class": "B"}), "unknown class 'B' (classes: A)"),
        (_doc(rows=[{"id": "R1", "seats": 2, "flags": {"vip": [1]}}]), "unknown flag 'vip'"),
        (_doc(rows=[{"id": "R1", "seats": 2, "flags": {"blocked": [3]}}]), "position 3 of a row of 2"),
        (_doc(rows=[{"id": "R1", "seats": 0}]), "seats must be an integer >= 1"),
        (_doc(rows=[{"id": "R1", "seats": 2}, {"id": "R1", "seats": 2}]), "duplicate seat S1-R1-1"),
        (_doc(id="S 1"), "id must be 1-16 letters"),
        (
            _doc(rows=[{"id": "R1", "seats": 2, "flags": {"wheelchair": [1], "companion": [1]}}]),
            "both wheelchair and companion",
        ),
    ],
)
def test_json_errors_are_one_line(text: str, message: str) -> None:
    with pytest.raises(SeatMapError) as info:
        load_json(text)
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_unknown_orphan_policy() -> None:
    text = json.dumps({"classes": {"A": {"orphans": "maybe"}}, "sections": []})
    with pytest.raises(SeatMapError, match="'orphans' must be 'refuse' or 'allow'"):
        load_json(text)


HEADER = "class,section,section_rank,row,position,flags\n"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("A,S1,0,R1,1,\nA,S1,0,R1,3,\n", "line 3: gap in row R1 of section S1: position 2 is missing"),
        ("A,S1,0,R1,1,\nA,S1,0,R1,1,\n", "line 3: duplicate seat S1-R1-1"),
        ("A,S1,0,R1,1,\nA,S1,1,R2,1,\n", "line 3: section S1 has ranks 0 and 1"),
        ("A,S1,0,R1,1,\nB,S1,0,R2,1,\n", "line 3: section S1 is in classes A and B"),
        ("A,S1,0,R1,x,\n", "line 2: position must be an integer >= 1"),
        ("A,S1,0,R1,1,wheelchair|nope\n", "line 2: unknown flag 'nope'"),
        ("A,S1,0,R1\n", "line 2: expected 6 columns"),
    ],
)
def test_csv_errors_are_one_line(body: str, message: str) -> None:
    with pytest.raises(SeatMapError) as info:
        load_csv(HEADER + body)
    assert message in str(info.value)


def test_csv_header_and_unknown_class() -> None:
    with pytest.raises(SeatMapError, match="line 1: the header must be"):
        load_csv("seat,class\n")
    with pytest.raises(SeatMapError, match="unknown class 'B'"):
        load_csv(HEADER + "B,S1,0,R1,1,\n", {"A": OrphanPolicy.REFUSE})


def test_example_maps_load() -> None:
    theatre = load_file(str(EXAMPLES / "theatre.json"))
    assert 1_100 <= theatre.seat_count <= 1_400
    assert set(theatre.classes) == {"STALLS", "CIRCLE", "BALCONY"}
    club = load_file(str(EXAMPLES / "club.csv"))
    assert club.classes["TABLES"].capacity == 15
    assert club.seat("A-R1-1") is not None and club.seat("A-R1-1").accessible  # type: ignore[union-attr]


def test_stadium_script_writes_the_committed_map(tmp_path: Path) -> None:
    out = tmp_path / "stadium.json"
    subprocess.run([sys.executable, str(ROOT / "scripts" / "make_stadium_map.py"), str(out)], check=True)
    assert out.read_text() == (EXAMPLES / "stadium.json").read_text()
    stadium = load_file(str(out))
    assert 55_000 <= stadium.seat_count <= 70_000


def test_load_file_needs_a_known_suffix(tmp_path: Path) -> None:
    path = tmp_path / "map.txt"
    path.write_text("{}")
    with pytest.raises(SeatMapError, match=r"\.json or \.csv"):
        load_file(str(path))


def test_dump_json_round_trips_and_row_items_split_long_rows() -> None:
    from seat_inventory.models import ROW_BLOCK, row_item_of
    from seat_tools.seat_map_files import dump_json, row_items

    theatre = load_file(str(EXAMPLES / "theatre.json"))
    again = load_json(dump_json(theatre))
    assert again == theatre
    wide = load_json(_doc(rows=[{"id": "R1", "seats": ROW_BLOCK + 5, "flags": {"blocked": [ROW_BLOCK + 1]}}]))
    items = row_items(wide.classes["A"])
    assert [(i.row_id, i.first, i.size, i.blocked) for i in items] == [
        ("S1-R1#0", 1, ROW_BLOCK, ()),
        ("S1-R1#1", ROW_BLOCK + 1, 5, (ROW_BLOCK + 1,)),
    ]
    assert row_item_of(f"S1-R1-{ROW_BLOCK + 1}") == ("S1-R1#1", ROW_BLOCK + 1)
    assert row_item_of("S1-R1-1") == ("S1-R1#0", 1)
