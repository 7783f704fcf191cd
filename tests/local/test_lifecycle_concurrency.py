"""Acceptance on DynamoDB Local: a concurrent run mixing reservations, holds, confirmations,
cancellations, expiries and duplicate deliveries keeps every seat, and each change takes effect once.

Eight "containers" (threads, each with its own client and hints) take batches from a shared
at-least-once queue: every message is delivered one to three times, in shuffled batches, and what a
batch hands back is delivered again. Two sweepers run meanwhile with a clock 61 s ahead, so every
hold looks expired to them while the containers may still confirm or cancel it: each hold must end
confirmed, cancelled or expired, never two of them. DynamoDB Local's transactions are atomic under
concurrency (moto's are not, so no race is judged on moto).
"""

from __future__ import annotations

import json
import random
import uuid
from collections import Counter, defaultdict
from typing import Any

import pytest

from seat_inventory.logic.reserve_seats import QueueMessage
from seat_inventory.logic.sweep_holds import SweepResult, release_expired_holds
from seat_inventory.models import Outcome, RequestType, ReservationOutcome, SeatKey
from seat_tools.local.stack import LocalStack
from seat_tools.operator_commands import OperatorTable
from tests.fakes import RecordingPublisher
from tests.local.crowd import Crowd, Delivery, ShiftedClock, container, sweeper

pytestmark = pytest.mark.local_stack

CAPACITY = 150
LIMIT = 8
RESERVATIONS = 260
CUSTOMERS = 40
WORKERS = 8
SWEEPERS = 2
RACED_HOLD_SECONDS = 60  # expired by the sweepers running meanwhile (61 s ahead)
KEPT_HOLD_SECONDS = 600  # expired only by the final sweep
FINAL_SWEEP_AHEAD = KEPT_HOLD_SECONDS + 1


def _messages(event_id: str, prefix: str, rng: random.Random) -> tuple[list[QueueMessage], dict[str, int]]:
    """Reserve and hold messages for RESERVATIONS ids, confirms and cancels for some of them, each
    delivered 1-3 times (a redelivery keeps its SQS message id), shuffled together."""
    originals: list[QueueMessage] = []
    quantities: dict[str, int] = {}
    for n in range(RESERVATIONS):
        rid = f"{prefix}-{n}"
        quantity = rng.randint(1, 3)
        quantities[rid] = quantity
        body: dict[str, Any] = {
            "reservation_id": rid,
            "event_id": event_id,
            "quantity": quantity,
            "customer_id": f"c-{rng.randrange(CUSTOMERS)}",
        }
        is_hold = rng.random() < 0.6
        if is_hold:
            hold_seconds = RACED_HOLD_SECONDS if rng.random() < 0.5 else KEPT_HOLD_SECONDS
            body.update(type="hold", hold_seconds=hold_seconds)
        originals.append(QueueMessage(f"m-{rid}", json.dumps(body)))
        if is_hold and rng.random() < 0.5:
            originals.append(
                QueueMessage(f"m-confirm-{rid}", json.dumps({"type": "confirm", "reservation_id": rid}))
            )
        if rng.random() < 0.3:
            originals.append(
                QueueMessage(f"m-cancel-{rid}", json.dumps({"type": "cancel", "reservation_id": rid}))
            )
    deliveries = [m for m in originals for _ in range(rng.choice((1, 1, 2, 3)))]
    rng.shuffle(deliveries)
    return deliveries, quantities


def test_a_concurrent_lifecycle_keeps_every_seat_and_applies_each_change_once(
    local_stack: LocalStack,
) -> None:
    # Given one seat class with a per-customer limit, and a shuffled, duplicated mix of messages
    rng = random.Random(20260501)
    run_id = uuid.uuid4().hex[:8]
    event_id = f"lifecycle-{run_id}"
    key = SeatKey(event_id, "GA")
    admin = OperatorTable(local_stack.client("dynamodb"), local_stack.table_name)
    admin.create_seat_class(key, CAPACITY, max_per_customer=LIMIT)
    deliveries, quantities = _messages(event_id, f"r-{run_id}", rng)
    queue = Delivery(list(deliveries))
    published: list[ReservationOutcome] = []
    sweeps: list[SweepResult] = []

    # When the containers and the sweepers run at the same time
    crowd = Crowd()
    crowd.run(
        [container(local_stack, queue, rng, batch=(5, 25), published=published) for _ in range(WORKERS)],
        [crowd.repeat(sweeper(local_stack, limit=50, sweeps=sweeps), 0.02) for _ in range(SWEEPERS)],
    )
    assert crowd.errors == []
    sweeps.append(
        release_expired_holds(admin, RecordingPublisher(), ShiftedClock(FINAL_SWEEP_AHEAD), limit=10_000)
    )

    # Then the inventory adds up, nothing is held any more, and no counter went wrong
    item = admin.read_inventory(key)
    assert item is not None
    assert (item.available + item.held + item.sold, item.held) == (CAPACITY, 0)
    assert min(item.available, item.sold) >= 0

    records = admin.read_reservations(list(quantities))
    by_status: dict[Outcome, int] = defaultdict(int)
    counted: dict[str, int] = defaultdict(int)
    for record in records.values():
        by_status[record.status] += record.quantity
        if record.customer_counted and record.status in (Outcome.CONFIRMED, Outcome.HELD):
            counted[record.answer.customer_id or ""] += record.quantity
    assert item.sold == by_status[Outcome.CONFIRMED], "sold must equal the confirmed records"
    assert by_status[Outcome.HELD] == 0
    for customer in {r.answer.customer_id or "" for r in records.values()}:
        assert admin.get_customer_seats(key, customer) == counted[customer] <= LIMIT

    # And every message was answered; each reserve/hold decided once, each change applied once
    mine = [o for o in published if o.reservation_id in quantities]
    assert {o.message_id for o in mine} == {m.message_id for m in deliveries}
    decisions = Counter(
        o.reservation_id
        for o in mine
        if o.request_type in (RequestType.RESERVE, RequestType.HOLD) and not o.duplicate
    )
    assert set(decisions.values()) == {1} and set(decisions) == set(records)
    confirms = Counter(
        o.reservation_id
        for o in mine
        if o.request_type is RequestType.CONFIRM and o.outcome is Outcome.CONFIRMED and not o.duplicate
    )
    cancels = Counter(
        o.reservation_id
        for o in mine
        if o.request_type is RequestType.CANCEL and o.outcome is Outcome.CANCELLED and not o.duplicate
    )
    expiries = Counter(o.reservation_id for s in sweeps for o in s.released if o.reservation_id in quantities)
    assert max([*confirms.values(), *cancels.values(), *expiries.values(), 1]) == 1
    for rid, record in records.items():
        if record.status is Outcome.EXPIRED:
            assert expiries[rid] == 1 and cancels[rid] == 0
        elif record.status is Outcome.CANCELLED:
            assert cancels[rid] == 1 and expiries[rid] == 0
        elif record.answer.outcome is Outcome.HELD:  # a hold that ended CONFIRMED
            assert record.status is Outcome.CONFIRMED and confirms[rid] == 1 and expiries[rid] == 0
    # the run really mixed everything it claims to
    assert min(len(confirms), len(cancels), len(expiries)) > 0
    assert len(deliveries) > len({m.message_id for m in deliveries})  # and duplicate deliveries
