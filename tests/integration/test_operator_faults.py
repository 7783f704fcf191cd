"""The operator's commands under faults: every write exactly once, and the CLI tells the truth.

Each cell runs one `seats event ...` command through the CLI against moto, with one fault at one
of its AWS calls, then checks that the inventory item, the reservation records and what the
command said agree with the operator's intent:
- the command said it was done: the item holds the change, applied once (its version moved by
  one, capacity and available by exactly the seats asked for);
- it said "not changed" / "not created": the item is as it was;
- it said the outcome is unknown: only when DynamoDB answered neither the write nor the reads
  after it.

Faults (as in test_fault_injection.py): throttling and an internal server error returned
instead of the request (botocore's own retries bypassed: as if they were used up); a connect
timeout before the request; the reply lost after the write succeeded, once seen by the caller
(an after-call `ReadTimeoutError`) and once retried by botocore itself, which sends the same
request again (`needs-retry` asks for a retry after a 2xx answer: what a read timeout does).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ConnectTimeoutError, ReadTimeoutError
from click.testing import CliRunner, Result

from seat_inventory.models import RetryableError, SaleStatus, SeatClassInventory, SeatKey
from seat_tools.cli import context as cli_context
from seat_tools.cli.main import cli
from seat_tools.operator_commands import OperatorTable
from seat_tools.operator_errors import EventAlreadyExists, OperatorOutcomeUnknown
from tests.integration.conftest import REGION, FakeHttpResponse, Stack

GA = SeatKey("gig-1", "GA")
NEW = SeatKey("gig-1", "BALCONY")
CAPACITY = 100
SOLD = 5
RETRIED = Config(retries={"mode": "standard", "max_attempts": 2})


# --- faults -------------------------------------------------------------------------------------


@dataclass
class Injection:
    times: int | None
    fired: int = 0

    def take(self) -> bool:
        if self.times is not None and self.fired >= self.times:
            return False
        self.fired += 1
        return True


def error(code: str, status: int) -> Callable[[Any, str, Injection], None]:
    def install(session: Any, operation: str, injection: Injection) -> None:
        def hook(**_: Any) -> Any:
            if injection.take():
                return FakeHttpResponse(status), {"Error": {"Code": code, "Message": f"injected {code}"}}
            return None

        session.events.register(f"before-call.{operation}", hook)

    return install


def connect_timeout(session: Any, operation: str, injection: Injection) -> None:
    def hook(**_: Any) -> None:
        if injection.take():
            raise ConnectTimeoutError(
                endpoint_url=f"https://{operation.split('.')[0]}.us-east-1.amazonaws.com"
            )

    session.events.register(f"before-call.{operation}", hook)


def reply_lost(session: Any, operation: str, injection: Injection) -> None:
    """The write succeeded; the caller sees a read timeout (botocore does not retry it here)."""

    def hook(http_response: Any, **_: Any) -> None:
        if http_response.status_code < 300 and injection.take():
            raise ReadTimeoutError(endpoint_url=f"https://{operation.split('.')[0]}.us-east-1.amazonaws.com")

    session.events.register(f"after-call.{operation}", hook)


def reply_lost_and_resent(session: Any, operation: str, injection: Injection) -> None:
    """The write succeeded, its reply was lost, and botocore sent the same request again."""
    service, name = operation.split(".")

    def hook(response: Any, **_: Any) -> Any:
        if response is not None and response[0].status_code < 300 and injection.take():
            return 0  # retry at once, as botocore does after a read timeout
        return None

    session.events.register(f"needs-retry.{service}.{name}", hook)


FAULTS = {
    "throttling": error("ThrottlingException", 400),
    "internal server error": error("InternalServerError", 500),
    "timeout before the request": connect_timeout,
    "reply lost after success": reply_lost,
    "reply lost, botocore resends": reply_lost_and_resent,
}
REPLY_LOST = ("reply lost after success", "reply lost, botocore resends")


# --- the commands -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Command:
    name: str
    args: tuple[str, ...]
    write: str  # the operation that applies it
    key: SeatKey
    intent: Callable[[SeatClassInventory | None], dict[str, Any]]  # the item's state once applied
    said: str  # what the command prints when it is done


def state(item: SeatClassInventory | None) -> dict[str, Any]:
    if item is None:
        return {}
    return {
        "capacity": item.capacity,
        "available": item.available,
        "held": item.held,
        "sold": item.sold,
        "sale_status": item.sale_status,
        "sale_starts_at": item.sale_starts_at,
        "sale_ends_at": item.sale_ends_at,
        "max_per_customer": item.max_per_customer,
    }


def changed(**changes: Any) -> Callable[[SeatClassInventory | None], dict[str, Any]]:
    def intent(before: SeatClassInventory | None) -> dict[str, Any]:
        assert before is not None
        after = state(before)
        for name, value in changes.items():
            after[name] = value(after) if callable(value) else value
        return after

    return intent


def created(before: SeatClassInventory | None) -> dict[str, Any]:
    assert before is None
    return {
        "capacity": 40,
        "available": 40,
        "held": 0,
        "sold": 0,
        "sale_status": SaleStatus.OPEN,
        "sale_starts_at": None,
        "sale_ends_at": None,
        "max_per_customer": None,
    }


STARTS, ENDS = 1_900_000_000, 1_900_086_400
COMMANDS = [
    Command(
        "create",
        ("event", "create", "gig-1", "--seat-class", "BALCONY", "--capacity", "40"),
        "dynamodb.PutItem",
        NEW,
        created,
        "created gig-1 BALCONY: capacity 40",
    ),
    Command(
        "close",
        ("event", "close", "gig-1", "--seat-class", "GA"),
        "dynamodb.UpdateItem",
        GA,
        changed(sale_status=SaleStatus.CLOSED),
        "gig-1 GA: sale CLOSED",
    ),
    Command(
        "open",
        ("event", "open", "gig-1", "--seat-class", "GA"),
        "dynamodb.UpdateItem",
        GA,
        changed(sale_status=SaleStatus.OPEN),
        "gig-1 GA: sale OPEN",
    ),
    Command(
        "schedule",
        (
            "event",
            "schedule",
            "gig-1",
            "--seat-class",
            "GA",
            "--starts-at",
            "2030-03-17T17:46:40Z",
            "--ends-at",
            "2030-03-18T17:46:40Z",
        ),
        "dynamodb.UpdateItem",
        GA,
        changed(sale_starts_at=STARTS, sale_ends_at=ENDS),
        "window 2030-03-17T17:46:40Z .. 2030-03-18T17:46:40Z",
    ),
    Command(
        "limit",
        ("event", "limit", "gig-1", "--seat-class", "GA", "--max-per-customer", "4"),
        "dynamodb.UpdateItem",
        GA,
        changed(max_per_customer=4),
        "limit per customer 4",
    ),
    Command(
        "capacity --add",
        ("event", "capacity", "gig-1", "--seat-class", "GA", "--add", "10"),
        "dynamodb.UpdateItem",
        GA,
        changed(capacity=lambda s: s["capacity"] + 10, available=lambda s: s["available"] + 10),
        "capacity 110 (available 105",
    ),
    Command(
        "capacity --remove",
        ("event", "capacity", "gig-1", "--seat-class", "GA", "--remove", "10"),
        "dynamodb.UpdateItem",
        GA,
        changed(capacity=lambda s: s["capacity"] - 10, available=lambda s: s["available"] - 10),
        "capacity 90 (available 85",
    ),
    Command(
        "capacity --set",
        ("event", "capacity", "gig-1", "--seat-class", "GA", "--set", "120"),
        "dynamodb.UpdateItem",
        GA,
        changed(capacity=120, available=lambda s: s["available"] + 20),
        "capacity 120 (available 115",
    ),
]


@dataclass
class Operator:
    stack: Stack
    session: boto3.session.Session
    admin: OperatorTable  # the test's own view, without faults

    def run(self, *args: str) -> Result:
        return CliRunner().invoke(cli, list(args))

    def item(self, key: SeatKey) -> SeatClassInventory | None:
        return self.admin.read_inventory(key)


@pytest.fixture
def operator(stack: Stack, monkeypatch: pytest.MonkeyPatch) -> Iterator[Operator]:
    """`seats` on a session of its own (the faults hit only the operator's calls), with a GA class
    of 100 seats, 5 of them sold, whose sale is closed for `open` to have something to do."""
    monkeypatch.setenv("TABLE_NAME", stack.table_name)
    monkeypatch.setenv("OUTCOMES_TOPIC_ARN", stack.topic_arn)
    session = boto3.session.Session(region_name=REGION)
    monkeypatch.setattr(cli_context.CliContext, "session", property(lambda self: session))
    monkeypatch.setattr(cli_context, "CLIENT_CONFIG", cli_context.CLIENT_CONFIG.merge(RETRIED))
    admin = OperatorTable(stack.dynamodb, stack.table_name)
    admin.create_seat_class(GA, CAPACITY)
    from tests.integration.test_lifecycle_commands import take

    take(admin, GA, "r-1", SOLD)
    yield Operator(stack, session, admin)


@pytest.mark.parametrize("fault", list(FAULTS))
@pytest.mark.parametrize("command", COMMANDS, ids=[c.name for c in COMMANDS])
def test_an_operator_command_under_a_fault_is_applied_once_and_says_so(
    operator: Operator, command: Command, fault: str
) -> None:
    if command.name == "open":
        operator.admin.set_sale_status(GA, SaleStatus.CLOSED)
    before = operator.item(command.key)
    version_before = before.version if before else 0
    injection = Injection(2 if fault not in REPLY_LOST else 1)
    FAULTS[fault](operator.session, command.write, injection)

    result = operator.run(*command.args)
    print(f"\nCELL {command.name} / {fault}: exit {result.exit_code}: {result.output.strip()}")

    after = operator.item(command.key)
    assert injection.fired == injection.times, "the write was not hit as planned"
    # The command went through: botocore's or the data access's retries got past the fault, or
    # the lost reply was recognised as this command's own write.
    assert result.exit_code == 0, result.output
    assert command.said in result.output
    assert state(after) == command.intent(before), "applied once, as intended"
    assert after is not None and after.version == version_before + (0 if command.name == "create" else 1)
    # nothing else moved: the sale recorded before the command is there, as it was
    record = operator.admin.get_reservation_record("r-1")
    assert record is not None and record.quantity == SOLD


PERMANENT = {
    "throttling": error("ThrottlingException", 400),
    "internal server error": error("InternalServerError", 500),
    "timeout before the request": connect_timeout,
}


@pytest.mark.parametrize("fault", list(PERMANENT))
@pytest.mark.parametrize("command", COMMANDS, ids=[c.name for c in COMMANDS])
def test_an_operator_command_that_cannot_write_says_it_changed_nothing(
    operator: Operator, command: Command, fault: str
) -> None:
    if command.name == "open":
        operator.admin.set_sale_status(GA, SaleStatus.CLOSED)
    before = operator.item(command.key)
    injection = Injection(None)
    PERMANENT[fault](operator.session, command.write, injection)

    result = operator.run(*command.args)
    print(f"\nCELL {command.name} / {fault}, permanent: exit {result.exit_code}: {result.output.strip()}")

    assert injection.fired > 0
    assert result.exit_code == 4, result.output  # AWS unreachable or busy: try again
    verb = "created" if command.name == "create" else "changed"
    assert f"{command.key.seat_class} was not {verb}" in result.output
    assert operator.item(command.key) == before


def test_a_write_whose_reply_is_lost_and_whose_item_cannot_be_read_is_reported_unknown(
    operator: Operator,
) -> None:
    reply_lost(operator.session, "dynamodb.UpdateItem", Injection(1))
    reads = Injection(None)
    # the command's first read goes through, then every read fails
    calls = {"n": 0}

    def failing_reads(**_: Any) -> Any:
        calls["n"] += 1
        if calls["n"] > 1 and reads.take():
            return FakeHttpResponse(500), {"Error": {"Code": "InternalServerError", "Message": "injected"}}
        return None

    operator.session.events.register("before-call.dynamodb.GetItem", failing_reads)

    result = operator.run("event", "capacity", "gig-1", "--seat-class", "GA", "--add", "10")

    assert result.exit_code == 4, result.output
    assert "may or may not have been" in result.output and "seats event show gig-1" in result.output
    after = operator.item(GA)
    assert after is not None and after.capacity == CAPACITY + 10  # it was, in fact


# --- the data access, as the issue reproduced it --------------------------------------------------


@dataclass
class Faulty:
    """The data access on a session of its own; hooks are registered on the session before `table`."""

    session: boto3.session.Session
    table_name: str

    @property
    def table(self) -> OperatorTable:
        client = self.session.client("dynamodb", config=RETRIED)  # sees the hooks registered so far
        return OperatorTable(client, self.table_name, sleep=lambda _: None)


@pytest.fixture
def faulty(stack: Stack) -> Faulty:
    OperatorTable(stack.dynamodb, stack.table_name).create_seat_class(GA, CAPACITY)
    return Faulty(boto3.session.Session(region_name=REGION), stack.table_name)


@pytest.mark.parametrize(("delta", "capacity"), [(10, 110), (-10, 90)])
def test_a_capacity_change_resent_after_a_lost_reply_is_applied_once(
    faulty: Faulty, delta: int, capacity: int
) -> None:
    session = faulty.session
    injection = Injection(1)
    reply_lost_and_resent(session, "dynamodb.UpdateItem", injection)

    table = faulty.table
    item = table.change_capacity(GA, delta)

    assert injection.fired == 1
    assert (item.capacity, item.available) == (capacity, capacity)
    stored = table.read_inventory(GA)
    assert stored is not None and (stored.capacity, stored.available, stored.version) == (
        capacity,
        capacity,
        1,
    )


def test_a_creation_resent_after_a_lost_reply_is_the_creation_not_a_conflict(
    faulty: Faulty,
) -> None:
    session = faulty.session
    reply_lost_and_resent(session, "dynamodb.PutItem", Injection(1))

    table = faulty.table
    item = table.create_seat_class(NEW, 40)

    assert (item.capacity, item.available) == (40, 40)
    # and a second creation by another operation is refused, as before
    with pytest.raises(EventAlreadyExists):
        table.create_seat_class(NEW, 40)


def test_a_change_whose_reply_is_lost_is_verified_not_reported_as_failed(
    faulty: Faulty,
) -> None:
    session = faulty.session
    reply_lost(session, "dynamodb.UpdateItem", Injection(1))

    table = faulty.table
    item = table.change_capacity(GA, 10)  # before: RetryableError, "not changed", while it was

    assert item.capacity == 110 and table.read_inventory(GA).capacity == 110  # type: ignore[union-attr]


def test_another_operators_change_between_a_write_and_its_resend_does_not_hide_it(
    faulty: Faulty, stack: Stack
) -> None:
    session = faulty.session
    other = OperatorTable(stack.dynamodb, stack.table_name)
    fired = Injection(1)

    def hook(response: Any, **_: Any) -> Any:
        if response is not None and response[0].status_code < 300 and fired.take():
            other.set_sale_status(GA, SaleStatus.CLOSED)  # lands between the write and its resend
            return 0
        return None

    session.events.register("needs-retry.dynamodb.UpdateItem", hook)

    table = faulty.table
    item = table.change_capacity(GA, 10)

    stored = table.read_inventory(GA)
    assert stored is not None and (stored.capacity, stored.sale_status) == (110, SaleStatus.CLOSED)
    assert item.capacity == 110


def test_an_unknown_outcome_is_not_a_retryable_error() -> None:
    # `seats` must not say "try again" for it: a new operation id could apply the change twice.
    assert not issubclass(OperatorOutcomeUnknown, RetryableError)


def test_the_operation_ids_kept_on_the_item_are_bounded(faulty: Faulty, stack: Stack) -> None:
    table = faulty.table
    for _ in range(12):
        table.change_capacity(GA, 1)
    item = stack.dynamodb.get_item(
        TableName=stack.table_name,
        Key={"pk": {"S": "EVENT#gig-1"}, "sk": {"S": "CLASS#GA"}},
        ConsistentRead=True,
    )["Item"]
    assert len(item["recent_operations"]["L"]) == 8
    assert len(json.dumps(item)) < 1024  # still one write unit for every reservation transaction


# --- seats holds sweep ----------------------------------------------------------------------------

SWEEP_SITES = [
    "dynamodb.Query",
    "dynamodb.GetItem",
    "dynamodb.TransactWriteItems",
    "sns.PublishBatch",
    "dynamodb.UpdateItem",
]
SWEEP_FAULTS = {
    "throttling": lambda site: error("Throttled" if site.startswith("sns") else "ThrottlingException", 400),
    "internal server error": lambda site: error(
        "InternalError" if site.startswith("sns") else "InternalServerError", 500
    ),
    "timeout before the request": lambda site: connect_timeout,
    "reply lost after success": lambda site: reply_lost,
}


@pytest.mark.parametrize("fault", list(SWEEP_FAULTS))
@pytest.mark.parametrize("site", SWEEP_SITES)
def test_holds_sweep_under_a_fault_says_what_it_did_and_a_rerun_settles(
    operator: Operator, site: str, fault: str
) -> None:
    # Given a hold of 3 seats that ran out 10 s ago
    from tests.integration.test_lifecycle_commands import take

    take(operator.admin, GA, "h-1", 3, hold_until=int(time.time()) - 10)
    operator.stack.outcomes()
    injection = Injection(1)
    SWEEP_FAULTS[fault](site)(operator.session, site, injection)

    # When the operator sweeps
    result = operator.run("holds", "sweep")
    print(f"\nCELL holds sweep {site} / {fault}: exit {result.exit_code}: {result.output.strip()}")
    record = operator.admin.get_reservation_record("h-1")
    assert record is not None and injection.fired == 1
    item = operator.item(GA)
    assert item is not None and item.available + item.held + item.sold == item.capacity
    # Then what it said is what happened
    if result.exit_code == 0:
        assert "released 1 hold(s), 3 seat(s)" in result.output and "0 left to publish" in result.output
        assert record.status.value == "EXPIRED" and item.held == 0
    elif "released 1 hold(s)" in result.output:  # released, not (surely) announced
        assert record.status.value == "EXPIRED" and item.held == 0
    else:  # the run failed before releasing anything it could vouch for
        assert result.exit_code in (1, 4), result.output
    # And a sweep without the fault settles everything, each expiry announced at least once
    settled = CliRunner().invoke(cli, ["holds", "sweep"])
    assert settled.exit_code == 0, settled.output
    record = operator.admin.get_reservation_record("h-1")
    assert record is not None and record.status.value == "EXPIRED" and not record.awaiting_publication
    assert operator.item(GA).held == 0  # type: ignore[union-attr]
    announced = [d for d in operator.stack.outcomes() if d["reservation_id"] == "h-1"]
    assert announced and {d["outcome"] for d in announced} == {"EXPIRED"}


# --- seats dlq redrive ----------------------------------------------------------------------------

REDRIVE_SITES = ["sqs.ReceiveMessage", "sqs.SendMessageBatch", "sqs.DeleteMessageBatch"]
REDRIVE_FAULTS = {
    "throttling": error("RequestThrottled", 400),
    "internal server error": error("InternalError", 500),
    "timeout before the request": connect_timeout,
    "reply lost after success": reply_lost,
    "reply lost, botocore resends": reply_lost_and_resent,
}
DEAD = [json.dumps({"reservation_id": f"d-{n}", "event_id": "gig-1", "quantity": 1}) for n in range(6)]


def bodies(stack: Stack, url: str) -> list[str]:
    found: dict[str, str] = {}
    for _ in range(20):
        messages = stack.sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=600).get(
            "Messages", []
        )
        if not messages:
            break
        found.update((m["MessageId"], m["Body"]) for m in messages)
    return list(found.values())


@pytest.mark.parametrize("fault", list(REDRIVE_FAULTS))
@pytest.mark.parametrize("site", REDRIVE_SITES)
def test_dlq_redrive_under_a_fault_loses_nothing_and_says_where_each_message_is(
    operator: Operator, monkeypatch: pytest.MonkeyPatch, site: str, fault: str
) -> None:
    queue = operator.stack.sqs.create_queue(QueueName="reservations")["QueueUrl"]
    dlq = operator.stack.sqs.create_queue(QueueName="reservations-dlq")["QueueUrl"]
    monkeypatch.setenv("RESERVATIONS_QUEUE_URL", queue)
    monkeypatch.setenv("DEAD_LETTER_QUEUE_URL", dlq)
    for start in range(0, len(DEAD), 3):  # two receives' worth, so that a later step can fail
        operator.stack.sqs.send_message_batch(
            QueueUrl=dlq,
            Entries=[{"Id": str(n), "MessageBody": b} for n, b in enumerate(DEAD[start : start + 3])],
        )
    injection = Injection(1)
    REDRIVE_FAULTS[fault](operator.session, site, injection)

    result = operator.run("dlq", "redrive", "--yes")
    print(f"\nCELL dlq redrive {site} / {fault}: exit {result.exit_code}: {result.output.strip()}")

    assert injection.fired == 1
    held = int(
        operator.stack.sqs.get_queue_attributes(
            QueueUrl=dlq, AttributeNames=["ApproximateNumberOfMessagesNotVisible"]
        )["Attributes"]["ApproximateNumberOfMessagesNotVisible"]
    )
    on_queue, in_dlq = bodies(operator.stack, queue), bodies(operator.stack, dlq)
    # Nothing lost: every dead letter is on the queue or still in the DLQ, visible or held by a
    # receive whose answer was lost (it comes back after the hold), and the CLI said so.
    missing = set(DEAD) - set(on_queue) - set(in_dlq)
    assert len(missing) <= held
    if held and result.exit_code == 0:
        assert f"({held} held by a receive" in result.output
        return
    if result.exit_code == 0:
        assert f"moved {len(DEAD)} message(s)" in result.output and in_dlq == []
        # a resent batch is on the queue twice: answered once per reservation id by the service
        assert sorted(set(on_queue)) == sorted(DEAD)
        assert (len(on_queue) > len(DEAD)) == (site == "sqs.SendMessageBatch" and "resends" in fault)
    else:
        assert result.exit_code == 1, result.output
        moved = int(result.output.split("moved ")[1].split(" ")[0])
        assert (
            moved == len(set(on_queue) - set(in_dlq))
            or "may also have reached" in result.output
            or ("may not have been deleted" in result.output)
        )
        if not held and not (
            "may also have reached" in result.output or "not have been deleted" in result.output
        ):
            assert len(on_queue) == moved and sorted(set(on_queue) | set(in_dlq)) == sorted(DEAD)
        # what stayed behind is visible again: a second redrive moves it
        if in_dlq:
            for body in in_dlq:
                operator.stack.sqs.send_message(QueueUrl=dlq, MessageBody=body)
