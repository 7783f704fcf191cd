"""`seats bench --orders`, small: multi-line orders through the service on the session's local stack
(docs/reference/benchmarks.md, "Orders"). No timing is asserted. What is checked: every order has exactly one
record and one answer at least, every class and pool equals the confirmed records' lines, no
order is refused SOLD_OUT while its failing class had its seats and the pool those of it and the
lines before it (each class has fewer seats than the orders asking for it), and the transaction
counts add up.
"""

from __future__ import annotations

import pytest

from seat_tools.bench.counting import COMMITTED
from seat_tools.bench.orders import run_orders_bench
from seat_tools.local.stack import LocalStack
from seat_tools.traffic import ORDER_CLASSES
from tests.depth import sized

pytestmark = [pytest.mark.local_stack, pytest.mark.bounded]

ORDERS = sized("SEATS_BENCH_ORDERS", ci=60, deep=400)
CAPACITY = ORDERS // 6  # each class is asked for by about 5/8 of the orders: every class sells out


def test_orders_through_the_service_sell_each_class_exactly_all_lines_or_none(
    local_stack: LocalStack,
) -> None:
    result = run_orders_bench(
        local_stack, orders=ORDERS, capacity=CAPACITY, shards=2, pool_shards=1, workers=2
    )

    assert result.problems == []
    assert sum(result.recorded.values()) == ORDERS
    assert set(result.recorded) <= {"CONFIRMED", "SOLD_OUT"} and result.recorded["SOLD_OUT"] > 0
    # A refused order leaves its other lines' seats: each class sells at most its seats, and at
    # least one sold out (the checks above: no order refused while its class had the seats).
    sold = result.seats_sold
    assert CAPACITY < sold <= CAPACITY * len(ORDER_CLASSES)
    assert result.lines_confirmed == result.seats_sold  # one seat a line
    assert set(result.outcomes) <= {"CONFIRMED", "SOLD_OUT"}
    assert sum(result.outcomes.values()) >= ORDERS  # a redelivery may be answered again
    assert result.transactions.get(COMMITTED, 0) >= result.recorded["CONFIRMED"]
    rows = dict(result.rows())
    assert rows["counts"].startswith("ok")
