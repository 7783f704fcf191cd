"""What an on-sale of a given rate needs from the stack, and the rate a deployed stack's settings allow.

Pure arithmetic, no AWS calls: `plan_sale` answers `seats onsale plan`, `assess_stack` answers
`seats onsale check` from the settings `onsale.stack_reader` reads. Every figure carries its rule;
docs/guides/size-a-sale.md lists the rules with their sources. The rate is reservations per second at the
sale's peak, all confirmed (the most write units a reservation costs); the same per-item rules
give both directions (what a rate needs, what a setting allows), so the plan and the check agree.

The rules, in short:

- One container confirms about 800 reservations per second on a shard item of its own
  (docs/explanation/sharding.md: `seats simulate --containers 1 --requests 50000` answers about 830/s). So
  the event source's `MaximumConcurrency` >= rate / 800, and each seat class needs K >= that many
  shard items (at most 64, `models.MAX_SHARDS`): with fewer items than containers, containers
  share items and conflict. A class supports about 800/s per shard item.
- Write units per confirmed reservation: its record is a transactional put of an item under
  1 KB (2 units), and the inventory item's update (2 units) is shared by the reservations of one
  transaction (at most 99, the template's `BatchSize`): 2 + 2/99 = 2.02. A class with a
  per-customer limit adds the customer's counter, 2 more units in the same transaction. The
  ticket issuer then numbers it on the same table (docs/guides/tickets.md): the record's update in the
  numbering transaction (2 units) and its share of its batch of 98 (the counter 2, the ledger
  entry of about 5 KB 10, clearing it from the outbox 5): 2 + 17/98 = 2.17. So 4.19 in all on
  the table's write throughput. The TicketsToIssue index's writes (the sale's entry, its removal,
  the ledger's outbox entry: 2 + 2/98) are billed too but take the index's throughput, not the
  table's: they are in the cost, not in the warm write units.
- Read units per refused request after the sell-out: each batch of refusals decides SOLD_OUT from a
  consistent read of the class: a `GetItem` of shard 0 (1 unit) and, for a sharded class, a
  `TransactGetItems` of all its K items (2 units each) (docs/explanation/sharding.md); (1 + 2K) / 99 per
  request. Refused requests write 1 unit each (a `PutItem` of their record).
- The table serves at once its warm throughput (a new on-demand table: 4,000 write / 12,000 read
  units per second), at most its per-table quota (40,000 by default) and its `OnDemandThroughput`
  maximum if one is set. The plan keeps the table at most 80% busy (`TABLE_UTILISATION`, this
  project's choice: with a table limit of 40,000 write units the simulation confirmed 14,136/s,
  70% of the limit, docs/explanation/sharding.md), so the needed units are rate x units / 0.8.
- A seat map (`SaleInputs.mapped`, docs/guides/seat-maps.md): one container confirms about 160
  best-available requests a second, a take writes its row item and its record (4 units), a
  refusal reads about 0.25 units, and there are no shard items (the constants below say where
  each figure was measured).
- The event source: in standard mode 5 invocations at once, then 300 more a minute; in
  provisioned mode (`EventPollers`) 10 per poller from the first message
  (`seat_tools.event_source_scaling`). Each new container first pays a cold start (about 0.5 s),
  most of it spared when the function's provisioned concurrency (`ProvisionedConcurrency`)
  initialised it before the sale: as many as the containers.
- The checkout API's stage throttle >= the rate, its burst >= twice the rate (the template's ratio,
  1,000 and 2,000); API Gateway's account throttle is 10,000 requests per second per region.
- Lambda: the function's reserved concurrency, or else the account's unreserved concurrency,
  must hold the containers (the account's default is 1,000 per region).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from seat_inventory.models import MAX_SHARDS
from seat_inventory.settings import MAX_ISSUE_SERIES_AT_ONCE
from seat_tools.bench.ceiling import mean_transaction_latency_s
from seat_tools.bench.pricing import PRICES, CostBreakdown, cost_per_million
from seat_tools.event_source_scaling import (
    INITIAL_CONCURRENT_BATCHES,
    INVOCATIONS_PER_EVENT_POLLER,
    MIN_EVENT_POLLERS,
    SCALE_UP_PER_MINUTE,
    event_pollers_for,
    scale_up_seconds,
)

RESERVATIONS_PER_CONTAINER_S = 800
# A mapped class (docs/guides/seat-maps.md): one container confirms about 160 best-available requests a
# second (`seats simulate --seat-map examples/seat_maps/stadium.json --containers 10
# --containers-at-once --seats-per-request 8 --requests 5000 --warm-write-units-per-s 40000`:
# 1,642/s on 10 containers, seed 1, at fde0cd3; 1,192/s before its whole-class reads 16 at a time;
# 1,709/s once a take fills its slice's gaps, the lower 160 kept); a take writes its row item and
# its record (4 units), and a request refused after the sell-out reads about 0.25 units (the
# stadium's 1,000,000-request run, `seats simulate --seat-map examples/seat_maps/stadium.json
# --containers 64 --seats-per-request 8 --warm-write-units-per-s 40000 --requests 1000000 --output
# json` at bd59751: 242,296 read units for 984,403 refusals; 0.56 at e422598, before the sale's end
# read the whole class rather than its free row items).
RESERVATIONS_PER_MAPPED_CONTAINER_S = 160
MAPPED_TAKE_WRITE_UNITS = 4.0
MAPPED_READ_UNITS_PER_REFUSAL = 0.25
MAX_RESERVATIONS_PER_TRANSACTION = 99  # the inventory update and at most 99 records in 100 actions
TEMPLATE_BATCH_SIZE = 99  # template.yaml's BatchSize default
TEMPLATE_MEMORY_MB = 512  # template.yaml's Globals.Function.MemorySize
RECORD_WRITE_UNITS = 2.0  # a transactional put of an item under 1 KB
INVENTORY_WRITE_UNITS = 2.0  # the inventory item's update in the transaction
COUNTER_WRITE_UNITS = 2.0  # a per-customer counter's update in the transaction
REJECTION_WRITE_UNITS = 1.0  # a refused request's record: one conditional PutItem
# The ticket issuer's writes per numbered reservation (docs/guides/tickets.md, "Cost"): on the table, the
# record's update in the numbering transaction and its share of the batch's counter (2), ledger
# entry (about 5 KB: 10) and outbox clearing (5); on the TicketsToIssue index, the sale's entry,
# its removal and the share of the ledger's outbox entry in and out.
TICKET_BATCH = 98
TICKET_RECORD_WRITE_UNITS = 2.0
TICKET_BATCH_WRITE_UNITS = 17.0
TICKET_INDEX_WRITE_UNITS = 2.0 + 2.0 / TICKET_BATCH
# One ticket series numbers about 820 sales a second as the issuer runs (`seats simulate`,
# docs/guides/tickets.md); a plan counts 600, leaving about a quarter spare.
SERIES_NUMBERED_PER_S = 820
SERIES_PLANNED_PER_S = 600
SHARD0_READ_UNITS = 1.0  # strongly consistent GetItem of shard 0
TRANSACT_READ_UNITS_PER_ITEM = 2.0  # TransactGetItems: 2 units per item under 4 KB
NEW_TABLE_WARM_WRITE = 4_000
NEW_TABLE_WARM_READ = 12_000
PARTITION_WRITE_UNITS = 1_000
PARTITION_READ_UNITS = 3_000
TABLE_QUOTA_DEFAULT = 40_000
TABLE_UTILISATION = 0.8
MAPPING_MIN_CONCURRENCY = 2
MAPPING_MAX_CONCURRENCY = 1_000
LAMBDA_ACCOUNT_CONCURRENCY_DEFAULT = 1_000
UNRESERVED_CONCURRENCY_MINIMUM = 100
API_ACCOUNT_RATE_DEFAULT = 10_000
API_ACCOUNT_BURST_DEFAULT = 5_000
API_BURST_PER_RATE = 2
SQS_BATCH = 10  # SendMessageBatch, ReceiveMessage and DeleteMessageBatch carry up to 10 messages
SNS_BATCH = 10  # PublishBatch carries up to 10 outcomes


def _n(value: float) -> str:
    """A figure for people: thousands separated, two decimals below 10."""
    if value == math.inf:
        return "unlimited"
    if abs(value) < 10 and value != int(value):
        return f"{value:.2f}"
    return f"{value:,.0f}"


# ------------------------------------------------------------------ the rules, both directions


def per_container_s(*, mapped: bool = False) -> float:
    """Reservations one container confirms a second: on a shard item of its own, or on a seat map."""
    return RESERVATIONS_PER_MAPPED_CONTAINER_S if mapped else RESERVATIONS_PER_CONTAINER_S


def containers_needed(rate: float, *, mapped: bool = False) -> int:
    """Concurrent containers that confirm `rate` reservations per second."""
    return max(1, math.ceil(rate / per_container_s(mapped=mapped) - 1e-9))


def rate_for_containers(containers: int, *, mapped: bool = False) -> float:
    return containers * per_container_s(mapped=mapped)


def reservations_per_transaction(batch_size: int) -> int:
    return max(1, min(batch_size, MAX_RESERVATIONS_PER_TRANSACTION))


def write_units_per_reservation(
    batch_size: int = TEMPLATE_BATCH_SIZE, *, customer_limit: bool = False, mapped: bool = False
) -> float:
    """Write units one confirmed reservation costs the table: its record, its share of the
    inventory item's update (a mapped class: its row item's), its customer's counter when the
    class has a limit, and the ticket issuer's numbering of it (`ticket_write_units_per_reservation`)."""
    if mapped:
        per = MAPPED_TAKE_WRITE_UNITS
    else:
        per = RECORD_WRITE_UNITS + INVENTORY_WRITE_UNITS / reservations_per_transaction(batch_size)
    return per + (COUNTER_WRITE_UNITS if customer_limit else 0.0) + ticket_write_units_per_reservation()


def ticket_write_units_per_reservation() -> float:
    """The ticket issuer's table write units per numbered reservation: 2 + 17/98 = 2.17."""
    return TICKET_RECORD_WRITE_UNITS + TICKET_BATCH_WRITE_UNITS / TICKET_BATCH


def read_units_per_refusal(
    shard_items: int, batch_size: int = TEMPLATE_BATCH_SIZE, *, mapped: bool = False
) -> float:
    """Read units per request refused after the sell-out: one consistent read of the class per
    batch (a mapped class: its views and slice reads, as measured)."""
    if mapped:
        return MAPPED_READ_UNITS_PER_REFUSAL
    per_batch = SHARD0_READ_UNITS + (TRANSACT_READ_UNITS_PER_ITEM * shard_items if shard_items > 1 else 0.0)
    return per_batch / max(1, batch_size)


def units_needed(rate: float, units_per_request: float) -> float:
    """Units per second the table must serve for `rate`, at most TABLE_UTILISATION busy."""
    return rate * units_per_request / TABLE_UTILISATION


def rate_for_units(units_per_s: float, units_per_request: float) -> float:
    return units_per_s * TABLE_UTILISATION / units_per_request if units_per_request > 0 else math.inf


def rate_for_api(rate_limit: float, burst_limit: float) -> float:
    return min(rate_limit, burst_limit / API_BURST_PER_RATE)


def item_transaction_ceiling(batch_size: int = TEMPLATE_BATCH_SIZE) -> float:
    """Reservations per second one shard item can commit, one transaction at a time: full
    transactions over their mean modelled latency (`bench.ceiling`, published latencies
    extrapolated past 25 items)."""
    per = reservations_per_transaction(batch_size)
    return per / mean_transaction_latency_s(per + 1)


def _round_up(value: float, step: int) -> int:
    return int(math.ceil(value / step - 1e-9) * step)


# ------------------------------------------------------------------ cost


def cost_per_million_confirmed(
    batch_size: int = TEMPLATE_BATCH_SIZE,
    memory_mb: int = TEMPLATE_MEMORY_MB,
    *,
    customer_limit: bool = False,
    mapped: bool = False,
) -> CostBreakdown:
    """US dollars per million confirmed reservations (pricing.py's list prices): write units
    as above plus the TicketsToIssue index's (TICKET_INDEX_WRITE_UNITS); SQS: a send, a receive
    and a delete per 10 messages; SNS: one PublishBatch per 10 outcomes, CONFIRMED and TICKETED;
    Lambda: one invocation per batch and 1/800 s (mapped: 1/120 s) of a container per reservation.
    Leaves out read units before the sell-out (shard surveys: about 0.01 per reservation in
    `seats simulate`), cancelled transactions, API Gateway and the pre-warming charge."""
    million = 1_000_000
    return cost_per_million(
        write_units=million
        * (
            write_units_per_reservation(batch_size, customer_limit=customer_limit, mapped=mapped)
            + TICKET_INDEX_WRITE_UNITS
        ),
        read_units=0.0,
        sqs_requests=round(million * 3 / SQS_BATCH),
        sns_requests=round(2 * million / SNS_BATCH),
        invocations=round(million / max(1, batch_size)),
        gb_seconds=million * (memory_mb / 1024) / per_container_s(mapped=mapped),
        reservations=million,
    )


def cost_per_million_refused(
    shard_items: int,
    batch_size: int = TEMPLATE_BATCH_SIZE,
    memory_mb: int = TEMPLATE_MEMORY_MB,
    *,
    mapped: bool = False,
) -> CostBreakdown:
    """US dollars per million requests refused after the sell-out: a 1-unit record each and the
    batch's consistent read of the class; SQS, SNS and Lambda as for a confirmed one."""
    million = 1_000_000
    return cost_per_million(
        write_units=million * REJECTION_WRITE_UNITS,
        read_units=million * read_units_per_refusal(shard_items, batch_size, mapped=mapped),
        sqs_requests=round(million * 3 / SQS_BATCH),
        sns_requests=round(million / SNS_BATCH),
        invocations=round(million / max(1, batch_size)),
        gb_seconds=million * (memory_mb / 1024) / per_container_s(mapped=mapped),
        reservations=million,
    )


# ------------------------------------------------------------------ the plan


@dataclass(frozen=True)
class SaleInputs:
    """What `seats onsale plan` is asked: the peak rate (reservations per second), and optionally
    the seats on sale and how many each reservation takes."""

    rate: float
    seats: int | None = None
    seats_per_request: int = 1
    customer_limit: bool = False
    batch_size: int = TEMPLATE_BATCH_SIZE
    memory_mb: int = TEMPLATE_MEMORY_MB
    mapped: bool = False  # the seats are on a seat map (docs/guides/seat-maps.md): no shard items

    def __post_init__(self) -> None:
        if not self.rate > 0:
            raise ValueError("the rate must be above 0 reservations per second")
        if self.seats is not None and self.seats < 1:
            raise ValueError("the seats must be at least 1")
        if self.seats_per_request < 1 or self.batch_size < 1 or self.memory_mb < 1:
            raise ValueError("seats per request, batch size and memory must be at least 1")


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
    problems: tuple[str, ...] = ()  # what this design cannot give at this rate
    values: dict[str, float] = field(default_factory=dict)  # the figures, for programs

    def item(self, key: str) -> PlanItem:
        return next(i for i in self.items if i.key == key)


def _shard_items(inputs: SaleInputs, containers: int, problems: list[str]) -> tuple[int, str]:
    """Shard items per seat class and the rule; what they cannot give goes to `problems`."""
    if inputs.mapped:
        return 0, (
            "none: a mapped class takes seats on its row items (a row, or 40 seats of one), and"
            ' containers spread over its sections and rows (docs/guides/seat-maps.md, "At scale")'
        )
    batch = inputs.batch_size
    shards = min(MAX_SHARDS, containers)
    shard_rule = (
        f"seats event create/reshard --shards K: K >= the containers that sell the class at once"
        f" ({containers:,}), at most {MAX_SHARDS}; with fewer items than containers they share"
        f" items and conflict (docs/explanation/sharding.md); an item commits one transaction at a time, at"
        f" most about {_n(item_transaction_ceiling(batch))} reservations/s (bench/ceiling.py)"
    )
    if containers > MAX_SHARDS:
        problems.append(
            f"{containers:,} containers on one seat class: a class has at most {MAX_SHARDS} shard"
            f" items, about {_n(rate_for_containers(MAX_SHARDS))}/s (measured: 43,288/s at 64"
            " containers on 64 items, docs/explanation/sharding.md); spread the demand over several classes"
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
                    f" {_n(rate_for_containers(by_seats))}/s"
                )

    return shards, shard_rule


def plan_sale(inputs: SaleInputs) -> SalePlan:
    """What a sale at `inputs.rate` needs, item by item, each with its rule."""
    rate, batch, mapped = inputs.rate, inputs.batch_size, inputs.mapped
    containers = containers_needed(rate, mapped=mapped)
    mapping = max(MAPPING_MIN_CONCURRENCY, containers)
    problems: list[str] = []
    if containers > MAPPING_MAX_CONCURRENCY:
        problems.append(
            f"{containers:,} containers: one event source mapping runs at most"
            f" {MAPPING_MAX_CONCURRENCY:,} batches at once"
            f" (about {_n(rate_for_containers(MAPPING_MAX_CONCURRENCY, mapped=mapped))}/s)"
        )
    shards, shard_rule = _shard_items(inputs, containers, problems)
    wu = write_units_per_reservation(batch, customer_limit=inputs.customer_limit, mapped=mapped)
    write_units = units_needed(rate, wu)
    warm_write = max(NEW_TABLE_WARM_WRITE, _round_up(write_units, 1_000))
    ru = read_units_per_refusal(shards, batch, mapped=mapped)
    read_units = units_needed(rate, ru)
    warm_read = max(NEW_TABLE_WARM_READ, _round_up(read_units, 1_000))
    quota_write = max(TABLE_QUOTA_DEFAULT, warm_write)
    quota_read = max(TABLE_QUOTA_DEFAULT, warm_read)
    per_txn = reservations_per_transaction(batch)
    counter = f" + {_n(COUNTER_WRITE_UNITS)} for the customer's counter" if inputs.customer_limit else ""
    transact_read = f", TransactGetItems of its {shards} items at 2 units each" if shards > 1 else ""
    raise_quota = "; raise it first" if max(quota_write, quota_read) > TABLE_QUOTA_DEFAULT else ""
    raise_api = "; raise it in Service Quotas" if rate > API_ACCOUNT_RATE_DEFAULT else ""
    ramp = scale_up_seconds(mapping)
    pollers = event_pollers_for(mapping)
    pollers_per_hour = pollers * PRICES["event_poller"].usd
    provisioned_per_hour = (
        mapping * inputs.memory_mb / 1024 * 3600 * PRICES["lambda_provisioned_concurrency"].usd
    )
    confirmed = cost_per_million_confirmed(
        batch, inputs.memory_mb, customer_limit=inputs.customer_limit, mapped=mapped
    )
    refused = cost_per_million_refused(shards, batch, inputs.memory_mb, mapped=mapped)

    series = min(MAX_ISSUE_SERIES_AT_ONCE, max(1, math.ceil(rate / SERIES_PLANNED_PER_S)))
    if rate > MAX_ISSUE_SERIES_AT_ONCE * SERIES_NUMBERED_PER_S:
        problems.append(
            f"the ticket issuer numbers at most {MAX_ISSUE_SERIES_AT_ONCE} series at once, about"
            f" {_n(MAX_ISSUE_SERIES_AT_ONCE * SERIES_NUMBERED_PER_S)}/s: ticket numbers fall behind"
            " the sale (docs/guides/tickets.md)"
        )

    items = [
        PlanItem(
            "maximum_concurrency",
            "MaximumConcurrency",
            mapping,
            f"parameter MaximumConcurrency: containers >= rate / {_n(per_container_s(mapped=mapped))}"
            f" (one container confirms about {_n(per_container_s(mapped=mapped))}/s"
            + (
                " on a seat map, docs/guides/seat-maps.md"
                if mapped
                else " on its own shard item, docs/explanation/sharding.md"
            )
            + f"); AWS allows {MAPPING_MIN_CONCURRENCY}"
            f"-{MAPPING_MAX_CONCURRENCY:,} per mapping",
        ),
        PlanItem("shards", "shard items per seat class", "none" if mapped else shards, shard_rule),
        PlanItem(
            "warm_write_units",
            "table warm write units/s",
            warm_write,
            f"parameter TableWarmWriteUnitsPerSecond: rate x {_n(wu)} write units per reservation"
            f" / {TABLE_UTILISATION} = {_n(write_units)}, rounded up to a thousand, at least a new"
            f" table's {NEW_TABLE_WARM_WRITE:,}: "
            + (
                f"{_n(MAPPED_TAKE_WRITE_UNITS)} for the take (its row item and its record)"
                if mapped
                else f"{_n(RECORD_WRITE_UNITS)} for the record + {_n(INVENTORY_WRITE_UNITS)} for the"
                f" inventory update shared by {per_txn} reservations per transaction"
            )
            + f"{counter} + {_n(ticket_write_units_per_reservation())}"
            " for the ticket issuer's numbering (docs/guides/tickets.md)",
        ),
        PlanItem(
            "warm_read_units",
            "table warm read units/s",
            warm_read,
            f"parameter TableWarmReadUnitsPerSecond: after the sell-out, rate x {_n(ru)} read"
            f" units per refused request / {TABLE_UTILISATION} = {_n(read_units)}, at least a new"
            f" table's {NEW_TABLE_WARM_READ:,}: "
            + (
                "the containers' views of the map and the slices they read"
                " (measured, docs/guides/seat-maps.md)"
                if mapped
                else f"each batch of {batch} refusals reads the class (GetItem of shard 0{transact_read})"
            ),
        ),
        PlanItem(
            "table_quota",
            "table quota, write / read",
            f"{quota_write:,} / {quota_read:,}",
            "Service Quotas, DynamoDB table-level throughput: at least the warm throughput (a table"
            f" is pre-warmed up to its quota); the default is {TABLE_QUOTA_DEFAULT:,}{raise_quota}",
        ),
        PlanItem(
            "table_maximum",
            "table maximum, write / read",
            f"-1 or >= {warm_write:,} / {warm_read:,}",
            "parameters TableMaxWriteRequestUnits / TableMaxReadRequestUnits (OnDemandThroughput):"
            " a maximum below the warm throughput throttles the sale there; -1 sets none",
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
            mapping,
            "Service Quotas, Lambda concurrent executions: the containers, besides what else runs"
            f" in the account and region; the default is {LAMBDA_ACCOUNT_CONCURRENCY_DEFAULT:,}"
            " (new accounts get less); reserving them for the function needs a limit of at least"
            f" {mapping + UNRESERVED_CONCURRENCY_MINIMUM:,} (AWS keeps"
            f" {UNRESERVED_CONCURRENCY_MINIMUM} unreserved)",
        ),
        PlanItem(
            "scale_up_seconds",
            "scale-up, seconds",
            round(ramp, 1),
            f"standard mode: the event source starts {INITIAL_CONCURRENT_BATCHES} batches at once,"
            f" then up to {SCALE_UP_PER_MINUTE} more a minute while messages wait; until then the"
            " rate is lower; 0 with EventPollers",
        ),
        PlanItem(
            "event_pollers",
            "EventPollers (provisioned mode)",
            pollers,
            f"parameter EventPollers: containers / {INVOCATIONS_PER_EVENT_POLLER} rounded up, at"
            f" least {MIN_EVENT_POLLERS} (each poller runs up to {INVOCATIONS_PER_EVENT_POLLER}"
            f" invocations): all {mapping:,} containers work from the first message, no scale-up;"
            f" ${pollers_per_hour:.3f} an hour while set ({pollers} x"
            f" ${PRICES['event_poller'].usd} per poller-hour): set it before the sale, 0 after;"
            " it takes MaximumConcurrency's place (docs/guides/size-a-sale.md)",
        ),
        PlanItem(
            "provisioned_concurrency",
            "ProvisionedConcurrency",
            mapping,
            "parameter ProvisionedConcurrency: the containers, initialised before the sale, so the"
            " first batches do not wait for the environments to start (0.28 s of a 0.48 s cold"
            " start; the first invocation still builds its clients, docs/explanation/simulation.md: a tenth"
            " of a 3 s sell-out); with EventPollers, 10 per poller;"
            f" ${provisioned_per_hour:.2f} an hour while set ({mapping:,} x {inputs.memory_mb} MB x"
            f" ${PRICES['lambda_provisioned_concurrency'].usd:.10f} per GB-second, rounded up to 5"
            " minutes): set it about 10 minutes before the sale (sam deploy waits until the"
            " environments are ready), 0 after (docs/guides/size-a-sale.md)",
        ),
        PlanItem(
            "ticket_series",
            "ticket series / IssueSeriesAtOnce",
            f"{series} / {series}",
            f"seats tickets configure EVENT --series N before the first sale: N = rate /"
            f" {SERIES_PLANNED_PER_S} rounded up (one series numbers about"
            f" {SERIES_NUMBERED_PER_S} a second as the issuer runs, docs/guides/tickets.md), at most"
            f" {MAX_ISSUE_SERIES_AT_ONCE}; parameter"
            " IssueSeriesAtOnce >= N (the issuer numbers that many series at once; more series"
            " than that wait their turn)",
        ),
        PlanItem(
            "cost_per_million_confirmed",
            "USD per million confirmed",
            round(confirmed.total, 2),
            f"DynamoDB {confirmed.dynamodb:.2f} ({_n(wu)} write units each on the table and"
            f" {_n(TICKET_INDEX_WRITE_UNITS)} on the TicketsToIssue index), SQS {confirmed.sqs:.2f},"
            f" SNS {confirmed.sns:.2f} (CONFIRMED and TICKETED), Lambda {confirmed.lambda_:.3f},"
            " at pricing.py's us-east-1 list prices; without API Gateway, cancelled transactions"
            " and pre-warming",
        ),
        PlanItem(
            "cost_per_million_refused",
            "USD per million refused",
            round(refused.total, 2),
            f"after the sell-out: DynamoDB {refused.dynamodb:.2f} ({_n(REJECTION_WRITE_UNITS)} write"
            f" unit and {_n(ru)} read units each), SQS {refused.sqs:.2f}, SNS {refused.sns:.2f},"
            f" Lambda {refused.lambda_:.3f}",
        ),
    ]
    values: dict[str, float] = {
        "write_units_per_reservation": wu,
        "write_units_per_s": write_units,
        "read_units_per_refusal": ru,
        "read_units_per_s": read_units,
        "event_pollers_usd_per_hour": pollers_per_hour,
        "provisioned_concurrency_usd_per_hour": provisioned_per_hour,
    }
    if inputs.seats is not None:
        reservations = math.ceil(inputs.seats / inputs.seats_per_request)
        duration = reservations / rate
        values["sale_seconds"] = duration
        values["sale_usd"] = reservations * confirmed.total / 1e6
        short = (
            f"; shorter than the scale-up ({ramp:.0f} s): the rate is reached only with EventPollers"
            if duration < ramp
            else ""
        )
        items.append(
            PlanItem(
                "sale",
                "sale: seconds / USD",
                f"{_n(duration)} / {values['sale_usd']:,.2f}",
                f"{inputs.seats:,} seats at {inputs.seats_per_request} per reservation:"
                f" {reservations:,} reservations at {_n(rate)}/s{short}",
            )
        )
    return SalePlan(inputs, tuple(items), tuple(problems), values)


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
    event_pollers: int | None = None  # ProvisionedPollerConfig.MaximumPollers; None: standard mode


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


def stack_findings(settings: StackSettings) -> list[tuple[Finding, Callable[[float], str]]]:
    """Each item of the stack with the rate it allows, and a function of the target rate that
    says what that rate needs of it."""
    batch = settings.batch_size
    customer_limit = any(c.max_per_customer is not None for c in settings.classes)
    wu = write_units_per_reservation(batch, customer_limit=customer_limit)
    widest = max((c.shard_items for c in settings.classes), default=1)
    ru = read_units_per_refusal(widest, batch)
    out: list[tuple[Finding, Callable[[float], str]]] = []

    state = "" if settings.mapping_enabled else " (mapping DISABLED: nothing is consumed)"
    if settings.event_pollers:
        mapping = settings.event_pollers * INVOCATIONS_PER_EVENT_POLLER
        key, label = "event_pollers", "event source provisioned mode"
        have = f"{settings.event_pollers} event pollers ({mapping:,} invocations at once, no scale-up)"
        rule = (
            f"containers >= rate / {RESERVATIONS_PER_CONTAINER_S}, {INVOCATIONS_PER_EVENT_POLLER}"
            " per event poller (MaximumPollers)"
        )
    else:
        mapping = settings.maximum_concurrency or MAPPING_MAX_CONCURRENCY
        key, label = "maximum_concurrency", "event source MaximumConcurrency"
        have = str(settings.maximum_concurrency) if settings.maximum_concurrency else "not set (1,000)"
        rule = f"containers >= rate / {RESERVATIONS_PER_CONTAINER_S}"
    supports = rate_for_containers(mapping) if settings.mapping_enabled else 0.0
    out.append(
        (
            Finding(key, label, have + state, supports, rule),
            lambda r: f">= {containers_needed(r):,}",
        )
    )
    if settings.reserved_concurrency is not None:
        out.append(
            (
                Finding(
                    "lambda_concurrency",
                    "function reserved concurrency",
                    f"{settings.reserved_concurrency:,} (account limit {settings.account_concurrency:,})",
                    rate_for_containers(settings.reserved_concurrency),
                    "reserved concurrency caps the function's containers",
                ),
                lambda r: f">= {containers_needed(r):,}",
            )
        )
    else:
        out.append(
            (
                Finding(
                    "lambda_concurrency",
                    "account unreserved concurrency (the function reserves none)",
                    f"{settings.unreserved_concurrency:,} (account limit {settings.account_concurrency:,})",
                    rate_for_containers(settings.unreserved_concurrency),
                    "the containers come out of the account's unreserved pool, shared with every other"
                    " function in the region",
                ),
                lambda r: f">= {containers_needed(r):,}",
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
                    rate_for_containers(c.shard_count),
                    f"K >= rate / {RESERVATIONS_PER_CONTAINER_S}, at most {MAX_SHARDS}: one per container",
                ),
                lambda r: (
                    f">= {containers_needed(r):,}"
                    + (
                        f" (more than {MAX_SHARDS}: split the demand)"
                        if containers_needed(r) > MAX_SHARDS
                        else ""
                    )
                ),
            )
        )
    warm_write = settings.warm_write_units or NEW_TABLE_WARM_WRITE
    warm_read = settings.warm_read_units or NEW_TABLE_WARM_READ
    reported = "" if settings.warm_write_units else " (not reported: a new table's)"
    write_rule = f"warm write units >= rate x {_n(wu)} write units per reservation / {TABLE_UTILISATION}"
    read_rule = (
        f"warm read units >= rate x {_n(ru)} read units per refused request / {TABLE_UTILISATION}"
        f" (after the sell-out; widest class {widest} items)"
    )
    out.append(
        (
            Finding(
                "warm_write_units",
                "table warm write units/s",
                f"{warm_write:,}{reported}",
                rate_for_units(warm_write, wu),
                write_rule,
            ),
            lambda r: f">= {_n(units_needed(r, wu))}",
        )
    )
    out.append(
        (
            Finding(
                "warm_read_units",
                "table warm read units/s",
                f"{warm_read:,}{reported}",
                rate_for_units(warm_read, ru),
                read_rule,
            ),
            lambda r: f">= {_n(units_needed(r, ru))}",
        )
    )
    out.append(
        (
            Finding(
                "table_quota",
                "table-level quota, write / read units/s",
                f"{settings.quota_write_units:,} / {settings.quota_read_units:,}",
                min(
                    rate_for_units(settings.quota_write_units, wu),
                    rate_for_units(settings.quota_read_units, ru),
                ),
                "the table serves at most its quota (DescribeLimits; raise it in Service Quotas)",
            ),
            lambda r: f">= {_n(units_needed(r, wu))} / {_n(units_needed(r, ru))}",
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
                    rate_for_units(max_write, wu) if max_write is not None else math.inf,
                    rate_for_units(max_read, ru) if max_read is not None else math.inf,
                ),
                "past its maximum an on-demand table throttles",
            ),
            lambda r: f"none or >= {_n(units_needed(r, wu))} / {_n(units_needed(r, ru))}",
        )
    )
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
