"""DynamoDB's contention on AWS, as a pure model: conflicts, per-partition throughput and latency.

No I/O and no global state: time comes from an injectable clock (or an explicit `now`), random
draws from an injectable `random.Random`. The local stack's proxy (`seat_tools.contention.proxy`)
drives it on the wall clock; the simulation drives it on a virtual one. docs/contention.md says
what is modelled and where each figure comes from.

API (stable; everything else is internal):

    settings = ContentionSettings()                  # the defaults below; .describe() prints them
    model = ContentionModel(settings, clock=..., rng=random.Random(7))
    decision = model.transact_write([ItemWrite(pk, item_key, units), ...], now=t)
    decision.verdict      # Verdict.ADMITTED, CONFLICT or THROTTLED
    decision.reasons      # per action: None, "TransactionConflict" or "ThrottlingError" (AWS's codes)
    decision.latency_s    # modelled seconds from the request to its answer
    decision.hold_until   # an admitted transaction holds its items until then (model time)
    model.finish(decision, cancelled_by="ConditionalCheckFailed")  # once: the engine cancelled it
    model.write_item(ItemWrite(...), now=t)          # PutItem / UpdateItem / DeleteItem
    model.finish(write, cancelled_by="ConditionalCheckFailed")  # its condition failed: wasted
    model.read_items([ItemRead(pk, item_key, units)], operation="GetItem", now=t)
    read = model.transact_read([ItemRead(pk, item_key, units), ...], now=t)   # TransactGetItems
    read = model.finish_read(read, now=t + read.latency_s)  # once, when it answers: its final verdict
    model.counters()      # a ContentionCounters snapshot
    write_units(size_bytes, transactional=...), read_units(size_bytes, ...)  # AWS's unit rules

Semantics, each from AWS's documentation or stated as an assumption (sources in docs/contention.md):

- Holds. An admitted `TransactWriteItems` holds every item it writes from its start until its
  commit: `hold_until = now + latency_s`, or until `finish()` when it was started with
  `until_finished=True` (the proxy, which only knows when the real engine has answered). A
  transaction touching an item that another transaction holds is cancelled: its reasons hold
  "TransactionConflict" at that item's position and None elsewhere; it holds nothing. A
  single-item write on a held item is refused (`Verdict.CONFLICT`: AWS answers
  TransactionConflictException). A single-item write holds nothing from other writes.
- Transactional reads. A `TransactGetItems` is cancelled ("TransactionConflict" at the item's
  position, None elsewhere) when one of its items is being written when the read starts (held by
  a transaction, or in a single-item write, for that write's latency), or when a transaction or
  single-item write on it starts while the read is in flight (until `finish_read`). AWS: it is
  cancelled when "an ongoing TransactGetItems operation ... conflicts with a concurrent PutItem,
  UpdateItem, DeleteItem or TransactWriteItems request". A read holds nothing: AWS documents no
  write refused because of a read, so none is. Non-transactional reads (GetItem, BatchGetItem,
  Query) are never blocked.
- Throughput. Each partition key has a token bucket of write units (`write_units_per_s`,
  default 1,000) and one of read units (`read_units_per_s`, 3,000), each holding at most
  `burst_s` seconds of its rate (default 1 s: AWS documents that burst capacity "can't alleviate
  partition-level throttling"). A request whose units are not all in its partitions' buckets is
  throttled and consumes nothing: a transaction is cancelled with "ThrottlingError" at the
  throttled item's position, a single-item request gets ProvisionedThroughputExceededException
  (the answer for a hot key on both capacity modes). An optional table-wide write bucket
  (`table_write_units_per_s`, off by default) models the table's on-demand quota (40,000/s).
- Units. Writes cost 1 unit per KB of item, transactional writes 2 per KB; strongly consistent
  reads 1 per 4 KB (eventually consistent half that), transactional reads 2 per 4 KB. A
  transaction cancelled by a conflict or a failed condition is charged its units (AWS does not
  document it; a failed conditional write is charged, so the model assumes the same), and they
  are counted as wasted (`write_units_cancelled`), as are the units of a single-item write
  refused by a conflict or whose condition failed (`finish(write, cancelled_by=...)`); a
  cancelled `TransactGetItems` is likewise assumed to be charged its read units.
- Latency. Log-normal per operation, fitted to a published p50 and p90 (Alex DeBrie's
  measurements from Lambda): single-item operations p50 7.55 ms / p90 11.3 ms (measured for
  PutItem; assumed for the others); `TransactWriteItems` and `TransactGetItems` with n items
  linear in n through (5 items: 25.3 / 30.7 ms) and (25 items: 32.1 / 40.5 ms), extrapolated
  beyond (100 items: about 57.6 / 77.3 ms; no public figure exists for more than 25).
- Time scale. `time_scale` stretches the model onto the wall clock: a proxy run at scale s
  reads the model's time as wall time / s and sleeps s x each modelled latency, so every rate
  this 2-core machine can drive meets the same contention as s times that rate on AWS.
  `wall_seconds()` converts. The model itself only ever sees model seconds.
"""

from __future__ import annotations

import enum
import itertools
import math
import random
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

TRANSACTION_CONFLICT = "TransactionConflict"
THROTTLING_ERROR = "ThrottlingError"
CONDITIONAL_CHECK_FAILED = "ConditionalCheckFailed"

KB = 1024
# z of the 90th percentile of a standard normal: sigma = ln(p90 / p50) / Z90 for a log-normal.
Z90 = 1.2815515655446004

# Published latencies, milliseconds (p50, p90): https://www.alexdebrie.com/posts/dynamodb-transactions-performance/
SINGLE_ITEM_MS = (7.55, 11.3)
TRANSACTION_POINTS_MS = ((5, 25.3, 30.7), (25, 32.1, 40.5))
TRANSACTIONAL_OPERATIONS = frozenset({"TransactWriteItems", "TransactGetItems"})
SINGLE_WRITE_OPERATIONS = frozenset({"PutItem", "UpdateItem", "DeleteItem"})
PURGE_EVERY = 4096


class Verdict(enum.Enum):
    """What the model decides for a request, before the engine applies it."""

    ADMITTED = "admitted"
    CONFLICT = "conflict"
    THROTTLED = "throttled"


@dataclass(frozen=True, slots=True)
class ContentionSettings:
    """The layer's settings; the defaults are AWS's documented figures."""

    write_units_per_s: float = 1000.0
    read_units_per_s: float = 3000.0
    burst_s: float = 1.0
    table_write_units_per_s: float | None = None
    time_scale: float = 1.0
    latency: bool = True

    def __post_init__(self) -> None:
        for name in ("write_units_per_s", "read_units_per_s", "burst_s", "time_scale"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be positive, not {getattr(self, name)!r}")
        if self.table_write_units_per_s is not None and not self.table_write_units_per_s > 0:
            raise ValueError("table_write_units_per_s must be positive or None")

    def wall_seconds(self, model_seconds: float) -> float:
        """Wall-clock seconds that `model_seconds` take at this time scale."""
        return model_seconds * self.time_scale

    def describe(self) -> str:
        """One line for the logs of every run."""
        table = (
            f"table {self.table_write_units_per_s:g} WCU/s"
            if self.table_write_units_per_s is not None
            else "no table quota"
        )
        latency = "published latencies" if self.latency else "no added latency"
        return (
            f"AWS contention: per partition key {self.write_units_per_s:g} WCU/s and "
            f"{self.read_units_per_s:g} RCU/s, burst {self.burst_s:g} s; {table}; {latency}; "
            f"time scale x{self.time_scale:g} (wall seconds per modelled second: latencies "
            f"x{self.time_scale:g}, unit rates /{self.time_scale:g})"
        )


@dataclass(frozen=True, slots=True)
class ItemWrite:
    """One item a write touches: its partition key, a key unique in the table, and its units."""

    partition_key: str
    item_key: str
    write_units: float


@dataclass(frozen=True, slots=True)
class ItemRead:
    partition_key: str
    item_key: str
    read_units: float


@dataclass(frozen=True, slots=True)
class Decision:
    verdict: Verdict
    operation: str
    reasons: tuple[str | None, ...]
    latency_s: float
    started_at: float
    hold_until: float | None = None
    transaction_id: int | None = None
    units: float = 0.0
    item_keys: tuple[str, ...] = ()
    open_ended: bool = False

    @property
    def admitted(self) -> bool:
        return self.verdict is Verdict.ADMITTED


@dataclass(frozen=True, slots=True)
class ContentionCounters:
    """What the model decided so far (a snapshot)."""

    transactions_committed: int = 0
    transactions_cancelled: dict[str, int] = field(default_factory=dict)  # by reason code
    write_conflicts: int = 0  # single-item writes refused with TransactionConflictException
    throttled_requests: int = 0  # every request refused for throughput, transactions included
    write_units_consumed: float = 0.0
    # charged to writes that wrote nothing: cancelled transactions, and single-item writes
    # refused by a conflict or a failed condition
    write_units_cancelled: float = 0.0
    read_units_consumed: float = 0.0
    in_flight_transactions: int = 0
    read_transactions_committed: int = 0  # TransactGetItems answered
    read_transactions_cancelled: dict[str, int] = field(default_factory=dict)  # refused, by reason

    @property
    def read_transactions_refused(self) -> int:
        return sum(self.read_transactions_cancelled.values())

    def as_dict(self) -> dict[str, object]:
        return {
            "transactions_committed": self.transactions_committed,
            "transactions_cancelled": dict(self.transactions_cancelled),
            "write_conflicts": self.write_conflicts,
            "throttled_requests": self.throttled_requests,
            "write_units_consumed": self.write_units_consumed,
            "write_units_cancelled": self.write_units_cancelled,
            "read_units_consumed": self.read_units_consumed,
            "in_flight_transactions": self.in_flight_transactions,
            "read_transactions_committed": self.read_transactions_committed,
            "read_transactions_cancelled": dict(self.read_transactions_cancelled),
        }


def write_units(size_bytes: int, *, transactional: bool) -> int:
    """Write units of one item write: 1 per KB (rounded up, at least 1), doubled in a transaction."""
    units = max(1, math.ceil(size_bytes / KB))
    return 2 * units if transactional else units


def read_units(size_bytes: int, *, consistent: bool = True, transactional: bool = False) -> float:
    """Read units of one item read: 1 per 4 KB strongly consistent, half eventually, 2 transactional."""
    blocks = max(1, math.ceil(size_bytes / (4 * KB)))
    if transactional:
        return 2.0 * blocks
    return float(blocks) if consistent else blocks / 2


def latency_quantiles_ms(operation: str, item_count: int = 1) -> tuple[float, float]:
    """The (p50, p90) in milliseconds the model draws `operation` on `item_count` items from."""
    if operation not in TRANSACTIONAL_OPERATIONS:
        return SINGLE_ITEM_MS
    (n0, p50_0, p90_0), (n1, p50_1, p90_1) = TRANSACTION_POINTS_MS
    fraction = (max(1, item_count) - n0) / (n1 - n0)
    return p50_0 + fraction * (p50_1 - p50_0), p90_0 + fraction * (p90_1 - p90_0)


def sample_latency_s(operation: str, item_count: int, rng: random.Random) -> float:
    """One draw, in seconds, from the log-normal with the operation's published p50 and p90."""
    p50, p90 = latency_quantiles_ms(operation, item_count)
    sigma = math.log(p90 / p50) / Z90
    return p50 * math.exp(sigma * rng.gauss(0.0, 1.0)) / 1000.0


class _Bucket:
    """A token bucket: `rate` units per second, at most `rate * burst_s` kept; starts full."""

    __slots__ = ("capacity", "rate", "tokens", "updated_at")

    def __init__(self, rate: float, burst_s: float, now: float) -> None:
        self.rate = rate
        self.capacity = rate * burst_s
        self.tokens = self.capacity
        self.updated_at = now

    def refill(self, now: float) -> float:
        if now > self.updated_at:
            self.tokens = min(self.capacity, self.tokens + (now - self.updated_at) * self.rate)
            self.updated_at = now
        return self.tokens


class ContentionModel:
    """Decides conflicts and throttling, draws latencies and counts; thread-safe."""

    def __init__(
        self,
        settings: ContentionSettings | None = None,
        *,
        clock: Callable[[], float] | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.settings = settings or ContentionSettings()
        if clock is None:
            scale = self.settings.time_scale
            clock = (lambda: time.monotonic() / scale) if scale != 1 else time.monotonic
        self._clock = clock
        self._rng = rng or random.Random()
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._read_ids = itertools.count(1)
        # item key -> (transaction id, held until; math.inf until finish() for open-ended holds)
        self._holds: dict[str, tuple[int, float]] = {}
        self._open: dict[int, Decision] = {}  # open-ended transactions not finished yet
        self._write_buckets: dict[str, _Bucket] = {}
        self._read_buckets: dict[str, _Bucket] = {}
        self._table_bucket: _Bucket | None = None
        self._committed = 0
        self._cancelled: Counter[str] = Counter()
        self._write_conflicts = 0
        self._throttled = 0
        self._write_units = 0.0
        self._write_units_cancelled = 0.0
        self._read_units = 0.0
        # item key -> until when a single-item write is in flight on it (a transactional read conflicts)
        self._single_writes: dict[str, float] = {}
        # read id -> the item keys of a TransactGetItems in flight, and the positions written since
        self._reads: dict[int, tuple[tuple[str, ...], set[int]]] = {}
        self._readers: dict[str, set[int]] = {}  # item key -> ids of the reads in flight on it
        self._read_committed = 0
        self._read_cancelled: Counter[str] = Counter()

    # ------------------------------------------------------------------ public
    def now(self) -> float:
        """The model's time (seconds) by its clock."""
        return self._clock()

    def transact_write(
        self, items: Sequence[ItemWrite], *, now: float | None = None, until_finished: bool = False
    ) -> Decision:
        """A `TransactWriteItems` on `items` (in request order) starting at `now`."""
        return self._transaction("TransactWriteItems", items, now, until_finished)

    def write_item(
        self, item: ItemWrite, *, operation: str = "PutItem", now: float | None = None
    ) -> Decision:
        """A single-item write (PutItem, UpdateItem or DeleteItem)."""
        with self._lock:
            start = self._now(now)
            latency = self._latency(operation, 1)
            if not self._take_writes([item], start):
                self._throttled += 1
                return Decision(Verdict.THROTTLED, operation, (THROTTLING_ERROR,), latency, start)
            self._write_units += item.write_units
            if self._held_positions([item.item_key], start):
                self._write_conflicts += 1
                self._write_units_cancelled += item.write_units
                return Decision(
                    Verdict.CONFLICT,
                    operation,
                    (TRANSACTION_CONFLICT,),
                    latency,
                    start,
                    units=item.write_units,
                )
            until = start + latency
            if until > self._single_writes.get(item.item_key, start):
                self._single_writes[item.item_key] = until
            self._mark_readers([item.item_key])
            return Decision(Verdict.ADMITTED, operation, (None,), latency, start, units=item.write_units)

    def read_items(
        self, items: Sequence[ItemRead], *, operation: str = "GetItem", now: float | None = None
    ) -> Decision:
        """A non-transactional read (GetItem, BatchGetItem, Query): never blocked by holds."""
        with self._lock:
            start = self._now(now)
            latency = self._latency(operation, len(items))
            throttled = self._take_reads(items, start)
            if throttled is not None:
                self._throttled += 1
                reasons = tuple(THROTTLING_ERROR if i == throttled else None for i in range(len(items)))
                return Decision(Verdict.THROTTLED, operation, reasons, latency, start)
            units = sum(item.read_units for item in items)
            return Decision(Verdict.ADMITTED, operation, (None,) * len(items), latency, start, units=units)

    def transact_read(self, items: Sequence[ItemRead], *, now: float | None = None) -> Decision:
        """A `TransactGetItems` of `items` (in request order) starting at `now`.

        Cancelled at once (`Verdict.CONFLICT`, "TransactionConflict" at each such position) when
        an item is held by a transaction or in a single-item write in flight; throttled like any
        read. An admitted read is in flight until `finish_read`, which gives its final verdict.
        """
        operation = "TransactGetItems"
        with self._lock:
            start = self._now(now)
            latency = self._latency(operation, len(items))
            throttled = self._take_reads(items, start)
            if throttled is not None:
                self._throttled += 1
                self._read_cancelled[THROTTLING_ERROR] += 1
                reasons = tuple(THROTTLING_ERROR if i == throttled else None for i in range(len(items)))
                return Decision(Verdict.THROTTLED, operation, reasons, latency, start)
            units = sum(item.read_units for item in items)
            keys = tuple(item.item_key for item in items)
            held = self._held_positions(keys, start) | self._written_positions(keys, start)
            if held:
                self._read_cancelled[TRANSACTION_CONFLICT] += 1
                reasons = tuple(TRANSACTION_CONFLICT if i in held else None for i in range(len(items)))
                return Decision(Verdict.CONFLICT, operation, reasons, latency, start, units=units)
            read_id = next(self._read_ids)
            self._reads[read_id] = (keys, set())
            for key in keys:
                self._readers.setdefault(key, set()).add(read_id)
            self._read_committed += 1
            return Decision(
                Verdict.ADMITTED,
                operation,
                (None,) * len(items),
                latency,
                start,
                transaction_id=read_id,
                units=units,
                item_keys=keys,
            )

    def finish_read(self, decision: Decision, *, now: float | None = None) -> Decision:
        """The final verdict of a `transact_read` when it answers; call it once per decision.

        An admitted read of an item that a write started to change while the read was in flight
        is cancelled after all ("TransactionConflict" at those positions; recounted from committed
        to cancelled). Any other decision, or one already finished, is returned as it is.
        """
        if decision.operation != "TransactGetItems" or decision.transaction_id is None:
            return decision
        with self._lock:
            read = self._reads.pop(decision.transaction_id, None)
            if read is None:
                return decision
            keys, written = read
            for key in keys:
                readers = self._readers.get(key)
                if readers is not None:
                    readers.discard(decision.transaction_id)
                    if not readers:
                        del self._readers[key]
            if not written:
                return decision
            self._read_committed -= 1
            self._read_cancelled[TRANSACTION_CONFLICT] += 1
            reasons = tuple(TRANSACTION_CONFLICT if i in written else None for i in range(len(keys)))
            return Decision(
                Verdict.CONFLICT,
                decision.operation,
                reasons,
                decision.latency_s,
                decision.started_at,
                units=decision.units,
                item_keys=keys,
            )

    def finish(
        self, decision: Decision, *, cancelled_by: str | None = None, now: float | None = None
    ) -> None:
        """The engine has answered an admitted transaction; call it at most once per decision.

        Its holds end now (an open-ended one's, or a timed one's that the engine ended early), and
        `cancelled_by` (e.g. "ConditionalCheckFailed") recounts it from committed to cancelled.
        For an admitted single-item write, `cancelled_by` counts its units as wasted (its
        condition failed: charged, nothing written). Does nothing for any other decision.
        """
        if decision.transaction_id is None or decision.operation == "TransactGetItems":
            if (
                cancelled_by is not None
                and decision.admitted
                and decision.operation in SINGLE_WRITE_OPERATIONS
            ):
                with self._lock:
                    self._write_units_cancelled += decision.units
            return
        with self._lock:
            if decision.open_ended and self._open.pop(decision.transaction_id, None) is None:
                return  # already finished
            end = self._now(now)
            for key in decision.item_keys:
                hold = self._holds.get(key)
                if hold is not None and hold[0] == decision.transaction_id and hold[1] > end:
                    del self._holds[key]
            if cancelled_by is not None:
                self._committed -= 1
                self._cancelled[cancelled_by] += 1
                self._write_units_cancelled += decision.units

    def counters(self, *, now: float | None = None) -> ContentionCounters:
        with self._lock:
            at = self._now(now)
            holding = {holder for holder, until in self._holds.values() if until > at}
            return ContentionCounters(
                transactions_committed=self._committed,
                transactions_cancelled=dict(self._cancelled),
                write_conflicts=self._write_conflicts,
                throttled_requests=self._throttled,
                write_units_consumed=self._write_units,
                write_units_cancelled=self._write_units_cancelled,
                read_units_consumed=self._read_units,
                in_flight_transactions=len(holding),
                read_transactions_committed=self._read_committed,
                read_transactions_cancelled=dict(self._read_cancelled),
            )

    # ------------------------------------------------------------------ internals (under the lock)
    def _now(self, now: float | None) -> float:
        return self._clock() if now is None else now

    def _latency(self, operation: str, item_count: int) -> float:
        if not self.settings.latency:
            return 0.0
        return sample_latency_s(operation, item_count, self._rng)

    def _transaction(
        self, operation: str, items: Sequence[ItemWrite], now: float | None, until_finished: bool
    ) -> Decision:
        with self._lock:
            start = self._now(now)
            latency = self._latency(operation, len(items))
            if not self._take_writes(items, start):
                position = self._first_short_position(items, start)
                return self._throttled_transaction(operation, len(items), position, latency, start)
            units = sum(item.write_units for item in items)
            self._write_units += units
            held = self._held_positions([item.item_key for item in items], start)
            if held:
                self._cancelled[TRANSACTION_CONFLICT] += 1
                self._write_units_cancelled += units
                reasons = tuple(TRANSACTION_CONFLICT if i in held else None for i in range(len(items)))
                return Decision(Verdict.CONFLICT, operation, reasons, latency, start, units=units)
            transaction_id = next(self._ids)
            hold_until = math.inf if until_finished else start + latency
            for item in items:
                self._holds[item.item_key] = (transaction_id, hold_until)
            self._mark_readers(item.item_key for item in items)
            self._committed += 1
            if transaction_id % PURGE_EVERY == 0:
                self._purge_holds(start)
            decision = Decision(
                Verdict.ADMITTED,
                operation,
                (None,) * len(items),
                latency,
                start,
                hold_until=start + latency,
                transaction_id=transaction_id,
                units=units,
                item_keys=tuple(item.item_key for item in items),
                open_ended=until_finished,
            )
            if until_finished:
                self._open[transaction_id] = decision
            return decision

    def _throttled_transaction(
        self, operation: str, count: int, position: int, latency: float, start: float
    ) -> Decision:
        self._throttled += 1
        self._cancelled[THROTTLING_ERROR] += 1
        reasons = tuple(THROTTLING_ERROR if i == position else None for i in range(count))
        return Decision(Verdict.THROTTLED, operation, reasons, latency, start)

    def _held_positions(self, item_keys: Sequence[str], now: float) -> set[int]:
        held = set()
        for position, key in enumerate(item_keys):
            hold = self._holds.get(key)
            if hold is not None:
                if hold[1] > now:
                    held.add(position)
                else:
                    del self._holds[key]
        return held

    def _purge_holds(self, now: float) -> None:
        """Drops expired holds (most item keys, e.g. reservation records, are written once)."""
        for key, (_, until) in list(self._holds.items()):
            if until <= now:
                del self._holds[key]
        for key, written_until in list(self._single_writes.items()):
            if written_until <= now:
                del self._single_writes[key]

    def _written_positions(self, item_keys: Sequence[str], now: float) -> set[int]:
        """Positions of the items a single-item write is changing at `now`."""
        return {position for position, key in enumerate(item_keys) if self._single_writes.get(key, now) > now}

    def _mark_readers(self, item_keys: Iterable[str]) -> None:
        """A write starts on `item_keys`: the transactional reads in flight on them will be cancelled."""
        for key in item_keys:
            for read_id in self._readers.get(key, ()):
                keys, written = self._reads[read_id]
                written.add(keys.index(key))

    def _bucket(self, buckets: dict[str, _Bucket], key: str, rate: float, now: float) -> _Bucket:
        bucket = buckets.get(key)
        if bucket is None:
            bucket = buckets[key] = _Bucket(rate, self.settings.burst_s, now)
        bucket.refill(now)
        return bucket

    def _write_demand(self, items: Iterable[ItemWrite]) -> dict[str, float]:
        demand: dict[str, float] = {}
        for item in items:
            demand[item.partition_key] = demand.get(item.partition_key, 0.0) + item.write_units
        return demand

    def _take_writes(self, items: Sequence[ItemWrite], now: float) -> bool:
        """Takes the items' units from their partitions' (and the table's) buckets, all or none."""
        demand = self._write_demand(items)
        buckets = [
            (self._bucket(self._write_buckets, key, self.settings.write_units_per_s, now), units)
            for key, units in demand.items()
        ]
        if self.settings.table_write_units_per_s is not None:
            if self._table_bucket is None:
                self._table_bucket = _Bucket(
                    self.settings.table_write_units_per_s, self.settings.burst_s, now
                )
            self._table_bucket.refill(now)
            buckets.append((self._table_bucket, sum(demand.values())))
        if any(bucket.tokens < units for bucket, units in buckets):
            return False
        for bucket, units in buckets:
            bucket.tokens -= units
        return True

    def _first_short_position(self, items: Sequence[ItemWrite], now: float) -> int:
        """The first action whose partition (or the table) lacked the units, for its reason."""
        demand = self._write_demand(items)
        table_short = self._table_bucket is not None and self._table_bucket.tokens < sum(demand.values())
        for position, item in enumerate(items):
            bucket = self._write_buckets[item.partition_key]
            if table_short or bucket.tokens < demand[item.partition_key]:
                return position
        return 0

    def _take_reads(self, items: Sequence[ItemRead], now: float) -> int | None:
        """Takes the reads' units, all or none; the first short position, or None when taken."""
        demand: dict[str, float] = {}
        for item in items:
            demand[item.partition_key] = demand.get(item.partition_key, 0.0) + item.read_units
        buckets = {
            key: self._bucket(self._read_buckets, key, self.settings.read_units_per_s, now) for key in demand
        }
        for position, item in enumerate(items):
            if buckets[item.partition_key].tokens < demand[item.partition_key]:
                return position
        for key, units in demand.items():
            buckets[key].tokens -= units
        self._read_units += sum(demand.values())
        return None
