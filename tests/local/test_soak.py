"""Soak on the local stack: a long stream of reservations for many events, with a slow consumer and a
worker that crashes mid-batch, ends with every seat accounted for and every reservation answered once.

The real handler runs in the runner's worker processes against DynamoDB Local and the moto server
(`tests/local/conftest.py`). The traffic: reservations for 24 events of one to three seat classes,
most classes oversold (capacity a fraction of the demand), the others with room for everyone, some
with a per-customer limit, a few requests for an event that does not exist, and 10% producer
re-sends of an earlier reservation id. The producer keeps at most about 2,000 messages waiting
(moto's SQS scans its whole queue on every call, so a 50,000-message backlog would measure moto).

Two of the four workers misbehave (`soak_worker_setup`, the runner's `worker_setup` hook):
- worker 0 dies (`os._exit(1)`) right after its 20th committed transaction, before publishing:
  its batch is half written and unanswered, and comes back after the visibility timeout. Its
  committed reservations can then only be answered as duplicates (their first answer was lost).
- worker 1 is a slow consumer: it pauses in every invocation, and in every third one it stops,
  right after its first committed transaction, for longer than the queue's visibility timeout, so
  its batch is delivered to another worker while it still works on it. Both then settle the same
  reservations at the same time: the hardest duplicate case.

For that the reservations queue's visibility timeout is set to 15 s while the soak runs (and put
back afterwards), on the session stack rather than a dedicated one: a second DynamoDB Local would
cost its start-up, and the fixture `fast_retries` of the on-sale test does the same. 15 s is above
what a normal 100-message invocation takes here (2-5 s on 2 cores with four workers, 13 s for a
cold worker's first batch), so only the slow worker's overruns and the crash cause redeliveries;
and an overrun (15 + 3 s of pause, plus its work) stays under the function's 30 s timeout.

Checked afterwards, from the table and from every outcome published (an SQS queue subscribed to
the topic): per seat class `available + held + sold == capacity`, nothing negative, `sold` equal to
the seats of the distinct reservation ids answered CONFIRMED; no SOLD_OUT where everyone fits and
none while the seats it asked for were left; per-customer limits kept and their counters equal to
the confirmed seats; every message answered, every reservation id with exactly one first answer
(none for those the crash committed, whose answers are all duplicates), every duplicate with the
first answer's outcome, every stored record agreeing with its answers; nothing in the dead-letter
queue; the crash happened, and a batch the slow worker held past the timeout was delivered again.

Size: `SEATS_SOAK_REQUESTS`; bounded (tests/depth.py): `make test` and CI run 2,000 (about 45 s of
traffic, 60-90 s with the checks, on 2 cores), `make test-deep` 10,000. Each batch of 100 touches most of the 46 seat classes, so it costs about 45 transactions:
that, not the queue, sets the pace. `make soak` runs 50,000: 670 s of traffic (75 reservations/s),
12 minutes in all, on a 2-core machine that was also running other test suites at the time.
The figures are printed (`pytest -s` shows them), for instance for that run:
    50000 requests (45000 reservation ids), 24 events, 46 seat classes, 4 workers; 668.9 s,
    75 reservations/s; 52390 deliveries (2390 redeliveries), 527 invocations (mean 2861 ms);
    7357 duplicate answers; crashes: 1 (worker 0 after 20 commits, 67 answers lost and
    republished); slow worker: 23 overruns of 68 invocations.
"""

from __future__ import annotations

import json
import os
import random
import threading
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest

from seat_inventory.dal.inventory_table import InventoryTable
from seat_inventory.models import ReservationOutcome, SeatKey, Take
from seat_tools.local.runner import LocalRunner, runner_config
from seat_tools.local.stack import LocalStack
from seat_tools.operator_commands import OperatorTable
from seat_tools.traffic import OutcomeCollector, reservation_body, send_messages
from tests.depth import sized

SOAK_REQUESTS = sized("SEATS_SOAK_REQUESTS", ci=2000, deep=10_000)
SEED = 20260601
EVENTS = 24
SEAT_CLASSES = ("GA", "VIP", "BALCONY")
WORKERS = 4
DUPLICATES_PCT = 10
UNKNOWN_EVENT_SHARE = 0.02
OVERSOLD_SHARE = 0.6
LIMITED_SHARE = 0.25
MAX_PER_CUSTOMER = 4
MAX_QUANTITY = 4
# The producer sends in waves and waits while this many messages are still waiting in the queue.
SEND_WAVE = 500
MAX_BACKLOG = 2000

# Above the longest normal invocation seen here (13 s: a cold worker's first 100 messages, about 45
# transactions, while three others start too); below the function timeout (30 s) minus an overrun.
VISIBILITY_TIMEOUT_S = 15
CRASH_WORKER = 0
CRASH_AFTER_COMMITS = 20
SLOW_WORKER = 1
SLOW_PAUSE_S = 0.2
# Invocations 2, 5, 8, ... of the slow worker (not its cold first one) overrun the visibility
# timeout by a few seconds: long enough for another worker to take the batch while it still works.
SLOW_OVERRUN_EVERY = 3
SLOW_OVERRUN_S = VISIBILITY_TIMEOUT_S + 3

PLAN_VARIABLE = "SEATS_SOAK_PLAN"  # how the test hands its plan to the worker processes

pytestmark = [
    pytest.mark.local_stack,
    pytest.mark.soak,
    pytest.mark.bounded,
    # A fixed part (starts, the crash's redelivery, the checks), then 20 ms a request (the full soak: 14).
    pytest.mark.timeout(300 + SOAK_REQUESTS // 50),
]


# --------------------------------------------------------------------------- in the worker processes


class _Misbehaviour:
    """What one worker process does besides being the real function: crash once, or be slow.

    Installed by `soak_worker_setup` before the runner imports the handler: the handler module's
    `lambda_handler` is wrapped (to see each invocation), and so are, in this process only,
    `InventoryTable.take` and `record_rejections` (to act right after a write committed) and
    `SnsOutcomePublisher.publish` (to know which committed answers are not published yet).
    """

    def __init__(self, index: int, plan: Mapping[str, Any]) -> None:
        self.index = index
        self.plan = plan
        self.invocations = 0
        self.commits = 0
        self.unpublished: list[str] = []  # reservation ids committed since the last publish
        self.overrun_pending = False
        self.overruns: list[dict[str, Any]] = []  # the slow worker's batches held past the timeout
        self.slept_s = 0.0
        self.current_messages: list[str] = []

    def report(self) -> dict[str, Any]:
        return {
            "worker": self.index,
            "invocations": self.invocations,
            "commits": self.commits,
            "overruns": self.overruns,
            "slept_s": round(self.slept_s, 2),
        }

    def install(self) -> None:
        from seat_inventory.handlers import reserve_seats as handler_module
        from seat_inventory.publishing.sns_publisher import SnsOutcomePublisher

        real_handler = handler_module.lambda_handler
        real_take = InventoryTable.take
        real_record = InventoryTable.record_rejections
        real_publish = SnsOutcomePublisher.publish

        def lambda_handler(event: dict[str, Any], context: Any) -> Any:
            self.invocations += 1
            self.current_messages = [record["messageId"] for record in event["Records"]]
            slow = self.index == self.plan["slow_worker"]
            self.overrun_pending = slow and self.invocations % self.plan["overrun_every"] == 2
            started = time.monotonic()
            if slow:
                self._sleep(self.plan["slow_pause_s"])
            try:
                return real_handler(event, context)
            finally:
                elapsed = time.monotonic() - started
                if slow and elapsed > self.plan["visibility_timeout_s"]:
                    self.overruns.append({"seconds": round(elapsed, 1), "message_ids": self.current_messages})

        def committed(refused: Any, outcomes: Sequence[ReservationOutcome]) -> Any:
            if refused is None:
                self.commits += 1
                self.unpublished.extend(o.reservation_id for o in outcomes)
                if self.index == self.plan["crash_worker"] and self.commits == self.plan["crash_after"]:
                    self._crash()
                if self.overrun_pending:
                    self.overrun_pending = False
                    self._sleep(self.plan["overrun_s"])
            return refused

        def take(table: InventoryTable, take: Take) -> Any:
            return committed(real_take(table, take), [o for part in take.parts for o in part.outcomes])

        def record_rejections(
            table: InventoryTable, outcomes: Sequence[ReservationOutcome], **kw: Any
        ) -> Any:
            return committed(real_record(table, outcomes, **kw), outcomes)

        def publish(
            publisher: SnsOutcomePublisher, outcomes: Sequence[ReservationOutcome], **kwargs: Any
        ) -> Any:
            failed = real_publish(publisher, outcomes, **kwargs)
            self.unpublished = []
            return failed

        # For the life of this worker process: never undone.
        patch = pytest.MonkeyPatch()
        patch.setattr(handler_module, "lambda_handler", lambda_handler)
        patch.setattr(InventoryTable, "take", take)
        patch.setattr(InventoryTable, "record_rejections", record_rejections)
        patch.setattr(SnsOutcomePublisher, "publish", publish)

    def _sleep(self, seconds: float) -> None:
        time.sleep(seconds)
        self.slept_s += seconds

    def _crash(self) -> None:
        """Leaves a note for the test, then dies as a killed process would: no cleanup, no reply."""
        note = {
            "worker": self.index,
            "pid": os.getpid(),
            "commits": self.commits,
            "unpublished": self.unpublished,
            "message_ids": self.current_messages,
        }
        path = Path(self.plan["crash_dir"]) / f"crash-{self.index}.json"
        with open(path, "w") as file:
            json.dump(note, file)
            file.flush()
            os.fsync(file.fileno())
        os._exit(1)


def soak_worker_setup(index: int) -> Callable[[], dict[str, Any]]:
    """The runner's `worker_setup`: makes worker `index` misbehave as the plan says; its report
    reaches `RunnerStats.worker_reports` when the worker stops (never for the crashed one)."""
    misbehaviour = _Misbehaviour(index, json.loads(os.environ[PLAN_VARIABLE]))
    misbehaviour.install()
    return misbehaviour.report


# --------------------------------------------------------------------------- the traffic


@dataclass
class Traffic:
    bodies: list[dict[str, Any]]  # in send order, re-sends included
    capacity: dict[SeatKey, int]
    limits: dict[SeatKey, int]
    unknown: set[SeatKey]
    demand: dict[SeatKey, int] = field(default_factory=dict)  # seats asked by distinct ids

    @property
    def first_bodies(self) -> dict[str, dict[str, Any]]:
        return {b["reservation_id"]: b for b in reversed(self.bodies)}


def plan_traffic(run_id: str, requests: int, rng: random.Random) -> Traffic:
    """Bodies for EVENTS events (and one unknown), re-sends mixed in, and each class's capacity.

    In a class with a per-customer limit the buyers come from a small pool (about one for five
    requests), so that some of them ask for more than the limit.
    """
    keys = [
        SeatKey(f"soak-{run_id}-ev{n:02d}", seat_class)
        for n in range(EVENTS)
        for seat_class in rng.sample(SEAT_CLASSES, rng.randint(1, len(SEAT_CLASSES)))
    ]
    weights = [rng.uniform(0.5, 2.0) for _ in keys]
    limits = {key: MAX_PER_CUSTOMER for key in keys if rng.random() < LIMITED_SHARE}
    unknown = SeatKey(f"soak-{run_id}-ghost", "GA")
    duplicates = round(requests * DUPLICATES_PCT / 100)
    distinct = requests - duplicates
    customers = max(1, distinct // 3)
    fans = {key: max(2, round(distinct * w / sum(weights) / 5)) for key, w in zip(keys, weights, strict=True)}
    originals: list[dict[str, Any]] = []
    for n in range(distinct):
        key = unknown if rng.random() < UNKNOWN_EVENT_SHARE else rng.choices(keys, weights)[0]
        quantity = 1 if rng.random() < 0.7 else rng.randint(2, MAX_QUANTITY)
        customer = f"fan-{rng.randrange(fans[key])}" if key in limits else f"c-{rng.randrange(customers)}"
        originals.append(
            reservation_body(f"soak-{run_id}-r{n:06d}", key.event_id, quantity, customer, key.seat_class)
        )
    demand: dict[SeatKey, int] = Counter()
    for body in originals:
        demand[SeatKey(body["event_id"], body["seat_class"])] += body["quantity"]
    capacity = {
        key: int(demand[key] * rng.uniform(0.3, 0.8))
        if rng.random() < OVERSOLD_SHARE
        else demand[key] + rng.randint(0, 20)
        for key in keys
    }
    # A re-send of original i goes anywhere after it, as a producer retrying a lost acknowledgement.
    placed = [(float(n), 0, body) for n, body in enumerate(originals)]
    for _ in range(duplicates):
        source = rng.randrange(distinct)
        placed.append((source + rng.random() * (distinct - source), 1, dict(originals[source])))
    placed.sort(key=lambda entry: entry[:2])
    return Traffic([body for _, _, body in placed], capacity, limits, {unknown}, dict(demand))


# --------------------------------------------------------------------------- the run


@pytest.fixture
def soak_queue(local_stack: LocalStack) -> Iterator[LocalStack]:
    """The session stack with the soak's visibility timeout on the reservations queue, restored after."""
    with local_stack.visibility_timeout(VISIBILITY_TIMEOUT_S):
        yield local_stack


def _send_in_waves(stack: LocalStack, bodies: Sequence[Mapping[str, Any]]) -> int:
    """Sends every body, a wave at a time, never letting the backlog pass MAX_BACKLOG; returns failures."""
    sqs = stack.client("sqs")
    failed = 0
    for start in range(0, len(bodies), SEND_WAVE):
        while stack.queue_depth()[0] > MAX_BACKLOG:
            time.sleep(0.5)
        failed += send_messages(sqs, stack.queue_url, bodies[start : start + SEND_WAVE], concurrency=4).failed
    return failed


class _Outcomes:
    """Every outcome document published, polled from the collector's queue in a background thread."""

    def __init__(self, collector: OutcomeCollector) -> None:
        self.collector = collector
        self.documents: list[dict[str, Any]] = []
        self.errors: list[BaseException] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="soak-outcomes", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                self.documents.extend(self.collector.poll(wait_seconds=1))
        except BaseException as exc:  # noqa: BLE001 - raised again by finish()
            self.errors.append(exc)

    def finish(self) -> list[dict[str, Any]]:
        """Stops the thread, then takes what is left (the queue stays quiet for two seconds)."""
        self._stop.set()
        self._thread.join(timeout=30)
        if self.errors:
            raise self.errors[0]
        self.documents += self.collector.collect(until=lambda _: False, timeout_s=120, idle_s=2)
        return self.documents


def _dead_letter_depth(stack: LocalStack) -> int:
    return sum(stack.queue_depth(stack.dead_letter_queue_url))


def test_a_soak_with_a_slow_consumer_and_a_crash_keeps_every_invariant(  # noqa: PLR0915 - one scenario, its checks in order
    soak_queue: LocalStack, tmp_path: Path
) -> None:
    # Given many events, several seat classes (most oversold, some limited per customer), and
    # SOAK_REQUESTS reservations with re-sends and a few for an unknown event
    stack = soak_queue
    run_id = uuid.uuid4().hex[:6]
    traffic = plan_traffic(run_id, SOAK_REQUESTS, random.Random(SEED))
    admin = OperatorTable(stack.client("dynamodb"), stack.table_name)
    for key, capacity in traffic.capacity.items():
        admin.create_seat_class(key, capacity, max_per_customer=traffic.limits.get(key))
    dead_letters_before = _dead_letter_depth(stack)

    # And four workers, one of which crashes mid-batch and one of which is a slow consumer
    plan = {
        "crash_worker": CRASH_WORKER,
        "crash_after": CRASH_AFTER_COMMITS,
        "crash_dir": str(tmp_path),
        "slow_worker": SLOW_WORKER,
        "slow_pause_s": SLOW_PAUSE_S,
        "overrun_every": SLOW_OVERRUN_EVERY,
        "overrun_s": SLOW_OVERRUN_S,
        "visibility_timeout_s": VISIBILITY_TIMEOUT_S,
    }
    config = runner_config(stack, workers=WORKERS, worker_setup=f"{__name__}.soak_worker_setup")
    config = replace(config, environment={**config.environment, PLAN_VARIABLE: json.dumps(plan)})

    # When the traffic is sent and the workers drain the queue
    with OutcomeCollector(stack.client("sns"), stack.client("sqs"), stack.topic_arn) as collector:
        outcomes = _Outcomes(collector)
        outcomes.start()
        with LocalRunner(config) as runner:
            started = time.monotonic()
            send_failed = _send_in_waves(stack, traffic.bodies)
            drained = runner.drain(
                stack.queue_depth, quiet_s=3, timeout_s=300 + SOAK_REQUESTS / 20, deleted=len(traffic.bodies)
            )
            elapsed = time.monotonic() - started
        stats = runner.stats
        documents = outcomes.finish()

    assert send_failed == 0
    assert drained, "the queue did not drain"
    assert stats.handler_errors == 0, stats.errors
    assert stats.timeouts == 0
    assert stack.queue_depth() == (0, 0)
    assert _dead_letter_depth(stack) == dead_letters_before, "messages reached the dead-letter queue"

    # Then the crash really happened mid-batch, and the slow worker really overran its batches
    crash_note = tmp_path / f"crash-{CRASH_WORKER}.json"
    assert crash_note.exists(), "worker 0 did not crash"
    crash = json.loads(crash_note.read_text())
    assert crash["unpublished"], "the crash left no committed answer unpublished"
    reports = {report["worker"]: report for report in stats.worker_reports}
    assert set(reports) == set(range(WORKERS)) - {CRASH_WORKER}, "only the crashed worker never stopped"
    slow = reports[SLOW_WORKER]
    assert slow["overruns"], f"the slow worker never ran past the visibility timeout: {slow}"

    mine = [d for d in documents if str(d.get("reservation_id", "")).startswith(f"soak-{run_id}-")]
    answers: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for document in mine:
        answers[document["reservation_id"]].append(document)
    by_message: Counter[str] = Counter(d["message_id"] for d in mine)

    # And a batch the slow worker still held was delivered to another worker meanwhile
    overrun_ids = {m for overrun in slow["overruns"] for m in overrun["message_ids"]}
    assert any(by_message[m] >= 2 for m in overrun_ids), "no overrun batch was redelivered"
    # And the crashed batch was delivered again and answered
    assert all(by_message[m] >= 1 for m in crash["message_ids"])

    # And every message sent was answered, every reservation id decided once
    first = traffic.first_bodies
    sends = Counter(b["reservation_id"] for b in traffic.bodies)
    assert set(answers) == set(first), "reservation ids answered that were never sent, or never answered"
    crashed = set(crash["unpublished"])
    for rid, documents_of_id in answers.items():
        assert len({d["message_id"] for d in documents_of_id}) == sends[rid], (rid, documents_of_id)
        assert len({d["outcome"] for d in documents_of_id}) == 1, (rid, documents_of_id)
        firsts = sum(1 for d in documents_of_id if not d["duplicate"])
        # The crash lost the first answers of what it committed: those ids have duplicates only.
        assert firsts == (0 if rid in crashed else 1), (rid, documents_of_id)
        assert {d["quantity"] for d in documents_of_id} == {first[rid]["quantity"]}
        assert all(d["remaining"] is None or d["remaining"] >= 0 for d in documents_of_id)
    outcome_of = {rid: documents_of_id[0]["outcome"] for rid, documents_of_id in answers.items()}

    # And each stored record holds the answer its id was given
    records = admin.read_reservations(list(first))
    assert set(records) == set(first)
    assert {rid: r.answer.outcome.value for rid, r in records.items()} == outcome_of
    assert {rid: r.quantity for rid, r in records.items()} == {rid: b["quantity"] for rid, b in first.items()}

    # And every seat class adds up, agrees with its answers, and rejected only what it had to
    ids_of: dict[SeatKey, list[str]] = defaultdict(list)
    for rid, body in first.items():
        ids_of[SeatKey(body["event_id"], body["seat_class"])].append(rid)
    inventory = {
        item.key: item
        for event_id in sorted({key.event_id for key in traffic.capacity})
        for item in admin.get_event(event_id)
    }
    assert set(inventory) == set(traffic.capacity)
    for key, item in inventory.items():
        outcomes_here = Counter(outcome_of[rid] for rid in ids_of[key])
        assert set(outcomes_here) <= {"CONFIRMED", "SOLD_OUT", "LIMIT_EXCEEDED"}, (key, outcomes_here)
        assert min(item.available, item.held, item.sold) >= 0, item
        assert item.available + item.held + item.sold == item.capacity == traffic.capacity[key], item
        assert item.held == 0, item
        confirmed = [rid for rid in ids_of[key] if outcome_of[rid] == "CONFIRMED"]
        assert item.sold == sum(first[rid]["quantity"] for rid in confirmed), (item, outcomes_here)
        if traffic.demand[key] <= item.capacity:
            assert outcomes_here["SOLD_OUT"] == 0, (key, outcomes_here)
        for rid in ids_of[key]:
            if outcome_of[rid] == "SOLD_OUT":
                # Nothing is given back in this traffic: the seats left only shrank since then.
                assert item.available < first[rid]["quantity"], (rid, item)
        seats_of: Counter[str] = Counter()
        for rid in confirmed:
            seats_of[first[rid]["customer_id"]] += first[rid]["quantity"]
        if key in traffic.limits:
            for customer, seats in seats_of.items():
                assert seats <= traffic.limits[key], (key, customer)
                assert admin.get_customer_seats(key, customer) == seats, (key, customer)
        else:
            assert outcomes_here["LIMIT_EXCEEDED"] == 0, (key, outcomes_here)
    for unknown in traffic.unknown:
        assert {outcome_of[rid] for rid in ids_of[unknown]} == {"UNKNOWN_EVENT"}
    # (the traffic really had everything it claims: every outcome, classes with and without room)
    assert set(outcome_of.values()) == {"CONFIRMED", "SOLD_OUT", "LIMIT_EXCEEDED", "UNKNOWN_EVENT"}
    assert any(traffic.demand[k] <= c for k, c in traffic.capacity.items())
    assert any(traffic.demand[k] > c for k, c in traffic.capacity.items())

    # And the figures (the crashed invocation never reported its delivery: it is added here)
    deliveries = stats.messages + len(crash["message_ids"])
    duplicates = sum(1 for d in mine if d["duplicate"])
    print(
        f"\nsoak: {len(traffic.bodies)} requests ({len(first)} reservation ids), {EVENTS} events, "
        f"{len(traffic.capacity)} seat classes, {WORKERS} workers; {elapsed:.1f} s, "
        f"{len(traffic.bodies) / elapsed:.0f} reservations/s; {deliveries} deliveries "
        f"({deliveries - len(traffic.bodies)} redeliveries), {stats.invocations} invocations "
        f"(mean {stats.as_dict()['mean_invocation_ms']:.0f} ms); {duplicates} duplicate answers; "
        f"crashes: 1 (worker {CRASH_WORKER} after {crash['commits']} commits, "
        f"{len(crashed)} answers lost and republished); slow worker: {len(slow['overruns'])} overruns "
        f"of {slow['invocations']} invocations; outcomes "
        + ", ".join(f"{k} {v}" for k, v in sorted(Counter(outcome_of.values()).items()))
    )
