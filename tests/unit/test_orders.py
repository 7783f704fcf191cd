"""Multi-line orders (docs/guides/orders.md) on the in-memory store: the contract's `lines`, one answer
for all lines or none, holds, confirm, cancel and expiry of the whole order, and a model-based
test of random pools, classes and orders over several containers.

Given / When / Then; the fake store has the DAL's guards (tests/fakes.py).
"""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from seat_inventory.logic.inventory_hints import InventoryHints
from seat_inventory.logic.reserve_seats import QueueMessage, reserve_seats
from seat_inventory.logic.seat_map import load_json
from seat_inventory.logic.sweep_holds import release_expired_holds
from seat_inventory.models import (
    InvalidMessage,
    OrderLine,
    Outcome,
    ReservationOutcome,
    ReservationRequest,
    SaleStatus,
    SeatClassInventory,
    SeatKey,
    pool_ref,
    split_pool_ref,
)
from seat_inventory.parsing import parse_reservation
from seat_inventory.publishing.sns_publisher import outcome_document
from seat_tools.admission_keys import issue_token
from tests import containers
from tests.containers import NOW, RING, SETTINGS, TTL, StepClock, counting_pool_refusals, order
from tests.fakes import FakeClock, InMemoryInventoryStore, RecordingPublisher
from tests.writes import GroupWrite, commit_outcomes, is_order, spy_writes


def change(n: int, kind: str, rid: str) -> QueueMessage:
    return QueueMessage(f"m-{n}", json.dumps({"type": kind, "reservation_id": rid}))


class Container(containers.Container):
    """Checks admission tokens with RING; its hints draw from a seeded generator."""

    def __init__(self, store: InMemoryInventoryStore, clock: FakeClock) -> None:
        super().__init__(store, clock, ring=RING, hints=InventoryHints(rng=random.Random(7)))


@pytest.fixture
def store() -> InMemoryInventoryStore:
    # Saturday (8) and the weekend pass (6) share the weekend's 10; parking (5) has no pool.
    store = InMemoryInventoryStore()
    store.add_pool("e-1", "weekend", 10)
    store.add_event("e-1", 8, "SAT", pools=["weekend"])
    store.add_event("e-1", 6, "PASS", pools=["weekend"])
    store.add_event("e-1", 5, "PARKING", max_per_customer=3)
    return store


@pytest.fixture
def container(store: InMemoryInventoryStore) -> Container:
    return Container(store, FakeClock(time=NOW))


def seats(store: InMemoryInventoryStore, seat_class: str) -> tuple[int, int, int]:
    item = store.inventory[SeatKey("e-1", seat_class)]
    return item.available, item.held, item.sold


def pool(store: InMemoryInventoryStore, name: str = "weekend") -> tuple[int, int, int]:
    found = store.pool("e-1", name)
    assert found is not None
    return found.available, found.held, found.sold


# ------------------------------------------------------------------ the contract


def parse(body: dict[str, object]):
    return parse_reservation("m-1", json.dumps(body), default_seat_class="GA", max_quantity=10)


BASE = {"reservation_id": "o-1", "event_id": "e-1", "customer_id": "c-1"}


def test_an_order_parses_into_its_lines_with_the_first_class_and_the_total() -> None:
    parsed = parse(
        {**BASE, "lines": [{"seat_class": "ADULT", "quantity": 2}, {"seat_class": "CHILD", "quantity": 1}]}
    )
    assert isinstance(parsed, ReservationRequest)
    assert parsed.lines == (OrderLine("ADULT", 2), OrderLine("CHILD", 1))
    assert (parsed.seat_class, parsed.quantity) == ("ADULT", 3)


def test_a_single_line_message_parses_exactly_as_before() -> None:
    parsed = parse({**BASE, "seat_class": "GA", "quantity": 2})
    assert isinstance(parsed, ReservationRequest)
    assert parsed.lines is None and (parsed.seat_class, parsed.quantity) == ("GA", 2)


LINE = {"seat_class": "A", "quantity": 1}


@pytest.mark.parametrize(
    ("lines", "extra", "reason"),
    [
        ([], {}, "lines must have 1 to 4 lines, got 0"),
        (
            [{"seat_class": f"C{n}", "quantity": 1} for n in range(5)],
            {},
            "lines must have 1 to 4 lines, got 5",
        ),
        ({"seat_class": "A"}, {}, 'lines must be an array of 1 to 4 lines, got {"seat_class": "A"}'),
        (["A"], {}, 'line 1 must be an object, got string "A"'),
        ([LINE, {"quantity": 2}], {}, "line 2: missing required field(s): seat_class"),
        ([{"seat_class": "A"}], {}, "line 1: missing required field(s): quantity"),
        ([{"seat_class": "A", "quantity": 0}], {}, "line 1: quantity must be at least 1, got 0"),
        ([{"seat_class": "A", "quantity": "2"}], {}, 'line 1: quantity must be an integer, got str "2"'),
        (
            [{"seat_class": "A", "quantity": 11}],
            {},
            "line 1: quantity 11 is above the maximum of 10 seats per reservation",
        ),
        ([{"seat_class": "A#B", "quantity": 1}], {}, 'line 1: seat_class "A#B" may only contain'),
        (
            [LINE, {"seat_class": "A", "quantity": 2}],
            {},
            "lines 1 and 2 both name seat class 'A': put its seats in one line",
        ),
        ([{"seat_class": "A", "quantity": 1, "price": 3}], {}, 'line 1: unexpected field(s): "price"'),
        ([{"seat_class": "A", "seats": ["S1-R1-x"]}], {}, 'line 1: seats: "S1-R1-x" is not a seat id'),
        ([{"seat_class": "A", "seats": []}], {}, "line 1: seats must be a non-empty array of seat ids"),
        ([{"seat_class": "A", "seats": ["S-R1-1", "S-R1-1"]}], {}, "line 1: seats: repeated seat id(s)"),
        (
            [{"seat_class": "A", "seats": ["S-R1-1"], "quantity": 2}],
            {},
            "line 1: quantity 2 does not match the 1 seat(s) chosen",
        ),
        (
            [LINE],
            {"quantity": 1},
            'lines replace seat_class, quantity and seats: not allowed beside lines: "quantity"',
        ),
        ([LINE], {"seat_class": "A"}, 'not allowed beside lines: "seat_class"'),
        (
            [{"seat_class": "A", "quantity": 6}, {"seat_class": "B", "quantity": 5}],
            {},
            "the lines ask for 11 seats; the maximum is 10 seats per reservation",
        ),
    ],
)
def test_every_malformed_order_gets_a_one_line_invalid_reason(lines, extra, reason) -> None:
    parsed = parse({**BASE, "lines": lines, **extra})
    assert isinstance(parsed, InvalidMessage)
    assert reason in parsed.reason, parsed.reason
    assert "\n" not in parsed.reason and parsed.reservation_id == "o-1"


def test_lines_are_refused_on_a_confirm() -> None:
    parsed = parse({"type": "confirm", "reservation_id": "o-1", "lines": [LINE]})
    assert isinstance(parsed, InvalidMessage)
    assert parsed.reason == "field(s) not allowed with type 'confirm': \"lines\""


# ------------------------------------------------------------------ all lines or none


def test_an_order_takes_every_line_and_its_pools_in_one_answer(container, store) -> None:
    # When an order buys 2 Saturday tickets, 1 pass and 1 parking space
    result = container.run(order(1, ("SAT", 2), ("PASS", 1), ("PARKING", 1)))

    # Then one CONFIRMED answer lists the lines; each class and the shared pool moved once
    assert result.failed_message_ids == []
    answer = container.answer("m-1")
    assert answer.outcome is Outcome.CONFIRMED and answer.quantity == 4 and answer.seat_class is None
    assert answer.reason == "4 seat(s) in 3 line(s) confirmed"
    assert [(line.seat_class, line.quantity) for line in answer.lines or ()] == [
        ("SAT", 2),
        ("PASS", 1),
        ("PARKING", 1),
    ]
    assert (seats(store, "SAT"), seats(store, "PASS"), seats(store, "PARKING")) == (
        (6, 0, 2),
        (5, 0, 1),
        (4, 0, 1),
    )
    assert pool(store) == (7, 0, 3)
    assert store.counters[(SeatKey("e-1", "PARKING"), "c-1")] == 1
    document = outcome_document(answer)
    assert document["lines"] == [
        {"seat_class": "SAT", "quantity": 2},
        {"seat_class": "PASS", "quantity": 1},
        {"seat_class": "PARKING", "quantity": 1},
    ]


def test_a_line_that_fails_refuses_the_whole_order_naming_it(container, store) -> None:
    # Given parking has 5 spaces; when an order wants 2 Saturday tickets and 6 parking spaces
    store.change_item(SeatKey("e-1", "PARKING"), max_per_customer=None)
    container.run(order(1, ("SAT", 2), ("PARKING", 6)))

    # Then it is SOLD_OUT for the parking line and nothing was taken for Saturday either
    answer = container.answer("m-1")
    assert answer.outcome is Outcome.SOLD_OUT and answer.seat_class == "PARKING"
    assert answer.reason == "line 2 (PARKING): requested 6 seat(s), 5 left" and answer.remaining == 5
    assert seats(store, "SAT") == (8, 0, 0) and pool(store) == (10, 0, 0)
    assert store.status["o-1"] is Outcome.SOLD_OUT


def test_lines_sharing_a_pool_are_refused_when_together_they_pass_it(container, store) -> None:
    # Given the weekend pool has 4 left (each class has more on its own)
    container.run(order(1, ("SAT", 6)))
    # When an order wants 3 Saturday and 2 passes: each fits alone, together they pass the pool
    container.run(order(2, ("SAT", 2), ("PASS", 3)))

    answer = container.answer("m-2")
    assert answer.outcome is Outcome.SOLD_OUT
    assert answer.reason == "line 2 (PASS): requested 3 seat(s), 2 left in pool weekend"
    assert pool(store) == (4, 0, 6) and seats(store, "PASS") == (6, 0, 0)


def test_a_pool_refusal_learned_from_a_write_refuses_the_order_naming_the_pool(store) -> None:
    # Given a container that last saw the pool full, and another that sold 8 of its 10 meanwhile
    first, other = Container(store, FakeClock(time=NOW)), Container(store, FakeClock(time=NOW))
    first.run(order(1, ("SAT", 1), ("PASS", 1)))
    other.run(order(2, ("SAT", 4), ("PASS", 4)))

    # When the first container's order wants 3 of the pool's 1 left (its hints say 8 left)
    first.run(order(3, ("SAT", 1), ("PASS", 2)))

    # Then its write is refused by the pool's guard, and the order is SOLD_OUT naming the pool
    answer = first.answer("m-3")
    assert answer.outcome is Outcome.SOLD_OUT and "left in pool weekend" in answer.reason
    assert pool(store) == (0, 0, 10)


def test_a_per_customer_limit_counts_the_order_line_of_its_class(container, store) -> None:
    # Given the customer has 2 parking spaces of the limit of 3
    container.run(order(1, ("PARKING", 2), customer="c-9"))
    # When their order wants 1 Saturday and 2 more spaces, then 1 Saturday and 1 space
    container.run(
        order(2, ("SAT", 1), ("PARKING", 2), customer="c-9"),
        order(3, ("SAT", 1), ("PARKING", 1), customer="c-9"),
    )

    refused = container.answer("m-2")
    assert refused.outcome is Outcome.LIMIT_EXCEEDED
    assert refused.reason == (
        "line 2 (PARKING): customer 'c-9' may take at most 3 seat(s) of e-1 PARKING; 2 already taken, 2 requested"
    )
    assert container.answer("m-3").outcome is Outcome.CONFIRMED
    assert store.counters[(SeatKey("e-1", "PARKING"), "c-9")] == 3
    assert seats(store, "SAT") == (7, 0, 1)


def test_an_unknown_class_and_a_closed_class_refuse_the_order(container, store) -> None:
    store.change_item(SeatKey("e-1", "PASS"), sale_status=SaleStatus.CLOSED)
    container.run(order(1, ("SAT", 1), ("VIP", 1)), order(2, ("SAT", 1), ("PASS", 1)))
    assert container.answer("m-1").outcome is Outcome.UNKNOWN_EVENT
    assert container.answer("m-1").reason == "line 2 (VIP): no inventory for e-1 VIP"
    assert container.answer("m-2").outcome is Outcome.SALE_CLOSED
    assert seats(store, "SAT") == (8, 0, 0)


def test_a_redelivered_order_is_answered_again_and_takes_nothing_twice(container, store) -> None:
    container.run(order(1, ("SAT", 2), ("PARKING", 1)))
    # When SQS delivers it again later (another message id), even after the class sold out
    container.run(order(9, ("SAT", 6)))
    container.run(order(2, ("SAT", 2), ("PARKING", 1), rid="o-1", customer="c-1"))

    again = container.answer("m-2")
    assert again.outcome is Outcome.CONFIRMED and again.duplicate
    assert seats(store, "SAT") == (0, 0, 8) and seats(store, "PARKING") == (4, 0, 1)


def test_the_store_commits_several_writes_all_or_nothing(store) -> None:
    # Given two line writes, the second asking more than its class has
    sold = ReservationOutcome(
        "o-1",
        Outcome.CONFIRMED,
        "ok",
        "e-1",
        None,
        9,
        "c-1",
        lines=(OrderLine("SAT", 2), OrderLine("PASS", 7)),
    )
    first = GroupWrite(SeatKey("e-1", "SAT"), [sold], 2, 0, now=NOW, pools=["weekend"])
    second = GroupWrite(SeatKey("e-1", "PASS"), [], 7, 0, now=NOW, pools=["weekend"])

    refused = commit_outcomes(store, [first, second])

    # Then the refusal names the second write's item, and nothing at all was written
    assert refused is not None and refused.parts[0] is None
    assert refused.parts[1] is not None and refused.parts[1].inventory_refused
    assert seats(store, "SAT") == (8, 0, 0) and pool(store) == (10, 0, 0) and "o-1" not in store.records


def add_floor(store: InMemoryInventoryStore, *, orphans: str = "allow", limit: int | None = None) -> None:
    """A mapped class FLOOR: one row of 6 seats, F-R1-1 .. F-R1-6."""
    seat_map = {
        "classes": {"FLOOR": {"orphans": orphans}},
        "sections": [{"id": "F", "class": "FLOOR", "rows": [{"id": "R1", "seats": 6}]}],
    }
    store.add_seat_map("e-1", load_json(json.dumps(seat_map)), max_per_customer=limit)


def floor(store: InMemoryInventoryStore) -> dict[int, str]:
    [row] = store.seat_rows[SeatKey("e-1", "FLOOR")].values()
    return {p: state.value for p, state in row.states.items()}


def mapped_order(n: int, floor_line: dict[str, object], *, hold: int | None = None, rid: str | None = None):
    body: dict[str, object] = {
        "reservation_id": rid or f"o-{n}",
        "event_id": "e-1",
        "customer_id": f"c-{n}",
        "lines": [{"seat_class": "SAT", "quantity": 1}, {"seat_class": "FLOOR", **floor_line}],
    }
    if hold is not None:
        body.update(type="hold", hold_seconds=hold)
    return QueueMessage(f"m-{n}", json.dumps(body))


def test_a_mapped_line_takes_chosen_seats_or_best_available_with_the_other_lines(container, store) -> None:
    add_floor(store)
    container.run(mapped_order(1, {"seats": ["F-R1-3", "F-R1-4"]}), mapped_order(2, {"quantity": 2}))

    chosen, best = container.answer("m-1"), container.answer("m-2")
    assert chosen.outcome is Outcome.CONFIRMED and chosen.lines is not None
    assert chosen.lines[1].seats == ("F-R1-3", "F-R1-4")
    assert (
        best.outcome is Outcome.CONFIRMED and best.lines is not None and len(best.lines[1].seats or ()) == 2
    )
    assert outcome_document(best)["lines"][1] == {
        "seat_class": "FLOOR",
        "quantity": 2,
        "seats": list(best.lines[1].seats or ()),
    }
    assert len(floor(store)) == 4 and set(floor(store).values()) == {"S"}
    assert seats(store, "SAT") == (6, 0, 2)


def test_a_chosen_seat_taken_refuses_the_whole_order_naming_it(container, store) -> None:
    add_floor(store)
    container.run(mapped_order(1, {"seats": ["F-R1-3"]}))
    container.run(mapped_order(2, {"seats": ["F-R1-3", "F-R1-4"]}))

    refused = container.answer("m-2")
    assert refused.outcome is Outcome.SEATS_TAKEN and refused.seats == ("F-R1-3",)
    assert refused.reason == "line 2 (FLOOR): seats not free: F-R1-3"
    assert floor(store) == {3: "S"} and seats(store, "SAT") == (7, 0, 1)


def test_mapped_lines_refused_by_the_map_are_invalid_and_not_recorded(container, store) -> None:
    add_floor(store, orphans="refuse")
    container.run(
        mapped_order(1, {"seats": ["X-R1-1"]}),
        mapped_order(2, {"seats": ["F-R1-2"]}),
        QueueMessage(
            "m-3",
            json.dumps(
                {**BASE, "reservation_id": "o-3", "lines": [{"seat_class": "SAT", "seats": ["F-R1-1"]}]}
            ),
        ),
    )
    assert container.answer("m-1").outcome is Outcome.INVALID
    assert container.answer("m-1").reason == "line 2 (FLOOR): not seats of this class: X-R1-1"
    stranded = container.answer("m-2")
    assert stranded.outcome is Outcome.ORPHAN_SEAT and stranded.seats == ("F-R1-1",)
    assert container.answer("m-3").reason == "line 1 (SAT): not a mapped seat class; seats do not apply"
    assert "o-1" not in store.records and "o-3" not in store.records
    assert floor(store) == {} and seats(store, "SAT") == (8, 0, 0)


def test_a_mapped_line_s_limit_counts_with_the_customer_s_other_seats(container, store) -> None:
    add_floor(store, limit=2)
    container.run(mapped_order(1, {"seats": ["F-R1-1", "F-R1-2"]}, rid="o-1"))
    body = {
        **BASE,
        "reservation_id": "o-2",
        "customer_id": "c-1",
        "lines": [{"seat_class": "FLOOR", "seats": ["F-R1-5"]}],
    }
    container.run(QueueMessage("m-2", json.dumps(body)))

    refused = container.answer("m-2")
    assert refused.outcome is Outcome.LIMIT_EXCEEDED
    assert refused.reason == (
        "line 1 (FLOOR): customer 'c-1' may take at most 2 seat(s) of e-1 FLOOR; 2 already taken, 1 requested"
    )
    assert floor(store) == {1: "S", 2: "S"}


def test_a_held_order_with_a_mapped_line_is_released_whole_by_cancel_or_expiry(container, store) -> None:
    add_floor(store)
    container.run(
        mapped_order(1, {"seats": ["F-R1-1", "F-R1-2"]}, hold=60), mapped_order(2, {"quantity": 3}, hold=600)
    )
    assert len(floor(store)) == 5 and set(floor(store).values()) == {"H"}
    container.run(change(3, "cancel", "o-2"))
    assert floor(store) == {1: "H", 2: "H"} and seats(store, "SAT") == (7, 1, 0)

    container.clock.time += 61
    publisher = RecordingPublisher()
    release_expired_holds(store, publisher, container.clock, limit=10, rejection_ttl_seconds=TTL)
    [expired] = publisher.published
    assert expired.reservation_id == "o-1" and floor(store) == {} and seats(store, "SAT") == (8, 0, 0)


def test_an_order_needs_an_admission_token_when_one_of_its_classes_does(container, store) -> None:
    store.change_item(SeatKey("e-1", "PASS"), admission_required=True)
    token = issue_token(RING, event_id="e-1", customer_id="c-1", expires_at=NOW + 600, token_id="t-1")
    container.run(order(1, ("SAT", 1), ("PASS", 1)))
    container.run(order(2, ("SAT", 1), ("PASS", 1), customer="c-1", admission_token=token))
    container.run(order(3, ("SAT", 1), ("PASS", 1), customer="c-1", admission_token=token))

    assert store.status["o-1"] is Outcome.ADMISSION_REFUSED
    assert store.status["o-2"] is Outcome.CONFIRMED
    assert store.status["o-3"] is Outcome.ADMISSION_REFUSED
    assert (
        store.records["o-3"].reason
        == "line 2 (PASS): admission token replayed: already used by reservation o-2"
    )
    assert seats(store, "PASS") == (5, 0, 1)


# ------------------------------------------------------------------ the whole order changes status


def test_a_held_order_is_confirmed_then_cancelled_as_a_whole(container, store) -> None:
    container.run(order(1, ("SAT", 2), ("PARKING", 1), hold=600))
    assert container.answer("m-1").outcome is Outcome.HELD
    assert (seats(store, "SAT"), seats(store, "PARKING"), pool(store)) == ((6, 2, 0), (4, 1, 0), (8, 2, 0))

    container.run(change(2, "confirm", "o-1"), change(3, "confirm", "o-1"))
    assert container.answer("m-2").outcome is Outcome.CONFIRMED
    assert container.answer("m-3").duplicate
    assert (seats(store, "SAT"), seats(store, "PARKING"), pool(store)) == ((6, 0, 2), (4, 0, 1), (8, 0, 2))

    container.run(change(4, "cancel", "o-1"))
    cancelled = container.answer("m-4")
    assert cancelled.outcome is Outcome.CANCELLED and cancelled.lines is not None
    assert (seats(store, "SAT"), seats(store, "PARKING"), pool(store)) == ((8, 0, 0), (5, 0, 0), (10, 0, 0))
    assert store.counters[(SeatKey("e-1", "PARKING"), "c-1")] == 0


def test_the_sweeper_expires_a_held_order_whole_and_once(container, store) -> None:
    container.run(order(1, ("SAT", 2), ("PASS", 1), ("PARKING", 2), hold=60))
    container.clock.time += 61
    publisher = RecordingPublisher()
    for _ in range(2):
        release_expired_holds(store, publisher, container.clock, limit=10, rejection_ttl_seconds=TTL)
    [expired] = publisher.published
    assert expired.outcome is Outcome.EXPIRED and expired.reason.endswith("5 seat(s) released")
    assert (seats(store, "SAT"), seats(store, "PASS"), seats(store, "PARKING")) == (
        (8, 0, 0),
        (6, 0, 0),
        (5, 0, 0),
    )
    assert pool(store) == (10, 0, 0)


def test_reservation_show_lists_an_order_s_lines_and_where_each_took_its_seats(container, store) -> None:
    from seat_tools.cli.reservation_commands import record_document

    container.run(order(1, ("SAT", 2), ("PARKING", 1)))
    record = store.record("o-1")
    assert record is not None
    assert record_document(record)["lines"] == [
        {"seat_class": "SAT", "quantity": 2, "shard": 0, "pools": ["weekend"], "customer_counted": False},
        {"seat_class": "PARKING", "quantity": 1, "shard": 0, "pools": [], "customer_counted": True},
    ]


def test_an_order_on_a_sharded_class_takes_from_the_containers_own_shard(store) -> None:
    # Given Saturday over 4 shard items
    store.add_event("e-1", 40, "FLOOR", shards=4)
    container = Container(store, FakeClock(time=NOW))
    container.run(order(1, ("FLOOR", 2), ("PARKING", 1)))
    container.run(order(2, ("FLOOR", 2), ("PARKING", 1)))

    shards = store.inventory[SeatKey("e-1", "FLOOR")].shard_seats()
    [used] = [s for s in shards if s.sold]
    assert used.sold == 4  # both orders on the one shard item the container settled on
    record = store.record("o-2")
    assert record is not None and record.takes()[0].shard == used.shard
    container.run(change(3, "cancel", "o-2"))
    assert store.inventory[SeatKey("e-1", "FLOOR")].sold == 2


# ------------------------------------------------------------------ sharded pools


def hall_store(pool_shards: int, capacity: int = 8) -> InMemoryInventoryStore:
    """A hall of `capacity` seats over `pool_shards` items, shared by FLOOR (8 shard items) and
    BALCONY (one item: it always writes pool item 0)."""
    store = InMemoryInventoryStore()
    store.add_pool("e-1", "hall", capacity, shards=pool_shards)
    store.add_event("e-1", 40, "FLOOR", shards=8, pools=["hall"])
    store.add_event("e-1", 20, "BALCONY", pools=["hall"])
    return store


def hall_items(store: InMemoryInventoryStore) -> list[tuple[int, int, int, int]]:
    """Each hall item's (capacity, available, held, sold)."""
    whole = store.pool("e-1", "hall")
    assert whole is not None
    return [(s.capacity, s.available, s.held, s.sold) for s in whole.shards]


def test_an_order_takes_every_line_from_one_pool_item_and_gives_back_there() -> None:
    # Given a hall of 16 over 4 items; the container owns FLOOR's shard 7 (pool item 7 mod 4 = 3)
    store = hall_store(4, capacity=16)
    refusals = counting_pool_refusals(store)
    container = Container(store, FakeClock(time=NOW))
    container.hints.settle_on(SeatKey("e-1", "FLOOR"), 7, None)

    # When an order holds 2 FLOOR and 1 BALCONY
    container.run(order(1, ("FLOOR", 2), ("BALCONY", 1), hold=60))

    # Then both lines' seats came off item 3 (the first line's class shard mod K): the order
    # writes one pool item, each line's record names it, and no write was refused
    assert container.answer("m-1").outcome is Outcome.HELD
    assert hall_items(store) == [(4, 4, 0, 0), (4, 4, 0, 0), (4, 4, 0, 0), (4, 1, 3, 0)]
    record = store.record("o-1")
    assert record is not None
    assert [(t.key.seat_class, t.shard, t.pools) for t in record.takes()] == [
        ("FLOOR", 7, ("hall#3",)),
        ("BALCONY", 0, ("hall#3",)),
    ]
    assert refusals == []

    # When it is confirmed, then cancelled: the seats go back to the item the record names
    container.run(change(2, "confirm", "o-1"))
    assert hall_items(store) == [(4, 4, 0, 0), (4, 4, 0, 0), (4, 4, 0, 0), (4, 1, 0, 3)]
    container.run(change(3, "cancel", "o-1"))
    assert hall_items(store) == [(4, 4, 0, 0)] * 4
    check_counts(store)


def test_the_containers_orders_keep_to_its_pool_item_until_a_conflict() -> None:
    # Given a hall of 16 over 4 items; an order of 1 FLOOR from FLOOR's shard 7 settled the
    # container on pool item 3
    store = hall_store(4, capacity=16)
    container = Container(store, FakeClock(time=NOW))
    container.hints.settle_on(SeatKey("e-1", "FLOOR"), 7, None)
    container.run(order(1, ("FLOOR", 1)))
    assert container.hints.own_pool_item("e-1", "hall") == 3

    # When the next order has BALCONY first (its class shard 0: item 0 by shard mod K)
    container.run(order(2, ("BALCONY", 1), ("FLOOR", 1)))

    # Then it still takes from item 3, the container's, both lines
    assert container.answer("m-2").outcome is Outcome.CONFIRMED
    assert hall_items(store) == [(4, 4, 0, 0), (4, 4, 0, 0), (4, 4, 0, 0), (4, 1, 0, 3)]
    record = store.record("o-2")
    assert record is not None
    assert [t.pools for t in record.takes()] == [("hall#3",), ("hall#3",)]

    # When a transaction on it conflicts, the next order routes afresh (its first line's item)
    container.hints.leave_pool_items("e-1", ["hall"])
    assert container.hints.own_pool_item("e-1", "hall") is None
    container.run(order(3, ("BALCONY", 1)))
    assert hall_items(store) == [(4, 3, 0, 1), (4, 4, 0, 0), (4, 4, 0, 0), (4, 1, 0, 3)]
    assert container.hints.own_pool_item("e-1", "hall") == 0
    check_counts(store)


def test_seats_move_into_short_pool_items_and_only_the_whole_pool_refuses_an_order() -> None:
    # Given a hall of 8 over 4 items (2 each); FLOOR on shard 5: the order's item is 1
    store = hall_store(4)
    container = Container(store, FakeClock(time=NOW))
    container.hints.settle_on(SeatKey("e-1", "FLOOR"), 5, None)

    # When an order wants 3 FLOOR and 2 BALCONY (item 1 has 2, item 0 has 2; the hall has 8)
    container.run(order(1, ("FLOOR", 3), ("BALCONY", 2)))

    # Then it is taken on item 1: 3 seats moved in from the fullest other items; the hall keeps 8
    assert container.answer("m-1").outcome is Outcome.CONFIRMED
    assert hall_items(store) == [(0, 0, 0, 0), (5, 0, 0, 5), (1, 1, 0, 0), (2, 2, 0, 0)]

    # When an order wants 2 + 2 of the 3 left, then 1 + 2
    container.run(order(2, ("FLOOR", 2), ("BALCONY", 2)))
    second = container.answer("m-2")
    container.run(order(3, ("FLOOR", 1), ("BALCONY", 2)))
    third = container.answer("m-3")

    # Then the first is refused by the hall as a whole, naming the line; the second is taken
    assert second.outcome is Outcome.SOLD_OUT and second.seat_class == "BALCONY"
    assert second.reason == "line 2 (BALCONY): requested 2 seat(s), 1 left in pool hall"
    assert third.outcome is Outcome.CONFIRMED
    whole = store.pool("e-1", "hall")
    assert whole is not None and (whole.capacity, whole.available, whole.sold) == (8, 0, 8)
    check_counts(store)


def test_two_lines_on_one_pool_item_are_one_update_guarded_on_their_sum() -> None:
    # Given a hall of 8 over 2 items (4 each); FLOOR on shard 2 writes item 0, as BALCONY does
    store = hall_store(2)
    container = Container(store, FakeClock(time=NOW))
    container.hints.settle_on(SeatKey("e-1", "FLOOR"), 2, None)
    writes: list[object] = []
    spy_writes(store, lambda w, _: writes.append(w))

    # When an order wants 3 FLOOR and 3 BALCONY: 6 off item 0, which has 4
    container.run(order(1, ("FLOOR", 3), ("BALCONY", 3)))

    # Then 2 seats moved into item 0 from item 1, in the one transaction of the order
    assert container.answer("m-1").outcome is Outcome.CONFIRMED
    assert hall_items(store) == [(6, 0, 0, 6), (2, 2, 0, 0)]
    [lines] = [w for w in writes if not isinstance(w, GroupWrite)]
    assert sum(sum(w.pool_donors("hall").values()) for w in lines) == 2
    check_counts(store)


def test_the_order_s_pool_item_gets_what_its_lines_lack_from_the_other_item() -> None:
    # Given a hall of 8 over 2 items (4 each); FLOOR on shard 1: the order's item is 1
    store = hall_store(2)
    container = Container(store, FakeClock(time=NOW))
    container.hints.settle_on(SeatKey("e-1", "FLOOR"), 1, None)

    # When an order wants 1 FLOOR and 6 BALCONY: item 1 is 3 short, item 0 has 4
    container.run(order(1, ("FLOOR", 1), ("BALCONY", 6)))

    # Then item 0 gives 3 seats (and capacity) to item 1, which takes both lines' 7
    assert container.answer("m-1").outcome is Outcome.CONFIRMED
    assert hall_items(store) == [(1, 1, 0, 0), (7, 0, 0, 7)]
    check_counts(store)


def test_one_pool_item_refusing_an_order_is_never_a_sold_out_the_pool_is_read_whole() -> None:
    # Given a hall of 8 over 4 items; the container owns FLOOR's shard 4: both lines write item 0
    store = hall_store(4)
    refusals = counting_pool_refusals(store)
    container = Container(store, FakeClock(time=NOW))
    container.hints.settle_on(SeatKey("e-1", "FLOOR"), 4, None)
    container.run(order(1, ("FLOOR", 1), ("BALCONY", 1)))  # item 0's 2 seats; it read the hall
    assert refusals == [] and hall_items(store)[0] == (2, 0, 0, 2)

    # When it sends the same order again (its hints say the hall has seats: it writes at once)
    container.run(order(2, ("FLOOR", 1), ("BALCONY", 1)))

    # Then item 0 alone refused (0 left there); the hall was read whole, 2 seats moved in from
    # other items, and the order is taken, not SOLD_OUT
    assert len(refusals) == 1
    assert refusals[0].pools_refused["hall"].complete is False  # type: ignore[attr-defined]
    assert container.answer("m-2").outcome is Outcome.CONFIRMED
    assert hall_items(store)[0] == (4, 0, 0, 4)
    check_counts(store)


def test_a_pool_item_emptied_after_the_whole_read_is_read_whole_again_not_sold_out() -> None:
    # Given a hall of 8 over 4 items (2 each); a container that has never seen the classes (it
    # reads BALCONY, a class of one item, and the hall whole) and owns FLOOR's shard 4: both
    # lines write item 0
    store = hall_store(4)
    container, other = Container(store, FakeClock(time=NOW)), Container(store, FakeClock(time=NOW))
    container.hints.settle_on(SeatKey("e-1", "FLOOR"), 4, None)
    # Another container takes item 0's 2 seats between that read and the order's write.
    store.before_commit = lambda: race(other, order(9, ("BALCONY", 2)))

    # When the order wants 1 BALCONY and 1 FLOOR
    container.run(order(1, ("BALCONY", 1), ("FLOOR", 1)))

    # Then item 0 refused it (0 left there, 6 in the hall): the hall is read whole again and 2
    # seats move into item 0: CONFIRMED, not SOLD_OUT
    assert container.answer("m-1").outcome is Outcome.CONFIRMED
    assert hall_items(store)[0] == (4, 0, 0, 4)
    check_counts(store)


def test_a_sharded_class_never_seen_is_first_read_as_its_shard_0_alone() -> None:
    # Given a container that has never seen FLOOR (8 shard items) nor the hall (4 items)
    store = hall_store(4, capacity=16)
    reads: list[tuple[str, bool]] = []
    read = store.read_inventory

    def recording(key, *, whole=True, customers=()):
        reads.append((key.seat_class, whole))
        return read(key, whole=whole, customers=customers)

    store.read_inventory = recording  # type: ignore[method-assign]
    container = Container(store, FakeClock(time=NOW))

    # When it takes an order of 2 FLOOR
    container.run(order(1, ("FLOOR", 2)))

    # Then it read FLOOR's shard 0 alone (with each pool's first item: the hall has 4), not
    # every item of FLOOR and the hall, and its line took from the item of its class shard
    assert container.answer("m-1").outcome is Outcome.CONFIRMED
    assert reads == [("FLOOR", False)]
    record = store.record("o-1")
    assert record is not None
    [take] = record.takes()
    assert take.pools == (pool_ref("hall", take.shard % 4),)
    check_counts(store)


def test_order_pool_routes_puts_every_counted_line_on_one_item_and_moves_what_it_lacks() -> None:
    from seat_inventory.logic.order_routing import PoolDemand, order_pool_routes
    from seat_inventory.models import PoolInventory, ShardSeats

    items = (ShardSeats(0, 4, 4, 0, 0), ShardSeats(1, 3, 3, 0, 0), ShardSeats(2, 1, 1, 0, 0))
    whole = PoolInventory("e-1", "hall", 8, 8, shard_count=3, shards=items)
    lines = [PoolDemand(("hall",), 3, 3), PoolDemand(("hall",), 0, 3), PoolDemand(("hall",), 1, 2)]

    # No item of the container's yet: every line on item 0 (the first line's class shard 3 mod
    # 3), wanting 8 of its 4; the 4 missing come from the fullest others, each line at most its
    # seats: line 1 gets item 1's 3, line 2 item 2's 1
    assert order_pool_routes(lines, {"hall": whole}) == [
        ({"hall": 0}, {"hall": {1: 3}}),
        ({"hall": 0}, {"hall": {2: 1}}),
        ({"hall": 0}, {}),
    ]
    # The container's item (1) takes every counted line; a mapped line stays on item 0
    mixed = [PoolDemand(("hall",), 3, 3), PoolDemand(("hall",), 0, 2, routed=False)]
    assert order_pool_routes(mixed, {"hall": whole}, {"hall": 1}) == [({"hall": 1}, {}), ({"hall": 0}, {})]
    # An item the pool does not have (hints from before a change) is ignored: shard mod K again
    assert order_pool_routes(lines[:1], {"hall": whole}, {"hall": 5}) == [({"hall": 0}, {})]
    # One item's view (K known, not the seats): the item, no moves; a pool of one item: nothing
    head = PoolInventory("e-1", "hall", 4, 4, shard_count=3)
    assert order_pool_routes(lines, {"hall": head}) == [({"hall": 0}, {})] * 3
    single = PoolInventory("e-1", "hall", 8, 8)
    assert order_pool_routes(lines, {"hall": single}) == [({}, {})] * 3


def race(racer: Container, message: QueueMessage) -> None:
    assert racer.run(message).failed_message_ids == []


# ------------------------------------------------------------------ the model


def check_counts(store: InMemoryInventoryStore, pools: dict[str, tuple[int, set[int]]] | None = None) -> None:
    """Every class's and pool item's held and sold equal its live records' lines; no pool over its
    capacity; every order record either took all its lines or none. `pools` (a pool's capacity,
    and every item count it had): each pool as a whole keeps its capacity, and each line names
    the item its class shard routes to (shard mod K, for a K the pool had)."""
    held: dict[object, int] = {}
    sold: dict[object, int] = {}
    seat_states: dict[tuple[SeatKey, str], str] = {}
    for rid in store.records:
        record = store.record(rid)
        assert record is not None
        if record.status not in (Outcome.HELD, Outcome.CONFIRMED):
            continue
        tally = held if record.status is Outcome.HELD else sold
        if record.answer.lines is not None:
            assert sum(t.quantity for t in record.takes()) == record.quantity  # every line, not some
        order_items: dict[str, set[int]] = {}
        for take in record.takes():
            # Each line names the pool item its seats came off (`P#n` for item n of a sharded pool).
            for owner in (take.key, *(("pool", p) for p in take.pools)):
                tally[owner] = tally.get(owner, 0) + take.quantity
            for ref in take.pools:
                name, item = split_pool_ref(ref)
                if pools is None:
                    continue
                if take.seats:  # a mapped line: item 0, as a single mapped take
                    assert item == 0, (rid, ref)
                else:  # a counted line: the order's one item of the pool
                    assert item < max(pools[name][1]), (rid, ref)
                    order_items.setdefault(name, set()).add(item)
            for seat in take.seats:  # a mapped line: each of its seats once, in its state
                assert (take.key, seat) not in seat_states, seat
                seat_states[(take.key, seat)] = "H" if record.status is Outcome.HELD else "S"
        assert all(len(items) == 1 for items in order_items.values()), (rid, order_items)
    for key, rows in store.seat_rows.items():
        found_states = {
            (key, f"{row_id.split('#')[0]}-{p}"): state.value
            for row_id, row in rows.items()
            for p, state in row.states.items()
        }
        assert found_states == {k: v for k, v in seat_states.items() if k[0] == key}
        assert sum(r.held for r in rows.values()) == held.get(key, 0)
        assert sum(r.sold for r in rows.values()) == sold.get(key, 0)
    for key, item in store.inventory.items():
        assert (item.held, item.sold) == (held.get(key, 0), sold.get(key, 0)), key
        assert item.available + item.held + item.sold == item.capacity and item.available >= 0
    for (_, ref), found in store.pools.items():
        owner = ("pool", ref)
        assert (found.held, found.sold) == (held.get(owner, 0), sold.get(owner, 0)), ref
        assert found.available + found.held + found.sold == found.capacity
        assert 0 <= found.available <= found.capacity
    for name, (capacity, _) in (pools or {}).items():
        # A pool as a whole (the sum of its items) keeps its capacity: moves only shift seats.
        whole = store.pool("e-1", name)
        assert whole is not None and whole.capacity == capacity, name
        assert whole.held + whole.sold <= capacity


def check_refusals_on_whole_views(store: InMemoryInventoryStore) -> None:
    """Wraps the store's commit: every order refused SOLD_OUT (or SALE_CLOSED) for a pool must be
    right about the pool as a whole when its refusal is recorded (the containers run one after
    another, so nothing changed since the planner read it), and a counted line's SOLD_OUT about
    its whole class: one pool item or shard item never decides a refusal."""

    def checked(write, refused):
        for answer in write.outcomes if isinstance(write, GroupWrite) and write.records_only else ():
            if not answer.lines or answer.outcome not in (Outcome.SOLD_OUT, Outcome.SALE_CLOSED):
                continue
            index = int(answer.reason.split()[1]) - 1
            line = answer.lines[index]
            if " in pool " in answer.reason:
                name = answer.reason.rsplit(" ", 1)[1]
                whole = store.pool("e-1", name)
                assert whole is not None
                before = sum(
                    earlier.quantity
                    for earlier in answer.lines[:index]
                    if name in store.inventory.get(SeatKey("e-1", earlier.seat_class), _NO_CLASS).pools
                )
                assert whole.available < before + line.quantity, answer.reason
                assert answer.remaining == max(0, whole.available - before), answer.reason
            elif answer.outcome is Outcome.SALE_CLOSED and " pool " in answer.reason:
                name = answer.reason.split(" pool ")[1].split()[0]
                whole = store.pool("e-1", name)
                assert whole is not None and whole.sale_status is SaleStatus.CLOSED, answer.reason
            elif answer.outcome is Outcome.SOLD_OUT and SeatKey("e-1", line.seat_class) in store.inventory:
                item = store.inventory[SeatKey("e-1", line.seat_class)]
                assert item.available < line.quantity, answer.reason

    spy_writes(store, checked)


_NO_CLASS = SeatClassInventory("e-1", "-", 0, 0, 0)


def random_event(
    rng: random.Random, *, sharded: bool = False
) -> tuple[InMemoryInventoryStore, list[str], dict[str, tuple[int, set[int]]]]:
    store = InMemoryInventoryStore()
    pools = [f"p{n}" for n in range(rng.randint(1, 3))]
    capacities: dict[str, tuple[int, set[int]]] = {}
    for name in pools:
        shards = rng.choice([1, 2, 4]) if sharded else 1
        capacities[name] = (rng.randint(4, 16), {shards})
        store.add_pool("e-1", name, capacities[name][0], shards=shards)
    classes = [f"C{n}" for n in range(rng.randint(3, 5))]
    for name in classes:
        store.add_event(
            "e-1",
            rng.randint(3, 14),
            name,
            pools=rng.sample(pools, rng.randint(0, len(pools))),
            max_per_customer=rng.choice([None, None, 4]),
            shards=rng.choice([1, 2, 4]) if sharded else rng.choice([1, 1, 2]),
        )
    if rng.random() < 0.5:  # a mapped class: one row of 8 seats (docs/guides/seat-maps.md)
        seat_map = {
            "classes": {"FLOOR": {}},
            "sections": [{"id": "F", "class": "FLOOR", "rows": [{"id": "R1", "seats": 8}]}],
        }
        store.add_seat_map("e-1", load_json(json.dumps(seat_map)), max_per_customer=rng.choice([None, 3]))
        classes.append("FLOOR")
    return store, classes, capacities


def random_message(
    rng: random.Random,
    n: int,
    store: InMemoryInventoryStore,
    classes: list[str],
    sent: list,
    *,
    takes_only: bool = False,
):
    live = [r for r in store.records if store.status[r] in (Outcome.HELD, Outcome.CONFIRMED)]
    roll = rng.random() * (0.55 if takes_only else 1)
    hold = rng.choice([None, rng.randint(5, 60)])
    customer = f"c-{rng.randint(1, 4)}"
    if roll < 0.45 or not live:
        picked = rng.sample(classes, rng.randint(1, min(4, len(classes))))
        lines: list[dict[str, object]] = [{"seat_class": c, "quantity": rng.randint(1, 2)} for c in picked]
        for line in lines:
            if line["seat_class"] == "FLOOR" and rng.random() < 0.5:  # chosen seats, else best available
                line.pop("quantity")
                line["seats"] = [f"F-R1-{p}" for p in rng.sample(range(1, 9), rng.randint(1, 2))]
        body = {"reservation_id": f"o-{n}", "event_id": "e-1", "customer_id": customer, "lines": lines}
        if hold is not None:
            body.update(type="hold", hold_seconds=hold)
        return QueueMessage(f"m-{n}", json.dumps(body))
    if roll < 0.55:
        body = {"reservation_id": f"s-{n}", "event_id": "e-1", "customer_id": customer}
        body.update(seat_class=rng.choice(classes), quantity=rng.randint(1, 3))
        return QueueMessage(f"m-{n}", json.dumps(body))
    if roll < 0.7:
        return change(n, "confirm", rng.choice(live))
    if roll < 0.85:
        return change(n, "cancel", rng.choice(live))
    return rng.choice(sent) if sent else change(n, "cancel", rng.choice(live))  # a redelivery


def racing_before_orders(store: InMemoryInventoryStore) -> list[tuple[Container, QueueMessage]]:
    """Wraps the store's commit: before each order's write (several writes at once), the next
    race in the returned list runs (another container's message, settled to the end)."""
    races: list[tuple[Container, QueueMessage]] = []
    commit = store.take

    def racing(take):
        if races and is_order(take):
            race(*races.pop())
        return commit(take)

    store.take = racing  # type: ignore[method-assign]
    return races


@pytest.mark.parametrize("sharded", [False, True], ids=["one-item", "sharded"])
@pytest.mark.parametrize("seed", range(12))
def test_random_orders_pools_and_lifecycles_keep_every_count_equal_to_the_records(
    seed: int, sharded: bool
) -> None:
    # Sharded: every pool over 1, 2 or 4 items and every counted class over 1, 2 or 4, with four
    # containers, so that an order's lines land on different pool items (or the same one) and
    # seats move between them; an operator reshards a pool to twice its items now and then.
    rng = random.Random(seed)
    store, classes, pools = random_event(rng, sharded=sharded)
    check_refusals_on_whole_views(store)
    races = racing_before_orders(store)
    clock = FakeClock(time=NOW)
    containers = [Container(store, clock) for _ in range(4 if sharded else 3)]
    sent: list[QueueMessage] = []
    answered: dict[str, set[Outcome]] = {}
    n = 0
    for _ in range(40):
        batch = []
        for _ in range(rng.randint(1, 6)):
            n += 1
            batch.append(random_message(rng, n, store, classes, sent))
        sent.extend(batch)
        container = rng.choice(containers)
        for _ in range(rng.randint(0, 2) if sharded else 0):
            # Races: another container takes seats just before one of this batch's order writes
            # (between its settlement's whole read and its write), so a pool item may refuse a
            # write planned on a whole read made in the same settlement.
            n += 1
            rival = random_message(rng, n, store, classes, sent, takes_only=True)
            races.append((rng.choice([c for c in containers if c is not container]), rival))
        result = container.run(*batch)
        races.clear()
        assert result.failed_message_ids == []
        for published in container.published:
            if published.request_type in (None,) or published.lines is None or published.duplicate:
                continue
            if published.message_id and published.request_type.value in ("reserve", "hold"):
                answered.setdefault(published.reservation_id, set()).add(published.outcome)
        clock.time += rng.randint(0, 20)
        if rng.random() < 0.3:
            release_expired_holds(store, RecordingPublisher(), clock, limit=100, rejection_ttl_seconds=TTL)
        if rng.random() < 0.1:
            name = rng.choice(sorted(pools))
            store.change_pool("e-1", name, sale_status=rng.choice([SaleStatus.OPEN, SaleStatus.CLOSED]))
        if sharded and rng.random() < 0.1:
            # An operator spreads a pool over more items during the sale (held and sold stay).
            name = rng.choice(sorted(pools))
            shards = min(8, 2 * store.pools[("e-1", name)].shard_count)
            store.reshard_pool("e-1", name, shards)
            pools[name][1].add(shards)
        check_counts(store, pools)
    # Each order got one final answer (redeliveries are duplicates of it)
    assert all(len(outcomes) == 1 for outcomes in answered.values())
    assert any(store.status.get(r) is not None and store.records[r].lines for r in store.records)


# ------------------------------------------------------------------ what an order costs


@pytest.mark.parametrize(
    ("lines", "units"),
    [
        # 2 units per item of up to 1 KB: each line's class item, the record, a counter per line
        # of a class with a limit, each pool once however many lines share it.
        ((("SAT", 1),), 6),  # SAT, record, weekend
        ((("SAT", 1), ("PASS", 1)), 8),  # SAT, PASS, record, weekend (shared: once)
        ((("SAT", 2), ("PASS", 1), ("PARKING", 1)), 12),  # + PARKING and its counter
    ],
)
def test_an_order_costs_two_write_units_per_item_and_so_does_its_cancel(store, lines, units) -> None:
    from seat_tools.contention.model import ContentionModel, ContentionSettings
    from seat_tools.simulation.dynamodb import SimulatedTable

    clock = StepClock()
    model = ContentionModel(ContentionSettings(), clock=clock.now, rng=random.Random(1))
    client = SimulatedTable(store, model, seed=1).client(clock)  # type: ignore[arg-type]
    publisher = RecordingPublisher()
    common = {"store": client, "publisher": publisher, "settings": SETTINGS, "clock": clock}
    hints = InventoryHints()
    for key in store.inventory:  # the container knows the classes: no reads in the count
        hints.observe(key, store.inventory[key])

    reserve_seats([order(1, *lines)], hints=hints, **common)  # type: ignore[arg-type]
    taken = model.counters().write_units_consumed
    reserve_seats([change(2, "cancel", "o-1")], hints=hints, **common)  # type: ignore[arg-type]

    assert [o.outcome for o in publisher.published] == [Outcome.CONFIRMED, Outcome.CANCELLED]
    assert taken == units
    assert model.counters().write_units_consumed - taken == units


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 20) | st.text(max_size=6),
    lambda inner: (
        st.lists(inner, max_size=5)
        | st.dictionaries(st.sampled_from(["seat_class", "quantity", "seats", "x"]), inner, max_size=4)
    ),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(lines=JSON_VALUES)
def test_any_lines_value_is_an_order_or_one_bounded_invalid_line(lines) -> None:
    parsed = parse({**BASE, "lines": lines})
    if isinstance(parsed, InvalidMessage):
        assert "\n" not in parsed.reason and 0 < len(parsed.reason) <= 240
        return
    assert isinstance(parsed, ReservationRequest) and parsed.lines is not None
    assert 1 <= len(parsed.lines) <= 4 and len({line.seat_class for line in parsed.lines}) == len(
        parsed.lines
    )
    assert parsed.quantity == sum(line.quantity for line in parsed.lines) <= 10


class _CountingClient:
    """Stands in for DynamoDB: counts each transaction's actions, commits nothing."""

    def __init__(self) -> None:
        self.sizes: list[int] = []

    def transact_write_items(self, TransactItems: list) -> dict:
        self.sizes.append(len(TransactItems))
        return {}


def test_the_changes_of_many_orders_are_split_into_transactions_of_at_most_100_actions() -> None:
    from seat_inventory.dal.writes import Writes as Transitions
    from seat_inventory.logic.change_reservations import settle_transitions
    from seat_inventory.models import ReservationRecord, Transition

    # Given 40 held orders of 4 limited classes in 2 pools, each of another customer: a record, a
    # counter per line, the 4 class items and the 2 pools (once per transaction)
    def line(c: str) -> OrderLine:
        return OrderLine(c, 1, pools=("p1",) if c < "C" else ("p2",), customer_counted=True)

    records = [
        ReservationRecord(
            ReservationOutcome(
                f"o-{n}",
                Outcome.HELD,
                "held",
                "e-1",
                None,
                4,
                f"c-{n}",
                hold_expires_at=NOW + 60,
                lines=tuple(line(c) for c in ("A", "B", "C", "D")),
            ),
            Outcome.HELD,
            hold_expires_at=NOW + 60,
        )
        for n in range(40)
    ]
    client = _CountingClient()
    store = Transitions(client, "t")  # type: ignore[arg-type]
    result = settle_transitions(
        SeatKey("e-1", "A"),
        [Transition(r, Outcome.CANCELLED) for r in records],
        now=NOW,
        store=store,  # type: ignore[arg-type]
        clock=FakeClock(time=NOW),
        hints=_KnownCapacity(),  # type: ignore[arg-type]
        release_ttl_seconds=TTL,
    )

    # Then every order changed, in transactions of at most 100 actions, each as full as fits
    assert len(result.committed) == 40 and result.error is None
    assert max(client.sizes) <= 100 and sum(client.sizes) == 40 * 5 + len(client.sizes) * 6
    assert client.sizes[0] == 6 + 18 * 5  # 96: a 19th order (5 more) would pass 100


class _KnownCapacity(InventoryHints):
    """Hints that know class A: a sharded class's guards need no capacity."""

    def assumed(self, key: SeatKey):  # type: ignore[override]
        from seat_inventory.models import SeatClassInventory

        return SeatClassInventory("e-1", key.seat_class, 10, 10, 0, shard_items=2, shard_count=2)
