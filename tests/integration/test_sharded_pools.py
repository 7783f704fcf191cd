"""Sharded capacity pools on moto (docs/guides/pools.md, "Sharded pools"): every new DynamoDB expression
path (the take on a pool item, a donor's move between pool items, the give-back to the item a
record names, the whole read of a pool, and the operator's transactions over a pool's items):
success, condition failed, item missing; each operator change exactly once."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from seat_inventory.models import (
    Outcome,
    ReservationOutcome,
    SaleStatus,
    SeatKey,
    StoreInconsistency,
    Transition,
)
from seat_tools.cli.main import cli
from seat_tools.operator_commands import OperatorTable
from seat_tools.operator_errors import EventAlreadyExists, InventoryChangeRefused, UnknownSeatClass
from tests.integration.conftest import Stack
from tests.writes import GroupWrite, commit_outcomes

FLOOR = SeatKey("e-1", "FLOOR")
NOW = 1_800_000_000


def answer(rid: str, quantity: int, outcome: Outcome = Outcome.CONFIRMED) -> ReservationOutcome:
    return ReservationOutcome(
        reservation_id=rid,
        outcome=outcome,
        reason="why",
        event_id="e-1",
        seat_class="FLOOR",
        quantity=quantity,
        customer_id="c-1",
        message_id=f"m-{rid}",
        hold_expires_at=NOW + 600 if outcome is Outcome.HELD else None,
    )


def take(
    rid: str,
    quantity: int,
    *,
    shard: int = 0,
    pool_shard: int = 0,
    pool_moves: dict[int, int] | None = None,
    outcome: Outcome = Outcome.CONFIRMED,
) -> GroupWrite:
    return GroupWrite(
        FLOOR,
        [answer(rid, quantity, outcome)],
        seats_taken=quantity,
        rejection_expires_at=0,
        now=NOW,
        shard=shard,
        pools=("hall",),
        pool_shards={"hall": pool_shard},
        pool_moves={"hall": pool_moves or {}},
    )


@pytest.fixture
def table(stack: Stack) -> OperatorTable:
    # A hall of 8 seats over 4 items (2 each), shared by a class of 40 seats over 4 shards.
    table = OperatorTable(stack.dynamodb, stack.table_name)
    table.create_pool("e-1", "hall", 8, shards=4)
    table.create_seat_class(FLOOR, 40, shards=4, pools=["hall"])
    return table


def items(table: OperatorTable) -> list[tuple[int, int, int, int]]:
    """Each pool item's (capacity, available, held, sold), checked against the invariant."""
    pool = table.get_pool("e-1", "hall")
    assert pool is not None and pool.complete
    for s in pool.shards:
        assert s.available + s.held + s.sold == s.capacity and s.available >= 0
    return [(s.capacity, s.available, s.held, s.sold) for s in pool.shards]


def delete_pool_item(stack: Stack, shard: int) -> None:
    stack.dynamodb.delete_item(
        TableName=stack.table_name, Key={"pk": {"S": f"EVENT#e-1#SHARD#{shard}"}, "sk": {"S": "POOL#hall"}}
    )


# --- the take on one pool item ------------------------------------------------------------------


def test_a_take_writes_the_pool_item_it_names_and_the_record_names_that_item(table: OperatorTable) -> None:
    assert commit_outcomes(table, take("r-1", 2, shard=3, pool_shard=3)) is None

    assert items(table) == [(2, 2, 0, 0), (2, 2, 0, 0), (2, 2, 0, 0), (2, 0, 0, 2)]
    record = table.get_reservation_record("r-1")
    assert record is not None and (record.shard, record.pools) == (3, ("hall#3",))


def test_a_pool_item_without_room_refuses_and_hands_back_that_item_alone(table: OperatorTable) -> None:
    refused = commit_outcomes(table, take("r-1", 3, shard=1, pool_shard=1))

    assert refused is not None and not refused.inventory_refused
    item = refused.pools_refused["hall"]
    assert item is not None and (item.shard, item.available, item.complete) == (1, 2, False)
    assert items(table) == [(2, 2, 0, 0)] * 4  # nothing written
    assert table.get_reservation("r-1") is None


def test_a_missing_pool_item_refuses_and_is_reported_as_none(stack: Stack, table: OperatorTable) -> None:
    delete_pool_item(stack, 2)
    refused = commit_outcomes(table, take("r-1", 1, shard=2, pool_shard=2))
    assert refused is not None and refused.pools_refused == {"hall": None}


# --- a donor's move into the take's item --------------------------------------------------------


def test_seats_move_into_the_take_item_from_donors_and_the_pool_total_stays(table: OperatorTable) -> None:
    # 5 seats on item 0, which has 2: 2 from item 1 and 1 from item 2 move into it
    assert commit_outcomes(table, take("r-1", 5, pool_moves={1: 2, 2: 1})) is None

    assert items(table) == [(5, 0, 0, 5), (0, 0, 0, 0), (1, 1, 0, 0), (2, 2, 0, 0)]


def test_a_donor_without_the_seats_refuses_the_whole_write(table: OperatorTable) -> None:
    refused = commit_outcomes(table, take("r-1", 5, pool_moves={1: 3}))

    assert refused is not None
    item = refused.pools_refused["hall"]
    assert item is not None and (item.shard, item.available) == (1, 2)
    assert items(table) == [(2, 2, 0, 0)] * 4


def test_a_missing_donor_refuses_and_is_reported_as_none(stack: Stack, table: OperatorTable) -> None:
    delete_pool_item(stack, 3)
    refused = commit_outcomes(table, take("r-1", 3, pool_moves={3: 1}))
    assert refused is not None and refused.pools_refused == {"hall": None}


# --- the give-back to the item the record names ---------------------------------------------------


def test_a_cancel_gives_the_seats_back_to_the_pool_item_they_came_off(table: OperatorTable) -> None:
    commit_outcomes(table, take("r-1", 2, shard=1, pool_shard=1, outcome=Outcome.HELD))
    record = table.get_reservation_record("r-1")
    assert record is not None

    assert (
        table.change_status(
            FLOOR, [Transition(record, Outcome.CANCELLED)], now=NOW, capacity=None, release_expires_at=NOW
        )
        is None
    )

    assert items(table) == [(2, 2, 0, 0)] * 4


def test_a_give_back_is_refused_by_an_inconsistent_pool_item_and_by_a_missing_one(
    stack: Stack, table: OperatorTable
) -> None:
    commit_outcomes(table, take("r-1", 2, shard=1, pool_shard=1))
    record = table.get_reservation_record("r-1")
    assert record is not None
    stack.dynamodb.update_item(
        TableName=stack.table_name,
        Key={"pk": {"S": "EVENT#e-1#SHARD#1"}, "sk": {"S": "POOL#hall"}},
        UpdateExpression="SET sold = :zero",
        ExpressionAttributeValues={":zero": {"N": "0"}},
    )
    cancel = [Transition(record, Outcome.CANCELLED)]
    refused = table.change_status(FLOOR, cancel, now=NOW, capacity=None, release_expires_at=NOW)
    assert refused is not None and refused.pools_refused == frozenset({"hall#1"})

    delete_pool_item(stack, 1)
    refused = table.change_status(FLOOR, cancel, now=NOW, capacity=None, release_expires_at=NOW)
    assert refused is not None and refused.pools_refused == frozenset({"hall#1"})


# --- reads ----------------------------------------------------------------------------------------


def test_a_whole_read_of_the_class_reads_the_pool_whole_and_shard_zero_alone_its_first_item(
    table: OperatorTable,
) -> None:
    commit_outcomes(table, take("r-1", 2, shard=3, pool_shard=3))

    whole = table.read_inventory(FLOOR)
    alone = table.read_inventory(FLOOR, whole=False)

    assert whole is not None and alone is not None
    [pool] = whole.pool_items or ()
    assert (pool.available, pool.sold, pool.complete, len(pool.shards)) == (6, 2, True, 4)
    assert whole.seats_to_sell == 6
    [head] = alone.pool_items or ()
    assert (head.shard_count, head.complete, head.available) == (4, False, 2)


def test_a_whole_read_of_a_pool_with_an_item_missing_is_an_inconsistency(
    stack: Stack, table: OperatorTable
) -> None:
    delete_pool_item(stack, 2)
    with pytest.raises(StoreInconsistency, match="lists 4 items"):
        table.read_inventory(FLOOR)


# --- operator commands over every item, exactly once ---------------------------------------------


def test_create_spreads_the_seats_once_and_never_overwrites(table: OperatorTable) -> None:
    assert items(table) == [(2, 2, 0, 0)] * 4
    first = table.create_pool("e-1", "bar", 10, shards=3, operation_id="op-1")
    again = table.create_pool("e-1", "bar", 10, shards=3, operation_id="op-1")  # its reply lost
    assert (first.capacity, first.shard_count, again.capacity) == (10, 3, 10)
    assert [s.capacity for s in again.shards] == [4, 3, 3]
    with pytest.raises(EventAlreadyExists):
        table.create_pool("e-1", "bar", 10, shards=3)


def test_close_and_reopen_change_every_item_at_once_exactly_once(table: OperatorTable) -> None:
    closed = table.set_pool_status("e-1", "hall", SaleStatus.CLOSED, operation_id="op-close")
    assert closed.sale_status is SaleStatus.CLOSED and closed.version == 1
    refused = commit_outcomes(table, take("r-1", 1, shard=2, pool_shard=2))
    assert refused is not None
    item = refused.pools_refused["hall"]
    assert item is not None and item.sale_status is SaleStatus.CLOSED

    again = table.set_pool_status("e-1", "hall", SaleStatus.CLOSED, operation_id="op-close")
    assert again.version == 1  # the same operation: not applied twice
    assert table.set_pool_status("e-1", "hall", SaleStatus.OPEN).version == 2
    assert commit_outcomes(table, take("r-1", 1, shard=2, pool_shard=2)) is None


def test_capacity_added_is_spread_and_removed_comes_off_the_fullest_items_exactly_once(
    table: OperatorTable,
) -> None:
    commit_outcomes(table, take("r-1", 2, pool_shard=0))  # item 0 sold out
    added = table.change_pool_capacity("e-1", "hall", 4, operation_id="op-add")
    table.change_pool_capacity("e-1", "hall", 4, operation_id="op-add")  # the same operation again
    assert added.capacity == 12
    assert items(table) == [(3, 1, 0, 2), (3, 3, 0, 0), (3, 3, 0, 0), (3, 3, 0, 0)]

    removed = table.change_pool_capacity("e-1", "hall", -7, operation_id="op-remove")
    table.change_pool_capacity("e-1", "hall", -7, operation_id="op-remove")
    assert (removed.capacity, removed.available, removed.sold) == (5, 3, 2)
    with pytest.raises(InventoryChangeRefused, match="has 3 available"):
        table.change_pool_capacity("e-1", "hall", -4)


def test_changes_of_a_missing_pool_are_refused(table: OperatorTable) -> None:
    with pytest.raises(UnknownSeatClass):
        table.change_pool_capacity("e-1", "nope", 1)
    with pytest.raises(UnknownSeatClass):
        table.set_pool_status("e-1", "nope", SaleStatus.CLOSED)


def test_the_cli_creates_a_sharded_pool_and_shows_it_whole(
    stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TABLE_NAME", stack.table_name)
    runner = CliRunner()
    created = runner.invoke(
        cli, ["event", "pool", "create", "e-2", "hall", "--capacity", "9", "--shards", "3"]
    )
    assert created.exit_code == 0, created.output
    assert "capacity 9 (available 9, held 0, sold 0, 3 items)" in created.output
    shown = runner.invoke(cli, ["event", "pool", "show", "e-2", "--output", "json"])
    assert shown.exit_code == 0, shown.output
    assert '"shards": 3' in shown.output and '"available": 9' in shown.output
    bad = runner.invoke(cli, ["event", "pool", "create", "e-2", "x", "--capacity", "9", "--shards", "65"])
    assert bad.exit_code == 2 and "65" in bad.output
    resharded = runner.invoke(cli, ["event", "pool", "reshard", "e-2", "hall", "--shards", "5"])
    assert resharded.exit_code == 0, resharded.output
    assert "capacity 9 (available 9, held 0, sold 0, 5 items)" in resharded.output
    fewer = runner.invoke(cli, ["event", "pool", "reshard", "e-2", "hall", "--shards", "2"])
    assert fewer.exit_code == 1
    assert (
        "pool hall has 5 items; a pool is never split over fewer; pool hall was not changed" in fewer.output
    )


# --- reshard: more items, during the sale, exactly once ------------------------------------------


def test_a_reshard_spreads_the_available_seats_over_more_items_and_keeps_every_count(
    table: OperatorTable,
) -> None:
    # Given a hold on item 3 and a sale on item 0 (items (2,2,2,2): 5 available in all)
    commit_outcomes(table, take("r-1", 2, shard=3, pool_shard=3, outcome=Outcome.HELD))
    commit_outcomes(table, take("r-2", 1))

    # When the pool is spread over 6 items (the same operation sent twice)
    first = table.reshard_pool("e-1", "hall", 6, operation_id="op-reshard")
    again = table.reshard_pool("e-1", "hall", 6, operation_id="op-reshard")

    # Then the counts are the same; the available seats are spread, held and sold stay put
    assert (first.capacity, first.available, first.held, first.sold) == (8, 5, 2, 1)
    assert (again.version, again.shard_count) == (1, 6)
    assert [s.available for s in again.shards] == [1, 1, 1, 1, 1, 0]
    assert items(table)[3] == (3, 1, 2, 0)
    # And the hold goes back to the item it came off, which still exists
    record = table.get_reservation_record("r-1")
    assert record is not None
    cancel = [Transition(record, Outcome.CANCELLED)]
    assert table.change_status(FLOOR, cancel, now=NOW, capacity=None, release_expires_at=NOW) is None
    pool = table.get_pool("e-1", "hall")
    assert pool is not None and (pool.capacity, pool.available, pool.sold) == (8, 7, 1)


def test_a_reshard_of_a_pool_of_one_item_and_its_refusals(table: OperatorTable) -> None:
    table.create_pool("e-1", "bar", 5)
    resharded = table.reshard_pool("e-1", "bar", 2)
    assert [s.capacity for s in resharded.shards] == [3, 2] and resharded.shard_count == 2
    with pytest.raises(ValueError, match="never split over fewer"):
        table.reshard_pool("e-1", "bar", 1)
    with pytest.raises(UnknownSeatClass):
        table.reshard_pool("e-1", "nope", 2)


def test_a_reshard_refused_by_a_sale_between_its_read_and_its_write_is_planned_again(
    stack: Stack, table: OperatorTable
) -> None:
    # A donor that no longer has what the plan moves off it refuses the transaction (nothing
    # written); the command reads again and reshards from what is there.
    sell_item_1 = {"done": False}
    original = table._whole_pool_patiently

    def whole_then_sale(head):  # type: ignore[no-untyped-def]
        view = original(head)
        if not sell_item_1["done"]:
            sell_item_1["done"] = True
            commit_outcomes(table, take("r-9", 2, shard=1, pool_shard=1))
        return view

    table._whole_pool_patiently = whole_then_sale  # type: ignore[method-assign]
    resharded = table.reshard_pool("e-1", "hall", 8)
    assert (resharded.available, resharded.sold, resharded.version) == (6, 2, 1)
    assert all(s.available >= 0 for s in resharded.shards)
