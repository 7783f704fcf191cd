"""A batch's best-available requests on a mapped class taken together (docs/seating.md, "At
scale"): one transaction for several requests, in arrival order; refused rows re-placed,
duplicates answered as before, sold-out requests answered from the view; and the slices that
spread containers over the rows."""

from __future__ import annotations

import json

from seat_inventory.logic.inventory_hints import InventoryHints
from seat_inventory.logic.ports import WriteRefused
from seat_inventory.logic.seat_map import load_json
from seat_inventory.logic.seat_slices import ROWS_PER_SLICE, deal
from seat_inventory.models import GroupWrite, Outcome, SeatState
from tests.unit.test_mapped_seats import Harness, body


class CountingHarness(Harness):
    """The harness, counting the takes (writes with row items) the store is asked for."""

    def __init__(self) -> None:
        super().__init__()
        self.takes: list[GroupWrite] = []
        commit = self.store.commit_outcomes

        def counted(write: GroupWrite) -> WriteRefused | None:
            if write.rows:
                self.takes.append(write)
            return commit(write)

        self.store.commit_outcomes = counted  # type: ignore[method-assign]


def test_a_batch_of_best_available_requests_is_one_transaction_in_arrival_order() -> None:
    h = CountingHarness()
    answers = h.send(body(1, quantity=2), body(2, quantity=2), body(3, quantity=2), body(4, quantity=2))
    assert [a.outcome for a in answers] == [Outcome.CONFIRMED] * 4
    assert len(h.takes) == 1 and len(h.takes[0].outcomes) == 4
    seats = [s for a in answers for s in a.seats or ()]
    assert len(seats) == len(set(seats)) == 8
    # Earlier requests get the better seats: the first pair is in the front row (R1), rank order.
    assert all(s.startswith("A-R1-") for s in answers[0].seats or ())
    assert h.counts() == (4, 0, 8)  # 12 seats (two of them accessible), 8 sold


def test_a_stale_view_in_a_batch_is_refused_re_placed_and_never_sells_a_seat_twice() -> None:
    h = CountingHarness()
    other = InventoryHints()
    h.send(body(1, quantity=1))  # this container's view now shows R1 with one seat taken
    h.send(body(2, quantity=4), hints=other)  # another container takes four more
    answers = h.send(body(3, quantity=2), body(4, quantity=2))
    sold = [s for s, state in h.states().items() if state is SeatState.SOLD]
    assert len(sold) == len(set(sold)) == 9
    assert {a.outcome for a in answers} == {Outcome.CONFIRMED}
    assert len(h.takes) >= 4  # the batch's first transaction refused by a row, then re-placed


def test_a_redelivered_request_in_a_batch_gets_its_answer_and_the_others_take_seats() -> None:
    h = CountingHarness()
    first = h.send(body(1, quantity=2))
    answers = h.send(body(1, quantity=2), body(2, quantity=2))
    again = next(a for a in answers if a.reservation_id == "r-1")
    assert again.duplicate and again.seats == first[0].seats
    assert next(a for a in answers if a.reservation_id == "r-2").outcome is Outcome.CONFIRMED
    assert h.counts()[2] == 4


def test_requests_no_block_fits_are_sold_out_with_their_records_and_smaller_ones_still_sell() -> None:
    h = CountingHarness()
    answers = h.send(body(1, quantity=6), body(2, quantity=5), body(3, quantity=3))
    by_id = {a.reservation_id: a for a in answers}
    # R1 has four sellable seats (two accessible), R2 six: 6 fits R2; 5 then fits nowhere.
    assert by_id["r-1"].outcome is Outcome.CONFIRMED
    assert by_id["r-2"].outcome is Outcome.SOLD_OUT and "no placement fits" in by_id["r-2"].reason
    assert by_id["r-3"].outcome is Outcome.CONFIRMED
    assert h.store.records["r-2"].outcome is Outcome.SOLD_OUT


def test_slices_deal_the_rows_best_first_round_robin() -> None:
    doc = {
        "classes": {"A": {}},
        "sections": [
            {
                "id": f"S{s}",
                "class": "A",
                "rank": s,
                "rows": [{"id": f"R{r}", "seats": 45} for r in range(10)],
            }
            for s in range(4)
        ],
    }
    class_map = load_json(json.dumps(doc)).classes["A"]
    slices = deal(class_map)
    assert len(slices) == 40 // ROWS_PER_SLICE
    assert [r.row_id for r in slices[1].class_map.rows] == [r.row_id for r in class_map.rows[1::5]]
    assert sorted(r.row_id for s in slices for r in s.class_map.rows) == sorted(
        r.row_id for r in class_map.rows
    )
    assert slices[0].items[:2] == ("S0-R0#0", "S0-R0#1")  # a row of 45 is two row items


SLICED = {
    "classes": {"STALLS": {"orphans": "allow"}},
    "sections": [
        {
            "id": "A",
            "class": "STALLS",
            "rank": 0,
            "rows": [{"id": f"R{r}", "seats": 10} for r in range(1, 33)],
        }
    ],
}


def _sliced_harness() -> CountingHarness:
    h = CountingHarness()
    h.store = type(h.store)()
    h.store.add_seat_map("e-1", load_json(json.dumps(SLICED)))
    takes = h.takes
    commit = h.store.commit_outcomes

    def counted(write: GroupWrite) -> WriteRefused | None:
        refused = commit(write)
        if write.rows:
            takes.append(write)
            if refused is not None:
                h.refused.append(write)
        return refused

    h.store.commit_outcomes = counted  # type: ignore[method-assign]
    h.refused = []  # type: ignore[attr-defined]
    return h


def _slice_of(row_item: str, class_rows: list[str], slices: int) -> int:
    return class_rows.index(row_item.split("#")[0]) % slices


def test_a_transaction_takes_in_one_slice_only() -> None:
    # Given 32 rows of 10 in 4 slices of 8 rows (80 seats each)
    h = _sliced_harness()
    rows = [f"A-R{r}" for r in range(1, 33)]
    # When one batch asks for 96 seats: more than a slice holds
    answers = h.send(*(body(n, quantity=8) for n in range(12)))
    # Then all are sold, in several transactions, each within one slice
    assert {a.outcome for a in answers} == {Outcome.CONFIRMED}
    assert len(h.takes) >= 2
    for take in h.takes:
        assert len({_slice_of(row, rows, 4) for row in take.rows}) == 1, take.rows


def test_a_container_reads_its_slice_before_taking_and_moves_where_another_sold() -> None:
    # Given a container that has sold in its slice (its view is now that slice as it was)
    h = _sliced_harness()
    rows = [f"A-R{r}" for r in range(1, 33)]
    [first] = h.send(body(1, quantity=2))
    own = _slice_of(f"{first.seats[0].rsplit('-', 1)[0]}#0", rows, 4)  # type: ignore[index]
    # When another container takes the rest of that slice's best row (chosen seats: a fresh read)
    row = first.seats[0].rsplit("-", 1)[0]  # type: ignore[index]
    rest = [f"{row}-{p}" for p in (1, 2, 3, 4, 7, 8, 9, 10)]
    taken = h.send(body(2, seats=rest), hints=InventoryHints())
    assert taken[0].outcome is Outcome.CONFIRMED
    h.refused.clear()  # type: ignore[attr-defined]
    # and the first container, its view still fresh (not 2 s old), takes again
    [again] = h.send(body(3, quantity=4))
    # Then it read its slice first, saw the other's seats and moved: no take of it was refused
    assert again.outcome is Outcome.CONFIRMED
    assert h.refused == []  # type: ignore[attr-defined]
    assert _slice_of(f"{again.seats[0].rsplit('-', 1)[0]}#0", rows, 4) != own  # type: ignore[index]
    sold = [s for s, state in h.states().items() if state is SeatState.SOLD]
    assert len(sold) == len(set(sold)) == 2 + 8 + 4
