"""Placement on a seat map: chosen seats all or none, best available the best block creating no
orphan where one can be avoided, split, accessible seats. Properties checked against brute force."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from seat_inventory.logic.seat_map import ClassMap, OrphanPolicy, load_json
from seat_inventory.logic.seat_placement import (
    Placement,
    Refusal,
    Refused,
    place_best,
    place_chosen,
)
from seat_tools.seat_map_files import load_file

THEATRE = Path(__file__).resolve().parents[2] / "examples" / "seat_maps" / "theatre.json"


def _class(
    rows: list[int], orphans: str = "refuse", flags: dict[int, dict[str, list[int]]] | None = None
) -> ClassMap:
    flags = flags or {}
    doc = {
        "classes": {"A": {"orphans": orphans}},
        "sections": [
            {
                "id": "S",
                "class": "A",
                "rank": 0,
                "rows": [
                    {"id": f"R{i + 1}", "seats": n, **({"flags": flags[i]} if i in flags else {})}
                    for i, n in enumerate(rows)
                ],
            }
        ],
    }
    return load_json(json.dumps(doc)).classes["A"]


def _ids(row: int, *positions: int) -> set[str]:
    return {f"S-R{row}-{p}" for p in positions}


def test_best_available_takes_the_centre_of_the_front_row() -> None:
    cls = _class([6, 6])
    assert place_best(cls, set(), 2) == Placement(("S-R1-3", "S-R1-4"))
    # 2-4 would strand seat 1: the block moves to the row's end (1-3 and 4-6 tie; the first wins).
    assert place_best(cls, set(), 3) == Placement(("S-R1-1", "S-R1-2", "S-R1-3"))


def test_best_available_avoids_an_orphan_even_for_a_worse_block() -> None:
    cls = _class([5, 6])
    # Row 1 has 1-3 free: either 2-seat block there (1-2 or 2-3) strands a seat, so row 2's
    # centre wins though row 1 ranks better.
    taken = _ids(1, 4, 5)
    assert place_best(cls, taken, 2) == Placement(("S-R2-3", "S-R2-4"))
    # With row 2 gone too, the least bad block is taken (an orphan cannot be avoided).
    taken |= _ids(2, 1, 2, 3, 4, 5, 6)
    result = place_best(cls, taken, 2)
    assert isinstance(result, Placement) and len(result.seats) == 2


def test_best_available_prefers_filling_a_gap_exactly() -> None:
    cls = _class([8])
    taken = _ids(1, 1, 4, 5, 6, 7, 8)  # free: 2, 3
    assert place_best(cls, taken, 2) == Placement(("S-R1-2", "S-R1-3"))


def test_no_block_is_refused_unless_split() -> None:
    cls = _class([4, 4])
    taken = _ids(1, 2, 3) | _ids(2, 2, 3)
    assert place_best(cls, taken, 2) == Refusal(Refused.NO_BLOCK)
    split = place_best(cls, taken, 3, split=True)
    assert isinstance(split, Placement) and len(set(split.seats)) == 3 and not set(split.seats) & taken
    assert place_best(cls, taken, 5, split=True) == Refusal(Refused.NO_BLOCK)


def test_accessible_seats_only_to_requests_that_ask() -> None:
    cls = _class([4, 4], flags={0: {"wheelchair": [1], "companion": [2]}})
    assert place_best(cls, set(), 2) == Placement(("S-R1-3", "S-R1-4"))
    assert place_best(cls, set(), 2, accessible=True) == Placement(("S-R1-1", "S-R1-2"))
    refused = place_chosen(cls, set(), ["S-R1-1", "S-R1-2"])
    assert refused == Refusal(Refused.NOT_ACCESSIBLE, ("S-R1-1", "S-R1-2"))
    assert place_chosen(cls, set(), ["S-R1-1", "S-R1-2"], accessible=True) == Placement(("S-R1-1", "S-R1-2"))


def test_chosen_seats_all_or_none() -> None:
    cls = _class([6], flags={0: {"blocked": [6]}})
    taken = _ids(1, 2)
    assert place_chosen(cls, taken, ["S-R1-2", "S-R1-3", "S-R1-6"]) == Refusal(
        Refused.SEATS_TAKEN, ("S-R1-2", "S-R1-6")
    )
    assert place_chosen(cls, taken, ["S-R9-1"]) == Refusal(Refused.NOT_IN_CLASS, ("S-R9-1",))
    # Taking 3-4 strands 5 (between 4 and the blocked 6); 1 was already single before.
    assert place_chosen(cls, taken, ["S-R1-3", "S-R1-4"]) == Refusal(Refused.ORPHAN_SEAT, ("S-R1-5",))
    allow = _class([6], orphans="allow", flags={0: {"blocked": [6]}})
    assert place_chosen(allow, taken, ["S-R1-3", "S-R1-4"]) == Placement(("S-R1-3", "S-R1-4"))
    assert place_chosen(cls, taken, ["S-R1-3", "S-R1-4", "S-R1-5"]) == Placement(
        ("S-R1-3", "S-R1-4", "S-R1-5")
    )


def test_theatre_fills_best_first_without_orphans() -> None:
    stalls = load_file(str(THEATRE)).classes["STALLS"]
    taken: set[str] = set()
    ranks = []
    for quantity in [2, 4, 3, 1, 2, 5, 2, 2, 6, 3] * 20:
        result = place_best(stalls, taken, quantity)
        assert isinstance(result, Placement)
        ranks.append(sum(stalls.seats[s].rank for s in result.seats) / quantity)
        taken.update(result.seats)
    # Earlier requests get better seats on average.
    assert sum(ranks[:50]) < sum(ranks[-50:])


# --- properties against brute force ---------------------------------------------------------


def _brute_orphans(free: list[bool]) -> set[int]:
    out = set()
    for i, f in enumerate(free):
        left = i > 0 and free[i - 1]
        right = i + 1 < len(free) and free[i + 1]
        if f and not left and not right:
            out.add(i)
    return out


def _brute_blocks(cls: ClassMap, taken: set[str], quantity: int) -> list[tuple[int, int, int, int]]:
    """Every fitting block as (orphans created, row index, centre distance, first index)."""
    blocks = []
    for r, row in enumerate(cls.rows):
        free = [not s.blocked and s.seat_id not in taken for s in row.seats]
        n = len(free)
        for first in range(n - quantity + 1):
            span = range(first, first + quantity)
            if not all(free[i] and not row.seats[i].accessible for i in span):
                continue
            after = [f and i not in span for i, f in enumerate(free)]
            made = len(_brute_orphans(after) - _brute_orphans(free))
            blocks.append((made, r, abs(2 * first + quantity + 1 - (n + 1)), first))
    return blocks


rows_st = st.lists(st.integers(min_value=1, max_value=10), min_size=1, max_size=4)


@settings(max_examples=300, deadline=None)
@given(rows=rows_st, data=st.data())
def test_best_available_is_the_best_block_creating_fewest_orphans(
    rows: list[int], data: st.DataObject
) -> None:
    cls = _class(rows)
    ids = sorted(cls.seats)
    taken = set(data.draw(st.lists(st.sampled_from(ids), unique=True)))
    quantity = data.draw(st.integers(min_value=1, max_value=6))
    result = place_best(cls, taken, quantity)
    blocks = _brute_blocks(cls, taken, quantity)
    if not blocks:
        assert result == Refusal(Refused.NO_BLOCK)
        return
    assert isinstance(result, Placement)
    best = min(blocks)
    row = cls.rows[best[1]]
    assert result.seats == tuple(s.seat_id for s in row.seats[best[3] : best[3] + quantity])


@settings(max_examples=200, deadline=None)
@given(rows=rows_st, data=st.data())
def test_chosen_seats_are_all_or_none(rows: list[int], data: st.DataObject) -> None:
    cls = _class(rows, orphans=data.draw(st.sampled_from(["refuse", "allow"])))
    ids = sorted(cls.seats)
    taken = set(data.draw(st.lists(st.sampled_from(ids), unique=True)))
    chosen = data.draw(st.lists(st.sampled_from(ids), unique=True, min_size=1, max_size=5))
    result = place_chosen(cls, taken, chosen)
    busy = [s for s in chosen if s in taken]
    if busy:
        assert result == Refusal(Refused.SEATS_TAKEN, tuple(busy))
        return
    stranded = set()
    for row in cls.rows:
        before = [s.seat_id not in taken for s in row.seats]
        after = [s.seat_id not in taken and s.seat_id not in chosen for s in row.seats]
        stranded |= {row.seats[i].seat_id for i in _brute_orphans(after) - _brute_orphans(before)}
    if stranded and cls.orphans is OrphanPolicy.REFUSE:
        assert isinstance(result, Refusal) and result.why is Refused.ORPHAN_SEAT
        assert set(result.seats) == stranded
    else:
        assert result == Placement(tuple(chosen))


@settings(max_examples=200, deadline=None)
@given(rows=rows_st, data=st.data())
def test_split_takes_free_seats_whenever_enough(rows: list[int], data: st.DataObject) -> None:
    cls = _class(rows)
    ids = sorted(cls.seats)
    taken = set(data.draw(st.lists(st.sampled_from(ids), unique=True)))
    quantity = data.draw(st.integers(min_value=1, max_value=8))
    result = place_best(cls, taken, quantity, split=True)
    if len(ids) - len(taken) < quantity:
        assert result == Refusal(Refused.NO_BLOCK)
    else:
        assert isinstance(result, Placement)
        assert len(set(result.seats)) == quantity and not set(result.seats) & taken
