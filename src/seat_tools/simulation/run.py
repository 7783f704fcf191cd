"""One simulated on-sale: its inputs (`SimulationConfig`), the run, and its figures (`SimulationResult`)."""

from __future__ import annotations

import dataclasses
import math
import random
import statistics
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

from seat_inventory.logic.seat_map import SeatMap
from seat_inventory.models import MAX_ORDER_LINES, Outcome, ReservationOutcome, SeatKey
from seat_inventory.settings import Settings
from seat_tools.bench.pricing import PRICES, cost_per_million, pre_warming_usd
from seat_tools.contention.model import (
    NEW_TABLE_WARM_READ_UNITS_PER_S,
    NEW_TABLE_WARM_WRITE_UNITS_PER_S,
    ContentionModel,
    ContentionSettings,
)
from seat_tools.event_source_scaling import (
    EVENT_POLLER_BILLED_MINIMUM_S,
    EVENT_POLLER_BYTES_PER_S,
    EVENT_POLLER_LEAD_S,
    INVOCATIONS_PER_EVENT_POLLER,
    check_event_pollers,
    provisioned_concurrency_billed_s,
)
from seat_tools.reservation_queues import MAX_RESERVATION_QUEUES, queue_index
from seat_tools.seat_map_files import load_file
from seat_tools.simulation import binding
from seat_tools.simulation.api import ApiSettings, ApiTally, through_api
from seat_tools.simulation.dynamodb import SimulatedTable
from seat_tools.simulation.event_source import (
    SQS_RECEIVE_LIMIT,
    ContainerContext,
    FunctionTiming,
    LatencyModel,
    Message,
    SimulatedQueue,
    SnsQuota,
    Tally,
    message_body,
    vcpu_share,
)
from seat_tools.simulation.intake import EventSource, IntakeSettings
from seat_tools.simulation.issuer import IssuerConfig, issuer_figures, simulate_issuer
from seat_tools.simulation.measured_cpu import RESERVE_CPU, HandlerCpu
from seat_tools.simulation.memory_store import InMemoryInventoryStore
from seat_tools.simulation.order_workload import order_figures
from seat_tools.simulation.scheduler import VirtualScheduler
from seat_tools.simulation.seat_map_workload import MappedRequests, seat_map_figures
from seat_tools.traffic import ORDER_CLASSES, OrderRequests

# Virtual time starts at a fixed epoch (the service stamps records and checks sale windows with it).
EPOCH = 1_800_000_000.0
EVENT_ID = "onsale-1"
# Requests of a simulated sale; sales fed to the issuer alone (`sold_per_s`), which is cheaper per
# sale, may be more: a sustained sale at 40,000 a second (docs/guides/tickets.md). A simulated sale takes
# about 1.5 GB of memory per million requests; 3,000,000 lasts long enough past Lambda's 12 s
# scale-up to show a pre-warmed table's rate (docs/explanation/simulation.md, "Lambda's scale-up").
MAX_REQUESTS = 3_000_000
MAX_CONTAINERS = 1_000  # an event source mapping's MaximumConcurrency at most
MAX_FED_SALES = 10_000_000


# The handler's own CPU per invocation and per message, measured at one core of the measuring
# machine (`measured_cpu`, written by scripts/measure_function_cpu.py) and run at the memory's
# share of a vCPU: the kind of batch the workload sends (a seat map's best-available takes, a
# class with a per-customer limit, or plain reservations; orders are counted as reservations, not
# measured apart), and a sold-out batch's rejections.
def handler_cpu(config: SimulationConfig) -> tuple[HandlerCpu, HandlerCpu | None]:
    """The CPU per batch of the run's kind and of a sold-out batch (None: `--cpu-*` overrides)."""
    if config.cpu_per_invocation_ms is not None or config.cpu_per_message_ms is not None:
        kind = RESERVE_CPU["mapped" if config.seat_map else "reserve"]
        return (
            HandlerCpu(
                invocation_ms=kind.invocation_ms
                if config.cpu_per_invocation_ms is None
                else config.cpu_per_invocation_ms,
                per_message_ms=kind.per_message_ms
                if config.cpu_per_message_ms is None
                else config.cpu_per_message_ms,
            ),
            None,
        )
    if config.seat_map:
        return RESERVE_CPU["mapped"], None
    return RESERVE_CPU["limit" if config.max_per_customer else "reserve"], RESERVE_CPU["sold-out"]


# A new container's time before its first message (docs/explanation/simulation.md): the runtime's own start
# (assumed: 150 ms), the handler's import in its package (measured: 140 ms here, on a full vCPU as
# Lambda's init phase has) and the first invocation's settings and client building (measured:
# 55 ms of one core here, at the memory's share of a vCPU: about 190 ms at 512 MB).
RUNTIME_START_MS = 150.0
HANDLER_IMPORT_MS = 140.0
CLIENT_BUILDING_MS = 55.0
# SNS PublishBatch latency (p50, p90): no public figure was found; assumed.
DEFAULT_PUBLISH_MS = (20.0, 40.0)
# Lambda refuses a mapping whose BatchSize is above 10 with a MaximumBatchingWindowInSeconds
# (an integer) under 1 (CreateEventSourceMapping, docs/reference/sources.md).
MAX_BATCH_WITHOUT_WINDOW = 10
# SQS ReceiveMessage and SendMessage latency (p50, p90): the SQS developer guide's example of a
# client in the same region averages 20 ms a request; this log-normal's mean is 19.5 ms. Assumed.
DEFAULT_RECEIVE_MS = (18.0, 30.0)
# The region's SNS publish quota (messages a second; each message of a PublishBatch counts):
# 30,000 in us-east-1 (the SNS quotas page).
DEFAULT_SNS_PUBLISH_PER_S = 30_000.0


def first_invocation_ms(memory_mb: int) -> float:
    """The first invocation's client building at `memory_mb`'s share of a vCPU."""
    return CLIENT_BUILDING_MS / vcpu_share(memory_mb)


def cold_start_ms(memory_mb: int) -> float:
    """A new container's start before its first message at `memory_mb` (480 ms at 512 MB)."""
    return RUNTIME_START_MS + HANDLER_IMPORT_MS + first_invocation_ms(memory_mb)


# The capacity pool of `SimulationConfig.pool_shards`.
POOL_NAME = "hall"


@dataclass(frozen=True)
class SimulationConfig:
    """Everything one run depends on (with the seed, it decides every figure)."""

    containers: int = 10
    requests: int = 10_000
    capacity: int | None = None  # None: one seat per request (the sale never sells out)
    seats_per_request: int = 1
    duplicates: float = 0.0  # share of requests sent twice (the producer's retry)
    arrival_rate: float = 0.0  # requests sent per second; 0: all at the start (a burst)
    seed: int = 1
    batch_size: int = 99  # the template's BatchSize (a full batch of one class is one transaction)
    batching_window_s: float = 1.0
    visibility_timeout_s: float = 180.0
    max_receive_count: int = 5
    timeout_s: float = 30.0
    memory_mb: int = 512
    cold_start_ms: float | None = None  # None: `cold_start_ms(memory_mb)`
    first_invocation_ms: float | None = None  # None: `first_invocation_ms(memory_mb)`
    # The handler's CPU in ms of one core (None: measured, by the workload's kind: `handler_cpu`).
    cpu_per_invocation_ms: float | None = None
    cpu_per_message_ms: float | None = None
    publish_ms: tuple[float, float] = DEFAULT_PUBLISH_MS
    receive_ms: tuple[float, float] = DEFAULT_RECEIVE_MS
    sns_publish_per_s: float | None = DEFAULT_SNS_PUBLISH_PER_S  # None: no quota
    # > 0: requests offered to the checkout API at this rate (through API Gateway's throttles);
    # exclusive with `arrival_rate` (requests sent straight to SQS).
    offered_rate: float = 0.0
    api: ApiSettings = field(default_factory=ApiSettings)
    max_per_customer: int | None = None
    customers: int | None = None  # distinct customers (default: one per request)
    shards: int = 1  # shard items of the event's seat class (docs/explanation/sharding.md)
    # > 0: the class also takes every seat from a capacity pool of as many seats, over this many
    # items (docs/guides/pools.md, "Sharded pools"); 0: no pool.
    pool_shards: int = 0
    contention: ContentionSettings = field(default_factory=ContentionSettings)
    # None: AWS. S: the local stack with its contention layer at time scale S, where only
    # DynamoDB's time is stretched by S: every other duration (the function's own work and
    # back-off, SNS, cold starts, the batching window, the visibility and function timeouts) runs
    # at wall speed, S times shorter in the model's time, and the local runner starts every
    # container at once. Used to check the simulation against the layer (docs/explanation/simulation.md).
    local_stack_time_scale: float | None = None
    # True: every container takes a batch from the first message on, instead of Lambda's
    # scale-up (5 batches at once, then 300 more a minute). Until 2026-11-26 a bug kept the
    # scale-up from applying, so this is the model every earlier figure was measured on
    # (docs/explanation/simulation.md, "Lambda's scale-up").
    containers_at_once: bool = False
    # > 0: the event source mapping in provisioned mode with this many event pollers (the
    # template's EventPollers): `containers` = 10 per poller, every one there from the first
    # message, and the pollers are billed for the sale (seat_tools.event_source_scaling).
    event_pollers: int = 0
    # Provisioned mode's MaximumPollers (0: the same as `event_pollers`, as the template sets it):
    # above the minimum, Lambda adds pollers while messages wait (event_source_scaling).
    max_event_pollers: int = 0
    # An event poller's throughput: 1 MB/s (the developer guide), 5 MB/s (the API reference).
    poller_bytes_per_s: float = EVENT_POLLER_BYTES_PER_S
    # The reservation queues (the template's ReservationQueues): requests are spread over them by
    # reservation id (seat_tools.reservation_queues), each read by a mapping of its own with the
    # settings above (`containers`, `event_pollers`, `max_event_pollers` are per mapping); the
    # mappings share the function's containers.
    queues: int = 1
    # > 0: the function's provisioned concurrency (the template's ProvisionedConcurrency):
    # this many containers are initialised before the sale (of the cold start they pay only the
    # first invocation's part, at most the cold start), billed for the time it is set
    # (seat_tools.event_source_scaling.provisioned_concurrency_billed_s).
    provisioned_concurrency: int = 0
    # > 0: the function's reserved concurrency (the template's ReserveFunctionConcurrency): at
    # most this many invocations at once over every mapping (seat_tools.simulation.intake).
    reserved_concurrency: int = 0
    # The ticket issuer, run on the sale's sales (docs/guides/tickets.md; its figures under "tickets").
    tickets: IssuerConfig = field(default_factory=IssuerConfig)
    # > 0: no sale is simulated; the issuer is fed `requests` sales of `seats_per_request` seats,
    # sold at this many a second (a rate the simulated sale does not reach with its containers).
    sold_per_s: float = 0.0
    # A seat map file (JSON or CSV): the event's classes are mapped, and each request asks for 1 to
    # `seats_per_request` seats best available of one of its classes (seat_map_workload).
    seat_map: str | None = None
    # (LO, HI): every request is an order of LO to HI lines over `ORDER_CLASSES`, each line
    # `seats_per_request` seats of its own class (order_workload; docs/guides/orders.md, "Scale").
    order_lines: tuple[int, int] | None = None

    def __post_init__(self) -> None:
        if not self.event_pollers and not 1 <= self.containers <= MAX_CONTAINERS:
            raise ValueError(f"containers must be 1 to 1,000 (MaximumConcurrency), not {self.containers}")
        check_event_pollers(self.event_pollers, self.max_event_pollers or None)
        if self.event_pollers and self.containers != self.most_pollers * INVOCATIONS_PER_EVENT_POLLER:
            raise ValueError(
                f"{self.most_pollers} event pollers run {self.most_pollers * INVOCATIONS_PER_EVENT_POLLER}"
                f" containers, not {self.containers}"
            )
        if self.batching_window_s != int(self.batching_window_s) or (
            self.batch_size > MAX_BATCH_WITHOUT_WINDOW and self.batching_window_s < 1
        ):
            raise ValueError(
                "the batching window is whole seconds (MaximumBatchingWindowInSeconds), at least 1"
                f" with a batch of more than {MAX_BATCH_WITHOUT_WINDOW}, not {self.batching_window_s:g}"
                f" with {self.batch_size}"
            )
        if self.offered_rate < 0 or (self.offered_rate > 0 and self.arrival_rate > 0):
            raise ValueError("requests are offered to the API or sent to SQS at a rate, not both")
        if not self.memory_mb >= 128:
            raise ValueError(f"a function has at least 128 MB, not {self.memory_mb}")
        if not 1 <= self.queues <= MAX_RESERVATION_QUEUES:
            raise ValueError(f"queues must be 1 to {MAX_RESERVATION_QUEUES}, not {self.queues}")
        if self.reserved_concurrency and not self.provisioned_concurrency <= self.reserved_concurrency:
            raise ValueError(
                f"provisioned concurrency ({self.provisioned_concurrency}) must be at most the"
                f" reserved concurrency ({self.reserved_concurrency})"
            )
        if not 0 <= self.provisioned_concurrency <= self.containers * self.queues:
            raise ValueError(
                f"provisioned concurrency must be 0 to the {self.containers * self.queues} containers"
                f" the event source runs, not {self.provisioned_concurrency}"
            )
        if self.sold_per_s > 0 and not 1 <= self.requests <= MAX_FED_SALES:
            raise ValueError(f"sales fed to the issuer must be 1 to {MAX_FED_SALES:,}, not {self.requests}")
        if self.sold_per_s <= 0 and not 1 <= self.requests <= MAX_REQUESTS:
            raise ValueError(f"requests must be 1 to {MAX_REQUESTS:,}, not {self.requests}")
        if not 0.0 <= self.duplicates <= 1.0:
            raise ValueError(f"duplicates is a share from 0 to 1, not {self.duplicates}")
        if self.contention.time_scale != 1:
            raise ValueError("the simulation runs on AWS's own time: contention time_scale must be 1")
        if self.local_stack_time_scale is not None and not self.local_stack_time_scale > 0:
            raise ValueError("local_stack_time_scale must be positive")
        if self.order_lines is not None:
            self._check_order_lines(self.order_lines)

    def _check_order_lines(self, order_lines: tuple[int, int]) -> None:
        low, high = order_lines
        if not 1 <= low <= high <= MAX_ORDER_LINES:
            raise ValueError(
                f"order lines must be LO-HI with 1 <= LO <= HI <= {MAX_ORDER_LINES}, not {low}-{high}"
            )
        if self.seat_map is not None or self.sold_per_s > 0:
            raise ValueError("order lines take no --seat-map or --sold-per-s")

    @property
    def most_pollers(self) -> int:
        """Provisioned mode's MaximumPollers (0 in standard mode)."""
        return max(self.event_pollers, self.max_event_pollers) if self.event_pollers else 0

    @property
    def cold_start_s(self) -> float:
        return (cold_start_ms(self.memory_mb) if self.cold_start_ms is None else self.cold_start_ms) / 1000

    @property
    def first_invocation_s(self) -> float:
        ms = (
            first_invocation_ms(self.memory_mb)
            if self.first_invocation_ms is None
            else self.first_invocation_ms
        )
        return min(ms / 1000, self.cold_start_s)

    @property
    def rate_kind(self) -> str:
        """How the requests arrive, which says what kind of rate the run's figures are."""
        if self.offered_rate > 0:
            return f"offered through the API at {self.offered_rate:,.0f} requests/s"
        if self.arrival_rate > 0:
            return f"sent to SQS at {self.arrival_rate:,.0f} requests/s"
        return "drain: every request on the queue at the start"

    @property
    def client_time_factor(self) -> float:
        """How much of the model's time one second of everything but DynamoDB takes."""
        return 1.0 / self.local_stack_time_scale if self.local_stack_time_scale else 1.0

    @property
    def seats(self) -> int:
        return self.capacity if self.capacity is not None else self.requests * self.seats_per_request


@dataclass
class SimulationResult:
    """The figures of one run (`as_dict` names them; docs/explanation/simulation.md defines them)."""

    config: SimulationConfig
    figures: dict[str, Any]

    def as_dict(self) -> dict[str, Any]:
        config = asdict(self.config)
        config["contention"] = asdict(self.config.contention)
        config["api"] = asdict(self.config.api)
        return {"config": config, **self.figures}


def _arrivals(config: SimulationConfig, rng: random.Random) -> tuple[list[Message], ApiTally | None]:
    """Request i is asked for at i / rate (or all at 0); a duplicate follows its original within a
    second. Offered through the API, what API Gateway accepts is sent on to SQS (`simulation.api`)."""
    rate = config.offered_rate or config.arrival_rate
    asked: list[tuple[float, int, str]] = []
    for index in range(config.requests):
        at = index / rate if rate > 0 else 0.0
        asked.append((EPOCH + at, index, f"m-{index}"))
        if config.duplicates and rng.random() < config.duplicates:
            asked.append((EPOCH + at + rng.random(), index, f"m-{index}-dup"))
    asked.sort()
    if config.offered_rate > 0:
        return through_api(asked, config.api, LatencyModel(*config.receive_ms), random.Random(rng.random()))
    return [Message(message_id, index, at) for at, index, message_id in asked], None


def _percentile(values: list[float], share: float) -> float:
    if not values:
        return 0.0
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=1000, method="inclusive")[round(share * 1000) - 1]


def _busy_seconds(spans: list[tuple[float, float]]) -> float:
    """Length of the union of the invocations' spans: the time some container was working."""
    busy = 0.0
    end = -math.inf
    for start, stop in sorted(spans):
        if stop > end:
            busy += stop - max(start, end)
            end = stop
    return busy


def _peak_concurrency(spans: list[tuple[float, float]]) -> tuple[int, float]:
    """The most invocations running at once, and when that many first ran together."""
    events = sorted([(start, 1) for start, _ in spans] + [(stop, -1) for _, stop in spans])
    running = peak = 0
    peak_at = 0.0
    for at, change in events:  # at one instant, ends (-1) sort before starts
        running += change
        if running > peak:
            peak, peak_at = running, at
    return peak, peak_at


def run_simulation(config: SimulationConfig, settings: Settings) -> SimulationResult:
    """Runs one on-sale for one event and returns its figures. Deterministic for a config."""
    # The service's conflict back-off draws from the `random` module: seeded for determinism
    # (and restored afterwards).
    saved_state = random.getstate()
    random.seed(config.seed)
    try:
        return _run(config, settings)
    finally:
        random.setstate(saved_state)


def _run(config: SimulationConfig, settings: Settings) -> SimulationResult:
    rng = random.Random(config.seed)
    if config.sold_per_s > 0:
        return _issuer_only(config, settings, rng)
    scheduler = VirtualScheduler(start=EPOCH)
    data = InMemoryInventoryStore(clock_ms=lambda: int(scheduler.now() * 1000))
    key = SeatKey(EVENT_ID, settings.default_seat_class)
    seat_map = load_file(config.seat_map) if config.seat_map else None
    mapped: MappedRequests | None = None
    orders: OrderRequests | None = None
    if seat_map is not None:
        data.add_seat_map(EVENT_ID, seat_map, max_per_customer=config.max_per_customer)
        draws = random.Random(rng.random())
        mapped = MappedRequests.draw(seat_map, config.requests, config.seats_per_request, draws)
    else:
        classes = ORDER_CLASSES if config.order_lines else (key.seat_class,)
        for seat_class in classes:
            data.add_event(
                EVENT_ID,
                config.seats,
                seat_class,
                max_per_customer=config.max_per_customer,
                shards=config.shards,
                pools=[POOL_NAME] if config.pool_shards else (),
            )
        if config.pool_shards:
            # The pool holds what its classes hold together: it limits nothing unless --capacity
            # makes the classes sell out (and then they do first); what it costs is its writes.
            data.add_pool(EVENT_ID, POOL_NAME, config.seats * len(classes), shards=config.pool_shards)
        if config.order_lines:
            draws = random.Random(rng.random())
            orders = OrderRequests.draw(config.requests, config.order_lines, config.seats_per_request, draws)
    model = ContentionModel(config.contention, clock=scheduler.now, rng=random.Random(rng.random()))
    table = SimulatedTable(data, model, seed=rng.randrange(2**32))
    tally = Tally()
    arrivals, api = _arrivals(config, rng)
    queues = [
        SimulatedQueue(
            [m for m in arrivals if queue_index(f"r-{m.request}", config.queues) == index],
            visibility_timeout_s=config.visibility_timeout_s * config.client_time_factor,
            max_receive_count=config.max_receive_count,
            tally=tally,
        )
        for index in range(config.queues)
    ]
    customers = config.customers or config.requests

    def body_of(message: Message) -> str:
        request: dict[str, object] = {"reservation_id": f"r-{message.request}", "event_id": EVENT_ID}
        if orders is not None:
            request["lines"] = orders.line_objects(message.request)
        else:
            request["seat_class"] = mapped.classes[message.request] if mapped else key.seat_class
            request["quantity"] = mapped.quantities[message.request] if mapped else config.seats_per_request
        request["customer_id"] = f"c-{message.request % customers}"
        return message_body(request)

    cpu, sold_out_cpu = handler_cpu(config)
    timing = FunctionTiming(
        timeout_s=config.timeout_s,
        memory_mb=config.memory_mb,
        cold_start_s=config.cold_start_s,
        first_invocation_s=config.first_invocation_s,
        cpu=cpu,
        sold_out_cpu=sold_out_cpu,
        client_time_factor=config.client_time_factor,
    )
    publish_latency = LatencyModel(*config.publish_ms)
    monitor = binding.BindingMonitor(api_refused_at=api.refused_at if api else [])
    context = ContainerContext(
        scheduler=scheduler,
        table=table,
        settings=settings,
        timing=timing,
        body_of=body_of,
        publisher_latency=publish_latency,
        sns_quota=SnsQuota(config.sns_publish_per_s),
        tally=tally,
        activities=binding.Activities(),
    )
    source = EventSource(
        scheduler,
        queues,
        context,
        IntakeSettings(
            batch_size=config.batch_size,
            batching_window_s=config.batching_window_s,
            receive_latency=LatencyModel(*config.receive_ms),
            concurrency=config.containers,
            gradual=config.local_stack_time_scale is None and not config.containers_at_once,
            event_pollers=config.event_pollers,
            max_event_pollers=config.most_pollers,
            poller_bytes_per_s=config.poller_bytes_per_s,
            client_time_factor=config.client_time_factor,
            reserved_concurrency=config.reserved_concurrency,
        ),
        provisioned_concurrency=config.provisioned_concurrency,
        seeds=random.Random(rng.randrange(2**32)),
        size_of=lambda message: len(body_of(message)),
        monitor=monitor,
    )
    source.start()
    scheduler.run()
    figures = _figures(config, arrivals, tally, table, data, source, monitor, api)
    if orders is not None:
        pool = POOL_NAME if config.pool_shards else None
        figures.update(order_figures(data, EVENT_ID, orders, pool, figures["sale_seconds"]))
    else:
        figures.update(_checks(config, arrivals, data, key, seat_map))
    figures["tickets"] = _tickets(config, data, publish_latency, rng)
    return SimulationResult(config, figures)


def _issuer_only(config: SimulationConfig, settings: Settings, rng: random.Random) -> SimulationResult:
    """The issuer alone, fed `requests` sales at `sold_per_s` (as the sale would have recorded them)."""
    data = InMemoryInventoryStore()
    for index in range(config.requests):
        rid = f"r-{index}"
        data.records[rid] = ReservationOutcome(
            reservation_id=rid,
            outcome=Outcome.CONFIRMED,
            reason="seats reserved",
            event_id=EVENT_ID,
            seat_class=settings.default_seat_class,
            quantity=config.seats_per_request,
            customer_id=f"c-{index}",
            message_id=f"m-{index}",
        )
        data.awaiting_tickets[rid] = int((EPOCH + index / config.sold_per_s) * 1000)
    figures: dict[str, Any] = {
        "requests": config.requests,
        "sold_per_s": config.sold_per_s,
        "tickets": _tickets(config, data, LatencyModel(*config.publish_ms), rng),
    }
    return SimulationResult(config, figures)


def _tickets(
    config: SimulationConfig, data: InMemoryInventoryStore, publish_latency: LatencyModel, rng: random.Random
) -> dict[str, Any]:
    """The issuer numbering the sale's sales (after the sale's run, on its own scheduler and model,
    so the sale's figures do not depend on it; seat_tools.simulation.issuer says what that leaves out)."""
    scheduler = VirtualScheduler(start=EPOCH)
    model = ContentionModel(config.contention, clock=scheduler.now, rng=random.Random(rng.random()))
    issuer = dataclasses.replace(config.tickets, sns_publish_per_s=config.sns_publish_per_s)
    tally = simulate_issuer(
        data,
        EVENT_ID,
        issuer,
        model,
        scheduler,
        sale_start=EPOCH,
        publish_latency=publish_latency,
        rng=random.Random(rng.random()),
    )
    return issuer_figures(issuer, tally, model)


def _other_api_cost(
    total: float, api_gateway: float, config: SimulationConfig, api: ApiTally | None
) -> dict[str, Any] | None:
    """The run's all-in cost per million requests with the other kind of checkout API (None when
    the requests did not come through the API)."""
    if api is None:
        return None
    kind = "http" if config.api.kind == "rest" else "rest"
    other = api.attempts * PRICES[f"api_{kind}_request"].usd * 1e6 / max(1, config.requests)
    return {"kind": kind, "api_gateway": other, "total": total - api_gateway + other}


def _figures(
    config: SimulationConfig,
    arrivals: list[Message],
    tally: Tally,
    table: SimulatedTable,
    data: InMemoryInventoryStore,
    source: EventSource,
    monitor: binding.BindingMonitor,
    api: ApiTally | None,
) -> dict[str, Any]:
    request_of = {m.message_id: m.request for m in arrivals}
    first_sent = min((m.asked_at for m in arrivals), default=EPOCH)
    if api is not None:
        first_sent = EPOCH  # the first request offered to the API
    # A request's answer: the first publication for any of its messages.
    answered: dict[int, float] = {}
    for message_id, at in tally.answered_at.items():
        request = request_of[message_id]
        answered[request] = min(at, answered.get(request, at))
    request_sent: dict[int, float] = {}
    for message in arrivals:
        request_sent[message.request] = min(
            message.asked_at, request_sent.get(message.request, message.asked_at)
        )
    latencies = sorted(answered[r] - request_sent[r] for r in answered)
    final: dict[str, Outcome] = {}
    confirmed_at: list[float] = []
    seats_confirmed = 0
    for outcome in tally.outcomes:
        if not outcome.duplicate and outcome.reservation_id not in final:
            final[outcome.reservation_id] = outcome.outcome
            if outcome.outcome is Outcome.CONFIRMED:
                confirmed_at.append(tally.answered_at[outcome.message_id or ""])
                seats_confirmed += outcome.quantity or 0
    outcomes = Counter(o.value for o in final.values())
    confirmed = outcomes.get(Outcome.CONFIRMED.value, 0)
    last_answer = max(answered.values(), default=first_sent)
    last_confirmed = max(confirmed_at, default=first_sent)
    counters = table.model.counters()
    cancelled = dict(sorted(counters.transactions_cancelled.items()))
    transactions = counters.transactions_committed + sum(cancelled.values())
    gb_seconds = tally.billed_seconds * config.memory_mb / 1024
    # The producer's SQS requests: SendMessageBatch (10 messages a call), or through the API one
    # SendMessage per accepted request.
    producer_sqs = api.accepted if api is not None else -(-len(arrivals) // SQS_RECEIVE_LIMIT)
    write_units = counters.write_units_consumed + table.index_write_units
    sale_s = last_confirmed - first_sent
    answer_s = last_answer - first_sent
    # Event pollers are billed per second from when they are set to when they are set back: the
    # minimum from EVENT_POLLER_LEAD_S before the sale, the ones Lambda added from then on, to the
    # last answer; at least a minute each.
    poller_seconds = 0.0
    if config.event_pollers:
        minimum = config.event_pollers * config.queues  # each mapping's minimum, started first
        for index, start in enumerate(source.poller_started_at):
            lead = EVENT_POLLER_LEAD_S if index < minimum else 0.0
            poller_seconds += max(EVENT_POLLER_BILLED_MINIMUM_S, lead + max(0.0, last_answer - start))
    contention = config.contention
    # The table's and the TicketsToIssue index's warm throughput above a new one's.
    prewarm = pre_warming_usd(
        max(0.0, contention.warm_write_units_per_s - NEW_TABLE_WARM_WRITE_UNITS_PER_S)
        + max(0.0, contention.index_warm_write_units_per_s - NEW_TABLE_WARM_WRITE_UNITS_PER_S),
        max(0.0, contention.warm_read_units_per_s - NEW_TABLE_WARM_READ_UNITS_PER_S)
        + max(0.0, contention.index_warm_read_units_per_s - NEW_TABLE_WARM_READ_UNITS_PER_S),
    )
    cost = cost_per_million(
        write_units=write_units,
        read_units=counters.read_units_consumed,
        sqs_requests=tally.sqs_requests + producer_sqs,
        sns_requests=tally.sns_requests,
        invocations=tally.invocations,
        gb_seconds=gb_seconds,
        reservations=config.requests,
        event_poller_hours=poller_seconds / 3600,
        provisioned_gb_seconds=tally.provisioned_billed_seconds * config.memory_mb / 1024,
        provisioned_concurrency_gb_seconds=config.provisioned_concurrency
        * config.memory_mb
        / 1024
        * provisioned_concurrency_billed_s(answer_s),
        api_requests=api.attempts if api is not None else 0,
        api_kind=config.api.kind,
        pre_warming_usd=prewarm,
    )
    busy_s = _busy_seconds(tally.invocation_spans)
    peak, peak_at = _peak_concurrency(tally.invocation_spans)
    bound_by = monitor.shares(first_sent, last_answer)
    return {
        "requests": config.requests,
        "rate_kind": config.rate_kind,
        "messages_sent": len(arrivals),
        "seats": config.seats,
        "confirmed_reservations": confirmed,
        "requests_answered": len(answered),
        "outcomes": dict(sorted(outcomes.items())),
        "sale_seconds": sale_s,
        "answer_seconds": answer_s,
        "confirmed_per_s": confirmed / sale_s if sale_s > 0 else 0.0,
        "seats_confirmed": seats_confirmed,
        "seats_confirmed_per_s": seats_confirmed / sale_s if sale_s > 0 else 0.0,
        "answered_per_s": len(answered) / answer_s if answer_s > 0 else 0.0,
        "busy_seconds": busy_s,
        "peak_concurrency": peak,
        "peak_concurrency_after_s": peak_at - first_sent if peak else 0.0,
        "confirmed_per_busy_s": confirmed / busy_s if busy_s > 0 else 0.0,
        "bound_by": bound_by,
        "binding_limit": binding.binding_limit(bound_by),
        "api": api.as_dict() if api is not None else None,
        "intake": {
            "queues": config.queues,
            "reserved_concurrency": config.reserved_concurrency,
            "throttled_invokes": source.throttled_invokes,
            "pollers": len(source.pollers),
            "containers": len(source.containers),
            "receive_calls": tally.sqs_receives,
            "messages_per_receive": tally.messages_received / tally.sqs_receives
            if tally.sqs_receives
            else 0.0,
            "delete_calls": tally.sqs_deletes,
            "mean_batch": tally.messages_received / tally.invocations if tally.invocations else 0.0,
        },
        "function": {
            "memory_mb": config.memory_mb,
            "vcpu_share": vcpu_share(config.memory_mb),
            "cpu_seconds": tally.cpu_seconds,
            "cpu_per_message_ms": 1000 * tally.cpu_seconds / tally.messages_received
            if tally.messages_received
            else 0.0,
        },
        "transactions": transactions,
        "transactions_committed": counters.transactions_committed,
        "transactions_cancelled": cancelled,
        "cancelled_share": sum(cancelled.values()) / transactions if transactions else 0.0,
        "throttled_requests": counters.throttled_requests,
        "throttled_by": dict(sorted(counters.throttled_by.items())),
        "partitions_at_end": sum(counters.partitions.values()),
        "partition_splits": counters.partition_splits,
        "write_units": write_units,
        "index_write_units": table.index_write_units,
        "index_partitions": counters_index_partitions(config),
        "wasted_write_units": counters.write_units_cancelled,
        "wasted_write_units_per_confirmed": counters.write_units_cancelled / confirmed if confirmed else 0.0,
        "read_units": counters.read_units_consumed,
        "transactional_reads": counters.read_transactions_committed + counters.read_transactions_refused,
        "transactional_reads_refused": dict(sorted(counters.read_transactions_cancelled.items())),
        "dynamodb_requests": dict(sorted(table.requests.items())),
        "botocore_retries": {"reads": table.read_retries, "puts": table.write_retries},
        "invocations": tally.invocations,
        "cold_starts": tally.cold_starts,
        "timeouts": tally.timeouts,
        "messages_received": tally.messages_received,
        "messages_handed_back": tally.messages_handed_back,
        "messages_handed_back_per_busy_s": tally.messages_handed_back / busy_s if busy_s > 0 else 0.0,
        "messages_dead_lettered": tally.messages_dead_lettered,
        "answer_latency_p50_s": _percentile(latencies, 0.5),
        "answer_latency_p99_s": _percentile(latencies, 0.99),
        "sqs_requests": tally.sqs_requests + producer_sqs,
        "sns_requests": tally.sns_requests,
        "sns_throttled_calls": tally.sns_throttled,
        "sns_outcomes_handed_back": tally.sns_handed_back,
        "lambda_gb_seconds": gb_seconds,
        "event_poller_seconds": poller_seconds,
        "pre_warming_usd": prewarm,
        "cost_per_million_requests": cost.as_dict(),
        # The same run's all-in cost had the checkout API been the other kind (REST or HTTP):
        # its requests at that kind's price (pricing.py), the rest as it is.
        "cost_per_million_requests_other_api": _other_api_cost(cost.total, cost.api_gateway, config, api),
    }


def counters_index_partitions(config: SimulationConfig) -> int:
    """The TicketsToIssue index's partitions (from its own warm throughput)."""
    return config.contention.for_index().initial_partitions()


def _checks(
    config: SimulationConfig,
    arrivals: list[Message],
    data: InMemoryInventoryStore,
    key: SeatKey,
    seat_map: SeatMap | None,
) -> dict[str, Any]:
    """The final inventory against the records: the counted class's item, or every row item of a
    seat map (with its singles left and ranks by arrival, `seat_map_workload`)."""
    if seat_map is not None:
        order = list(dict.fromkeys(f"r-{m.request}" for m in arrivals))
        figures = seat_map_figures(data, EVENT_ID, seat_map, order)
        figures["seats"] = seat_map.seat_count
        figures["invariants"] = figures.pop("seat_invariants")
        return figures
    inventory = data.inventory[key]
    recorded_confirmed = sum(1 for o in data.records.values() if o.outcome is Outcome.CONFIRMED)
    problems = []
    if inventory.sold != recorded_confirmed * config.seats_per_request:
        problems.append(f"sold {inventory.sold} != confirmed records {recorded_confirmed}")
    if inventory.available + inventory.held + inventory.sold != inventory.capacity:
        problems.append("available + held + sold != capacity")
    if inventory.available < 0:
        problems.append("negative availability")
    pool = data.pool(EVENT_ID, POOL_NAME) if config.pool_shards else None
    if pool is not None and (pool.held, pool.sold) != (inventory.held, inventory.sold):
        problems.append(
            f"pool held/sold {pool.held}/{pool.sold} != the class's {inventory.held}/{inventory.sold}"
        )
    if pool is not None and (pool.available < 0 or pool.capacity != config.seats):
        problems.append("pool over its capacity")
    return {
        "invariants": problems or "ok",
        "final_inventory": {"available": inventory.available, "sold": inventory.sold, "held": inventory.held},
    }
