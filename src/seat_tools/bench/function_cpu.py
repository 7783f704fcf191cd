"""CPU time of the real reserve and ticket-issuer handlers per invocation, on a canned transport.

Each handler runs as on Lambda: its module's `lambda_handler` with its Powertools decorators
(logger, metrics flushed to stdout, the tracer as the template's default `Tracing: PassThrough`
leaves it: disabled), the settings read from the environment the template sets, its own clients
built on the first invocation. Only the clients' HTTP is replaced: `bench.canned_aws` answers
each request with a valid response at botocore's `before-send` event, so serialising, signing
and parsing all run; no socket is opened. CPU is `time.process_time()` around one invocation (all
of the process's threads: the publisher's and the issuer's pools included), less the CPU the
canned services spent answering, so it is the CPU the invocation needs, whatever share of a core
it is given. Not measured: the HTTP connection's own work below botocore (urllib3 sending, TLS).

Kinds of invocation measured, each with a warm container (the first invocations, which build the
clients and read the class, are not measured):

- `reserve`: one-seat reservations on a counted class of 64 shard items (the published sale's
  shape): one `TransactWriteItems` of the records and the shard's update, `PublishBatch`es;
- `hold`: one-seat holds on the same class;
- `limit`: one-seat reservations on a class with a per-customer limit (each customer's counter
  updated in the transaction);
- `sold-out`: requests refused after the sell-out (each refusal's record is its own `PutItem`);
- `mapped`: best-available requests of 1-8 seats on the stadium map's classes (docs/guides/seat-maps.md);
  the canned rows always read as they were created, so every take finds its seats free;
- the ticket issuer: rounds that find `sales` waiting sales of one seat each in `series` series;
  the fit gives a round's fixed CPU (its index queries), per batch (a numbering transaction, its
  TICKETED publications and outbox update) and per ticket.

A fit of `intercept + slope x messages` (least squares over each batch size's median) gives the
reserve kinds' constants; the issuer's fit has two slopes (batches and tickets).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import math
import os
import platform
import random
import statistics
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3
import botocore

from seat_tools.bench.canned_aws import CannedDynamoDB, CannedSns
from seat_tools.local.engines import FAKE_ACCESS_KEY_ID, FAKE_SECRET_ACCESS_KEY

TABLE_NAME = "seat-inventory"
TOPIC_ARN = "arn:aws:sns:us-east-1:123456789012:seat-inventory-outcomes"
REGION = "us-east-1"
# What template.yaml's Globals set on both functions (Tracing PassThrough and LogLevel INFO, the
# defaults), and what Lambda sets.
FUNCTION_ENVIRONMENT = {
    "TABLE_NAME": TABLE_NAME,
    "OUTCOMES_TOPIC_ARN": TOPIC_ARN,
    "POWERTOOLS_TRACE_DISABLED": "true",
    "POWERTOOLS_SERVICE_NAME": "seat-inventory",
    "POWERTOOLS_METRICS_NAMESPACE": "SeatInventory",
    "LOG_LEVEL": "INFO",
    "AWS_REGION": REGION,
    "AWS_DEFAULT_REGION": REGION,
    "AWS_ACCESS_KEY_ID": FAKE_ACCESS_KEY_ID,
    "AWS_SECRET_ACCESS_KEY": FAKE_SECRET_ACCESS_KEY,
    "AWS_SESSION_TOKEN": FAKE_SECRET_ACCESS_KEY,
    "AWS_LAMBDA_FUNCTION_NAME": "seat-inventory-cpu",
}
# The issuer runs one round per invocation here: ISSUE_SECONDS 1, on a clock that stands still
# (`_StoppedClock`), so the round's deadline never cuts it short and run_issuer returns after it.
ISSUER_ENVIRONMENT = {"ISSUE_SECONDS": "1"}
EVENT_ID = "cpu-measure"
SHARDS = 64
RESERVE_KINDS = ("reserve", "hold", "limit", "sold-out", "mapped")
DEFAULT_SIZES = (1, 10, 25, 50, 75, 99)
# (sales waiting, series): batches and tickets vary apart, so the fit can tell them apart.
DEFAULT_ISSUER_ROUNDS = ((1, 1), (98, 1), (196, 1), (490, 1), (98, 8), (196, 8), (490, 8), (490, 32))
STADIUM_MAP = Path(__file__).resolve().parents[3] / "examples" / "seat_maps" / "stadium.json"


class _Context:
    """The parts of Lambda's context object the handlers read."""

    function_name = "seat-inventory-cpu"
    function_version = "$LATEST"
    memory_limit_in_mb = 512
    invoked_function_arn = f"arn:aws:lambda:{REGION}:123456789012:function:seat-inventory-cpu"

    def __init__(self) -> None:
        self.aws_request_id = str(uuid.uuid4())

    def get_remaining_time_in_millis(self) -> int:
        return 30_000


# ---------------------------------------------------------------------------------- fits


@dataclass(frozen=True)
class LinearFit:
    """CPU milliseconds = intercept + slope x count (least squares), with R squared."""

    intercept_ms: float
    slope_ms: float
    r_squared: float

    @classmethod
    def of(cls, points: Sequence[tuple[float, float]]) -> LinearFit:
        xs, ys = [p[0] for p in points], [p[1] for p in points]
        mx, my = statistics.fmean(xs), statistics.fmean(ys)
        sxx = sum((x - mx) ** 2 for x in xs)
        if sxx == 0:
            raise ValueError("a fit needs at least two different counts")
        slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx
        intercept = my - slope * mx
        return cls(intercept, slope, _r_squared(ys, [intercept + slope * x for x in xs]))


@dataclass(frozen=True)
class IssuerFit:
    """CPU milliseconds of one issuer round = round + per_batch x batches + per_ticket x tickets."""

    round_ms: float
    per_batch_ms: float
    per_ticket_ms: float
    r_squared: float

    @classmethod
    def of(cls, points: Sequence[tuple[float, float, float]]) -> IssuerFit:
        """Least squares over (batches, tickets, ms) points (the normal equations, solved exactly)."""
        rows = [(1.0, b, t) for b, t, _ in points]
        ys = [ms for _, _, ms in points]
        normal = [[sum(r[i] * r[j] for r in rows) for j in range(3)] for i in range(3)]
        rhs = [sum(r[i] * y for r, y in zip(rows, ys, strict=True)) for i in range(3)]
        a, b, c = _solve3(normal, rhs)
        fitted = [a + b * r[1] + c * r[2] for r in rows]
        return cls(a, b, c, _r_squared(ys, fitted))


def _r_squared(ys: Sequence[float], fitted: Sequence[float]) -> float:
    mean = statistics.fmean(ys)
    total = sum((y - mean) ** 2 for y in ys)
    residual = sum((y - f) ** 2 for y, f in zip(ys, fitted, strict=True))
    return 1.0 - residual / total if total else 1.0


def _solve3(matrix: list[list[float]], rhs: list[float]) -> tuple[float, float, float]:
    """Gaussian elimination with partial pivoting on a 3x3 system."""
    m = [[*row, value] for row, value in zip(matrix, rhs, strict=True)]
    for col in range(3):
        pivot = max(range(col, 3), key=lambda r: abs(m[r][col]))
        if abs(m[pivot][col]) < 1e-12:
            raise ValueError("the issuer's rounds do not tell batches from tickets: vary them apart")
        m[col], m[pivot] = m[pivot], m[col]
        for r in range(3):
            if r != col:
                factor = m[r][col] / m[col][col]
                m[r] = [v - factor * p for v, p in zip(m[r], m[col], strict=True)]
    return m[0][3] / m[0][0], m[1][3] / m[1][1], m[2][3] / m[2][2]


# ---------------------------------------------------------------------------------- results


@dataclass(frozen=True)
class Sample:
    """One configuration's CPU per invocation over its rounds (milliseconds)."""

    kind: str
    messages: int  # messages in the batch; for the issuer, the sales it found
    median_ms: float
    low_ms: float
    high_ms: float
    rounds: int
    batches: int = 0  # the issuer's numbering transactions in the round
    series: int = 0


@dataclass
class Measurement:
    """Every sample and fit of one run, and where it ran."""

    samples: list[Sample] = field(default_factory=list)
    reserve_fits: dict[str, LinearFit] = field(default_factory=dict)
    issuer_fit: IssuerFit | None = None
    machine: str = ""
    calls: dict[str, dict[str, float]] = field(default_factory=dict)  # kind -> AWS calls per invocation

    def as_dict(self) -> dict[str, Any]:
        return {
            "machine": self.machine,
            "samples": [vars(s) for s in self.samples],
            "reserve_fits": {k: vars(f) for k, f in self.reserve_fits.items()},
            "issuer_fit": vars(self.issuer_fit) if self.issuer_fit else None,
            "calls_per_invocation": self.calls,
        }


def median_run(runs: Sequence[Measurement]) -> Measurement:
    """One measurement from several runs of the same kinds: each kind's fit (and its samples and
    calls) from the run whose fit gives the median CPU for a batch of 99 (the issuer's: a round
    of 10 batches of 98 tickets), the lower of the two middle ones for an even count. A run slowed
    by another process on the machine thus sets no constant."""
    if not runs:
        raise ValueError("no run to take the median of")
    result = Measurement(machine=runs[0].machine)
    for kind in runs[0].reserve_fits:
        chosen = _median_by(runs, functools.partial(_full_batch_ms, kind))
        result.reserve_fits[kind] = chosen.reserve_fits[kind]
        result.samples.extend(s for s in chosen.samples if s.kind == kind)
        result.calls[kind] = chosen.calls[kind]
    if all(run.issuer_fit is not None for run in runs):

        def round_ms(run: Measurement) -> float:
            fit = run.issuer_fit
            assert fit is not None
            return fit.round_ms + 10 * fit.per_batch_ms + 980 * fit.per_ticket_ms

        chosen = _median_by(runs, round_ms)
        result.issuer_fit = chosen.issuer_fit
        result.samples.extend(s for s in chosen.samples if s.kind == "issuer")
        result.calls["issuer"] = chosen.calls["issuer"]
    return result


def _full_batch_ms(kind: str, run: Measurement) -> float:
    fit = run.reserve_fits[kind]
    return fit.intercept_ms + 99 * fit.slope_ms


def _median_by(runs: Sequence[Measurement], key: Callable[[Measurement], float]) -> Measurement:
    ordered = sorted(runs, key=key)
    return ordered[(len(ordered) - 1) // 2]


def machine_description() -> str:
    """The CPU model, its cores, and the Python and botocore the measurement ran on."""
    model = platform.processor() or platform.machine()
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return (
        f"{model}, {os.cpu_count()} cores, {platform.machine()}, Python {platform.python_version()},"
        f" botocore {botocore.__version__}"
    )


# ---------------------------------------------------------------------------------- harness


@contextlib.contextmanager
def _function_environment(extra: Mapping[str, str]) -> Iterator[None]:
    """The function's environment variables, and its stdout (logs, metrics) sent to /dev/null as
    Lambda sends it to its log pipe; both restored after."""
    saved = dict(os.environ)
    os.environ.update(FUNCTION_ENVIRONMENT)
    os.environ.update(extra)
    sys.stdout.flush()
    saved_fd = os.dup(1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    try:
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved_fd, 1)
        os.close(saved_fd)
        os.close(devnull)
        os.environ.clear()
        os.environ.update(saved)


class _Stack:
    """The canned DynamoDB and SNS, and a session whose clients talk to them."""

    def __init__(self) -> None:
        self.dynamodb = CannedDynamoDB()
        self.sns = CannedSns()
        self.session = boto3.session.Session(
            region_name=REGION,
            aws_access_key_id=FUNCTION_ENVIRONMENT["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=FUNCTION_ENVIRONMENT["AWS_SECRET_ACCESS_KEY"],
            aws_session_token=FUNCTION_ENVIRONMENT["AWS_SESSION_TOKEN"],
        )
        self.dynamodb.register(self.session.events)
        self.sns.register(self.session.events)

    def client(self) -> Any:
        return self.session.client("dynamodb")

    def canned_cpu_s(self) -> float:
        return self.dynamodb.cpu_s + self.sns.cpu_s

    def calls(self) -> dict[str, int]:
        return {
            **{f"dynamodb.{k}": v for k, v in self.dynamodb.calls.items()},
            **{f"sns.{k}": v for k, v in self.sns.calls.items()},
        }


class _StoppedClock:
    """The issuer's clock in a measured round: it reads the time it was made at, whatever the
    round's CPU takes on a loaded machine (its sleeps pass at once)."""

    def __init__(self) -> None:
        self._now = time.time()

    def now(self) -> float:
        return self._now

    def sleep(self, seconds: float) -> None:
        self._now += seconds


@contextlib.contextmanager
def _handler_on(
    module: Any, stack: _Stack, *, stopped_clock: bool = False
) -> Iterator[Callable[[dict[str, Any]], Any]]:
    """The module's `lambda_handler` with its adapters built on the stack's session, as a new
    container (the module's `build_adapters` is looked up at call time; it is put back after)."""
    real = module.build_adapters

    def build(*args: Any, **kwargs: Any) -> Any:
        adapters = real(*args, session=stack.session, **kwargs)
        return dataclasses.replace(adapters, clock=_StoppedClock()) if stopped_clock else adapters

    module.build_adapters = build
    module.reset_container()
    try:
        yield lambda event: module.lambda_handler(event, _Context())
    finally:
        module.reset_container()
        module.build_adapters = real


def _cpu_ms(
    stack: _Stack, invoke: Callable[[dict[str, Any]], Any], event: dict[str, Any]
) -> tuple[float, Any]:
    """One invocation's answer and the process's CPU milliseconds while it ran, less what the
    canned services spent."""
    canned = stack.canned_cpu_s()
    start = time.process_time()
    answer = invoke(event)
    spent = time.process_time() - start
    return (spent - (stack.canned_cpu_s() - canned)) * 1000, answer


def _summary(kind: str, messages: int, values: Sequence[float], **extra: int) -> Sample:
    return Sample(kind, messages, statistics.median(values), min(values), max(values), len(values), **extra)


# ---------------------------------------------------------------------------------- the reserve handler


def _sqs_event(bodies: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    return {
        "Records": [
            {
                "messageId": str(uuid.uuid4()),
                "receiptHandle": uuid.uuid4().hex,
                "body": json.dumps(body),
                "attributes": {"ApproximateReceiveCount": "1"},
                "messageAttributes": {},
                "eventSource": "aws:sqs",
                "awsRegion": REGION,
            }
            for body in bodies
        ]
    }


class _Workload:
    """Bodies of one kind, each with a new reservation id."""

    def __init__(self, kind: str, stack: _Stack, rng: random.Random) -> None:
        self.kind = kind
        self.rng = rng
        self.counter = 0
        self.classes: tuple[str, ...] = ("GA",)
        self._set_up(stack)

    def _set_up(self, stack: _Stack) -> None:
        from seat_inventory.models import SeatKey
        from seat_tools.operator_commands import OperatorTable
        from seat_tools.seat_map_commands import SaleRules
        from seat_tools.seat_map_files import load_file

        client = stack.client()
        if self.kind == "mapped":
            seat_map = load_file(str(STADIUM_MAP))
            OperatorTable(client, TABLE_NAME).create_seat_map(EVENT_ID, seat_map, SaleRules())
            self.classes = tuple(sorted(seat_map.classes))
            return
        capacity = 0 if self.kind == "sold-out" else 1_000_000_000
        limit = 1_000 if self.kind == "limit" else None
        OperatorTable(client, TABLE_NAME).create_seat_class(
            SeatKey(EVENT_ID, "GA"), capacity, shards=SHARDS, max_per_customer=limit
        )

    def bodies(self, count: int) -> list[dict[str, Any]]:
        out = []
        for _ in range(count):
            self.counter += 1
            body: dict[str, Any] = {
                "reservation_id": f"r-{uuid.uuid4().hex}",
                "event_id": EVENT_ID,
                "seat_class": self.rng.choice(self.classes),
                "quantity": self.rng.randint(1, 8) if self.kind == "mapped" else 1,
                "customer_id": f"c-{self.counter}",
            }
            if self.kind == "hold":
                body["type"] = "hold"
                body["hold_seconds"] = 600
            out.append(body)
        return out


def measure_reserve(
    kind: str, sizes: Sequence[int], rounds: int, *, warmups: int = 3, seed: int = 1
) -> tuple[list[Sample], dict[str, float]]:
    """Each batch size's CPU per invocation over `rounds` rounds (sizes in a new random order
    each round), and the AWS calls per measured invocation by operation."""
    from seat_inventory.handlers import reserve_seats

    if kind not in RESERVE_KINDS:
        raise ValueError(f"unknown kind {kind!r}: one of {', '.join(RESERVE_KINDS)}")
    rng = random.Random(seed)
    stack = _Stack()
    values: dict[int, list[float]] = {size: [] for size in sizes}
    with _function_environment({}):
        workload = _Workload(kind, stack, rng)
        stack.dynamodb.frozen = True
        with _handler_on(reserve_seats, stack) as invoke:
            for _ in range(warmups):
                _check_answered(invoke(_sqs_event(workload.bodies(max(sizes)))))
            before = stack.calls()
            for _ in range(rounds):
                order = list(sizes)
                rng.shuffle(order)
                for size in order:
                    cpu_ms, answer = _cpu_ms(stack, invoke, _sqs_event(workload.bodies(size)))
                    values[size].append(cpu_ms)
                    _check_answered(answer)
            after = stack.calls()
    invocations = rounds * len(sizes)
    calls = {op: (n - before.get(op, 0)) / invocations for op, n in after.items() if n > before.get(op, 0)}
    return [_summary(kind, size, values[size]) for size in sizes], calls


def _check_answered(answer: Mapping[str, Any]) -> None:
    """A measured invocation must have answered every message (none handed back)."""
    if answer.get("batchItemFailures"):
        raise RuntimeError(f"the handler handed back messages: {answer['batchItemFailures'][:3]}")


# ---------------------------------------------------------------------------------- the ticket issuer


def _sale_items(stack: _Stack, sales: int, series: int, rng: random.Random) -> list[dict[str, Any]]:
    """`sales` confirmed one-seat reservations as the reserve handler records them (written by it,
    on the canned table), waiting for numbers, and the event's ticket format with `series`."""
    from seat_inventory.handlers import reserve_seats
    from seat_inventory.models import SeatKey, TicketFormat
    from seat_tools.operator_commands import OperatorTable

    client = stack.client()
    OperatorTable(client, TABLE_NAME).create_seat_class(SeatKey(EVENT_ID, "GA"), 1_000_000_000)
    OperatorTable(client, TABLE_NAME).write_ticket_format(EVENT_ID, TicketFormat(series=series))
    with _handler_on(reserve_seats, stack) as invoke:
        for start in range(0, sales, 99):
            count = min(99, sales - start)
            bodies = [
                {
                    "reservation_id": f"r-{rng.getrandbits(64):016x}",
                    "event_id": EVENT_ID,
                    "seat_class": "GA",
                    "quantity": 1,
                    "customer_id": f"c-{start + n}",
                }
                for n in range(count)
            ]
            _check_answered(invoke(_sqs_event(bodies)))
    waiting = [item for item in stack.dynamodb.items.values() if "gsi2pk" in item]
    if len(waiting) != sales:
        raise RuntimeError(f"{len(waiting)} sales wait for numbers, not {sales}")
    return waiting


def measure_issuer(
    configurations: Sequence[tuple[int, int]], rounds: int, *, warmups: int = 2, seed: int = 1
) -> tuple[list[Sample], dict[str, float]]:
    """Each (sales, series) configuration's CPU per issuer invocation of one round, over `rounds`
    rounds; the canned table holds exactly those sales waiting (frozen: every round finds them
    again, each numbered from 1 in its series)."""
    from seat_inventory.handlers import issue_tickets
    from seat_inventory.logic.issue_tickets import BATCH_SIZE, series_of

    rng = random.Random(seed)
    samples: list[Sample] = []
    calls: dict[str, float] = {}
    with _function_environment(ISSUER_ENVIRONMENT):
        for sales, series in configurations:
            stack = _Stack()
            _sale_items(stack, sales, series, rng)
            stack.dynamodb.frozen = True
            per_series: dict[int, int] = {}
            for item in stack.dynamodb.items.values():
                if "gsi2pk" in item:
                    s = series_of(item["reservation_id"]["S"], series)
                    per_series[s] = per_series.get(s, 0) + 1
            batches = sum(math.ceil(n / BATCH_SIZE) for n in per_series.values())
            values: list[float] = []
            with _handler_on(issue_tickets, stack, stopped_clock=True) as invoke:
                for _ in range(warmups):
                    _check_issued(invoke({}), sales)
                before = stack.calls()
                for _ in range(rounds):
                    cpu_ms, answer = _cpu_ms(stack, invoke, {})
                    values.append(cpu_ms)
                    _check_issued(answer, sales)
                after = stack.calls()
            samples.append(_summary("issuer", sales, values, batches=batches, series=series))
            if (sales, series) == max(configurations):
                calls = {
                    op: (n - before.get(op, 0)) / rounds for op, n in after.items() if n > before.get(op, 0)
                }
    return samples, calls


def _check_issued(answer: Mapping[str, Any], sales: int) -> None:
    if answer.get("numbered") != sales or answer.get("published") != sales:
        raise RuntimeError(f"the issuer numbered {answer.get('numbered')} of {sales} sales: {answer}")


# ---------------------------------------------------------------------------------- the whole run


def measure(
    *,
    kinds: Sequence[str] = RESERVE_KINDS,
    sizes: Sequence[int] = DEFAULT_SIZES,
    rounds: int = 15,
    issuer: Sequence[tuple[int, int]] = DEFAULT_ISSUER_ROUNDS,
    issuer_rounds: int = 9,
    progress: Callable[[str], None] = lambda _line: None,
) -> Measurement:
    """Every reserve kind's samples and fit, and the issuer's (none when `issuer` is empty)."""
    result = Measurement(machine=machine_description())
    for kind in kinds:
        progress(f"reserve handler, {kind}: sizes {list(sizes)}, {rounds} rounds")
        samples, calls = measure_reserve(kind, sizes, rounds)
        result.samples.extend(samples)
        result.calls[kind] = calls
        result.reserve_fits[kind] = LinearFit.of([(s.messages, s.median_ms) for s in samples])
    if issuer:
        progress(f"ticket issuer: (sales, series) {list(issuer)}, {issuer_rounds} rounds")
        samples, calls = measure_issuer(issuer, issuer_rounds)
        result.samples.extend(samples)
        result.calls["issuer"] = calls
        result.issuer_fit = IssuerFit.of([(s.batches, s.messages, s.median_ms) for s in samples])
    return result
