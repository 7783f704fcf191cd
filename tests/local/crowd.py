"""The threads of a concurrency scenario on the local stack: containers taking batches off an
at-least-once queue, and background loops (sweepers, issuers, resharders) running beside them
until the containers are done. Shared by the lifecycle, sharded, seat-map and tickets tests."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from seat_inventory.logic.inventory_hints import InventoryHints
from seat_inventory.logic.reserve_seats import QueueMessage, reserve_seats
from seat_inventory.logic.sweep_holds import SweepResult, release_expired_holds
from seat_inventory.models import ReservationOutcome
from seat_inventory.settings import Settings
from seat_inventory.wiring import SystemClock
from seat_tools.local.stack import LocalStack
from seat_tools.operator_commands import OperatorTable
from tests.fakes import RecordingPublisher


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


def container(
    local_stack: LocalStack,
    queue: Delivery,
    rng: random.Random,
    *,
    batch: tuple[int, int],
    published: list[ReservationOutcome] | None = None,
) -> Callable[[], None]:
    """One container: reserve_seats over batches of `batch` (least, most) messages until the
    queue is drained; a batch's failed messages go back on the queue, its answers to `published`."""
    settings = Settings(table_name=local_stack.table_name, outcomes_topic_arn="unused")

    def serve() -> None:
        table = OperatorTable(local_stack.client("dynamodb"), local_stack.table_name)
        hints, clock = InventoryHints(), SystemClock()
        while (messages := queue.take(rng.randint(*batch))) is not None:
            if not messages:
                time.sleep(0.01)
                continue
            publisher = RecordingPublisher()
            try:
                result = reserve_seats(
                    messages, store=table, publisher=publisher, settings=settings, clock=clock, hints=hints
                )
            except BaseException:
                queue.done(messages)
                raise
            if published is not None:
                published.extend(publisher.published)
            failed = set(result.failed_message_ids)
            queue.done([m for m in messages if m.message_id in failed])

    return serve


def sweeper(
    local_stack: LocalStack, *, limit: int, sweeps: list[SweepResult] | None = None
) -> Callable[[], None]:
    """One sweep of the hold sweeper at most `limit` holds, with a clock 61 s ahead (every
    60-second hold is due for it); each sweep's result goes to `sweeps`."""
    table = OperatorTable(local_stack.client("dynamodb"), local_stack.table_name)

    def sweep() -> None:
        result = release_expired_holds(table, RecordingPublisher(), ShiftedClock(61), limit=limit)
        if sweeps is not None:
            sweeps.append(result)

    return sweep


@dataclass
class Crowd:
    """Runs containers to the end with background work beside them; collects every error.

    The first error stops the background (`finished` is set); the test asserts `errors == []`.
    """

    errors: list[BaseException] = field(default_factory=list)
    finished: threading.Event = field(default_factory=threading.Event)

    def _guarded(self, work: Callable[[], None]) -> Callable[[], None]:
        def run() -> None:
            try:
                work()
            except BaseException as exc:  # noqa: BLE001 - reported by the test's assertion
                self.errors.append(exc)
                self.finished.set()

        return run

    def repeat(self, work: Callable[[], None], pause_s: float) -> Callable[[], None]:
        """Background work done again and again, `pause_s` apart, until the containers finish."""

        def loop() -> None:
            while not self.finished.is_set():
                work()
                time.sleep(pause_s)

        return loop

    def run(
        self,
        containers: Sequence[Callable[[], None]],
        background: Sequence[Callable[[], None]] = (),
        *,
        timeout_s: float = 300,
    ) -> None:
        """Starts the background, runs the containers until each is done (failing the test when
        one is still running after `timeout_s`), then stops the background and waits for it."""
        behind = [threading.Thread(target=self._guarded(work)) for work in background]
        front = [threading.Thread(target=self._guarded(work)) for work in containers]
        for thread in behind + front:
            thread.start()
        for thread in front:
            thread.join(timeout=timeout_s)
            assert not thread.is_alive(), "a worker did not finish"
        self.finished.set()
        for thread in behind:
            thread.join(timeout=120)
