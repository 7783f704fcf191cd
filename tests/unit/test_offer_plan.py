"""What a round offers, decided from what it read (logic/offer_plan.py): entries in join order while
the list's seats fit them, the head waiting for seats rather than being skipped; a counted class's
seats on one shard item per offer and in the entry's lane; a mapped class's offer the best block
among the list's seats."""

from __future__ import annotations

import json
from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from seat_inventory.logic.offer_plan import lane_changes, offer_expiry, plan_counted, plan_mapped
from seat_inventory.logic.seat_map import ClassMap, load_json
from seat_inventory.models import Lane, Place, SeatKey, SeatRow, SeatState, ledger_key, ledger_place

KEY = SeatKey("e1", "GA")


def _place(n: int, quantity: int, lane: int = 0, **options: bool) -> Place:
    return Place(KEY, lane, f"P#{n:013d}#000#r{n}", f"r{n}", f"c{n}", quantity, **options)


def test_entries_are_offered_in_join_order_while_the_seats_fit() -> None:
    lanes = [Lane(0, waiting=3, seats={"s0": 5})]
    plan = plan_counted([_place(1, 2), _place(2, 2), _place(3, 2)], lanes, expires_at=100)
    assert [o.place.reservation_id for o in plan.offers] == ["r1", "r2"]
    assert all(o.ledger == "s0" and o.expires_at == 100 for o in plan.offers)


def test_the_head_waits_for_its_seats_and_nobody_behind_it_is_served() -> None:
    lanes = [Lane(0, waiting=2, seats={"s0": 2})]
    plan = plan_counted([_place(1, 3), _place(2, 1)], lanes, expires_at=100)
    assert plan.offers == ()


def test_an_offer_takes_its_seats_from_one_shard_item_moving_them_there_first() -> None:
    lanes = [Lane(0, waiting=1, seats={"s0": 2, "s3": 2, "s5": 1})]
    plan = plan_counted([_place(1, 4)], lanes, expires_at=100)
    (offer,) = plan.offers
    target = ledger_place(offer.ledger)[0]
    moved_in = sum(m.seats for m in plan.shard_moves if m.target == target)
    assert moved_in == 2 and all(m.donor != target for m in plan.shard_moves)
    # The seats moved leave the lane's ledger under the donors' keys and come back under the target's.
    assert lane_changes(plan.ledger_moves) == {
        0: {f"s{m.donor}": -m.seats for m in plan.shard_moves} | {offer.ledger: moved_in}
    }


def test_seats_of_other_pool_items_are_not_moved_together() -> None:
    lanes = [Lane(0, waiting=1, seats={ledger_key(0, ["P"]): 2, ledger_key(1, ["P#1"]): 2})]
    plan = plan_counted([_place(1, 3)], lanes, expires_at=100)
    assert plan.offers == ()


def test_each_lane_ends_holding_what_its_entries_are_offered() -> None:
    lanes = [Lane(0, waiting=1, seats={"s0": 6}), Lane(1, waiting=1), Lane(2, waiting=1)]
    places = [_place(1, 2, lane=1), _place(2, 3, lane=2), _place(3, 1, lane=0)]
    plan = plan_counted(places, lanes, expires_at=100)
    assert len(plan.offers) == 3
    changes = lane_changes(plan.ledger_moves)
    assert changes == {0: {"s0": -5}, 1: {"s0": 2}, 2: {"s0": 3}}


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.dictionaries(st.sampled_from(["s0", "s1", "s2", "s1|P"]), st.integers(0, 6)),
        min_size=1,
        max_size=4,
    ),
    st.lists(st.tuples(st.integers(1, 6), st.integers(0, 3)), max_size=8),
)
def test_moves_keep_every_seat_and_cover_every_offer(
    ledgers: list[dict[str, int]], asks: list[tuple[int, int]]
) -> None:
    lanes = [Lane(n, waiting=1, seats=seats) for n, seats in enumerate(ledgers)]
    places = [_place(i + 1, q, lane=lane % len(lanes)) for i, (q, lane) in enumerate(asks)]
    plan = plan_counted(places, lanes, expires_at=100)
    before = Counter()
    for lane in lanes:
        before.update(lane.seats)
    after = {lane.lane: Counter(lane.seats) for lane in lanes}
    for lane, change in lane_changes(plan.ledger_moves).items():
        after[lane].update(change)
    # Shard moves only relabel seats (the same pool items), never make or lose any.
    assert sum(sum(c.values()) for c in after.values()) == sum(before.values())
    assert all(n >= 0 for c in after.values() for n in c.values())
    offered: dict[int, Counter[str]] = {}
    for offer in plan.offers:
        offered.setdefault(offer.place.lane, Counter())[offer.ledger] += offer.place.quantity
    for lane, wants in offered.items():
        assert all(after[lane][k] >= n for k, n in wants.items())
    # In join order: the offers are a prefix of the places.
    assert [o.place for o in plan.offers] == places[: len(plan.offers)]


def test_an_offer_ends_at_the_first_of_its_hold_the_lists_until_and_the_sales_end() -> None:
    assert offer_expiry(1000, 600, None, None) == 1600
    assert offer_expiry(1000, 600, 1200, None) == 1200
    assert offer_expiry(1000, 600, 1500, 1300) == 1300


def _row_class(seats: int = 10) -> ClassMap:
    doc = {
        "classes": {"A": {"orphans": "refuse"}},
        "sections": [{"id": "S", "class": "A", "rank": 0, "rows": [{"id": "R1", "seats": seats}]}],
    }
    return load_json(json.dumps(doc)).classes["A"]


def _rows(states: dict[int, SeatState], size: int = 10) -> dict[str, SeatRow]:
    key = SeatKey("e1", "A")
    return {"S-R1#0": SeatRow(key, "S-R1#0", 1, size, states, 0, 0, 0)}


def test_a_mapped_offer_holds_the_best_block_among_the_lists_seats() -> None:
    cls = _row_class()
    listed = dict.fromkeys([2, 3, 4, 8, 9], SeatState.LISTED)
    sold = dict.fromkeys([1, 5, 6, 7, 10], SeatState.SOLD)
    offers = plan_mapped([_place(1, 2), _place(2, 2)], cls, _rows(listed | sold), expires_at=100)
    # 8-9 is a block of exactly two (no orphan); 2-3 or 3-4 would strand a listed seat.
    assert offers[0].seats == ("S-R1-8", "S-R1-9")
    assert set(offers[1].seats) < {"S-R1-2", "S-R1-3", "S-R1-4"}


def test_a_mapped_head_that_fits_no_block_waits_unless_it_may_split() -> None:
    cls = _row_class()
    listed = dict.fromkeys([2, 5, 8], SeatState.LISTED)
    sold = {p: SeatState.SOLD for p in range(1, 11) if p not in (2, 5, 8)}
    rows = _rows(listed | sold)
    assert plan_mapped([_place(1, 2), _place(2, 1)], cls, rows, expires_at=100) == ()
    offers = plan_mapped([_place(1, 2, split=True), _place(2, 1)], cls, rows, expires_at=100)
    assert [len(o.seats) for o in offers] == [2, 1]
    assert len(set(offers[0].seats) | set(offers[1].seats)) == 3


def test_a_mapped_offer_never_holds_a_free_seat_nor_one_of_another_offer() -> None:
    cls = _row_class()
    rows = _rows(dict.fromkeys([4, 5], SeatState.LISTED))  # every other seat is free, on sale
    offers = plan_mapped([_place(1, 1), _place(2, 1), _place(3, 1)], cls, rows, expires_at=100)
    assert sorted(s for o in offers for s in o.seats) == ["S-R1-4", "S-R1-5"]
