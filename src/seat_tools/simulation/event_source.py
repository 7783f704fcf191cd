"""SQS, the function's containers and SNS, on the virtual clock (the mapping that reads the queue
and invokes the containers is `simulation.intake`).

- `SimulatedQueue`: a standard queue. A received message is invisible for the visibility
  timeout from its receive; a message the function hands back (`batchItemFailures`, or every
  message of a failed or timed-out invocation) becomes visible again when it runs out, and one
  received `max_receive_count` times goes to the dead-letter queue instead (the redrive policy).
- `Container`: one Lambda execution environment, in its own scheduler task. It runs the service's
  `reserve_seats` unchanged with its own `InventoryHints` (the container's lifetime), a store
  client and a clock whose sleep ends the invocation at the function timeout. Its own work (the
  handler's CPU) takes the measured CPU time at one core divided by the memory's share of a vCPU
  (`FunctionTiming`). A new container pays a cold start first; one of the provisioned
  concurrency's (initialised before the sale) pays only the cold start's part its first
  invocation runs (the clients); after a timeout its environment is replaced (cold again).
- `SimulatedPublisher`: SNS PublishBatch of 10 outcomes per call, 10 calls at a time (as
  `publishing.sns_publisher`), each taking a modelled latency, against the region's publish quota
  (`SnsQuota`: each message counts; a call over it is refused with `Throttled`, which botocore does
  not retry, and sent again while the service's `retry_throttled` allows); it records when each
  message's outcome was published (its answer time).

Every wait a container makes is recorded by what it waits for (`binding.Activities`), so the run
can say what held the sale (`simulation.binding`).
"""

from __future__ import annotations

import heapq
import json
import math
import random
import statistics
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from seat_inventory.logic.inventory_hints import InventoryHints
from seat_inventory.logic.reserve_seats import QueueMessage, reserve_seats
from seat_inventory.logic.retry_deadline import conflict_deadline
from seat_inventory.models import Outcome, ReservationOutcome
from seat_inventory.publishing.sns_publisher import MAX_CONCURRENT_CALLS, PUBLISH_BATCH_LIMIT
from seat_inventory.settings import Settings
from seat_tools.contention.model import Z90
from seat_tools.event_source_scaling import SQS_RECEIVE_LIMIT
from seat_tools.simulation import binding
from seat_tools.simulation.dynamodb import SimulatedTable
from seat_tools.simulation.measured_cpu import HandlerCpu, vcpu_share
from seat_tools.simulation.scheduler import Task, VirtualScheduler

if TYPE_CHECKING:
    from seat_tools.simulation.intake import EventSource

__all__ = ["SQS_RECEIVE_LIMIT", "vcpu_share"]


class FunctionTimedOut(BaseException):
    """The invocation reached the function's timeout; Lambda stops it (not an Exception: the
    service's code must not be able to catch it)."""


@dataclass(slots=True)
class Message:
    """One SQS message: a reservation request (index into the workload) visible from `sent_at`,
    asked for by its client at `requested_at` (its first attempt, through the API or not)."""

    message_id: str
    request: int
    sent_at: float
    receive_count: int = 0
    received_at: float = 0.0
    visible_since: float = 0.0
    requested_at: float | None = None

    @property
    def asked_at(self) -> float:
        return self.sent_at if self.requested_at is None else self.requested_at


@dataclass(frozen=True, slots=True)
class LatencyModel:
    """A log-normal latency given by its p50 and p90 in milliseconds."""

    p50_ms: float
    p90_ms: float

    def sample(self, rng: random.Random) -> float:
        return self.p50_ms * math.exp(self._sigma * rng.gauss(0.0, 1.0)) / 1000.0

    @property
    def _sigma(self) -> float:
        return math.log(self.p90_ms / self.p50_ms) / Z90

    def mean_slowest_s(self, calls: int, steps: int = 4000) -> float:
        """The mean of the slowest of `calls` latencies drawn at once (seconds): the integral of
        the quantile function against the density of the largest of `calls` uniform draws."""
        unit = statistics.NormalDist()
        total = 0.0
        for step in range(steps):
            u = (step + 0.5) / steps
            total += math.exp(self._sigma * unit.inv_cdf(u)) * calls * u ** (calls - 1)
        return self.p50_ms * total / steps / 1000.0


@dataclass
class Tally:
    """What the event source, the containers and the publisher counted in one run."""

    invocations: int = 0
    cold_starts: int = 0
    timeouts: int = 0
    messages_received: int = 0
    messages_handed_back: int = 0
    messages_dead_lettered: int = 0
    sqs_receives: int = 0  # ReceiveMessage calls, empty ones included
    sqs_deletes: int = 0  # DeleteMessageBatch calls
    sns_requests: int = 0  # PublishBatch calls SNS accepted (billed)
    sns_throttled: int = 0  # PublishBatch calls refused for the publish quota
    sns_handed_back: int = 0  # outcomes still refused when the service stopped waiting
    billed_seconds: float = 0.0
    provisioned_billed_seconds: float = 0.0  # the part of billed_seconds on provisioned environments
    cpu_seconds: float = 0.0  # the handler's own work, in the function's time
    invocation_spans: list[tuple[float, float]] = field(default_factory=list)  # (start, end)
    answered_at: dict[str, float] = field(default_factory=dict)  # message id -> first publication
    outcomes: list[ReservationOutcome] = field(default_factory=list)  # every publication

    @property
    def sqs_requests(self) -> int:
        """The mapping's SQS requests (the producer's are counted apart)."""
        return self.sqs_receives + self.sqs_deletes


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
        self.in_flight = 0  # received and not yet deleted or handed back
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

    @property
    def arrivals_pending(self) -> bool:
        """Messages still to be sent."""
        return self._next < len(self._arrivals)

    @property
    def returning(self) -> bool:
        """Messages handed back and waiting for their visibility timeout."""
        return bool(self._returning)

    def take(self, count: int, now: float) -> list[Message]:
        """The oldest `count` visible messages (at most), received now."""
        batch = [self._visible.popleft() for _ in range(min(count, len(self._visible)))]
        for message in batch:
            message.receive_count += 1
            message.received_at = now
        self.in_flight += len(batch)
        self._tally.messages_received += len(batch)
        return batch

    def settle(self, batch: Sequence[Message], failed: set[str]) -> None:
        """Deletes the batch's messages except `failed`, which come back after the visibility timeout."""
        self.in_flight -= len(batch)
        deleted = 0
        for message in batch:
            if message.message_id in failed:
                self._order += 1
                at = message.received_at + self.visibility_timeout_s
                heapq.heappush(self._returning, (at, self._order, message))
                self._tally.messages_handed_back += 1
            else:
                deleted += 1
        self._tally.sqs_deletes += math.ceil(deleted / SQS_RECEIVE_LIMIT)

    def next_change_at(self) -> float | None:
        """When the next message becomes visible (sent, or back from a failed receive)."""
        times = []
        if self._next < len(self._arrivals):
            times.append(self._arrivals[self._next].sent_at)
        if self._returning:
            times.append(self._returning[0][0])
        return min(times) if times else None

    def finished(self) -> bool:
        return (
            self._next >= len(self._arrivals)
            and not self._visible
            and not self._returning
            and self.in_flight == 0
        )


class SnsQuota:
    """The region's SNS publish quota: a token bucket of `messages_per_s`, holding at most one
    second of it (SNS documents the rate, not its burst: assumed), every message of a
    PublishBatch taking one."""

    def __init__(self, messages_per_s: float | None) -> None:
        self.rate = messages_per_s
        self._tokens = messages_per_s or 0.0
        self._updated = -math.inf

    def take(self, messages: int, now: float) -> bool:
        if self.rate is None:
            return True
        if now > self._updated:
            self._tokens = min(self.rate, self._tokens + (now - self._updated) * self.rate)
            self._updated = now
        if self._tokens < messages:
            return False
        self._tokens -= messages
        return True


class SimulatedPublisher:
    """The `OutcomePublisher` port on SNS PublishBatch, with modelled latency and the region's
    publish quota; as `SnsOutcomePublisher`, a call refused for the quota is sent again while
    `retry_throttled` allows (it waits the service's back-off), other calls never fail."""

    def __init__(
        self,
        clock: _InvocationClock,
        rng: random.Random,
        latency: LatencyModel,
        quota: SnsQuota,
        tally: Tally,
    ) -> None:
        self._clock = clock
        self._rng = rng
        self._latency = latency
        self._quota = quota
        self._tally = tally
        # the handler's CPU that depends on the answers (charged before they are sent)
        self.cpu_for: Callable[[Sequence[ReservationOutcome]], float] = lambda outcomes: 0.0

    def publish(
        self,
        outcomes: Sequence[ReservationOutcome],
        *,
        retry_throttled: Callable[[int], bool] | None = None,
    ) -> list[ReservationOutcome]:
        chunks = self._charged_chunks(outcomes)
        refusals = 0
        while chunks:
            chunks = self._send(chunks)
            if not chunks:
                break
            self._clock.refused(binding.SNS_THROTTLED)
            if retry_throttled is None or not retry_throttled(refusals):
                left = [o for chunk in chunks for o in chunk]
                self._tally.sns_handed_back += len(left)
                return left
            refusals += 1
        return []

    def _charged_chunks(self, outcomes: Sequence[ReservationOutcome]) -> list[Sequence[ReservationOutcome]]:
        """The answers' CPU spent, and the answers in calls of `PUBLISH_BATCH_LIMIT`."""
        cpu = self.cpu_for(outcomes)
        if cpu > 0:
            self._tally.cpu_seconds += cpu
            self._clock.spend(cpu, binding.CPU)
        return [
            outcomes[start : start + PUBLISH_BATCH_LIMIT]
            for start in range(0, len(outcomes), PUBLISH_BATCH_LIMIT)
        ]

    def _published(self, accepted: Sequence[Sequence[ReservationOutcome]], at: float) -> None:
        """The accepted calls' answers, published at `at`."""
        for chunk in accepted:
            for outcome in chunk:
                self._tally.answered_at.setdefault(outcome.message_id or "", at)
            self._tally.outcomes.extend(chunk)

    def publish_soon(
        self,
        outcomes: Sequence[ReservationOutcome],
        *,
        retry_throttled: Callable[[int], bool] | None = None,
    ) -> _PublicationUnderWay:
        """The calls of `publish` sent at once, without waiting for SNS: their answers are
        published at the slowest call's latency from now, while the container writes on. Calls
        the quota refuses are sent again, as `publish` sends them, when the container waits."""
        chunks = self._charged_chunks(outcomes)
        now = self._clock.now()
        taken = [self._quota.take(len(chunk), now) for chunk in chunks]
        accepted = [chunk for chunk, ok in zip(chunks, taken, strict=True) if ok]
        latency = max((self._latency.sample(self._rng) for _ in chunks), default=0.0)
        self._tally.sns_requests += len(accepted)
        self._tally.sns_throttled += len(chunks) - len(accepted)
        refused = [o for chunk, ok in zip(chunks, taken, strict=True) if not ok for o in chunk]
        until = now + self._clock.client_seconds(latency)
        self._published(accepted, until)
        return _PublicationUnderWay(self, until, refused, retry_throttled)

    def finish(self, under_way: _PublicationUnderWay) -> list[ReservationOutcome]:
        """Waits until `under_way`'s calls are answered, then sends its refused ones again after
        the service's back-off, as `publish` does (handed back once `retry_throttled` says no)."""
        if under_way.until > self._clock.now():
            self._clock.wait_until(under_way.until, binding.SNS)
        if not under_way.refused:
            return []
        retry = under_way.retry_throttled
        self._clock.refused(binding.SNS_THROTTLED)
        if retry is None or not retry(0):
            self._tally.sns_handed_back += len(under_way.refused)
            return list(under_way.refused)
        return self.publish(under_way.refused, retry_throttled=lambda refusals: retry(refusals + 1))

    def _send(self, chunks: Sequence[Sequence[ReservationOutcome]]) -> list[Sequence[ReservationOutcome]]:
        """The calls, `MAX_CONCURRENT_CALLS` at a time, each wave over when its slowest answers;
        returns the chunks refused for the quota."""
        refused: list[Sequence[ReservationOutcome]] = []
        for start in range(0, len(chunks), MAX_CONCURRENT_CALLS):
            wave = chunks[start : start + MAX_CONCURRENT_CALLS]
            now = self._clock.now()
            taken = [self._quota.take(len(chunk), now) for chunk in wave]
            accepted = [chunk for chunk, ok in zip(wave, taken, strict=True) if ok]
            refused += [chunk for chunk, ok in zip(wave, taken, strict=True) if not ok]
            latency = max(self._latency.sample(self._rng) for _ in wave)
            self._clock.spend(latency, binding.SNS if accepted else binding.SNS_THROTTLED)
            self._tally.sns_requests += len(accepted)
            self._tally.sns_throttled += len(wave) - len(accepted)
            self._published(accepted, self._clock.now())
        return refused


@dataclass(frozen=True, slots=True)
class _PublicationUnderWay:
    """`SimulatedPublisher.publish_soon`'s calls: over at `until`; `refused` are sent again
    (as `publish` sends them) when the container waits for it."""

    publisher: SimulatedPublisher
    until: float
    refused: list[ReservationOutcome]
    retry_throttled: Callable[[int], bool] | None

    def wait(self) -> list[ReservationOutcome]:
        return self.publisher.finish(self)


@dataclass(frozen=True, slots=True)
class FunctionTiming:
    """What one invocation costs besides the store and publisher calls (modelled, see docs)."""

    timeout_s: float
    memory_mb: int
    cold_start_s: float
    # The handler's own CPU in ms of one core of the measuring machine (`measured_cpu`), run at
    # the memory's share of a vCPU: for the run's kind of batch, and for a batch of rejections
    # after the sell-out (None: the same).
    cpu: HandlerCpu
    sold_out_cpu: HandlerCpu | None = None
    client_time_factor: float = 1.0
    # Of `cold_start_s`, what the first invocation does (the settings and clients), which an
    # environment initialised before the sale (provisioned concurrency) still pays.
    first_invocation_s: float = 0.0

    def cpu_s(self, messages: int) -> float:
        """The function's time for its own work on a batch of `messages` (before its answers)."""
        return self.cpu.ms(messages) / 1000 / vcpu_share(self.memory_mb) * self.client_time_factor

    def answers_cpu_s(self, outcomes: Sequence[ReservationOutcome]) -> float:
        """What answering `outcomes` adds: a rejection after the sell-out costs more CPU than a
        reservation (the measured sold-out batch), charged before the answers are published."""
        sold_out = self.sold_out_cpu
        if sold_out is None or not outcomes:
            return 0.0
        rejected = sum(1 for o in outcomes if o.outcome is Outcome.SOLD_OUT)
        extra = rejected * max(0.0, sold_out.per_message_ms - self.cpu.per_message_ms)
        if rejected == len(outcomes):
            extra += max(0.0, sold_out.invocation_ms - self.cpu.invocation_ms)
        return extra / 1000 / vcpu_share(self.memory_mb) * self.client_time_factor


class _InvocationClock:
    """The clock the service's code gets: virtual time, and waits that stop at the timeout.

    `sleep` is time the function spends itself (its back-off, its own work, SNS calls); it is
    multiplied by `client_time_factor` (1 on AWS; 1/S to model the local stack, whose contention
    layer stretches only DynamoDB's time by S). `wait_for_aws` is DynamoDB's modelled latency.
    Each wait is recorded in `activities` by what it waits for: DynamoDB answering (or the cause
    of its refusal), the container's CPU, SNS; a back-off counts as waiting out the last refusal.
    """

    def __init__(
        self, scheduler: VirtualScheduler, client_time_factor: float, activities: binding.Activities
    ) -> None:
        self._scheduler = scheduler
        self._factor = client_time_factor
        self._activities = activities
        self._doing: str | None = None
        self._refusal: str | None = None
        self.deadline = math.inf

    def now(self) -> float:
        return self._scheduler.now()

    def sleep(self, seconds: float) -> None:
        """The service's own wait: a back-off after the last refusal."""
        self._wait(seconds * self._factor, self._refusal or binding.DYNAMODB)

    def wait_for_aws(self, seconds: float, cause: str | None = None) -> None:
        """DynamoDB's answer; `cause`: the refusal it answers with (a binding activity), if any."""
        self._refusal = cause
        self._wait(seconds, cause or binding.DYNAMODB)

    def spend(self, seconds: float, activity: str) -> None:
        """Time the container spends itself (`activity`: its CPU, an SNS call), client-side."""
        self._wait(seconds * self._factor, activity)

    def client_seconds(self, seconds: float) -> float:
        """`seconds` of the container's own time on the run's clock (`client_time_factor`)."""
        return seconds * self._factor

    def wait_until(self, at: float, activity: str) -> None:
        """Waits until the run's time `at` (already on its clock), for `activity`."""
        self._wait(max(0.0, at - self._scheduler.now()), activity)

    def refused(self, cause: str) -> None:
        """The next back-offs wait out this refusal."""
        self._refusal = cause

    def start(self) -> None:
        self._refusal = None

    def stop(self) -> None:
        self._activities.move(self._doing, None)
        self._doing = None

    def _wait(self, seconds: float, activity: str) -> None:
        self._activities.move(self._doing, activity)
        self._doing = activity
        now = self._scheduler.now()
        if now + seconds >= self.deadline:
            self._scheduler.sleep(max(0.0, self.deadline - now))
            raise FunctionTimedOut
        self._scheduler.sleep(seconds)


@dataclass
class ContainerContext:
    """What every container of a run shares."""

    scheduler: VirtualScheduler
    table: SimulatedTable
    settings: Settings
    timing: FunctionTiming
    body_of: Callable[[Message], str]
    publisher_latency: LatencyModel
    sns_quota: SnsQuota
    tally: Tally
    activities: binding.Activities


class Container:
    """One Lambda execution environment running the reservation function."""

    def __init__(
        self, index: int, context: ContainerContext, *, rng: random.Random, provisioned: bool = False
    ) -> None:
        self.index = index
        # one of the provisioned concurrency's environments: initialised before the sale
        self.provisioned = provisioned
        self._context = context
        self._clock = _InvocationClock(
            context.scheduler, context.timing.client_time_factor, context.activities
        )
        self._store = context.table.client(self._clock)
        self._publisher = SimulatedPublisher(
            self._clock, rng, context.publisher_latency, context.sns_quota, context.tally
        )
        self._publisher.cpu_for = context.timing.answers_cpu_s
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
        """The container's life: run the batch it was given, report, wait for the next, until the
        source has no more."""
        batch = self.inbox
        while batch is not None:
            failed = self._invoke(batch)
            source.finished(self, batch, failed)
            batch = source.wait_for_batch(self)

    def _invoke(self, batch: Sequence[Message]) -> set[str]:
        context, clock = self._context, self._clock
        scheduler, timing, tally = context.scheduler, context.timing, context.tally
        started = scheduler.now()
        tally.invocations += 1
        clock.start()
        try:
            if self._cold:
                tally.cold_starts += 1
                clock.spend(timing.cold_start_s, binding.COLD)
                self._cold, self._clients_built = False, True
            elif not self._clients_built:
                clock.spend(timing.first_invocation_s, binding.COLD)
                self._clients_built = True
            clock.deadline = scheduler.now() + timing.timeout_s * timing.client_time_factor
            messages = [QueueMessage(m.message_id, context.body_of(m)) for m in batch]
            cpu = timing.cpu_s(len(batch))
            tally.cpu_seconds += cpu
            clock.spend(cpu, binding.CPU)
            remaining_ms = int((clock.deadline - scheduler.now()) * 1000 / timing.client_time_factor)
            result = reserve_seats(
                messages,
                store=self._store,
                publisher=self._publisher,
                settings=context.settings,
                clock=clock,
                hints=self._hints,
                # the handler's deadline (on the local stack's time scale, the logic's default)
                deadline=conflict_deadline(scheduler.now(), remaining_ms)
                if timing.client_time_factor == 1
                else None,
            )
            failed = set(result.failed_message_ids)
        except FunctionTimedOut:
            tally.timeouts += 1
            failed = {m.message_id for m in batch}
            # Lambda replaces the environment of an invocation that timed out.
            self._cold, self._clients_built = True, False
            self._hints = InventoryHints()
        finally:
            clock.deadline = math.inf
            clock.stop()
        tally.billed_seconds += scheduler.now() - started
        if self.provisioned:
            tally.provisioned_billed_seconds += scheduler.now() - started
        tally.invocation_spans.append((started, scheduler.now()))
        return failed


def message_body(request: dict[str, object]) -> str:
    return json.dumps(request, separators=(",", ":"))
