"""Acceptance on DynamoDB Local behind the contention layer: multi-line orders racing for the last
seats of a capacity pool their lines share sell it exactly, all lines or none (docs/guides/orders.md),
with the pool as one item and sharded over 4 items (docs/guides/orders.md, "Scale": both lines of an
order on one item, the first line's class shard mod K; seats moving between items).
Each order takes one seat of each of two classes of the pool; each class alone has seats for every
order, only the pool bounds them. Every order is its own container, sent (and redelivered, as SQS
would) until answered, then sent again: the answer stays the one it got. DynamoDB Local's
transactions are atomic under concurrency (moto's are not, so no race is judged on moto).
"""

from __future__ import annotations

import json
import uuid
from collections import Counter

import pytest

from seat_inventory.logic.reserve_seats import QueueMessage
from seat_inventory.logic.seat_map import load_json
from seat_inventory.models import Outcome, SeatKey, SeatState, ShardSeats, split_pool_ref
from seat_inventory.settings import Settings
from seat_tools.local.stack import LocalStack
from seat_tools.operator_commands import OperatorTable
from seat_tools.seat_map_commands import SaleRules
from tests.depth import sized
from tests.local.crowd import race, send_until_answered

pytestmark = [pytest.mark.local_stack, pytest.mark.bounded]

ORDERS_THAT_FIT = sized("SEATS_ORDER_FIT", ci=3, deep=20)  # the pool holds this many orders
SENDERS = sized("SEATS_ORDER_SENDERS", ci=10, deep=48)


@pytest.mark.parametrize("pool_shards", [1, 4], ids=["one-item-pool", "sharded-pool"])
def test_orders_racing_for_a_shared_pool_sell_it_exactly_all_lines_or_none(
    local_stack: LocalStack, pool_shards: int
) -> None:
    # Sharded: the pool over 4 items (its seats spread 1 or 2 each) and SEATED over 4 shards, so
    # both lines of each order take from the pool item of its SEATED shard (mod 4): items run dry
    # while the pool has seats, and seats move into them.
    event_id = f"order-{uuid.uuid4().hex[:8]}"
    table = OperatorTable(local_stack.client("dynamodb"), local_stack.table_name)
    table.create_pool(event_id, "hall", 2 * ORDERS_THAT_FIT, shards=pool_shards)
    classes = [SeatKey(event_id, "SEATED"), SeatKey(event_id, "STANDING")]
    for key, shards in zip(classes, [pool_shards, 1], strict=True):
        # each class alone could serve all
        table.create_seat_class(key, SENDERS, pools=["hall"], shards=shards)
    settings = Settings(table_name=local_stack.table_name, outcomes_topic_arn="unused")
    messages = [
        QueueMessage(
            f"m-{n}",
            json.dumps(
                {
                    "type": "hold" if n % 3 == 0 else "reserve",
                    "reservation_id": f"{event_id}-{n}",
                    "event_id": event_id,
                    "customer_id": f"c-{n}",
                    "lines": [{"seat_class": k.seat_class, "quantity": 1} for k in classes],
                    **({"hold_seconds": 600} if n % 3 == 0 else {}),
                }
            ),
        )
        for n in range(SENDERS)
    ]
    # each order sent until answered, then sent again (a redelivery)
    answers, again = race(local_stack, settings, messages, redeliver=True)

    # Exactly the orders the pool holds were taken, whole; the rest is SOLD_OUT naming the pool.
    outcomes = Counter(a.outcome for a in answers.values())
    assert outcomes[Outcome.CONFIRMED] + outcomes[Outcome.HELD] == ORDERS_THAT_FIT, outcomes
    assert outcomes[Outcome.SOLD_OUT] == len(messages) - ORDERS_THAT_FIT, outcomes
    assert all(
        a.reason.endswith("left in pool hall") for a in answers.values() if a.outcome is Outcome.SOLD_OUT
    )
    # One final answer per order: its redelivery is the same answer, marked duplicate.
    for message_id, first in answers.items():
        assert (again[message_id].outcome, again[message_id].duplicate) == (first.outcome, True)
    # No order half-taken: each class moved exactly once per order taken, the pool twice.
    pool = table.get_pool(event_id, "hall")
    assert pool is not None and (pool.available, pool.held + pool.sold) == (0, 2 * ORDERS_THAT_FIT)
    assert pool.capacity == 2 * ORDERS_THAT_FIT  # moves between items never change it
    for view in table.get_event(event_id):
        assert (view.held, view.sold) == (outcomes[Outcome.HELD], outcomes[Outcome.CONFIRMED]), view
    per_item: Counter[int] = Counter()
    for answer in answers.values():
        record = table.get_reservation_record(answer.reservation_id)
        assert record is not None and record.status is answer.outcome
        takes = record.takes()
        for take in takes:
            for ref in take.pools:  # each line names the pool item its seat came off: the order's
                name, item = split_pool_ref(ref)
                assert name == "hall" and item == takes[0].shard % pool_shards, (take, ref)
                per_item[item] += take.quantity
    # Each pool item's held and sold are exactly the seats the records' lines name it for.
    items = pool.shards or (ShardSeats(0, pool.capacity, pool.available, pool.held, pool.sold),)
    assert {s.shard: s.held + s.sold for s in items if s.held + s.sold} == dict(per_item)
    for item in items:
        assert item.available + item.held + item.sold == item.capacity and item.available >= 0

    # An order taken is cancelled: both its lines go back to their classes and the pool, once.
    winner = next(a for a in answers.values() if a.outcome in (Outcome.CONFIRMED, Outcome.HELD))
    cancel = QueueMessage("m-cancel", json.dumps({"type": "cancel", "reservation_id": winner.reservation_id}))
    for _ in range(2):
        send_until_answered(table, settings, cancel)
    after = table.get_pool(event_id, "hall")
    assert after is not None and after.available == 2
    assert sum(v.available for v in table.get_event(event_id)) == 2 * SENDERS - 2 * ORDERS_THAT_FIT + 2


def test_orders_racing_for_the_same_chosen_seats_take_them_once_with_their_other_line(
    local_stack: LocalStack,
) -> None:
    # Each order: one seat of a counted class (room for all) and the same two seats of a mapped
    # class. One order gets them, whole; every other is SEATS_TAKEN and takes nothing.
    event_id = f"order-{uuid.uuid4().hex[:8]}"
    table = OperatorTable(local_stack.client("dynamodb"), local_stack.table_name)
    table.create_seat_class(SeatKey(event_id, "PARKING"), SENDERS)
    seat_map = {
        "classes": {"FLOOR": {}},
        "sections": [{"id": "F", "class": "FLOOR", "rows": [{"id": "R1", "seats": 4}]}],
    }
    table.create_seat_map(event_id, load_json(json.dumps(seat_map)), SaleRules())
    settings = Settings(table_name=local_stack.table_name, outcomes_topic_arn="unused")
    lines = [{"seat_class": "PARKING", "quantity": 1}, {"seat_class": "FLOOR", "seats": ["F-R1-1", "F-R1-2"]}]
    messages = [
        QueueMessage(
            f"m-{n}",
            json.dumps(
                {
                    "reservation_id": f"{event_id}-{n}",
                    "event_id": event_id,
                    "customer_id": f"c-{n}",
                    "lines": lines,
                }
            ),
        )
        for n in range(SENDERS)
    ]
    answers, _ = race(local_stack, settings, messages)

    outcomes = Counter(a.outcome for a in answers.values())
    assert outcomes == {Outcome.CONFIRMED: 1, Outcome.SEATS_TAKEN: SENDERS - 1}, outcomes
    [parking] = table.get_event(event_id)
    assert (parking.sold, parking.available) == (1, SENDERS - 1)  # the winner's other line only
    [row] = table.read_seat_rows(SeatKey(event_id, "FLOOR")).values()
    assert row.states == {1: SeatState.SOLD, 2: SeatState.SOLD} and row.sold == 2
