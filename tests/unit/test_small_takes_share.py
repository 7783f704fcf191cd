"""A container whose group needs a shard item while every item with seats is in use: a big take
waits for one to come free (a conflict would cancel up to 100 actions, charged), a small one
shares an item in use at once (`settle_group.SHARE_AT_ONCE_TAKES`; docs/explanation/sharding.md)."""

from __future__ import annotations

import json
import random

from seat_inventory.logic.group_routing import MAX_SHARD_WAITS, SHARE_AT_ONCE_TAKES
from seat_inventory.logic.inventory_hints import InventoryHints
from seat_inventory.logic.reserve_seats import QueueMessage, reserve_seats
from seat_inventory.models import Outcome, SeatKey
from seat_inventory.settings import Settings
from tests.fakes import FakeClock, InMemoryInventoryStore, RecordingPublisher

SETTINGS = Settings(table_name="t", outcomes_topic_arn="arn:aws:sns:us-east-1:1:t")
KEY = SeatKey("e-1", "GA")


def sell(reservations: int) -> tuple[list[Outcome], FakeClock]:
    """`reservations` requests of one seat each from distinct customers, on a class of 4 shard
    items that other containers took from a moment ago (all in use)."""
    store = InMemoryInventoryStore()
    store.add_event(KEY.event_id, 400, max_per_customer=4, shards=4)
    clock = FakeClock()
    for shard in range(4):
        store.taken_at[(KEY, shard)] = clock.now()
    messages = [
        QueueMessage(
            f"m-{n}",
            json.dumps(
                {"reservation_id": f"r-{n}", "event_id": KEY.event_id, "quantity": 1, "customer_id": f"c-{n}"}
            ),
        )
        for n in range(reservations)
    ]
    result = reserve_seats(
        messages,
        store=store,
        publisher=RecordingPublisher(),
        settings=SETTINGS,
        clock=clock,
        hints=InventoryHints(random.Random(2)),
    )
    assert result.handed_back == {}
    assert store.inventory[KEY].sold == reservations
    return [o.outcome for o in result.published], clock


def test_a_small_take_shares_an_item_in_use_at_once() -> None:
    outcomes, clock = sell(SHARE_AT_ONCE_TAKES)

    assert outcomes == [Outcome.CONFIRMED] * SHARE_AT_ONCE_TAKES
    assert clock.slept == []


def test_a_big_take_waits_for_an_item_to_come_free_before_sharing_one() -> None:
    outcomes, clock = sell(SHARE_AT_ONCE_TAKES + 1)

    assert outcomes == [Outcome.CONFIRMED] * (SHARE_AT_ONCE_TAKES + 1)
    # Each wait is a back-off of at most 0.02 s x 2^n: the items stay in use (0.5 s) throughout.
    assert len(clock.slept) == MAX_SHARD_WAITS
