"""What an on-sale of a given rate needs from the stack, and the rate a deployed stack's settings allow.

Pure arithmetic, no AWS calls: `plan_sale` answers `seats onsale plan`, `assess_stack` answers
`seats onsale check` from the settings `onsale.stack_reader` reads. Every figure carries its rule;
docs/guides/size-a-sale.md lists the rules with their sources. The rate is reservations per
second at the sale's peak, all confirmed (the most write units a reservation costs), one message
each; the same rules give both directions (what a rate needs, what a setting allows), so the plan
and the check agree.

The rules, in short:

- The function's time per batch (modelled): the handler's CPU as measured on the real handler
  (`simulation.measured_cpu`, `scripts/measure_function_cpu.py`) at the share of a vCPU its
  memory gives (one vCPU at 1,769 MB), plus its transactions' mean latency (published latencies,
  `bench.ceiling`) and its answers' `PublishBatch` calls, 10 at once (the mean of the slowest of
  each round, on the simulation's assumed latency). The plan
  gives the reserve function 1,769 MB: the handler is mostly CPU and Python uses one vCPU at
  most, so less memory only makes each batch slower for about the same cost.
- Containers = rate / (a batch / its time); each seat class needs K >= that many shard items
  (at most 64): with fewer items than containers, containers share items and conflict.
- Event pollers (provisioned mode): each delivers at most about 100 messages a second (10
  `ReceiveMessage` calls of 10: the Lambda developer guide), and runs at most 10 invocations.
  `MinimumPollers` is at most 200, so a mapping receives at most 20,000 messages a second from
  the first message; above that AWS adds pollers up to `MaximumPollers` as the backlog grows, at
  most 1,000 concurrency (100 pollers) a minute (`event_source_scaling`).
- Write units per confirmed reservation on the table: its record (2) and its share of the
  inventory update (2 / 99), 2 more with a per-customer limit; the ticket issuer's numbering adds
  2 + 17/98 per numbered sale, at the rate it numbers. The TicketsToIssue index takes the sale's
  entry (1) and, as sales are numbered, their removal and the ledger's outbox (1 + 2/98), on its
  own warm throughput. Read units per refused request after the sell-out: one consistent read of
  the class per batch, (1 + 2K) / 99.
- The ticket issuer numbers on at most one vCPU a lane (its memory's share; Python runs one
  thread of CPU at a time): its measured CPU per sale bounds a lane's rate, about 2,400 a second
  at 1,769 MB. The plan takes the fewest lanes (a power of two, at most 64) that keep each at most
  80% busy, and as many series as lanes or a multiple of it.
- SNS: each answer and each TICKETED outcome is one message against the region's publish quota
  (30,000 a second in us-east-1 by default).
- The table, the index and SNS are kept at most 80% busy (`UTILISATION`, this project's choice);
  the table serves at once its warm throughput, at most its quota and `OnDemandThroughput`.
- The checkout API's stage throttle >= the rate, its burst >= twice the rate; API Gateway's
  account throttle is 10,000 requests a second per region by default.
- Lambda: the function's reserved concurrency, or else the account's unreserved concurrency,
  must hold the containers (the account's default is 1,000 per region).
- Cost: list prices (`bench.pricing`) for what a million confirmed (or refused) reservations
  use, and for a sale of a given length what it sets while it lasts: pre-warming, event pollers,
  provisioned concurrency.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from seat_inventory.dal.items import UNNUMBERED_BUCKETS
from seat_inventory.models import ISSUER_LANE_COUNTS, MAX_ISSUER_LANES, MAX_SHARDS, MAX_TICKET_SERIES
from seat_inventory.publishing.sns_publisher import MAX_CONCURRENT_CALLS, PUBLISH_BATCH_LIMIT
from seat_inventory.settings import MAX_ISSUE_SERIES_AT_ONCE
from seat_tools.bench.ceiling import mean_transaction_latency_s
from seat_tools.bench.pricing import PRICES, CostBreakdown, cost_per_million, pre_warming_usd
from seat_tools.contention.model import SINGLE_ITEM_MS, Z90
from seat_tools.event_source_scaling import (
    INITIAL_CONCURRENT_BATCHES,
    INVOCATIONS_PER_EVENT_POLLER,
    MAX_MAXIMUM_EVENT_POLLERS,
    MAX_MINIMUM_EVENT_POLLERS,
    MESSAGES_PER_EVENT_POLLER_S,
    MIN_EVENT_POLLERS,
    POLLER_CONCURRENCY_PER_MINUTE,
    SCALE_UP_PER_MINUTE,
    event_poller_billed_s,
    poller_ramp_seconds,
    provisioned_concurrency_billed_s,
    scale_up_seconds,
)
from seat_tools.reservation_queues import MAX_RESERVATION_QUEUES
from seat_tools.simulation.api import API_KINDS
from seat_tools.simulation.event_source import LatencyModel
from seat_tools.simulation.measured_cpu import (
    ISSUER_PER_BATCH_MS,
    ISSUER_PER_TICKET_MS,
    LAMBDA_MB_PER_VCPU,
    RESERVE_CPU,
    vcpu_share,
)
from seat_tools.simulation.run import DEFAULT_PUBLISH_MS

# A mapped class (docs/guides/seat-maps.md): one container confirms about 160 best-available
# requests a second in `seats simulate` (`--seat-map examples/seat_maps/stadium.json --containers
# 10 --containers-at-once --seats-per-request 8 --requests 5000 --warm-write-units-per-s 40000`:
# 1,642/s on 10 containers), whose handler CPU was then an assumed 5 ms + 0.05 ms a message; the
# plan adds the measured CPU to that time. A take writes its row item and its record (4 units), and
# a request refused after the sell-out reads about 0.25 units (the stadium's 1,000,000-request run,
# `--containers 64 --seats-per-request 8 --warm-write-units-per-s 40000 --output json`: 242,296
# read units for 984,403 refusals).
SIMULATED_MAPPED_PER_CONTAINER_S = 160
MAPPED_TAKE_WRITE_UNITS = 4.0
MAPPED_READ_UNITS_PER_REFUSAL = 0.25
MAX_RESERVATIONS_PER_TRANSACTION = 99  # the inventory update and at most 99 records in 100 actions
# With a per-customer limit each reservation also updates its customer's counter: 49 per
# transaction (98 actions and the inventory update).
MAX_LIMITED_RESERVATIONS_PER_TRANSACTION = 49
TEMPLATE_BATCH_SIZE = 99  # template.yaml's BatchSize default
# A batch the plan picks for a counted class when the class's shard items can take the rate in
# batches that small: an event poller receives about 100 messages a second, so a batch of 30 is
# gathered in about 0.3 s where one of 99 waits about a second. The published figure
# `plan-20000-offered` (docs/reference/figures.md, 5 seeds): p99 answer 0.63-0.66 s in batches of
# 30; in 99, 2.03-2.13 s (5 seeds, with the CPU measured before the SNS bodies were encoded once,
# when 30 gave 0.70-0.74 s).
QUICK_BATCH_SIZE = 30
# A batch the plan picks when batches of 99 would keep more than `UTILISATION` of a class's shard
# items busy (containers past that share items and conflict): two parts of 99, each part's answers
# published while the next is written (`logic.reserve_seats`), gathered in about 2 s
# (`PARTS_BATCHING_WINDOW_S`), so a poller's batches come half as often: its event pollers are
# kept at most `PARTS_INTAKE_UTILISATION` busy. In one simulated run of the 40,000/s burst (seed 1,
# 73 containers, batches of 198) the containers waited for intake 13% of the sale's time with 501
# pollers (80% busy), 8% with 668 (60%).
PARTS_BATCH_SIZE = 2 * MAX_RESERVATIONS_PER_TRANSACTION
PARTS_BATCHING_WINDOW_S = 2
PARTS_INTAKE_UTILISATION = 0.6
TEMPLATE_BATCHING_WINDOW_S = 1  # template.yaml's MaximumBatchingWindowInSeconds default
TEMPLATE_MEMORY_MB = 512  # template.yaml's ReserveFunctionMemorySize and IssueFunctionMemorySize
# One vCPU: the handlers are mostly CPU and Python runs one thread of CPU at a time.
PLANNED_MEMORY_MB = LAMBDA_MB_PER_VCPU
RECORD_WRITE_UNITS = 2.0  # a transactional put of an item under 1 KB
INVENTORY_WRITE_UNITS = 2.0  # the inventory item's update in the transaction
COUNTER_WRITE_UNITS = 2.0  # a per-customer counter's update in the transaction
REJECTION_WRITE_UNITS = 1.0  # a refused request's record: one conditional PutItem
# The ticket issuer's writes per numbered sale (docs/guides/tickets.md, "Cost"): on the table, the
# record's update in the numbering transaction and its share of the batch's counter (2), ledger
# entry (about 5 KB: 10) and outbox clearing (5); on the TicketsToIssue index, the sale's entry
# when sold (1), and when numbered its removal (1) and its share of the ledger's outbox entry in
# and out (2 / 98).
TICKET_BATCH = 98
TICKET_RECORD_WRITE_UNITS = 2.0
TICKET_BATCH_WRITE_UNITS = 17.0
INDEX_SALE_WRITE_UNITS = 1.0
INDEX_NUMBERED_WRITE_UNITS = 1.0 + 2.0 / TICKET_BATCH
TICKET_INDEX_WRITE_UNITS = INDEX_SALE_WRITE_UNITS + INDEX_NUMBERED_WRITE_UNITS
# The plan's ticket series: one per 600 sales a second (the issuer pipelines each series' batches;
# about 820 a second each in `seats simulate`), at most what the issuer numbers at once.
SERIES_PLANNED_PER_S = 600
# The sale's TicketsToIssue entries go to UNNUMBERED_BUCKETS partition keys, which DynamoDB hashes
# onto the index's partitions (one per 1,000 write units of its warm throughput): the busiest
# partition holds more keys than the mean. The plan sizes it as the busiest partition expected
# over random hashings, the least k for which at most half a partition is expected above k.
BUSIEST_EXPECTED = 0.5
MAX_INDEX_PARTITIONS = 1_000
SHARD0_READ_UNITS = 1.0  # strongly consistent GetItem of shard 0
TRANSACT_READ_UNITS_PER_ITEM = 2.0  # TransactGetItems: 2 units per item under 4 KB
NEW_TABLE_WARM_WRITE = 4_000
NEW_TABLE_WARM_READ = 12_000
NEW_INDEX_WARM_WRITE = 4_000
NEW_INDEX_WARM_READ = 12_000
PARTITION_WRITE_UNITS = 1_000
PARTITION_READ_UNITS = 3_000
TABLE_QUOTA_DEFAULT = 40_000
UTILISATION = 0.8
MAPPING_MIN_CONCURRENCY = 2
MAPPING_MAX_CONCURRENCY = 1_000
LAMBDA_ACCOUNT_CONCURRENCY_DEFAULT = 1_000
UNRESERVED_CONCURRENCY_MINIMUM = 100
API_ACCOUNT_RATE_DEFAULT = 10_000
API_ACCOUNT_BURST_DEFAULT = 5_000
API_BURST_PER_RATE = 2
SNS_PUBLISH_QUOTA_DEFAULT = 30_000  # messages a second, us-east-1's default (most regions: less)
SQS_BATCH = 10  # SendMessageBatch, ReceiveMessage and DeleteMessageBatch carry up to 10 messages
SNS_BATCH = 10  # PublishBatch carries up to 10 outcomes
# Refusals after the sell-out are written one conditional PutItem each, this many at once
# (seat_inventory.dal.writes.MAX_CONCURRENT_PUTS).
CONCURRENT_REJECTION_PUTS = 16


def _n(value: float) -> str:
    """A figure for people: thousands separated, two decimals below 10."""
    if value == math.inf:
        return "unlimited"
    if abs(value) < 10 and value != int(value):
        return f"{value:.2f}"
    return f"{value:,.0f}"


def _round_up(value: float, step: int) -> int:
    return int(math.ceil(value / step - 1e-9) * step)


def _mean_lognormal_s(p50_ms: float, p90_ms: float) -> float:
    sigma = math.log(p90_ms / p50_ms) / Z90
    return p50_ms * math.exp(sigma**2 / 2) / 1000


# ------------------------------------------------------------------ the function's time per batch


@functools.cache
def publish_seconds(answers: int) -> float:
    """Seconds a batch waits for its answers' PublishBatch calls (10 answers a call, at most
    `MAX_CONCURRENT_CALLS` calls at once, as `publishing.sns_publisher`): each round of calls at
    once takes the mean of its slowest call's latency (the simulation's PublishBatch latency)."""
    calls = max(1, math.ceil(answers / PUBLISH_BATCH_LIMIT))
    rounds, last = divmod(calls, MAX_CONCURRENT_CALLS)
    latency = LatencyModel(*DEFAULT_PUBLISH_MS)
    seconds = rounds * latency.mean_slowest_s(MAX_CONCURRENT_CALLS)
    return seconds + (latency.mean_slowest_s(last) if last else 0.0)


def handler_kind(*, customer_limit: bool = False, mapped: bool = False) -> str:
    """Which measured kind of batch (`measured_cpu.RESERVE_CPU`) a sale's batches are."""
    return "mapped" if mapped else "limit" if customer_limit else "reserve"


def reservations_per_transaction(batch_size: int, *, customer_limit: bool = False) -> int:
    most = MAX_LIMITED_RESERVATIONS_PER_TRANSACTION if customer_limit else MAX_RESERVATIONS_PER_TRANSACTION
    return max(1, min(batch_size, most))


def batch_seconds(
    batch_size: int = TEMPLATE_BATCH_SIZE,
    memory_mb: int = PLANNED_MEMORY_MB,
    *,
    customer_limit: bool = False,
    mapped: bool = False,
) -> float:
    """Seconds one container spends on a full batch of confirmed reservations (modelled): the
    handler's measured CPU at the memory's share of a vCPU, its transactions' mean latency one
    after the other, and one round of PublishBatch calls. A mapped batch: the simulated time per
    request (which left the CPU out) plus the measured CPU."""
    cpu_s = RESERVE_CPU[handler_kind(customer_limit=customer_limit, mapped=mapped)].ms(batch_size) / 1000
    cpu_s /= vcpu_share(memory_mb)
    if mapped:
        return batch_size / SIMULATED_MAPPED_PER_CONTAINER_S + cpu_s
    per_transaction = reservations_per_transaction(batch_size, customer_limit=customer_limit)
    actions = per_transaction * (2 if customer_limit else 1) + 1
    latency = mean_transaction_latency_s(actions)
    # Parts of 99, each written in its own transactions: each part's answers are published while
    # the next part is written, so the batch waits for the last part's calls, and for an earlier
    # part's only as far as they outlast the next part's transactions.
    parts = [
        min(MAX_RESERVATIONS_PER_TRANSACTION, batch_size - start)
        for start in range(0, max(1, batch_size), MAX_RESERVATIONS_PER_TRANSACTION)
    ]
    writes = [math.ceil(part / per_transaction) * latency for part in parts]
    overhang = sum(
        max(0.0, publish_seconds(part) - next_write)
        for part, next_write in zip(parts, writes[1:], strict=False)
    )
    return cpu_s + sum(writes) + publish_seconds(parts[-1]) + overhang


def refusal_batch_seconds(
    shard_items: int, batch_size: int = TEMPLATE_BATCH_SIZE, memory_mb: int = PLANNED_MEMORY_MB
) -> float:
    """Seconds a container spends on a batch refused after the sell-out: the measured CPU, the
    class's consistent read, the records' PutItems 16 at a time, and the publications."""
    cpu_s = RESERVE_CPU["sold-out"].ms(batch_size) / 1000 / vcpu_share(memory_mb)
    put_s = _mean_lognormal_s(*SINGLE_ITEM_MS)
    read_s = put_s + (mean_transaction_latency_s(shard_items) if shard_items > 1 else 0.0)
    return (
        cpu_s
        + read_s
        + math.ceil(batch_size / CONCURRENT_REJECTION_PUTS) * put_s
        + publish_seconds(batch_size)
    )


def per_container_s(
    batch_size: int = TEMPLATE_BATCH_SIZE,
    memory_mb: int = PLANNED_MEMORY_MB,
    *,
    customer_limit: bool = False,
    mapped: bool = False,
) -> float:
    """Reservations one busy container confirms a second: a batch over its time."""
    return batch_size / batch_seconds(batch_size, memory_mb, customer_limit=customer_limit, mapped=mapped)


@dataclass(frozen=True)
class Handler:
    """What the containers' rate rests on: the batch, the memory and the kind of batch."""

    batch_size: int = TEMPLATE_BATCH_SIZE
    memory_mb: int = PLANNED_MEMORY_MB
    customer_limit: bool = False
    mapped: bool = False

    @property
    def per_container_s(self) -> float:
        return per_container_s(
            self.batch_size, self.memory_mb, customer_limit=self.customer_limit, mapped=self.mapped
        )

    def containers(self, rate: float) -> int:
        """Concurrent containers that confirm `rate` reservations a second."""
        return max(1, math.ceil(rate / self.per_container_s - 1e-9))

    def rate_for(self, containers: int) -> float:
        return containers * self.per_container_s

    def describe(self) -> str:
        kind = handler_kind(customer_limit=self.customer_limit, mapped=self.mapped)
        cpu = RESERVE_CPU[kind]
        share = vcpu_share(self.memory_mb)
        seconds = batch_seconds(
            self.batch_size, self.memory_mb, customer_limit=self.customer_limit, mapped=self.mapped
        )
        return (
            f"a batch of {self.batch_size} takes about {seconds:.2f} s"
            f" at {self.memory_mb:,} MB ({share:.2f} vCPU): {cpu.ms(self.batch_size):.0f} ms of"
            f" measured CPU ({cpu.invocation_ms:.1f} ms + {cpu.per_message_ms:.2f} ms a message,"
            f" '{kind}') / {share:.2f}, "
            + (
                f"{1000 / SIMULATED_MAPPED_PER_CONTAINER_S:.2f} ms a request simulated on the map"
                if self.mapped
                else "its transactions' mean latency and its PublishBatch calls at once (their slowest)"
            )
            + f": about {_n(self.per_container_s)}/s a container"
        )


# ------------------------------------------------------------------ loads on the table, index, SNS


@dataclass(frozen=True)
class Load:
    """Units a second a sale at `rate` needs of one throughput: `per_sale` per reservation and
    `per_numbered` per sale the issuer numbers (at most `numbering` a second), kept at most
    `UTILISATION` busy. Both directions: `units(rate)` and `rate_for(units)`."""

    per_sale: float
    per_numbered: float = 0.0
    numbering: float = math.inf

    def units(self, rate: float) -> float:
        return (rate * self.per_sale + min(rate, self.numbering) * self.per_numbered) / UTILISATION

    def rate_for(self, units: float) -> float:
        budget = units * UTILISATION
        if self.per_sale + self.per_numbered <= 0:
            return math.inf
        if self.numbering == math.inf or budget <= (self.per_sale + self.per_numbered) * self.numbering:
            return budget / (self.per_sale + self.per_numbered)
        if self.per_sale <= 0:
            return math.inf
        return (budget - self.per_numbered * self.numbering) / self.per_sale


def sale_write_units(
    batch_size: int = TEMPLATE_BATCH_SIZE, *, customer_limit: bool = False, mapped: bool = False
) -> float:
    """Table write units one confirmed reservation costs the sale: its record, its share of the
    inventory item's update (a mapped class: its row item and record), its customer's counter."""
    if mapped:
        per = MAPPED_TAKE_WRITE_UNITS
    else:
        per = RECORD_WRITE_UNITS + INVENTORY_WRITE_UNITS / reservations_per_transaction(
            batch_size, customer_limit=customer_limit
        )
    return per + (COUNTER_WRITE_UNITS if customer_limit else 0.0)


def ticket_write_units_per_reservation() -> float:
    """The ticket issuer's table write units per numbered sale: 2 + 17/98 = 2.17."""
    return TICKET_RECORD_WRITE_UNITS + TICKET_BATCH_WRITE_UNITS / TICKET_BATCH


def write_units_per_reservation(
    batch_size: int = TEMPLATE_BATCH_SIZE, *, customer_limit: bool = False, mapped: bool = False
) -> float:
    """Table write units a confirmed reservation costs once numbered: the sale's and the issuer's."""
    return (
        sale_write_units(batch_size, customer_limit=customer_limit, mapped=mapped)
        + ticket_write_units_per_reservation()
    )


def read_units_per_refusal(
    shard_items: int, batch_size: int = TEMPLATE_BATCH_SIZE, *, mapped: bool = False
) -> float:
    """Read units per request refused after the sell-out: one consistent read of the class per
    batch (a mapped class: its views and slice reads, as measured)."""
    if mapped:
        return MAPPED_READ_UNITS_PER_REFUSAL
    per_batch = SHARD0_READ_UNITS + (TRANSACT_READ_UNITS_PER_ITEM * shard_items if shard_items > 1 else 0.0)
    return per_batch / max(1, batch_size)


def table_write_load(
    numbering: float,
    batch_size: int = TEMPLATE_BATCH_SIZE,
    *,
    customer_limit: bool = False,
    mapped: bool = False,
) -> Load:
    return Load(
        sale_write_units(batch_size, customer_limit=customer_limit, mapped=mapped),
        ticket_write_units_per_reservation(),
        numbering,
    )


def index_write_load(numbering: float) -> Load:
    return Load(INDEX_SALE_WRITE_UNITS, INDEX_NUMBERED_WRITE_UNITS, numbering)


def sns_load(numbering: float) -> Load:
    """Messages a second: each answer, and each TICKETED outcome as sales are numbered."""
    return Load(1.0, 1.0, numbering)


def rate_for_api(rate_limit: float, burst_limit: float) -> float:
    return min(rate_limit, burst_limit / API_BURST_PER_RATE)


# ------------------------------------------------------------------ the index's busiest partition


def busiest_partition_keys(keys: int, partitions: int) -> int:
    """The keys the busiest of `partitions` holds when `keys` partition keys are hashed onto them
    (each key on a partition at random, Poisson): the least k for which the partitions expected
    to hold more than k number at most `BUSIEST_EXPECTED`."""
    mean = keys / partitions
    held, term, cumulative = 0, math.exp(-mean), math.exp(-mean)
    while partitions * (1 - cumulative) > BUSIEST_EXPECTED and held < keys:
        held += 1
        term *= mean / held
        cumulative += term
    return held


def index_partitions_for(units_per_key: float, keys: int = UNNUMBERED_BUCKETS) -> int | None:
    """The least partitions of the TicketsToIssue index whose busiest (`busiest_partition_keys`)
    takes its keys' write units within a partition's 1,000 (None: not even one key per
    partition would, or more partitions than `MAX_INDEX_PARTITIONS`)."""
    if units_per_key > PARTITION_WRITE_UNITS:
        return None
    for partitions in range(1, MAX_INDEX_PARTITIONS + 1):
        if busiest_partition_keys(keys, partitions) * units_per_key <= PARTITION_WRITE_UNITS:
            return partitions
    return None


def index_warm_for(rate: float, numbering: float) -> float:
    """The index's write units a second its busiest partition needs at `rate`."""
    per_key = (rate * INDEX_SALE_WRITE_UNITS + min(rate, numbering) * INDEX_NUMBERED_WRITE_UNITS) / (
        UNNUMBERED_BUCKETS
    )
    return (index_partitions_for(per_key) or MAX_INDEX_PARTITIONS) * PARTITION_WRITE_UNITS


def rate_for_index_partitions(warm_write_units: float, numbering: float) -> float:
    """The sale's rate the busiest of an index's partitions (one per 1,000 warm write units)
    takes within its 1,000 units."""
    partitions = max(1, int(warm_write_units // PARTITION_WRITE_UNITS))
    units = (
        PARTITION_WRITE_UNITS * UNNUMBERED_BUCKETS / busiest_partition_keys(UNNUMBERED_BUCKETS, partitions)
    )
    below = units / (INDEX_SALE_WRITE_UNITS + INDEX_NUMBERED_WRITE_UNITS)
    return (
        below
        if below <= numbering
        else (units - numbering * INDEX_NUMBERED_WRITE_UNITS) / INDEX_SALE_WRITE_UNITS
    )


# ------------------------------------------------------------------ the ticket issuer


def issuer_ms_per_sale() -> float:
    """CPU milliseconds of one core the issuer spends per numbered sale (measured with one-seat
    sales): its ticket and its share of a batch of 98 (the round's fixed CPU is spread over up to
    100,000 sales a round)."""
    return ISSUER_PER_TICKET_MS + ISSUER_PER_BATCH_MS / TICKET_BATCH


def numbering_rate(issuer_memory_mb: int, lanes: int = 1) -> float:
    """Sales the ticket issuer numbers a second at most: its lanes' vCPU shares over its CPU per sale."""
    return lanes * vcpu_share(issuer_memory_mb) * 1000 / issuer_ms_per_sale()


def issuer_lanes_for(rate: float, issuer_memory_mb: int) -> int:
    """The fewest issuer lanes (a power of two) that number `rate` at most `UTILISATION` busy, at
    most MAX_ISSUER_LANES."""
    needed = rate / (numbering_rate(issuer_memory_mb) * UTILISATION)
    return next((n for n in ISSUER_LANE_COUNTS if n >= needed - 1e-9), MAX_ISSUER_LANES)


def ticket_series_for(numbered_per_s: float, lanes: int) -> int:
    """The plan's series: one per SERIES_PLANNED_PER_S numbered a second, at least one per lane,
    rounded up to a multiple of the lanes (each series then in one lane), at most
    MAX_TICKET_SERIES and MAX_ISSUE_SERIES_AT_ONCE a lane."""
    series = max(lanes, math.ceil(numbered_per_s / SERIES_PLANNED_PER_S))
    return min(MAX_TICKET_SERIES, MAX_ISSUE_SERIES_AT_ONCE * lanes, -(-series // lanes) * lanes)


# ------------------------------------------------------------------ event pollers


@dataclass(frozen=True)
class Pollers:
    """The event pollers a message rate needs: `needed` in all, over `queues` reservation queues
    (each read by a mapping of its own); each mapping's `minimum` ready before the first message
    (at most 200), its `maximum` (0: the minimum) the event source may scale up to, and the
    seconds of backlog before it runs them all."""

    needed: int
    minimum: int
    maximum: int
    ramp_s: float
    queues: int = 1

    @classmethod
    def for_rate(cls, messages_per_s: float, containers: int, utilisation: float = UTILISATION) -> Pollers:
        needed = max(
            MIN_EVENT_POLLERS,
            math.ceil(messages_per_s / MESSAGES_PER_EVENT_POLLER_S - 1e-9),
            math.ceil(containers / INVOCATIONS_PER_EVENT_POLLER - 1e-9),
        )
        if needed <= MAX_MINIMUM_EVENT_POLLERS:
            return cls(needed, needed, 0, 0.0)
        # Several queues: as many as keep each mapping's minimum within UTILISATION of its 200
        # (requests spread over them by reservation id, and a poller's 100 a second is a most),
        # each mapping's minimum the needed share over UTILISATION; past the queues the template
        # allows, each mapping scales above its 200 as one mapping does.
        queues = min(
            MAX_RESERVATION_QUEUES, math.ceil(needed / (MAX_MINIMUM_EVENT_POLLERS * utilisation) - 1e-9)
        )
        share = needed / queues
        minimum = min(MAX_MINIMUM_EVENT_POLLERS, math.ceil(share / utilisation - 1e-9))
        if share <= minimum:
            return cls(needed, minimum, 0, 0.0, queues)
        maximum = min(math.ceil(share - 1e-9), MAX_MAXIMUM_EVENT_POLLERS)
        return cls(needed, minimum, maximum, poller_ramp_seconds(minimum, maximum), queues)

    @property
    def first_rate(self) -> float:
        """Messages a second they receive from the first message, over every queue."""
        return self.minimum * self.queues * MESSAGES_PER_EVENT_POLLER_S

    @property
    def most(self) -> int:
        """Each mapping's most pollers."""
        return self.maximum or self.minimum

    @property
    def total_minimum(self) -> int:
        """The pollers ready before the first message, over every queue."""
        return self.minimum * self.queues


def pollers_rate(pollers: int) -> float:
    return pollers * MESSAGES_PER_EVENT_POLLER_S


def messages_by(pollers: Pollers, seconds: float) -> float:
    """Messages the pollers receive in the first `seconds` of a backlog: the minimum's rate, then
    one more poller a mapping every 60 / (1,000 / 10) s after the ramp's detection, up to the most."""
    added_every = 60.0 * INVOCATIONS_PER_EVENT_POLLER / POLLER_CONCURRENCY_PER_MINUTE
    detection = pollers.ramp_s - (pollers.most - pollers.minimum) * added_every if pollers.maximum else 0.0
    total = pollers.first_rate * seconds
    growing = max(0.0, min(seconds, pollers.ramp_s) - detection)
    # pollers added linearly over `growing` seconds, then all of them to `seconds`
    total += pollers.queues * MESSAGES_PER_EVENT_POLLER_S * growing**2 / (2 * added_every)
    if seconds > pollers.ramp_s and pollers.maximum:
        total += (
            pollers.queues
            * (pollers.most - pollers.minimum)
            * MESSAGES_PER_EVENT_POLLER_S
            * (seconds - pollers.ramp_s)
        )
    return total


def seconds_to_receive(pollers: Pollers, messages: float) -> float:
    """Seconds the pollers take to receive `messages` waiting from the start (bisection)."""
    low, high = 0.0, max(1.0, messages / pollers.first_rate)
    for _ in range(60):
        mid = (low + high) / 2
        low, high = (mid, high) if messages_by(pollers, mid) < messages else (low, mid)
    return high


# ------------------------------------------------------------------ cost


@dataclass(frozen=True)
class FrontDoor:
    """How requests reach the queue: through the checkout API (an API Gateway request of `kind`,
    "rest" as the template's or "http", and one `SendMessage` each), or sent by a producer in
    batches of 10 (`SendMessageBatch`)."""

    api: bool = True
    kind: str = "rest"

    @property
    def send_requests(self) -> float:
        return 1.0 if self.api else 1.0 / SQS_BATCH


def cost_per_million_confirmed(
    handler: Handler = Handler(),
    *,
    issuer_memory_mb: int = PLANNED_MEMORY_MB,
    front_door: FrontDoor = FrontDoor(),
) -> CostBreakdown:
    """US dollars per million confirmed reservations, numbered (pricing.py's list prices):
    DynamoDB's table and index writes; SQS: the send, and a receive and a delete per 10; SNS: one
    PublishBatch per 10 outcomes, CONFIRMED and TICKETED; Lambda: an invocation per batch, each
    batch's time at the function's memory and the issuer's CPU at its own; the API's requests."""
    million = 1_000_000
    write_units = write_units_per_reservation(
        handler.batch_size, customer_limit=handler.customer_limit, mapped=handler.mapped
    )
    batch_s = batch_seconds(
        handler.batch_size, handler.memory_mb, customer_limit=handler.customer_limit, mapped=handler.mapped
    )
    issuer_s = issuer_ms_per_sale() / 1000 / vcpu_share(issuer_memory_mb)
    return cost_per_million(
        write_units=million * (write_units + TICKET_INDEX_WRITE_UNITS),
        read_units=0.0,
        sqs_requests=round(million * (front_door.send_requests + 2 / SQS_BATCH)),
        sns_requests=round(2 * million / SNS_BATCH),
        invocations=round(million / max(1, handler.batch_size)),
        gb_seconds=million
        * (batch_s / handler.batch_size * handler.memory_mb / 1024 + issuer_s * issuer_memory_mb / 1024),
        reservations=million,
        api_requests=million if front_door.api else 0,
        api_kind=front_door.kind,
    )


def cost_per_million_refused(
    shard_items: int,
    handler: Handler = Handler(),
    *,
    front_door: FrontDoor = FrontDoor(),
) -> CostBreakdown:
    """US dollars per million requests refused after the sell-out: a 1-unit record each and the
    batch's consistent read of the class; SQS, SNS (one outcome each), Lambda and the API."""
    million = 1_000_000
    if handler.mapped:
        batch_s = batch_seconds(handler.batch_size, handler.memory_mb, mapped=True)
    else:
        batch_s = refusal_batch_seconds(shard_items, handler.batch_size, handler.memory_mb)
    return cost_per_million(
        write_units=million * REJECTION_WRITE_UNITS,
        read_units=million * read_units_per_refusal(shard_items, handler.batch_size, mapped=handler.mapped),
        sqs_requests=round(million * (front_door.send_requests + 2 / SQS_BATCH)),
        sns_requests=round(million / SNS_BATCH),
        invocations=round(million / max(1, handler.batch_size)),
        gb_seconds=million * batch_s / handler.batch_size * handler.memory_mb / 1024,
        reservations=million,
        api_requests=million if front_door.api else 0,
        api_kind=front_door.kind,
    )


@dataclass(frozen=True)
class SaleCosts:
    """What a sale of `reservations` at the rate costs (US dollars): per reservation, and what it
    sets for as long as it lasts."""

    reservations: int
    sale_s: float
    variable: float
    pre_warming: float
    event_pollers: float
    provisioned_concurrency: float

    @property
    def total(self) -> float:
        return self.variable + self.pre_warming + self.event_pollers + self.provisioned_concurrency

    @property
    def per_million(self) -> float:
        return self.total / max(1, self.reservations) * 1e6


# ------------------------------------------------------------------ the plan


@dataclass(frozen=True)
class SaleInputs:
    """What `seats onsale plan` is asked: the peak rate (reservations per second), and optionally
    the seats on sale (or the sale's length) and how many each reservation takes."""

    rate: float
    seats: int | None = None
    seats_per_request: int = 1
    customer_limit: bool = False
    # BatchSize; None: the plan picks it (`choose_batch_size`)
    batch_size: int | None = TEMPLATE_BATCH_SIZE
    memory_mb: int = PLANNED_MEMORY_MB
    issuer_memory_mb: int = PLANNED_MEMORY_MB
    mapped: bool = False  # the seats are on a seat map (docs/guides/seat-maps.md): no shard items
    duration_s: float | None = None  # the sale's length at the rate, when `seats` is not given
    sns_publish_quota: int = SNS_PUBLISH_QUOTA_DEFAULT
    api: bool = True  # requests come through the checkout API
    api_kind: str = "rest"  # its kind: the template's REST API, or an HTTP API (priced, not shipped)

    def __post_init__(self) -> None:
        if not self.rate > 0:
            raise ValueError("the rate must be above 0 reservations per second")
        if self.seats is not None and self.seats < 1:
            raise ValueError("the seats must be at least 1")
        if self.seats_per_request < 1 or (self.batch_size is not None and self.batch_size < 1):
            raise ValueError("seats per request and batch size must be at least 1")
        if not 128 <= self.memory_mb <= 10_240 or not 128 <= self.issuer_memory_mb <= 10_240:
            raise ValueError("the functions' memory must be 128 to 10,240 MB")
        if self.duration_s is not None and not self.duration_s > 0:
            raise ValueError("the sale's duration must be above 0 seconds")
        if self.seats is not None and self.duration_s is not None:
            raise ValueError("give the seats or the duration, not both")
        if self.sns_publish_quota < 1:
            raise ValueError("the SNS publish quota must be at least 1 message a second")
        if self.api_kind not in API_KINDS:
            raise ValueError(f"the checkout API is rest or http, not {self.api_kind!r}")

    @property
    def handler(self) -> Handler:
        """The reserve function's batches (the template's BatchSize when the plan is to pick it)."""
        batch = TEMPLATE_BATCH_SIZE if self.batch_size is None else self.batch_size
        return Handler(batch, self.memory_mb, self.customer_limit, self.mapped)

    @property
    def reservations(self) -> int | None:
        if self.seats is not None:
            return math.ceil(self.seats / self.seats_per_request)
        if self.duration_s is not None:
            return math.ceil(self.rate * self.duration_s)
        return None


@dataclass(frozen=True)
class PlanItem:
    """One line of the plan: a setting, the value the sale needs, and the rule behind it."""

    key: str
    label: str
    value: int | float | str
    rule: str


@dataclass(frozen=True)
class SalePlan:
    inputs: SaleInputs
    items: tuple[PlanItem, ...]
    problems: tuple[str, ...] = ()  # what stops this design reaching the rate
    warnings: tuple[str, ...] = ()  # what falls behind the sale without stopping it
    values: dict[str, float] = field(default_factory=dict)  # the figures, for programs

    def item(self, key: str) -> PlanItem:
        return next(i for i in self.items if i.key == key)


def _shard_items(inputs: SaleInputs, containers: int, reserved: int, problems: list[str]) -> tuple[int, str]:
    """Shard items per seat class and the rule: one for each container that may run at once (the
    reserved concurrency, above the containers the rate needs); what they cannot give goes to
    `problems`."""
    if inputs.mapped:
        return 0, (
            "none: a mapped class takes seats on its row items (a row, or 40 seats of one), and"
            " containers spread over its sections and rows (docs/guides/seat-maps.md)"
        )
    handler = inputs.handler
    batch = handler.batch_size
    shards = min(MAX_SHARDS, reserved)
    per_item = reservations_per_transaction(batch) / mean_transaction_latency_s(
        reservations_per_transaction(batch) + 1
    )
    shard_rule = (
        f"seats event create/reshard --shards K: K >= the containers that may sell the class at"
        f" once (ReserveFunctionConcurrency, {reserved:,}; the rate needs {containers:,}), at most"
        f" {MAX_SHARDS}; with fewer items than containers they share items and conflict"
        f" (docs/explanation/sharding.md); an item commits one transaction at a time, at most"
        f" about {_n(per_item)} reservations/s (bench/ceiling.py)"
    )
    if containers > MAX_SHARDS:
        problems.append(
            f"{containers:,} containers on one seat class: a class has at most {MAX_SHARDS} shard"
            f" items, {MAX_SHARDS} x {_n(handler.per_container_s)}/s = about"
            f" {_n(handler.rate_for(MAX_SHARDS))}/s; spread the demand over several classes"
        )
    if inputs.seats is not None:
        per_shard = batch * inputs.seats_per_request
        by_seats = max(1, inputs.seats // per_shard)
        if by_seats < shards:
            shards = by_seats
            shard_rule += (
                f"; with {inputs.seats:,} seats, at most {by_seats} so that each item holds a full"
                f" batch ({per_shard:,} seats): a container takes only the seats its item holds,"
                " then looks for another"
            )
            if by_seats < containers:
                problems.append(
                    f"{inputs.seats:,} seats make {by_seats} shard item(s) of a full batch, fewer"
                    f" than the {containers:,} containers: the class supports about"
                    f" {_n(handler.rate_for(by_seats))}/s"
                )
    return shards, shard_rule


def _index_partitions(rate: float, numbering: float, problems: list[str]) -> tuple[float, int, int]:
    """The TicketsToIssue index's write units a second per key, the partitions its busiest needs
    (`index_partitions_for`) and the keys that busiest holds; what it cannot give to `problems`."""
    units_per_key = (
        rate * INDEX_SALE_WRITE_UNITS + min(rate, numbering) * INDEX_NUMBERED_WRITE_UNITS
    ) / UNNUMBERED_BUCKETS
    partitions = index_partitions_for(units_per_key)
    if partitions is None:
        problems.append(
            f"the TicketsToIssue index: {UNNUMBERED_BUCKETS} keys take {_n(units_per_key)} write units"
            f" a second each, and hashed onto even {MAX_INDEX_PARTITIONS:,} partitions the busiest"
            f" would take more than a partition's {PARTITION_WRITE_UNITS:,}"
        )
        partitions = MAX_INDEX_PARTITIONS
    return units_per_key, partitions, busiest_partition_keys(UNNUMBERED_BUCKETS, partitions)


def _http_api_problems(inputs: SaleInputs, pollers: Pollers, problems: list[str]) -> None:
    """An HTTP API cannot feed several queues: a problem when the plan needs them."""
    if inputs.api and inputs.api_kind == "http" and pollers.queues > 1:
        problems.append(
            f"an HTTP API's SQS-SendMessage integration sends to the queue its parameters name"
            f" (static, or a request value as sent): it cannot pick one of the {pollers.queues}"
            " reservation queues by reservation id, so through it the stack has one queue,"
            f" {_n(pollers_rate(MAX_MINIMUM_EVENT_POLLERS))} messages/s from the first message;"
            " the template's REST API picks the queue in its mapping templates"
        )


def _price(kind: str) -> str:
    """The API Gateway list price per million requests of a kind of API, as "$3.50"."""
    return f"${PRICES[f'api_{kind}_request'].usd * 1e6:.2f}"


def _poller_problems(inputs: SaleInputs, pollers: Pollers, problems: list[str]) -> str:
    """What the pollers cannot give at the rate (to `problems`), and the rule's tail."""
    rate = inputs.rate
    if pollers.needed <= MAX_MINIMUM_EVENT_POLLERS:
        return ""
    spread = (
        f"; {pollers.queues} reservation queues (parameter ReservationQueues), each read by a mapping"
        f" of its own with these pollers: one mapping has at most {MAX_MINIMUM_EVENT_POLLERS} ready"
        f" from the first message (MinimumPollers), and each is kept at {UTILISATION:.0%} of its"
        " pollers' rate (requests are spread over the queues by reservation id,"
        " docs/guides/size-a-sale.md)"
    )
    if not pollers.maximum:
        return spread
    per_minute = POLLER_CONCURRENCY_PER_MINUTE // INVOCATIONS_PER_EVENT_POLLER
    reached = (
        f"the rate is reached {pollers.ramp_s:.0f} s into a backlog (AWS adds at most"
        f" {POLLER_CONCURRENCY_PER_MINUTE:,} concurrency, {per_minute} pollers, a minute, to each mapping)"
    )
    if pollers.maximum == MAX_MAXIMUM_EVENT_POLLERS:
        reached = (
            f"a mapping scales to at most {MAX_MAXIMUM_EVENT_POLLERS:,} pollers,"
            f" {_n(pollers.queues * pollers_rate(MAX_MAXIMUM_EVENT_POLLERS))} messages/s on"
            f" {pollers.queues} queues"
        )
    burst = ""
    if inputs.reservations is not None:
        seconds = seconds_to_receive(pollers, inputs.reservations)
        burst = (
            f"; {inputs.reservations:,} requests waiting at once are received in about"
            f" {seconds:.0f} s, {_n(inputs.reservations / seconds)}/s"
        )
    problems.append(
        f"{_n(rate)} messages/s need {pollers.needed:,} event pollers (each receives at most"
        f" {_n(MESSAGES_PER_EVENT_POLLER_S)} a second: {MESSAGES_PER_EVENT_POLLER_S / 10:.0f}"
        f" ReceiveMessage calls of 10); {pollers.queues} queues (ReservationQueues, at most"
        f" {MAX_RESERVATION_QUEUES}), each with a mapping of at most {MAX_MINIMUM_EVENT_POLLERS}"
        f" ready from the first message (MinimumPollers), receive {_n(pollers.first_rate)}"
        f" messages/s from it, and {reached}{burst}"
    )
    return spread + f"; {reached}"


def choose_batch_size(inputs: SaleInputs) -> tuple[int, str]:
    """The BatchSize for the sale, and why: the one asked for; else, for a counted class,
    `QUICK_BATCH_SIZE` when the containers that batch needs are no more than a class's shard
    items, the template's 99 when they are not (a full batch takes the most reservations per
    container, and more containers than items share items and conflict); a mapped class the
    template's (its rate per container was simulated with batches of 99)."""
    if inputs.batch_size is not None:
        return inputs.batch_size, "as asked (--batch-size)"
    if inputs.mapped:
        return (
            TEMPLATE_BATCH_SIZE,
            "the template's: a mapped class's rate per container was simulated with batches of 99",
        )
    quick = replace(inputs, batch_size=QUICK_BATCH_SIZE).handler
    needed = quick.containers(inputs.rate)
    gathered = f"an event poller receives about {_n(MESSAGES_PER_EVENT_POLLER_S)} messages a second"
    if needed <= MAX_SHARDS:
        return QUICK_BATCH_SIZE, (
            f"{gathered}, so a batch of {QUICK_BATCH_SIZE} is gathered in about"
            f" {QUICK_BATCH_SIZE / MESSAGES_PER_EVENT_POLLER_S:.1f} s (99: about a second), and the"
            f" {needed:,} containers batches of {QUICK_BATCH_SIZE} need fit the class's"
            f" {MAX_SHARDS} shard items: answers come sooner (docs/guides/size-a-sale.md)"
        )
    full = replace(inputs, batch_size=TEMPLATE_BATCH_SIZE).handler.containers(inputs.rate)
    if full <= MAX_SHARDS * UTILISATION:
        return TEMPLATE_BATCH_SIZE, (
            f"full batches: in batches of {QUICK_BATCH_SIZE} the rate needs {needed:,} containers,"
            f" more than a class's {MAX_SHARDS} shard items; {gathered}, so a batch of"
            f" {TEMPLATE_BATCH_SIZE} waits up to about a second to be gathered"
        )
    return PARTS_BATCH_SIZE, (
        f"two parts of {TEMPLATE_BATCH_SIZE}: in batches of {TEMPLATE_BATCH_SIZE} the rate needs"
        f" {full:,} containers, more than {UTILISATION:.0%} of a class's {MAX_SHARDS} shard items"
        f" (more share items and conflict); each part's answers are published while the next"
        f" part is written, so a container confirms more a second; {gathered}, so a batch of"
        f" {PARTS_BATCH_SIZE} is gathered in about {PARTS_BATCHING_WINDOW_S} s"
        f" (MaximumBatchingWindowInSeconds {PARTS_BATCHING_WINDOW_S})"
    )


def batching_window_s(batch_size: int) -> int:
    """The MaximumBatchingWindowInSeconds the plan sets with `batch_size`."""
    return PARTS_BATCHING_WINDOW_S if batch_size > TEMPLATE_BATCH_SIZE else TEMPLATE_BATCHING_WINDOW_S


def intake_utilisation(batch_size: int) -> float:
    """How busy the plan keeps the event pollers that gather batches of `batch_size`."""
    return PARTS_INTAKE_UTILISATION if batch_size > TEMPLATE_BATCH_SIZE else UTILISATION


def _numbering_behind(inputs: SaleInputs, lanes: int, numbering: float) -> str:
    """What the plan says when the issuer's lanes number slower than the sale sells."""
    rate = inputs.rate
    behind = (
        f"the ticket issuer numbers at most about {_n(numbering)} sales/s"
        f" ({issuer_ms_per_sale():.2f} ms of measured CPU each on"
        f" {vcpu_share(inputs.issuer_memory_mb):.2f} vCPU at {inputs.issuer_memory_mb:,} MB"
        f" in each of {lanes} lanes, one thread of CPU each): at"
        f" {_n(rate)}/s ticket numbers fall behind the sale by {_n(rate - numbering)} a second"
    )
    if inputs.reservations is not None:
        behind += (
            f"; the last of {inputs.reservations:,} is numbered about"
            f" {inputs.reservations / numbering - inputs.reservations / rate:,.0f} s after the sale"
        )
    return behind


def plan_sale(inputs: SaleInputs) -> SalePlan:
    """What a sale at `inputs.rate` needs, item by item, each with its rule."""
    batch, batch_rule = choose_batch_size(inputs)
    inputs = replace(inputs, batch_size=batch)
    rate, mapped = inputs.rate, inputs.mapped
    handler = inputs.handler
    containers = handler.containers(rate)
    mapping = max(MAPPING_MIN_CONCURRENCY, containers)
    problems: list[str] = []
    warnings: list[str] = []
    if containers > MAPPING_MAX_CONCURRENCY:
        problems.append(
            f"{containers:,} containers: one event source mapping runs at most"
            f" {MAPPING_MAX_CONCURRENCY:,} batches at once in standard mode"
            f" (about {_n(handler.rate_for(MAPPING_MAX_CONCURRENCY))}/s)"
        )
    reserved = max(mapping, math.ceil(containers / UTILISATION - 1e-9))
    shards, shard_rule = _shard_items(inputs, containers, reserved, problems)
    pollers = Pollers.for_rate(rate, mapping, intake_utilisation(batch))
    pollers_tail = _poller_problems(inputs, pollers, problems)

    lanes = issuer_lanes_for(rate, inputs.issuer_memory_mb)
    numbering = numbering_rate(inputs.issuer_memory_mb, lanes)
    table = table_write_load(numbering, batch, customer_limit=inputs.customer_limit, mapped=mapped)
    write_units = table.units(rate)
    warm_write = max(NEW_TABLE_WARM_WRITE, _round_up(write_units, 1_000))
    ru = read_units_per_refusal(shards, batch, mapped=mapped)
    read_units = Load(ru).units(rate)
    warm_read = max(NEW_TABLE_WARM_READ, _round_up(read_units, 1_000))
    index = index_write_load(numbering)
    index_units = index.units(rate)
    units_per_key, index_partitions, busiest = _index_partitions(rate, numbering, problems)
    index_warm_write = max(
        NEW_INDEX_WARM_WRITE, _round_up(index_units, 1_000), index_partitions * PARTITION_WRITE_UNITS
    )
    quota_write = max(TABLE_QUOTA_DEFAULT, warm_write, index_warm_write)
    quota_read = max(TABLE_QUOTA_DEFAULT, warm_read)
    sns_needed = sns_load(numbering).units(rate)
    sns_quota = max(inputs.sns_publish_quota, _round_up(sns_needed, 1_000))

    series = ticket_series_for(min(rate, numbering), lanes)
    if rate > numbering:
        warnings.append(_numbering_behind(inputs, lanes, numbering))

    per_txn = reservations_per_transaction(batch, customer_limit=inputs.customer_limit)
    counter = f" + {_n(COUNTER_WRITE_UNITS)} for the customer's counter" if inputs.customer_limit else ""
    transact_read = f", TransactGetItems of its {shards} items at 2 units each" if shards > 1 else ""
    raise_quota = "; raise it first" if max(quota_write, quota_read) > TABLE_QUOTA_DEFAULT else ""
    raise_api = "; raise it in Service Quotas" if rate > API_ACCOUNT_RATE_DEFAULT else ""
    ramp = scale_up_seconds(mapping)
    front_door = FrontDoor(inputs.api, inputs.api_kind)
    other = cost_per_million_confirmed(
        handler,
        issuer_memory_mb=inputs.issuer_memory_mb,
        front_door=FrontDoor(True, "http" if inputs.api_kind == "rest" else "rest"),
    )
    _http_api_problems(inputs, pollers, problems)
    confirmed = cost_per_million_confirmed(
        handler, issuer_memory_mb=inputs.issuer_memory_mb, front_door=front_door
    )
    refused = cost_per_million_refused(shards, handler, front_door=front_door)
    memory_gb = inputs.memory_mb / 1024
    pollers_per_hour = pollers.total_minimum * PRICES["event_poller"].usd
    provisioned_per_hour = mapping * memory_gb * 3600 * PRICES["lambda_provisioned_concurrency"].usd
    prewarm = pre_warming_usd(
        (warm_write - NEW_TABLE_WARM_WRITE) + (index_warm_write - NEW_INDEX_WARM_WRITE),
        warm_read - NEW_TABLE_WARM_READ,
    )
    wu = table.per_sale + table.per_numbered

    items = [
        PlanItem(
            "batch_size",
            "BatchSize",
            batch,
            f"parameter BatchSize (MaximumBatchingWindowInSeconds {batching_window_s(batch)}: a"
            f" batch goes when full or after {batching_window_s(batch)} s): {batch_rule}",
        ),
        PlanItem(
            "reserve_memory",
            "ReserveFunctionMemorySize, MB",
            inputs.memory_mb,
            f"parameter ReserveFunctionMemorySize: {handler.describe()}; CPU comes with memory, one"
            f" vCPU at {LAMBDA_MB_PER_VCPU:,} MB, and the handler uses one at most (Python), so"
            " more answers no sooner and less only makes each batch slower for about the same"
            " cost (duration x memory)",
        ),
        PlanItem(
            "maximum_concurrency",
            "MaximumConcurrency",
            mapping,
            f"parameter MaximumConcurrency (standard mode): containers >= rate /"
            f" {_n(handler.per_container_s)} (the reserve function's time per batch, above);"
            f" AWS allows {MAPPING_MIN_CONCURRENCY}-{MAPPING_MAX_CONCURRENCY:,} per mapping",
        ),
        PlanItem("shards", "shard items per seat class", "none" if mapped else shards, shard_rule),
        PlanItem(
            "event_pollers",
            "ReservationQueues x EventPollers / MaximumEventPollers",
            (f"{pollers.queues} x " if pollers.queues > 1 else "") + f"{pollers.minimum} / {pollers.maximum}",
            f"parameters EventPollers (MinimumPollers, ready before the first message, at most"
            f" {MAX_MINIMUM_EVENT_POLLERS}) and MaximumEventPollers (0: the same; at most"
            f" {MAX_MAXIMUM_EVENT_POLLERS:,}): rate / {_n(MESSAGES_PER_EVENT_POLLER_S)} messages a"
            f" second each ({MESSAGES_PER_EVENT_POLLER_S / 10:.0f} ReceiveMessage calls of 10), and"
            f" at least containers / {INVOCATIONS_PER_EVENT_POLLER}: {pollers.needed:,}"
            f"{pollers_tail}; ${pollers_per_hour:.3f} an hour for the minimum while set"
            f" ({pollers.total_minimum} x ${PRICES['event_poller'].usd} per poller-hour): set them before"
            " the sale, 0 after; they take MaximumConcurrency's place (docs/guides/size-a-sale.md)",
        ),
        PlanItem(
            "provisioned_concurrency",
            "ProvisionedConcurrency",
            mapping,
            "parameter ProvisionedConcurrency: the containers, initialised before the sale, so the"
            " first batches do not wait for their environments to start (the first invocation"
            f" still builds its clients); ${provisioned_per_hour:.2f} an hour while set ({mapping:,}"
            f" x {inputs.memory_mb:,} MB x ${PRICES['lambda_provisioned_concurrency'].usd:.10f} per"
            " GB-second, billed in 5-minute steps): set it about 10 minutes before the sale, 0 after",
        ),
        PlanItem(
            "reserved_concurrency",
            "ReserveFunctionConcurrency",
            reserved,
            f"parameter ReserveFunctionConcurrency (reserved concurrency): the containers /"
            f" {UTILISATION}, at least ProvisionedConcurrency; the most invocations at once. In"
            f" provisioned mode each event poller runs up to {INVOCATIONS_PER_EVENT_POLLER}"
            f" ({pollers.total_minimum * INVOCATIONS_PER_EVENT_POLLER:,} here): without the cap a"
            " burst starts that many at once, cold, on the class's shard items, which they share and"
            " conflict on; past it Lambda throttles the invoke and the event source retries it",
        ),
        PlanItem(
            "warm_write_units",
            "table warm write units/s",
            warm_write,
            f"parameter TableWarmWriteUnitsPerSecond: (rate x {_n(table.per_sale)} + numbered/s x"
            f" {_n(table.per_numbered)}) / {UTILISATION} = {_n(write_units)}, rounded up to a"
            f" thousand, at least a new table's {NEW_TABLE_WARM_WRITE:,}: "
            + (
                f"{_n(MAPPED_TAKE_WRITE_UNITS)} for the take (its row item and its record)"
                if mapped
                else f"{_n(RECORD_WRITE_UNITS)} for the record + {_n(INVENTORY_WRITE_UNITS)} for the"
                f" inventory update shared by {per_txn} reservations per transaction"
            )
            + f"{counter}; {_n(ticket_write_units_per_reservation())} per sale the ticket issuer"
            f" numbers, at most {_n(numbering)}/s (docs/guides/tickets.md)",
        ),
        PlanItem(
            "warm_read_units",
            "table warm read units/s",
            warm_read,
            f"parameter TableWarmReadUnitsPerSecond: after the sell-out, rate x {_n(ru)} read"
            f" units per refused request / {UTILISATION} = {_n(read_units)}, at least a new"
            f" table's {NEW_TABLE_WARM_READ:,}: "
            + (
                "the containers' views of the map and the slices they read (measured,"
                " docs/guides/seat-maps.md)"
                if mapped
                else f"each batch of {batch} refusals reads the class (GetItem of shard 0{transact_read})"
            ),
        ),
        PlanItem(
            "index_warm_write_units",
            "TicketsToIssue index warm write units/s",
            index_warm_write,
            f"parameter TicketsIndexWarmWriteUnitsPerSecond: (rate x {_n(INDEX_SALE_WRITE_UNITS)}"
            f" for each sale's entry + numbered/s x {_n(INDEX_NUMBERED_WRITE_UNITS)} for its"
            f" removal and the ledger's outbox) / {UTILISATION} = {_n(index_units)}, at least a new"
            f" index's {NEW_INDEX_WARM_WRITE:,}, and at least {index_partitions:,} partitions of"
            f" {PARTITION_WRITE_UNITS:,}: the sale's entries go to {UNNUMBERED_BUCKETS} keys,"
            f" {_n(units_per_key)} write units a second each, hashed onto the index's partitions,"
            f" and the busiest of {index_partitions:,} holds about {busiest} (Poisson) within its"
            f" {PARTITION_WRITE_UNITS:,}; an index that cannot keep up throttles the table's"
            " writes (GSI back-pressure); its reads (the issuer's queries) stay within a new"
            f" index's {NEW_INDEX_WARM_READ:,}",
        ),
        PlanItem(
            "table_quota",
            "table quota, write / read",
            f"{quota_write:,} / {quota_read:,}",
            "Service Quotas, DynamoDB table-level throughput: at least the table's and the index's"
            f" warm throughput (a table or index is pre-warmed up to its quota); the default is"
            f" {TABLE_QUOTA_DEFAULT:,}{raise_quota}",
        ),
        PlanItem(
            "table_maximum",
            "table maximum, write / read",
            f"-1 or >= {warm_write:,} / {warm_read:,}",
            "parameters TableMaxWriteRequestUnits / TableMaxReadRequestUnits (OnDemandThroughput):"
            " a maximum below the warm throughput throttles the sale there; -1 sets none",
        ),
        PlanItem(
            "sns_quota",
            "SNS publish quota, messages/s",
            sns_quota,
            f"Service Quotas, SNS Publish in the stack's region: (rate + numbered/s) / {UTILISATION}"
            f" = {_n(sns_needed)}: every answer and every TICKETED outcome is one message (a"
            f" PublishBatch counts each); the account has {inputs.sns_publish_quota:,}"
            f" (us-east-1's default is {SNS_PUBLISH_QUOTA_DEFAULT:,}, most regions' less)"
            + ("; request the rest" if sns_quota > inputs.sns_publish_quota else ""),
        ),
        PlanItem(
            "api_throttle",
            "API stage throttle, rate / burst",
            f"{math.ceil(rate):,} / {math.ceil(rate * API_BURST_PER_RATE):,}",
            "parameters ApiThrottlingRateLimit / ApiThrottlingBurstLimit: rate >= the sale's rate,"
            f" burst >= {API_BURST_PER_RATE} x rate (the template's ratio, 1,000 / 2,000), when"
            " buyers come through the checkout API",
        ),
        PlanItem(
            "api_account_throttle",
            "API account throttle, requests/s",
            max(API_ACCOUNT_RATE_DEFAULT, math.ceil(rate)),
            "Service Quotas, API Gateway throttle per account and region: at least the rate; the"
            f" default is {API_ACCOUNT_RATE_DEFAULT:,} (burst {API_ACCOUNT_BURST_DEFAULT:,}, set by"
            f" AWS), shared by every API of the account in the region{raise_api}",
        ),
        PlanItem(
            "lambda_concurrency",
            "Lambda concurrency",
            reserved,
            "Service Quotas, Lambda concurrent executions: the reserved concurrency, besides what else runs"
            f" in the account and region; the default is {LAMBDA_ACCOUNT_CONCURRENCY_DEFAULT:,}"
            " (new accounts get less); reserving them for the function needs a limit of at least"
            f" {reserved + UNRESERVED_CONCURRENCY_MINIMUM:,} (AWS keeps"
            f" {UNRESERVED_CONCURRENCY_MINIMUM} unreserved)",
        ),
        PlanItem(
            "scale_up_seconds",
            "scale-up, seconds",
            round(ramp, 1),
            f"standard mode: the event source starts {INITIAL_CONCURRENT_BATCHES} batches at once,"
            f" then up to {SCALE_UP_PER_MINUTE} more a minute while messages wait; until then the"
            " rate is lower; with EventPollers, the pollers' ramp above their minimum instead",
        ),
        PlanItem(
            "issue_memory",
            "IssueFunctionMemorySize, MB",
            inputs.issuer_memory_mb,
            f"parameter IssueFunctionMemorySize: one issuer lane numbers on"
            f" {vcpu_share(inputs.issuer_memory_mb):.2f} vCPU at most (one thread of CPU),"
            f" {issuer_ms_per_sale():.2f} ms of measured CPU a sale"
            f" ({ISSUER_PER_TICKET_MS:.2f} ms a ticket, {ISSUER_PER_BATCH_MS:.2f} ms a batch of"
            f" {TICKET_BATCH}): about {_n(numbering / lanes)} sales/s; more than"
            f" {LAMBDA_MB_PER_VCPU:,} MB adds nothing",
        ),
        PlanItem(
            "issue_lanes",
            "IssueLanes",
            lanes,
            f"parameter IssueLanes: rate / ({_n(numbering / lanes)} a lane x {UTILISATION}) rounded up"
            f" to a power of two, at most {MAX_ISSUER_LANES} (the scheduled run starts the others"
            f" when they have work, docs/guides/tickets.md): about {_n(numbering)} sales/s; back to 1"
            " after the sale",
        ),
        PlanItem(
            "ticket_series",
            "ticket series / IssueSeriesAtOnce",
            f"{series} / {series // lanes}",
            f"seats tickets configure EVENT --series N before the first sale: N = the numbering"
            f" rate / {SERIES_PLANNED_PER_S} rounded up (the issuer pipelines each series' batches,"
            f" docs/guides/tickets.md), at least IssueLanes and a multiple of it (each series in"
            f" one lane), at most {MAX_TICKET_SERIES} and {MAX_ISSUE_SERIES_AT_ONCE} a lane;"
            " parameter IssueSeriesAtOnce >= N / IssueLanes (each lane numbers that many series at once)",
        ),
        PlanItem(
            "cost_per_million_confirmed",
            "USD per million confirmed",
            round(confirmed.total, 2),
            f"DynamoDB {confirmed.dynamodb:.2f} ({_n(wu)} write units each on the table and"
            f" {_n(TICKET_INDEX_WRITE_UNITS)} on the TicketsToIssue index), SQS {confirmed.sqs:.2f},"
            f" SNS {confirmed.sns:.2f} (CONFIRMED and TICKETED), Lambda {confirmed.lambda_:.3f}"
            f" (both functions' time at their memory), API Gateway {confirmed.api_gateway:.2f}"
            + (
                f" (a{'n HTTP' if inputs.api_kind == 'http' else ' REST'} API request each)"
                if inputs.api
                else " (none: producers send to the queue)"
            )
            + ", at pricing.py's us-east-1 list prices; without what the sale sets while it lasts"
            " (below) and cancelled transactions",
        ),
        PlanItem(
            "cost_per_million_refused",
            "USD per million refused",
            round(refused.total, 2),
            f"after the sell-out: DynamoDB {refused.dynamodb:.2f} ({_n(REJECTION_WRITE_UNITS)} write"
            f" unit and {_n(ru)} read units each), SQS {refused.sqs:.2f}, SNS {refused.sns:.2f},"
            f" Lambda {refused.lambda_:.3f}, API Gateway {refused.api_gateway:.2f}",
        ),
        PlanItem(
            "checkout_api",
            "checkout API, USD per million confirmed: REST / HTTP",
            (
                f"{confirmed.total if inputs.api_kind == 'rest' else other.total:.2f} /"
                f" {confirmed.total if inputs.api_kind == 'http' else other.total:.2f}"
            ),
            f"the template's REST API ({_price('rest')} per million requests) keeps its mapping"
            " templates: each request checked against the message contract and refused before"
            " SQS, the reservation queue picked by reservation id, API keys and usage plans. An HTTP"
            f" API ({_price('http')} per million, first-class SQS-SendMessage integration) maps"
            " parameters only: the body goes to SQS as sent (the service refuses a bad one after"
            " the queue, as a producer's), to one queue, without usage plans"
            + ("" if inputs.api else "; none here: producers send to the queue"),
        ),
        PlanItem(
            "pre_warming_usd",
            "pre-warming, USD once",
            round(prewarm, 2),
            f"the table's and the index's warm throughput raised above a new one's: write units"
            f" x ${PRICES['prewarm_write_unit'].usd} and read units x"
            f" ${PRICES['prewarm_read_unit'].usd} ({PRICES['prewarm_write_unit'].what}: pricing.py)",
        ),
    ]
    values: dict[str, float] = {
        "batch_size": batch,
        "batching_window_s": batching_window_s(batch),
        "containers": containers,
        "maximum_concurrency": mapping,
        "shards": shards,
        "reserve_memory_mb": inputs.memory_mb,
        "issue_memory_mb": inputs.issuer_memory_mb,
        "per_container_s": handler.per_container_s,
        "batch_seconds": batch_seconds(
            batch, inputs.memory_mb, customer_limit=inputs.customer_limit, mapped=mapped
        ),
        "queues": pollers.queues,
        "event_pollers": pollers.minimum,
        "maximum_event_pollers": pollers.maximum,
        "event_pollers_needed": pollers.needed,
        "poller_ramp_seconds": pollers.ramp_s,
        "provisioned_concurrency": mapping,
        "reserved_concurrency": reserved,
        "write_units_per_reservation": wu,
        "write_units_per_s": write_units,
        "warm_write_units": warm_write,
        "read_units_per_refusal": ru,
        "read_units_per_s": read_units,
        "warm_read_units": warm_read,
        "index_write_units_per_s": index_units,
        "index_warm_write_units": index_warm_write,
        "index_partitions": index_partitions,
        "index_busiest_partition_keys": busiest,
        "index_warm_read_units": NEW_INDEX_WARM_READ,
        "table_quota_write_units": quota_write,
        "table_quota_read_units": quota_read,
        "numbered_per_s": numbering,
        "issue_lanes": lanes,
        "ticket_series": series,
        "issue_series_at_once": series // lanes,
        "sns_messages_per_s": sns_needed,
        "sns_publish_quota": sns_quota,
        "api_rate_limit": math.ceil(rate),
        "api_burst_limit": math.ceil(rate * API_BURST_PER_RATE),
        "usd_per_million_confirmed": confirmed.total,
        "usd_per_million_refused": refused.total,
        "usd_per_million_confirmed_rest_api": confirmed.total if inputs.api_kind == "rest" else other.total,
        "usd_per_million_confirmed_http_api": confirmed.total if inputs.api_kind == "http" else other.total,
        "pre_warming_usd": prewarm,
        "event_pollers_usd_per_hour": pollers_per_hour,
        "provisioned_concurrency_usd_per_hour": provisioned_per_hour,
    }
    reservations = inputs.reservations
    if reservations is not None:
        costs = _sale_costs(inputs, reservations, confirmed.total, prewarm, pollers, mapping)
        values.update(
            sale_seconds=costs.sale_s,
            sale_usd=costs.total,
            sale_usd_per_million=costs.per_million,
            sale_event_pollers_usd=costs.event_pollers,
            sale_provisioned_concurrency_usd=costs.provisioned_concurrency,
        )
        given = (
            f"{inputs.seats:,} seats at {inputs.seats_per_request} per reservation"
            if inputs.seats is not None
            else f"{inputs.duration_s:,.0f} s"
        )
        items.append(
            PlanItem(
                "sale",
                "sale: seconds / USD all-in / USD per million",
                f"{_n(costs.sale_s)} / {costs.total:,.2f} / {costs.per_million:,.2f}",
                f"{given}: {reservations:,} reservations at {_n(rate)}/s, confirmed and numbered"
                f" ({costs.variable:,.2f}), pre-warming ({costs.pre_warming:,.2f}), the event pollers"
                f" ({costs.event_pollers:,.4f}: the minimum from"
                f" {event_poller_billed_s(0) / 60:.0f} minutes before the sale to its end, those above"
                f" it for the sale) and provisioned concurrency ({costs.provisioned_concurrency:,.2f}:"
                f" {provisioned_concurrency_billed_s(costs.sale_s) / 60:.0f} minutes) while set;"
                " refusals after the sell-out are extra (per million above)",
            )
        )
    return SalePlan(inputs, tuple(items), tuple(problems), tuple(warnings), values)


def _sale_costs(
    inputs: SaleInputs,
    reservations: int,
    per_million: float,
    prewarm: float,
    pollers: Pollers,
    containers: int,
) -> SaleCosts:
    sale_s = reservations / inputs.rate
    poller_hours = (
        pollers.queues
        * (
            pollers.minimum * event_poller_billed_s(sale_s)
            + (pollers.most - pollers.minimum) * max(60.0, sale_s)
        )
        / 3600
    )
    provisioned = (
        containers
        * inputs.memory_mb
        / 1024
        * provisioned_concurrency_billed_s(sale_s)
        * PRICES["lambda_provisioned_concurrency"].usd
    )
    return SaleCosts(
        reservations=reservations,
        sale_s=sale_s,
        variable=reservations * per_million / 1e6,
        pre_warming=prewarm,
        event_pollers=poller_hours * PRICES["event_poller"].usd,
        provisioned_concurrency=provisioned,
    )


# ------------------------------------------------------------------ the check


@dataclass(frozen=True)
class ClassShards:
    """A seat class of the event, as the data access reads it."""

    seat_class: str
    shard_count: int  # items sales are routed to
    shard_items: int  # items that exist (a consistent read reads them all)
    max_per_customer: int | None = None


@dataclass(frozen=True)
class StackSettings:
    """What `onsale check` reads from a deployed stack. None: not set (no limit of that kind),
    except where a field says otherwise."""

    mapping_enabled: bool
    maximum_concurrency: int | None  # ScalingConfig.MaximumConcurrency; None: the mapping's 1,000
    batch_size: int
    reserved_concurrency: int | None  # the function's; None: it draws on the unreserved pool
    account_concurrency: int
    unreserved_concurrency: int
    warm_write_units: int | None  # DescribeTable's WarmThroughput; None: not reported
    warm_read_units: int | None
    max_write_units: int | None  # OnDemandThroughput; None (or -1 as AWS reports it): no maximum
    max_read_units: int | None
    quota_write_units: int  # DescribeLimits' table-level quotas
    quota_read_units: int
    api_rate_limit: float | None  # the stage's throttle for POST /reservations; None: no stage found
    api_burst_limit: float | None
    api_account_rate_limit: float
    api_account_burst_limit: float
    classes: tuple[ClassShards, ...]
    api_stage: str = ""
    usage_plan_rate_limit: float | None = None  # the tightest usage plan on the stage (API keys)
    usage_plan_burst_limit: float | None = None
    event_pollers: int | None = None  # ProvisionedPollerConfig.MinimumPollers; None: standard mode
    maximum_pollers: int | None = None  # ProvisionedPollerConfig.MaximumPollers
    reserve_memory_mb: int = TEMPLATE_MEMORY_MB  # the reserve function's MemorySize
    issuer_memory_mb: int | None = None  # the ticket issuer's; None: not read (no output names it)
    issuer_lanes: int = 1  # the ticket issuer's ISSUE_LANES
    ticket_series: int | None = None  # the event's (seats tickets configure); None: not read
    index_warm_write_units: int | None = None  # the TicketsToIssue index's WarmThroughput
    index_warm_read_units: int | None = None
    sns_publish_quota: int = SNS_PUBLISH_QUOTA_DEFAULT  # not readable: as the operator states it
    reservation_queues: int = 1  # the stack's ReservationQueues output, each with a mapping as the first


@dataclass(frozen=True)
class Finding:
    """One line of the check: what the stack has, the rate it allows, and the rule."""

    key: str
    label: str
    have: str
    supports: float  # reservations per second this item allows
    rule: str
    need: str = ""  # what the target rate needs (filled by assess_stack)
    ok: bool = True


@dataclass(frozen=True)
class Assessment:
    rate: float  # the target: the one asked, or the supported rate when none was
    rate_given: bool
    supported_rate: float
    capped_by: str
    findings: tuple[Finding, ...]

    @property
    def ready(self) -> bool:
        return all(f.ok for f in self.findings)


def _none_if_unset(value: int | None) -> int | None:
    return None if value is None or value < 0 else value


def _stack_handler(settings: StackSettings) -> Handler:
    customer_limit = any(c.max_per_customer is not None for c in settings.classes)
    return Handler(settings.batch_size, settings.reserve_memory_mb, customer_limit)


def _event_source_finding(
    settings: StackSettings, handler: Handler
) -> tuple[Finding, Callable[[float], str]]:
    state = "" if settings.mapping_enabled else " (mapping DISABLED: nothing is consumed)"
    memory = f"; {settings.reserve_memory_mb:,} MB, about {_n(handler.per_container_s)}/s a container"
    if settings.event_pollers:
        minimum = settings.event_pollers
        queues = settings.reservation_queues
        most = max(minimum, settings.maximum_pollers or minimum)
        invocations = minimum * INVOCATIONS_PER_EVENT_POLLER * queues
        scaling = (
            f", up to {most:,} after {poller_ramp_seconds(minimum, most):.0f} s of backlog"
            if most > minimum
            else ", no scale-up"
        )
        each = f"{queues} queues x " if queues > 1 else ""
        have = f"{each}{minimum} event pollers ({invocations:,} invocations at once{scaling})"
        supports = min(pollers_rate(minimum * queues), handler.rate_for(invocations))
        rule = (
            f"from the first message: {_n(MESSAGES_PER_EVENT_POLLER_S)} messages a second per"
            f" event poller (MinimumPollers), and containers >= rate / {_n(handler.per_container_s)},"
            f" {INVOCATIONS_PER_EVENT_POLLER} per poller"
        )

        def need(r: float) -> str:
            pollers = Pollers.for_rate(r, handler.containers(r), intake_utilisation(handler.batch_size))
            return f">= {pollers.needed:,}" + (
                f" (at most {MAX_MINIMUM_EVENT_POLLERS} a queue from the first message: the plan"
                f" sets {pollers.queues} queues of {pollers.minimum})"
                if pollers.needed > MAX_MINIMUM_EVENT_POLLERS
                else ""
            )

        finding = Finding(
            "event_pollers", "event source provisioned mode", have + memory + state, supports, rule
        )
        return (finding if settings.mapping_enabled else replace(finding, supports=0.0)), need
    mapping = settings.maximum_concurrency or MAPPING_MAX_CONCURRENCY
    have = str(settings.maximum_concurrency) if settings.maximum_concurrency else "not set (1,000)"
    finding = Finding(
        "maximum_concurrency",
        "event source MaximumConcurrency",
        have + memory + state,
        handler.rate_for(mapping) if settings.mapping_enabled else 0.0,
        f"containers >= rate / {_n(handler.per_container_s)} (the reserve function's time per batch"
        " at its memory)",
    )
    return finding, lambda r: f">= {handler.containers(r):,}"


def stack_findings(settings: StackSettings) -> list[tuple[Finding, Callable[[float], str]]]:
    """Each item of the stack with the rate it allows, and a function of the target rate that
    says what that rate needs of it."""
    batch = settings.batch_size
    handler = _stack_handler(settings)
    issuer_memory = settings.issuer_memory_mb or TEMPLATE_MEMORY_MB
    numbering = numbering_rate(issuer_memory, settings.issuer_lanes)
    table = table_write_load(numbering, batch, customer_limit=handler.customer_limit)
    index = index_write_load(numbering)
    widest = max((c.shard_items for c in settings.classes), default=1)
    refusals = Load(read_units_per_refusal(widest, batch))
    out: list[tuple[Finding, Callable[[float], str]]] = [_event_source_finding(settings, handler)]

    concurrency_need: Callable[[float], str] = lambda r: f">= {handler.containers(r):,}"  # noqa: E731
    if settings.reserved_concurrency is not None:
        out.append(
            (
                Finding(
                    "lambda_concurrency",
                    "function reserved concurrency",
                    f"{settings.reserved_concurrency:,} (account limit {settings.account_concurrency:,})",
                    handler.rate_for(settings.reserved_concurrency),
                    "reserved concurrency caps the function's containers",
                ),
                concurrency_need,
            )
        )
    else:
        out.append(
            (
                Finding(
                    "lambda_concurrency",
                    "account unreserved concurrency (the function reserves none)",
                    f"{settings.unreserved_concurrency:,} (account limit {settings.account_concurrency:,})",
                    handler.rate_for(settings.unreserved_concurrency),
                    "the containers come out of the account's unreserved pool, shared with every other"
                    " function in the region",
                ),
                concurrency_need,
            )
        )
    for c in settings.classes:
        out.append(
            (
                Finding(
                    f"shards:{c.seat_class}",
                    f"seat class {c.seat_class} shard items",
                    f"{c.shard_count}"
                    + (f" routed of {c.shard_items}" if c.shard_items != c.shard_count else ""),
                    handler.rate_for(c.shard_count),
                    f"K >= containers (rate / {_n(handler.per_container_s)}), at most {MAX_SHARDS}:"
                    " one per container",
                ),
                lambda r: (
                    f">= {handler.containers(r):,}"
                    + (
                        f" (more than {MAX_SHARDS}: split the demand)"
                        if handler.containers(r) > MAX_SHARDS
                        else ""
                    )
                ),
            )
        )
    warm_write = settings.warm_write_units or NEW_TABLE_WARM_WRITE
    warm_read = settings.warm_read_units or NEW_TABLE_WARM_READ
    reported = "" if settings.warm_write_units else " (not reported: a new table's)"
    out.append(
        (
            Finding(
                "warm_write_units",
                "table warm write units/s",
                f"{warm_write:,}{reported}",
                table.rate_for(warm_write),
                f"warm write units >= (rate x {_n(table.per_sale)} + numbered/s x"
                f" {_n(table.per_numbered)}) / {UTILISATION}; the issuer numbers at most"
                f" {_n(numbering)}/s at {issuer_memory:,} MB",
            ),
            lambda r: f">= {_n(table.units(r))}",
        )
    )
    out.append(
        (
            Finding(
                "warm_read_units",
                "table warm read units/s",
                f"{warm_read:,}{reported}",
                refusals.rate_for(warm_read),
                f"warm read units >= rate x {_n(refusals.per_sale)} read units per refused request /"
                f" {UTILISATION} (after the sell-out; widest class {widest} items)",
            ),
            lambda r: f">= {_n(refusals.units(r))}",
        )
    )
    index_warm = settings.index_warm_write_units or NEW_INDEX_WARM_WRITE
    index_reported = "" if settings.index_warm_write_units else " (not reported: a new index's)"
    out.append(
        (
            Finding(
                "index_warm_write_units",
                "TicketsToIssue index warm write units/s",
                f"{index_warm:,}{index_reported}",
                min(index.rate_for(index_warm), rate_for_index_partitions(index_warm, index.numbering)),
                f"the index's warm write units >= (rate x {_n(INDEX_SALE_WRITE_UNITS)} + numbered/s"
                f" x {_n(INDEX_NUMBERED_WRITE_UNITS)}) / {UTILISATION}, and 1,000 a partition for"
                f" its busiest: {UNNUMBERED_BUCKETS} keys hashed onto its partitions (Poisson); an"
                " index that cannot keep up throttles the table's writes",
            ),
            lambda r: f">= {_n(max(index.units(r), index_warm_for(r, index.numbering)))}",
        )
    )
    out.append(
        (
            Finding(
                "table_quota",
                "table-level quota, write / read units/s",
                f"{settings.quota_write_units:,} / {settings.quota_read_units:,}",
                min(
                    table.rate_for(settings.quota_write_units),
                    index.rate_for(settings.quota_write_units),
                    refusals.rate_for(settings.quota_read_units),
                ),
                "the table, and its index, serve at most the quota (DescribeLimits; raise it in"
                " Service Quotas)",
            ),
            lambda r: f">= {_n(max(table.units(r), index.units(r)))} / {_n(refusals.units(r))}",
        )
    )
    max_write, max_read = _none_if_unset(settings.max_write_units), _none_if_unset(settings.max_read_units)
    out.append(
        (
            Finding(
                "table_maximum",
                "table OnDemandThroughput maximum, write / read",
                f"{'none' if max_write is None else f'{max_write:,}'}"
                f" / {'none' if max_read is None else f'{max_read:,}'}",
                min(
                    table.rate_for(max_write) if max_write is not None else math.inf,
                    refusals.rate_for(max_read) if max_read is not None else math.inf,
                ),
                "past its maximum an on-demand table throttles",
            ),
            lambda r: f"none or >= {_n(table.units(r))} / {_n(refusals.units(r))}",
        )
    )
    sns = sns_load(numbering)
    out.append(
        (
            Finding(
                "sns_quota",
                "SNS publish quota, messages/s",
                f"{settings.sns_publish_quota:,} (as stated: not read from AWS)",
                sns.rate_for(settings.sns_publish_quota),
                f"(rate + numbered/s) / {UTILISATION}: every answer and TICKETED outcome is one"
                " message; over the region's quota SNS throttles (--sns-publish-quota)",
            ),
            lambda r: f">= {_n(sns.units(r))}",
        )
    )
    if settings.issuer_memory_mb is not None:
        out.extend(_issuer_findings(issuer_memory, settings.issuer_lanes))
        if settings.ticket_series is not None:
            out.append(_series_finding(settings.ticket_series, settings.issuer_lanes, issuer_memory))
    out.extend(_api_findings(settings))
    return out


def _series_finding(series: int, lanes: int, memory: int) -> tuple[Finding, Callable[[float], str]]:
    """The event's ticket series against the lanes: a multiple of them, or the scheduled run
    numbers them alone (one lane's rate)."""
    aligned = series % lanes == 0
    return (
        Finding(
            "ticket_series",
            "the event's ticket series (seats tickets configure)",
            f"{series} ({lanes} issuer lane(s))",
            math.inf if aligned else numbering_rate(memory) * UTILISATION,
            "a multiple of IssueLanes, each series then numbered by one lane; else the scheduled run"
            " numbers the event alone (docs/guides/tickets.md)",
        ),
        lambda r: f"a multiple of {lanes}",
    )


def _issuer_findings(memory: int, lanes: int) -> list[tuple[Finding, Callable[[float], str]]]:
    """The ticket issuer's memory (what its lanes number at it) and lanes (what they number at one
    vCPU each), each kept at most UTILISATION busy."""
    numbering = numbering_rate(memory, lanes)
    at_one_vcpu = numbering_rate(PLANNED_MEMORY_MB, lanes)
    return [
        (
            Finding(
                "issue_memory",
                "ticket issuer memory, MB",
                f"{memory:,} (its lanes number about {_n(numbering)} sales/s)",
                numbering * UTILISATION if memory < PLANNED_MEMORY_MB else math.inf,
                f"each issuer lane numbers on its memory's share of one vCPU, {issuer_ms_per_sale():.2f}"
                f" ms of CPU a sale: below {PLANNED_MEMORY_MB:,} MB it falls behind a faster sale"
                " sooner than it must",
            ),
            lambda r: f">= {PLANNED_MEMORY_MB:,}" if r > numbering * UTILISATION else f"{memory:,}",
        ),
        (
            Finding(
                "issue_lanes",
                "ticket issuer lanes (IssueLanes)",
                f"{lanes} (about {_n(at_one_vcpu)} sales/s at one vCPU each)",
                at_one_vcpu * UTILISATION if lanes < MAX_ISSUER_LANES else math.inf,
                f"each lane numbers on its own vCPU; the plan keeps each at most {UTILISATION} busy,"
                " or the tickets fall behind the sale (docs/guides/tickets.md)",
            ),
            lambda r: f">= {issuer_lanes_for(r, PLANNED_MEMORY_MB)}",
        ),
    ]


def _api_findings(settings: StackSettings) -> list[tuple[Finding, Callable[[float], str]]]:
    out: list[tuple[Finding, Callable[[float], str]]] = []
    if settings.api_rate_limit is None or settings.api_burst_limit is None:
        stage = f"stage {settings.api_stage!r} " if settings.api_stage else ""
        out.append(
            (
                Finding(
                    "api_throttle",
                    "checkout API stage throttle",
                    f"{stage}not found",
                    0.0,
                    "the stack's checkout API has no stage to take requests",
                ),
                lambda r: "a deployed stage",
            )
        )
    else:
        out.append(
            (
                Finding(
                    "api_throttle",
                    "checkout API throttle for POST /reservations, rate / burst",
                    f"{_n(settings.api_rate_limit)} / {_n(settings.api_burst_limit)}",
                    rate_for_api(settings.api_rate_limit, settings.api_burst_limit),
                    f"rate >= the sale's rate, burst >= {API_BURST_PER_RATE} x rate",
                ),
                lambda r: f">= {_n(r)} / {_n(r * API_BURST_PER_RATE)}",
            )
        )
    if settings.usage_plan_rate_limit is not None:
        burst = settings.usage_plan_burst_limit or settings.usage_plan_rate_limit * API_BURST_PER_RATE
        out.append(
            (
                Finding(
                    "api_usage_plan",
                    "checkout API usage plan throttle (per API key), rate / burst",
                    f"{_n(settings.usage_plan_rate_limit)} / {_n(burst)}",
                    rate_for_api(settings.usage_plan_rate_limit, burst),
                    f"rate >= the sale's rate, burst >= {API_BURST_PER_RATE} x rate (a checkout"
                    " sending with one key)",
                ),
                lambda r: f">= {_n(r)} / {_n(r * API_BURST_PER_RATE)}",
            )
        )
    out.append(
        (
            Finding(
                "api_account_throttle",
                "API Gateway account throttle, rate / burst",
                f"{_n(settings.api_account_rate_limit)} / {_n(settings.api_account_burst_limit)}",
                settings.api_account_rate_limit,
                "the account's requests per second over all its APIs in the region (the burst is AWS's)",
            ),
            lambda r: f">= {_n(r)}",
        )
    )
    return out


def assess_stack(settings: StackSettings, rate: float | None = None) -> Assessment:
    """Each item's finding at `rate` (reservations per second), or, without one, at the rate the
    stack supports: the lowest any item allows. A stack that supports no rate at all (a disabled
    mapping, no API stage, a reserved concurrency of 0) is never ready."""
    items = stack_findings(settings)
    supported = min((f.supports for f, _ in items), default=0.0)
    capped = min(items, key=lambda pair: pair[0].supports)[0].label if items else ""
    target = rate if rate is not None else supported
    findings = []
    for finding, need in items:
        ok = finding.supports > 0 and finding.supports >= target * (1 - 1e-9)
        findings.append(replace(finding, need=need(target) if target > 0 else "", ok=ok))
    return Assessment(target, rate is not None, supported, capped, tuple(findings))
