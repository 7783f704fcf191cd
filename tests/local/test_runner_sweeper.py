"""The local runner's sweeper step: expired holds are released on the template's schedule, as on AWS."""

from __future__ import annotations

import json
import time
import uuid

import pytest

from seat_inventory.logic.reserve_seats import QueueMessage, reserve_seats
from seat_inventory.models import Outcome, SeatKey
from seat_inventory.settings import Settings
from seat_inventory.wiring import SystemClock
from seat_tools.local.runner import LocalRunner, runner_config
from seat_tools.local.stack import LocalStack
from seat_tools.operator_commands import OperatorTable
from seat_tools.traffic import OutcomeCollector
from tests.fakes import RecordingPublisher

pytestmark = pytest.mark.local_stack


class PastClock(SystemClock):
    """A container whose clock is behind: the hold it takes has already run out for everyone else."""

    def __init__(self, behind_s: float) -> None:
        self.behind_s = behind_s

    def now(self) -> float:
        return time.time() - self.behind_s


def test_the_runner_releases_expired_holds_on_its_schedule(local_stack: LocalStack) -> None:
    # Given a hold of 3 seats that ran out nine minutes ago
    event_id = f"sweep-{uuid.uuid4().hex[:8]}"
    reservation_id = f"h-{uuid.uuid4().hex[:8]}"
    key = SeatKey(event_id, "GA")
    table = OperatorTable(local_stack.client("dynamodb"), local_stack.table_name)
    table.create_seat_class(key, 10)
    body = {
        "type": "hold",
        "reservation_id": reservation_id,
        "event_id": event_id,
        "quantity": 3,
        "customer_id": "c-1",
        "hold_seconds": 60,
    }
    taken = reserve_seats(
        [QueueMessage("m-1", json.dumps(body))],
        store=table,
        publisher=RecordingPublisher(),
        settings=Settings.from_env(local_stack.environment()),
        clock=PastClock(600),
    )
    assert [o.outcome for o in taken.published] == [Outcome.HELD]
    held = table.read_inventory(key)
    assert held is not None and (held.available, held.held) == (7, 3)

    # When the runner runs with its sweeper ticking every second
    config = runner_config(local_stack, workers=1, sweep_interval_s=1)
    assert config.sweep_handler == "seat_inventory.handlers.sweep_holds.lambda_handler"
    with (
        OutcomeCollector(
            local_stack.client("sns"), local_stack.client("sqs"), local_stack.topic_arn, event_id=event_id
        ) as outcomes,
        LocalRunner(config) as runner,
    ):
        published = outcomes.collect(
            until=lambda docs: any(d["outcome"] == "EXPIRED" for d in docs), timeout_s=60
        )
        time.sleep(2.5)  # a few more ticks: nothing is released twice
        published += outcomes.poll(wait_seconds=1)
        stats = runner.stats

    # Then the seats are back, and EXPIRED was published once, for that hold
    released = table.read_inventory(key)
    assert released is not None and (released.available, released.held, released.sold) == (10, 0, 0)
    assert [d["reservation_id"] for d in published if d["outcome"] == "EXPIRED"] == [reservation_id]
    assert stats.sweeps >= 2
    # At least this hold: the local stack's table is shared by the session's tests, and holds other
    # tests left there expire too and are this sweeper's to release (once each: the EXPIRED
    # outcomes above name this event's hold once).
    assert stats.holds_released >= 1
    assert stats.sweep_errors == 0
