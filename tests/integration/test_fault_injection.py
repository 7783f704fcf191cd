"""Fault injection at every AWS call site of the handler, with the queue redelivering as SQS does.

Each cell of call site x fault puts the same burst on a moto SQS queue that redrives to a
dead-letter queue after 3 receives, then plays the Lambda poller: receive up to 10, invoke the real
handler, delete what it did not hand back (nothing when it raised), repeat until the queue is empty.
Transient faults hit the first few calls and stop; the permanent one never stops. Afterwards the
inventory, the reservation records, the published outcomes and the DLQ are checked against the
guarantees (README "Guarantees"). docs/reliability.md tabulates what each cell saw.

Faults are botocore hooks on the handler's session. A `before-call` hook that returns a response
(or raises) replaces the request, so botocore's own retries are bypassed: the service sees the error
as if those retries were exhausted. An `after-call` hook runs once the response has arrived, so
raising there is "the request succeeded, the reply was lost".
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from botocore.exceptions import ConnectTimeoutError, ReadTimeoutError

from seat_inventory.logic.reserve_seats import MAX_CONFLICT_RETRIES
from seat_inventory.models import ReservationRequest
from seat_inventory.parsing import parse_reservation
from tests.integration.conftest import FakeHttpResponse, Stack, sqs_event
from tests.unit.test_hostile_input import CORPUS

MAX_RECEIVE_COUNT = 3
TRANSIENT_FAULTS = 2  # < MAX_RECEIVE_COUNT: one message can meet every one of them and still get through
# One more than the attempts the planner makes in place (1 + MAX_CONFLICT_RETRIES): the first group
# is handed back to the queue, and on its redelivery the last conflict is absorbed in place.
CONFLICT_FAULTS = 1 + MAX_CONFLICT_RETRIES + 1
MAX_ROUNDS = 60
SQS_MAX_BODY_BYTES = 262_144  # the classic SQS limit, which SNS shares (moto allows 1 MiB)


# --- the call sites and the faults ---------------------------------------------------------------


@dataclass(frozen=True)
class CallSite:
    """One AWS operation the handler calls, and how that service spells each kind of error."""

    operation: str  # "<service>.<Operation>", as in botocore event names
    throttling: str
    internal_error: str
    access_denied: str
    transactional: bool = False


CALL_SITES = [
    CallSite(
        "dynamodb.TransactWriteItems",
        "ThrottlingException",
        "InternalServerError",
        "AccessDeniedException",
        transactional=True,
    ),
    CallSite("dynamodb.GetItem", "ThrottlingException", "InternalServerError", "AccessDeniedException"),
    CallSite("sns.PublishBatch", "Throttled", "InternalError", "AuthorizationError"),
]


@dataclass
class Injection:
    """Counts the faults a hook actually injected; `times` None means every call."""

    times: int | None
    fired: int = 0

    def take(self) -> bool:
        if self.times is not None and self.fired >= self.times:
            return False
        self.fired += 1
        return True


def error_response(code: str, status: int = 400, **extra: Any) -> tuple[FakeHttpResponse, dict[str, Any]]:
    return FakeHttpResponse(status), {"Error": {"Code": code, "Message": f"injected {code}"}, **extra}


def endpoint(site: CallSite) -> str:
    return f"https://{site.operation.split('.')[0]}.us-east-1.amazonaws.com"


def inject_error(code: str, status: int = 400) -> Callable[[Any, CallSite, Injection], None]:
    def install(session: Any, site: CallSite, injection: Injection) -> None:
        def hook(**_: Any) -> Any:
            return error_response(code, status) if injection.take() else None

        session.events.register(f"before-call.{site.operation}", hook)

    return install


def inject_cancelled_by_conflict(session: Any, site: CallSite, injection: Injection) -> None:
    """TransactionCanceledException whose reasons name a conflict on the first item (others "None")."""

    def hook(params: dict[str, Any], **_: Any) -> Any:
        if not injection.take():
            return None
        actions = len(json.loads(params["body"])["TransactItems"])
        reasons = [{"Code": "TransactionConflict", "Message": "Transaction is ongoing for the item"}]
        reasons += [{"Code": "None"}] * (actions - 1)
        return error_response("TransactionCanceledException", CancellationReasons=reasons)

    session.events.register(f"before-call.{site.operation}", hook)


def inject_connect_timeout(session: Any, site: CallSite, injection: Injection) -> None:
    def hook(**_: Any) -> None:
        if injection.take():
            raise ConnectTimeoutError(endpoint_url=endpoint(site))

    session.events.register(f"before-call.{site.operation}", hook)


def inject_reply_lost(session: Any, site: CallSite, injection: Injection) -> None:
    """The call reached the service and succeeded (a transaction committed, a message went out)."""

    def hook(http_response: Any, **_: Any) -> None:
        if http_response.status_code < 300 and injection.take():
            raise ReadTimeoutError(endpoint_url=endpoint(site))

    session.events.register(f"after-call.{site.operation}", hook)


@dataclass(frozen=True)
class Fault:
    name: str
    install: Callable[[CallSite], Callable[[Any, CallSite, Injection], None]]
    times: int | None = TRANSIENT_FAULTS
    transactional_only: bool = False


FAULTS = [
    Fault("throttling", lambda site: inject_error(site.throttling)),
    Fault(
        "transaction conflict",
        lambda site: inject_error("TransactionConflictException"),
        times=CONFLICT_FAULTS,
        transactional_only=True,
    ),
    Fault(
        "cancelled by conflict",
        lambda site: inject_cancelled_by_conflict,
        times=CONFLICT_FAULTS,
        transactional_only=True,
    ),
    Fault("internal server error", lambda site: inject_error(site.internal_error, 500)),
    Fault("timeout before the request", lambda site: inject_connect_timeout),
    Fault("reply lost after success", lambda site: inject_reply_lost),
]
PERMANENT = Fault("access denied, permanent", lambda site: inject_error(site.access_denied, 403), times=None)

CELLS = [
    pytest.param(site, fault, id=f"{site.operation}-{fault.name}")
    for site in CALL_SITES
    for fault in FAULTS
    if site.transactional or not fault.transactional_only
]


# --- the burst -------------------------------------------------------------------------------------

EVENTS = {  # (event, seat class) -> capacity
    ("arena", "GA"): 20,
    ("arena", "VIP"): 4,
    ("club", "GA"): 6,
    ("closed", "GA"): 0,
}


def reservation(reservation_id: str, event_id: str, quantity: int, seat_class: str = "GA") -> str:
    return json.dumps(
        {
            "reservation_id": reservation_id,
            "event_id": event_id,
            "seat_class": seat_class,
            "quantity": quantity,
            "customer_id": f"c-{reservation_id}",
        }
    )


def burst() -> list[str]:
    """32 messages, 27 reservation ids: arena GA is oversubscribed (28 seats asked, 20 there), VIP
    and club sell out, `closed` has no seats, `ghost` does not exist, two bodies are invalid, and
    three reservations are sent twice (once into the same receive, twice into later ones)."""
    bodies = [reservation(f"a-{n:02}", "arena", 1 + n % 3) for n in range(13)]
    bodies += [reservation(f"v-{n}", "arena", 1 + n % 2, "VIP") for n in range(5)]
    bodies += [reservation(f"k-{n}", "club", 2) for n in range(5)]
    bodies += [reservation("z-0", "closed", 1), reservation("z-1", "closed", 2)]
    bodies += [reservation("g-0", "ghost", 1)]
    bodies += [
        json.dumps({"reservation_id": "bad-0", "event_id": "arena", "quantity": 0, "customer_id": "c"})
    ]
    bodies += ["not json"]
    # producer retries: the same body sent again, some into the same receive, some later
    duplicates = [bodies[1], bodies[14], bodies[19]]
    bodies.insert(3, duplicates[0])
    bodies.insert(25, duplicates[1])
    bodies.append(duplicates[2])
    bodies += [reservation("a-99", "arena", 3)]
    return bodies


# --- SQS, played by moto, and the poller, played by the test ----------------------------------------


@dataclass
class Queues:
    url: str
    dlq_url: str

    @classmethod
    def create(cls, sqs: Any, name: str = "reservations") -> Queues:
        dlq_url = sqs.create_queue(QueueName=f"{name}-dlq")["QueueUrl"]
        dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["QueueArn"])["Attributes"][
            "QueueArn"
        ]
        url = sqs.create_queue(
            QueueName=name,
            Attributes={
                # 0: a message handed back is visible again at once, as if its timeout had passed
                "VisibilityTimeout": "0",
                "RedrivePolicy": json.dumps(
                    {"deadLetterTargetArn": dlq_arn, "maxReceiveCount": str(MAX_RECEIVE_COUNT)}
                ),
            },
        )["QueueUrl"]
        return cls(url, dlq_url)


@dataclass
class Run:
    """What the poller saw while the queue drained."""

    sent: dict[str, str] = field(default_factory=dict)  # SQS message id -> body
    invocations: int = 0
    handler_errors: list[str] = field(default_factory=list)
    handed_back: int = 0  # sum of batchItemFailures
    receives: Counter[str] = field(default_factory=Counter)
    published: list[dict[str, Any]] = field(default_factory=list)
    dead_letters: dict[str, str] = field(default_factory=dict)  # message id -> body
    dlq_depth: int = 0

    @property
    def redelivered(self) -> int:
        return sum(1 for count in self.receives.values() if count > 1)

    def outcomes_by_reservation(self) -> dict[str, list[dict[str, Any]]]:
        grouped: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for document in self.published:
            grouped[document["reservation_id"]].append(document)
        return grouped

    def summary(self) -> dict[str, Any]:
        duplicates = sum(1 for d in self.published if d["duplicate"])
        return {
            "invocations": self.invocations,
            "handler_errors": len(self.handler_errors),
            "handed_back": self.handed_back,
            "redelivered": self.redelivered,
            "max_receives": max(self.receives.values(), default=0),
            "published": len(self.published),
            "duplicate_flagged": duplicates,
            "dlq": self.dlq_depth,
        }


def send(stack: Stack, queues: Queues, bodies: list[str]) -> dict[str, str]:
    sent: dict[str, str] = {}
    for start in range(0, len(bodies), 10):
        chunk = bodies[start : start + 10]
        response = stack.sqs.send_message_batch(
            QueueUrl=queues.url,
            Entries=[{"Id": str(n), "MessageBody": text} for n, text in enumerate(chunk)],
        )
        assert not response.get("Failed")
        for entry in response["Successful"]:
            sent[entry["MessageId"]] = chunk[int(entry["Id"])]
    return sent


def lambda_event(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """The SQS event the Lambda poller builds from one receive (shape of conftest.sqs_event)."""
    event = sqs_event(*(m["Body"] for m in messages))
    for record, message in zip(event["Records"], messages, strict=True):
        record["messageId"] = message["MessageId"]
        record["receiptHandle"] = message["ReceiptHandle"]
        record["attributes"]["ApproximateReceiveCount"] = message["Attributes"]["ApproximateReceiveCount"]
    return event


def drain(stack: Stack, queues: Queues, bodies: list[str]) -> Run:
    """Sends the bodies, then polls as the SQS event source mapping does until the queue is empty."""
    run = Run(sent=send(stack, queues, bodies))
    for _ in range(MAX_ROUNDS):
        messages = stack.sqs.receive_message(
            QueueUrl=queues.url, MaxNumberOfMessages=10, AttributeNames=["ApproximateReceiveCount"]
        ).get("Messages", [])
        if not messages:
            break
        run.receives.update(m["MessageId"] for m in messages)
        run.invocations += 1
        try:
            response = stack.invoke(lambda_event(messages))
        except Exception as exc:  # noqa: BLE001 - Lambda counts any exception as a failed invocation
            run.handler_errors.append(type(exc).__name__)
            run.published += stack.outcomes()
            continue  # nothing is deleted: the whole batch comes back
        failed = {item["itemIdentifier"] for item in response["batchItemFailures"]}
        run.handed_back += len(failed)
        done = [m for m in messages if m["MessageId"] not in failed]
        if done:
            stack.sqs.delete_message_batch(
                QueueUrl=queues.url,
                Entries=[{"Id": str(n), "ReceiptHandle": m["ReceiptHandle"]} for n, m in enumerate(done)],
            )
        run.published += stack.outcomes()
    else:
        pytest.fail(f"the queue did not drain in {MAX_ROUNDS} receives")
    run.dlq_depth = int(
        stack.sqs.get_queue_attributes(
            QueueUrl=queues.dlq_url, AttributeNames=["ApproximateNumberOfMessages"]
        )["Attributes"]["ApproximateNumberOfMessages"]
    )
    run.dead_letters = dict(read_all(stack, queues.dlq_url))
    return run


def read_all(stack: Stack, url: str) -> Iterator[tuple[str, str]]:
    """Every message of a queue, left in place (visibility 0 would show them again, so ids dedupe)."""
    seen: set[str] = set()
    for _ in range(MAX_ROUNDS):
        messages = stack.sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=30).get(
            "Messages", []
        )
        if not messages:
            return
        for message in messages:
            if message["MessageId"] not in seen:
                seen.add(message["MessageId"])
                yield message["MessageId"], message["Body"]


def reservation_records(stack: Stack) -> dict[str, dict[str, Any]]:
    """Every reservation record in the table, as plain values."""
    records: dict[str, dict[str, Any]] = {}
    request: dict[str, Any] = {"TableName": stack.table_name}
    while True:
        page = stack.dynamodb.scan(**request)
        for item in page["Items"]:
            if item["pk"]["S"].startswith("RESERVATION#"):
                records[item["reservation_id"]["S"]] = {
                    "outcome": item["outcome"]["S"],
                    "event_id": item.get("event_id", {}).get("S"),
                    "seat_class": item.get("seat_class", {}).get("S"),
                    "quantity": int(item["quantity"]["N"]) if "quantity" in item else 0,
                }
        if "LastEvaluatedKey" not in page:
            return records
        request["ExclusiveStartKey"] = page["LastEvaluatedKey"]


# --- the checks -------------------------------------------------------------------------------------


def assert_inventory_adds_up(stack: Stack, run: Run) -> None:
    """No oversell, no lost seat: the inventory, the ledger of records and the published answers agree."""
    records = reservation_records(stack)
    confirmed_published: dict[str, dict[str, Any]] = {}
    for document in run.published:
        if document["outcome"] == "CONFIRMED":
            confirmed_published.setdefault(document["reservation_id"], document)
    for (event_id, seat_class), capacity in EVENTS.items():
        inventory = stack.inventory(event_id, seat_class)
        held = inventory.get("held", 0)
        assert inventory["available"] >= 0
        assert inventory["available"] + held + inventory["sold"] == capacity
        in_ledger = sum(
            r["quantity"]
            for r in records.values()
            if (r["outcome"], r["event_id"], r["seat_class"]) == ("CONFIRMED", event_id, seat_class)
        )
        assert in_ledger == inventory["sold"], (event_id, seat_class)
        if run.dlq_depth == 0:
            announced = sum(
                d["quantity"]
                for d in confirmed_published.values()
                if (d["event_id"], d["seat_class"]) == (event_id, seat_class)
            )
            assert announced == inventory["sold"], (event_id, seat_class)
    for document in run.published:  # nothing announced that the ledger does not hold
        record = records.get(document["reservation_id"])
        if document["outcome"] != "INVALID":
            assert record is not None and record["outcome"] == document["outcome"], document


def assert_every_message_answered_once_and_consistently(run: Run) -> None:
    answered = {d["message_id"] for d in run.published}
    assert set(run.sent) <= answered, "a message was deleted without an answer"
    for reservation_id, documents in run.outcomes_by_reservation().items():
        assert len({d["outcome"] for d in documents}) == 1, (reservation_id, documents)
    assert run.dlq_depth == 0 and run.dead_letters == {}


# --- the tests --------------------------------------------------------------------------------------


@pytest.fixture
def on_sale(stack: Stack) -> Stack:
    for (event_id, seat_class), capacity in EVENTS.items():
        stack.create_event(event_id, capacity, seat_class)
    return stack


@pytest.fixture
def queues(on_sale: Stack) -> Queues:
    return Queues.create(on_sale.sqs)


def report(cell: str, injection: Injection | None, run: Run) -> None:
    """Printed for docs/reliability.md (run with -s to read it)."""
    fired = injection.fired if injection else 0
    print(
        f"\nCELL {cell}: injected={fired} {json.dumps(run.summary())} errors={sorted(set(run.handler_errors))}"
    )


def test_without_faults_the_burst_settles_in_one_pass(on_sale: Stack, queues: Queues) -> None:
    run = drain(on_sale, queues, burst())
    report("no fault", None, run)

    assert_inventory_adds_up(on_sale, run)
    assert_every_message_answered_once_and_consistently(run)
    assert run.redelivered == 0 and run.handler_errors == []
    assert len(run.published) == len(run.sent)
    by_outcome = Counter(d["outcome"] for d in run.published if not d["duplicate"])
    assert by_outcome == {"CONFIRMED": 17, "SOLD_OUT": 9, "UNKNOWN_EVENT": 1, "INVALID": 2}
    assert on_sale.inventory("arena", "GA")["available"] == 0
    assert on_sale.inventory("club", "GA")["available"] == 0


@pytest.mark.parametrize(("site", "fault"), CELLS)
def test_a_transient_fault_at_a_call_site_settles_with_nothing_lost_or_doubled(
    on_sale: Stack, queues: Queues, site: CallSite, fault: Fault
) -> None:
    injection = Injection(fault.times)
    fault.install(site)(on_sale.faults.session, site, injection)

    run = drain(on_sale, queues, burst())
    report(f"{site.operation} / {fault.name}", injection, run)

    assert injection.fired == fault.times, "the call site was not exercised as often as planned"
    assert_inventory_adds_up(on_sale, run)
    assert_every_message_answered_once_and_consistently(run)
    # An unclassified exception would fail whole batches; every transient fault is classified,
    # and only the messages it hit came back.
    assert run.handler_errors == []
    assert run.handed_back > 0 and 0 < run.redelivered < len(run.sent)
    # Answers published more than once: only when SNS took a batch and the reply was lost.
    delivered_twice = (site.operation, fault.name) == ("sns.PublishBatch", "reply lost after success")
    assert (len(run.published) > len(run.sent)) == delivered_twice
    # When the answer was recorded but not published before the message came back (the
    # transaction's reply was lost, or the publish failed), its first appearance on the topic is
    # already `duplicate: true`.
    recorded_first = (site.operation == "sns.PublishBatch") != delivered_twice or (
        site.transactional and fault.name == "reply lost after success"
    )
    first_copy_flagged = any(docs[0]["duplicate"] for docs in run.outcomes_by_reservation().values())
    assert first_copy_flagged == recorded_first


@pytest.mark.parametrize("site", CALL_SITES, ids=[site.operation for site in CALL_SITES])
def test_a_permanent_fault_ends_in_the_dead_letter_queue_with_nothing_lost(
    on_sale: Stack, queues: Queues, site: CallSite
) -> None:
    injection = Injection(None)
    PERMANENT.install(site)(on_sale.faults.session, site, injection)

    run = drain(on_sale, queues, burst())
    report(f"{site.operation} / {PERMANENT.name}", injection, run)

    assert injection.fired > 0
    assert_inventory_adds_up(on_sale, run)
    # The DeadLetterQueueAlarm watches this depth: it is raised.
    assert run.dlq_depth > 0
    assert run.dlq_depth == len(run.dead_letters)
    assert max(run.receives[m] for m in run.dead_letters) == MAX_RECEIVE_COUNT
    # Nothing vanished: each message was answered or is waiting in the DLQ for a redrive.
    answered = {d["message_id"] for d in run.published}
    assert set(run.sent) == answered | set(run.dead_letters)
    for reservation_id, documents in run.outcomes_by_reservation().items():
        assert len({d["outcome"] for d in documents}) == 1, reservation_id
    # Dead letters whose answer is already recorded (seats taken or refused, not yet published):
    # a redrive republishes those answers and takes nothing again.
    records = reservation_records(on_sale)
    dead = {reservation_id_of(body) for body in run.dead_letters.values()} - {None}
    print(
        f"CELL {site.operation} / {PERMANENT.name}: {len(dead & set(records))} of {len(dead)} dead-lettered reservations recorded"
    )
    if site.operation == "dynamodb.TransactWriteItems":
        assert records == {} and run.published == []
    if site.operation == "sns.PublishBatch":
        assert run.published == []
        assert set(records) == dead == {reservation_id_of(body) for body in run.sent.values()} - {None}


def reservation_id_of(body: str) -> str | None:
    """The reservation id of a valid body, None for an invalid one."""
    parsed = parse_reservation("m", body, default_seat_class="GA", max_quantity=10)
    return parsed.reservation_id if isinstance(parsed, ReservationRequest) else None


def sqs_accepts(text: str) -> bool:
    allowed = all(
        ch in "\t\n\r" or "\x20" <= ch <= "\ud7ff" or "\ue000" <= ch <= "\ufffd" or ch >= "\U00010000"
        for ch in text
    )
    return allowed and len(text.encode()) <= SQS_MAX_BODY_BYTES


def test_hostile_bodies_on_the_queue_are_answered_invalid_and_never_dead_lettered(
    on_sale: Stack, queues: Queues
) -> None:
    on_sale.create_event("stadium", 1000)
    hostile = [case.body for case in CORPUS if sqs_accepts(case.body)]
    bodies = [text for n, bad in enumerate(hostile) for text in (bad, reservation(f"ok-{n}", "stadium", 1))]

    run = drain(on_sale, queues, bodies)
    report("hostile corpus", None, run)

    assert len(hostile) >= 30
    assert_every_message_answered_once_and_consistently(run)
    assert run.redelivered == 0 and run.handler_errors == []
    assert Counter(d["outcome"] for d in run.published) == {
        "INVALID": len(hostile),
        "CONFIRMED": len(hostile),
    }
    assert set(reservation_records(on_sale)) == {f"ok-{n}" for n in range(len(hostile))}
    assert on_sale.inventory("stadium")["sold"] == len(hostile)


def test_a_body_full_of_unknown_fields_is_answered_not_dead_lettered(on_sale: Stack, queues: Queues) -> None:
    fields: dict[str, Any] = json.loads(reservation("r-wide", "arena", 1))
    for n in range(7000):  # 2-byte characters: about 250 KB of UTF-8
        fields["\u00e9" * 12 + f"{n:x}"] = 0
    body = json.dumps(fields, ensure_ascii=False)
    assert sqs_accepts(body) and len(body.encode()) > 240_000

    run = drain(on_sale, queues, [body])
    report("256 KB of unknown fields", None, run)

    assert run.dlq_depth == 0, f"dead-lettered after {max(run.receives.values())} receives"
    assert [d["outcome"] for d in run.published] == ["INVALID"]
