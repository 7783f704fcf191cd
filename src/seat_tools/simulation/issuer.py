"""The ticket issuer in the simulation: how long a sale waits for its numbers, and what numbering costs.

See docs/guides/tickets.md and docs/explanation/simulation.md.

It runs the service's own issuer (`logic.issue_tickets.run_issuer`, each series numbered by one
task, ISSUE_SERIES_AT_ONCE at a time as the function's thread pool does, each task publishing its
batches as they commit) on the run's in-memory data, on a virtual clock, with its DynamoDB calls
on a contention model of their own (latency, units, conflicts, throttling) and its TICKETED
publications on SNS's modelled latency through one pool of calls shared by the series (the
publisher's). The function runs on its schedule: an invocation every `SCHEDULE_S`, each its own
container running rounds for `issue_seconds`; invocations that overlap (a run as long as the
schedule) race on the counters as two issuers do on AWS.

It runs after the sale, on the sale's record of when each reservation was sold: a sale is visible
to the issuer `index_lag_s` after it was sold (the index is eventually consistent). So its figures
are those of an issuer running beside the sale, and the sale's own figures are untouched. What
that leaves out: the issuer's writes do not take units from the sale's partitions or the table's
quota, nor the sale's from the issuer's (docs/explanation/simulation.md, limits).
"""

from __future__ import annotations

import bisect
import functools
import json
import math
import random
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, field
from typing import Any

from seat_inventory.dal.items import (
    LEDGER_OUTBOX_BUCKETS,
    LEDGER_OUTBOX_PREFIX,
    UNNUMBERED_BUCKETS,
    UNNUMBERED_PREFIX,
    lane_buckets,
    ledger_pk,
    ledger_sk,
    reservation_key,
    ticket_counter_key,
    ticket_format_key,
    unnumbered_bucket,
)
from seat_inventory.dal.tickets import MAX_CONCURRENT_QUERIES
from seat_inventory.handlers.issue_tickets import MARGIN_SECONDS, publish_calls
from seat_inventory.logic.issue_tickets import LaneFanOut, run_issuer
from seat_inventory.models import (
    MAX_TICKET_SERIES,
    WHOLE_INDEX,
    IssuerLane,
    NumbersRefused,
    ReservationOutcome,
    Throttled,
    TicketBatch,
    TicketFormat,
    TicketSeries,
    TransactionConflict,
    UnnumberedSale,
)
from seat_inventory.settings import (
    DEFAULT_ISSUE_LIMIT,
    DEFAULT_ISSUE_SECONDS,
    DEFAULT_ISSUE_SERIES_AT_ONCE,
    MAX_ISSUE_SERIES_AT_ONCE,
)
from seat_tools.bench.pricing import cost_per_million
from seat_tools.contention.model import (
    CONDITIONAL_CHECK_FAILED,
    ContentionModel,
    IndexWrite,
    ItemRead,
    ItemWrite,
    Verdict,
    read_units,
    write_units,
)
from seat_tools.simulation.dynamodb import TICKETS_INDEX, record_item_bytes
from seat_tools.simulation.event_source import LatencyModel, SnsQuota
from seat_tools.simulation.measured_cpu import (
    ISSUER_PER_BATCH_MS,
    ISSUER_PER_TICKET_MS,
    ISSUER_ROUND_MS,
    ISSUER_ROUND_QUERIES,
    vcpu_share,
)
from seat_tools.simulation.memory_store import InMemoryInventoryStore
from seat_tools.simulation.scheduler import Task, VirtualScheduler

# The function's schedule (template.yaml's IssueSchedule default, rate(1 minute)) and timeout.
SCHEDULE_S = 60.0
FUNCTION_TIMEOUT_S = 90.0
MAX_ISSUE_SECONDS = FUNCTION_TIMEOUT_S - MARGIN_SECONDS
# A publish that finds every call of the shared pool busy looks again this much later.
POOL_POLL_S = 0.002
# How long after a sale the TicketsToIssue index shows it. AWS documents that a table's changes
# reach its global secondary indexes "within a fraction of a second" under normal conditions
# (docs/reference/sources.md); no distribution is published, so this assumes the whole second.
DEFAULT_INDEX_LAG_S = 1.0
# Sizes in bytes, as DynamoDB counts them (names plus values), for units: the counter item, a
# ledger entry's fixed part (its assignments are counted from their JSON), an index entry.
COUNTER_BYTES = 110
LEDGER_FIXED_BYTES = 170
INDEX_ENTRY_BYTES = 120
PUBLISH_BATCH_LIMIT = 10
# The run stops this long after the last sale even if sales still wait (reported as unnumbered).
GIVE_UP_AFTER_S = 3600.0


@dataclass
class IssuerTally:
    """What the issuer did and used (the figures are derived in `issuer_figures`)."""

    sold_at: dict[str, float] = field(default_factory=dict)
    numbered_at: dict[str, float] = field(default_factory=dict)
    table_write_units: float = 0.0  # the issuer's writes to the table (its model counts them)
    index_write_units: float = 0.0  # its writes to the TicketsToIssue index (entries in and out)
    sns_requests: int = 0
    sns_throttled: int = 0  # PublishBatch calls refused for the region's quota
    cpu_seconds: float = 0.0  # the handler's own work, in the function's time
    invocations: int = 0
    busy_seconds: float = 0.0  # the invocations' durations (billed)
    rounds: int = 0
    lost_races: int = 0
    faults: int = 0
    requests: dict[str, int] = field(default_factory=dict)

    def count(self, operation: str, n: int = 1) -> None:
        self.requests[operation] = self.requests.get(operation, 0) + n


class VirtualExecutor(Executor):
    """`Executor.map` on the virtual scheduler: the calls run as tasks, `workers` at a time, while
    the caller waits (the function's ThreadPoolExecutor of ISSUE_SERIES_AT_ONCE threads)."""

    def __init__(self, scheduler: VirtualScheduler, workers: int) -> None:
        self._scheduler = scheduler
        self._workers = workers

    def map(
        self,
        fn: Callable[..., Any],
        *iterables: Iterable[Any],
        timeout: float | None = None,
        chunksize: int = 1,
    ) -> Iterator[Any]:
        calls = list(zip(*iterables, strict=True))
        results: list[Any] = [None] * len(calls)
        if not calls:
            return iter(results)
        caller: Task = self._scheduler.current()
        pending = list(range(len(calls)))[::-1]
        running = [min(self._workers, len(calls))]

        def worker() -> None:
            while pending:
                index = pending.pop()
                results[index] = fn(*calls[index])
            running[0] -= 1
            if running[0] == 0:
                self._scheduler.unpark(caller)

        for n in range(running[0]):
            self._scheduler.spawn(f"series-worker-{n}", worker)
        self._scheduler.park()
        return iter(results)


class _Clock:
    def __init__(self, scheduler: VirtualScheduler) -> None:
        self._scheduler = scheduler

    def now(self) -> float:
        return self._scheduler.now()

    def sleep(self, seconds: float) -> None:
        self._scheduler.sleep(seconds)


class _Publisher:
    """TICKETED outcomes on SNS PublishBatch (10 per call), modelled latency, through one pool of
    `at_once` calls shared by every task that publishes (the publisher's thread pool): a publish
    sends its calls in waves of as many as the pool has free, each wave over when its slowest
    call answers; with none free it waits for one."""

    def __init__(
        self,
        scheduler: VirtualScheduler,
        latency: LatencyModel,
        rng: random.Random,
        tally: IssuerTally,
        *,
        at_once: int,
        quota: SnsQuota | None = None,
    ) -> None:
        self._at_once = at_once
        self._scheduler = scheduler
        self._latency = latency
        self._rng = rng
        self._tally = tally
        self._busy = 0
        self._quota = quota or SnsQuota(None)

    def publish(
        self,
        outcomes: Sequence[ReservationOutcome],
        *,
        retry_throttled: Callable[[int], bool] | None = None,
    ) -> list[ReservationOutcome]:
        chunks = [outcomes[i : i + PUBLISH_BATCH_LIMIT] for i in range(0, len(outcomes), PUBLISH_BATCH_LIMIT)]
        refused: list[ReservationOutcome] = []
        while chunks:
            wave = min(len(chunks), self._at_once - self._busy)
            if wave <= 0:
                self._scheduler.sleep(POOL_POLL_S)
                continue
            sent, chunks = chunks[:wave], chunks[wave:]
            now = self._scheduler.now()
            taken = [self._quota.take(len(chunk), now) for chunk in sent]
            self._busy += wave
            self._scheduler.sleep(max(self._latency.sample(self._rng) for _ in range(wave)))
            self._busy -= wave
            self._tally.sns_requests += sum(taken)
            self._tally.sns_throttled += wave - sum(taken)
            # a call refused for the region's quota (Throttled): its batch stays in the outbox
            refused += [o for chunk, ok in zip(sent, taken, strict=True) if not ok for o in chunk]
        return refused


class _WaitingSales:
    """The TicketsToIssue index's partitions: each bucket's sales in sale order, as of a time."""

    def __init__(self, sales: Iterable[UnnumberedSale]) -> None:
        self._buckets: list[list[UnnumberedSale]] = [[] for _ in range(UNNUMBERED_BUCKETS)]
        for sale in sorted(sales, key=lambda s: (s.sold_at_ms, s.reservation_id)):
            self._buckets[unnumbered_bucket(sale.reservation_id)].append(sale)
        self._starts = [0] * UNNUMBERED_BUCKETS
        self._sold_ms = [[s.sold_at_ms for s in bucket] for bucket in self._buckets]

    def query(
        self, bucket: int, limit: int, visible_ms: int, numbered: dict[str, float]
    ) -> list[UnnumberedSale]:
        """The bucket's oldest `limit` sales visible by `visible_ms` and not numbered yet."""
        sales = self._buckets[bucket]
        start = self._starts[bucket]
        while start < len(sales) and sales[start].reservation_id in numbered:
            start += 1
        self._starts[bucket] = start
        end = bisect.bisect_right(self._sold_ms[bucket], visible_ms, lo=start)
        found: list[UnnumberedSale] = []
        for sale in sales[start:end]:
            if sale.reservation_id not in numbered:
                found.append(sale)
                if len(found) >= limit:
                    break
        return found


class SimulatedTicketStore:
    """The `TicketStore` port as `dal.tickets.TicketQueries` calls DynamoDB, on the model."""

    def __init__(
        self,
        data: InMemoryInventoryStore,
        model: ContentionModel,
        scheduler: VirtualScheduler,
        tally: IssuerTally,
        *,
        index_lag_s: float,
        clear_at_once: int = MAX_CONCURRENT_QUERIES,
    ) -> None:
        self.clear_at_once = clear_at_once
        self._data = data
        self._model = model
        self._scheduler = scheduler
        self._tally = tally
        self._lag_s = index_lag_s
        self._waiting = _WaitingSales(data.find_unnumbered(len(data.awaiting_tickets)))

    def _wait(self, seconds: float) -> None:
        self._scheduler.sleep(seconds)

    def _reads(self, operation: str, waves: Sequence[Sequence[ItemRead]]) -> None:
        """Requests sent together in waves, each wave over when its slowest answers; a throttled
        read is counted and waited for as answered (botocore would retry it)."""
        for wave in waves:
            slowest = 0.0
            for request in wave:
                self._tally.count(operation)
                decision = self._model.read_items([request], operation=operation, now=self._scheduler.now())
                slowest = max(slowest, decision.latency_s)
            self._wait(slowest)

    def find_unnumbered(self, limit: int, lane: IssuerLane = WHOLE_INDEX) -> list[UnnumberedSale]:
        buckets = lane_buckets(lane)
        share = max(1, -(-limit // len(buckets)))
        visible_ms = int((self._scheduler.now() - self._lag_s) * 1000)
        sales: list[UnnumberedSale] = []
        requests: list[ItemRead] = []
        for bucket in buckets:
            found = self._waiting.query(bucket, share, visible_ms, self._tally.numbered_at)
            sales.extend(found)
            size = INDEX_ENTRY_BYTES * max(1, len(found))
            requests.append(
                ItemRead(f"UNNUMBERED#{bucket}", f"UNNUMBERED#{bucket}", read_units(size, consistent=False))
            )
        self._reads(
            "Query",
            [
                requests[i : i + MAX_CONCURRENT_QUERIES]
                for i in range(0, len(requests), MAX_CONCURRENT_QUERIES)
            ],
        )
        return sorted(sales, key=lambda s: (s.sold_at_ms, s.reservation_id))[:limit]

    def read_ticket_format(self, event_id: str) -> TicketFormat:
        key = ticket_format_key(event_id)["pk"]["S"]
        self._reads("GetItem", [[ItemRead(key, key, read_units(100))]])
        return self._data.read_ticket_format(event_id)

    def read_next_number(self, series: TicketSeries) -> int:
        key = ticket_counter_key(series.event_id, series.series)["pk"]["S"]
        self._reads("GetItem", [[ItemRead(key, key + "|COUNTER", read_units(COUNTER_BYTES))]])
        return self._data.read_next_number(series)

    def commit_numbers(self, batch: TicketBatch) -> NumbersRefused | None:
        counter = ticket_counter_key(batch.series.event_id, batch.series.series)["pk"]["S"]
        ledger = ledger_pk(batch.series.event_id, batch.series.series)
        ledger_bytes = _ledger_bytes(batch)
        items = [
            ItemWrite(counter, counter + "|COUNTER", write_units(COUNTER_BYTES, transactional=True)),
            ItemWrite(
                ledger, f"{ledger}|{ledger_sk(batch.first)}", write_units(ledger_bytes, transactional=True)
            ),
        ]
        for a in batch.assignments:
            pk = reservation_key(a.reservation_id)["pk"]["S"]
            items.append(
                ItemWrite(
                    pk, pk + "|r", write_units(self._record_bytes(a.reservation_id), transactional=True)
                )
            )
        # Each reservation leaves the TicketsToIssue index, the ledger entry enters its outbox
        # part: index writes that take the index's capacity (and are refused with it).
        index_writes = [
            IndexWrite(TICKETS_INDEX, 2 + n, f"{UNNUMBERED_PREFIX}{unnumbered_bucket(a.reservation_id)}")
            for n, a in enumerate(batch.assignments)
        ]
        index_writes.append(IndexWrite(TICKETS_INDEX, 1, _outbox_key(ledger)))
        self._tally.count("TransactWriteItems")
        decision = self._model.transact_write(items, now=self._scheduler.now(), index_writes=index_writes)
        self._wait(decision.latency_s)
        if decision.verdict is Verdict.CONFLICT:
            raise TransactionConflict("TransactionConflict")
        if decision.verdict is Verdict.THROTTLED:
            raise Throttled("ThrottlingError")
        sold = {
            a.reservation_id: self._data.awaiting_tickets.get(a.reservation_id) for a in batch.assignments
        }
        refused = self._data.commit_numbers(batch)
        if refused is not None:
            self._model.finish(decision, cancelled_by=CONDITIONAL_CHECK_FAILED, now=self._scheduler.now())
            return refused
        now = self._scheduler.now()
        for rid in sold:
            self._tally.numbered_at[rid] = now
        # Index writes: each reservation leaves TicketsToIssue, the ledger entry enters it (outbox).
        self._tally.index_write_units += len(batch.assignments) + 1
        return None

    def _record_bytes(self, reservation_id: str) -> int:
        record = self._data.records.get(reservation_id)
        if record is None:
            return 300
        return record_item_bytes(record) + 20  # ticket_series, ticket_first

    def find_unpublished_batches(self, limit: int, lane: IssuerLane = WHOLE_INDEX) -> list[TicketBatch]:
        requests = [
            ItemRead(f"TICKETED#{b}", f"TICKETED#{b}", read_units(INDEX_ENTRY_BYTES, consistent=False))
            for b in range(LEDGER_OUTBOX_BUCKETS)
        ]
        self._reads("Query", [[r] for r in requests])
        batches = self._data.find_unpublished_batches(limit, lane)
        if batches:
            reads = [
                ItemRead(
                    ledger_pk(b.series.event_id, b.series.series),
                    ledger_sk(b.first),
                    read_units(_ledger_bytes(b)),
                )
                for b in batches
            ]
            self._reads("BatchGetItem", [reads])
        return batches

    def mark_batches_published(self, batches: Sequence[TicketBatch]) -> int:
        """One UpdateItem per batch, `clear_at_once` at a time (the DAL's pool: 16)."""
        for start in range(0, len(batches), self.clear_at_once):
            slowest = 0.0
            for batch in batches[start : start + self.clear_at_once]:
                pk = ledger_pk(batch.series.event_id, batch.series.series)
                self._tally.count("UpdateItem")
                decision = self._model.write_item(
                    ItemWrite(
                        pk,
                        f"{pk}|{ledger_sk(batch.first)}",
                        write_units(_ledger_bytes(batch), transactional=False),
                    ),
                    operation="UpdateItem",
                    now=self._scheduler.now(),
                    index_writes=[IndexWrite(TICKETS_INDEX, 0, _outbox_key(pk))],
                )
                slowest = max(slowest, decision.latency_s)
                self._tally.index_write_units += 1  # the ledger entry leaves the outbox index
            self._wait(slowest)
        return self._data.mark_batches_published(batches)


class _Cpu:
    """One invocation's CPU: the measured work of its threads, one at a time (Python runs one
    thread of CPU at once), each at the memory's share of a vCPU."""

    def __init__(self, scheduler: VirtualScheduler, memory_mb: int, tally: IssuerTally) -> None:
        self._scheduler = scheduler
        self._share = vcpu_share(memory_mb)
        self._tally = tally
        self._free_at = -math.inf

    def run(self, cpu_ms: float) -> None:
        """Waits for the CPU, then spends `cpu_ms` of one core on it."""
        now = self._scheduler.now()
        seconds = cpu_ms / 1000 / self._share
        self._free_at = max(now, self._free_at) + seconds
        self._tally.cpu_seconds += seconds
        self._scheduler.sleep(self._free_at - now)


class _InvocationStore:
    """The shared store as one invocation uses it: its rounds and batches spend that invocation's
    measured CPU (`measured_cpu`: a round's fixed part, each batch's and each ticket's)."""

    def __init__(self, store: SimulatedTicketStore, cpu: _Cpu) -> None:
        self._store = store
        self._cpu = cpu

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def find_unnumbered(self, limit: int, lane: IssuerLane = WHOLE_INDEX) -> list[UnnumberedSale]:
        self._cpu.run(round_cpu_ms(lane))
        return self._store.find_unnumbered(limit, lane)

    def commit_numbers(self, batch: TicketBatch) -> NumbersRefused | None:
        self._cpu.run(ISSUER_PER_BATCH_MS + ISSUER_PER_TICKET_MS * sum(a.quantity for a in batch.assignments))
        return self._store.commit_numbers(batch)


def round_cpu_ms(lane: IssuerLane) -> float:
    """A round's fixed CPU (measured for the whole index: its buckets' and the outbox's queries),
    in proportion to the queries a lane sends (its share of the buckets, every outbox bucket)."""
    queries = len(lane_buckets(lane)) + LEDGER_OUTBOX_BUCKETS
    return ISSUER_ROUND_MS * queries / ISSUER_ROUND_QUERIES


def _outbox_key(ledger: str) -> str:
    """The TicketsToIssue partition key of a ledger entry waiting for publication
    (`dal.tickets`: TICKETED#<crc32 of its key, of LEDGER_OUTBOX_BUCKETS>)."""
    return f"{LEDGER_OUTBOX_PREFIX}{zlib.crc32(ledger.encode()) % LEDGER_OUTBOX_BUCKETS}"


def _ledger_bytes(batch: TicketBatch) -> int:
    assignments = json.dumps([[a.reservation_id, a.first, a.quantity] for a in batch.assignments])
    return LEDGER_FIXED_BYTES + len(assignments)


@dataclass(frozen=True)
class IssuerConfig:
    """The issuer's side of a run (docs/explanation/simulation.md)."""

    series: int = 1  # the event's series (`seats tickets configure --series`)
    series_at_once: int = DEFAULT_ISSUE_SERIES_AT_ONCE  # the function's thread pool (ISSUE_SERIES_AT_ONCE)
    # The SNS publisher's pool, shared by the series (0: the function's, `publish_calls(series_at_once)`)
    publish_at_once: int = 0
    clear_at_once: int = MAX_CONCURRENT_QUERIES  # outbox updates sent at once (dal.tickets: 16)
    limit: int = DEFAULT_ISSUE_LIMIT
    issue_seconds: float = DEFAULT_ISSUE_SECONDS
    # Where the sale's start falls in the issuer's schedule: seconds after an invocation started
    # (0: the sale starts with an invocation; 50: when one stops, the worst case, 10 s idle).
    phase_s: float = 0.0
    index_lag_s: float = DEFAULT_INDEX_LAG_S
    memory_mb: int = 512  # the issuer's (the template's IssueFunctionMemorySize): its vCPU share
    lanes: int = 1  # issuer runs numbering at once (the template's IssueLanes)
    # From a scheduled run's asynchronous Invoke of a lane to the lane's first round (its cold start).
    lane_start_s: float = 0.6
    sns_publish_per_s: float | None = None  # the region's SNS quota (None: none)

    def __post_init__(self) -> None:
        IssuerLane(0, self.lanes)  # a power of two up to MAX_ISSUER_LANES, or ValueError
        if not 1 <= self.series <= MAX_TICKET_SERIES:
            raise ValueError(f"ticket series must be 1 to {MAX_TICKET_SERIES}, not {self.series}")
        if not 1 <= self.series_at_once <= MAX_ISSUE_SERIES_AT_ONCE:
            raise ValueError(
                f"series at once must be 1 to {MAX_ISSUE_SERIES_AT_ONCE}, not {self.series_at_once}"
            )
        if not 0 <= self.publish_at_once <= 1000:
            raise ValueError(f"publish calls at once must be 1 to 1,000, not {self.publish_at_once}")
        if not 1 <= self.clear_at_once <= 1000:
            raise ValueError(f"outbox updates at once must be 1 to 1,000, not {self.clear_at_once}")
        if not 0 <= self.phase_s < SCHEDULE_S:
            raise ValueError(f"the issuer's phase must be 0 to {SCHEDULE_S:g} s, not {self.phase_s}")
        if not 0 < self.issue_seconds <= MAX_ISSUE_SECONDS:
            raise ValueError(
                f"issue seconds must be more than 0 and at most {MAX_ISSUE_SECONDS:g},"
                f" not {self.issue_seconds}"
            )

    @property
    def publish_pool(self) -> int:
        """PublishBatch calls at once: `publish_at_once`, or the function's pool for its series."""
        return self.publish_at_once or publish_calls(self.series_at_once)


def simulate_issuer(
    data: InMemoryInventoryStore,
    event_id: str,
    config: IssuerConfig,
    model: ContentionModel,
    scheduler: VirtualScheduler,
    *,
    sale_start: float,
    publish_latency: LatencyModel,
    rng: random.Random,
) -> IssuerTally:
    """Numbers every sale `data` holds as the scheduled function would, from `sale_start` on.

    `model` must be on `scheduler`'s clock; `data.awaiting_tickets` holds each sale's time (ms).
    """
    data.ticket_formats[event_id] = TicketFormat(series=config.series)
    tally = IssuerTally()
    tally.sold_at = {rid: ms / 1000 for rid, ms in data.awaiting_tickets.items()}
    store = SimulatedTicketStore(
        data, model, scheduler, tally, index_lag_s=config.index_lag_s, clear_at_once=config.clear_at_once
    )
    clock = _Clock(scheduler)
    quota = SnsQuota(config.sns_publish_per_s)  # the region's, shared by every run
    last_sale = max(tally.sold_at.values(), default=sale_start)
    give_up = last_sale + GIVE_UP_AFTER_S

    class Lanes:
        """Starts lanes as the function's asynchronous Invoke does: each a container of its own,
        running `lane_start_s` later."""

        def start_lanes(self, lanes: Sequence[int], count: int, until: float) -> list[int]:
            for index in lanes:
                scheduler.spawn(
                    f"issuer-lane-{index}-{until:.0f}",
                    functools.partial(invocation, until - config.issue_seconds, IssuerLane(index, count)),
                    at=scheduler.now() + config.lane_start_s,
                )
            return []

    def invocation(start: float, lane: IssuerLane | None = None) -> None:
        # Each invocation is a container of its own: its own thread pools (publisher, series).
        # (`start` may be before the sale: the run the sale starts in began `phase_s` earlier.)
        # The scheduled run (`lane` None) starts the others when they have work.
        publisher = _Publisher(
            scheduler,
            publish_latency,
            rng,
            tally,
            at_once=config.publish_pool,
            quota=quota,
        )
        until = start + config.issue_seconds
        began = start if lane is None else scheduler.now()
        rounds = run_issuer(
            _InvocationStore(store, _Cpu(scheduler, config.memory_mb, tally)),
            publisher,
            clock,
            limit=config.limit,
            until=until,
            executor=VirtualExecutor(scheduler, config.series_at_once),
            lane=lane or (LaneFanOut(Lanes(), config.lanes, until) if config.lanes > 1 else WHOLE_INDEX),
        )
        tally.invocations += 1
        tally.busy_seconds += scheduler.now() - began
        tally.rounds += len(rounds)
        tally.lost_races += sum(r.lost_races for r in rounds)
        tally.faults += sum(r.faults for r in rounds)

    def schedule() -> None:
        # EventBridge starts an invocation every SCHEDULE_S whether the last one ended or not.
        start = sale_start - config.phase_s
        while start + config.issue_seconds < sale_start:
            start += SCHEDULE_S
        while True:
            scheduler.sleep(max(0.0, start - scheduler.now()))
            done = not data.awaiting_tickets and not data.ledger_unpublished
            if (done and scheduler.now() > last_sale + config.index_lag_s) or scheduler.now() > give_up:
                return
            scheduler.spawn(f"issuer-{start:.0f}", functools.partial(invocation, start))
            start += SCHEDULE_S

    scheduler.spawn("issuer-schedule", schedule, at=sale_start)
    scheduler.run()
    tally.table_write_units = model.counters().write_units_consumed
    return tally


def _quantile(values: Sequence[float], share: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(share * len(ordered)) - 1)]


def _p99_by_tenth(tally: IssuerTally) -> list[float]:
    """The delay's p99 over the sales sold in each tenth of the sale (by when they were sold)."""
    if not tally.sold_at:
        return []
    first, last = min(tally.sold_at.values()), max(tally.sold_at.values())
    width = (last - first) / 10 or 1.0
    tenths: list[list[float]] = [[] for _ in range(10)]
    for rid, sold in tally.sold_at.items():
        if rid in tally.numbered_at:
            tenths[min(9, int((sold - first) / width))].append(tally.numbered_at[rid] - sold)
    return [_quantile(t, 0.99) for t in tenths if t]


def issuer_figures(config: IssuerConfig, tally: IssuerTally, model: ContentionModel) -> dict[str, Any]:
    """The issuer's figures: numbering delay, throughput, units and cost per million numbered."""
    delays = [
        tally.numbered_at[rid] - sold for rid, sold in tally.sold_at.items() if rid in tally.numbered_at
    ]
    by_tenth = _p99_by_tenth(tally)
    sold = len(tally.sold_at)
    numbered = len(tally.numbered_at)
    counters = model.counters()
    # Each sale's own write puts its record in the TicketsToIssue index: one index write each.
    sale_index = float(sold)
    total_writes = sale_index + tally.table_write_units + tally.index_write_units
    gb_seconds = tally.busy_seconds * config.memory_mb / 1024
    cost = cost_per_million(
        write_units=total_writes,
        read_units=counters.read_units_consumed,
        sqs_requests=0,
        sns_requests=tally.sns_requests,
        invocations=tally.invocations,
        gb_seconds=gb_seconds,
        reservations=numbered,
    )
    first_sold = min(tally.sold_at.values(), default=0.0)
    last_numbered = max(tally.numbered_at.values(), default=first_sold)
    span = last_numbered - first_sold
    return {
        "series": config.series,
        "lanes": config.lanes,
        "series_at_once": config.series_at_once,
        "publish_at_once": config.publish_pool,
        "issue_seconds": config.issue_seconds,
        "limit": config.limit,
        "clear_at_once": config.clear_at_once,
        "phase_s": config.phase_s,
        "index_lag_s": config.index_lag_s,
        "reservations_sold": sold,
        "reservations_numbered": numbered,
        "left_unnumbered": sold - numbered,
        "numbering_delay_p50_s": _quantile(delays, 0.5),
        "numbering_delay_p99_s": _quantile(delays, 0.99),
        "numbering_delay_max_s": max(delays, default=0.0),
        # p99 of the sales sold in each tenth of the sale's time: a delay that grows shows here.
        "numbering_delay_p99_by_tenth_s": by_tenth,
        "numbered_per_s": numbered / span if span > 0 else 0.0,
        "transactions": tally.requests.get("TransactWriteItems", 0),
        "transactions_cancelled": dict(sorted(counters.transactions_cancelled.items())),
        "throttled_requests": counters.throttled_requests,
        "lost_races": tally.lost_races,
        "faults": tally.faults,
        "rounds": tally.rounds,
        "invocations": tally.invocations,
        "write_units": {
            "sale_index_entries": sale_index,
            "issuer_table": tally.table_write_units,
            "issuer_index": tally.index_write_units,
            "total": total_writes,
            "per_reservation": total_writes / numbered if numbered else 0.0,
        },
        "read_units": counters.read_units_consumed,
        "dynamodb_requests": dict(sorted(tally.requests.items())),
        "sns_requests": tally.sns_requests,
        "sns_throttled_calls": tally.sns_throttled,
        "memory_mb": config.memory_mb,
        "cpu_seconds": tally.cpu_seconds,
        "lambda_gb_seconds": gb_seconds,
        "cost_per_million_reservations": {
            "dynamodb": cost.dynamodb,
            "sns": cost.sns,
            "lambda": cost.lambda_,
            "total": cost.total,
        },
    }
