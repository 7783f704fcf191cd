"""`read_inventory(customers=...)` on moto: shard 0 (or the class's only item) and customers'
counters in one consistent BatchGetItem, for the planner of repeated customers
(docs/explanation/guarantees.md, rule 9)."""

from __future__ import annotations

import pytest

from seat_inventory.models import Outcome, ReservationOutcome, SeatKey
from seat_tools.operator_commands import OperatorTable
from tests.integration.conftest import Stack
from tests.writes import GroupWrite, commit_outcomes

KEY = SeatKey("rep-1", "GA")


@pytest.fixture
def table(stack: Stack) -> OperatorTable:
    return OperatorTable(stack.dynamodb, stack.table_name)


def take(table: OperatorTable, customer: str, seats: int, *, shard: int = 0) -> None:
    outcome = ReservationOutcome(
        reservation_id=f"r-{customer}",
        outcome=Outcome.CONFIRMED,
        reason="test",
        event_id=KEY.event_id,
        seat_class=KEY.seat_class,
        quantity=seats,
        customer_id=customer,
    )
    write = GroupWrite(
        KEY,
        [outcome],
        seats_taken=seats,
        rejection_expires_at=0,
        max_per_customer=4,
        customer_seats={customer: seats},
        shard=shard,
    )
    assert commit_outcomes(table, write) is None


def test_a_sharded_class_is_read_as_its_shard_0_with_the_counters_asked_for(table: OperatorTable) -> None:
    table.create_seat_class(KEY, 40, max_per_customer=4, shards=4)
    take(table, "c-1", 4, shard=2)
    take(table, "c-2", 2)

    view = table.read_inventory(KEY, whole=False, customers=["c-1", "c-2", "c-3", "c-1"])

    assert view is not None and not view.complete
    assert view.max_per_customer == 4
    assert [s.shard for s in view.shard_seats()] == [0]
    # Each customer once, in the order asked; no counter item is 0 seats.
    assert view.counters == (("c-1", 4), ("c-2", 2), ("c-3", 0))
    assert view.customer_seats == {"c-1": 4, "c-2": 2, "c-3": 0}


def test_a_class_of_one_item_is_read_whole_with_the_counters(table: OperatorTable) -> None:
    table.create_seat_class(KEY, 10, max_per_customer=4)
    take(table, "c-1", 3)

    view = table.read_inventory(KEY, whole=False, customers=["c-1"])

    assert view is not None and view.complete
    assert (view.available, view.sold, view.counters) == (7, 3, (("c-1", 3),))


def test_no_class_is_none_whatever_the_counters(table: OperatorTable) -> None:
    assert table.read_inventory(KEY, whole=False, customers=["c-1"]) is None


def test_counters_are_not_read_with_a_whole_read_nor_more_than_a_batch_holds(table: OperatorTable) -> None:
    table.create_seat_class(KEY, 10, max_per_customer=4, shards=2)
    with pytest.raises(ValueError, match="shard 0 alone"):
        table.read_inventory(KEY, whole=True, customers=["c-1"])
    with pytest.raises(ValueError, match="at most 99"):
        table.read_inventory(KEY, whole=False, customers=[f"c-{n}" for n in range(100)])
    # Without customers the read is as before: no counters.
    view = table.read_inventory(KEY, whole=False)
    assert view is not None and view.counters is None
