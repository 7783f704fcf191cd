"""Capacity pools and admission tokens on a mapped seat class, on moto (docs/guides/pools.md,
docs/guides/admission.md, docs/guides/seat-maps.md): every new expression path of a mapped take (the row items'
guard on the class's pools and admission rule, the pool's take, the token's use: success,
condition failed, item missing), the give-back to the pool a mapped record names, the operator's
admission switch on the row items, and the handler selling a pool shared by a mapped and a
counted class exactly."""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from seat_inventory.models import (
    Outcome,
    ReservationOutcome,
    SaleStatus,
    SeatKey,
    StoreInconsistency,
    TokenUse,
    Transition,
    row_item_of,
)
from seat_tools.cli.main import cli
from seat_tools.operator_commands import OperatorTable
from seat_tools.operator_errors import UnknownSeatClass
from seat_tools.seat_map_commands import SaleRules
from seat_tools.seat_map_files import load_file
from tests.integration.conftest import Stack, sqs_event
from tests.writes import GroupWrite, commit_outcomes

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "seat_maps"
TABLES = SeatKey("club", "TABLES")
NOW = int(time.time())


def answer(rid: str, seats: tuple[str, ...], outcome: Outcome = Outcome.CONFIRMED) -> ReservationOutcome:
    return ReservationOutcome(
        reservation_id=rid,
        outcome=outcome,
        reason="why",
        event_id=TABLES.event_id,
        seat_class=TABLES.seat_class,
        quantity=len(seats),
        customer_id="c-1",
        message_id=f"m-{rid}",
        seats=seats,
        hold_expires_at=NOW + 600 if outcome is Outcome.HELD else None,
    )


def take(
    rid: str, *seats: str, pools=("hall",), required: bool = False, token: str | None = None
) -> GroupWrite:
    rows: dict[str, list[int]] = {}
    for seat in seats:
        row, position = row_item_of(seat)
        rows.setdefault(row, []).append(position)
    return GroupWrite(
        TABLES,
        [answer(rid, seats)],
        seats_taken=len(seats),
        rejection_expires_at=0,
        now=NOW,
        rows={row: tuple(p) for row, p in rows.items()},
        pools=pools,
        admission_required=required,
        token_uses=[TokenUse(token, rid, NOW + 3600)] if token else (),
    )


def table_with(stack: Stack, *, pools=("hall",), hall: int = 3, required: bool = False) -> OperatorTable:
    table = OperatorTable(stack.dynamodb, stack.table_name)
    table.create_pool("club", "hall", hall)
    table.create_seat_map(
        "club", load_file(str(EXAMPLES / "club.csv")), SaleRules(pools=pools, admission_required=required)
    )
    return table


def hall(table: OperatorTable) -> tuple[int, int, int]:
    found = table.get_pool("club", "hall")
    assert found is not None and found.available + found.held + found.sold == found.capacity
    return found.available, found.held, found.sold


def free(table: OperatorTable, seat: str) -> bool:
    row, position = row_item_of(seat)
    return position not in table.read_seat_rows(TABLES, [row])[row].states


def test_a_mapped_take_comes_off_its_pool_and_the_record_names_it_and_gives_it_back(stack: Stack) -> None:
    table = table_with(stack)
    row = table.read_seat_rows(TABLES, ["A-R2#0"])["A-R2#0"]
    assert row.pools == ("hall",) and not row.admission_required

    assert commit_outcomes(table, take("r-1", "A-R2-3", "A-R2-4")) is None

    assert hall(table) == (1, 0, 2) and not free(table, "A-R2-3")
    record = table.read_reservations(["r-1"])["r-1"]
    assert record.pools == ("hall",)
    refused = table.change_status(
        TABLES, [Transition(record, Outcome.CANCELLED)], now=NOW, capacity=None, release_expires_at=NOW + 1
    )
    assert refused is None and hall(table) == (3, 0, 0) and free(table, "A-R2-3")


def test_a_pool_without_the_seats_refuses_the_whole_take(stack: Stack) -> None:
    table = table_with(stack, hall=1)

    refused = commit_outcomes(table, take("r-1", "A-R2-3", "A-R2-4"))

    assert refused is not None and not refused.rows and not refused.inventory_refused
    pool = refused.pools_refused["hall"]
    assert pool is not None and pool.available == 1
    assert free(table, "A-R2-3") and hall(table) == (1, 0, 0) and table.read_reservations(["r-1"]) == {}


def test_a_closed_pool_refuses_the_take(stack: Stack) -> None:
    table = table_with(stack)
    table.set_pool_status("club", "hall", SaleStatus.CLOSED)

    refused = commit_outcomes(table, take("r-1", "A-R2-3"))

    assert refused is not None
    pool = refused.pools_refused["hall"]
    assert pool is not None and pool.sale_status is SaleStatus.CLOSED and free(table, "A-R2-3")


def test_a_missing_pool_item_is_reported_as_none(stack: Stack) -> None:
    # The rows name a pool that has no item (created without the CLI's check).
    table = table_with(stack, pools=("ghost",))

    refused = commit_outcomes(table, take("r-1", "A-R2-3", pools=("ghost",)))

    assert refused is not None and refused.pools_refused == {"ghost": None} and free(table, "A-R2-3")


def test_the_rows_refuse_a_take_that_assumed_other_pools(stack: Stack) -> None:
    table = table_with(stack)

    refused = commit_outcomes(table, take("r-1", "A-R2-3", pools=()))

    assert refused is not None and refused.pools_refused == {}
    learned = refused.rows["A-R2#0"]
    assert learned is not None and learned.pools == ("hall",)
    assert hall(table) == (3, 0, 0)


def test_a_token_is_spent_with_the_mapped_seats_once(stack: Stack) -> None:
    table = table_with(stack, pools=(), required=True)

    assert commit_outcomes(table, take("r-1", "A-R2-3", pools=(), required=True, token="t-1")) is None
    replay = commit_outcomes(table, take("r-2", "A-R2-4", pools=(), required=True, token="t-1"))

    assert replay is not None and replay.tokens_used == {"t-1": "r-1"} and not replay.rows
    assert free(table, "A-R2-4")
    # The same reservation again (a redelivery) is no replay: its record answers it.
    again = commit_outcomes(table, take("r-1", "A-R2-3", pools=(), required=True, token="t-1"))
    assert again is not None and set(again.already_recorded) == {"r-1"} and again.tokens_used == {}


def test_the_rows_refuse_a_take_that_assumed_no_token_was_required(stack: Stack) -> None:
    table = table_with(stack, pools=(), required=True)

    refused = commit_outcomes(table, take("r-1", "A-R2-3", pools=()))

    assert refused is not None
    learned = refused.rows["A-R2#0"]
    assert learned is not None and learned.admission_required and free(table, "A-R2-3")


def test_the_admission_switch_sets_every_row_item_and_refuses_a_missing_class(stack: Stack) -> None:
    table = table_with(stack, pools=())

    assert table.set_rows_admission(TABLES, True) == len(table.read_seat_rows(TABLES))
    assert all(row.admission_required for row in table.read_seat_rows(TABLES).values())
    table.set_rows_admission(TABLES, False)
    assert not any(row.admission_required for row in table.read_seat_rows(TABLES).values())
    with pytest.raises(UnknownSeatClass):
        table.set_rows_admission(SeatKey("club", "NONE"), True)


def test_the_admission_switch_on_a_row_item_that_vanished_is_a_store_inconsistency(
    stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The condition `attribute_exists(pk)` fails on a row item listed but gone (never created).
    table = table_with(stack, pools=())
    rows = table.read_seat_rows(TABLES)
    ghost = dataclasses.replace(next(iter(rows.values())), row_id="Z-R9#0")
    monkeypatch.setattr(table, "read_seat_rows", lambda key, row_ids=None: {**rows, "Z-R9#0": ghost})

    with pytest.raises(StoreInconsistency, match="Z-R9#0 vanished while its admission_required was set"):
        table.set_rows_admission(TABLES, True)
    stored = stack.dynamodb.get_item(
        TableName=stack.table_name, Key={"pk": {"S": "SEATROW#club#TABLES#Z"}, "sk": {"S": "ROW#Z-R9#0"}}
    )
    assert "Item" not in stored


def test_the_cli_puts_a_mapped_class_in_a_pool_and_the_handler_sells_it_exactly(
    stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TABLE_NAME", stack.table_name)
    runner = CliRunner()
    club = str(EXAMPLES / "club.csv")
    assert runner.invoke(cli, ["event", "pool", "create", "club", "hall", "--capacity", "3"]).exit_code == 0
    unknown = runner.invoke(cli, ["event", "create", "club", "--seat-map", club, "--pools", "nope"])
    assert unknown.exit_code == 2 and "has no pool 'nope'" in unknown.output
    created = runner.invoke(cli, ["event", "create", "club", "--seat-map", club, "--pools", "hall"])
    assert created.exit_code == 0, created.output
    counted = runner.invoke(cli, ["event", "create", "club", "--capacity", "5", "--pools", "hall"])
    assert counted.exit_code == 0, counted.output
    shown_json = json.loads(runner.invoke(cli, ["event", "show", "club", "--output", "json"]).output)
    assert [c.get("pools") for c in shown_json["mapped_classes"]] == [["hall"]]
    shown = runner.invoke(cli, ["event", "show", "club"])
    assert [line.split()[-1] for line in shown.output.splitlines() if line.startswith("hall ")] == [
        "GA,TABLES"
    ]

    body = {"event_id": "club", "customer_id": "c"}
    stack.invoke(
        sqs_event(
            {**body, "reservation_id": "t-1", "seat_class": "TABLES", "quantity": 2},
            {**body, "reservation_id": "g-1", "quantity": 1},
        )
    )
    stack.invoke(sqs_event({**body, "reservation_id": "t-2", "seat_class": "TABLES", "quantity": 1}))

    outcomes = {o["reservation_id"]: o for o in stack.outcomes()}
    assert {r: o["outcome"] for r, o in outcomes.items()} == {
        "t-1": "CONFIRMED",
        "g-1": "CONFIRMED",
        "t-2": "SOLD_OUT",
    }
    assert outcomes["t-2"]["reason"] == "requested 1 seat(s), 0 left in pool hall"
    table = OperatorTable(stack.dynamodb, stack.table_name)
    assert hall(table) == (0, 0, 3)


# --- a sharded pool: the take writes item 0, seats moved into it; the pools read whole ----------


def sharded_table(stack: Stack) -> OperatorTable:
    table = OperatorTable(stack.dynamodb, stack.table_name)
    table.create_pool("club", "hall", 8, shards=4)  # 2 seats on each item
    table.create_seat_map("club", load_file(str(EXAMPLES / "club.csv")), SaleRules(pools=("hall",)))
    return table


def item_seats(table: OperatorTable) -> dict[int, int]:
    whole = table.read_pools("club", ["hall"])["hall"]
    return {s.shard: s.available for s in whole.shards}


def test_a_mapped_take_moves_seats_into_pool_item_0_from_donors(stack: Stack) -> None:
    table = sharded_table(stack)
    write = take("r-1", "A-R2-1", "A-R2-2", "A-R2-3")
    moved = GroupWrite(**{**_fields(write), "pool_moves": {"hall": {1: 1}}})

    assert commit_outcomes(table, write) is not None  # item 0 alone has 2 of the 3
    assert commit_outcomes(table, moved) is None

    assert item_seats(table) == {0: 0, 1: 1, 2: 2, 3: 2}
    whole = table.read_pools("club", ["hall"])["hall"]
    assert whole.complete and (whole.capacity, whole.available, whole.sold) == (8, 5, 3)
    assert table.read_reservations(["r-1"])["r-1"].pools == ("hall",)


def test_a_donor_without_the_seats_or_missing_refuses_the_mapped_take(stack: Stack) -> None:
    table = sharded_table(stack)
    write = take("r-1", "A-R2-1", "A-R2-2", "A-R2-3", "A-R2-4", "A-R2-5")
    short = GroupWrite(**{**_fields(write), "pool_moves": {"hall": {1: 3}}})
    missing = GroupWrite(**{**_fields(write), "pool_moves": {"hall": {7: 3}}})

    refused = commit_outcomes(table, short)
    assert refused is not None and set(refused.pools_refused) == {"hall"}
    refused = commit_outcomes(table, missing)
    assert refused is not None and set(refused.pools_refused) == {"hall"}
    assert item_seats(table) == {0: 2, 1: 2, 2: 2, 3: 2} and free(table, "A-R2-1")


def test_read_pools_reads_each_pool_whole_and_leaves_a_missing_one_out(stack: Stack) -> None:
    table = sharded_table(stack)
    table.create_pool("club", "bar", 3)

    found = table.read_pools("club", ["hall", "bar", "nope"])

    assert sorted(found) == ["bar", "hall"]
    assert found["hall"].complete and found["hall"].available == 8 and len(found["hall"].shards) == 4
    assert found["bar"].complete and found["bar"].available == 3


def _fields(write: GroupWrite) -> dict:
    return {name: getattr(write, name) for name in write.__dataclass_fields__}


def test_the_handler_moves_seats_into_item_0_then_answers_sold_out_from_the_whole_pool(stack: Stack) -> None:
    table = sharded_table(stack)
    body = {"event_id": "club", "seat_class": "TABLES", "customer_id": "c"}

    stack.invoke(sqs_event({**body, "reservation_id": "t-1", "quantity": 5}))
    stack.invoke(sqs_event({**body, "reservation_id": "t-2", "quantity": 4}))

    outcomes = {o["reservation_id"]: o for o in stack.outcomes()}
    assert outcomes["t-1"]["outcome"] == "CONFIRMED"
    assert outcomes["t-2"]["outcome"] == "SOLD_OUT"
    assert outcomes["t-2"]["reason"] == "requested 4 seat(s), 3 left in pool hall"
    whole = table.read_pools("club", ["hall"])["hall"]
    assert (whole.capacity, whole.available, whole.sold) == (8, 3, 5)


# --- orders (docs/guides/orders.md): a mapped line's pools and token in the order's one transaction ----


def counted_take(quantity: int) -> GroupWrite:
    """An order's counted line (GA, in the hall); the order's record is on its mapped line."""
    ga = SeatKey("club", "GA")
    return GroupWrite(ga, [], seats_taken=quantity, rejection_expires_at=0, now=NOW, pools=("hall",))


def test_an_orders_mapped_and_counted_lines_take_their_shared_pool_once_with_the_token(stack: Stack) -> None:
    table = table_with(stack, hall=5, required=True)
    table.create_seat_class(SeatKey("club", "GA"), 5, pools=["hall"])
    mapped = take("o-1", "A-R2-3", "A-R2-4", required=True, token="t-1")

    assert commit_outcomes(table, [mapped, counted_take(2)]) is None

    assert hall(table) == (1, 0, 4) and not free(table, "A-R2-3")
    stored = stack.dynamodb.get_item(
        TableName=stack.table_name, Key={"pk": {"S": "ADMISSION#t-1"}, "sk": {"S": "TOKEN"}}
    )["Item"]
    assert stored["reservation_id"] == {"S": "o-1"}


def test_an_order_is_refused_whole_by_its_pool_by_a_replayed_token_and_by_a_missing_pool(
    stack: Stack,
) -> None:
    table = table_with(stack, hall=3, required=True)
    table.create_seat_class(SeatKey("club", "GA"), 5, pools=["hall"])
    commit_outcomes(table, take("o-0", "B-R1-1", required=True, token="t-1"))

    short = commit_outcomes(
        table, [take("o-1", "A-R2-3", "A-R2-4", required=True, token="t-2"), counted_take(1)]
    )
    replay = commit_outcomes(table, [take("o-2", "A-R2-3", required=True, token="t-1"), counted_take(1)])

    assert short is not None and set(short.pools_refused) == {"hall"}
    assert replay is not None and replay.tokens_used == {"t-1": "o-0"}
    assert replay.parts[0] is not None and replay.parts[0].tokens_used == {"t-1": "o-0"}
    assert hall(table) == (2, 0, 1) and free(table, "A-R2-3")


def test_an_order_whose_mapped_line_names_a_missing_pool_reports_it_as_none(stack: Stack) -> None:
    table = table_with(stack, pools=("ghost",))
    table.create_seat_class(SeatKey("club", "GA"), 5, pools=["hall"])

    refused = commit_outcomes(table, [take("o-1", "A-R2-3", pools=("ghost",)), counted_take(1)])

    assert refused is not None and refused.pools_refused == {"ghost": None} and free(table, "A-R2-3")


def test_the_handler_sells_an_order_of_a_mapped_and_a_counted_line_from_their_pool(stack: Stack) -> None:
    table = table_with(stack, hall=4)
    table.create_seat_class(SeatKey("club", "GA"), 5, pools=["hall"])
    lines = [{"seat_class": "GA", "quantity": 1}, {"seat_class": "TABLES", "quantity": 2}]
    body = {"event_id": "club", "customer_id": "c", "lines": lines}

    stack.invoke(sqs_event({**body, "reservation_id": "o-1"}))
    stack.invoke(sqs_event({**body, "reservation_id": "o-2"}))

    outcomes = {o["reservation_id"]: o for o in stack.outcomes()}
    assert outcomes["o-1"]["outcome"] == "CONFIRMED"
    assert outcomes["o-2"]["outcome"] == "SOLD_OUT"
    assert outcomes["o-2"]["reason"] == "line 2 (TABLES): requested 2 seat(s), 0 left in pool hall"
    assert hall(table) == (1, 0, 3)
