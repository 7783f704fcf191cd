"""The orders bench's check of what it reads back after a run (`seats bench --orders`,
src/seat_tools/bench/orders.py), fed end states on the in-memory store: an order refused SOLD_OUT
is named only when its failing line's class still has its seats and the pool those of it and the
lines before it."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace
from typing import Any

from seat_inventory.models import OrderLine, Outcome, PoolInventory, ReservationOutcome, SeatKey
from seat_tools.bench.orders import POOL, OrdersBenchResult, _check
from seat_tools.simulation.memory_store import InMemoryInventoryStore
from seat_tools.traffic import ORDER_CLASSES, OrderRequests

EVENT = "e-1"


class _ReadBack:
    """The table's reads the check makes (`OperatorTable`'s), from the in-memory store."""

    def __init__(self, data: InMemoryInventoryStore) -> None:
        self.data = data

    def get_reservation(self, reservation_id: str) -> ReservationOutcome | None:
        return self.data.records.get(reservation_id)

    def read_inventory(self, key: SeatKey) -> Any:
        return self.data.read_inventory(key)

    def get_pool(self, event_id: str, pool: str) -> PoolInventory | None:
        return self.data.pool(event_id, pool)


def _problems_after(*, senior_left: int) -> list[str]:
    """Order 0 took ADULT's only seat; order 1 (ADULT, then CHILD) was refused on its CHILD line
    for the pool; CHILD has 1 seat left, SENIOR `senior_left`, PARKING none, and the pool the
    classes' seats left."""
    data = InMemoryInventoryStore()
    data.add_pool(EVENT, POOL, 2 + senior_left)
    for seat_class, seats in zip(ORDER_CLASSES, (1, 1, senior_left, 0), strict=True):
        data.add_event(EVENT, seats, seat_class, pools=[POOL])
    adult = SeatKey(EVENT, "ADULT")
    data.inventory[adult] = dataclasses.replace(data.inventory[adult], available=0, sold=1)
    pool = data.pools[(EVENT, POOL)]
    data.pools[(EVENT, POOL)] = dataclasses.replace(pool, available=pool.available - 1, sold=1)
    data.records[f"{EVENT}-0"] = ReservationOutcome(
        f"{EVENT}-0",
        Outcome.CONFIRMED,
        "1 seat(s) in 1 line(s) confirmed",
        event_id=EVENT,
        seat_class=None,
        quantity=1,
        customer_id="c-0",
        lines=(OrderLine("ADULT", 1, pools=(POOL,)),),
    )
    data.records[f"{EVENT}-1"] = ReservationOutcome(
        f"{EVENT}-1",
        Outcome.SOLD_OUT,
        f"line 2 (CHILD): requested 1 seat(s), 0 left in pool {POOL}",
        event_id=EVENT,
        seat_class="CHILD",
        quantity=2,
        customer_id="c-1",
    )
    drawn = OrderRequests([(("ADULT", 1),), (("ADULT", 1), ("CHILD", 1))])
    result = OrdersBenchResult(2, 3, 1, 1, 1, 2, 1.0, {}, {}, 0, 0, {}, 0)
    _check(SimpleNamespace(store=_ReadBack(data)), EVENT, drawn, result)  # type: ignore[arg-type]
    return result.problems


def test_an_order_refused_while_the_pool_had_fewer_seats_than_its_lines_up_to_it_passes() -> None:
    # CHILD and the pool each have a seat left; the order's 2 lines needed 2 of the pool.
    assert _problems_after(senior_left=0) == []


def test_an_order_refused_while_its_class_and_the_pool_had_the_seats_of_its_lines_is_named() -> None:
    assert _problems_after(senior_left=1) == [
        "1 order(s) SOLD_OUT whose line's class and pool have the seats left"
        f" (order 1: line 2 (CHILD): requested 1 seat(s), 0 left in pool {POOL})"
    ]
