"""A batch's best-available requests on a mapped class taken together (docs/guides/seat-maps.md, "At
scale"): one transaction for several requests, in arrival order; refused rows re-placed,
duplicates answered as before, sold-out requests answered from the view; and the slices that
spread containers over the rows."""

from __future__ import annotations

import json
import random
from collections.abc import Sequence

from seat_inventory.logic.inventory_hints import InventoryHints
from seat_inventory.logic.mapped_placement import place_spread as _place_spread
from seat_inventory.logic.mapped_placement import slice_order as _slice_order
from seat_inventory.logic.retry_deadline import ConflictDeadline
from seat_inventory.logic.seat_map import load_json
from seat_inventory.logic.seat_placement import Placement, stranded_by
from seat_inventory.logic.seat_slices import ROWS_PER_SLICE, deal
from seat_inventory.logic.seat_views import (
    CLAIM_SECONDS,
    REFUSED_VIEW_SECONDS,
    SLICE_IN_USE_SECONDS,
    MappedContext,
    SeatMaps,
    taken_seats,
)
from seat_inventory.logic.settle_mapped import BEHIND_VIEW_SECONDS
from seat_inventory.models import (
    Outcome,
    SeatKey,
    SeatRow,
    SeatState,
    Take,
    Throttled,
    TransactionConflict,
    WriteRefused,
)
from tests.fakes import FakeClock, InMemoryInventoryStore
from tests.unit.test_mapped_seats import Harness, body
from tests.writes import GroupWrite


class CountingHarness(Harness):
    """The harness, counting the takes (writes with row items) the store is asked for."""

    def __init__(self) -> None:
        super().__init__()
        self.takes: list[GroupWrite] = []
        commit = self.store.take

        def counted(take: Take) -> WriteRefused | None:

            write = GroupWrite.of(take.parts[0], take)
            if write.rows:
                self.takes.append(write)
            return commit(take)

        self.store.take = counted  # type: ignore[method-assign]


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
    commit = h.store.take

    def counted(take: Take) -> WriteRefused | None:

        write = GroupWrite.of(take.parts[0], take)
        refused = commit(take)
        if write.rows:
            takes.append(write)
            if refused is not None:
                h.refused.append(write)
        return refused

    h.store.take = counted  # type: ignore[method-assign]
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


def test_a_container_reads_its_slice_before_taking_and_places_on_what_it_read() -> None:
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
    # and the first container, its view still fresh (not 2 s old) but its claim on the slice
    # run out (while it runs, it is the only one placing best available there: no read), takes again
    h.clock.time += CLAIM_SECONDS
    [again] = h.send(body(3, quantity=4))
    # Then it read its slice first, saw the other's seats and placed on the slice as read: no
    # take of it was refused, and it stayed (seats taken there do not mean another container
    # takes there now: its claim would say so)
    assert again.outcome is Outcome.CONFIRMED
    assert h.refused == []  # type: ignore[attr-defined]
    assert _slice_of(f"{again.seats[0].rsplit('-', 1)[0]}#0", rows, 4) == own  # type: ignore[index]
    assert not set(again.seats or ()) & set(rest)
    sold = [s for s, state in h.states().items() if state is SeatState.SOLD]
    assert len(sold) == len(set(sold)) == 2 + 8 + 4


def _reads_after_another_sells_in_the_slice(aged: float) -> list[int | None]:
    """How many row items each read of the first container's next take asked for (None: the
    whole class), after another container sold in its slice and `aged` seconds passed."""
    h = _sliced_harness()
    [first] = h.send(body(1, quantity=2))
    row = first.seats[0].rsplit("-", 1)[0]  # type: ignore[index]
    taken = h.send(body(2, seats=[f"{row}-{p}" for p in (1, 2, 3, 4, 7, 8, 9, 10)]), hints=InventoryHints())
    assert taken[0].outcome is Outcome.CONFIRMED
    reads: list[int | None] = []
    read = h.store.read_seat_rows

    def counted(key: SeatKey, row_ids: Sequence[str] | None = None) -> dict[str, SeatRow]:
        reads.append(None if row_ids is None else len(row_ids))
        return read(key, row_ids)

    h.store.read_seat_rows = counted  # type: ignore[method-assign]
    h.clock.time += aged
    [again] = h.send(body(3, quantity=4))
    assert again.outcome is Outcome.CONFIRMED
    return reads


def test_a_slice_read_showing_the_view_behind_the_sale_has_the_view_read_again() -> None:
    # Given a container whose view is BEHIND_VIEW_SECONDS old (not yet VIEW_SECONDS), and seats
    # another container took in its slice since
    # When it takes again: its slice's read shows seats its view did not
    # Then the view is read again before it places (its free row items, or the whole class),
    # where a younger view is not: the slice read alone serves it
    slice_items = 8
    behind = _reads_after_another_sells_in_the_slice(BEHIND_VIEW_SECONDS + 0.01)
    assert behind[0] == slice_items
    assert any(n is None or n > slice_items for n in behind[1:]), behind
    young = _reads_after_another_sells_in_the_slice(CLAIM_SECONDS)
    assert young == [slice_items], young


def test_slices_in_use_by_other_containers_are_tried_after_every_other_slice() -> None:
    # Given a class of 4 slices, this container's own slice 2, slice 0 nearly sold, and slice 3
    # (the next on the ring, full) where it saw another container take
    slices = deal(load_json(json.dumps(SLICED)).classes["STALLS"])
    available = {0: 5, 1: 80, 2: 60, 3: 80}
    # When it orders them for a request of 4 seats
    alone = _slice_order(slices, available, 4, 2, random.Random(1))
    order = _slice_order(slices, available, 4, 2, random.Random(1), {3})
    # Then its own comes first, then the fuller ones on the ring from its own, the one in use last
    assert alone == [2, 3, 1, 0]
    assert order == [2, 1, 0, 3]


def test_a_slice_left_is_in_use_for_a_while_then_free_again() -> None:
    maps = SeatMaps()
    key = SeatKey("e-1", "STALLS")
    maps.own_slice[key] = 1
    maps.leave(key, None, 100.0)  # a take of its own slice was refused
    maps.leave(key, 3, 100.2)  # a read showed another container's seats in slice 3
    assert key not in maps.own_slice
    assert maps.in_use(key, 100.3) == {1, 3}
    assert maps.in_use(key, 100.0 + SLICE_IN_USE_SECONDS) == {3}
    assert maps.in_use(key, 100.2 + SLICE_IN_USE_SECONDS) == set()


def test_a_take_that_conflicts_is_placed_again_in_another_slice_not_retried_in_place() -> None:
    # Given a store whose first take conflicts (another container's transaction holds its rows)
    h = _sliced_harness()
    rows = [f"A-R{r}" for r in range(1, 33)]
    commit = h.store.take
    conflicted: list[GroupWrite] = []

    def conflicting(take: Take) -> WriteRefused | None:

        write = GroupWrite.of(take.parts[0], take)
        if write.rows and not conflicted:
            conflicted.append(write)
            raise TransactionConflict("another container's take holds these rows")
        return commit(take)

    h.store.take = conflicting  # type: ignore[method-assign]
    # When a batch of best-available requests is settled
    answers = h.send(*(body(n, quantity=2) for n in range(4)))
    # Then every request is confirmed (nothing handed back), with no pause, in another slice
    assert {a.outcome for a in answers} == {Outcome.CONFIRMED}
    assert h.clock.slept == []
    first = _slice_of(next(iter(conflicted[0].rows)), rows, 4)
    assert all(_slice_of(row, rows, 4) != first for take in h.takes for row in take.rows)
    assert h.hints.seat_maps.in_use(SeatKey("e-1", "STALLS"), h.clock.now()) == {first}


STALLS = SeatKey("e-1", "STALLS")


def test_a_container_claims_a_slice_before_taking_there_and_keeps_it_for_its_next_takes() -> None:
    # Given a class of 4 slices and one container
    h = _sliced_harness()
    rows = [f"A-R{r}" for r in range(1, 33)]
    # When it sells two requests, then two more a moment later
    h.send(*(body(n, quantity=2) for n in range(2)))
    h.clock.time += CLAIM_SECONDS / 4
    h.send(*(body(n, quantity=2) for n in range(2, 4)))
    # Then it claimed the slice it took in once, for CLAIM_SECONDS, in its name only (the second
    # time it held the claim for more than half of that still)
    [(key_part, (owner, until))] = h.store.claims.items()
    assert key_part == (STALLS, str(_slice_of(next(iter(h.takes[0].rows)), rows, 4)))
    assert owner == h.hints.seat_maps.owner
    assert until == 1_800_000_000.0 + CLAIM_SECONDS
    assert len(h.takes) == 2 and all(
        _slice_of(r, rows, 4) == int(key_part[1]) for t in h.takes for r in t.rows
    )


def test_a_slice_another_container_claimed_is_left_before_any_take_there() -> None:
    # Given a class of 4 slices, three of them claimed by another container
    h = _sliced_harness()
    rows = [f"A-R{r}" for r in range(1, 33)]
    now = h.clock.now()
    for part in ("0", "1", "2"):
        assert h.store.claim(STALLS, part, "another", now=now, until=now + 10)
    # When this container sells a batch
    answers = h.send(*(body(n, quantity=2) for n in range(4)))
    # Then it takes only in the slice nobody claimed, no take of it refused; the claimed ones it
    # drew are in use for it
    assert {a.outcome for a in answers} == {Outcome.CONFIRMED}
    assert h.refused == []  # type: ignore[attr-defined]
    assert {_slice_of(r, rows, 4) for t in h.takes for r in t.rows} == {3}
    assert h.store.claims[(STALLS, "3")][0] == h.hints.seat_maps.owner
    assert h.hints.seat_maps.in_use(STALLS, h.clock.now()) <= {0, 1, 2}


def test_claims_only_steer_when_every_slice_is_claimed_or_a_claim_fails_the_take_goes_ahead() -> None:
    # Given every slice claimed by another container
    h = _sliced_harness()
    now = h.clock.now()
    for part in ("0", "1", "2", "3"):
        assert h.store.claim(STALLS, part, "another", now=now, until=now + 10)
    # When a batch is sold: then it is sold all the same (each take guarded on its seats), once
    # the container waited its turn (pauses between claims of slices in use) up to the budget
    answers = h.send(*(body(n, quantity=2) for n in range(4)))
    assert {a.outcome for a in answers} == {Outcome.CONFIRMED}
    assert h.clock.slept and all(0 <= pause <= 0.04 for pause in h.clock.slept)
    # And a claim that meets a transient fault does not stop a take either
    h2 = _sliced_harness()

    def throttled(*args: object, **kwargs: object) -> bool:
        raise Throttled("ProvisionedThroughputExceededException")

    h2.store.claim = throttled  # type: ignore[method-assign]
    answers = h2.send(*(body(n, quantity=2) for n in range(4)))
    assert {a.outcome for a in answers} == {Outcome.CONFIRMED}
    sold = [s for s, state in h2.states(STALLS).items() if state is SeatState.SOLD]
    assert len(sold) == 8


def test_a_view_due_again_is_read_whole_however_few_rows_have_seats_left() -> None:
    # Given a container whose view shows one row with free seats (the sale's end)
    h = _sliced_harness()
    h.send(*(body(n, quantity=10) for n in range(31)))
    key = SeatKey("e-1", "STALLS")
    reads: list[list[str] | None] = []
    read = h.store.read_seat_rows

    def counted(k: SeatKey, row_ids: Sequence[str] | None = None) -> dict[str, SeatRow]:
        reads.append(None if row_ids is None else list(row_ids))
        return read(k, row_ids)

    h.store.read_seat_rows = counted  # type: ignore[method-assign]
    free = [row.row_id for row in h.store.seat_rows[key].values() if row.available]
    assert len(free) == 1
    # When its view is due again (a take of it was refused: read once REFUSED_VIEW_SECONDS old)
    # and it takes the last seats
    h.hints.seat_maps.stale_soon(key)
    h.clock.time += REFUSED_VIEW_SECONDS + 0.1
    [answer] = h.send(body(40, quantity=10))
    # Then it read the whole class (a Query per section, 16 at a time: as fast as a read of the
    # row items left, and at the stadium's end a fifth of its read units), not that row item
    assert answer.outcome is Outcome.CONFIRMED
    assert reads[0] is None


def test_when_every_block_strands_a_seat_containers_take_them_in_their_own_slices() -> None:
    # Given 32 rows of 10 in 4 slices, each row with only its first 3 seats free: any 2 adjacent
    # seats strand one (the fewest possible), so the whole class's best block is in R1 (slice 0)
    class_map = load_json(json.dumps(SLICED)).classes["STALLS"]
    key = SeatKey("e-1", "STALLS")
    rows = {
        f"A-R{r}#0": SeatRow(key, f"A-R{r}#0", 1, 10, dict.fromkeys(range(4, 11), SeatState.SOLD), 3, 0, 7)
        for r in range(1, 33)
    }
    placed = {}
    for own in (1, 2):
        maps = SeatMaps()
        maps.own_slice[key] = own
        context = MappedContext(
            InMemoryInventoryStore(),
            FakeClock(),
            maps,
            60,
            ConflictDeadline.after(FakeClock()),
            random.Random(own),
        )
        # When a container whose slice is `own` places a request of 2 seats
        placement = _place_spread(key, class_map, 2, rows, context)
        assert isinstance(placement, Placement)
        placed[own] = placement.seats
        # Then it takes them in its own slice, stranding one seat, as the class's best would
        taken = taken_seats(rows)
        assert len(stranded_by(class_map, taken, placement.seats)) == 1
        assert maps.own_slice[key] == own
    rows_of = [f"A-R{r}" for r in range(1, 33)]
    assert {
        own: _slice_of(f"{seats[0].rsplit('-', 1)[0]}#0", rows_of, 4) for own, seats in placed.items()
    } == {
        1: 1,
        2: 2,
    }


def test_at_the_sale_s_end_one_take_fills_a_slice_s_gaps_with_the_batch_s_requests_that_fit() -> None:
    # Given a class of 2 slices of 8 rows of 10 (rows alternate between them: R1 slice 0, R2
    # slice 1, ...), sold out but for single seats in slice 0 (R1-5, R3-5) and pairs in slice 1
    # (R2-4/5, R4-4/5)
    doc = {
        **SLICED,
        "sections": [{**SLICED["sections"][0], "rows": [{"id": f"R{r}", "seats": 10} for r in range(1, 17)]}],
    }  # type: ignore[dict-item]
    h = Harness()
    h.store = type(h.store)()
    h.store.add_seat_map("e-1", load_json(json.dumps(doc)))
    free = {"A-R1-5", "A-R3-5", "A-R2-4", "A-R2-5", "A-R4-4", "A-R4-5"}
    seller = InventoryHints()
    for r in range(1, 17):
        sold = [f"A-R{r}-{p}" for p in range(1, 11) if f"A-R{r}-{p}" not in free]
        assert h.send(body(100 + r, seats=sold), hints=seller)[0].outcome is Outcome.CONFIRMED
    takes: list[GroupWrite] = []
    commit = h.store.take

    def counted(take: Take) -> WriteRefused | None:

        write = GroupWrite.of(take.parts[0], take)
        if write.rows:
            takes.append(write)
        return commit(take)

    h.store.take = counted  # type: ignore[method-assign]
    # When one batch asks, in this order, for 2, 1, 2 and 1 seats
    answers = h.send(*(body(n, quantity=q) for n, q in enumerate((2, 1, 2, 1), start=1)))
    # Then all four are sold in two takes, one per slice: the pairs together (the single asked
    # between them waited for the next take, in the slice of singles), then the singles
    assert {a.outcome for a in answers} == {Outcome.CONFIRMED}
    assert [[o.reservation_id for o in t.outcomes] for t in takes] == [["r-1", "r-3"], ["r-2", "r-4"]]
    assert {s for a in answers for s in a.seats or ()} == free
