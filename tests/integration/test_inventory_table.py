"""Every DynamoDB expression of the data-access module, each path: success, condition failed, item missing, duplicate."""

from __future__ import annotations

import dataclasses

import pytest
from botocore.exceptions import ClientError

from seat_inventory.models import (
    Outcome,
    ReservationOutcome,
    RetryableError,
    SeatKey,
    Throttled,
    TransactionConflict,
)
from seat_tools.operator_commands import OperatorTable
from seat_tools.operator_errors import EventAlreadyExists
from tests.integration.conftest import Stack
from tests.writes import GroupWrite, commit_outcomes

KEY = SeatKey("e-1", "GA")


def answer(
    reservation_id: str, outcome: Outcome = Outcome.CONFIRMED, quantity: int = 2
) -> ReservationOutcome:
    return ReservationOutcome(
        reservation_id=reservation_id,
        outcome=outcome,
        reason="why",
        event_id="e-1",
        seat_class="GA",
        quantity=quantity,
        customer_id="c-1",
        message_id=f"m-{reservation_id}",
    )


@pytest.fixture
def table(stack: Stack) -> OperatorTable:
    return OperatorTable(stack.dynamodb, stack.table_name)


def raw_record(stack: Stack, reservation_id: str) -> dict:
    return stack.dynamodb.get_item(
        TableName=stack.table_name,
        Key={"pk": {"S": f"RESERVATION#{reservation_id}"}, "sk": {"S": "RESERVATION"}},
    ).get("Item", {})


# --- create_seat_class: put with attribute_not_exists(pk) ---------------------------------------


def test_create_seat_class_starts_with_everything_available(table: OperatorTable) -> None:
    created = table.create_seat_class(KEY, 100)
    assert (created.capacity, created.available, created.sold) == (100, 100, 0)
    assert table.get_event("e-1") == [created]


def test_creating_an_existing_seat_class_is_refused_and_changes_nothing(
    stack: Stack, table: OperatorTable
) -> None:
    table.create_seat_class(KEY, 100)
    commit_outcomes(table, GroupWrite(KEY, [answer("r-1")], seats_taken=2, rejection_expires_at=0))

    with pytest.raises(
        EventAlreadyExists, match=r"already has seat class 'GA' \(capacity 100, available 98\)"
    ):
        table.create_seat_class(KEY, 5)

    assert stack.inventory("e-1") == {"capacity": 100, "available": 98, "sold": 2}


def test_another_seat_class_can_be_added_to_an_event(table: OperatorTable) -> None:
    table.create_seat_class(KEY, 100)
    table.create_seat_class(SeatKey("e-1", "VIP"), 10)
    assert [c.seat_class for c in table.get_event("e-1")] == ["GA", "VIP"]


# --- get_event: query on pk with begins_with(sk) ------------------------------------------------


def test_get_event_of_an_unknown_event_is_empty(table: OperatorTable) -> None:
    assert table.get_event("nope") == []


def test_get_event_does_not_mix_events_with_a_common_prefix(table: OperatorTable) -> None:
    table.create_seat_class(SeatKey("e-1", "GA"), 1)
    table.create_seat_class(SeatKey("e-10", "GA"), 2)
    assert [c.capacity for c in table.get_event("e-1")] == [1]


# --- take: guarded decrement + attribute_not_exists records, one transaction --------------------


def test_commit_takes_the_seats_and_records_every_answer(stack: Stack, table: OperatorTable) -> None:
    table.create_seat_class(KEY, 10)

    refused = commit_outcomes(
        table,
        GroupWrite(
            KEY, [answer("r-1"), answer("r-2", Outcome.SOLD_OUT)], seats_taken=2, rejection_expires_at=1234
        ),
    )

    assert refused is None
    assert stack.inventory("e-1") == {"capacity": 10, "available": 8, "sold": 2}
    assert raw_record(stack, "r-1")["outcome"] == {"S": "CONFIRMED"}
    assert "expires_at" not in raw_record(stack, "r-1")
    assert raw_record(stack, "r-2")["expires_at"] == {"N": "1234"}
    assert table.get_reservation("r-2") == answer("r-2", Outcome.SOLD_OUT)


def test_too_few_seats_refuses_everything_and_reports_what_is_left(
    stack: Stack, table: OperatorTable
) -> None:
    table.create_seat_class(KEY, 3)

    refused = commit_outcomes(
        table, GroupWrite(KEY, [answer("r-1"), answer("r-2")], seats_taken=4, rejection_expires_at=0)
    )

    assert refused is not None
    assert refused.inventory_refused
    assert refused.inventory is not None and refused.inventory.available == 3
    assert refused.already_recorded == {}
    assert stack.inventory("e-1")["available"] == 3
    assert raw_record(stack, "r-1") == {}


def test_a_missing_inventory_item_is_reported_as_no_item(table: OperatorTable) -> None:
    refused = commit_outcomes(table, GroupWrite(KEY, [answer("r-1")], seats_taken=2, rejection_expires_at=0))

    assert refused is not None
    assert refused.inventory_refused and refused.inventory is None


def test_an_existing_record_refuses_the_transaction_and_returns_the_stored_answer(
    stack: Stack, table: OperatorTable
) -> None:
    table.create_seat_class(KEY, 10)
    commit_outcomes(table, GroupWrite(KEY, [answer("r-1")], seats_taken=2, rejection_expires_at=0))

    refused = commit_outcomes(
        table, GroupWrite(KEY, [answer("r-1"), answer("r-2")], seats_taken=4, rejection_expires_at=0)
    )

    assert refused is not None
    assert not refused.inventory_refused
    assert refused.already_recorded == {"r-1": answer("r-1")}
    assert stack.inventory("e-1") == {"capacity": 10, "available": 8, "sold": 2}
    assert raw_record(stack, "r-2") == {}


def test_rejections_alone_do_not_touch_the_inventory(stack: Stack, table: OperatorTable) -> None:
    refused = commit_outcomes(
        table,
        GroupWrite(
            SeatKey("nope", "GA"),
            [answer("r-1", Outcome.UNKNOWN_EVENT)],
            seats_taken=0,
            rejection_expires_at=99,
        ),
    )
    assert refused is None
    assert table.get_reservation("r-1") is not None
    assert table.get_event("nope") == []


def rejection(reservation_id: str, reason: str = "sold out") -> ReservationOutcome:
    return dataclasses.replace(answer(reservation_id, Outcome.SOLD_OUT), reason=reason)


def test_rejections_alone_are_one_conditional_put_each_not_a_transaction(stack: Stack) -> None:
    # Given a client whose calls are counted
    table = OperatorTable(stack.faults.session.client("dynamodb"), stack.table_name)
    table.create_seat_class(KEY, 10)
    stack.faults.calls.clear()

    # When a group of rejections only is committed
    refused = commit_outcomes(
        table,
        GroupWrite(KEY, [rejection(f"r-{n}") for n in range(12)], seats_taken=0, rejection_expires_at=99),
    )

    # Then each record is its own PutItem (1 write unit per KB), no transaction, and all are written
    assert refused is None
    assert stack.faults.calls == ["PutItem"] * 12
    assert [raw_record(stack, f"r-{n}")["expires_at"] for n in range(12)] == [{"N": "99"}] * 12
    assert table.get_reservation("r-3") == rejection("r-3")
    assert stack.inventory("e-1") == {"capacity": 10, "available": 10, "sold": 0}


def test_a_rejection_already_recorded_comes_back_with_its_stored_answer_and_the_rest_is_written(
    stack: Stack, table: OperatorTable
) -> None:
    commit_outcomes(
        table, GroupWrite(KEY, [rejection("r-1", "first")], seats_taken=0, rejection_expires_at=99)
    )

    refused = commit_outcomes(
        table,
        GroupWrite(
            KEY, [rejection("r-1", "second"), rejection("r-2")], seats_taken=0, rejection_expires_at=99
        ),
    )

    assert refused is not None and not refused.inventory_refused
    assert refused.already_recorded == {"r-1": rejection("r-1", "first")}
    assert refused.written == {"r-2"}
    assert table.get_reservation("r-1") == rejection("r-1", "first")
    assert table.get_reservation("r-2") == rejection("r-2")


def test_a_transient_fault_on_some_rejections_keeps_the_others_written(stack: Stack) -> None:
    stack.faults.fail(
        "dynamodb.PutItem", "TransactionConflictException", when=lambda r: b"RESERVATION#r-2" in r["body"]
    )
    table = OperatorTable(stack.faults.session.client("dynamodb"), stack.table_name)

    refused = commit_outcomes(
        table,
        GroupWrite(
            KEY,
            [rejection("r-1"), rejection("r-2"), rejection("r-3")],
            seats_taken=0,
            rejection_expires_at=99,
        ),
    )

    # r-2 is in neither set: it was not written and is to be written again
    assert refused is not None
    assert (refused.written, dict(refused.already_recorded)) == ({"r-1", "r-3"}, {})
    assert raw_record(stack, "r-2") == {}
    assert (
        commit_outcomes(table, GroupWrite(KEY, [rejection("r-2")], seats_taken=0, rejection_expires_at=99))
        is None
    )


@pytest.mark.parametrize(
    ("code", "raised"),
    [
        ("TransactionConflictException", TransactionConflict),
        ("ProvisionedThroughputExceededException", Throttled),
        ("InternalServerError", RetryableError),
    ],
)
def test_a_transient_fault_on_every_rejection_raises_the_domain_error(
    stack: Stack, code: str, raised: type[RetryableError]
) -> None:
    stack.faults.fail("dynamodb.PutItem", code, times=2)
    table = OperatorTable(stack.faults.session.client("dynamodb"), stack.table_name)

    with pytest.raises(raised, match=code):
        commit_outcomes(
            table,
            GroupWrite(KEY, [rejection("r-1"), rejection("r-2")], seats_taken=0, rejection_expires_at=99),
        )

    assert raw_record(stack, "r-1") == raw_record(stack, "r-2") == {}


def test_a_request_error_on_a_rejection_is_not_disguised_as_retryable(stack: Stack) -> None:
    stack.faults.fail("dynamodb.PutItem", "ValidationException")
    table = OperatorTable(stack.faults.session.client("dynamodb"), stack.table_name)
    with pytest.raises(ClientError) as refused:
        commit_outcomes(
            table,
            GroupWrite(KEY, [rejection("r-1"), rejection("r-2")], seats_taken=0, rejection_expires_at=99),
        )
    assert not isinstance(refused.value, RetryableError)


def test_get_reservation_of_an_unknown_id_is_none(table: OperatorTable) -> None:
    assert table.get_reservation("never") is None


# --- error codes -> domain outcomes ------------------------------------------------------------


@pytest.mark.parametrize(
    "code", ["ThrottlingException", "ProvisionedThroughputExceededException", "RequestLimitExceeded"]
)
def test_a_throttling_code_becomes_throttled(stack: Stack, code: str) -> None:
    stack.faults.fail("dynamodb.TransactWriteItems", code)
    table = OperatorTable(stack.faults.session.client("dynamodb"), stack.table_name)
    with pytest.raises(Throttled, match=code):
        commit_outcomes(table, GroupWrite(KEY, [answer("r-1")], seats_taken=2, rejection_expires_at=0))


def test_a_service_error_is_retryable_but_not_throttled(stack: Stack) -> None:
    stack.faults.fail("dynamodb.TransactWriteItems", "InternalServerError")
    table = OperatorTable(stack.faults.session.client("dynamodb"), stack.table_name)
    with pytest.raises(RetryableError) as raised:
        commit_outcomes(table, GroupWrite(KEY, [answer("r-1")], seats_taken=2, rejection_expires_at=0))
    assert not isinstance(raised.value, (Throttled, TransactionConflict))


@pytest.mark.parametrize("reason", ["ThrottlingError", "ProvisionedThroughputExceeded"])
def test_a_cancellation_for_throttling_becomes_throttled(stack: Stack, reason: str) -> None:
    def cancelled(params, **_):
        return (
            type("R", (), {"status_code": 400, "headers": {}, "content": b""})(),
            {
                "Error": {"Code": "TransactionCanceledException", "Message": "x"},
                "CancellationReasons": [{"Code": reason}, {"Code": "None"}],
            },
        )

    stack.faults.session.events.register("before-call.dynamodb.TransactWriteItems", cancelled)
    table = OperatorTable(stack.faults.session.client("dynamodb"), stack.table_name)
    with pytest.raises(Throttled, match=reason):
        commit_outcomes(table, GroupWrite(KEY, [answer("r-1")], seats_taken=2, rejection_expires_at=0))


def test_a_conflict_code_becomes_a_transaction_conflict(stack: Stack) -> None:
    stack.faults.fail("dynamodb.TransactWriteItems", "TransactionConflictException")
    table = OperatorTable(stack.faults.session.client("dynamodb"), stack.table_name)
    with pytest.raises(TransactionConflict):
        commit_outcomes(table, GroupWrite(KEY, [answer("r-1")], seats_taken=2, rejection_expires_at=0))


def test_a_cancellation_for_conflict_becomes_a_transaction_conflict(stack: Stack) -> None:
    def cancelled(params, **_):
        return (
            type("R", (), {"status_code": 400, "headers": {}, "content": b""})(),
            {
                "Error": {"Code": "TransactionCanceledException", "Message": "x"},
                "CancellationReasons": [{"Code": "TransactionConflict"}, {"Code": "None"}],
            },
        )

    stack.faults.session.events.register("before-call.dynamodb.TransactWriteItems", cancelled)
    table = OperatorTable(stack.faults.session.client("dynamodb"), stack.table_name)
    with pytest.raises(TransactionConflict):
        commit_outcomes(table, GroupWrite(KEY, [answer("r-1")], seats_taken=2, rejection_expires_at=0))


def test_a_request_error_is_not_disguised_as_retryable(stack: Stack) -> None:
    stack.faults.fail("dynamodb.TransactWriteItems", "ValidationException")
    table = OperatorTable(stack.faults.session.client("dynamodb"), stack.table_name)
    with pytest.raises(ClientError) as raised:
        commit_outcomes(table, GroupWrite(KEY, [answer("r-1")], seats_taken=2, rejection_expires_at=0))
    assert not isinstance(raised.value, RetryableError)


# --- read_inventory: consistent GetItem ----------------------------------------------------------


def test_read_inventory_returns_the_item(table: OperatorTable) -> None:
    table.create_seat_class(KEY, 7)
    inventory = table.read_inventory(KEY)
    assert inventory is not None and (inventory.capacity, inventory.available) == (7, 7)


def test_read_inventory_of_a_missing_item_is_none(table: OperatorTable) -> None:
    assert table.read_inventory(KEY) is None


def test_a_throttled_read_is_throttled(stack: Stack) -> None:
    stack.faults.fail("dynamodb.GetItem", "ProvisionedThroughputExceededException")
    table = OperatorTable(stack.faults.session.client("dynamodb"), stack.table_name)
    with pytest.raises(Throttled):
        table.read_inventory(KEY)
