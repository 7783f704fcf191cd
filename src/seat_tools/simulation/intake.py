"""Lambda's SQS event source mapping on the virtual clock: pollers that read the queue with
`ReceiveMessage` calls, gather batches and invoke the function's containers
(`seat_tools.event_source_scaling` has the documented figures, docs/explanation/simulation.md the model).

- A poller gathers a batch call by call: each `ReceiveMessage` takes its modelled latency and
  returns at most 10 visible messages; on an empty queue it long-polls (the call answers when
  messages become visible, or after 20 s, or when the batching window ends). The batch is handed
  to a container when it holds `BatchSize` messages or when `MaximumBatchingWindowInSeconds` has
  passed since its first message was received. Every call is counted (and priced), empty or not.
- Standard mode: each concurrent invocation has a reader of its own, which gathers a batch and
  then invokes the function with it and waits for it to answer. Readers start as Lambda's
  scale-up allows (5 at once, then 300 more a minute), up to `MaximumConcurrency`.
- Provisioned mode: each event poller makes at most 10 receive calls a second (one every 0.1 s),
  reads at most 1 MB a second (or 5, the API reference's figure) and runs at most 10 invocations
  at once, gathering the next batch while they run. `MinimumPollers` poll from the start; while
  messages wait, Lambda adds pollers up to `MaximumPollers`, one every 0.6 s (1,000 concurrency a
  minute) after a detection delay.
- Containers are Lambda's execution environments: an invocation gets a warm idle one (the most
  recently idle; those of the provisioned concurrency first), else a new, cold one.
- The mapping deletes what an invocation answered (DeleteMessageBatch, 10 a call) and leaves what
  it handed back to come back after the visibility timeout.
- Several queues (the template's `ReservationQueues`): each has a mapping of its own, with its
  own pollers (`MinimumPollers` and `MaximumPollers` each) or its own standard-mode readers and
  scale-up; the mappings invoke the one function, whose containers they share.

Every `binding.TICK_S` it samples what held the sale (`simulation.binding`).
"""

from __future__ import annotations

import heapq
import itertools
import math
import random
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial

from seat_tools.event_source_scaling import (
    EVENT_POLLER_BYTES_PER_S,
    INVOCATIONS_PER_EVENT_POLLER,
    LONG_POLL_S,
    POLLER_BACKLOG_DETECTION_S,
    RECEIVES_PER_EVENT_POLLER_S,
    SQS_RECEIVE_LIMIT,
    poller_added_every_s,
    scale_up_delay_s,
)
from seat_tools.simulation import binding
from seat_tools.simulation.event_source import (
    Container,
    ContainerContext,
    LatencyModel,
    Message,
    SimulatedQueue,
)
from seat_tools.simulation.scheduler import Task, VirtualScheduler


@dataclass(frozen=True)
class IntakeSettings:
    """How the mapping reads the queue (the template's settings, or the run's options)."""

    batch_size: int
    batching_window_s: float
    receive_latency: LatencyModel
    concurrency: int  # standard mode: MaximumConcurrency
    gradual: bool = True  # standard mode's scale-up (False: every reader from the start)
    event_pollers: int = 0  # provisioned mode: MinimumPollers (0: standard mode)
    max_event_pollers: int = 0  # provisioned mode: MaximumPollers (at most the minimum: the same)
    receives_per_poller_s: float = RECEIVES_PER_EVENT_POLLER_S
    poller_bytes_per_s: float = EVENT_POLLER_BYTES_PER_S
    detection_s: float = POLLER_BACKLOG_DETECTION_S
    client_time_factor: float = 1.0  # the local stack's time scale (1 on AWS)
    # > 0: the function's reserved concurrency, the most invocations at once over every mapping;
    # a poller holding a batch past it waits for an invocation to end (Lambda throttles the
    # invoke and the event source retries it: modelled without the retries' back-off).
    reserved_concurrency: int = 0

    @property
    def provisioned(self) -> bool:
        return self.event_pollers > 0

    @property
    def most_pollers(self) -> int:
        return max(self.event_pollers, self.max_event_pollers)


class Poller:
    """One reader of the queue: a standard-mode reader (1 invocation at a time, calls as fast as
    they answer) or a provisioned-mode event poller (10 invocations, 10 calls a second, 1 MB/s)."""

    def __init__(
        self,
        source: EventSource,
        index: int,
        mapping: _Mapping,
        *,
        slots: int,
        calls_per_s: float | None,
        bytes_per_s: float | None,
    ) -> None:
        self.index = index
        self.mapping = mapping
        self.slots = slots
        self.busy = 0  # invocations it runs now
        self.waiting_for_slot = False
        self.task: Task | None = None
        self._source = source
        self._call_every = 1.0 / calls_per_s if calls_per_s else 0.0
        self._next_call_at = -math.inf
        self._bytes_per_s = bytes_per_s
        self._bytes = bytes_per_s or 0.0
        self._bytes_at = -math.inf

    def run(self) -> None:
        source = self._source
        while source.wait_for_slot(self):
            batch = self._gather()
            if batch is None:
                return
            source.wait_for_function(self)
            source.invoke(self, batch)

    def _gather(self) -> list[Message] | None:
        """Receive calls until the batch is full or its window has passed (None: the sale is over)."""
        source = self._source
        settings = source.settings
        scheduler = source.scheduler
        batch: list[Message] = []
        window_end = math.inf
        while len(batch) < settings.batch_size:
            self._pace()
            if source.done:
                return None
            until = min(window_end, scheduler.now() + LONG_POLL_S * settings.client_time_factor)
            messages = source.receive(
                self.mapping, min(SQS_RECEIVE_LIMIT, settings.batch_size - len(batch)), until, self
            )
            if messages:
                if not batch:
                    window_end = scheduler.now() + settings.batching_window_s * settings.client_time_factor
                batch.extend(messages)
                source.holding += len(messages)
                self._read(messages)
            elif source.done:
                return None
            if scheduler.now() >= window_end:
                break
        source.holding -= len(batch)
        return batch

    def _pace(self) -> None:
        """A provisioned poller's next call waits for its call rate and its bytes a second."""
        scheduler = self._source.scheduler
        now = scheduler.now()
        wait = max(0.0, self._next_call_at - now)
        if self._bytes_per_s is not None:
            self._refill(now)
            if self._bytes < 0:
                wait = max(wait, -self._bytes / self._bytes_per_s)
        if wait > 0:
            scheduler.sleep(wait)
        self._next_call_at = scheduler.now() + self._call_every

    def _read(self, messages: list[Message]) -> None:
        if self._bytes_per_s is not None:
            self._refill(self._source.scheduler.now())
            self._bytes -= sum(self._source.size_of(m) for m in messages)

    def _refill(self, now: float) -> None:
        assert self._bytes_per_s is not None
        if now > self._bytes_at:
            self._bytes = min(self._bytes_per_s, self._bytes + (now - self._bytes_at) * self._bytes_per_s)
            self._bytes_at = now


@dataclass(eq=False)
class _Waiter:
    """A receive call long-polling the empty queue."""

    poller: Poller
    count: int
    until: float
    messages: list[Message] | None = None


@dataclass(eq=False)
class _Mapping:
    """One queue's event source mapping: its pollers (or readers) and its long-polling calls."""

    index: int
    queue: SimulatedQueue
    pollers: list[Poller] = field(default_factory=list)
    waiting: deque[_Waiter] = field(default_factory=deque)
    expiries: list[tuple[float, int, _Waiter]] = field(default_factory=list)
    armed_at: float = math.inf


class EventSource:
    """Lambda's SQS event source mappings for one function, one per queue: their pollers and the
    function's containers, which they share."""

    def __init__(
        self,
        scheduler: VirtualScheduler,
        queues: Sequence[SimulatedQueue],
        context: ContainerContext,
        settings: IntakeSettings,
        *,
        provisioned_concurrency: int = 0,
        seeds: random.Random,
        size_of: Callable[[Message], int],
        monitor: binding.BindingMonitor,
    ) -> None:
        if not queues:
            raise ValueError("an event source reads at least one queue")
        self.scheduler = scheduler
        self.mappings = [_Mapping(index, queue) for index, queue in enumerate(queues)]
        self.settings = settings
        self.size_of = size_of
        self.done = False
        self.holding = 0  # messages pollers hold in batches they are still gathering
        self.busy = 0  # invocations running
        self.slots = 0  # invocations the pollers started so far may run at once
        self.pollers: list[Poller] = []
        self.poller_started_at: list[float] = []
        self.containers: list[Container] = []
        self._context = context
        self._seeds = seeds
        self._monitor = monitor
        self._rng = random.Random(seeds.randrange(2**32))  # receive latencies
        self._idle: list[Container] = []
        self._poller_of: dict[int, Poller] = {}
        self._throttled: deque[Poller] = deque()  # pollers holding a batch past the reserved concurrency
        self.throttled_invokes = 0
        self._order = itertools.count()
        # The scale-up counts from the mapping's first poll: the simulation's start, when the
        # sale's first messages are sent (the scheduler's clock runs from an epoch, not from 0).
        self._origin = scheduler.now()
        for _ in range(provisioned_concurrency):
            self.containers.append(self._container(provisioned=True))
        self._idle = list(reversed(self.containers))  # the first ones are taken first

    @property
    def queues(self) -> list[SimulatedQueue]:
        return [mapping.queue for mapping in self.mappings]

    def start(self) -> None:
        """Starts each mapping's pollers (as the mode allows them) and the sampling of what holds
        the sale."""
        settings = self.settings
        for mapping in self.mappings:
            if settings.provisioned:
                for _ in range(settings.event_pollers):
                    self._add_poller(mapping, self._origin)
                if settings.most_pollers > settings.event_pollers:
                    self.scheduler.spawn(
                        f"poller-scaling-{mapping.index}",
                        partial(self._scale_pollers, mapping),
                        at=self._origin + settings.detection_s,
                    )
            else:
                for index in range(settings.concurrency):
                    delay = scale_up_delay_s(index) if settings.gradual else 0.0
                    self._add_poller(mapping, self._origin + delay)
        self.scheduler.call_at(self._origin, self._sample)

    # ------------------------------------------------------------------ called by pollers
    def receive(self, mapping: _Mapping, count: int, until: float, poller: Poller) -> list[Message]:
        """One ReceiveMessage call on `mapping`'s queue: its latency, then up to `count` visible
        messages; on an empty queue it long-polls until messages are visible or `until`."""
        self._context.tally.sqs_receives += 1
        latency = self.settings.receive_latency.sample(self._rng) * self.settings.client_time_factor
        self.scheduler.sleep(latency)
        now = self.scheduler.now()
        queue = mapping.queue
        queue.refresh(now)
        messages = queue.take(count, now)
        if messages or now >= until or self.done:
            return messages
        waiter = _Waiter(poller, count, until)
        mapping.waiting.append(waiter)
        heapq.heappush(mapping.expiries, (until, next(self._order), waiter))
        self._arm(mapping)
        self.scheduler.park()
        return waiter.messages or []

    def wait_for_slot(self, poller: Poller) -> bool:
        """Parks `poller` until it may run one more invocation; False once the sale is over."""
        if not self.done and poller.busy >= poller.slots:
            poller.waiting_for_slot = True
            self.scheduler.park()
        return not self.done

    def wait_for_function(self, poller: Poller) -> None:
        """Parks `poller`, holding its batch, while the function runs its reserved concurrency."""
        cap = self.settings.reserved_concurrency
        while cap and self.busy >= cap:
            self._throttled.append(poller)
            self.throttled_invokes += 1
            self.scheduler.park()

    def invoke(self, poller: Poller, batch: list[Message]) -> None:
        """Hands `batch` to a container: a warm idle one, else a new one (cold)."""
        container = self._acquire()
        poller.busy += 1
        self.busy += 1
        self._poller_of[container.index] = poller
        container.inbox = batch
        if container.task is None:
            container.task = self.scheduler.spawn(
                f"container-{container.index}", partial(container.run, self)
            )
        else:
            self.scheduler.unpark(container.task)

    # ------------------------------------------------------------------ called by containers
    def finished(self, container: Container, batch: list[Message], failed: set[str]) -> None:
        """The invocation answered: delete what it answered, free its poller's slot."""
        poller = self._poller_of.pop(container.index)
        mapping = poller.mapping
        mapping.queue.settle(batch, failed)
        poller.busy -= 1
        self.busy -= 1
        if self._throttled:
            waiting = self._throttled.popleft()
            assert waiting.task is not None
            self.scheduler.unpark(waiting.task)
        if poller.waiting_for_slot:
            poller.waiting_for_slot = False
            assert poller.task is not None
            self.scheduler.unpark(poller.task)
        if failed and mapping.waiting:
            self._arm(mapping)  # the messages handed back come back before the next wake, maybe
        self._check_done()

    def wait_for_batch(self, container: Container) -> list[Message] | None:
        """Parks an idle container until it is given a batch (None: the sale is over)."""
        container.inbox = None
        if self.done:
            return None
        self._idle.append(container)
        self.scheduler.park()
        return container.inbox

    # ------------------------------------------------------------------ internals
    def _container(self, *, provisioned: bool = False) -> Container:
        container = Container(
            len(self.containers),
            self._context,
            rng=random.Random(self._seeds.randrange(2**32)),
            provisioned=provisioned,
        )
        return container

    def _acquire(self) -> Container:
        for position in range(len(self._idle) - 1, -1, -1):
            if self._idle[position].warm:
                return self._idle.pop(position)
        if self._idle:
            return self._idle.pop()
        container = self._container()
        self.containers.append(container)
        return container

    def _add_poller(self, mapping: _Mapping, at: float) -> None:
        settings = self.settings
        if settings.provisioned:
            poller = Poller(
                self,
                len(self.pollers),
                mapping,
                slots=INVOCATIONS_PER_EVENT_POLLER,
                calls_per_s=settings.receives_per_poller_s,
                bytes_per_s=settings.poller_bytes_per_s,
            )
        else:
            poller = Poller(self, len(self.pollers), mapping, slots=1, calls_per_s=None, bytes_per_s=None)
        self.pollers.append(poller)
        mapping.pollers.append(poller)
        self.poller_started_at.append(at)
        poller.task = self.scheduler.spawn(f"poller-{poller.index}", self._poller_life(poller), at=at)

    def _poller_life(self, poller: Poller) -> Callable[[], None]:
        def life() -> None:
            self.slots += poller.slots
            poller.run()

        return life

    def _scale_pollers(self, mapping: _Mapping) -> None:
        """Provisioned mode: while messages wait in its queue, a mapping adds one more poller every
        0.6 s, up to its maximum."""
        every = poller_added_every_s() * self.settings.client_time_factor
        while not self.done and len(mapping.pollers) < self.settings.most_pollers:
            mapping.queue.refresh(self.scheduler.now())
            if mapping.queue.visible > 0:
                self._add_poller(mapping, self.scheduler.now())
            self.scheduler.sleep(every)

    def _arm(self, mapping: _Mapping) -> None:
        """Schedules the next serving of the mapping's long-polling calls, if it is sooner than
        planned."""
        expiries = mapping.expiries
        while expiries and expiries[0][2].messages is not None:
            heapq.heappop(expiries)
        candidates = [expiries[0][0]] if expiries else []
        change = mapping.queue.next_change_at()
        if change is not None:
            candidates.append(change)
        if not candidates:
            return
        at = max(min(candidates), self.scheduler.now())
        if at < mapping.armed_at:
            mapping.armed_at = at
            self.scheduler.call_at(at, partial(self._serve, mapping, at))

    def _serve(self, mapping: _Mapping, planned: float) -> None:
        """Answers the mapping's long-polling calls: with the messages now visible (oldest calls
        first), or empty when their wait is over."""
        if planned != mapping.armed_at:
            return  # a sooner serving was planned after this one
        mapping.armed_at = math.inf
        now = self.scheduler.now()
        queue = mapping.queue
        queue.refresh(now)
        while mapping.waiting and (queue.visible or self.done):
            waiter = mapping.waiting.popleft()
            if waiter.messages is None:
                waiter.messages = queue.take(waiter.count, now)
                self.scheduler.unpark(waiter.poller.task)  # type: ignore[arg-type]
        while mapping.expiries and mapping.expiries[0][0] <= now:
            _, _, waiter = heapq.heappop(mapping.expiries)
            if waiter.messages is None:
                waiter.messages = []
                self.scheduler.unpark(waiter.poller.task)  # type: ignore[arg-type]
        while mapping.waiting and mapping.waiting[0].messages is not None:
            mapping.waiting.popleft()
        self._check_done()
        if mapping.waiting:
            self._arm(mapping)

    def _check_done(self) -> None:
        if self.done or self.busy or self.holding:
            return
        if not all(mapping.queue.finished() for mapping in self.mappings):
            return
        self.done = True
        for container in self._idle:
            container.inbox = None
            if container.task is not None:  # a provisioned environment never used has no task
                self.scheduler.unpark(container.task)
        self._idle.clear()
        for poller in self.pollers:
            if poller.waiting_for_slot:
                poller.waiting_for_slot = False
                self.scheduler.unpark(poller.task)  # type: ignore[arg-type]
        for mapping in self.mappings:
            for waiter in mapping.waiting:
                if waiter.messages is None:
                    waiter.messages = []
                    self.scheduler.unpark(waiter.poller.task)  # type: ignore[arg-type]
            mapping.waiting.clear()
            mapping.expiries.clear()

    def _sample(self) -> None:
        """Records what holds the sale now, and plans the next sample."""
        if self.done:
            return
        now = self.scheduler.now()
        visible = 0
        for mapping in self.mappings:
            mapping.queue.refresh(now)
            visible += mapping.queue.visible
        self._monitor.sample(
            now,
            visible=visible,
            gathering=self.holding > 0,
            # The function runs at most its reserved concurrency at once, whatever the pollers could.
            slots=min(self.slots, self.settings.reserved_concurrency or self.slots),
            activities=self._context.activities,
            arrivals_pending=any(m.queue.arrivals_pending for m in self.mappings),
            returning=any(m.queue.returning for m in self.mappings),
        )
        self.scheduler.call_at(now + binding.TICK_S, self._sample)
