"""The orders workload of `seats simulate --order-lines` (docs/guides/orders.md, "Scale"): orders of 1-4
lines over four sharded classes sharing a pool, and the checks that compare every class's and
pool item's counts with the records' lines."""

from __future__ import annotations

import dataclasses
import random

import pytest
from click.testing import CliRunner

from seat_inventory.models import OrderLine, Outcome, ReservationOutcome, SeatKey
from seat_inventory.settings import Settings
from seat_tools.cli.main import cli
from seat_tools.simulation.memory_store import InMemoryInventoryStore
from seat_tools.simulation.order_workload import order_figures
from seat_tools.simulation.run import EVENT_ID, SimulationConfig, run_simulation
from seat_tools.traffic import ORDER_CLASSES, OrderRequests
from tests import containers
from tests.fakes import FakeClock

SETTINGS = Settings(table_name="t", outcomes_topic_arn="arn:aws:sns:us-east-1:123456789012:t")


def test_orders_over_sharded_classes_sharing_a_pool_are_taken_whole_and_counted() -> None:
    """Given 300 orders of 1 to 4 lines of 2 seats over 4 classes of 4 shard items each, all in one
    pool, 4 containers; when the sale runs; then every order is confirmed with all its lines,
    every class's shard items and the pool equal the records, and the figures count the lines."""
    config = SimulationConfig(
        requests=300, containers=4, shards=4, pool_shards=1, seats_per_request=2, order_lines=(1, 4)
    )

    figures = run_simulation(config, SETTINGS).figures

    assert figures["invariants"] == "ok"
    assert figures["outcomes"] == {"CONFIRMED": 300}
    orders = figures["orders"]
    assert orders["lines_confirmed"] == orders["lines_asked"]
    assert 300 < orders["lines_asked"] < 1200
    assert orders["seats_sold"] == 2 * orders["lines_asked"] == figures["seats_confirmed"]
    assert set(orders["sold_by_class"]) == set(ORDER_CLASSES)
    assert figures["cost_per_million_requests"]["total"] > 0


def test_a_scarce_class_refuses_whole_orders_and_leaves_the_other_lines_untaken() -> None:
    """Given each class 40 seats and 200 orders of 1-4 lines of 1 seat; when the sale runs; then
    every class sells exactly its 40 seats, the refused orders took nothing, and the pool's
    count is the classes' sum (the checks pass on an event that sells out)."""
    config = SimulationConfig(
        requests=200, containers=3, shards=2, pool_shards=1, capacity=40, order_lines=(1, 4)
    )

    figures = run_simulation(config, SETTINGS).figures

    assert figures["invariants"] == "ok"
    assert figures["orders"]["sold_by_class"] == dict.fromkeys(sorted(ORDER_CLASSES), 40)
    assert figures["outcomes"]["SOLD_OUT"] > 0
    assert sum(figures["orders"]["recorded"].values()) == 200


def _store_after_one_order() -> tuple[InMemoryInventoryStore, OrderRequests]:
    orders = OrderRequests([(("ADULT", 1), ("CHILD", 1))])
    data = InMemoryInventoryStore()
    for seat_class in ORDER_CLASSES:
        data.add_event(EVENT_ID, 10, seat_class, pools=["hall"])
    data.add_pool(EVENT_ID, "hall", 40)
    return data, orders


def test_the_checks_name_an_order_half_taken() -> None:
    """Given a record confirming both lines of an order but only one class item moved (a
    half-taken order); when checked; then the other class's count is named."""
    data, orders = _store_after_one_order()
    key = SeatKey(EVENT_ID, "ADULT")
    data.inventory[key] = dataclasses.replace(data.inventory[key], available=9, sold=1)
    pool = data.pools[(EVENT_ID, "hall")]
    data.pools[(EVENT_ID, "hall")] = dataclasses.replace(pool, available=38, sold=2)

    data.records["r-0"] = ReservationOutcome(
        reservation_id="r-0",
        outcome=Outcome.CONFIRMED,
        reason="2 seat(s) in 2 line(s) confirmed",
        event_id=EVENT_ID,
        seat_class=None,
        quantity=2,
        customer_id="c-0",
        lines=(OrderLine("ADULT", 1, pools=("hall",)), OrderLine("CHILD", 1, pools=("hall",))),
    )

    problems = order_figures(data, EVENT_ID, orders, "hall", 1.0)["invariants"]

    assert problems != "ok"
    assert any(p.startswith("CHILD: sold 0") for p in problems)


def test_the_checks_name_a_record_missing_a_line() -> None:
    data, orders = _store_after_one_order()

    data.records["r-0"] = ReservationOutcome(
        reservation_id="r-0",
        outcome=Outcome.CONFIRMED,
        reason="1 seat(s) in 1 line(s) confirmed",
        event_id=EVENT_ID,
        seat_class=None,
        quantity=1,
        customer_id="c-0",
        lines=(OrderLine("ADULT", 1, pools=("hall",)),),
    )

    problems = order_figures(data, EVENT_ID, orders, "hall", 1.0)["invariants"]

    assert any("half-taken" in p for p in problems)


def test_an_order_short_of_pool_seats_after_a_line_judged_on_a_stale_hint_names_that_line() -> None:
    """Given a pool with a seat for each of ADULT's 2 and CHILD's 1, container one having seen
    ADULT's 2 and taken 1, and container two the other; when container one settles an order of
    ADULT then CHILD (ADULT passing on its hint, CHILD read with the pool: 1 seat for the 2
    lines); then ADULT is read before the pool decides anything, and the refusal names line 1
    (sold out), not line 2; the checks pass."""
    data = InMemoryInventoryStore()
    data.add_pool("e-1", "hall", 3)
    for seat_class, capacity in zip(ORDER_CLASSES, (2, 1, 0, 0), strict=True):
        data.add_event("e-1", capacity, seat_class, pools=["hall"])
    orders = OrderRequests([(("ADULT", 1),), (("ADULT", 1),), (("ADULT", 1), ("CHILD", 1))])
    one, two = (containers.Container(data, FakeClock(time=containers.NOW)) for _ in range(2))

    one.run(containers.order(0, ("ADULT", 1), rid="r-0"))
    two.run(containers.order(1, ("ADULT", 1), rid="r-1"))
    one.run(containers.order(2, ("ADULT", 1), ("CHILD", 1), rid="r-2"))

    refused = data.records["r-2"]
    assert (refused.outcome, refused.seat_class) == (Outcome.SOLD_OUT, "ADULT")
    assert refused.reason == "line 1 (ADULT): requested 1 seat(s), 0 left"
    assert data.inventory[SeatKey("e-1", "CHILD")].available == 1
    assert order_figures(data, "e-1", orders, "hall", 1.0)["invariants"] == "ok"


@pytest.mark.parametrize(
    ("seat_class", "class_left", "pool_left", "refuted"),
    [
        ("CHILD", 0, 40, False),  # the class had none
        ("CHILD", 1, 1, False),  # the pool had 1 seat for the 2 lines up to CHILD
        ("CHILD", 1, 2, True),
        ("ADULT", 1, 1, True),  # the first line needs only its own seat of the pool
        ("CHILD", 1, None, True),  # no pool
        ("SENIOR", 5, 40, True),  # not a line of the order
        (None, 5, 40, True),
    ],
)
def test_a_refusal_is_refuted_by_its_class_seats_and_the_pool_seats_of_the_lines_up_to_it(
    seat_class: str | None, class_left: int, pool_left: int | None, refuted: bool
) -> None:
    orders = OrderRequests([(("ADULT", 1), ("CHILD", 1), ("PARKING", 1))])

    assert orders.refusal_contradicted(0, seat_class, class_left, pool_left) is refuted


def test_orders_are_drawn_with_distinct_classes_within_the_bounds() -> None:
    drawn = OrderRequests.draw(500, (2, 3), 2, random.Random(7))

    for lines in drawn.lines:
        classes = [c for c, _ in lines]
        assert 2 <= len(lines) <= 3 and len(set(classes)) == len(classes)
        assert all(q == 2 for _, q in lines)


@pytest.mark.parametrize(
    ("value", "message"),
    [("0-2", "lines per order are 1 to 4"), ("3-2", "lines per order are 1 to 4"), ("x", "like 1-4")],
)
def test_bad_order_lines_are_one_line_errors(value: str, message: str) -> None:
    result = CliRunner().invoke(cli, ["simulate", "--order-lines", value, "--requests", "10"])

    assert result.exit_code == 2
    assert message in result.output


def test_orders_above_the_seats_per_reservation_are_a_one_line_error() -> None:
    result = CliRunner().invoke(
        cli, ["simulate", "--order-lines", "1-4", "--seats-per-request", "3", "--requests", "10"]
    )

    assert result.exit_code == 2
    assert "orders of 4 lines of 3 seat(s) pass the maximum of 10 seats per reservation" in result.output


def test_order_lines_refuse_a_seat_map() -> None:
    with pytest.raises(ValueError, match="order lines take no --seat-map"):
        SimulationConfig(order_lines=(1, 2), seat_map="map.json")


def test_the_checks_name_an_order_refused_while_its_class_and_pool_had_the_seats() -> None:
    data, orders = _store_after_one_order()
    data.records["r-0"] = ReservationOutcome(
        reservation_id="r-0",
        outcome=Outcome.SOLD_OUT,
        reason="line 2 (CHILD): requested 1 seat(s), 0 left in pool hall",
        event_id=EVENT_ID,
        seat_class="CHILD",
        quantity=2,
        customer_id="c-0",
        lines=(OrderLine("ADULT", 1), OrderLine("CHILD", 1)),
    )

    problems = order_figures(data, EVENT_ID, orders, "hall", 1.0)["invariants"]

    assert problems == [
        "1 order(s) SOLD_OUT while their failing line's class and the pool have its seats left"
    ]
