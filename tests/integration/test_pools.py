"""Capacity pools on moto (docs/guides/pools.md): every new DynamoDB expression path (the pool's take and
its give-back: success, condition failed, item missing; the class's guard on its pools), the
operator's pool commands exactly once, the handler end to end, and the CLI."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from seat_inventory.models import Outcome, ReservationOutcome, SaleStatus, SeatKey, Transition
from seat_tools.cli.main import cli
from seat_tools.operator_commands import OperatorTable
from seat_tools.operator_errors import EventAlreadyExists, InventoryChangeRefused
from tests.integration.conftest import Stack, sqs_event
from tests.writes import GroupWrite, commit_outcomes

SAT = SeatKey("e-1", "SAT")
PASS = SeatKey("e-1", "PASS")
NOW = 1_800_000_000


def answer(reservation_id: str, key: SeatKey, quantity: int, outcome: Outcome = Outcome.CONFIRMED):
    return ReservationOutcome(
        reservation_id=reservation_id,
        outcome=outcome,
        reason="why",
        event_id=key.event_id,
        seat_class=key.seat_class,
        quantity=quantity,
        customer_id="c-1",
        message_id=f"m-{reservation_id}",
        hold_expires_at=NOW + 600 if outcome is Outcome.HELD else None,
    )


def take(rid: str, key: SeatKey, quantity: int, pools=("weekend",), outcome=Outcome.CONFIRMED) -> GroupWrite:
    return GroupWrite(
        key,
        [answer(rid, key, quantity, outcome)],
        seats_taken=quantity,
        rejection_expires_at=0,
        now=NOW,
        pools=pools,
    )


@pytest.fixture
def table(stack: Stack) -> OperatorTable:
    table = OperatorTable(stack.dynamodb, stack.table_name)
    table.create_pool("e-1", "weekend", 5)
    table.create_seat_class(SAT, 4, pools=["weekend"])
    table.create_seat_class(PASS, 4, pools=["weekend"])
    return table


def counts(table: OperatorTable, pool: str = "weekend") -> tuple[int, int, int]:
    found = table.get_pool("e-1", pool)
    assert found is not None
    assert found.available + found.held + found.sold == found.capacity
    return found.available, found.held, found.sold


# --- the take: Update on the pool item, guarded available >= :seats and open --------------------


def test_a_take_comes_off_the_class_and_its_pool_and_the_record_names_the_pool(table: OperatorTable) -> None:
    assert commit_outcomes(table, take("r-1", SAT, 3)) is None
    assert commit_outcomes(table, take("r-2", PASS, 1, outcome=Outcome.HELD)) is None

    assert counts(table) == (1, 1, 3)
    [sat, pass_] = sorted(table.get_event("e-1"), key=lambda c: c.seat_class != "SAT")
    assert (sat.available, pass_.available, sat.pools) == (1, 3, ("weekend",))
    record = table.get_reservation_record("r-1")
    assert record is not None and record.pools == ("weekend",)


def test_a_pool_without_room_refuses_the_whole_write_and_hands_itself_back(table: OperatorTable) -> None:
    commit_outcomes(table, take("r-1", SAT, 4))

    refused = commit_outcomes(table, take("r-2", PASS, 2))

    assert refused is not None and not refused.inventory_refused
    pool = refused.pools_refused["weekend"]
    assert pool is not None and (pool.available, pool.sold) == (1, 4)
    # Nothing was written: the pass kept its seats, the record does not exist.
    assert counts(table) == (1, 0, 4)
    assert [c.available for c in table.get_event("e-1") if c.seat_class == "PASS"] == [4]
    assert table.get_reservation("r-2") is None


def test_a_closed_pool_refuses_and_says_so(table: OperatorTable) -> None:
    table.set_pool_status("e-1", "weekend", SaleStatus.CLOSED)
    refused = commit_outcomes(table, take("r-1", SAT, 1))
    assert refused is not None
    pool = refused.pools_refused["weekend"]
    assert pool is not None and pool.sale_status is SaleStatus.CLOSED


def test_a_missing_pool_item_refuses_and_is_reported_as_none(stack: Stack, table: OperatorTable) -> None:
    sunday = SeatKey("e-1", "SUN")
    table.create_seat_class(sunday, 3)
    stack.dynamodb.update_item(
        TableName=stack.table_name,
        Key={"pk": {"S": "EVENT#e-1"}, "sk": {"S": "CLASS#SUN"}},
        UpdateExpression="SET pool_names = :p",
        ExpressionAttributeValues={":p": {"S": "sunday"}},
    )
    refused = commit_outcomes(table, take("r-1", sunday, 1, pools=("sunday",)))
    assert refused is not None and refused.pools_refused == {"sunday": None}
    assert not refused.inventory_refused


def test_the_class_guard_checks_the_pools_the_planner_assumed(table: OperatorTable) -> None:
    refused = commit_outcomes(table, take("r-1", SAT, 1, pools=()))
    assert refused is not None and refused.inventory_refused
    assert refused.inventory is not None and refused.inventory.pools == ("weekend",)
    assert counts(table) == (5, 0, 0)


# --- the give-back: Update on the pool item, guarded held >= / sold >= --------------------------


def test_confirm_and_cancel_move_the_pool_with_the_class(table: OperatorTable) -> None:
    commit_outcomes(table, take("r-1", SAT, 2, outcome=Outcome.HELD))
    commit_outcomes(table, take("r-2", PASS, 1))
    held = table.get_reservation_record("r-1")
    sold = table.get_reservation_record("r-2")
    assert held is not None and sold is not None

    confirmed = table.change_status(
        SAT, [Transition(held, Outcome.CONFIRMED)], now=NOW, capacity=4, release_expires_at=NOW + 1
    )
    cancelled = table.change_status(
        PASS, [Transition(sold, Outcome.CANCELLED)], now=NOW, capacity=4, release_expires_at=NOW + 1
    )

    assert confirmed is None and cancelled is None
    assert counts(table) == (3, 0, 2)


def test_a_pool_that_cannot_give_back_refuses_the_status_change(stack: Stack, table: OperatorTable) -> None:
    commit_outcomes(table, take("r-1", SAT, 2))
    record = table.get_reservation_record("r-1")
    assert record is not None
    # An inconsistent pool (fewer sold than the record's seats): its guard fails.
    stack.dynamodb.update_item(
        TableName=stack.table_name,
        Key={"pk": {"S": "EVENT#e-1"}, "sk": {"S": "POOL#weekend"}},
        UpdateExpression="SET sold = :one",
        ExpressionAttributeValues={":one": {"N": "1"}},
    )
    refused = table.change_status(
        SAT, [Transition(record, Outcome.CANCELLED)], now=NOW, capacity=4, release_expires_at=NOW + 1
    )
    assert refused is not None and refused.pools_refused == frozenset({"weekend"})
    assert [c.available for c in table.get_event("e-1") if c.seat_class == "SAT"] == [2]

    # And a pool item that is gone refuses it too.
    stack.dynamodb.delete_item(
        TableName=stack.table_name, Key={"pk": {"S": "EVENT#e-1"}, "sk": {"S": "POOL#weekend"}}
    )
    refused = table.change_status(
        SAT, [Transition(record, Outcome.CANCELLED)], now=NOW, capacity=4, release_expires_at=NOW + 1
    )
    assert refused is not None and refused.pools_refused == frozenset({"weekend"})


# --- the operator's pool commands, exactly once -------------------------------------------------


def test_pool_commands_happen_once_per_operation(table: OperatorTable) -> None:
    with pytest.raises(EventAlreadyExists):
        table.create_pool("e-1", "weekend", 9)
    table.create_pool("e-1", "vip", 2, operation_id="op-vip")
    assert table.create_pool("e-1", "vip", 2, operation_id="op-vip").capacity == 2  # a lost reply's retry

    table.change_pool_capacity("e-1", "weekend", 3, operation_id="op-add")
    table.change_pool_capacity("e-1", "weekend", 3, operation_id="op-add")  # the same operation again
    assert counts(table) == (8, 0, 0)
    commit_outcomes(table, take("r-1", SAT, 4))
    with pytest.raises(InventoryChangeRefused, match="has 4 available"):
        table.change_pool_capacity("e-1", "weekend", -5)
    assert table.change_pool_capacity("e-1", "weekend", -4).capacity == 4
    assert table.set_pool_status("e-1", "weekend", SaleStatus.CLOSED).sale_status is SaleStatus.CLOSED
    assert [p.pool for p in table.get_pools("e-1")] == ["vip", "weekend"]
    with pytest.raises(ValueError, match="no pool 'nope'"):
        table.create_seat_class(SeatKey("e-1", "X"), 1, pools=["nope"])


def test_a_resharded_class_keeps_its_pools_on_every_shard_item(table: OperatorTable) -> None:
    resharded = table.reshard(SAT, 3)
    assert resharded.pools == ("weekend",)
    sharded = SeatKey("e-1", "SHARDED")
    created = table.create_seat_class(sharded, 6, shards=2, pools=["weekend"])
    assert created.pools == ("weekend",) and created.shard_items == 2


# --- end to end ---------------------------------------------------------------------------------


def test_the_handler_sells_a_shared_pool_exactly(stack: Stack, table: OperatorTable) -> None:
    def body(rid: str, seat_class: str, quantity: int) -> dict:
        return {
            "reservation_id": rid,
            "event_id": "e-1",
            "seat_class": seat_class,
            "quantity": quantity,
            "customer_id": "c-1",
        }

    first = stack.invoke(sqs_event(body("r-1", "SAT", 3)))
    second = stack.invoke(sqs_event(body("r-2", "PASS", 3), body("r-3", "PASS", 2)))

    assert first == second == {"batchItemFailures": []}
    outcomes = {o["reservation_id"]: o for o in stack.outcomes()}
    assert outcomes["r-1"]["outcome"] == "CONFIRMED"
    assert outcomes["r-2"]["outcome"] == "SOLD_OUT"
    assert outcomes["r-2"]["reason"] == "requested 3 seat(s), 0 left in pool weekend"
    assert outcomes["r-3"]["outcome"] == "CONFIRMED"
    assert counts(table) == (0, 0, 5)


def test_cli_pool_create_class_with_pools_show_and_close(
    stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TABLE_NAME", stack.table_name)
    runner = CliRunner()
    created = runner.invoke(cli, ["event", "pool", "create", "fest", "hall", "--capacity", "7"])
    joined = runner.invoke(cli, ["event", "create", "fest", "--capacity", "5", "--pools", "hall"])
    missing = runner.invoke(
        cli, ["event", "create", "fest", "--seat-class", "B", "--capacity", "5", "--pools", "x"]
    )
    closed = runner.invoke(cli, ["event", "pool", "close", "fest", "hall"])
    added = runner.invoke(
        cli, ["event", "pool", "capacity", "fest", "hall", "--add", "2", "--output", "json"]
    )
    shown = runner.invoke(cli, ["event", "show", "fest"])
    as_json = json.loads(runner.invoke(cli, ["event", "show", "fest", "--output", "json"]).output)
    unknown = runner.invoke(cli, ["event", "pool", "open", "fest", "nope"])

    assert created.exit_code == 0, created.output
    assert joined.exit_code == 0, joined.output
    assert missing.exit_code != 0 and "has no pool 'x'" in missing.output
    assert closed.exit_code == 0 and "sale CLOSED" in closed.output
    assert json.loads(added.output)["pools"][0]["capacity"] == 9
    assert "hall" in shown.output and "CLASSES" in shown.output
    assert as_json["pools"][0]["pool"] == "hall" and as_json["seat_classes"][0]["pools"] == ["hall"]
    assert unknown.exit_code != 0 and "has no pool 'nope'" in unknown.output


def test_a_read_of_the_class_brings_its_pools_and_leaves_a_missing_one_out(
    stack: Stack, table: OperatorTable
) -> None:
    commit_outcomes(table, take("r-1", SAT, 3))
    read = table.read_inventory(SAT)
    alone = table.read_inventory(SAT, whole=False)  # a class of one item: the same, whole
    assert read is not None and alone is not None
    assert [(p.pool, p.available) for p in read.pool_items or ()] == [("weekend", 2)]
    assert read.seats_to_sell == 1 and alone.pool_items == read.pool_items

    table.reshard(SAT, 2)
    sharded = table.read_inventory(SAT)
    shard_zero = table.read_inventory(SAT, whole=False)
    assert sharded is not None and [p.available for p in sharded.pool_items or ()] == [2]
    # Shard 0 alone brings each pool's item 0 (how many items it has, to route by)
    assert shard_zero is not None and [p.available for p in shard_zero.pool_items or ()] == [2]

    stack.dynamodb.delete_item(
        TableName=stack.table_name, Key={"pk": {"S": "EVENT#e-1"}, "sk": {"S": "POOL#weekend"}}
    )
    gone = table.read_inventory(PASS)
    assert gone is not None and gone.pool_items == () and gone.seats_to_sell == 0


def test_the_sweeper_gives_an_expired_holds_seats_back_to_its_pool_once(table: OperatorTable) -> None:
    from seat_inventory.logic.inventory_hints import InventoryHints
    from seat_inventory.logic.sweep_holds import release_expired_holds
    from tests.fakes import FakeClock, RecordingPublisher

    commit_outcomes(table, take("r-1", SAT, 2, outcome=Outcome.HELD))
    assert counts(table) == (3, 2, 0)
    clock = FakeClock(time=NOW + 601)
    publisher = RecordingPublisher()
    for _ in range(2):
        release_expired_holds(
            table, publisher, clock, limit=10, rejection_ttl_seconds=60, hints=InventoryHints()
        )

    assert counts(table) == (5, 0, 0)
    assert [(o.reservation_id, o.outcome) for o in publisher.published] == [("r-1", Outcome.EXPIRED)]


def test_cli_puts_a_mapped_class_in_a_pool(stack: Stack, monkeypatch: pytest.MonkeyPatch) -> None:
    # Mapped classes join pools as counted ones do (tests/integration/test_mapped_pools.py).
    monkeypatch.setenv("TABLE_NAME", stack.table_name)
    runner = CliRunner()
    runner.invoke(cli, ["event", "pool", "create", "club", "hall", "--capacity", "7"])
    mapped = runner.invoke(
        cli, ["event", "create", "club", "--seat-map", "examples/seat_maps/club.csv", "--pools", "hall"]
    )
    assert mapped.exit_code == 0, mapped.output
    rows = OperatorTable(stack.dynamodb, stack.table_name).read_seat_rows(SeatKey("club", "TABLES"))
    assert rows and all(row.pools == ("hall",) for row in rows.values())
