"""Fault injection at every AWS call site of both functions, with the queue redelivering as SQS does
and the schedule running the hold sweeper again.

Each cell of call site x fault plays the same on-sale on a moto SQS queue that redrives to a
dead-letter queue after 3 receives:
1. the burst: reservations (oversold, sold out, unknown event, invalid, resent) and, for a third
   event, reservations and holds that exactly fill its two seat classes;
2. the changes: confirmations and cancellations of those holds and sales (and of a sold-out hold,
   an unknown id, with the wrong customer, and one sent twice);
3. time passes beyond the holds still live: a confirm of one that ran out (answered EXPIRED before
   the sweeper released it), then the sweeper runs every "minute" until it has nothing left to do.
Between phases the test plays the Lambda poller: receive up to 10, invoke the real handler, delete
what it did not hand back (nothing when it raised), repeat until the queue is empty. Transient
faults hit the first few calls of one site and stop; the permanent one never stops. Afterwards the
inventory, the reservation records, the published outcomes and the DLQ are checked against the
guarantees (docs/explanation/guarantees.md). docs/explanation/reliability.md tabulates what each cell saw.

Faults are botocore hooks on the session of the function the site belongs to (each function has
its own). A `before-call` hook that returns a response (or raises) replaces the request, so
botocore's own retries are bypassed: the service sees the error as if those retries were
exhausted. An `after-call` hook runs once the response has arrived, so raising there is "the
request succeeded, the reply was lost".
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import boto3
import pytest
from botocore.exceptions import ConnectTimeoutError, ReadTimeoutError

from seat_inventory.handlers import reserve_seats as handler_module
from seat_inventory.handlers import sweep_holds as sweeper_module
from seat_inventory.models import ReservationRequest
from seat_inventory.parsing import parse_reservation
from tests.integration.conftest import (
    REGION,
    FakeHttpResponse,
    LambdaContext,
    MovableClock,
    Stack,
    adapters_factory,
    load_event,
    sqs_event,
)
from tests.unit.test_hostile_input import CORPUS

MAX_RECEIVE_COUNT = 3
TRANSIENT_FAULTS = 2  # < MAX_RECEIVE_COUNT: one message can meet every one of them and still get through
# A burst of conflicts in a row: the planner waits them out in place (until the invocation's
# deadline), so no message goes back to the queue for them.
CONFLICT_FAULTS = 7
MAX_ROUNDS = 60
MAX_SWEEPS = 8  # scheduled runs before the test gives up waiting for the sweeper to settle
ALARM_RUNS = 5  # SweepHoldsErrorsAlarm: the sweeper failed five minutes in a row
HOLD_SECONDS = 600
SQS_MAX_BODY_BYTES = 262_144  # the classic SQS limit, which SNS shares (moto allows 1 MiB)


# --- the call sites and the faults ---------------------------------------------------------------


def is_status_change(params: dict[str, Any]) -> bool:
    """A TransactWriteItems of confirm/cancel/expire: it updates reservation records (a reserve puts them)."""
    actions = json.loads(params["body"])["TransactItems"]
    return any(
        "Update" in action and action["Update"]["Key"]["pk"]["S"].startswith("RESERVATION#")
        for action in actions
    )


@dataclass(frozen=True)
class CallSite:
    """One AWS call a function makes, and how that service spells each kind of error."""

    function: str  # "handler" (reservations queue) or "sweeper" (scheduled)
    operation: str  # "<service>.<Operation>", as in botocore event names
    throttling: str
    internal_error: str
    access_denied: str
    transactional: bool = False
    what: str = ""  # which of the function's calls of this operation, when it makes several kinds
    matches: Callable[[dict[str, Any]], bool] | None = None  # sees the serialized request

    @property
    def name(self) -> str:
        return f"{self.function} {self.operation}" + (f" ({self.what})" if self.what else "")


DYNAMODB_ERRORS = ("ThrottlingException", "InternalServerError", "AccessDeniedException")
SNS_ERRORS = ("Throttled", "InternalError", "AuthorizationError")
CALL_SITES = [
    # the reservations handler
    CallSite(
        "handler",
        "dynamodb.TransactWriteItems",
        *DYNAMODB_ERRORS,
        transactional=True,
        what="reserve/hold",
        matches=lambda params: not is_status_change(params),
    ),
    CallSite("handler", "dynamodb.GetItem", *DYNAMODB_ERRORS),
    CallSite("handler", "dynamodb.BatchGetItem", *DYNAMODB_ERRORS),
    CallSite(
        "handler",
        "dynamodb.TransactWriteItems",
        *DYNAMODB_ERRORS,
        transactional=True,
        what="confirm/cancel",
        matches=is_status_change,
    ),
    CallSite("handler", "sns.PublishBatch", *SNS_ERRORS),
    # the hold sweeper
    CallSite("sweeper", "dynamodb.Query", *DYNAMODB_ERRORS),
    CallSite("sweeper", "dynamodb.GetItem", *DYNAMODB_ERRORS),
    CallSite("sweeper", "dynamodb.TransactWriteItems", *DYNAMODB_ERRORS, transactional=True),
    CallSite("sweeper", "sns.PublishBatch", *SNS_ERRORS),
    CallSite("sweeper", "dynamodb.UpdateItem", *DYNAMODB_ERRORS),
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


def before_call(session: Any, site: CallSite, hook: Callable[[dict[str, Any]], Any]) -> None:
    """Registers `hook(params)` before every call of the site that `site.matches`."""

    def filtered(params: dict[str, Any], context: dict[str, Any], **_: Any) -> Any:
        context["fault_site"] = site.matches is None or site.matches(params)
        return hook(params) if context["fault_site"] else None

    session.events.register(f"before-call.{site.operation}", filtered)


def inject_error(code: str, status: int = 400) -> Callable[[Any, CallSite, Injection], None]:
    def install(session: Any, site: CallSite, injection: Injection) -> None:
        before_call(session, site, lambda _: error_response(code, status) if injection.take() else None)

    return install


def inject_cancelled_by_conflict(session: Any, site: CallSite, injection: Injection) -> None:
    """TransactionCanceledException whose reasons name a conflict on the first item (others "None")."""

    def hook(params: dict[str, Any]) -> Any:
        if not injection.take():
            return None
        actions = len(json.loads(params["body"])["TransactItems"])
        reasons = [{"Code": "TransactionConflict", "Message": "Transaction is ongoing for the item"}]
        reasons += [{"Code": "None"}] * (actions - 1)
        return error_response("TransactionCanceledException", CancellationReasons=reasons)

    before_call(session, site, hook)


def inject_connect_timeout(session: Any, site: CallSite, injection: Injection) -> None:
    def hook(_: dict[str, Any]) -> None:
        if injection.take():
            raise ConnectTimeoutError(endpoint_url=endpoint(site))

    before_call(session, site, hook)


def inject_reply_lost(session: Any, site: CallSite, injection: Injection) -> None:
    """The call reached the service and succeeded (a transaction committed, a message went out)."""
    before_call(session, site, lambda _: None)  # marks the calls of the site

    def hook(http_response: Any, context: dict[str, Any], **_: Any) -> None:
        if context.get("fault_site") and http_response.status_code < 300 and injection.take():
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
    pytest.param(site, fault, id=f"{site.name}-{fault.name}")
    for site in CALL_SITES
    for fault in FAULTS
    if site.transactional or not fault.transactional_only
]


# --- the on-sale -------------------------------------------------------------------------------------

EVENTS = {  # (event, seat class) -> capacity
    ("arena", "GA"): 20,
    ("arena", "VIP"): 4,
    ("club", "GA"): 6,
    ("closed", "GA"): 0,
    ("theatre", "GA"): 10,
    ("theatre", "VIP"): 4,
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


def hold(reservation_id: str, event_id: str, quantity: int, seat_class: str = "GA") -> str:
    document = json.loads(reservation(reservation_id, event_id, quantity, seat_class))
    return json.dumps({"type": "hold", **document, "hold_seconds": HOLD_SECONDS})


def change(kind: str, reservation_id: str, customer_id: str | None = None) -> str:
    document = {"type": kind, "reservation_id": reservation_id}
    return json.dumps(document if customer_id is None else {**document, "customer_id": customer_id})


def theatre() -> list[str]:
    """The theatre's reservations and holds, which fill its two classes exactly (so they succeed in
    any order), and a hold for `closed` (sold out)."""
    bodies = [reservation("t-0", "theatre", 2)] + [hold(f"h-{n}", "theatre", 2) for n in range(4)]
    bodies += [hold("hv-0", "theatre", 2, "VIP"), hold("hv-1", "theatre", 1, "VIP")]
    return [*bodies, reservation("tv-0", "theatre", 1, "VIP"), hold("h-4", "closed", 3)]


def burst() -> list[str]:
    """32 messages, 27 reservation ids: arena GA is oversubscribed (28 seats asked, 20 there), VIP
    and club sell out, `closed` has no seats, `ghost` does not exist, two bodies are invalid, and
    three reservations are sent twice (once into the same receive, twice into later ones). Last,
    `theatre()`'s 9 (41 messages in all)."""
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
    return bodies + theatre()


# What each lifecycle message is answered, whatever the faults (its distinct outcome), and where each
# reservation of the theatre ends. h-3 and hv-1 run out; confirm h-3 arrives before the sweeper.
CHANGES = [
    change("confirm", "h-0"),
    change("confirm", "h-1"),
    change("cancel", "h-2"),  # a live hold given back
    change("cancel", "t-0"),  # a sale given back
    change("confirm", "hv-0"),
    change("cancel", "tv-0"),
    change("confirm", "h-4"),  # a sold-out hold: nothing to confirm
    change("confirm", "u-0"),  # never sent
    change("confirm", "h-0"),  # the producer's resend
    change("cancel", "h-1", "c-someone-else"),  # the wrong customer: refused, nothing changes
]
LATE = [change("confirm", "h-3")]  # after its hold ran out, before the sweeper released it
EXPECTED_ANSWERS = {hold(f"h-{n}", "theatre", 2): "HELD" for n in range(4)} | {
    reservation("t-0", "theatre", 2): "CONFIRMED",
    hold("hv-0", "theatre", 2, "VIP"): "HELD",
    hold("hv-1", "theatre", 1, "VIP"): "HELD",
    reservation("tv-0", "theatre", 1, "VIP"): "CONFIRMED",
    hold("h-4", "closed", 3): "SOLD_OUT",
    CHANGES[0]: "CONFIRMED",
    CHANGES[1]: "CONFIRMED",
    CHANGES[2]: "CANCELLED",
    CHANGES[3]: "CANCELLED",
    CHANGES[4]: "CONFIRMED",
    CHANGES[5]: "CANCELLED",
    CHANGES[6]: "SOLD_OUT",
    CHANGES[7]: "UNKNOWN_RESERVATION",
    CHANGES[9]: "INVALID",
    LATE[0]: "EXPIRED",
}
FINAL_STATUS = {
    "h-0": "CONFIRMED",
    "h-1": "CONFIRMED",
    "h-2": "CANCELLED",
    "h-3": "EXPIRED",
    "t-0": "CANCELLED",
    "hv-0": "CONFIRMED",
    "hv-1": "EXPIRED",
    "tv-0": "CANCELLED",
    "h-4": "SOLD_OUT",
}
THEATRE_AFTER = {("theatre", "GA"): (6, 0, 4), ("theatre", "VIP"): (2, 0, 2)}  # available, held, sold


# --- SQS, played by moto, the poller and the schedule, played by the test ---------------------------


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
    """What the poller and the schedule saw while the queue drained and the sweeper settled."""

    sent: dict[str, str] = field(default_factory=dict)  # SQS message id -> body
    invocations: int = 0
    handler_errors: list[str] = field(default_factory=list)
    handed_back: int = 0  # sum of batchItemFailures
    receives: Counter[str] = field(default_factory=Counter)
    published: list[dict[str, Any]] = field(default_factory=list)  # answers and announcements
    dead_letters: dict[str, str] = field(default_factory=dict)  # message id -> body
    dlq_depth: int = 0
    sweeps: int = 0
    sweeper_errors: list[str] = field(default_factory=list)
    sweep_results: list[dict[str, Any]] = field(default_factory=list)

    @property
    def redelivered(self) -> int:
        return sum(1 for count in self.receives.values() if count > 1)

    @property
    def answers(self) -> list[dict[str, Any]]:
        """The answers to messages (the sweeper's announcements have no message id)."""
        return [d for d in self.published if d["message_id"] is not None]

    @property
    def expiries(self) -> Counter[str]:
        """How often the sweeper announced each released hold."""
        return Counter(d["reservation_id"] for d in self.published if d["type"] == "expire")

    def answers_by_body(self) -> dict[str, list[dict[str, Any]]]:
        """The answers to each distinct body (a producer's resend is the same body), in publication order."""
        grouped: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for document in self.answers:
            grouped[self.sent[document["message_id"]]].append(document)
        return grouped

    def summary(self) -> dict[str, Any]:
        return {
            "invocations": self.invocations,
            "handler_errors": len(self.handler_errors),
            "handed_back": self.handed_back,
            "redelivered": self.redelivered,
            "max_receives": max(self.receives.values(), default=0),
            "answers": len(self.answers),
            "duplicate_flagged": sum(1 for d in self.answers if d["duplicate"]),
            "dlq": self.dlq_depth,
            "sweeps": self.sweeps,
            "sweeper_errors": len(self.sweeper_errors),
            "failed_groups": sum(len(r["failed_groups"]) for r in self.sweep_results),
            "unpublished": sum(r["unpublished"] for r in self.sweep_results),
            "expiries_announced": sum(self.expiries.values()),
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


def drain(
    stack: Stack, queues: Queues, bodies: list[str], run: Run | None = None, *, last: bool = True
) -> Run:
    """Sends the bodies, then polls as the SQS event source mapping does until the queue is empty.

    After the `last` drain of a run, reads the DLQ (reading hides its messages for a while).
    """
    run = run if run is not None else Run()
    run.sent.update(send(stack, queues, bodies))
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
    if not last:
        return run
    run.dlq_depth = int(
        stack.sqs.get_queue_attributes(
            QueueUrl=queues.dlq_url, AttributeNames=["ApproximateNumberOfMessages"]
        )["Attributes"]["ApproximateNumberOfMessages"]
    )
    run.dead_letters = dict(read_all(stack, queues.dlq_url))
    return run


def sweep_once(stack: Stack, run: Run) -> dict[str, Any] | None:
    """One scheduled run of the sweeper; None when it raised (a failed invocation, the alarm's metric)."""
    run.sweeps += 1
    try:
        result = sweeper_module.lambda_handler(load_event("sweep_schedule.json"), LambdaContext())
    except Exception as exc:  # noqa: BLE001 - Lambda counts any exception as a failed invocation
        run.sweeper_errors.append(type(exc).__name__)
        result = None
    else:
        run.sweep_results.append(result)
    run.published += stack.outcomes()
    return result


def sweep_until_settled(stack: Stack, run: Run) -> None:
    """Runs the sweeper once a "minute" until a run finds nothing left to do."""
    for _ in range(MAX_SWEEPS):
        result = sweep_once(stack, run)
        if result is not None and not (
            result["released"] or result["republished"] or result["unpublished"] or result["failed_groups"]
        ):
            return
    pytest.fail(f"the sweeper did not settle in {MAX_SWEEPS} runs: {run.sweep_results} {run.sweeper_errors}")


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
                    "status": item["status"]["S"],
                    "event_id": item.get("event_id", {}).get("S"),
                    "seat_class": item.get("seat_class", {}).get("S"),
                    "quantity": int(item["quantity"]["N"]) if "quantity" in item else 0,
                    "in_outbox": item.get("gsi1pk", {}).get("S", "").startswith("EXPIRED#"),
                    "hold_expires_at": int(item["hold_expires_at"]["N"])
                    if "hold_expires_at" in item
                    else None,
                }
        if "LastEvaluatedKey" not in page:
            return records
        request["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def seats(stack: Stack, event_id: str, seat_class: str) -> tuple[int, int, int, int]:
    """capacity, available, held, sold"""
    item = stack.dynamodb.get_item(
        TableName=stack.table_name,
        Key={"pk": {"S": f"EVENT#{event_id}"}, "sk": {"S": f"CLASS#{seat_class}"}},
        ConsistentRead=True,
    )["Item"]
    capacity, available, held, sold = (
        int(item[name]["N"]) for name in ("capacity", "available", "held", "sold")
    )
    return capacity, available, held, sold


# --- the checks -------------------------------------------------------------------------------------


def assert_inventory_adds_up(stack: Stack, run: Run) -> dict[str, dict[str, Any]]:
    """No oversell, no lost seat: the inventory and the records (the ledger) agree; returns the records."""
    records = reservation_records(stack)
    for (event_id, seat_class), capacity in EVENTS.items():
        total, available, held, sold = seats(stack, event_id, seat_class)
        assert total == capacity and available >= 0
        assert available + held + sold == capacity, (event_id, seat_class)
        mine = [r for r in records.values() if (r["event_id"], r["seat_class"]) == (event_id, seat_class)]
        assert sold == sum(r["quantity"] for r in mine if r["status"] == "CONFIRMED"), (event_id, seat_class)
        assert held == sum(r["quantity"] for r in mine if r["status"] == "HELD"), (event_id, seat_class)
    for document in run.published:  # nothing said that the records contradict
        record = records.get(document["reservation_id"])
        if document["outcome"] in ("INVALID", "UNKNOWN_RESERVATION"):  # not recorded
            assert document["type"] != "expire", document
        elif document["type"] in ("reserve", "hold"):  # the recorded answer, republished verbatim
            assert record is not None and record["outcome"] == document["outcome"], document
        elif document["type"] == "expire":
            assert record is not None and record["status"] == "EXPIRED", document
        else:  # a confirm or cancel: where the reservation stood, before or after the change
            assert record is not None, document
            # (a hold that ran out is answered EXPIRED before the sweeper has released it)
            ran_out = record["status"] == "HELD" and record["hold_expires_at"] is not None
            stood = {record["outcome"], record["status"]} | ({"EXPIRED"} if ran_out else set())
            assert document["outcome"] in stood, document
    return records


def assert_everything_settled_as_without_faults(
    stack: Stack, run: Run, records: dict[str, dict[str, Any]]
) -> None:
    """Every message answered, all answers to one body agree, the lifecycle ends as planned, every
    status was announced, and nothing is left in the DLQ or the sweeper's outbox."""
    by_body = run.answers_by_body()
    assert set(run.sent.values()) <= set(by_body), "a message was deleted without an answer"
    for body, documents in by_body.items():
        assert len({d["outcome"] for d in documents}) == 1, (body, documents)
        if body in EXPECTED_ANSWERS:
            assert documents[0]["outcome"] == EXPECTED_ANSWERS[body], (body, documents)
    for reservation_id, documents in outcomes_by_reservation(run).items():
        requested = {
            d["outcome"] for d in documents if d["type"] in ("reserve", "hold") and d["outcome"] != "INVALID"
        }
        assert len(requested) <= 1, (reservation_id, documents)
    assert {rid: records[rid]["status"] for rid in FINAL_STATUS} == FINAL_STATUS
    for key, counts in THEATRE_AFTER.items():
        assert seats(stack, *key)[1:] == counts, key
    # every reservation's current state reached the topic at least once
    said = defaultdict(set)
    for document in run.published:
        said[document["reservation_id"]].add(document["outcome"])
    for reservation_id, record in records.items():
        assert record["status"] in said[reservation_id], (reservation_id, record)
    assert not any(r["in_outbox"] for r in records.values()), "an expiry left unannounced in the outbox"
    assert run.dlq_depth == 0 and run.dead_letters == {}


def outcomes_by_reservation(run: Run) -> dict[str, list[dict[str, Any]]]:
    grouped: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for document in run.published:
        grouped[document["reservation_id"]].append(document)
    return grouped


# --- the tests --------------------------------------------------------------------------------------


@dataclass
class OnSale:
    stack: Stack
    queues: Queues
    clock: MovableClock
    sweeper_session: boto3.session.Session

    def play(self, *, whole_burst: bool = True) -> Run:
        """The phases before the sweeper: the burst, the changes, then time passes and the late confirm.

        Without `whole_burst`, the first phase is only the theatre's part (what the sweeper's cells need).
        """
        run = drain(self.stack, self.queues, burst() if whole_burst else theatre(), last=False)
        run = drain(self.stack, self.queues, CHANGES, run, last=False)
        self.clock.advance(HOLD_SECONDS + 1)
        return drain(self.stack, self.queues, LATE, run)

    def session(self, site: CallSite) -> Any:
        return self.stack.faults.session if site.function == "handler" else self.sweeper_session


@pytest.fixture
def on_sale(stack: Stack, queues: Queues, monkeypatch: pytest.MonkeyPatch) -> Iterator[OnSale]:
    """Both functions, each on its own session (so a fault hits one), on one movable clock."""
    for (event_id, seat_class), capacity in EVENTS.items():
        stack.create_event(event_id, capacity, seat_class)
    clock = MovableClock(1_900_000_000)
    sweeper_session = boto3.session.Session(region_name=REGION)
    monkeypatch.setattr(handler_module, "build_adapters", adapters_factory(stack.faults.session, clock))
    monkeypatch.setattr(sweeper_module, "build_adapters", adapters_factory(sweeper_session, clock))
    handler_module.reset_container()
    sweeper_module.reset_container()
    yield OnSale(stack, queues, clock, sweeper_session)
    sweeper_module.reset_container()


@pytest.fixture
def queues(stack: Stack) -> Queues:
    return Queues.create(stack.sqs)


def report(cell: str, injection: Injection | None, run: Run) -> None:
    """Printed for docs/explanation/reliability.md (run with -s to read it)."""
    fired = injection.fired if injection else 0
    errors = sorted(set(run.handler_errors + run.sweeper_errors))
    print(f"\nCELL {cell}: injected={fired} {json.dumps(run.summary())} errors={errors}")


def test_without_faults_the_on_sale_settles_in_one_pass(on_sale: OnSale) -> None:
    run = on_sale.play()
    sweep_until_settled(on_sale.stack, run)
    report("no fault", None, run)

    records = assert_inventory_adds_up(on_sale.stack, run)
    assert_everything_settled_as_without_faults(on_sale.stack, run, records)
    assert run.redelivered == 0 and run.handler_errors == [] and run.sweeper_errors == []
    assert len(run.answers) == len(run.sent)
    assert run.sweeps == 2 and run.expiries == {"h-3": 1, "hv-1": 1}
    by_outcome = Counter((d["type"], d["outcome"]) for d in run.answers if not d["duplicate"])
    assert by_outcome == {
        ("reserve", "CONFIRMED"): 19,
        ("reserve", "SOLD_OUT"): 9,
        ("reserve", "UNKNOWN_EVENT"): 1,
        (None, "INVALID"): 1,
        ("reserve", "INVALID"): 1,
        ("hold", "HELD"): 6,
        ("hold", "SOLD_OUT"): 1,
        ("confirm", "CONFIRMED"): 3,
        ("cancel", "CANCELLED"): 3,
        ("confirm", "SOLD_OUT"): 1,
        ("confirm", "UNKNOWN_RESERVATION"): 1,
        ("cancel", "INVALID"): 1,
        ("confirm", "EXPIRED"): 1,
    }
    assert seats(on_sale.stack, "arena", "GA")[1] == 0 and seats(on_sale.stack, "club", "GA")[1] == 0


@pytest.mark.parametrize(("site", "fault"), CELLS)
def test_a_transient_fault_at_a_call_site_settles_with_nothing_lost_or_doubled(
    on_sale: OnSale, site: CallSite, fault: Fault
) -> None:
    injection = Injection(fault.times)
    fault.install(site)(on_sale.session(site), site, injection)

    run = on_sale.play(whole_burst=site.function == "handler")
    sweep_until_settled(on_sale.stack, run)
    report(f"{site.name} / {fault.name}", injection, run)

    assert injection.fired == fault.times, "the call site was not exercised as often as planned"
    records = assert_inventory_adds_up(on_sale.stack, run)
    assert_everything_settled_as_without_faults(on_sale.stack, run, records)
    # An unclassified exception would fail whole batches; every transient fault is classified,
    # and only the messages it hit came back.
    assert run.handler_errors == []
    conflict = fault.name in ("transaction conflict", "cancelled by conflict")
    # The handler's DynamoDB calls wait out throttling in place too (`Throttled`, like a conflict),
    # and so does its publication of the answers (SNS's `Throttled`, the region's publish rate).
    throttled_in_place = fault.name == "throttling" and site.function == "handler"
    if conflict or throttled_in_place:
        # A conflict (or throttling) is not a failure: the burst is waited out in place, within the
        # invocation (or the sweeper's run); nothing goes back to the queue, so nothing moves
        # towards the DLQ.
        assert run.handed_back == 0 and run.redelivered == 0
        assert run.sweeps == 2 and run.sweeper_errors == []
    elif site.function == "handler":
        assert run.handed_back > 0 and 0 < run.redelivered < len(run.sent)
        assert run.sweeps == 2 and run.sweeper_errors == []
    else:
        assert run.redelivered == 0
        # A release (its read of the inventory, its transaction) is retried within the run, so the
        # first run releases and announces everything (after a lost reply, from the outbox where
        # its own release put it). The other sites leave the work for the next run: the run
        # failed (the index query, taking expiries out of the outbox: an uncaught
        # RetryableError), or left the expiries SNS refused in the outbox.
        retried_in_run = site.operation in ("dynamodb.GetItem", "dynamodb.TransactWriteItems")
        assert (run.sweeps == 2) == retried_in_run, run.sweeps
        assert run.summary()["failed_groups"] == 0
        sweeper_raises = site.operation in ("dynamodb.Query", "dynamodb.UpdateItem")
        assert (run.sweeper_errors != []) == sweeper_raises
    # Answers published more than once: only when SNS took a batch and the reply was lost.
    delivered_twice = (site.name, fault.name) == ("handler sns.PublishBatch", "reply lost after success")
    assert (len(run.answers) > len(run.sent)) == delivered_twice
    # When the answer was recorded (or the change committed) but not published before the message
    # came back (the transaction's reply was lost, or the publish failed), its first appearance on
    # the topic is already `duplicate: true`.
    recorded_first = (
        site.name == "handler sns.PublishBatch" and not throttled_in_place
    ) != delivered_twice or (
        site.function == "handler" and site.transactional and fault.name == "reply lost after success"
    )
    first_copy_flagged = any(docs[0]["duplicate"] for body, docs in run.answers_by_body().items())
    assert first_copy_flagged == recorded_first
    # An expiry is announced once, or again when the sweeper could not tell it went out.
    announced_again = site.name in ("sweeper sns.PublishBatch", "sweeper dynamodb.UpdateItem") and (
        fault.name == "reply lost after success" or site.operation == "dynamodb.UpdateItem"
    )
    assert set(run.expiries) == {"h-3", "hv-1"}
    assert (max(run.expiries.values()) > 1) == announced_again, run.expiries


# The sweeper's publish is pinned by test_a_permanent_publish_fault_of_the_sweeper_raises_its_alarm.
PERMANENT_CELLS = [site for site in CALL_SITES if site.name != "sweeper sns.PublishBatch"]


@pytest.mark.parametrize("site", PERMANENT_CELLS, ids=[site.name for site in PERMANENT_CELLS])
def test_a_permanent_fault_ends_in_the_dead_letter_queue_or_the_alarm_with_nothing_lost(
    on_sale: OnSale, site: CallSite
) -> None:
    injection = Injection(None)
    PERMANENT.install(site)(on_sale.session(site), site, injection)

    run = on_sale.play(whole_burst=site.function == "handler")
    for _ in range(ALARM_RUNS):
        sweep_once(on_sale.stack, run)
    report(f"{site.name} / {PERMANENT.name}", injection, run)

    assert injection.fired > 0
    records = assert_inventory_adds_up(on_sale.stack, run)
    # Nothing vanished: each message was answered or is waiting in the DLQ for a redrive.
    answered = {d["message_id"] for d in run.answers}
    assert set(run.sent) == answered | set(run.dead_letters)
    for body, documents in run.answers_by_body().items():
        assert len({d["outcome"] for d in documents}) == 1, body
    dead = {reservation_id_of(body) for body in run.dead_letters.values()} - {None}
    print(
        f"CELL {site.name} / {PERMANENT.name}: {len(dead & set(records))} of {len(dead)} dead-lettered ids recorded"
    )
    if site.function == "handler":
        # The DeadLetterQueueAlarm watches this depth: it is raised.
        assert run.dlq_depth > 0
        assert run.dlq_depth == len(run.dead_letters)
        assert max(run.receives[m] for m in run.dead_letters) == MAX_RECEIVE_COUNT
        assert run.sweeper_errors == []
    else:
        # SweepHoldsErrorsAlarm: every scheduled run failed; the holds that ran out keep their
        # seats (counted as held, none lost) until the fault is gone.
        assert run.sweeper_errors == ["ClientError"] * ALARM_RUNS
        assert run.dlq_depth == 0
        if site.operation != "dynamodb.UpdateItem":
            assert {records[rid]["status"] for rid in ("h-3", "hv-1")} == {"HELD"}
            assert run.expiries == {}
        else:  # released and announced, but never taken out of the outbox: announced every run
            assert run.expiries == {"h-3": ALARM_RUNS, "hv-1": ALARM_RUNS}
    if site.name == "handler dynamodb.TransactWriteItems (reserve/hold)":
        # No seat is taken; only rejections decided from a read (each record its own PutItem,
        # no transaction) are recorded, and they are what is answered besides the invalid.
        rejections = {"SOLD_OUT", "UNKNOWN_EVENT", "SALE_CLOSED", "LIMIT_EXCEEDED"}
        assert {r["outcome"] for r in records.values()} <= rejections
        assert all(d["outcome"] in ("UNKNOWN_RESERVATION", "INVALID", *rejections) for d in run.published)
        assert {d["reservation_id"] for d in run.published if d["outcome"] in rejections} == set(records)
    if site.name == "handler sns.PublishBatch":
        assert run.answers == []
        requested = {reservation_id_of(body) for body in run.sent.values()} - {None}
        assert set(records) == requested <= dead | {"h-3", "hv-1"} | set(FINAL_STATUS)


def emitted_metrics(text: str) -> list[dict[str, Any]]:
    """The CloudWatch EMF documents Powertools printed (one per invocation), as CloudWatch reads them."""
    return [json.loads(line) for line in text.splitlines() if line.startswith("{") and '"_aws"' in line]


def alarm_sees(alarm: dict[str, Any], document: dict[str, Any]) -> bool:
    """Whether an EMF document feeds `alarm`'s metric (namespace, name and the exact dimension set)
    with a value at or above its threshold."""
    dimensions = {d["Name"]: d["Value"] for d in alarm["Dimensions"]}
    for directive in document["_aws"]["CloudWatchMetrics"]:
        names = {m["Name"] for m in directive["Metrics"]}
        if directive["Namespace"] != alarm["Namespace"] or alarm["MetricName"] not in names:
            continue
        if any(set(dimension_set) == set(dimensions) for dimension_set in directive["Dimensions"]) and all(
            document.get(name) == value for name, value in dimensions.items()
        ):
            value = document[alarm["MetricName"]]
            return min(value if isinstance(value, list) else [value]) >= alarm["Threshold"]
    return False


def test_a_permanent_publish_fault_of_the_sweeper_raises_its_alarm(
    on_sale: OnSale, template: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    [site] = [s for s in CALL_SITES if s.name == "sweeper sns.PublishBatch"]
    injection = Injection(None)
    PERMANENT.install(site)(on_sale.session(site), site, injection)
    alarm = template.properties("ExpiriesUnpublishedAlarm")
    assert alarm["EvaluationPeriods"] == ALARM_RUNS and alarm["Period"] == 60  # one run a minute

    run = on_sale.play(whole_burst=site.function == "handler")
    capsys.readouterr()
    sweeps = []
    for _ in range(ALARM_RUNS):
        sweep_once(on_sale.stack, run)
        sweeps.append(emitted_metrics(capsys.readouterr().out))
    report(f"{site.name} / {PERMANENT.name}", injection, run)

    records = assert_inventory_adds_up(on_sale.stack, run)
    # The holds were released, their expiries wait in the outbox, none was announced ...
    assert {records[rid]["status"] for rid in ("h-3", "hv-1")} == {"EXPIRED"}
    assert records["h-3"]["in_outbox"] and records["hv-1"]["in_outbox"] and run.expiries == {}
    assert [r["unpublished"] for r in run.sweep_results] == [2] * ALARM_RUNS
    assert run.sweeper_errors == []
    # ... every run feeds ExpiriesUnpublishedAlarm's metric above its threshold, so after
    # EvaluationPeriods consecutive minutes an operator hears of it.
    assert [[alarm_sees(alarm, d) for d in documents] for documents in sweeps] == [[True]] * ALARM_RUNS


SCHEDULED_RUNS = 10
RETRYABLE_FOREVER = [
    Fault("throttling, never heals", lambda site: inject_error(site.throttling), times=None),
    Fault(
        "transaction conflict, never heals",
        lambda site: inject_error("TransactionConflictException"),
        times=None,
    ),
]


@pytest.mark.parametrize("fault", RETRYABLE_FOREVER, ids=[f.name for f in RETRYABLE_FOREVER])
def test_a_release_that_never_gets_through_fails_every_run_and_raises_the_overdue_alarm(
    on_sale: OnSale, template: Any, capsys: pytest.CaptureFixture[str], fault: Fault
) -> None:
    # Given a retryable fault of the sweeper's release transaction that never heals
    [site] = [s for s in CALL_SITES if s.name == "sweeper dynamodb.TransactWriteItems"]
    injection = Injection(None)
    fault.install(site)(on_sale.session(site), site, injection)
    alarm = template.properties("HoldsOverdueAlarm")
    assert (alarm["EvaluationPeriods"], alarm["Period"], alarm["Statistic"]) == (1, 60, "Maximum")
    run = on_sale.play(whole_burst=False)  # h-3 and hv-1 ran out 1 s ago
    capsys.readouterr()

    # When the schedule runs the sweeper once a minute
    sweeps = []
    for _ in range(SCHEDULED_RUNS):
        sweep_once(on_sale.stack, run)
        sweeps.append(emitted_metrics(capsys.readouterr().out))
        on_sale.clock.advance(60)
    report(f"{site.name} / {fault.name}", injection, run)

    # Then the holds keep their seats (counted as held, none lost) ...
    records = assert_inventory_adds_up(on_sale.stack, run)
    assert {records[rid]["status"] for rid in ("h-3", "hv-1")} == {"HELD"} and run.expiries == {}
    # ... every run retried, then failed: the function's Errors metric counts each run, so
    # SweepHoldsErrorsAlarm (Errors >= 1 in 5 consecutive minutes) fires ...
    assert run.sweeper_errors == ["SweepIncomplete"] * SCHEDULED_RUNS
    assert injection.fired >= SCHEDULED_RUNS * 2 * 4  # 2 seat classes, the first try and 3 rounds
    # ... each run counted the holds it left, and how late the oldest was: 1 s, 61 s, ...
    documents = [document for [document] in sweeps]
    assert [d["HoldsOverdue"] for d in documents] == [[2.0]] * SCHEDULED_RUNS
    assert [d["OldestOverdueHoldSeconds"] for d in documents] == [
        [1.0 + 60 * n] for n in range(SCHEDULED_RUNS)
    ]
    # ... and HoldsOverdueAlarm fires from the run that finds them 5 minutes late.
    assert [alarm_sees(alarm, d) for d in documents] == [False] * 5 + [True] * (SCHEDULED_RUNS - 5)

    # When the fault heals, the next run releases and announces them once; the alarm goes quiet.
    injection.times = injection.fired
    capsys.readouterr()
    sweep_until_settled(on_sale.stack, run)
    assert run.expiries == {"h-3": 1, "hv-1": 1}
    assert not alarm_sees(alarm, emitted_metrics(capsys.readouterr().out)[-1])
    records = assert_inventory_adds_up(on_sale.stack, run)
    assert_everything_settled_as_without_faults(on_sale.stack, run, records)


def test_the_expiries_alarm_stays_silent_while_the_outbox_drains(
    on_sale: OnSale, template: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    alarm = template.properties("ExpiriesUnpublishedAlarm")
    run = on_sale.play(whole_burst=False)
    capsys.readouterr()
    sweep_until_settled(on_sale.stack, run)
    documents = emitted_metrics(capsys.readouterr().out)

    assert len(documents) == run.sweeps and run.sweeper_errors == []
    assert not any(alarm_sees(alarm, d) for d in documents)
    assert set(run.expiries) == {"h-3", "hv-1"}


def reservation_id_of(body: str) -> str | None:
    """The reservation id of a valid reserve or hold body, None for anything else."""
    parsed = parse_reservation("m", body, default_seat_class="GA", max_quantity=10, max_hold_seconds=3600)
    return parsed.reservation_id if isinstance(parsed, ReservationRequest) else None


def sqs_accepts(text: str) -> bool:
    allowed = all(
        ch in "\t\n\r" or "\x20" <= ch <= "\ud7ff" or "\ue000" <= ch <= "\ufffd" or ch >= "\U00010000"
        for ch in text
    )
    return allowed and len(text.encode()) <= SQS_MAX_BODY_BYTES


def test_hostile_bodies_on_the_queue_are_answered_invalid_and_never_dead_lettered(
    stack: Stack, queues: Queues
) -> None:
    stack.create_event("stadium", 1000)
    hostile = [case.body for case in CORPUS if sqs_accepts(case.body)]
    bodies = [text for n, bad in enumerate(hostile) for text in (bad, reservation(f"ok-{n}", "stadium", 1))]

    run = drain(stack, queues, bodies)
    report("hostile corpus", None, run)

    assert len(hostile) >= 30
    answered = {d["message_id"] for d in run.published}
    assert set(run.sent) <= answered
    assert run.dlq_depth == 0 and run.dead_letters == {}
    assert run.redelivered == 0 and run.handler_errors == []
    assert Counter(d["outcome"] for d in run.published) == {
        "INVALID": len(hostile),
        "CONFIRMED": len(hostile),
    }
    assert set(reservation_records(stack)) == {f"ok-{n}" for n in range(len(hostile))}
    assert seats(stack, "stadium", "GA")[3] == len(hostile)


def test_a_body_full_of_unknown_fields_is_answered_not_dead_lettered(stack: Stack, queues: Queues) -> None:
    stack.create_event("arena", 20)
    fields: dict[str, Any] = json.loads(reservation("r-wide", "arena", 1))
    for n in range(7000):  # 2-byte characters: about 250 KB of UTF-8
        fields["\u00e9" * 12 + f"{n:x}"] = 0
    body = json.dumps(fields, ensure_ascii=False)
    assert sqs_accepts(body) and len(body.encode()) > 240_000

    run = drain(stack, queues, [body])
    report("256 KB of unknown fields", None, run)

    assert run.dlq_depth == 0, f"dead-lettered after {max(run.receives.values())} receives"
    assert [d["outcome"] for d in run.published] == ["INVALID"]
