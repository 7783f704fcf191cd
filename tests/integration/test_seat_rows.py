"""The mapped classes' DynamoDB expressions on moto (dal/seat_rows.py), each path: success,
condition failed, item missing; and the real handler selling chosen seats end to end."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from seat_inventory.dal.items import claim_key, row_key
from seat_inventory.dal.seat_rows import CLAIM_KEPT_SECONDS
from seat_inventory.logic.change_reservations import settle_transitions
from seat_inventory.logic.inventory_hints import InventoryHints
from seat_inventory.logic.seat_map import load_json
from seat_inventory.models import (
    Outcome,
    ReservationOutcome,
    ReservationRecord,
    RetryableError,
    SeatKey,
    SeatState,
    StoreInconsistency,
    Transition,
)
from seat_tools.operator_commands import OperatorTable
from seat_tools.operator_errors import EventAlreadyExists
from seat_tools.seat_map_commands import SaleRules
from seat_tools.seat_map_files import load_file
from tests.fakes import FakeClock
from tests.integration.conftest import FakeHttpResponse, Stack, sqs_event
from tests.writes import GroupWrite, commit_outcomes

KEY = SeatKey("e-1", "A")
MAP = load_json(
    json.dumps(
        {
            "classes": {"A": {}},
            "sections": [
                {"id": "S", "class": "A", "rows": [{"id": "R1", "seats": 6, "flags": {"blocked": [6]}}]}
            ],
        }
    )
)
THEATRE = Path(__file__).resolve().parents[2] / "examples" / "seat_maps" / "theatre.json"


@pytest.fixture
def table(stack: Stack) -> OperatorTable:
    table = OperatorTable(stack.dynamodb, stack.table_name)
    table.create_seat_map("e-1", MAP, SaleRules(max_per_customer=4))
    return table


def answer(rid: str, seats: tuple[str, ...], outcome: Outcome = Outcome.CONFIRMED) -> ReservationOutcome:
    return ReservationOutcome(
        reservation_id=rid,
        outcome=outcome,
        reason="why",
        event_id="e-1",
        seat_class="A",
        quantity=len(seats),
        customer_id="c-1",
        message_id=f"m-{rid}",
        hold_expires_at=2_000_000_000 if outcome is Outcome.HELD else None,
        seats=seats,
    )


def take(
    rid: str, positions: tuple[int, ...], *, row: str = "S-R1#0", limit: int | None = 4, **kw
) -> GroupWrite:
    seats = tuple(f"S-R1-{p}" for p in positions)
    return GroupWrite(
        key=KEY,
        outcomes=[answer(rid, seats, kw.pop("outcome", Outcome.CONFIRMED))],
        seats_taken=len(seats),
        rejection_expires_at=2_000_000_000,
        max_per_customer=limit,
        customer_seats={"c-1": len(seats)},
        now=1_800_000_000,
        rows={row: positions},
        **kw,
    )


def test_create_reads_back_and_is_never_replaced(table: OperatorTable) -> None:
    assert table.read_seat_map("e-1") == MAP
    assert table.read_seat_map("e-2") is None
    [row] = table.read_seat_rows(KEY).values()
    assert (row.row_id, row.first, row.size, row.available, row.max_per_customer) == ("S-R1#0", 1, 6, 5, 4)
    assert row.states == {6: SeatState.BLOCKED}
    with pytest.raises(EventAlreadyExists):
        table.create_seat_map("e-1", MAP, SaleRules())


def test_the_theatre_map_is_stored_compressed(stack: Stack) -> None:
    table = OperatorTable(stack.dynamodb, stack.table_name)
    theatre = load_file(str(THEATRE))
    table.create_seat_map("t", theatre, SaleRules())
    assert table.read_seat_map("t") == theatre
    rows = table.read_seat_rows(SeatKey("t", "STALLS"))
    assert sum(r.size for r in rows.values()) == len(theatre.classes["STALLS"].seats)


def test_take_success_condition_failed_and_item_missing(table: OperatorTable) -> None:
    assert commit_outcomes(table, take("r-1", (2, 3))) is None
    row = table.read_seat_rows(KEY, ["S-R1#0"])["S-R1#0"]
    assert row.states == {2: SeatState.SOLD, 3: SeatState.SOLD, 6: SeatState.BLOCKED}
    assert (row.available, row.held, row.sold) == (3, 0, 2)
    assert table.read_reservations(["r-1"])["r-1"].seats == ("S-R1-2", "S-R1-3")
    # Condition failed: a seat taken (and a blocked one): the row comes back as it is.
    refused = commit_outcomes(table, take("r-2", (3, 4)))
    assert refused is not None and refused.inventory_refused
    assert refused.rows["S-R1#0"] is not None and 3 in refused.rows["S-R1#0"].states  # type: ignore[union-attr]
    refused = commit_outcomes(table, take("r-2", (6,)))
    assert refused is not None and "S-R1#0" in refused.rows
    # The limit assumed is not the row's: refused.
    assert commit_outcomes(table, take("r-2", (4,), limit=None)) is not None
    # Item missing.
    missing = commit_outcomes(table, take("r-2", (1,), row="S-R9#0"))
    assert missing is not None and missing.rows == {"S-R9#0": None}
    # The record exists: the answer given comes back.
    again = commit_outcomes(table, take("r-1", (4, 5)))
    assert again is not None and again.already_recorded["r-1"].seats == ("S-R1-2", "S-R1-3")
    assert again.rows == {}
    # The customer's counter is at the limit (2 + 3 > 4).
    over = commit_outcomes(table, take("r-3", (1, 4, 5)))
    assert over is not None and over.customer_seats == {"c-1": 2}
    assert table.read_seat_rows(KEY, ["S-R1#0"])["S-R1#0"].available == 3


def test_claim_success_condition_failed_and_item_missing(stack: Stack) -> None:
    table = OperatorTable(stack.dynamodb, stack.table_name)
    now = 1_800_000_000.0
    # Item missing: the claim creates it, with its owner, end and TTL.
    assert table.claim(KEY, "7", "a", now=now, until=now + 0.5)
    item = stack.dynamodb.get_item(TableName=stack.table_name, Key=claim_key(KEY, "7"))["Item"]
    assert (item["owner"]["S"], float(item["until"]["N"])) == ("a", now + 0.5)
    assert int(item["expires_at"]["N"]) == int(now) + CLAIM_KEPT_SECONDS
    # Condition failed: another owner while the claim runs (its end included); nothing changes.
    assert not table.claim(KEY, "7", "b", now=now + 0.5, until=now + 1.0)
    item = stack.dynamodb.get_item(TableName=stack.table_name, Key=claim_key(KEY, "7"))["Item"]
    assert item["owner"]["S"] == "a"
    # Success: its owner renews it; once it ran out, another owner takes it.
    assert table.claim(KEY, "7", "a", now=now + 0.2, until=now + 0.7)
    assert not table.claim(KEY, "7", "b", now=now + 0.6, until=now + 1.1)
    assert table.claim(KEY, "7", "b", now=now + 0.701, until=now + 1.2)
    item = stack.dynamodb.get_item(TableName=stack.table_name, Key=claim_key(KEY, "7"))["Item"]
    assert item["owner"]["S"] == "b"
    # Another part, or another class, is another item.
    assert table.claim(KEY, "8", "a", now=now + 0.8, until=now + 1.3)
    assert table.claim(SeatKey("e-1", "B"), "7", "a", now=now + 0.8, until=now + 1.3)


def test_take_refused_when_the_sale_is_closed(stack: Stack) -> None:
    table = OperatorTable(stack.dynamodb, stack.table_name)
    table.create_seat_map("e-1", MAP, SaleRules(closed=True))
    refused = commit_outcomes(table, take("r-1", (1, 2), limit=None))
    assert refused is not None
    [row] = refused.rows.values()
    assert row is not None and row.sale_closed_reason(1_800_000_000) is not None


def _record(table: OperatorTable, rid: str) -> ReservationRecord:
    return table.read_reservations([rid])[rid]


def test_release_success_condition_failed_and_item_missing(table: OperatorTable) -> None:
    assert commit_outcomes(table, take("h-1", (1, 2), outcome=Outcome.HELD)) is None
    held = _record(table, "h-1")
    # Confirm: held -> sold.
    assert (
        table.change_status(
            KEY, [Transition(held, Outcome.CONFIRMED)], now=1, capacity=None, release_expires_at=9
        )
        is None
    )
    row = table.read_seat_rows(KEY, ["S-R1#0"])["S-R1#0"]
    assert row.states[1] is SeatState.SOLD and (row.held, row.sold) == (0, 2)
    sold = _record(table, "h-1")
    # Condition failed on the record (it is CONFIRMED now, not HELD): answered from the record,
    # the rows' refusal a consequence.
    refused = table.change_status(
        KEY, [Transition(held, Outcome.CANCELLED)], now=1, capacity=None, release_expires_at=9
    )
    assert refused is not None and not refused.inventory_refused
    assert refused.records["h-1"] is not None and refused.records["h-1"].status is Outcome.CONFIRMED  # type: ignore[union-attr]
    # Cancel the sale: the seats are free again.
    assert (
        table.change_status(
            KEY, [Transition(sold, Outcome.CANCELLED)], now=1, capacity=None, release_expires_at=9
        )
        is None
    )
    row = table.read_seat_rows(KEY, ["S-R1#0"])["S-R1#0"]
    assert row.states == {6: SeatState.BLOCKED} and (row.available, row.sold) == (5, 0)
    # A row whose seats are not in the state the record says, the record as read: inconsistent.
    assert commit_outcomes(table, take("r-5", (3,))) is None
    record = _record(table, "r-5")
    table._client.update_item(  # the seat freed behind the record's back
        TableName=table.table_name, Key=row_key(KEY, "S-R1#0"), UpdateExpression="REMOVE p3"
    )
    with pytest.raises(StoreInconsistency):
        table.change_status(
            KEY, [Transition(record, Outcome.CANCELLED)], now=1, capacity=None, release_expires_at=9
        )
    # Item missing: the row item of a recorded sale is gone.
    assert commit_outcomes(table, take("r-6", (4,))) is None
    record = _record(table, "r-6")
    table._client.delete_item(TableName=table.table_name, Key=row_key(KEY, "S-R1#0"))
    with pytest.raises(StoreInconsistency):
        table.change_status(
            KEY, [Transition(record, Outcome.CANCELLED)], now=1, capacity=None, release_expires_at=9
        )


def test_the_handler_sells_chosen_seats_and_names_those_taken(stack: Stack) -> None:
    OperatorTable(stack.dynamodb, stack.table_name).create_seat_map("e-1", MAP, SaleRules())
    stack.create_event("e-1", 10)  # a counted class beside the mapped one
    base = {"event_id": "e-1", "seat_class": "A", "customer_id": "c"}
    result = stack.invoke(
        sqs_event(
            {**base, "reservation_id": "r-1", "seats": ["S-R1-1", "S-R1-2"]},
            {**base, "reservation_id": "r-2", "seats": ["S-R1-2", "S-R1-3"]},
            {**base, "reservation_id": "r-3", "quantity": 3},
            {"event_id": "e-1", "customer_id": "c", "reservation_id": "g-1", "quantity": 2},
        )
    )
    assert result == {"batchItemFailures": []}
    by_id = {o["reservation_id"]: o for o in stack.outcomes()}
    assert by_id["r-1"]["outcome"] == "CONFIRMED" and by_id["r-1"]["seats"] == ["S-R1-1", "S-R1-2"]
    assert by_id["r-2"]["outcome"] == "SEATS_TAKEN" and by_id["r-2"]["seats"] == ["S-R1-2"]
    assert by_id["r-3"]["outcome"] == "CONFIRMED" and by_id["r-3"]["seats"] == ["S-R1-3", "S-R1-4", "S-R1-5"]
    assert by_id["g-1"]["outcome"] == "CONFIRMED" and "seats" not in by_id["g-1"]
    assert stack.inventory("e-1")["available"] == 8


def test_close_and_open_a_mapped_class_row_by_row(
    table: OperatorTable, monkeypatch: pytest.MonkeyPatch
) -> None:
    from seat_inventory.models import SaleStatus
    from seat_tools.operator_errors import UnknownSeatClass

    assert table.set_rows_sale_status(KEY, SaleStatus.CLOSED) == 1
    refused = commit_outcomes(table, take("r-1", (1,)))
    assert refused is not None and refused.rows["S-R1#0"].sale_status is SaleStatus.CLOSED  # type: ignore[union-attr]
    assert table.set_rows_sale_status(KEY, SaleStatus.OPEN) == 1
    assert commit_outcomes(table, take("r-1", (1,))) is None
    with pytest.raises(UnknownSeatClass):
        table.set_rows_sale_status(SeatKey("e-1", "NOPE"), SaleStatus.CLOSED)
    # Item missing: a row read a moment ago is gone when its update comes (condition failed).
    rows = table.read_seat_rows(KEY)
    ghost = dataclasses.replace(rows["S-R1#0"], row_id="S-R9#0")
    monkeypatch.setattr(table, "read_seat_rows", lambda key, row_ids=None: {**rows, "S-R9#0": ghost})
    with pytest.raises(StoreInconsistency):
        table.set_rows_sale_status(KEY, SaleStatus.CLOSED)


def test_row_items_left_unprocessed_are_asked_again_then_a_retryable_error(
    stack: Stack, table: OperatorTable
) -> None:
    # Given DynamoDB leaving the row item unprocessed on the first `unprocessed_calls` BatchGetItems
    calls: list[int] = []
    unprocessed_calls = [1]

    def unprocessed(params: dict, **_: Any) -> Any:
        calls.append(1)
        if len(calls) > unprocessed_calls[0]:
            return None  # the real call
        keys = [row_key(KEY, "S-R1#0")]
        return FakeHttpResponse(200), {"Responses": {}, "UnprocessedKeys": {stack.table_name: {"Keys": keys}}}

    stack.faults.session.events.register("before-call.dynamodb.BatchGetItem", unprocessed)
    slept: list[float] = []
    faulty = OperatorTable(stack.faults.session.client("dynamodb"), stack.table_name, sleep=slept.append)

    # Then the key is asked again after a pause, and the row is read
    assert list(faulty.read_seat_rows(KEY, ["S-R1#0"])) == ["S-R1#0"]
    assert (len(calls), len(slept)) == (2, 1)

    # and a key that stays unprocessed is a retryable error, not a row missing
    calls.clear()
    unprocessed_calls[0] = 1_000
    with pytest.raises(RetryableError, match="unprocessed"):
        faulty.read_seat_rows(KEY, ["S-R1#0"])


def test_two_records_read_apart_that_claim_one_seat_are_settled_one_transaction_each(
    table: OperatorTable,
) -> None:
    """A sweeper reads its holds shard by shard: a hold read in one shard can be released, and its
    seat held again, before the second hold is read in another. Both claim the seat; DynamoDB
    refuses a transaction naming the seat twice as invalid, so they go in two transactions and the
    stale record's guard answers it."""
    assert commit_outcomes(table, take("h-1", (2,), outcome=Outcome.HELD)) is None
    stale = _record(table, "h-1")
    assert (
        table.change_status(
            KEY, [Transition(stale, Outcome.CANCELLED)], now=1, capacity=None, release_expires_at=9
        )
        is None
    )
    assert commit_outcomes(table, take("h-2", (2, 3), outcome=Outcome.HELD)) is None
    current = _record(table, "h-2")
    result = settle_transitions(
        KEY,
        [Transition(stale, Outcome.EXPIRED), Transition(current, Outcome.EXPIRED)],
        now=2_000_000_001,  # both holds ran out
        store=table,
        clock=FakeClock(),
        hints=InventoryHints(),
        release_ttl_seconds=60,
    )
    assert result.error is None
    assert [t.record.reservation_id for t in result.committed] == ["h-2"]
    assert result.superseded["h-1"] is not None and result.superseded["h-1"].status is Outcome.CANCELLED  # type: ignore[union-attr]
    row = table.read_seat_rows(KEY, ["S-R1#0"])["S-R1#0"]
    assert row.states == {6: SeatState.BLOCKED} and (row.available, row.held) == (5, 0)
