"""Acceptance on DynamoDB Local behind the contention layer: two seat classes racing for the last
seats of the capacity pool they share sell it exactly (docs/guides/pools.md), with the pool as one item
and sharded over 4 items (seats moving between them). Each class alone has seats
for every request; only the pool bounds them. Every request is its own container, sent (and
redelivered, as SQS would) until answered. DynamoDB Local's transactions are atomic under
concurrency (moto's are not, so no race is judged on moto).
"""

from __future__ import annotations

import json
import uuid
from collections import Counter
from typing import NoReturn

import pytest

from seat_inventory.logic.reserve_seats import QueueMessage
from seat_inventory.models import Outcome, SeatKey
from seat_inventory.settings import Settings
from seat_tools.local.stack import LocalStack
from seat_tools.operator_commands import OperatorTable
from tests.depth import sized
from tests.local.crowd import race, send_until_answered

pytestmark = [pytest.mark.local_stack, pytest.mark.bounded]

POOL_SEATS = sized("SEATS_POOL_SEATS", ci=6, deep=40)
SENDERS = sized("SEATS_POOL_SENDERS", ci=8, deep=48)  # per class


def _missing() -> NoReturn:
    raise AssertionError("a winner's record is missing")


@pytest.mark.parametrize(
    ("pool_shards", "class_shards"), [(1, 1), (4, 4)], ids=["one-item-pool", "sharded-pool"]
)
def test_two_classes_racing_for_a_shared_pool_sell_it_exactly(
    local_stack: LocalStack, pool_shards: int, class_shards: int
) -> None:
    # Sharded: the pool's seats are spread over 4 items (1 or 2 each) and the seated class over 4
    # shards, so takes land on different pool items, which run dry and get seats moved in; the
    # pool is resharded to 8 items during the race.
    event_id = f"pool-{uuid.uuid4().hex[:8]}"
    table = OperatorTable(local_stack.client("dynamodb"), local_stack.table_name)
    table.create_pool(event_id, "hall", POOL_SEATS, shards=pool_shards)
    classes = [SeatKey(event_id, "SEATED"), SeatKey(event_id, "STANDING")]
    for key, shards in zip(classes, [class_shards, 1], strict=True):
        # each class alone could serve all
        table.create_seat_class(key, SENDERS, pools=["hall"], shards=shards)
    settings = Settings(table_name=local_stack.table_name, outcomes_topic_arn="unused")
    messages = [
        QueueMessage(
            f"m-{key.seat_class}-{n}",
            json.dumps(
                {
                    "type": "hold" if n % 3 == 0 else "reserve",
                    "reservation_id": f"{event_id}-{key.seat_class}-{n}",
                    "event_id": event_id,
                    "seat_class": key.seat_class,
                    "quantity": 1,
                    "customer_id": f"c-{n}",
                    **({"hold_seconds": 600} if n % 3 == 0 else {}),
                }
            ),
        )
        for key in classes
        for n in range(SENDERS)
    ]
    resharding = pool_shards > 1

    def resharder() -> None:
        # Sharded: an operator spreads the pool over 8 items while the race runs.
        OperatorTable(local_stack.client("dynamodb"), local_stack.table_name).reshard_pool(
            event_id, "hall", 8
        )

    answers, _ = race(local_stack, settings, messages, beside=[resharder] if resharding else [])

    outcomes = Counter(a.outcome for a in answers.values())
    # Exactly the pool's seats were sold or held, over both classes; the rest is SOLD_OUT.
    assert outcomes[Outcome.CONFIRMED] + outcomes[Outcome.HELD] == POOL_SEATS, outcomes
    assert outcomes[Outcome.SOLD_OUT] == len(messages) - POOL_SEATS, outcomes
    assert all(
        a.reason.endswith("left in pool hall") for a in answers.values() if a.outcome is Outcome.SOLD_OUT
    )
    pool = table.get_pool(event_id, "hall")
    assert pool is not None and pool.capacity == POOL_SEATS  # moves between its items keep it
    assert len(pool.shards) == (8 if resharding else 0)
    views = table.get_event(event_id)
    assert (pool.available, pool.held + pool.sold) == (0, POOL_SEATS)
    for item in pool.shards:  # each item of a sharded pool: its invariant, nothing negative
        assert item.available + item.held + item.sold == item.capacity and item.available >= 0
    taken_from = {
        ref
        for a in answers.values()
        if a.outcome in (Outcome.CONFIRMED, Outcome.HELD)
        for ref in (table.get_reservation_record(a.reservation_id) or _missing()).pools
    }
    # The records name the pool items their seats came off: several, when the pool is sharded.
    assert len(taken_from) == pool_shards or (pool_shards > 1 and len(taken_from) > 1), taken_from
    print("pool items", [(s.shard, s.capacity, s.sold + s.held) for s in pool.shards], sorted(taken_from))
    assert pool.held == sum(v.held for v in views) == outcomes[Outcome.HELD]
    assert pool.sold == sum(v.sold for v in views) == outcomes[Outcome.CONFIRMED]

    # A winner cancels: its seat goes back to the pool (and its class) once, however often sent.
    winner = next(a for a in answers.values() if a.outcome is Outcome.CONFIRMED)
    cancel = QueueMessage("m-cancel", json.dumps({"type": "cancel", "reservation_id": winner.reservation_id}))
    for _ in range(2):
        send_until_answered(table, settings, cancel)
    after = table.get_pool(event_id, "hall")
    assert after is not None and (after.available, after.sold) == (1, pool.sold - 1)
