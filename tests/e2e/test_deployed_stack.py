"""End to end against a deployed stack: skipped unless SEATS_STACK_NAME names one (and credentials reach it).

    SEATS_STACK_NAME=seat-inventory AWS_REGION=us-east-1 .venv/bin/pytest tests/e2e

It creates its own event (a random id), so it never touches real inventory; the records it
leaves are a handful of reservations of that throwaway event.
"""

from __future__ import annotations

import os
import uuid

import pytest

from seat_inventory.cli.context import CliContext
from seat_inventory.models import SeatKey
from seat_inventory.traffic import OutcomeCollector, plan_burst, send_messages

STACK = os.environ.get("SEATS_STACK_NAME")

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not STACK, reason="no deployed stack: set SEATS_STACK_NAME to run the e2e tier"),
]


@pytest.fixture(scope="module")
def deployed() -> CliContext:
    context = CliContext(
        stack_name=STACK,
        region=os.environ.get("AWS_REGION"),
        profile=os.environ.get("AWS_PROFILE"),
        endpoint_url=None,
    )
    context.resources().require("table_name", "outcomes_topic_arn", "reservations_queue_url")
    return context


def test_an_on_sale_on_the_deployed_stack_sells_exactly_the_capacity(deployed: CliContext) -> None:
    # Given a fresh event with 20 seats
    event_id = f"e2e-{uuid.uuid4().hex[:10]}"
    table = deployed.inventory_table()
    table.create_seat_class(SeatKey(event_id, "GA"), 20)
    resources = deployed.resources()
    assert resources.outcomes_topic_arn and resources.reservations_queue_url
    bodies = plan_burst(event_id, 60, duplicates_pct=10, seed=7)
    distinct = {b["reservation_id"] for b in bodies}

    # When 60 reservations (10% duplicates) go through the real queue, function and topic
    with OutcomeCollector(
        deployed.client("sns"), deployed.client("sqs"), resources.outcomes_topic_arn, event_id=event_id
    ) as collector:
        report = send_messages(deployed.client("sqs"), resources.reservations_queue_url, bodies)
        assert report.failed == 0
        outcomes = collector.collect(
            until=lambda docs: {d["reservation_id"] for d in docs} >= distinct, timeout_s=180
        )

    # Then every id is answered, consistently, and exactly the capacity is sold
    answered: dict[str, set[str]] = {}
    for document in outcomes:
        answered.setdefault(document["reservation_id"], set()).add(document["outcome"])
    assert set(answered) == distinct
    assert all(len(kinds) == 1 for kinds in answered.values())
    [inventory] = table.get_event(event_id)
    confirmed_seats = sum(
        next(b["quantity"] for b in bodies if b["reservation_id"] == rid)
        for rid, kinds in answered.items()
        if kinds == {"CONFIRMED"}
    )
    assert inventory.sold == confirmed_seats <= 20
    assert inventory.available + inventory.held + inventory.sold == 20
