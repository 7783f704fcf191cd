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
import threading
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from seat_inventory.logic.inventory_hints import InventoryHints
from seat_inventory.logic.reserve_seats import QueueMessage, reserve_seats
from seat_inventory.logic.sweep_holds import SweepResult, release_expired_holds
from seat_inventory.models import Outcome, RequestType, ReservationOutcome, SeatKey
from seat_inventory.settings import Settings
from seat_inventory.wiring import SystemClock
from seat_tools.local.stack import LocalStack
from seat_tools.operator_commands import OperatorTable
from tests.fakes import RecordingPublisher

pytestmark = pytest.mark.local_stack

CAPACITY = 150
LIMIT = 8
RESERVATIONS = 260
CUSTOMERS = 40
WORKERS = 8
SWEEPERS = 2


class ShiftedClock(SystemClock):
    """A sweeper whose clock runs ahead: every 60-second hold is already due for it."""

    def __init__(self, ahead: float) -> None:
        self.ahead = ahead

    def now(self) -> float:
        return time.time() + self.ahead


@dataclass
class Delivery:
    """An at-least-once queue: batches of the pending messages; a batch's failures come back."""

    pending: list[QueueMessage]
    lock: threading.Lock = field(default_factory=threading.Lock)
    in_flight: int = 0
    redelivered: int = 0

    def take(self, size: int) -> list[QueueMessage] | None:
        with self.lock:
            if not self.pending:
                return None if self.in_flight == 0 else []
            batch, self.pending = self.pending[:size], self.pending[size:]
            self.in_flight += 1
            return batch

    def done(self, failed: list[QueueMessage]) -> None:
        with self.lock:
            self.in_flight -= 1
            self.redelivered += len(failed)
            self.pending.extend(failed)


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
            body.update(type="hold", hold_seconds=60)
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


def _run(threads: list[threading.Thread]) -> None:
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
        assert not thread.is_alive(), "a worker did not finish"


def test_a_concurrent_lifecycle_keeps_every_seat_and_applies_each_change_once(  # noqa: C901, PLR0915 - one scenario, its checks in order
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
    settings = Settings(table_name=local_stack.table_name, outcomes_topic_arn="unused")
    published: list[ReservationOutcome] = []
    sweeps: list[SweepResult] = []
    errors: list[BaseException] = []
    stop_sweeping = threading.Event()

    def guarded(work: Callable[[], None]) -> Callable[[], None]:
        def run() -> None:
            try:
                work()
            except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
                errors.append(exc)
                stop_sweeping.set()

        return run

    def container() -> None:
        table = OperatorTable(local_stack.client("dynamodb"), local_stack.table_name)
        hints, clock = InventoryHints(), SystemClock()
        while (batch := queue.take(rng.randint(5, 25))) is not None:
            if not batch:
                time.sleep(0.01)
                continue
            publisher = RecordingPublisher()
            try:
                result = reserve_seats(
                    batch, store=table, publisher=publisher, settings=settings, clock=clock, hints=hints
                )
            except BaseException:
                queue.done(batch)
                raise
            published.extend(publisher.published)
            failed = set(result.failed_message_ids)
            queue.done([m for m in batch if m.message_id in failed])

    def sweeper() -> None:
        table = OperatorTable(local_stack.client("dynamodb"), local_stack.table_name)
        while not stop_sweeping.is_set():
            sweeps.append(release_expired_holds(table, RecordingPublisher(), ShiftedClock(61), limit=50))
            time.sleep(0.02)

    # When the containers and the sweepers run at the same time
    sweeping = [threading.Thread(target=guarded(sweeper)) for _ in range(SWEEPERS)]
    for thread in sweeping:
        thread.start()
    _run([threading.Thread(target=guarded(container)) for _ in range(WORKERS)])
    stop_sweeping.set()
    for thread in sweeping:
        thread.join(timeout=60)
    assert errors == []
    sweeps.append(release_expired_holds(admin, RecordingPublisher(), ShiftedClock(61), limit=10_000))

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
