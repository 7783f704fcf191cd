"""DynamoDB's contention on AWS, as a pure model: conflicts, per-partition throughput and latency.

No I/O and no global state: time comes from an injectable clock (or an explicit `now`), random
draws from an injectable `random.Random`. The local stack's proxy (`seat_tools.contention.proxy`)
drives it on the wall clock; the simulation drives it on a virtual one. docs/explanation/contention.md says
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
    model.counters()      # a ContentionCounters snapshot (partitions, splits, throttles by limit too)
    write_units(size_bytes, transactional=...), read_units(size_bytes, ...)  # AWS's unit rules

Semantics, each from AWS's documentation or stated as an assumption (sources in
docs/explanation/contention.md):

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
- Throughput. A table has physical partitions, each with a token bucket of write units
  (`write_units_per_s`, default 1,000) and one of read units (`read_units_per_s`, 3,000), each
  holding at most `burst_s` seconds of its rate (default 1 s: AWS documents that burst capacity
  "can't alleviate partition-level throttling"). Their number comes from the table's warm
  throughput (`warm_write_units_per_s` 4,000 and `warm_read_units_per_s` 12,000 by default, a
  new on-demand table's): ceil(max(warm write / 1,000, warm read / 3,000)), 4 by default, or
  `partitions` (PER_KEY: one per partition key, the model before warm throughput). Partition keys
  are hashed (`key_hash`) onto equal ranges of a 64-bit key space, so keys on one partition share
  its units, and one key never has more than its partition. Table-wide buckets model the
  account's per-table on-demand quota (`table_quota_units_per_s`, 40,000 for reads and for
  writes each) and the table's OnDemandThroughput (`max_write_request_units`,
  `max_read_request_units`; none by default). Growth: a partition whose traffic stays at half
  its units or more in every second for `growth_window_s` (30 min) splits in two halves of its
  range (on-demand grows to double the previous peak within 30 minutes; when within the window
  is not documented, so the model takes the whole window). A request whose units are not all
  in its tables' and partitions' buckets is throttled and consumes nothing (AWS: throttling keeps
  a request from consuming capacity): a transaction is cancelled with "ThrottlingError" at the
  position of the first item of the short table or partition, a single-item request gets
  ProvisionedThroughputExceededException; `Decision.throttled_by` names the limit
  (THROTTLED_KEY_RANGE, THROTTLED_ACCOUNT_LIMIT or THROTTLED_MAX_ON_DEMAND, AWS's LimitType).
  Each table (`ItemWrite.table`) has its own partitions and limits.
- Units. Writes cost 1 unit per KB of item, transactional writes 2 per KB; strongly consistent
  reads 1 per 4 KB (eventually consistent half that), transactional reads 2 per 4 KB. A
  transaction cancelled by a conflict or a failed condition is charged its units (AWS does not
  document it; a failed conditional write is charged, so the model assumes the same), and they
  are counted as wasted (`write_units_cancelled`), as are the units of a single-item write
  refused by a conflict or whose condition failed (`finish(write, cancelled_by=...)`); a
  cancelled `TransactGetItems` is likewise assumed to be charged its read units.
- Latency. Per operation, the whole distribution Alex DeBrie measured from Lambda (4,000 calls
  each: min, p50, p90, p95, p99, max): single-item operations as PutItem's 5.47 / 7.55 / 11.3 /
  13.2 / 16.2 / 29 ms (measured for PutItem; assumed for the others); `TransactWriteItems` and
  `TransactGetItems` with n items each quantile linear in n through 5 items (19.4 / 25.3 / 30.7 /
  36.4 / 92.5 / 218 ms) and 25 (23.5 / 32.1 / 40.5 / 47.2 / 97.5 / 258 ms), extrapolated beyond
  (100 items: 38.9 / 57.6 / 77.2 / 87.7 / 116 / 408 ms; no public figure exists for more than
  25). A draw takes a standard normal z and joins the quantiles' logarithms by straight lines in
  z (`latency_at_ms`): a log-normal body and the measured tail, never past the measured minimum
  and maximum.
- Time scale. `time_scale` stretches the model onto the wall clock: a proxy run at scale s
  reads the model's time as wall time / s and sleeps s x each modelled latency, so every rate
  this 2-core machine can drive meets the same contention as s times that rate on AWS.
  `wall_seconds()` converts. The model itself only ever sees model seconds.
"""

from __future__ import annotations

import bisect
import dataclasses
import enum
import functools
import hashlib
import itertools
import math
import random
import statistics
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
# The same measurements' whole distribution (alexdebrie/dynamodb-performance-testing, its table of
# min, p50, p90, p95, p99 and max over 4,000 calls each: 400 invocations of 10): its tail is far
# heavier than a log-normal through p50 and p90 (TransactWriteItems of 5 items: p99 92.5 ms, max
# 218 ms, where the log-normal gives 36 and 45).
LATENCY_CALLS_MEASURED = 4000
LATENCY_SHARES = (1 / LATENCY_CALLS_MEASURED, 0.5, 0.9, 0.95, 0.99, 1 - 1 / LATENCY_CALLS_MEASURED)
SINGLE_ITEM_QUANTILES_MS = (5.47, 7.55, 11.3, 13.2, 16.2, 29.0)  # PutItem
TRANSACTION_QUANTILES_MS = (
    (5, (19.4, 25.3, 30.7, 36.4, 92.5, 218.0)),
    (25, (23.5, 32.1, 40.5, 47.2, 97.5, 258.0)),
)
TRANSACTIONAL_OPERATIONS = frozenset({"TransactWriteItems", "TransactGetItems"})
SINGLE_WRITE_OPERATIONS = frozenset({"PutItem", "UpdateItem", "DeleteItem"})
PURGE_EVERY = 4096

# AWS's figures (sources in docs/explanation/contention.md): a physical partition serves at most 1,000 write
# and 3,000 read units per second; a new on-demand table serves 4,000 write and 12,000 read units
# per second at once (its warm throughput); the account's per-table on-demand quota is 40,000
# read and 40,000 write request units per second; on-demand grows to double the previous peak
# within 30 minutes.
PARTITION_WRITE_UNITS_PER_S = 1000.0
PARTITION_READ_UNITS_PER_S = 3000.0
NEW_TABLE_WARM_WRITE_UNITS_PER_S = 4000.0
NEW_TABLE_WARM_READ_UNITS_PER_S = 12000.0
TABLE_QUOTA_UNITS_PER_S = 40000.0
GROWTH_WINDOW_S = 1800.0
# A partition is hot in a second when its traffic reaches this share of its units: twice its
# peak is then more than it has, so growth to double the peak needs it split.
HOT_SHARE = 0.5
PER_KEY = 0  # ContentionSettings.partitions: one partition per partition key
KEY_SPACE = 2**64
# The LimitType of AWS's ThrottlingReason (TableWrite<LimitType>, TableRead<LimitType>).
THROTTLED_KEY_RANGE = "KeyRangeThroughputExceeded"
THROTTLED_ACCOUNT_LIMIT = "AccountLimitExceeded"
THROTTLED_MAX_ON_DEMAND = "MaxOnDemandThroughputExceeded"
# A global secondary index's throttling of its table's writes names the index and the limit in
# full (AWS's ThrottlingReason, ResourceType + OperationType + LimitType).
INDEX_WRITE = "IndexWrite"
INDEX_THROTTLING_REASONS = frozenset(
    INDEX_WRITE + limit for limit in (THROTTLED_KEY_RANGE, THROTTLED_ACCOUNT_LIMIT, THROTTLED_MAX_ON_DEMAND)
)


class Verdict(enum.Enum):
    """What the model decides for a request, before the engine applies it."""

    ADMITTED = "admitted"
    CONFLICT = "conflict"
    THROTTLED = "throttled"


@dataclass(frozen=True, slots=True)
class ContentionSettings:
    """The layer's settings; the defaults are AWS's documented figures for a new on-demand table."""

    write_units_per_s: float = PARTITION_WRITE_UNITS_PER_S  # per physical partition
    read_units_per_s: float = PARTITION_READ_UNITS_PER_S  # per physical partition
    burst_s: float = 1.0
    # The table's warm throughput: what it serves at once; it decides the partitions.
    warm_write_units_per_s: float = NEW_TABLE_WARM_WRITE_UNITS_PER_S
    warm_read_units_per_s: float = NEW_TABLE_WARM_READ_UNITS_PER_S
    # None: ceil(max(warm write / write_units_per_s, warm read / read_units_per_s)); PER_KEY (0):
    # every partition key on a partition of its own (no key shares another's units).
    partitions: int | None = None
    # The account's per-table on-demand quota, for reads and for writes each (None: none).
    table_quota_units_per_s: float | None = TABLE_QUOTA_UNITS_PER_S
    # The table's OnDemandThroughput (None: no maximum, the template's -1).
    max_write_request_units: float | None = None
    max_read_request_units: float | None = None
    # A partition whose traffic stays at or above half its units for this long splits in two:
    # on-demand growth to double the previous peak within 30 minutes (None: no growth).
    growth_window_s: float | None = GROWTH_WINDOW_S
    # Each global secondary index's own warm throughput (a new index's: 4,000 write and 12,000
    # read units per second), which decides its own partitions; each index also has the per-table
    # quota of its own (AccountLimitExceeded names the index). An index that cannot take a write
    # throttles the table's write that makes it.
    index_warm_write_units_per_s: float = NEW_TABLE_WARM_WRITE_UNITS_PER_S
    index_warm_read_units_per_s: float = NEW_TABLE_WARM_READ_UNITS_PER_S
    time_scale: float = 1.0
    latency: bool = True

    def __post_init__(self) -> None:
        for name in (
            "write_units_per_s",
            "read_units_per_s",
            "burst_s",
            "time_scale",
            "warm_write_units_per_s",
            "warm_read_units_per_s",
            "index_warm_write_units_per_s",
            "index_warm_read_units_per_s",
        ):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be positive, not {getattr(self, name)!r}")
        for name in (
            "table_quota_units_per_s",
            "max_write_request_units",
            "max_read_request_units",
            "growth_window_s",
        ):
            value = getattr(self, name)
            if value is not None and not value > 0:
                raise ValueError(f"{name} must be positive or None, not {value!r}")
        if self.partitions is not None and self.partitions < 0:
            raise ValueError(
                f"partitions must be PER_KEY (0), a positive count or None, not {self.partitions}"
            )

    @property
    def per_key(self) -> bool:
        """Every partition key on a partition of its own (the model before warm throughput)."""
        return self.partitions == PER_KEY

    def initial_partitions(self) -> int:
        """The table's physical partitions at the start (0 with PER_KEY)."""
        if self.partitions is not None:
            return self.partitions
        return partitions_for(
            self.warm_write_units_per_s,
            self.warm_read_units_per_s,
            write_units_per_partition=self.write_units_per_s,
            read_units_per_partition=self.read_units_per_s,
        )

    def table_limit(self, *, write: bool) -> tuple[float, str] | None:
        """The table-wide units per second and the throttling reason past them, or None."""
        maximum = self.max_write_request_units if write else self.max_read_request_units
        quota = self.table_quota_units_per_s
        if maximum is not None and (quota is None or maximum <= quota):
            return maximum, THROTTLED_MAX_ON_DEMAND
        if quota is not None:
            return quota, THROTTLED_ACCOUNT_LIMIT
        return None

    def for_index(self) -> ContentionSettings:
        """The settings a global secondary index of the table has: its own warm throughput and
        partitions (one per key when the table's are), the per-table quota, no maximum."""
        return dataclasses.replace(
            self,
            warm_write_units_per_s=self.index_warm_write_units_per_s,
            warm_read_units_per_s=self.index_warm_read_units_per_s,
            partitions=PER_KEY if self.per_key else None,
            max_write_request_units=None,
            max_read_request_units=None,
        )

    def wall_seconds(self, model_seconds: float) -> float:
        """Wall-clock seconds that `model_seconds` take at this time scale."""
        return model_seconds * self.time_scale

    def describe_table(self) -> str:
        """The table's throughput as modelled, in one line (no time scale)."""
        if self.per_key:
            layout = (
                f"every partition key on its own partition of {self.write_units_per_s:,.0f} WCU/s and"
                f" {self.read_units_per_s:,.0f} RCU/s"
            )
        else:
            count = self.initial_partitions()
            if self.partitions is not None:
                derived = "set"
            else:
                derived = (
                    f"from warm throughput {self.warm_write_units_per_s:,.0f} WCU/s"
                    f" and {self.warm_read_units_per_s:,.0f} RCU/s"
                )
            layout = (
                f"{count} partition{'s' if count != 1 else ''} ({derived}) of"
                f" {self.write_units_per_s:,.0f} WCU/s and {self.read_units_per_s:,.0f} RCU/s,"
                " partition keys hashed onto them"
            )
        limits = []
        for write, kind in ((True, "write"), (False, "read")):
            limit = self.table_limit(write=write)
            if limit is None:
                limits.append(f"no table {kind} limit")
            else:
                name = "quota" if limit[1] == THROTTLED_ACCOUNT_LIMIT else "OnDemandThroughput maximum"
                limits.append(f"table {kind} {name} {limit[0]:,.0f}/s")
        growth = (
            f"a partition at half its units or more for {self.growth_window_s / 60:g} min splits in two"
            if self.growth_window_s is not None and not self.per_key
            else "no growth"
        )
        return f"{layout}, burst {self.burst_s:g} s; {', '.join(limits)}; {growth}"

    def describe(self) -> str:
        """One line for the logs of every run."""
        latency = "published latencies" if self.latency else "no added latency"
        return (
            f"AWS contention: {self.describe_table()}; {latency}; "
            f"time scale x{self.time_scale:g} (wall seconds per modelled second: latencies "
            f"x{self.time_scale:g}, unit rates /{self.time_scale:g})"
        )


def partitions_for(
    warm_write_units_per_s: float,
    warm_read_units_per_s: float,
    *,
    write_units_per_partition: float = PARTITION_WRITE_UNITS_PER_S,
    read_units_per_partition: float = PARTITION_READ_UNITS_PER_S,
) -> int:
    """Physical partitions a table warmed to these units per second has: each serves at most
    `write_units_per_partition` and `read_units_per_partition`."""
    return max(
        1,
        math.ceil(warm_write_units_per_s / write_units_per_partition),
        math.ceil(warm_read_units_per_s / read_units_per_partition),
    )


@functools.lru_cache(maxsize=1 << 16)
def key_hash(partition_key: str) -> int:
    """Where a partition key falls in the table's 64-bit key space (stable across runs)."""
    return int.from_bytes(hashlib.blake2b(partition_key.encode(), digest_size=8).digest(), "big")


@dataclass(frozen=True, slots=True)
class ItemWrite:
    """One item a write touches: its partition key, a key unique in the model, its units, and its
    table (each table has its own partitions and limits)."""

    partition_key: str
    item_key: str
    write_units: float
    table: str = ""


@dataclass(frozen=True, slots=True)
class ItemRead:
    partition_key: str
    item_key: str
    read_units: float
    table: str = ""


@dataclass(frozen=True, slots=True)
class IndexWrite:
    """A write a global secondary index makes for one item of a table's write: the index, the
    item's position in the request, the index's partition key and its units (an index entry
    under 1 KB: 1; its projection is written, never transactionally)."""

    index: str
    position: int
    partition_key: str
    write_units: float = 1.0


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
    throttled_by: str | None = None  # THROTTLED_KEY_RANGE, _ACCOUNT_LIMIT or _MAX_ON_DEMAND
    throttled_index: str | None = None  # the index that refused the write (throttled_by: IndexWrite...)

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
    throttled_by: dict[str, int] = field(default_factory=dict)  # throttled requests by limit
    partitions: dict[str, int] = field(default_factory=dict)  # table -> partitions now (keys if PER_KEY)
    partition_splits: int = 0
    index_write_units_consumed: float = 0.0  # taken from the indexes' capacity (billed when written)

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
            "throttled_by": dict(self.throttled_by),
            "partitions": dict(self.partitions),
            "partition_splits": self.partition_splits,
            "index_write_units_consumed": self.index_write_units_consumed,
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


def latency_table_ms(operation: str, item_count: int = 1) -> tuple[float, ...]:
    """The published quantiles (min, p50, p90, p95, p99, max; `LATENCY_SHARES`) in milliseconds the
    model draws `operation` on `item_count` items from: single-item operations as PutItem (measured
    for PutItem; assumed for the others); transactions of n items each quantile linear in n
    through 5 and 25 items, extrapolated beyond (no public figure exists past 25)."""
    if operation not in TRANSACTIONAL_OPERATIONS:
        return SINGLE_ITEM_QUANTILES_MS
    return _transaction_table(max(1, item_count))


@functools.lru_cache(maxsize=256)
def _transaction_table(item_count: int) -> tuple[float, ...]:
    (n0, low), (n1, high) = TRANSACTION_QUANTILES_MS
    fraction = (item_count - n0) / (n1 - n0)
    return tuple(a + fraction * (b - a) for a, b in zip(low, high, strict=True))


def latency_quantiles_ms(operation: str, item_count: int = 1) -> tuple[float, float]:
    """The (p50, p90) in milliseconds of the distribution the model draws `operation` from."""
    table = latency_table_ms(operation, item_count)
    return table[1], table[2]


_Z_KNOTS = tuple(statistics.NormalDist().inv_cdf(share) for share in LATENCY_SHARES)


def latency_at_ms(table: Sequence[float], z: float) -> float:
    """The latency at the standard normal quantile `z`: the published quantiles, their logarithms
    joined by straight lines in z (a log-normal between two of them), never below the minimum or
    above the maximum measured."""
    if z <= _Z_KNOTS[0]:
        return table[0]
    if z >= _Z_KNOTS[-1]:
        return table[-1]
    upper = bisect.bisect_right(_Z_KNOTS, z)
    z0, z1 = _Z_KNOTS[upper - 1], _Z_KNOTS[upper]
    log0, log1 = math.log(table[upper - 1]), math.log(table[upper])
    return math.exp(log0 + (z - z0) / (z1 - z0) * (log1 - log0))


def sample_latency_s(operation: str, item_count: int, rng: random.Random) -> float:
    """One draw, in seconds, from the operation's published distribution (`latency_at_ms`)."""
    return latency_at_ms(latency_table_ms(operation, item_count), rng.gauss(0.0, 1.0)) / 1000.0


@functools.lru_cache(maxsize=256)
def mean_latency_ms(operation: str, item_count: int = 1) -> float:
    """The mean of the distribution `sample_latency_s` draws from (numerically, over z)."""
    table = latency_table_ms(operation, item_count)
    normal = statistics.NormalDist()
    steps = 4000
    low, high = -6.0, 6.0
    width = (high - low) / steps
    return sum(
        latency_at_ms(table, low + (i + 0.5) * width) * normal.pdf(low + (i + 0.5) * width) * width
        for i in range(steps)
    )


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


class _Partition:
    """A physical partition: the keys whose hash falls in [low, high), its write and read units
    (each bucket made at its first use: one partition per key can mean a million of them), and
    how long its traffic has stayed at half its units or more (for growth)."""

    __slots__ = (
        "burst_s",
        "high",
        "hot_since",
        "low",
        "read",
        "read_rate",
        "second",
        "second_reads",
        "second_writes",
        "write",
        "write_rate",
    )

    def __init__(
        self, low: int, high: int, settings: ContentionSettings, now: float, *, like: _Partition | None = None
    ) -> None:
        self.low = low
        self.high = high
        self.write_rate = settings.write_units_per_s
        self.read_rate = settings.read_units_per_s
        self.burst_s = settings.burst_s
        self.write: _Bucket | None = None
        self.read: _Bucket | None = None
        if like is not None:  # a split: each half keeps what the whole had left
            self.bucket(True, now).tokens = min(self.write_rate * self.burst_s, like.bucket(True, now).tokens)
            self.bucket(False, now).tokens = min(
                self.read_rate * self.burst_s, like.bucket(False, now).tokens
            )
        self.second = math.floor(now)
        self.second_writes = 0.0
        self.second_reads = 0.0
        self.hot_since: float | None = None

    def bucket(self, write: bool, now: float) -> _Bucket:
        """The write (or read) bucket, refilled to `now`."""
        bucket = self.write if write else self.read
        if bucket is None:
            bucket = _Bucket(self.write_rate if write else self.read_rate, self.burst_s, now)
            if write:
                self.write = bucket
            else:
                self.read = bucket
        bucket.refill(now)
        return bucket

    def observe(self, now: float, write_units: float, read_units: float) -> float | None:
        """Counts units taken at `now`; the time since when the partition has been hot, or None.

        A second is hot when the partition's units in it reach HOT_SHARE of its rate (write or
        read); a cold or idle second ends the streak.
        """
        second = math.floor(now)
        if second != self.second:
            hot = (
                self.second_writes >= HOT_SHARE * self.write_rate
                or self.second_reads >= HOT_SHARE * self.read_rate
            )
            if hot and second == self.second + 1:
                if self.hot_since is None:
                    self.hot_since = float(self.second)
            else:
                self.hot_since = None
            self.second = second
            self.second_writes = 0.0
            self.second_reads = 0.0
        self.second_writes += write_units
        self.second_reads += read_units
        return self.hot_since


class _Table:
    """One table's (or global secondary index's) partitions (key ranges, or one per key with
    PER_KEY) and table-wide limits."""

    def __init__(
        self, settings: ContentionSettings, now: float, *, name: str = "", index: str | None = None
    ) -> None:
        self.name = name
        self.index = index  # the index's name, for an index
        self.settings = settings
        self.per_key: dict[str, _Partition] | None = {} if settings.per_key else None
        count = settings.initial_partitions() if not settings.per_key else 0
        bounds = [index * KEY_SPACE // count for index in range(count)] + [KEY_SPACE] if count else []
        self.partitions = [_Partition(bounds[i], bounds[i + 1], settings, now) for i in range(count)]
        self.lows = [p.low for p in self.partitions]
        self.limits: dict[bool, tuple[_Bucket, str]] = {}
        for write in (True, False):
            limit = settings.table_limit(write=write)
            if limit is not None:
                self.limits[write] = (_Bucket(limit[0], settings.burst_s, now), limit[1])
        self.splits = 0

    def reason(self, limit: str) -> str:
        """The throttling reason past `limit` (a LimitType): the table's, or the index's in full."""
        return limit if self.index is None else INDEX_WRITE + limit

    def partition(self, partition_key: str, now: float) -> _Partition:
        if self.per_key is not None:
            found = self.per_key.get(partition_key)
            if found is None:
                found = self.per_key[partition_key] = _Partition(0, 0, self.settings, now)
            return found
        return self.partitions[bisect.bisect_right(self.lows, key_hash(partition_key)) - 1]

    def count(self) -> int:
        return len(self.per_key) if self.per_key is not None else len(self.partitions)

    def observe(self, partition: _Partition, now: float, write_units: float, read_units: float) -> None:
        """Counts the units; splits the partition once it has been hot for the growth window."""
        window = self.settings.growth_window_s
        if self.per_key is not None or window is None:
            return
        hot_since = partition.observe(now, write_units, read_units)
        if hot_since is None or now - hot_since < window or partition.high - partition.low < 2:
            return
        middle = (partition.low + partition.high) // 2
        index = self.partitions.index(partition)
        halves = [
            _Partition(partition.low, middle, self.settings, now, like=partition),
            _Partition(middle, partition.high, self.settings, now, like=partition),
        ]
        self.partitions[index : index + 1] = halves
        self.lows[index : index + 1] = [partition.low, middle]
        self.splits += 1


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
        self._tables: dict[str, _Table] = {}
        self._throttled_by: Counter[str] = Counter()
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
        self._index_units = 0.0

    # ------------------------------------------------------------------ public
    def now(self) -> float:
        """The model's time (seconds) by its clock."""
        return self._clock()

    def transact_write(
        self,
        items: Sequence[ItemWrite],
        *,
        now: float | None = None,
        until_finished: bool = False,
        index_writes: Sequence[IndexWrite] = (),
    ) -> Decision:
        """A `TransactWriteItems` on `items` (in request order) starting at `now`; `index_writes`:
        what its items write to the table's global secondary indexes."""
        return self._transaction("TransactWriteItems", items, now, until_finished, index_writes)

    def write_item(
        self,
        item: ItemWrite,
        *,
        operation: str = "PutItem",
        now: float | None = None,
        index_writes: Sequence[IndexWrite] = (),
    ) -> Decision:
        """A single-item write (PutItem, UpdateItem or DeleteItem)."""
        with self._lock:
            start = self._now(now)
            latency = self._latency(operation, 1)
            short = self._take([item], start, write=True, index_writes=index_writes)
            if short is not None:
                self._throttled += 1
                self._throttled_by[short[1]] += 1
                return Decision(
                    Verdict.THROTTLED,
                    operation,
                    (THROTTLING_ERROR,),
                    latency,
                    start,
                    throttled_by=short[1],
                    throttled_index=short[2],
                )
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
            short = self._take(items, start, write=False)
            if short is not None:
                self._throttled += 1
                self._throttled_by[short[1]] += 1
                reasons = tuple(THROTTLING_ERROR if i == short[0] else None for i in range(len(items)))
                return Decision(Verdict.THROTTLED, operation, reasons, latency, start, throttled_by=short[1])
            units = sum(item.read_units for item in items)
            self._read_units += units
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
            short = self._take(items, start, write=False)
            if short is not None:
                self._throttled += 1
                self._throttled_by[short[1]] += 1
                self._read_cancelled[THROTTLING_ERROR] += 1
                reasons = tuple(THROTTLING_ERROR if i == short[0] else None for i in range(len(items)))
                return Decision(Verdict.THROTTLED, operation, reasons, latency, start, throttled_by=short[1])
            units = sum(item.read_units for item in items)
            self._read_units += units
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
                throttled_by=dict(self._throttled_by),
                partitions={
                    name: table.count() for name, table in self._tables.items() if table.index is None
                },
                partition_splits=sum(table.splits for table in self._tables.values()),
                index_write_units_consumed=self._index_units,
            )

    # ------------------------------------------------------------------ internals (under the lock)
    def _now(self, now: float | None) -> float:
        return self._clock() if now is None else now

    def _latency(self, operation: str, item_count: int) -> float:
        if not self.settings.latency:
            return 0.0
        return sample_latency_s(operation, item_count, self._rng)

    def _transaction(
        self,
        operation: str,
        items: Sequence[ItemWrite],
        now: float | None,
        until_finished: bool,
        index_writes: Sequence[IndexWrite] = (),
    ) -> Decision:
        with self._lock:
            start = self._now(now)
            latency = self._latency(operation, len(items))
            short = self._take(items, start, write=True, index_writes=index_writes)
            if short is not None:
                return self._throttled_transaction(operation, len(items), short, latency, start)
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
        self, operation: str, count: int, short: tuple[int, str, str | None], latency: float, start: float
    ) -> Decision:
        position, limit, index = short
        self._throttled += 1
        self._throttled_by[limit] += 1
        self._cancelled[THROTTLING_ERROR] += 1
        reasons = tuple(THROTTLING_ERROR if i == position else None for i in range(count))
        return Decision(
            Verdict.THROTTLED, operation, reasons, latency, start, throttled_by=limit, throttled_index=index
        )

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

    def _table(self, name: str, now: float) -> _Table:
        table = self._tables.get(name)
        if table is None:
            table = self._tables[name] = _Table(self.settings, now, name=name)
        return table

    def _index(self, table: str, index: str, now: float) -> _Table:
        """A global secondary index of `table`: partitions and limits of its own."""
        name = f"{table}#{index}"
        found = self._tables.get(name)
        if found is None:
            found = self._tables[name] = _Table(self.settings.for_index(), now, name=name, index=index)
        return found

    def _take(
        self,
        items: Sequence[ItemWrite | ItemRead],
        now: float,
        *,
        write: bool,
        index_writes: Sequence[IndexWrite] = (),
    ) -> tuple[int, str, str | None] | None:
        """Takes the items' units from their tables' limits and their partitions, and the index
        writes' from their indexes', all or none.

        None when taken; else the position of the first item whose table (checked first),
        partition, or index lacked the units, the limit that did (THROTTLED_..., or for an index
        INDEX_WRITE + it, AWS's reason) and the index. A throttled request takes nothing: AWS's
        throttling keeps a request from consuming capacity.
        """
        tables: _Sums = {}
        partitions: _PartitionSums = {}
        for position, item in enumerate(items):
            units = item.write_units if isinstance(item, ItemWrite) else item.read_units
            table = self._table(item.table, now)
            self._count(tables, partitions, table, item.partition_key, units, position, now)
        indexes: _Sums = {}
        index_partitions: _PartitionSums = {}
        for entry in index_writes:
            table_name = items[entry.position].table if entry.position < len(items) else ""
            index = self._index(table_name, entry.index, now)
            self._count(
                indexes, index_partitions, index, entry.partition_key, entry.write_units, entry.position, now
            )
        short = _short(tables, partitions, write, now) or _short(indexes, index_partitions, True, now)
        if short is not None:
            return short
        _spend(tables, partitions, write, now)
        self._index_units += _spend(indexes, index_partitions, True, now)
        return None

    @staticmethod
    def _count(
        tables: dict[str, tuple[_Table, list[float], int]],
        partitions: dict[int, tuple[_Table, _Partition, list[float], int]],
        table: _Table,
        partition_key: str,
        units: float,
        position: int,
        now: float,
    ) -> tuple[_Table, list[float], int]:
        """Adds `units` to the table's and the key's partition's sums (first position kept)."""
        key = table.name
        entry = tables.get(key)
        if entry is None:
            entry = tables[key] = (table, [0.0], position)
        entry[1][0] += units
        partition = table.partition(partition_key, now)
        part = partitions.get(id(partition))
        if part is None:
            part = partitions[id(partition)] = (table, partition, [0.0], position)
        part[2][0] += units
        return entry


_Sums = dict[str, tuple[_Table, list[float], int]]
_PartitionSums = dict[int, tuple[_Table, _Partition, list[float], int]]


def _short(
    tables: _Sums, partitions: _PartitionSums, write: bool, now: float
) -> tuple[int, str, str | None] | None:
    """The first table (then partition) whose bucket lacks its units: (position, limit, index)."""
    for table, (units,), position in tables.values():
        limit = table.limits.get(write)
        if limit is not None and limit[0].refill(now) < units:
            return position, table.reason(limit[1]), table.index
    for table, partition, (units,), position in partitions.values():
        if partition.bucket(write, now).tokens < units:
            return position, table.reason(THROTTLED_KEY_RANGE), table.index
    return None


def _spend(tables: _Sums, partitions: _PartitionSums, write: bool, now: float) -> float:
    """Takes the units from every table's limit and partition's bucket; returns the units."""
    spent = 0.0
    for table, (units,), _ in tables.values():
        spent += units
        limit = table.limits.get(write)
        if limit is not None:
            limit[0].tokens -= units
    for table, partition, (units,), _ in partitions.values():
        partition.bucket(write, now).tokens -= units
        table.observe(partition, now, units if write else 0.0, 0.0 if write else units)
    return spent
