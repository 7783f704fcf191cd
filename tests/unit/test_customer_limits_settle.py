"""Groups of many customers already at their per-customer limit, with few seats left, are answered
(found by a review: each refused transaction shows only the counters of the customers it gave
seats, so such a group needed more rounds than `MAX_SETTLE_ROUNDS` and was handed back forever)."""

from __future__ import annotations

import json

from seat_inventory.logic.inventory_hints import InventoryHints
from seat_inventory.logic.reserve_seats import QueueMessage, reserve_seats
from seat_inventory.models import Outcome
from seat_inventory.settings import Settings
from tests.fakes import FakeClock, InMemoryInventoryStore, RecordingPublisher

SETTINGS = Settings(
    table_name="t", outcomes_topic_arn="arn:aws:sns:us-east-1:1:t", rejection_record_ttl_days=15
)


def msg(n: int, customer: str) -> QueueMessage:
    body = {
        "reservation_id": f"r-{n}",
        "event_id": "e-1",
        "seat_class": "GA",
        "quantity": 1,
        "customer_id": customer,
    }
    return QueueMessage(f"m-{n}", json.dumps(body))


def test_a_batch_whose_second_chunk_repeats_customers_at_their_limit_settles_without_hand_back() -> None:
    store = InMemoryInventoryStore()
    store.add_event("e-1", capacity=31, max_per_customer=1)
    # First 99 (one transaction's worth): 29 customers take 1 seat each (2 left), then 70 repeats of c-0.
    first = [msg(n, f"c-{n}") for n in range(29)] + [msg(29 + n, "c-0") for n in range(70)]
    # The next chunk of the same batch: the same 29 customers again, each at the limit of 1.
    second = [msg(99 + n, f"c-{n}") for n in range(29)]

    result = reserve_seats(
        first + second,
        store=store,
        publisher=RecordingPublisher(),
        settings=SETTINGS,
        clock=FakeClock(),
        hints=InventoryHints(),
    )

    assert result.handed_back == {}
    assert {o.outcome for o in result.published[99:]} == {Outcome.LIMIT_EXCEEDED}
    assert store.inventory[next(iter(store.inventory))].available == 2


def test_a_retried_batch_of_customers_at_their_limit_is_answered() -> None:
    store = InMemoryInventoryStore()
    store.add_event("e-1", capacity=31, max_per_customer=1)
    clock = FakeClock()
    # 29 customers each take their one seat (2 seats left).
    reserve_seats(
        [msg(n, f"c-{n}") for n in range(29)],
        store=store,
        publisher=RecordingPublisher(),
        settings=SETTINGS,
        clock=clock,
        hints=InventoryHints(),
    )
    # Each of them asks again, in one batch, in a fresh container: every answer is LIMIT_EXCEEDED.
    again = [msg(100 + n, f"c-{n}") for n in range(29)]
    result = reserve_seats(
        again,
        store=store,
        publisher=RecordingPublisher(),
        settings=SETTINGS,
        clock=clock,
        hints=InventoryHints(),
    )
    assert result.handed_back == {}
    assert [o.outcome for o in result.published] == [Outcome.LIMIT_EXCEEDED] * 29
