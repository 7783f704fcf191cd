"""End to end against a deployed stack named by SEATS_STACK_NAME (and credentials that reach it).

Not part of `make test` (no AWS account there): `make test-e2e` runs it, and without
SEATS_STACK_NAME each test fails with one line saying so.

    SEATS_STACK_NAME=seat-inventory AWS_REGION=us-east-1 .venv/bin/pytest tests/e2e

It creates its own events (random ids), so it never touches real inventory; the records it
leaves are a handful of reservations of those throwaway events. CI runs this tier against the
stack created on moto's CloudFormation (tests/integration/test_deploy_path.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from seat_inventory.models import SeatKey
from seat_tools.cli.context import CliContext
from seat_tools.traffic import OutcomeCollector, plan_burst, send_messages

STACK = os.environ.get("SEATS_STACK_NAME")

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def deployed() -> CliContext:
    if not STACK:
        pytest.fail("no deployed stack: set SEATS_STACK_NAME to run the e2e tier", pytrace=False)
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


def seats(*args: str) -> subprocess.CompletedProcess[str]:
    """The `seats` tool as a user runs it against the stack (`--stack-name`)."""
    return subprocess.run(
        [str(Path(sys.executable).with_name("seats")), "--stack-name", str(STACK), *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def answers(deployed: CliContext, event_id: str, bodies: list[dict[str, Any]]) -> dict[str, str]:
    """Sends `bodies` through the queue and returns each reservation's outcome, read from the topic."""
    resources = deployed.resources()
    assert resources.outcomes_topic_arn and resources.reservations_queue_url
    wanted = {b["reservation_id"] for b in bodies}
    with OutcomeCollector(
        deployed.client("sns"), deployed.client("sqs"), resources.outcomes_topic_arn, event_id=event_id
    ) as collector:
        assert send_messages(deployed.client("sqs"), resources.reservations_queue_url, bodies).failed == 0
        outcomes = collector.collect(
            until=lambda docs: {d["reservation_id"] for d in docs} >= wanted, timeout_s=180
        )
    return {d["reservation_id"]: d["outcome"] for d in outcomes}


def test_event_commands_create_show_resize_and_close_the_sale(deployed: CliContext) -> None:
    # Given an event created with the seats tool
    event_id = f"e2e-{uuid.uuid4().hex[:10]}"
    created = seats("event", "create", event_id, "--capacity", "5")
    assert created.returncode == 0, created.stderr

    # When its capacity grows by 3 and one buyer takes 2 seats
    resized = seats("event", "capacity", event_id, "--add", "3")
    assert resized.returncode == 0, resized.stderr
    first = {"reservation_id": f"{event_id}-r1", "event_id": event_id, "customer_id": "c1", "quantity": 2}
    assert answers(deployed, event_id, [first]) == {first["reservation_id"]: "CONFIRMED"}

    # Then `event show` reports the new capacity and the sale
    shown = seats("event", "show", event_id, "--output", "json")
    assert shown.returncode == 0, shown.stderr
    [seat_class] = json.loads(shown.stdout)["seat_classes"]
    assert (seat_class["seat_class"], seat_class["capacity"], seat_class["available"]) == ("GA", 8, 6)
    assert (seat_class["held"], seat_class["sold"], seat_class["sale"]) == (0, 2, "OPEN")

    # And once closed, a new reservation is answered SALE_CLOSED and takes nothing
    closed = seats("event", "close", event_id)
    assert closed.returncode == 0, closed.stderr
    late = {"reservation_id": f"{event_id}-r2", "event_id": event_id, "customer_id": "c2", "quantity": 1}
    assert answers(deployed, event_id, [late]) == {late["reservation_id"]: "SALE_CLOSED"}
    [inventory] = deployed.inventory_table().get_event(event_id)
    assert (inventory.capacity, inventory.available, inventory.sold) == (8, 6, 2)
