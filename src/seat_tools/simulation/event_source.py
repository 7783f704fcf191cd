"""SQS, Lambda's SQS event source mapping, the function's containers and SNS, on the virtual clock.

- `SimulatedQueue`: a standard queue. A received message is invisible for the visibility
  timeout from its receive; a message the function hands back (`batchItemFailures`, or every
  message of a failed or timed-out invocation) becomes visible again when it runs out, and one
  received `max_receive_count` times goes to the dead-letter queue instead (the redrive policy).
- `EventSource`: the mapping. It hands a batch to an idle container when `batch_size` messages
  are visible, or when some are and the batching window has passed since they became visible.
  In standard mode it starts with 5 concurrent batches and adds up to 300 containers a minute
  while messages are waiting, up to `MaximumConcurrency`; in provisioned mode (event pollers)
  every container is there from the first message (`seat_tools.event_source_scaling`).
- `Container`: one Lambda execution environment, in its own scheduler task. It runs the service's
  `reserve_seats` unchanged with its own `InventoryHints` (the container's lifetime), a store
  client and a clock whose sleep ends the invocation at the function timeout. A new container
  pays a cold start first; one of the provisioned concurrency's (initialised before the sale)
  pays only the cold start's part its first invocation runs (the clients); after a timeout its
  environment is replaced (cold again).
- `SimulatedPublisher`: SNS PublishBatch of 10 outcomes per call, 10 calls at a time (as
  `publishing.sns_publisher`), each taking a modelled latency; it records when each message's
  outcome was published (its answer time).
"""

from __future__ import annotations

import heapq
import itertools
import json
import math
import random
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial

from seat_inventory.logic.inventory_hints import InventoryHints
from seat_inventory.logic.reserve_seats import QueueMessage, reserve_seats
from seat_inventory.models import ReservationOutcome
from seat_inventory.publishing.sns_publisher import MAX_CONCURRENT_CALLS, PUBLISH_BATCH_LIMIT
from seat_inventory.settings import Settings
from seat_tools.event_source_scaling import scale_up_delay_s
from seat_tools.simulation.dynamodb import SimulatedTable
from seat_tools.simulation.scheduler import Task, VirtualScheduler

SQS_RECEIVE_LIMIT = 10  # messages per ReceiveMessage / DeleteMessageBatch / SendMessageBatch


class FunctionTimedOut(BaseException):
    """The invocation reached the function's timeout; Lambda stops it (not an Exception: the
    service's code must not be able to catch it)."""


@dataclass(slots=True)
class Message:
    """One SQS message: a reservation request (index into the workload) sent at `sent_at`."""

    message_id: str
    request: int
    sent_at: float
    receive_count: int = 0
    received_at: float = 0.0
    visible_since: float = 0.0


@dataclass(frozen=True, slots=True)
class LatencyModel:
    """A log-normal latency given by its p50 and p90 in milliseconds."""

    p50_ms: float
    p90_ms: float

    def sample(self, rng: random.Random) -> float:
        sigma = math.log(self.p90_ms / self.p50_ms) / 1.2815515655446004
        return self.p50_ms * math.exp(sigma * rng.gauss(0.0, 1.0)) / 1000.0


@dataclass
class Tally:
    """What the event source, the containers and the publisher counted in one run."""

    invocations: int = 0
    cold_starts: int = 0
    timeouts: int = 0
    messages_received: int = 0
    messages_handed_back: int = 0
    messages_dead_lettered: int = 0
    sqs_requests: int = 0
    sns_requests: int = 0
    billed_seconds: float = 0.0
    provisioned_billed_seconds: float = 0.0  # the part of billed_seconds on provisioned environments
    invocation_spans: list[tuple[float, float]] = field(default_factory=list)  # (start, end)
    answered_at: dict[str, float] = field(default_factory=dict)  # message id -> first publication
    outcomes: list[ReservationOutcome] = field(default_factory=list)  # every publication


class SimulatedQueue:
    """A standard SQS queue with a redrive policy; `arrivals` must be sorted by `sent_at`."""

    def __init__(
        self,
        arrivals: Sequence[Message],
        *,
        visibility_timeout_s: float,
        max_receive_count: int,
        tally: Tally,
    ) -> None:
        self._arrivals = arrivals
        self._next = 0
        self._visible: deque[Message] = deque()
        self._returning: list[tuple[float, int, Message]] = []
        self._order = 0
        self._in_flight = 0
        self.visibility_timeout_s = visibility_timeout_s
        self.max_receive_count = max_receive_count
        self.dead_letters: list[Message] = []
        self._tally = tally

    def refresh(self, now: float) -> None:
        """Makes visible what was sent, or whose visibility timeout ran out, by `now`."""
        while self._next < len(self._arrivals) and self._arrivals[self._next].sent_at <= now:
            message = self._arrivals[self._next]
            message.visible_since = message.sent_at
            self._visible.append(message)
            self._next += 1
        while self._returning and self._returning[0][0] <= now:
            at, _, message = heapq.heappop(self._returning)
            if message.receive_count >= self.max_receive_count:
                self.dead_letters.append(message)
                self._tally.messages_dead_lettered += 1
            else:
                message.visible_since = at
                self._visible.append(message)

    @property
    def visible(self) -> int:
        return len(self._visible)

    def oldest_visible_since(self) -> float:
        return min(m.visible_since for m in itertools.islice(self._visible, SQS_RECEIVE_LIMIT))

    def take(self, count: int, now: float) -> list[Message]:
        batch = [self._visible.popleft() for _ in range(min(count, len(self._visible)))]
        for message in batch:
            message.receive_count += 1
            message.received_at = now
        self._in_flight += len(batch)
        self._tally.messages_received += len(batch)
        self._tally.sqs_requests += math.ceil(len(batch) / SQS_RECEIVE_LIMIT)
        return batch

    def settle(self, batch: Sequence[Message], failed: set[str]) -> None:
        """Deletes the batch's messages except `failed`, which come back after the visibility timeout."""
        self._in_flight -= len(batch)
        deleted = 0
        for message in batch:
            if message.message_id in failed:
                self._order += 1
                at = message.received_at + self.visibility_timeout_s
                heapq.heappush(self._returning, (at, self._order, message))
                self._tally.messages_handed_back += 1
            else:
                deleted += 1
        self._tally.sqs_requests += math.ceil(deleted / SQS_RECEIVE_LIMIT)

    def next_change_at(self) -> float | None:
        """When the next message becomes visible (sent, or back from a failed receive)."""
        times = []
        if self._next < len(self._arrivals):
            times.append(self._arrivals[self._next].sent_at)
        if self._returning:
            times.append(self._returning[0][0])
        return min(times) if times else None

    def sent_by_when(self, count: int) -> float | None:
        """When `count` messages will have been visible, counting only arrivals still to come."""
        missing = count - len(self._visible)
        if missing <= 0:
            return None
        index = self._next + missing - 1
        return self._arrivals[index].sent_at if index < len(self._arrivals) else None

    def finished(self) -> bool:
        return (
            self._next >= len(self._arrivals)
            and not self._visible
            and not self._returning
            and self._in_flight == 0
        )


class SimulatedPublisher:
    """The `OutcomePublisher` port on SNS PublishBatch, with modelled latency; never fails."""

    def __init__(
        self,
        sleep: Callable[[float], None],
        now: Callable[[], float],
        rng: random.Random,
        latency: LatencyModel,
        tally: Tally,
    ) -> None:
        self._sleep = sleep
        self._now = now
        self._rng = rng
        self._latency = latency
        self._tally = tally

    def publish(
        self,
        outcomes: Sequence[ReservationOutcome],
        *,
        retry_throttled: Callable[[int], bool] | None = None,
    ) -> list[ReservationOutcome]:
        calls = math.ceil(len(outcomes) / PUBLISH_BATCH_LIMIT)
        if calls == 0:
            return []
        waves = math.ceil(calls / MAX_CONCURRENT_CALLS)
        elapsed = 0.0
        remaining = calls
        for _ in range(waves):
            in_wave = min(remaining, MAX_CONCURRENT_CALLS)
            elapsed += max(self._latency.sample(self._rng) for _ in range(in_wave))
            remaining -= in_wave
        self._sleep(elapsed)
        self._tally.sns_requests += calls
        at = self._now()
        for outcome in outcomes:
            self._tally.answered_at.setdefault(outcome.message_id or "", at)
        self._tally.outcomes.extend(outcomes)
        return []


@dataclass(frozen=True, slots=True)
class FunctionTiming:
    """What one invocation costs besides the store and publisher calls (modelled, see docs)."""

    timeout_s: float
    memory_mb: int
    cold_start_s: float
    invoke_overhead_s: float
    per_message_s: float
    client_time_factor: float = 1.0
    # Of `cold_start_s`, what the first invocation does (the settings and clients), which an
    # environment initialised before the sale (provisioned concurrency) still pays.
    first_invocation_s: float = 0.0


class _InvocationClock:
    """The clock the service's code gets: virtual time, and waits that stop at the timeout.

    `sleep` is time the function spends itself (its back-off, its own work, SNS calls); it is
    multiplied by `client_time_factor` (1 on AWS; 1/S to model the local stack, whose contention
    layer stretches only DynamoDB's time by S). `wait_for_aws` is DynamoDB's modelled latency.
    """

    def __init__(self, scheduler: VirtualScheduler, client_time_factor: float) -> None:
        self._scheduler = scheduler
        self._factor = client_time_factor
        self.deadline = math.inf

    def now(self) -> float:
        return self._scheduler.now()

    def sleep(self, seconds: float) -> None:
        self.wait_for_aws(seconds * self._factor)

    def wait_for_aws(self, seconds: float) -> None:
        now = self._scheduler.now()
        if now + seconds >= self.deadline:
            self._scheduler.sleep(max(0.0, self.deadline - now))
            raise FunctionTimedOut
        self._scheduler.sleep(seconds)


class Container:
    """One Lambda execution environment running the reservation function."""

    def __init__(
        self,
        index: int,
        *,
        scheduler: VirtualScheduler,
        table: SimulatedTable,
        settings: Settings,
        timing: FunctionTiming,
        body_of: Callable[[Message], str],
        publisher_latency: LatencyModel,
        rng: random.Random,
        tally: Tally,
        provisioned: bool = False,
    ) -> None:
        self.index = index
        # one of the provisioned concurrency's environments: initialised before the sale
        self.provisioned = provisioned
        self._scheduler = scheduler
        self._table = table
        self._settings = settings
        self._timing = timing
        self._body_of = body_of
        self._tally = tally
        self._clock = _InvocationClock(scheduler, timing.client_time_factor)
        self._store = table.client(self._clock)
        self._publisher = SimulatedPublisher(self._clock.sleep, scheduler.now, rng, publisher_latency, tally)
        self._hints = InventoryHints()
        self._cold = not provisioned
        # provisioned: initialised, but its first invocation still builds its clients
        self._clients_built = False
        self.inbox: list[Message] | None = None
        self.task: Task | None = None

    @property
    def warm(self) -> bool:
        """Its environment is initialised: its next invocation pays no cold start."""
        return not self._cold

    def run(self, source: EventSource) -> None:
        """The container's life: wait for a batch, run it, report, until the source has no more."""
        while True:
            batch = source.wait_for_batch(self)
            if batch is None:
                return
            failed = self._invoke(batch)
            source.finished(self, batch, failed)

    def _invoke(self, batch: Sequence[Message]) -> set[str]:
        scheduler, timing, tally = self._scheduler, self._timing, self._tally
        started = scheduler.now()
        tally.invocations += 1
        if self._cold:
            tally.cold_starts += 1
            scheduler.sleep(timing.cold_start_s * timing.client_time_factor)
            self._cold, self._clients_built = False, True
        elif not self._clients_built:
            scheduler.sleep(timing.first_invocation_s * timing.client_time_factor)
            self._clients_built = True
        self._clock.deadline = scheduler.now() + timing.timeout_s * timing.client_time_factor
        messages = [QueueMessage(m.message_id, self._body_of(m)) for m in batch]
        try:
            self._clock.sleep(timing.invoke_overhead_s + timing.per_message_s * len(batch))
            result = reserve_seats(
                messages,
                store=self._store,
                publisher=self._publisher,
                settings=self._settings,
                clock=self._clock,
                hints=self._hints,
            )
            failed = set(result.failed_message_ids)
        except FunctionTimedOut:
            tally.timeouts += 1
            failed = {m.message_id for m in batch}
            # Lambda replaces the environment of an invocation that timed out.
            self._cold, self._clients_built = True, False
            self._hints = InventoryHints()
        finally:
            self._clock.deadline = math.inf
        tally.billed_seconds += scheduler.now() - started
        if self.provisioned:
            tally.provisioned_billed_seconds += scheduler.now() - started
        tally.invocation_spans.append((started, scheduler.now()))
        return failed


class EventSource:
    """Lambda's SQS event source mapping for one function (standard queue)."""

    def __init__(
        self,
        scheduler: VirtualScheduler,
        queue: SimulatedQueue,
        containers: Sequence[Container],
        *,
        batch_size: int,
        batching_window_s: float,
        gradual_scaling: bool = True,
    ) -> None:
        self._scheduler = scheduler
        self._gradual = gradual_scaling
        # The scale-up counts from the mapping's first poll: the simulation's start, when the
        # sale's first messages are sent (the scheduler's clock runs from an epoch, not from 0).
        self._origin = scheduler.now()
        self._queue = queue
        self._containers = containers
        self._batch_size = batch_size
        self._window_s = batching_window_s
        self._idle: list[Container] = []
        self._started = 0
        self._wake_token = 0
        self._last_dispatch = -math.inf
        self._done = False

    def start(self) -> None:
        """Spawns every container's task; the mapping's scaling decides when each gets work."""
        for container in self._containers:
            container.task = self._scheduler.spawn(
                f"container-{container.index}", partial(container.run, self)
            )
        self._scheduler.call_at(self._scheduler.now(), self._dispatch)

    def available_at(self, index: int, since: float) -> float:
        """When the mapping may run the `index`-th concurrent batch (all at once for the local runner)."""
        return since + (scale_up_delay_s(index) if self._gradual else 0.0)

    def wait_for_batch(self, container: Container) -> list[Message] | None:
        """Called by a container's task: parks it until the mapping gives it a batch (None: done)."""
        container.inbox = None
        self._idle.append(container)
        self._schedule(self._scheduler.now())
        self._scheduler.park()
        return container.inbox

    def finished(self, container: Container, batch: Sequence[Message], failed: set[str]) -> None:
        self._queue.settle(batch, failed)

    # ------------------------------------------------------------------ internals
    def _schedule(self, at: float) -> None:
        self._wake_token += 1
        token = self._wake_token
        self._scheduler.call_at(at, lambda: self._dispatch() if token == self._wake_token else None)

    def _dispatch(self) -> None:
        if self._done:
            return
        now = self._scheduler.now()
        queue = self._queue
        queue.refresh(now)
        ready = [c for c in self._idle if c.index < self._started or self._may_start(c, now)]
        while ready and queue.visible:
            gathered_since = max(queue.oldest_visible_since(), self._last_dispatch)
            if queue.visible < self._batch_size and now < gathered_since + self._window_s:
                break
            # warm environments first (provisioned ones are warm before their first batch), the
            # most recently idle of them
            container = next((c for c in reversed(ready) if c.warm), ready[-1])
            ready.remove(container)
            self._idle.remove(container)
            container.inbox = queue.take(self._batch_size, now)
            self._last_dispatch = now
            assert container.task is not None
            self._scheduler.unpark(container.task)
        if queue.finished() and len(self._idle) == len(self._containers):
            self._done = True
            for container in self._idle:
                container.inbox = None
                assert container.task is not None
                self._scheduler.unpark(container.task)
            return
        wake = self._next_wake(now, bool(ready))
        if wake is not None:
            self._schedule(wake)

    def _may_start(self, container: Container, now: float) -> bool:
        if self.available_at(container.index, self._origin) <= now:
            self._started = max(self._started, container.index + 1)
            return True
        return False

    def _next_wake(self, now: float, has_idle: bool) -> float | None:
        queue = self._queue
        candidates: list[float] = []
        not_started = [c for c in self._idle if c.index >= self._started]
        if not_started:
            candidates.append(self.available_at(min(c.index for c in not_started), self._origin))
        if has_idle or not_started:
            if queue.visible:
                gathered_since = max(queue.oldest_visible_since(), self._last_dispatch)
                candidates.append(gathered_since + self._window_s)
                full_at = queue.sent_by_when(self._batch_size)
                if full_at is not None:
                    candidates.append(full_at)
            change = queue.next_change_at()
            if change is not None:
                candidates.append(change)
        later = [t for t in candidates if t > now]
        return min(later) if later else None


def message_body(request: dict[str, object]) -> str:
    return json.dumps(request, separators=(",", ":"))
