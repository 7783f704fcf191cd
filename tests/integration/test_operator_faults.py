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
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ConnectTimeoutError, ReadTimeoutError
from click.testing import CliRunner, Result

from seat_inventory.cli import context as cli_context
from seat_inventory.cli.main import cli
from seat_inventory.dal.inventory_table import InventoryTable
from seat_inventory.models import (
    EventAlreadyExists,
    OperatorOutcomeUnknown,
    RetryableError,
    SaleStatus,
    SeatClassInventory,
    SeatKey,
)
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
            raise ConnectTimeoutError(endpoint_url="https://dynamodb.us-east-1.amazonaws.com")

    session.events.register(f"before-call.{operation}", hook)


def reply_lost(session: Any, operation: str, injection: Injection) -> None:
    """The write succeeded; the caller sees a read timeout (botocore does not retry it here)."""

    def hook(http_response: Any, **_: Any) -> None:
        if http_response.status_code < 300 and injection.take():
            raise ReadTimeoutError(endpoint_url="https://dynamodb.us-east-1.amazonaws.com")

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
    admin: InventoryTable  # the test's own view, without faults

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
    admin = InventoryTable(stack.dynamodb, stack.table_name)
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
    def table(self) -> InventoryTable:
        client = self.session.client("dynamodb", config=RETRIED)  # sees the hooks registered so far
        return InventoryTable(client, self.table_name, sleep=lambda _: None)


@pytest.fixture
def faulty(stack: Stack) -> Faulty:
    InventoryTable(stack.dynamodb, stack.table_name).create_seat_class(GA, CAPACITY)
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
    other = InventoryTable(stack.dynamodb, stack.table_name)
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
