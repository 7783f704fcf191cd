"""The threads of a concurrency scenario on the local stack: containers taking batches off an
at-least-once queue, and background loops (sweepers, issuers, resharders) running beside them
until the containers are done. Shared by the lifecycle, sharded, seat-map and tickets tests.

And races of single messages (`race`): every message its own container, all released at once,
each sent until answered (`send_until_answered`). Shared by the pools, mapped pools, orders and
admission tests."""

from __future__ import annotations

import json
import random
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from seat_inventory.logic.admission_tokens import TokenVerifier, parse_key_ring
from seat_inventory.logic.inventory_hints import InventoryHints
from seat_inventory.logic.reserve_seats import QueueMessage, reserve_seats
from seat_inventory.logic.sweep_holds import SweepResult, release_expired_holds
from seat_inventory.models import ReservationOutcome
from seat_inventory.settings import Settings
from seat_inventory.wiring import SystemClock
from seat_tools.admission_keys import fixed_keys, issue_token
from seat_tools.admission_keys import new_key_ring_text as ring_text
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


# Deliveries of one message before `send_until_answered` gives up (each failed one comes back).
MAX_ATTEMPTS = 40


def send_until_answered(
    table: OperatorTable, settings: Settings, message: QueueMessage, verifier: TokenVerifier | None = None
) -> ReservationOutcome:
    """One container sending one message, redelivered (as SQS would) until it is answered; with
    `verifier`, the function checks admission tokens with it."""
    hints, clock = InventoryHints(), SystemClock()
    admission = {"admission": verifier} if verifier is not None else {}
    for _ in range(MAX_ATTEMPTS):
        publisher = RecordingPublisher()
        result = reserve_seats(
            [message],
            store=table,
            publisher=publisher,
            settings=settings,
            clock=clock,
            hints=hints,
            **admission,
        )
        if publisher.published:
            return publisher.published[0]
        assert result.failed_message_ids == [message.message_id]
        time.sleep(0.05)
    raise AssertionError(f"{message.message_id} not answered after {MAX_ATTEMPTS} deliveries")


def race(
    local_stack: LocalStack,
    settings: Settings,
    messages: Sequence[QueueMessage],
    *,
    verifier: TokenVerifier | None = None,
    redeliver: bool = False,
    beside: Sequence[Callable[[], None]] = (),
) -> tuple[dict[str, ReservationOutcome], dict[str, ReservationOutcome]]:
    """Every message its own container (its own table client), all released at the same moment
    with the work `beside` them (an operator's resharding, say), each sent until answered and,
    with `redeliver`, sent once more. Returns the answers and the redeliveries' answers (empty
    without `redeliver`) by message id, once no thread raised and every message was answered."""
    answers: dict[str, ReservationOutcome] = {}
    again: dict[str, ReservationOutcome] = {}
    errors: list[BaseException] = []
    start = threading.Barrier(len(messages) + len(beside))

    def sender(message: QueueMessage) -> None:
        own = OperatorTable(local_stack.client("dynamodb"), local_stack.table_name)
        answers[message.message_id] = send_until_answered(own, settings, message, verifier)
        if redeliver:
            again[message.message_id] = send_until_answered(own, settings, message, verifier)

    def released(work: Callable[[], None]) -> Callable[[], None]:
        def run() -> None:
            try:
                start.wait()
                work()
            except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
                errors.append(exc)

        return run

    threads = [threading.Thread(target=released(lambda m=m: sender(m))) for m in messages]
    threads += [threading.Thread(target=released(work)) for work in beside]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert not errors, errors[:3]
    assert len(answers) == len(messages)
    return answers, again


# The admission tests' key ring: their tokens are signed with it, their verifier checks with it.
RING = parse_key_ring(ring_text("k1", b"local-test-key-".ljust(32, b"x")))


def admission_verifier() -> TokenVerifier:
    return TokenVerifier(fixed_keys(RING))


def token_messages(
    event_id: str, tokens: int, senders: int, *, seat_class: str | None = None
) -> list[QueueMessage]:
    """`tokens` admission tokens (customer c-t each), each sent by `senders` requests of their own
    reservation ids (`m-<t>-<s>`), one seat each, holds and reservations alternating; with
    `seat_class`, for that class (and the holds for 600 s)."""
    expires = int(time.time()) + 600
    messages = []
    for t in range(tokens):
        token = issue_token(
            RING, event_id=event_id, customer_id=f"c-{t}", expires_at=expires, token_id=f"{event_id}-t{t}"
        )
        for s in range(senders):
            hold = s % 2 == 1
            body = {
                "type": "hold" if hold else "reserve",
                "reservation_id": f"{event_id}-t{t}-r{s}",
                "event_id": event_id,
                **({"seat_class": seat_class} if seat_class else {}),
                "quantity": 1,
                "customer_id": f"c-{t}",
                "admission_token": token,
                **({"hold_seconds": 600} if hold and seat_class else {}),
            }
            messages.append(QueueMessage(f"m-{t}-{s}", json.dumps(body)))
    return messages
