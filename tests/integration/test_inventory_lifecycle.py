"""Every DynamoDB expression of the lifecycle on moto, each path: success, condition failed, item missing, duplicate.

Holds (inventory `held`, the sparse index), sale status and window, per-customer counters, the
status changes (confirm, cancel, expire) with their guards, the sweeper's index queries and
outbox, and the operator's conditional updates.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from seat_inventory.dal.items import HOLD_SHARDS, hold_shard
from seat_inventory.models import (
    Outcome,
    RequestType,
    ReservationOutcome,
    ReservationRecord,
    RetryableError,
    SaleStatus,
    SeatKey,
    Transition,
)
from seat_tools.operator_commands import OperatorTable
from seat_tools.operator_errors import InventoryChangeRefused, UnknownSeatClass
from tests.integration.conftest import FakeHttpResponse, Stack
from tests.writes import GroupWrite, commit_outcomes

KEY = SeatKey("e-1", "GA")
NOW = 1_800_000_000


def answer(
    reservation_id: str,
    outcome: Outcome = Outcome.CONFIRMED,
    *,
    quantity: int = 2,
    customer_id: str = "c-1",
    hold_expires_at: int | None = None,
) -> ReservationOutcome:
    return ReservationOutcome(
        reservation_id=reservation_id,
        outcome=outcome,
        reason="why",
        event_id="e-1",
        seat_class="GA",
        quantity=quantity,
        customer_id=customer_id,
        message_id=f"m-{reservation_id}",
        request_type=RequestType.HOLD if outcome is Outcome.HELD else RequestType.RESERVE,
        hold_expires_at=hold_expires_at,
    )


def held(reservation_id: str, *, quantity: int = 2, expires_at: int = NOW + 600, customer_id: str = "c-1"):
    return answer(
        reservation_id, Outcome.HELD, quantity=quantity, hold_expires_at=expires_at, customer_id=customer_id
    )


@pytest.fixture
def table(stack: Stack) -> OperatorTable:
    return OperatorTable(stack.dynamodb, stack.table_name)


def raw(stack: Stack, pk: str, sk: str) -> dict[str, Any]:
    return stack.dynamodb.get_item(TableName=stack.table_name, Key={"pk": {"S": pk}, "sk": {"S": sk}}).get(
        "Item", {}
    )


def raw_record(stack: Stack, reservation_id: str) -> dict[str, Any]:
    return raw(stack, f"RESERVATION#{reservation_id}", "RESERVATION")


def counter(stack: Stack, customer_id: str) -> int | None:
    item = raw(stack, f"CUSTOMER#e-1#GA#{customer_id}", "COUNTER")
    return int(item["seats"]["N"]) if item else None


def take(table: OperatorTable, *outcomes: ReservationOutcome, limit: int | None = None, now: int = NOW, **kw):
    seats = sum(o.quantity or 0 for o in outcomes if o.outcome in (Outcome.CONFIRMED, Outcome.HELD))
    customers: dict[str, int] = {}
    for o in outcomes:
        if o.outcome in (Outcome.CONFIRMED, Outcome.HELD) and limit is not None:
            customers[o.customer_id or ""] = customers.get(o.customer_id or "", 0) + (o.quantity or 0)
    return commit_outcomes(
        table,
        GroupWrite(
            KEY,
            list(outcomes),
            seats_taken=seats,
            rejection_expires_at=NOW + 99,
            max_per_customer=limit,
            customer_seats=customers,
            now=now,
            **kw,
        ),
    )


def record(table: OperatorTable, reservation_id: str) -> ReservationRecord:
    found = table.get_reservation_record(reservation_id)
    assert found is not None
    return found


# --- holds: the take-seats update and the record in the index ----------------------------------


def test_holds_and_sales_move_held_and_sold_in_one_write(stack: Stack, table: OperatorTable) -> None:
    table.create_seat_class(KEY, 10)

    refused = take(table, answer("r-1", quantity=3), held("h-1", quantity=2))

    assert refused is None
    item = table.read_inventory(KEY)
    assert item is not None and (item.available, item.held, item.sold) == (5, 2, 3)
    stored = raw_record(stack, "h-1")
    assert stored["status"] == {"S": "HELD"}
    assert stored["request_type"] == {"S": "hold"}
    assert stored["hold_expires_at"] == {"N": str(NOW + 600)}
    assert stored["gsi1pk"] == {"S": f"HOLDS#{hold_shard('h-1')}"}
    assert stored["gsi1sk"] == {"N": str(NOW + 600)}
    assert "expires_at" not in stored  # no TTL while the hold lives
    assert "gsi1pk" not in raw_record(stack, "r-1")
    assert raw_record(stack, "r-1")["status"] == {"S": "CONFIRMED"}


def test_a_hold_on_an_item_written_before_holds_existed_starts_held_at_zero(
    stack: Stack, table: OperatorTable
) -> None:
    stack.dynamodb.put_item(
        TableName=stack.table_name,
        Item={
            "pk": {"S": "EVENT#e-1"},
            "sk": {"S": "CLASS#GA"},
            "event_id": {"S": "e-1"},
            "seat_class": {"S": "GA"},
            "capacity": {"N": "10"},
            "available": {"N": "10"},
            "sold": {"N": "0"},
        },
    )
    before = table.read_inventory(KEY)
    assert before is not None and before.held == 0

    assert take(table, held("h-1", quantity=4)) is None

    after = table.read_inventory(KEY)
    assert after is not None and (after.available, after.held) == (6, 4)


def test_a_duplicate_hold_returns_its_stored_answer(table: OperatorTable) -> None:
    table.create_seat_class(KEY, 10)
    take(table, held("h-1"))

    refused = take(table, held("h-1"), answer("r-2"))

    assert refused is not None and not refused.inventory_refused
    assert refused.already_recorded == {"h-1": held("h-1")}


# --- sale status and window in the guard -------------------------------------------------------------


@pytest.mark.parametrize(
    ("changes", "now", "takes"),
    [
        ({}, NOW, True),
        ({"closed": True}, NOW, False),
        ({"sale_starts_at": NOW}, NOW, True),
        ({"sale_starts_at": NOW + 1}, NOW, False),
        ({"sale_ends_at": NOW + 1}, NOW, True),
        ({"sale_ends_at": NOW}, NOW, False),
        ({"sale_starts_at": NOW - 5, "sale_ends_at": NOW + 5}, NOW, True),
    ],
)
def test_the_sale_status_and_window_guard_the_write(
    table: OperatorTable, changes: dict, now: int, takes: bool
) -> None:
    table.create_seat_class(KEY, 10, **changes)

    refused = take(table, answer("r-1"), now=now)

    if takes:
        assert refused is None
    else:
        assert refused is not None and refused.inventory_refused
        assert refused.inventory is not None
        assert refused.inventory.sale_closed_reason(now) is not None
        assert table.get_reservation("r-1") is None


# --- per-customer limit: the assumed limit and the counters ------------------------------------------


def test_a_write_assuming_no_limit_is_refused_when_the_class_has_one(table: OperatorTable) -> None:
    table.create_seat_class(KEY, 10, max_per_customer=4)

    refused = take(table, answer("r-1"))

    assert refused is not None and refused.inventory_refused
    assert refused.inventory is not None and refused.inventory.max_per_customer == 4


def test_a_write_assuming_a_limit_is_refused_when_the_class_has_another(table: OperatorTable) -> None:
    table.create_seat_class(KEY, 10)

    refused = take(table, answer("r-1"), limit=4)

    assert refused is not None and refused.inventory_refused
    assert refused.inventory is not None and refused.inventory.max_per_customer is None


def test_counters_start_on_first_use_and_add_up(stack: Stack, table: OperatorTable) -> None:
    table.create_seat_class(KEY, 10, max_per_customer=4)

    assert take(table, answer("r-1", quantity=1), held("h-1", quantity=2), limit=4) is None
    assert take(table, answer("r-2", quantity=1), limit=4) is None

    assert counter(stack, "c-1") == 4
    assert raw_record(stack, "r-1")["customer_counted"] == {"BOOL": True}
    assert record(table, "h-1").customer_counted
    assert table.get_customer_seats(KEY, "c-1") == 4
    assert table.get_customer_seats(KEY, "nobody") == 0


def test_a_counter_that_would_pass_the_limit_refuses_and_reports_its_seats(
    stack: Stack, table: OperatorTable
) -> None:
    table.create_seat_class(KEY, 10, max_per_customer=4)
    take(table, answer("r-1", quantity=3), limit=4)

    refused = take(table, answer("r-2", quantity=2), answer("r-3", quantity=1, customer_id="c-2"), limit=4)

    assert refused is not None and not refused.inventory_refused
    assert refused.customer_seats == {"c-1": 3}
    assert counter(stack, "c-1") == 3 and counter(stack, "c-2") is None
    item = table.read_inventory(KEY)
    assert item is not None and item.sold == 3


def test_counters_are_only_written_with_a_limit(stack: Stack, table: OperatorTable) -> None:
    table.create_seat_class(KEY, 10)
    take(table, answer("r-1"))
    assert counter(stack, "c-1") is None
    assert "customer_counted" not in raw_record(stack, "r-1")


def test_customer_counters_stay_off_the_events_hot_partition(stack: Stack) -> None:
    # With a limit, every customer's counter is in the transaction that takes the seats: under
    # the event's partition key each added 2 write units to the partition the hot item is on.
    client = stack.dynamodb
    sent: list[dict[str, Any]] = []
    client.meta.events.register(
        "before-call.dynamodb.TransactWriteItems", lambda params, **_: sent.append(json.loads(params["body"]))
    )
    table = OperatorTable(client, stack.table_name)
    table.create_seat_class(KEY, 10, max_per_customer=4)

    take(table, answer("r-1", customer_id="c-1"), answer("r-2", customer_id="c-2"), limit=4)

    [transaction] = sent
    keys = [
        next(iter(action.values()))["Key" if "Update" in action else "Item"]
        for action in transaction["TransactItems"]
    ]
    on_the_event = [key["sk"]["S"] for key in keys if key["pk"]["S"] == "EVENT#e-1"]
    assert on_the_event == ["CLASS#GA"]
    assert (counter(stack, "c-1"), counter(stack, "c-2")) == (2, 2)


# --- read_reservations: consistent BatchGetItem ----------------------------------------------------


def test_reading_many_records_takes_100_keys_per_call(stack: Stack, table: OperatorTable) -> None:
    table.create_seat_class(KEY, 1000)
    for start in range(0, 150, 50):
        take(table, *(answer(f"r-{n}", quantity=1) for n in range(start, start + 50)))
    table = OperatorTable(stack.faults.session.client("dynamodb"), stack.table_name)

    found = table.read_reservations([f"r-{n}" for n in range(0, 180)] + ["r-1"])

    assert sorted(found) == sorted(f"r-{n}" for n in range(150))
    assert found["r-7"].status is Outcome.CONFIRMED
    assert stack.faults.calls.count("BatchGetItem") == 2


def test_unprocessed_keys_are_asked_again(stack: Stack) -> None:
    table = OperatorTable(stack.dynamodb, stack.table_name)
    table.create_seat_class(KEY, 10)
    take(table, answer("r-1"), answer("r-2"))
    calls: list[str] = []

    def first_call_unprocessed(params: dict, **_: Any) -> Any:
        calls.append("BatchGetItem")
        if len(calls) > 1:
            return None  # the real call
        keys = [{"pk": {"S": f"RESERVATION#{rid}"}, "sk": {"S": "RESERVATION"}} for rid in ("r-1", "r-2")]
        return FakeHttpResponse(200), {
            "Responses": {stack.table_name: []},
            "UnprocessedKeys": {stack.table_name: {"Keys": keys, "ConsistentRead": True}},
        }

    stack.faults.session.events.register("before-call.dynamodb.BatchGetItem", first_call_unprocessed)
    slept: list[float] = []
    table = OperatorTable(stack.faults.session.client("dynamodb"), stack.table_name, sleep=slept.append)

    found = table.read_reservations(["r-1", "r-2"])

    assert sorted(found) == ["r-1", "r-2"]
    assert (len(calls), len(slept)) == (2, 1)


def test_keys_that_stay_unprocessed_are_a_retryable_error(stack: Stack) -> None:
    def always_unprocessed(params: dict, **_: Any) -> Any:
        keys = [{"pk": {"S": "RESERVATION#r-1"}, "sk": {"S": "RESERVATION"}}]
        return FakeHttpResponse(200), {"Responses": {}, "UnprocessedKeys": {stack.table_name: {"Keys": keys}}}

    stack.faults.session.events.register("before-call.dynamodb.BatchGetItem", always_unprocessed)
    table = OperatorTable(stack.faults.session.client("dynamodb"), stack.table_name, sleep=lambda _: None)

    with pytest.raises(RetryableError, match="unprocessed"):
        table.read_reservations(["r-1"])


def test_a_throttled_batch_read_is_retryable(stack: Stack) -> None:
    stack.faults.fail("dynamodb.BatchGetItem", "ProvisionedThroughputExceededException")
    table = OperatorTable(stack.faults.session.client("dynamodb"), stack.table_name)
    with pytest.raises(RetryableError):
        table.read_reservations(["r-1"])


# --- change_status: conditional status changes + guarded inventory + counters -------------------


def transition(table: OperatorTable, reservation_id: str, to: Outcome) -> Transition:
    return Transition(record(table, reservation_id), to)


def commit(table: OperatorTable, *transitions: Transition, now: int = NOW, capacity: int | None = 10):
    return table.change_status(
        KEY, list(transitions), now=now, capacity=capacity, release_expires_at=NOW + 77
    )


def test_confirming_a_hold_moves_held_to_sold_and_leaves_the_index(
    stack: Stack, table: OperatorTable
) -> None:
    table.create_seat_class(KEY, 10)
    take(table, held("h-1", quantity=3))

    refused = commit(table, transition(table, "h-1", Outcome.CONFIRMED), capacity=None)

    assert refused is None
    item = table.read_inventory(KEY)
    assert item is not None and (item.available, item.held, item.sold) == (7, 0, 3)
    stored = raw_record(stack, "h-1")
    assert stored["status"] == {"S": "CONFIRMED"}
    assert stored["outcome"] == {"S": "HELD"}  # the original answer is kept
    assert "gsi1pk" not in stored and "gsi1sk" not in stored
    assert "status_changed_at" in stored
    assert "expires_at" not in stored


def test_a_changed_status_refuses_the_change_and_returns_the_record_as_it_is(table: OperatorTable) -> None:
    table.create_seat_class(KEY, 10)
    take(table, held("h-1"), held("h-2"))
    stale = transition(table, "h-1", Outcome.CONFIRMED)
    assert commit(table, transition(table, "h-1", Outcome.CANCELLED)) is None

    refused = commit(table, stale, transition(table, "h-2", Outcome.CONFIRMED))

    assert refused is not None
    assert set(refused.records) == {"h-1"}
    current = refused.records["h-1"]
    assert current is not None and current.status is Outcome.CANCELLED
    assert record(table, "h-2").status is Outcome.HELD  # nothing of the transaction was written


def test_a_hold_that_ran_out_cannot_be_confirmed_or_cancelled(table: OperatorTable) -> None:
    table.create_seat_class(KEY, 10)
    take(table, held("h-1", expires_at=NOW))

    for to in (Outcome.CONFIRMED, Outcome.CANCELLED):
        refused = commit(table, transition(table, "h-1", to), now=NOW)
        assert refused is not None and "h-1" in refused.records


def test_a_hold_that_did_not_run_out_cannot_be_expired(table: OperatorTable) -> None:
    table.create_seat_class(KEY, 10)
    take(table, held("h-1", expires_at=NOW + 1))

    refused = commit(table, transition(table, "h-1", Outcome.EXPIRED), now=NOW)

    assert refused is not None and "h-1" in refused.records


def test_a_record_that_is_gone_is_reported_as_none(stack: Stack, table: OperatorTable) -> None:
    table.create_seat_class(KEY, 10)
    take(table, held("h-1"))
    stale = transition(table, "h-1", Outcome.CONFIRMED)
    stack.dynamodb.delete_item(
        TableName=stack.table_name, Key={"pk": {"S": "RESERVATION#h-1"}, "sk": {"S": "RESERVATION"}}
    )

    refused = commit(table, stale, capacity=None)

    assert refused is not None and refused.records == {"h-1": None}


def test_cancelling_a_sale_gives_seats_back_and_keeps_the_ledger(stack: Stack, table: OperatorTable) -> None:
    table.create_seat_class(KEY, 10)
    take(table, answer("r-1", quantity=4))

    assert commit(table, transition(table, "r-1", Outcome.CANCELLED)) is None

    item = table.read_inventory(KEY)
    assert item is not None and (item.available, item.sold) == (10, 0)
    assert raw_record(stack, "r-1")["status"] == {"S": "CANCELLED"}
    assert "expires_at" not in raw_record(stack, "r-1")


def test_cancelling_a_hold_gives_seats_back_and_starts_the_ttl(stack: Stack, table: OperatorTable) -> None:
    table.create_seat_class(KEY, 10)
    take(table, held("h-1", quantity=4))

    assert commit(table, transition(table, "h-1", Outcome.CANCELLED)) is None

    item = table.read_inventory(KEY)
    assert item is not None and (item.available, item.held) == (10, 0)
    assert raw_record(stack, "h-1")["expires_at"] == {"N": str(NOW + 77)}
    assert "gsi1pk" not in raw_record(stack, "h-1")


def test_a_record_written_before_statuses_existed_can_be_cancelled(
    stack: Stack, table: OperatorTable
) -> None:
    table.create_seat_class(KEY, 10)
    take(table, answer("r-1", quantity=2))
    stack.dynamodb.update_item(
        TableName=stack.table_name,
        Key={"pk": {"S": "RESERVATION#r-1"}, "sk": {"S": "RESERVATION"}},
        UpdateExpression="REMOVE #s, request_type",
        ExpressionAttributeNames={"#s": "status"},
    )
    legacy = record(table, "r-1")
    assert (legacy.status, legacy.answer.request_type) == (Outcome.CONFIRMED, RequestType.RESERVE)

    assert commit(table, Transition(legacy, Outcome.CANCELLED)) is None
    assert record(table, "r-1").status is Outcome.CANCELLED
    refused = commit(table, Transition(legacy, Outcome.CANCELLED))
    assert refused is not None and "r-1" in refused.records  # and only once


def test_a_capacity_other_than_assumed_refuses_and_returns_the_item(table: OperatorTable) -> None:
    table.create_seat_class(KEY, 10)
    take(table, answer("r-1"))

    refused = commit(table, transition(table, "r-1", Outcome.CANCELLED), capacity=12)

    assert refused is not None and refused.inventory_refused and refused.records == {}
    assert refused.inventory is not None and refused.inventory.capacity == 10


def test_giving_back_more_than_was_sold_is_refused(stack: Stack, table: OperatorTable) -> None:
    table.create_seat_class(KEY, 10)
    take(table, answer("r-1", quantity=2))
    stack.dynamodb.update_item(  # a broken item: the sale is not in `sold`
        TableName=stack.table_name,
        Key={"pk": {"S": "EVENT#e-1"}, "sk": {"S": "CLASS#GA"}},
        UpdateExpression="SET sold = :zero, available = :ten",
        ExpressionAttributeValues={":zero": {"N": "0"}, ":ten": {"N": "10"}},
    )

    refused = commit(table, transition(table, "r-1", Outcome.CANCELLED))

    assert refused is not None and refused.inventory_refused and refused.records == {}
    assert record(table, "r-1").status is Outcome.CONFIRMED


def test_a_missing_inventory_item_refuses_a_status_change(stack: Stack, table: OperatorTable) -> None:
    table.create_seat_class(KEY, 10)
    take(table, held("h-1"))
    stack.dynamodb.delete_item(
        TableName=stack.table_name, Key={"pk": {"S": "EVENT#e-1"}, "sk": {"S": "CLASS#GA"}}
    )

    refused = commit(table, transition(table, "h-1", Outcome.CONFIRMED), capacity=None)

    assert refused is not None and refused.inventory_refused and refused.inventory is None


def test_releases_take_the_seats_off_the_customers_counter(stack: Stack, table: OperatorTable) -> None:
    table.create_seat_class(KEY, 10, max_per_customer=6)
    take(table, answer("r-1", quantity=2), held("h-1", quantity=3), limit=6)
    assert counter(stack, "c-1") == 5

    assert (
        commit(
            table, transition(table, "r-1", Outcome.CANCELLED), transition(table, "h-1", Outcome.CANCELLED)
        )
        is None
    )

    assert counter(stack, "c-1") == 0


def test_a_counter_lower_than_its_seats_refuses_the_release(stack: Stack, table: OperatorTable) -> None:
    table.create_seat_class(KEY, 10, max_per_customer=6)
    take(table, answer("r-1", quantity=2), limit=6)
    stack.dynamodb.update_item(
        TableName=stack.table_name,
        Key={"pk": {"S": "CUSTOMER#e-1#GA#c-1"}, "sk": {"S": "COUNTER"}},
        UpdateExpression="SET seats = :one",
        ExpressionAttributeValues={":one": {"N": "1"}},
    )

    refused = commit(table, transition(table, "r-1", Outcome.CANCELLED))

    assert refused is not None and refused.counters_refused == frozenset({"c-1"})


# --- the sweeper: index queries, expiry into the outbox, out of it -----------------------------------


def test_an_expiry_moves_the_record_into_the_outbox(stack: Stack, table: OperatorTable) -> None:
    table.create_seat_class(KEY, 10)
    take(table, held("h-1", quantity=3, expires_at=NOW))

    assert commit(table, transition(table, "h-1", Outcome.EXPIRED), now=NOW) is None

    item = table.read_inventory(KEY)
    assert item is not None and (item.available, item.held) == (10, 0)
    stored = raw_record(stack, "h-1")
    assert stored["status"] == {"S": "EXPIRED"}
    assert stored["gsi1pk"] == {"S": f"EXPIRED#{hold_shard('h-1')}"}
    assert record(table, "h-1").awaiting_publication
    assert [r.reservation_id for r in table.find_unpublished_expiries(10)] == ["h-1"]
    assert table.find_expired_holds(NOW, 10) == []


def test_taking_an_expiry_out_of_the_outbox_happens_once(stack: Stack, table: OperatorTable) -> None:
    table.create_seat_class(KEY, 10)
    take(table, held("h-1", expires_at=NOW))
    commit(table, transition(table, "h-1", Outcome.EXPIRED), now=NOW)
    [pending] = table.find_unpublished_expiries(10)

    assert table.mark_expiries_published([pending], expires_at=NOW + 5) == 1
    assert table.mark_expiries_published([pending], expires_at=NOW + 6) == 0

    stored = raw_record(stack, "h-1")
    assert "gsi1pk" not in stored and stored["expires_at"] == {"N": str(NOW + 5)}
    assert table.find_unpublished_expiries(10) == []


def test_the_index_finds_exactly_the_holds_due_in_every_shard(table: OperatorTable) -> None:
    table.create_seat_class(KEY, 1000)
    due = [held(f"h-{n}", quantity=1, expires_at=NOW - n) for n in range(40)]
    later = [held(f"l-{n}", quantity=1, expires_at=NOW + 1) for n in range(10)]
    take(table, *due, *later)
    assert len({hold_shard(o.reservation_id) for o in due}) == HOLD_SHARDS
    assert commit(table, transition(table, "h-0", Outcome.CONFIRMED), now=NOW - 1, capacity=None) is None

    found = table.find_expired_holds(NOW, 100)

    assert sorted(r.reservation_id for r in found) == sorted(f"h-{n}" for n in range(1, 40))
    assert all(r.status is Outcome.HELD and r.hold_expires_at is not None for r in found)


def test_the_index_query_stops_at_the_limit_across_shards(table: OperatorTable) -> None:
    table.create_seat_class(KEY, 1000)
    take(table, *(held(f"h-{n}", quantity=1, expires_at=NOW - 1) for n in range(30)))

    assert len(table.find_expired_holds(NOW, 10)) == 10
    assert len(table.find_expired_holds(NOW, 29)) == 29
    assert len(table.find_expired_holds(NOW, 100)) == 30


def test_a_throttled_index_query_is_retryable(stack: Stack) -> None:
    stack.faults.fail("dynamodb.Query", "ThrottlingException")
    table = OperatorTable(stack.faults.session.client("dynamodb"), stack.table_name)
    with pytest.raises(RetryableError):
        table.find_expired_holds(NOW, 10)


# --- the operator's conditional updates --------------------------------------------------------------


def test_closing_opening_scheduling_and_limiting_bump_the_version(table: OperatorTable) -> None:
    table.create_seat_class(KEY, 10)

    closed = table.set_sale_status(KEY, SaleStatus.CLOSED)
    scheduled = table.set_sale_window(KEY, NOW, NOW + 3600)
    limited = table.set_max_per_customer(KEY, 4)
    opened = table.set_sale_status(KEY, SaleStatus.OPEN)

    assert closed.sale_status is SaleStatus.CLOSED and closed.version == 1
    assert (scheduled.sale_starts_at, scheduled.sale_ends_at, scheduled.version) == (NOW, NOW + 3600, 2)
    assert (limited.max_per_customer, limited.version) == (4, 3)
    assert opened.sale_status is SaleStatus.OPEN and opened.version == 4
    assert table.read_inventory(KEY) == opened


def test_a_window_and_a_limit_can_be_removed(table: OperatorTable) -> None:
    table.create_seat_class(KEY, 10, max_per_customer=2, sale_starts_at=NOW, sale_ends_at=NOW + 9)

    only_start = table.set_sale_window(KEY, NOW + 1, None)
    cleared = table.set_sale_window(KEY, None, None)
    unlimited = table.set_max_per_customer(KEY, None)

    assert (only_start.sale_starts_at, only_start.sale_ends_at) == (NOW + 1, None)
    assert (cleared.sale_starts_at, cleared.sale_ends_at) == (None, None)
    assert unlimited.max_per_customer is None


@pytest.mark.parametrize(
    "change",
    [
        lambda t: t.set_sale_status(KEY, SaleStatus.CLOSED),
        lambda t: t.set_sale_window(KEY, NOW, None),
        lambda t: t.set_max_per_customer(KEY, 2),
        lambda t: t.change_capacity(KEY, 5),
        lambda t: t.change_capacity(KEY, -5),
        lambda t: t.set_capacity(KEY, 5),
    ],
)
def test_an_operator_change_of_a_missing_class_is_refused_and_creates_nothing(
    table: OperatorTable, change
) -> None:
    with pytest.raises(UnknownSeatClass, match="event 'e-1' has no seat class 'GA'"):
        change(table)
    assert table.get_event("e-1") == []


def test_adding_and_removing_capacity_keeps_the_invariant(table: OperatorTable) -> None:
    table.create_seat_class(KEY, 10)
    take(table, answer("r-1", quantity=3), held("h-1", quantity=2))

    grown = table.change_capacity(KEY, 5)
    shrunk = table.change_capacity(KEY, -10)

    assert (grown.capacity, grown.available) == (15, 10)
    assert (shrunk.capacity, shrunk.available, shrunk.held, shrunk.sold) == (5, 0, 2, 3)


def test_capacity_never_drops_below_sold_plus_held(table: OperatorTable) -> None:
    table.create_seat_class(KEY, 10)
    take(table, answer("r-1", quantity=3), held("h-1", quantity=2))

    with pytest.raises(InventoryChangeRefused, match=r"only 5 available \(3 sold, 2 held, capacity 10\)"):
        table.change_capacity(KEY, -6)
    with pytest.raises(InventoryChangeRefused, match="3 sold and 2 held"):
        table.set_capacity(KEY, 4)

    item = table.read_inventory(KEY)
    assert item is not None and (item.capacity, item.available) == (10, 5)


def test_setting_the_capacity_derives_available_from_it(table: OperatorTable) -> None:
    table.create_seat_class(KEY, 10)
    take(table, answer("r-1", quantity=3))

    assert dataclasses.astuple(table.set_capacity(KEY, 20))[2:5] == (20, 17, 3)
    assert dataclasses.astuple(table.set_capacity(KEY, 3))[2:5] == (3, 0, 3)


def test_setting_the_capacity_retries_when_another_change_moved_the_version(stack: Stack) -> None:
    # Given another operator change that lands between set_capacity's read and its write
    table = OperatorTable(stack.dynamodb, stack.table_name)
    table.create_seat_class(KEY, 10)
    interloper = [True]

    def add_five_seats_once(**_: Any) -> None:
        if interloper:
            interloper.pop()
            table.change_capacity(KEY, 5)

    stack.faults.session.events.register("after-call.dynamodb.GetItem", add_five_seats_once)
    racing = OperatorTable(stack.faults.session.client("dynamodb"), stack.table_name)

    # When the capacity is set to 12
    result = racing.set_capacity(KEY, 12)

    # Then the stale write was refused, the retry read the new version: no update is lost
    assert (result.capacity, result.available) == (12, 12)
    assert stack.faults.calls.count("GetItem") == 2


def test_a_reservation_record_shows_status_and_original_answer(table: OperatorTable) -> None:
    table.create_seat_class(KEY, 10)
    take(table, held("h-1", quantity=2))
    commit(table, transition(table, "h-1", Outcome.CONFIRMED), capacity=None)

    shown = record(table, "h-1")

    assert (shown.status, shown.answer.outcome, shown.hold_expires_at) == (
        Outcome.CONFIRMED,
        Outcome.HELD,
        NOW + 600,
    )
    assert shown.status_changed_at is not None
    assert table.get_reservation("h-1") == held("h-1", quantity=2)
    assert table.get_reservation_record("nope") is None


def test_an_expiry_a_transaction_is_writing_stays_in_the_outbox_for_the_next_run(stack: Stack) -> None:
    # On AWS an UpdateItem on a record that an ongoing transaction includes (a confirm or cancel of
    # the expired hold) gets TransactionConflictException; the sweeper's run must not fail on it.
    table = OperatorTable(stack.dynamodb, stack.table_name)
    table.create_seat_class(KEY, 10)
    for hold_id in ("h-1", "h-2"):
        take(table, held(hold_id, expires_at=NOW))
        commit(table, transition(table, hold_id, Outcome.EXPIRED), now=NOW)
    pending = sorted(table.find_unpublished_expiries(10), key=lambda r: r.reservation_id)
    stack.faults.fail(
        "dynamodb.UpdateItem", "TransactionConflictException", when=lambda params: b"h-1" in params["body"]
    )
    faulty = OperatorTable(stack.faults.session.client("dynamodb"), stack.table_name)

    assert faulty.mark_expiries_published(pending, expires_at=NOW + 5) == 1

    assert [r.reservation_id for r in table.find_unpublished_expiries(10)] == ["h-1"]
    assert table.mark_expiries_published(pending, expires_at=NOW + 6) == 1
    assert table.find_unpublished_expiries(10) == []


def test_an_expiry_stores_the_id_of_the_run_that_made_it_and_a_refusal_returns_it(
    table: OperatorTable,
) -> None:
    table.create_seat_class(KEY, 10)
    take(table, held("h-1", expires_at=NOW), held("h-2", expires_at=NOW))
    stale = transition(table, "h-1", Outcome.EXPIRED)

    assert commit(table, dataclasses.replace(stale, change_id="run-a"), now=NOW) is None
    refused = commit(table, dataclasses.replace(stale, change_id="run-b"), now=NOW)
    unstamped = transition(table, "h-2", Outcome.EXPIRED)

    assert refused is not None
    current = refused.records["h-1"]
    assert current is not None and current.awaiting_publication and current.last_change_id == "run-a"
    assert record(table, "h-1").last_change_id == "run-a"
    assert commit(table, unstamped, now=NOW) is None and record(table, "h-2").last_change_id is None
