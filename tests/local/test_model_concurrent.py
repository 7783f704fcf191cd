"""Model-based testing on DynamoDB Local: random workloads applied concurrently, checked against a model.

The sequential model test (`tests/integration/test_model_based.py`) runs hundreds of histories on
moto, one invocation at a time. This is its concurrent counterpart, on an engine whose conditional
transactions are atomic under concurrency. Hypothesis draws a workload: one to three seat classes
with small capacities (some with a per-customer limit), sometimes a class that does not exist,
reservations and holds, confirms and cancels of them (with or without the customer id), invalid
messages, producer re-sends (a new message with the same body) and SQS redeliveries (the same
message id delivered up to three times). The deliveries are shuffled, cut into batches of 1-10,
and three function containers invoke the real handler on them at the same time; a message a
container hands back (`batchItemFailures`) is delivered again, as SQS would.

Each container is a separate process (spawn) that imports the handler and keeps its warm state
(boto3 clients, `InventoryHints`, Powertools' metrics) for the whole test, as a Lambda instance
does: threads in this process would share one container, which Lambda never does. The containers
run with the function's environment from `LocalStack.environment()` and publish to the moto
topic; each hands back, with the handler's response, the outcome documents SNS accepted.

With concurrency the winner of a race is not determined, so the model gives bounds, not answers:
- per seat class `available + held + sold == capacity`, none negative, `sold` and `held` equal to
  the seats of the records CONFIRMED and HELD, each customer's counter equal to its held and
  confirmed seats and within the limit;
- each delivery answered exactly once, or handed back; each reservation id decided once (one
  first answer, every duplicate the same), and its record holding that answer; a confirm and a
  cancel took effect at most once each, and exactly when the record says so;
- SOLD_OUT only when the seats that were ever taken leave fewer than it asked for, never when the
  whole demand fits; LIMIT_EXCEEDED likewise per customer, and only where there is a limit.

Bounded (tests/depth.py): `make test` and CI run 25 workloads (about 25 s on 2 cores: a workload is
1-20 reservations, up to a few dozen deliveries), `make test-deep` 100. More with
SEATS_MODEL_CONCURRENT_EXAMPLES=500.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import multiprocessing
import os
import uuid
from collections import Counter, defaultdict
from collections.abc import Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from seat_inventory.models import ReservationOutcome, SeatClassInventory, SeatKey
from seat_tools.local.runner import LocalLambdaContext, RunnerConfig, runner_config, sqs_record
from seat_tools.local.stack import LocalStack
from seat_tools.operator_commands import OperatorTable
from tests.depth import sized

pytestmark = pytest.mark.local_stack

EXAMPLES = sized("SEATS_MODEL_CONCURRENT_EXAMPLES", ci=25, deep=100)
CONTAINERS = 3
MAX_BATCH = 10
# A message handed back more often than this would reach the dead-letter queue (MaxReceiveCount 5).
MAX_RECEIVES = 5
HOLD_SECONDS = 600  # no hold runs out during an example: no sweeper takes part
TAKERS = ("CONFIRMED", "HELD")  # answers that took seats
REJECTIONS = ("SOLD_OUT", "LIMIT_EXCEEDED")


# --------------------------------------------------------------------------- inside a container


_config: RunnerConfig | None = None
_published: list[dict[str, Any]] = []


def _start_container(config: RunnerConfig) -> None:
    """A container's start: the function's environment, its own log file, and a tap on the publisher."""
    global _config
    _config = config
    if config.log_dir is not None:
        log = open(config.log_dir / f"model-container-{os.getpid()}.log", "a", buffering=1)  # noqa: SIM115
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
    for name in ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL"):
        os.environ.pop(name, None)
    os.environ.update(config.environment)

    from seat_inventory.publishing.sns_publisher import SnsOutcomePublisher, outcome_document

    real_publish = SnsOutcomePublisher.publish

    def publish(publisher: SnsOutcomePublisher, outcomes: Sequence[ReservationOutcome], **kwargs: Any) -> Any:
        failed = real_publish(publisher, outcomes, **kwargs)
        refused = {id(outcome) for outcome in failed}
        _published.extend(outcome_document(o) for o in outcomes if id(o) not in refused)
        return failed

    # For the life of this container process: never undone.
    pytest.MonkeyPatch().setattr(SnsOutcomePublisher, "publish", publish)


def _invoke(event: dict[str, Any]) -> tuple[Any, list[dict[str, Any]]]:
    """One invocation of the real handler; its response and the outcomes SNS accepted."""
    from seat_inventory.handlers.reserve_seats import lambda_handler

    assert _config is not None
    _published.clear()
    response = lambda_handler(event, LocalLambdaContext(_config, os.getpid()))
    return response, list(_published)


# --------------------------------------------------------------------------- workloads


@dataclass(frozen=True)
class Message:
    message_id: str
    body: str
    kind: str  # reserve, hold, confirm, cancel, invalid
    reservation_id: str


@dataclass
class Workload:
    event_id: str
    capacity: dict[SeatKey, int]
    limits: dict[SeatKey, int]
    unknown: SeatKey | None
    requests: dict[str, dict[str, Any]]  # reservation id -> its reserve or hold body
    messages: list[Message]
    deliveries: list[Message]  # in delivery order, SQS redeliveries included
    batch_sizes: list[int]


_workload_ids = itertools.count()


@st.composite
def workloads(draw: st.DrawFn) -> Workload:
    event_id = f"mc-{uuid.uuid4().hex[:8]}-{next(_workload_ids)}"
    classes = draw(st.lists(st.sampled_from(["GA", "VIP", "BOX"]), min_size=1, max_size=3, unique=True))
    capacity = {SeatKey(event_id, c): draw(st.integers(0, 12), label=f"capacity {c}") for c in classes}
    limits = {
        key: limit
        for key in capacity
        if (limit := draw(st.none() | st.integers(1, 4), label=f"limit {key.seat_class}")) is not None
    }
    unknown = SeatKey(event_id, "GHOST") if draw(st.booleans(), label="unknown class") else None
    keys = [*capacity, *([unknown] if unknown else [])]

    messages: list[Message] = []
    requests: dict[str, dict[str, Any]] = {}
    ids = itertools.count()

    def message(kind: str, reservation_id: str, body: dict[str, Any]) -> Message:
        return Message(f"{event_id}-m{next(ids)}", json.dumps(body), kind, reservation_id)

    for n in range(draw(st.integers(1, 20), label="reservations")):
        rid = f"{event_id}-r{n}"
        key = draw(st.sampled_from(keys), label="class")
        kind = draw(st.sampled_from(["reserve", "hold"]), label="kind")
        body: dict[str, Any] = {
            "reservation_id": rid,
            "event_id": key.event_id,
            "seat_class": key.seat_class,
            "quantity": draw(st.integers(1, 4), label="quantity"),
            "customer_id": f"c-{draw(st.integers(0, 3), label='customer')}",
        }
        if kind == "hold":
            body.update(type="hold", hold_seconds=HOLD_SECONDS)
        requests[rid] = body
        messages.append(message(kind, rid, body))
        if draw(st.integers(0, 4), label="re-send") == 0:  # the producer sends the same body again
            messages.append(message(kind, rid, body))
        for change in ("confirm", "cancel"):
            if draw(st.integers(0, 2 if change == "confirm" and kind == "hold" else 5), label=change) == 0:
                change_body = {"type": change, "reservation_id": rid}
                if draw(st.booleans(), label="with customer"):
                    change_body["customer_id"] = body["customer_id"]
                messages.append(message(change, rid, change_body))
    for n in range(draw(st.integers(0, 2), label="invalid")):
        bad: dict[str, Any] = {
            "reservation_id": f"{event_id}-bad{n}",
            "event_id": event_id,
            "quantity": 0,
            "customer_id": "c",
        }
        messages.append(message("invalid", bad["reservation_id"], bad))

    copies = [draw(st.sampled_from([1, 1, 1, 2, 3]), label="deliveries") for _ in messages]
    deliveries = [m for m, k in zip(messages, copies, strict=True) for _ in range(k)]
    rng = draw(st.randoms(use_true_random=False), label="order")
    rng.shuffle(deliveries)
    batch_sizes = [rng.randint(1, MAX_BATCH) for _ in deliveries]
    return Workload(event_id, capacity, limits, unknown, requests, messages, deliveries, batch_sizes)


# --------------------------------------------------------------------------- applying one


@dataclass
class Invocation:
    batch: list[Message]
    failed: set[str]
    documents: list[dict[str, Any]]


@dataclass
class Run:
    invocations: list[Invocation] = field(default_factory=list)
    redeliveries: int = 0

    @property
    def documents(self) -> list[dict[str, Any]]:
        return [d for invocation in self.invocations for d in invocation.documents]


def _event(batch: Sequence[Message], receives: Counter[str], config: RunnerConfig) -> dict[str, Any]:
    records = []
    for m in batch:
        receives[m.message_id] += 1
        entry = {
            "MessageId": m.message_id,
            "ReceiptHandle": f"{m.message_id}-{receives[m.message_id]}",
            "Body": m.body,
            "Attributes": {"ApproximateReceiveCount": str(receives[m.message_id])},
        }
        records.append(sqs_record(entry, queue_arn=config.queue_arn, region=config.region))
    return {"Records": records}


def apply(workload: Workload, pool: ProcessPoolExecutor, config: RunnerConfig) -> Run:
    """Delivers the workload's batches to the containers, CONTAINERS at a time; hands-back go again."""
    run = Run()
    pending = list(workload.deliveries)
    sizes = iter(workload.batch_sizes)
    receives: Counter[str] = Counter()
    in_flight: dict[Future[tuple[Any, list[dict[str, Any]]]], list[Message]] = {}
    while pending or in_flight:
        while pending and len(in_flight) < CONTAINERS:
            size = next(sizes, MAX_BATCH)
            batch, pending = pending[:size], pending[size:]
            in_flight[pool.submit(_invoke, _event(batch, receives, config))] = batch
        done, _ = wait(in_flight, return_when=FIRST_COMPLETED)
        for future in done:
            batch = in_flight.pop(future)
            response, documents = future.result()
            failed = {entry["itemIdentifier"] for entry in response["batchItemFailures"]}
            run.invocations.append(Invocation(batch, failed, documents))
            again = [m for m in dict.fromkeys(batch) if m.message_id in failed]
            assert all(receives[m.message_id] < MAX_RECEIVES for m in again), (
                "a message would be dead-lettered"
            )
            run.redeliveries += len(again)
            pending.extend(again)
    return run


@pytest.fixture(scope="module")
def containers(local_stack: LocalStack) -> Iterator[tuple[ProcessPoolExecutor, RunnerConfig]]:
    config = runner_config(local_stack, workers=CONTAINERS)
    with ProcessPoolExecutor(
        max_workers=CONTAINERS,
        mp_context=multiprocessing.get_context("spawn"),
        initializer=_start_container,
        initargs=(config,),
    ) as pool:
        yield pool, config


# --------------------------------------------------------------------------- the checks


def check(workload: Workload, run: Run, table: OperatorTable) -> None:  # noqa: C901, PLR0915 - the docstring's invariants, one after another
    """Every invariant and model bound of the module docstring, for one applied workload."""
    # Each delivery was answered once, or handed back, never both
    for invocation in run.invocations:
        delivered = {m.message_id for m in invocation.batch}
        answered = Counter(d["message_id"] for d in invocation.documents)
        assert set(answered.values()) <= {1}, invocation
        assert set(answered) == delivered - invocation.failed, (
            f"answered {sorted(answered)} of {sorted(delivered)}"
        )
    documents = run.documents
    assert {d["message_id"] for d in documents} == {m.message_id for m in workload.messages}
    kind_of = {m.message_id: m.kind for m in workload.messages}
    by_kind: dict[str, dict[str, list[dict[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    for document in documents:
        by_kind[kind_of[document["message_id"]]][document["reservation_id"]].append(document)
    decisions = {**by_kind["reserve"], **by_kind["hold"]}

    # Invalid messages were refused and recorded nothing
    assert all(d["outcome"] == "INVALID" for answers in by_kind["invalid"].values() for d in answers)
    records = table.read_reservations([*workload.requests, *by_kind["invalid"]])
    assert set(records) == set(workload.requests)

    # Each reservation id was decided once; its record holds that answer
    for rid, body in workload.requests.items():
        record, answers = records[rid], decisions[rid]
        assert sum(1 for d in answers if not d["duplicate"]) == 1, answers
        assert {d["outcome"] for d in answers} == {record.answer.outcome.value}, (
            f"contradicting: {answers}, {record}"
        )
        assert {d["quantity"] for d in answers} == {body["quantity"]}, answers
        assert (record.quantity, record.answer.customer_id) == (body["quantity"], body["customer_id"])
        key = SeatKey(body["event_id"], body["seat_class"])
        answer, status = record.answer.outcome.value, record.status.value
        if key == workload.unknown:
            assert answer == "UNKNOWN_EVENT", record
        else:
            took = "HELD" if body.get("type") == "hold" else "CONFIRMED"
            assert answer in (took, *REJECTIONS), record
        # A confirm and a cancel took effect at most once each, and exactly when the status says so
        confirms = [
            d for d in by_kind["confirm"].get(rid, []) if d["outcome"] == "CONFIRMED" and not d["duplicate"]
        ]
        cancels = [
            d for d in by_kind["cancel"].get(rid, []) if d["outcome"] == "CANCELLED" and not d["duplicate"]
        ]
        assert len(cancels) == (1 if status == "CANCELLED" else 0), (record, cancels)
        if answer == "HELD":
            # CANCELLED: cancelled while held, or confirmed and then cancelled
            allowed = {"HELD": (0,), "CONFIRMED": (1,), "CANCELLED": (0, 1)}
            assert len(confirms) in allowed[status], (record, confirms)
        else:
            assert not confirms, (record, confirms)  # a plain reservation is confirmed already
            assert status == answer or (answer, status) == ("CONFIRMED", "CANCELLED"), record
        assert status != "EXPIRED", record

    # Every seat class adds up and agrees with its records; customers within their limit
    inventory = {item.key: item for item in table.get_event(workload.event_id)}
    assert set(inventory) == set(workload.capacity)
    by_class: dict[SeatKey, list[str]] = defaultdict(list)
    for rid, body in workload.requests.items():
        by_class[SeatKey(body["event_id"], body["seat_class"])].append(rid)
    for key, item in inventory.items():
        assert min(item.available, item.held, item.sold) >= 0, item
        assert item.available + item.held + item.sold == item.capacity == workload.capacity[key], item
        mine = [records[rid] for rid in by_class[key]]
        confirmed = sum(r.quantity for r in mine if r.status.value == "CONFIRMED")
        assert item.sold == confirmed, f"{key}: sold {item.sold}, the CONFIRMED records hold {confirmed}"
        assert item.held == sum(r.quantity for r in mine if r.status.value == "HELD"), item

        # The bounds a sequential model gives, whatever the order
        taken = sum(r.quantity for r in mine if r.answer.outcome.value in TAKERS)
        demand = sum(r.quantity for r in mine)
        limit = workload.limits.get(key)
        for customer in {r.answer.customer_id or "" for r in mine}:
            theirs = [r for r in mine if r.answer.customer_id == customer]
            keeps = sum(r.quantity for r in theirs if r.customer_counted and r.status.value in TAKERS)
            if limit is None:
                assert not any(r.answer.outcome.value == "LIMIT_EXCEEDED" for r in theirs), theirs
                continue
            assert table.get_customer_seats(key, customer) == keeps <= limit, (key, customer)
            for r in theirs:
                if r.answer.outcome.value == "LIMIT_EXCEEDED":
                    # The counter only grows by seats taken: they were close to the limit then.
                    assert (
                        sum(t.quantity for t in theirs if t.answer.outcome.value in TAKERS)
                        > limit - r.quantity
                    )
            if sum(r.quantity for r in theirs) <= limit:
                assert not any(r.answer.outcome.value == "LIMIT_EXCEEDED" for r in theirs), theirs
        for r in mine:
            if r.answer.outcome.value == "SOLD_OUT":
                # Seats left only shrink by seats taken: fewer than it asked for were left then.
                assert taken > item.capacity - r.quantity, (r, item)
        if demand <= item.capacity:
            assert not any(r.answer.outcome.value == "SOLD_OUT" for r in mine), (item, mine)


# --------------------------------------------------------------------------- the test


@pytest.mark.bounded
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(workload=workloads())
def test_concurrent_random_workloads_keep_every_seat_and_decide_each_reservation_once(
    local_stack: LocalStack, containers: tuple[ProcessPoolExecutor, RunnerConfig], workload: Workload
) -> None:
    # Given the workload's seat classes
    pool, config = containers
    table = OperatorTable(local_stack.client("dynamodb"), local_stack.table_name)
    for key, capacity in workload.capacity.items():
        table.create_seat_class(key, capacity, max_per_customer=workload.limits.get(key))

    # When three containers answer its deliveries at the same time
    run = apply(workload, pool, config)

    # Then the table, the records and the answers agree with each other and with the model's bounds
    check(workload, run, table)


class SoldTwiceView(OperatorTable):
    """The table as it would read had one seat been sold twice: `sold` one more, `available` one less."""

    def get_event(self, event_id: str) -> list[SeatClassInventory]:
        return [
            dataclasses.replace(item, available=item.available - 1, sold=item.sold + 1)
            for item in super().get_event(event_id)
        ]


def test_the_checks_catch_a_seat_sold_twice_a_lost_answer_and_a_contradicting_duplicate(
    local_stack: LocalStack, containers: tuple[ProcessPoolExecutor, RunnerConfig]
) -> None:
    # Given a clean run: a reservation of one seat (re-sent) and one of two, for a class of two seats
    pool, config = containers
    event_id = f"mc-check-{uuid.uuid4().hex[:8]}"
    key = SeatKey(event_id, "GA")
    table = OperatorTable(local_stack.client("dynamodb"), local_stack.table_name)
    table.create_seat_class(key, 2)
    bodies = {
        f"{event_id}-r{n}": {
            "reservation_id": f"{event_id}-r{n}",
            "event_id": event_id,
            "seat_class": "GA",
            "quantity": n + 1,
            "customer_id": f"c-{n}",
        }
        for n in range(2)
    }
    messages = [
        Message(f"{event_id}-m{n}", json.dumps(body), "reserve", rid)
        for n, (rid, body) in enumerate(bodies.items())
    ]
    messages.append(Message(f"{event_id}-m2", messages[0].body, "reserve", messages[0].reservation_id))
    workload = Workload(event_id, {key: 2}, {}, None, bodies, messages, list(messages), [len(messages)])
    run = apply(workload, pool, config)
    check(workload, run, table)
    assert sorted(d["outcome"] for d in run.documents if not d["duplicate"]) == ["CONFIRMED", "SOLD_OUT"]

    # When the table reads as if one seat had been sold twice (the item still adds up), then the checks fail
    with pytest.raises(AssertionError, match="sold 2, the CONFIRMED records hold 1"):
        check(workload, run, SoldTwiceView(local_stack.client("dynamodb"), local_stack.table_name))

    # And when an answer is lost, or a duplicate contradicts the first answer, they fail too
    (invocation,) = run.invocations
    lost = Run([Invocation(invocation.batch, invocation.failed, invocation.documents[1:])])
    with pytest.raises(AssertionError, match="answered"):
        check(workload, lost, table)
    flipped = [
        {**d, "outcome": "SOLD_OUT" if d["outcome"] == "CONFIRMED" else "CONFIRMED"} if d["duplicate"] else d
        for d in invocation.documents
    ]
    with pytest.raises(AssertionError, match="contradicting"):
        check(workload, Run([Invocation(invocation.batch, invocation.failed, flipped)]), table)
