"""`seats simulate`: the service's logic at AWS scale on a virtual clock (docs/explanation/simulation.md)."""

from __future__ import annotations

import dataclasses
import time
from typing import Any

import click

from seat_inventory.models import ISSUER_LANE_COUNTS, MAX_ORDER_LINES, MAX_SHARDS, MAX_TICKET_SERIES
from seat_inventory.settings import DEFAULT_ISSUE_LIMIT, Settings
from seat_tools.cli.output import OutputFormat, output_option, print_json, print_text
from seat_tools.contention.model import (
    NEW_TABLE_WARM_READ_UNITS_PER_S,
    NEW_TABLE_WARM_WRITE_UNITS_PER_S,
    PARTITION_READ_UNITS_PER_S,
    PARTITION_WRITE_UNITS_PER_S,
    PER_KEY,
    TABLE_QUOTA_UNITS_PER_S,
    ContentionSettings,
)
from seat_tools.event_source_scaling import (
    EVENT_POLLER_BYTES_PER_S,
    EVENT_POLLER_BYTES_PER_S_API_REFERENCE,
    INVOCATIONS_PER_EVENT_POLLER,
    MAX_MAXIMUM_EVENT_POLLERS,
    MAX_MINIMUM_EVENT_POLLERS,
    MIN_EVENT_POLLERS,
)
from seat_tools.local.engines import LocalStackError
from seat_tools.local.stack import table_contention
from seat_tools.local.template import load_template
from seat_tools.onsale.plan import SalePlan
from seat_tools.reservation_queues import MAX_RESERVATION_QUEUES
from seat_tools.seat_map_files import load_file as load_seat_map
from seat_tools.simulation.api import (
    ACCOUNT_BURST_LIMIT,
    ACCOUNT_RATE_LIMIT,
    API_KINDS,
    ApiSettings,
)
from seat_tools.simulation.issuer import (
    DEFAULT_ISSUE_SERIES_AT_ONCE,
    MAX_CONCURRENT_QUERIES,
    MAX_ISSUE_SERIES_AT_ONCE,
    SCHEDULE_S,
    IssuerConfig,
)
from seat_tools.simulation.planned import plan_config, plan_document, verdict
from seat_tools.simulation.report import format_table
from seat_tools.simulation.run import (
    DEFAULT_PUBLISH_MS,
    DEFAULT_RECEIVE_MS,
    DEFAULT_SNS_PUBLISH_PER_S,
    MAX_CONTAINERS,
    MAX_FED_SALES,
    SimulationConfig,
)
from seat_tools.simulation.seeds import MAX_SEEDS, format_summary, run_seeds, seeds_document

# The function's environment refers to resources a simulation does not have.
_PLACEHOLDERS = {"TABLE_NAME": "simulated-table", "OUTCOMES_TOPIC_ARN": "arn:aws:sns:simulated"}


class _Limit(click.ParamType):
    """Units per second, or no limit: `none` or -1 (the template's spelling), converted to -1.0."""

    name = "units|none"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        if isinstance(value, float):
            return value
        text = str(value).strip().lower()
        if text in ("none", "-1"):
            return NO_LIMIT
        try:
            number = float(text)
        except ValueError:
            self.fail(f"{value!r} is not a number of units per second, or none", param, ctx)
        if not number > 0:
            self.fail(f"{value!r} must be positive (or none, or -1, for no limit)", param, ctx)
        return number


class _Partitions(click.ParamType):
    """A partition count, or `per-key` (one partition per partition key)."""

    name = "count|per-key"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int):
            return value
        if str(value).strip().lower() == "per-key":
            return PER_KEY
        try:
            count = int(str(value))
        except ValueError:
            self.fail(f"{value!r} is not a partition count or per-key", param, ctx)
        if count < 1:
            self.fail(f"{value!r}: a table has at least 1 partition (or per-key)", param, ctx)
        return count


NO_LIMIT = -1.0  # what `_Limit` makes of none / -1


class _LineRange(click.ParamType):
    """Lines per order: `LO-HI` (or one number N, for N-N)."""

    name = "LO-HI"

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> tuple[int, int]:
        if isinstance(value, tuple):
            return value
        low, _, high = str(value).strip().partition("-")
        try:
            bounds = (int(low), int(high or low))
        except ValueError:
            self.fail(f"{value!r} is not a range of lines like 1-4", param, ctx)
        if not 1 <= bounds[0] <= bounds[1] <= MAX_ORDER_LINES:
            self.fail(f"{value!r}: lines per order are 1 to {MAX_ORDER_LINES}, low to high", param, ctx)
        return bounds


def _template_defaults() -> tuple[SimulationConfig, Settings]:
    """The function, queue, event-source and table settings as template.yaml's defaults set them."""
    template = load_template()
    function = template.function
    environment: dict[str, str] = {}
    for name, value in function.environment.items():
        environment[name] = _PLACEHOLDERS.get(name) or str(template.resolver.resolve(value))
    source = function.event_source
    parameters = template.parameters
    api = ApiSettings(
        rate_limit=float(parameters.get("ApiThrottlingRateLimit", ApiSettings.rate_limit)),
        burst_limit=float(parameters.get("ApiThrottlingBurstLimit", ApiSettings.burst_limit)),
    )
    issuer_memory = parameters.get("IssueFunctionMemorySize")
    config = SimulationConfig(
        tickets=IssuerConfig(
            memory_mb=int(float(issuer_memory)) if issuer_memory else 512,
            lanes=int(float(parameters.get("IssueLanes", 1))),
        ),
        api=api,
        containers=source.concurrency or 1000,
        queues=int(float(parameters.get("ReservationQueues", 1))),
        reserved_concurrency=int(float(parameters.get("ReserveFunctionConcurrency", 0))),
        event_pollers=source.event_pollers or 0,
        max_event_pollers=source.maximum_pollers or 0,
        batch_size=source.batch_size,
        batching_window_s=source.maximum_batching_window_s,
        visibility_timeout_s=template.queue.visibility_timeout_s,
        max_receive_count=template.queue.max_receive_count or 5,
        timeout_s=function.timeout_s,
        memory_mb=function.memory_mb,
        contention=dataclasses.replace(
            table_contention(template),
            index_warm_write_units_per_s=float(
                parameters.get("TicketsIndexWarmWriteUnitsPerSecond", NEW_TABLE_WARM_WRITE_UNITS_PER_S)
            ),
            index_warm_read_units_per_s=float(
                parameters.get("TicketsIndexWarmReadUnitsPerSecond", NEW_TABLE_WARM_READ_UNITS_PER_S)
            ),
        ),
    )
    return config, Settings.from_env(environment)


def _table_settings(template: ContentionSettings, **options: float | int | None) -> ContentionSettings:
    """The template's table settings with the options the command line gave (None: not given);
    NO_LIMIT (-1) is "no limit"."""
    changes: dict[str, Any] = {}
    for name, value in options.items():
        if value is not None:
            changes[name] = None if value == NO_LIMIT else value
    return dataclasses.replace(template, **changes)


def _check_seat_map_options(config: SimulationConfig) -> None:
    """One-line errors for options a seat-map run does not take (its map is its capacity) and a
    map that does not load."""
    if config.capacity is not None or config.shards != 1 or config.sold_per_s > 0 or config.pool_shards:
        raise ValueError(
            "--seat-map takes no --capacity, --shards, --pool-shards or --sold-per-s"
            " (the map is the capacity)"
        )
    load_seat_map(config.seat_map or "")


@click.command()
@click.option(
    "--containers",
    type=click.IntRange(1, 1000),
    help="Concurrent containers (MaximumConcurrency) [default: the template's].",
)
@click.option(
    "--requests",
    type=click.IntRange(1, MAX_FED_SALES),
    default=10_000,
    show_default=True,
    help="Reservation requests for the event (at most 3,000,000, about 1.5 GB a million; with"
    " --sold-per-s, sales fed to the issuer, at most 10,000,000).",
)
@click.option(
    "--capacity", type=click.IntRange(min=0), help="Seats of the event [default: enough for every request]."
)
@click.option(
    "--seats-per-request",
    type=click.IntRange(1, 10),
    default=1,
    show_default=True,
    help="Seats each request asks for.",
)
@click.option(
    "--duplicates",
    type=click.FloatRange(0.0, 1.0),
    default=0.0,
    show_default=True,
    help="Share of requests the producer sends twice (same reservation id).",
)
@click.option(
    "--arrival-rate",
    type=click.FloatRange(min=0.0),
    default=0.0,
    show_default=True,
    help="Requests sent per second; 0 sends them all at once (an on-sale's opening burst).",
)
@click.option("--batch-size", type=click.IntRange(1, 10_000), help="[default: the template's BatchSize]")
@click.option(
    "--batching-window",
    type=click.FloatRange(0.0, 300.0),
    help="Seconds [default: the template's MaximumBatchingWindowInSeconds].",
)
@click.option(
    "--visibility-timeout", type=click.FloatRange(min=0.0), help="Seconds [default: the template's]."
)
@click.option("--max-receive-count", type=click.IntRange(1, 1000), help="[default: the template's]")
@click.option("--function-timeout", type=click.FloatRange(min=1.0), help="Seconds [default: the template's].")
@click.option("--max-per-customer", type=click.IntRange(min=1), help="Per-customer limit of the seat class.")
@click.option(
    "--customers", type=click.IntRange(min=1), help="Distinct customers [default: one per request]."
)
@click.option(
    "--shards",
    type=click.IntRange(1, MAX_SHARDS),
    default=1,
    show_default=True,
    help="Shard items of the seat class (docs/explanation/sharding.md).",
)
@click.option(
    "--pool-shards",
    type=click.IntRange(0, MAX_SHARDS),
    default=0,
    show_default=True,
    help="Every sale also takes its seats from a capacity pool of as many seats, over N items"
    " (docs/guides/pools.md); 0: no pool.",
)
@click.option(
    "--seed",
    type=int,
    default=1,
    show_default=True,
    help="Every figure is the same for the same seed and options.",
)
@click.option(
    "--cold-start-ms",
    type=click.FloatRange(min=0.0),
    help="A new container's start before its first message is handled [default: derived from the"
    " memory: 150 ms runtime + 140 ms import + 55 ms of client building at the memory's share of a"
    " vCPU; 480 ms at 512 MB] (docs/explanation/simulation.md).",
)
@click.option(
    "--first-invocation-ms",
    type=click.FloatRange(min=0.0),
    help="Of the cold start, what the first invocation does (settings, clients): a provisioned"
    " container still pays it (at most the cold start) [default: 55 ms at the memory's share].",
)
@click.option(
    "--memory-mb",
    type=click.IntRange(128, 10_240),
    help="The function's memory: its CPU is this share of a vCPU (1,769 MB is one) [default: the"
    " template's MemorySize].",
)
@click.option(
    "--cpu-per-message-ms",
    type=click.FloatRange(min=0.0),
    help="The handler's own CPU per message, in ms of one core of the measuring machine [default:"
    " measured for the workload's kind of batch, seat_tools/simulation/measured_cpu.py]; given,"
    " it applies to every batch, rejections included.",
)
@click.option(
    "--cpu-per-invocation-ms",
    type=click.FloatRange(min=0.0),
    help="The handler's own CPU per invocation, in ms of one core [default: measured].",
)
@click.option(
    "--receive-ms",
    type=(click.FloatRange(min=0.1), click.FloatRange(min=0.1)),
    default=DEFAULT_RECEIVE_MS,
    show_default=True,
    help="SQS ReceiveMessage (and SendMessage) latency p50 and p90 (assumed: a 20 ms mean, the SQS"
    " developer guide's example).",
)
@click.option(
    "--publish-ms",
    type=(click.FloatRange(min=0.1), click.FloatRange(min=0.1)),
    default=DEFAULT_PUBLISH_MS,
    show_default=True,
    help="SNS PublishBatch latency p50 and p90 (assumed).",
)
@click.option(
    "--warm-write-units-per-s",
    type=click.FloatRange(min=1.0),
    help="The table's warm throughput, write units per second: it decides the partitions"
    " [default: the template's TableWarmWriteUnitsPerSecond, 4,000, a new on-demand table's].",
)
@click.option(
    "--warm-read-units-per-s",
    type=click.FloatRange(min=1.0),
    help="The table's warm throughput, read units per second"
    " [default: the template's TableWarmReadUnitsPerSecond, 12,000].",
)
@click.option(
    "--index-warm-write-units-per-s",
    type=click.FloatRange(min=1.0),
    help="The TicketsToIssue index's own warm throughput, write units per second: it decides the"
    " index's partitions, and an index short of units throttles the table's writes [default: the"
    " template's TicketsIndexWarmWriteUnitsPerSecond, 4,000, a new index's].",
)
@click.option(
    "--index-warm-read-units-per-s",
    type=click.FloatRange(min=1.0),
    help="The index's warm throughput, read units per second [default: the template's, 12,000].",
)
@click.option(
    "--partitions",
    type=_Partitions(),
    help="Physical partitions instead of ceil(max(warm write / per-partition write units, warm read /"
    " per-partition read units)); per-key: every partition key on a partition of its own"
    " [default: from the warm throughput].",
)
@click.option(
    "--write-units-per-s",
    type=click.FloatRange(min=1.0),
    default=PARTITION_WRITE_UNITS_PER_S,
    show_default=True,
    help="Write units per second of one physical partition.",
)
@click.option(
    "--read-units-per-s",
    type=click.FloatRange(min=1.0),
    default=PARTITION_READ_UNITS_PER_S,
    show_default=True,
    help="Read units per second of one physical partition.",
)
@click.option(
    "--table-quota-units-per-s",
    type=_Limit(),
    default=str(TABLE_QUOTA_UNITS_PER_S),
    show_default=True,
    help="The account's per-table on-demand quota, for reads and for writes each; none (or -1): no quota.",
)
@click.option(
    "--max-write-request-units",
    type=_Limit(),
    help="The table's OnDemandThroughput write maximum; none (or -1): none"
    " [default: the template's TableMaxWriteRequestUnits, -1].",
)
@click.option(
    "--max-read-request-units",
    type=_Limit(),
    help="The table's OnDemandThroughput read maximum; none (or -1): none"
    " [default: the template's TableMaxReadRequestUnits, -1].",
)
@click.option(
    "--growth-minutes",
    type=click.FloatRange(min=0.0),
    default=30.0,
    show_default=True,
    help="A partition at half its units or more for this long splits in two (on-demand grows to double"
    " the previous peak within 30 minutes); 0: no growth.",
)
@click.option(
    "--local-stack-scale",
    type=click.FloatRange(min=0.001),
    help="Model the local stack with its contention layer at this time scale instead of AWS"
    " (only DynamoDB's time stretched; docs/explanation/simulation.md, validation).",
)
@click.option(
    "--ticket-series",
    type=click.IntRange(1, MAX_TICKET_SERIES),
    default=1,
    show_default=True,
    help="The event's ticket series (seats tickets configure --series): the issuer's figures.",
)
@click.option(
    "--issuer-series-at-once",
    type=click.IntRange(1, MAX_ISSUE_SERIES_AT_ONCE),
    default=DEFAULT_ISSUE_SERIES_AT_ONCE,
    show_default=True,
    help="Series the issuer numbers at once (the function's thread pool, ISSUE_SERIES_AT_ONCE).",
)
@click.option(
    "--issuer-publish-at-once",
    type=click.IntRange(1, 1000),
    help="PublishBatch calls the issuer has in flight at once, over all its series (the SNS"
    " publisher's pool) [default: the function's, 10 per series at once].",
)
@click.option(
    "--issuer-clear-at-once",
    type=click.IntRange(1, 1000),
    default=MAX_CONCURRENT_QUERIES,
    show_default=True,
    help="Outbox updates (one per published batch) the issuer sends at once (the DAL's pool).",
)
@click.option(
    "--issuer-limit",
    type=click.IntRange(1, 1_000_000),
    default=DEFAULT_ISSUE_LIMIT,
    show_default=True,
    help="Waiting sales one issuer round takes (ISSUE_LIMIT, the template's).",
)
@click.option(
    "--issuer-memory-mb",
    type=click.IntRange(128, 10_240),
    help="The ticket issuer's memory: its measured CPU runs at this share of a vCPU [default: the"
    " template's IssueFunctionMemorySize].",
)
@click.option(
    "--issuer-lanes",
    type=click.Choice([str(n) for n in ISSUER_LANE_COUNTS]),
    help="Issuer runs numbering at once, each its share of the series (IssueLanes;"
    " docs/guides/tickets.md) [default: the template's].",
)
@click.option(
    "--issuer-phase",
    type=click.FloatRange(0.0, SCHEDULE_S, max_open=True),
    default=0.0,
    show_default=True,
    help="Seconds into the issuer's scheduled run at which the sale starts (59: just before a"
    " run ends; runs last the schedule's 60 s, so no gap follows).",
)
@click.option(
    "--sold-per-s",
    type=click.FloatRange(min=0.0),
    default=0.0,
    show_default=True,
    help="Skip the sale: feed the issuer --requests sales at this rate (0: simulate the sale).",
)
@click.option(
    "--seat-map",
    type=click.Path(exists=True, dir_okay=False),
    help="A seat map (JSON or CSV; docs/guides/seat-maps.md): every class mapped, each request best available"
    " of 1 to --seats-per-request seats of one class (drawn with the seed); the figures add the"
    " seats sold once each, the singles left and the rank by arrival.",
)
@click.option(
    "--order-lines",
    type=_LineRange(),
    help="Every request is a multi-line order (docs/guides/orders.md) of LO to HI lines (e.g. 1-4), each"
    " line --seats-per-request seats of its own class of 4 (ADULT, CHILD, SENIOR, PARKING; drawn"
    " with the seed), each class --capacity seats sharded over --shards items, all in one pool of"
    " their seats together with --pool-shards; the figures add orders, lines and seats per second.",
)
@click.option(
    "--containers-at-once",
    is_flag=True,
    help="Every container takes batches from the first message on, instead of Lambda's scale-up"
    ' (5 batches at once, then 300 more a minute; docs/explanation/simulation.md, "Lambda\'s scale-up").',
)
@click.option(
    "--event-pollers",
    type=click.IntRange(MIN_EVENT_POLLERS, MAX_MINIMUM_EVENT_POLLERS),
    help="The event source in provisioned mode with N event pollers from the start (MinimumPollers,"
    " the template's EventPollers): each makes at most 10 receive calls a second (100 messages) and"
    " runs 10 invocations at once, instead of --containers and Lambda's scale-up; the pollers'"
    " charge is in the cost (docs/explanation/simulation.md).",
)
@click.option(
    "--queues",
    type=click.IntRange(1, MAX_RESERVATION_QUEUES),
    help="Reservation queues (the template's ReservationQueues): requests are spread over them by"
    " reservation id, each read by an event source mapping of its own with the settings given"
    " (--containers, --event-pollers and --max-event-pollers are each mapping's); the mappings"
    " share the function's containers [default: the template's].",
)
@click.option(
    "--max-event-pollers",
    type=click.IntRange(MIN_EVENT_POLLERS, MAX_MAXIMUM_EVENT_POLLERS),
    help="Provisioned mode's MaximumPollers: while messages wait, Lambda adds a poller every 0.6 s"
    " up to it [default: --event-pollers, as the template sets it].",
)
@click.option(
    "--poller-mb-per-s",
    type=click.Choice(["1", "5"]),
    default="1",
    show_default=True,
    help="An event poller's throughput: 1 MB/s (the Lambda developer guide) or 5 (the API reference).",
)
@click.option(
    "--provisioned-concurrency",
    type=click.IntRange(0, MAX_CONTAINERS),
    default=0,
    show_default=True,
    help="Containers initialised before the sale, paying only the first invocation's part of the"
    " cold start (Lambda's provisioned concurrency: the template's ProvisionedConcurrency; at most"
    " the containers); their charge is in the cost (docs/explanation/simulation.md).",
)
@click.option(
    "--reserved-concurrency",
    type=click.IntRange(0, MAX_CONTAINERS),
    help="The function's reserved concurrency (the template's ReserveFunctionConcurrency): at most"
    " this many invocations at once over every mapping; a poller past it holds its batch until"
    " one ends (the event source retrying the throttled invoke). 0: none [default: the"
    " template's].",
)
@click.option(
    "--sns-publish-per-s",
    type=_Limit(),
    default=str(DEFAULT_SNS_PUBLISH_PER_S),
    show_default=True,
    help="The region's SNS publish quota, messages a second (30,000 in us-east-1, 9,000 or 1,500"
    " elsewhere); none (or -1): no quota.",
)
@click.option(
    "--offered-rate",
    type=click.FloatRange(min=0.0),
    default=0.0,
    show_default=True,
    help="Requests offered to the checkout API a second, through API Gateway's throttles (429s"
    " answered and counted); each accepted one is a SendMessage. 0: not through the API.",
)
@click.option(
    "--api-kind", type=click.Choice(API_KINDS), default="rest", show_default=True, help="Its price."
)
@click.option(
    "--api-rate-limit",
    type=click.FloatRange(min=1.0),
    help="The stage's throttle, requests a second [default: the template's ApiThrottlingRateLimit].",
)
@click.option(
    "--api-burst-limit",
    type=click.FloatRange(min=1.0),
    help="The stage's burst [default: the template's ApiThrottlingBurstLimit].",
)
@click.option(
    "--api-account-rate-limit",
    type=click.FloatRange(min=1.0),
    default=ACCOUNT_RATE_LIMIT,
    show_default=True,
    help="The account's throttle in the region, requests a second.",
)
@click.option(
    "--api-account-burst-limit",
    type=click.FloatRange(min=1.0),
    default=ACCOUNT_BURST_LIMIT,
    show_default=True,
    help="The account's burst in the region.",
)
@click.option(
    "--client-retries",
    type=click.IntRange(0, 10),
    default=0,
    show_default=True,
    help="Times a client sends a request answered 429 again (full-jitter back-off up to 1 s, 2 s,"
    " 4 s, ...); 0: it does not.",
)
@click.option(
    "--plan-rate",
    type=click.FloatRange(min=1.0),
    help="Run the stack `seats onsale plan --rate R` recommends (pollers, provisioned concurrency,"
    " memory, shard items, the table's and the index's warm throughput, quotas, API throttles,"
    " ticket series), with the requests offered through the API at R; options given keep their"
    " values. Says whether the run confirmed R within 10%, and if not what held it.",
)
@click.option(
    "--seeds",
    type=click.IntRange(1, MAX_SEEDS),
    default=1,
    show_default=True,
    help="Run seeds --seed to --seed + N - 1 and print every figure's mean, min and max.",
)
@click.option(
    "--jobs",
    type=click.IntRange(1, 64),
    default=1,
    show_default=True,
    help="Seeds run at once, each in a process of its own.",
)
@output_option
def simulate(
    containers: int | None,
    requests: int,
    capacity: int | None,
    seats_per_request: int,
    duplicates: float,
    arrival_rate: float,
    batch_size: int | None,
    batching_window: float | None,
    visibility_timeout: float | None,
    max_receive_count: int | None,
    function_timeout: float | None,
    max_per_customer: int | None,
    customers: int | None,
    shards: int,
    pool_shards: int,
    seed: int,
    cold_start_ms: float | None,
    first_invocation_ms: float | None,
    memory_mb: int | None,
    cpu_per_message_ms: float | None,
    cpu_per_invocation_ms: float | None,
    receive_ms: tuple[float, float],
    publish_ms: tuple[float, float],
    warm_write_units_per_s: float | None,
    warm_read_units_per_s: float | None,
    index_warm_write_units_per_s: float | None,
    index_warm_read_units_per_s: float | None,
    partitions: int | None,
    write_units_per_s: float,
    read_units_per_s: float,
    table_quota_units_per_s: float,
    max_write_request_units: float | None,
    max_read_request_units: float | None,
    growth_minutes: float,
    local_stack_scale: float | None,
    ticket_series: int,
    issuer_series_at_once: int,
    issuer_publish_at_once: int | None,
    issuer_clear_at_once: int,
    issuer_limit: int,
    issuer_memory_mb: int | None,
    issuer_lanes: str | None,
    issuer_phase: float,
    sold_per_s: float,
    seat_map: str | None,
    order_lines: tuple[int, int] | None,
    containers_at_once: bool,
    event_pollers: int | None,
    queues: int | None,
    max_event_pollers: int | None,
    poller_mb_per_s: str,
    provisioned_concurrency: int,
    reserved_concurrency: int | None,
    sns_publish_per_s: float,
    offered_rate: float,
    api_kind: str,
    api_rate_limit: float | None,
    api_burst_limit: float | None,
    api_account_rate_limit: float,
    api_account_burst_limit: float,
    client_retries: int,
    plan_rate: float | None,
    seeds: int,
    jobs: int,
    output: OutputFormat,
) -> None:
    """Simulate one event's on-sale on AWS: the service's own logic in 1-1,000 containers against
    an in-memory DynamoDB with AWS's conflicts, throttling and latency, fed by SQS, on a virtual
    clock. The table is the template's: its warm throughput decides its partitions (keys hashed
    onto them), under the per-table quota and its on-demand maximum. Then the ticket issuer numbers
    the sales (its delay, units and cost; docs/guides/tickets.md). Deterministic for a seed;
    options not given take template.yaml's defaults; the table's settings are printed."""
    try:
        defaults, settings = _template_defaults()
        if event_pollers and (containers or containers_at_once):
            raise ValueError(
                "--event-pollers sets the containers (10 per poller, all at once):"
                " give it without --containers or --containers-at-once"
            )
        # --containers chooses standard mode even where the template sets EventPollers
        if max_event_pollers and (containers or not (event_pollers or defaults.event_pollers)):
            raise ValueError("--max-event-pollers is provisioned mode's: give it with --event-pollers")
        pollers = 0 if containers else (event_pollers or defaults.event_pollers)
        if not max_event_pollers and pollers and not event_pollers:
            max_event_pollers = defaults.max_event_pollers  # the template's, with its EventPollers
        most = max(pollers, max_event_pollers or 0)
        config = SimulationConfig(
            containers=containers or most * INVOCATIONS_PER_EVENT_POLLER or defaults.containers,
            requests=requests,
            capacity=capacity,
            seats_per_request=seats_per_request,
            duplicates=duplicates,
            arrival_rate=arrival_rate,
            seed=seed,
            batch_size=batch_size or defaults.batch_size,
            batching_window_s=defaults.batching_window_s if batching_window is None else batching_window,
            visibility_timeout_s=(
                defaults.visibility_timeout_s if visibility_timeout is None else visibility_timeout
            ),
            max_receive_count=max_receive_count or defaults.max_receive_count,
            timeout_s=function_timeout or defaults.timeout_s,
            memory_mb=memory_mb or defaults.memory_mb,
            cold_start_ms=cold_start_ms,
            first_invocation_ms=first_invocation_ms,
            cpu_per_message_ms=cpu_per_message_ms,
            cpu_per_invocation_ms=cpu_per_invocation_ms,
            receive_ms=receive_ms,
            publish_ms=publish_ms,
            sns_publish_per_s=None if sns_publish_per_s == NO_LIMIT else sns_publish_per_s,
            offered_rate=offered_rate,
            api=dataclasses.replace(
                defaults.api,
                kind=api_kind,
                rate_limit=api_rate_limit or defaults.api.rate_limit,
                burst_limit=api_burst_limit or defaults.api.burst_limit,
                account_rate_limit=api_account_rate_limit,
                account_burst_limit=api_account_burst_limit,
                client_retries=client_retries,
            ),
            max_per_customer=max_per_customer,
            customers=customers,
            shards=shards,
            pool_shards=pool_shards,
            contention=_table_settings(
                defaults.contention,
                warm_write_units_per_s=warm_write_units_per_s,
                warm_read_units_per_s=warm_read_units_per_s,
                index_warm_write_units_per_s=index_warm_write_units_per_s,
                index_warm_read_units_per_s=index_warm_read_units_per_s,
                partitions=partitions,
                write_units_per_s=write_units_per_s,
                read_units_per_s=read_units_per_s,
                table_quota_units_per_s=table_quota_units_per_s,
                max_write_request_units=max_write_request_units,
                max_read_request_units=max_read_request_units,
                growth_window_s=growth_minutes * 60 if growth_minutes > 0 else NO_LIMIT,
            ),
            local_stack_time_scale=local_stack_scale,
            containers_at_once=containers_at_once,
            event_pollers=pollers,
            max_event_pollers=max_event_pollers or 0,
            queues=queues or defaults.queues,
            poller_bytes_per_s=(
                EVENT_POLLER_BYTES_PER_S if poller_mb_per_s == "1" else EVENT_POLLER_BYTES_PER_S_API_REFERENCE
            ),
            provisioned_concurrency=provisioned_concurrency,
            reserved_concurrency=defaults.reserved_concurrency
            if reserved_concurrency is None
            else reserved_concurrency,
            tickets=IssuerConfig(
                series=ticket_series,
                series_at_once=issuer_series_at_once,
                publish_at_once=issuer_publish_at_once or 0,
                clear_at_once=issuer_clear_at_once,
                limit=issuer_limit,
                phase_s=issuer_phase,
                issue_seconds=settings.issue_seconds,
                memory_mb=issuer_memory_mb or defaults.tickets.memory_mb,
                lanes=int(issuer_lanes) if issuer_lanes else defaults.tickets.lanes,
            ),
            sold_per_s=sold_per_s,
            seat_map=seat_map,
            order_lines=order_lines,
        )
        if seat_map is not None:
            _check_seat_map_options(config)
        if order_lines and order_lines[1] * seats_per_request > settings.max_seats_per_reservation:
            raise ValueError(
                f"orders of {order_lines[1]} lines of {seats_per_request} seat(s) pass the maximum of"
                f" {settings.max_seats_per_reservation} seats per reservation (MaxSeatsPerReservation)"
            )
        plan = None
        if plan_rate is not None:
            context = click.get_current_context()
            given = {
                name
                for name in context.params
                if context.get_parameter_source(name) is not click.core.ParameterSource.DEFAULT
            }
            config, plan = plan_config(config, plan_rate, given)
    except (LocalStackError, ValueError) as exc:
        raise click.UsageError(str(exc)) from exc
    _run_and_print(config, settings, plan, seeds=seeds, jobs=jobs, output=output)


def _run_and_print(
    config: SimulationConfig,
    settings: Settings,
    plan: SalePlan | None,
    *,
    seeds: int,
    jobs: int,
    output: OutputFormat,
) -> None:
    """Runs the sale (over `seeds` seeds) and prints its figures, and the plan's verdict."""
    started = time.monotonic()
    results = run_seeds(config, settings, seeds, jobs=jobs)
    if seeds > 1:
        document: dict[str, Any] = seeds_document(results)
        text = format_summary(results)
    else:
        document = results[0].as_dict()
        text = format_table(results[0])
    if plan is not None:
        verdicts = [verdict(plan, r.figures) for r in results]
        document["plan"] = plan_document(plan)
        document["plan_verdict"] = verdicts if seeds > 1 else verdicts[0]
        text += "\n\n" + _plan_lines(plan, verdicts)
    if output is OutputFormat.JSON:
        print_json(document)
    elif output is OutputFormat.TEXT:
        print_text({"figure": name, "value": value} for name, value in document.items())
    else:
        click.echo(text)
        click.echo(f"(simulated in {time.monotonic() - started:.1f} s of wall time)", err=True)


def _plan_lines(plan: SalePlan, verdicts: list[dict[str, Any]]) -> str:
    """What the plan set, and whether each seed's run held its rate."""
    v = plan.values
    lines = [
        f"plan for {plan.inputs.rate:,.0f}/s: {v['queues']:.0f} queue(s), EventPollers"
        f" {v['event_pollers']:.0f} (up to {max(v['event_pollers'], v['maximum_event_pollers']):.0f})"
        f" each, BatchSize {v.get('batch_size', plan.inputs.batch_size):.0f}, ProvisionedConcurrency"
        f" {v['provisioned_concurrency']:.0f}, ReserveFunctionConcurrency {v['reserved_concurrency']:.0f},"
        f" reserve {v['reserve_memory_mb']:.0f} MB, {v['shards']:.0f}"
        f" shard items, table warm {v['warm_write_units']:,.0f} / {v['warm_read_units']:,.0f},"
        f" index warm {v['index_warm_write_units']:,.0f}, SNS quota {v['sns_publish_quota']:,.0f}/s,"
        f" API {v['api_rate_limit']:,.0f}/s burst {v['api_burst_limit']:,.0f}, {v['ticket_series']:.0f}"
        f" ticket series, issuer {v['issue_memory_mb']:.0f} MB",
    ]
    lines += [f"plan cannot: {problem}" for problem in plan.problems]
    lines += [f"plan behind: {warning}" for warning in plan.warnings]
    for result in verdicts:
        share = f"{result['confirmed_per_s']:,.0f}/s, {result['share']:.0%} of {result['rate']:,.0f}"
        if result["met"]:
            lines.append(f"plan holds: {share}")
        else:
            lines.append(f"plan falls short: {share}; held by {result['held_by']}")
    return "\n".join(lines)
