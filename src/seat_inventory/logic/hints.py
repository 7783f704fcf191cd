"""Per-container knowledge of seat classes, and the limits every transaction of the service obeys."""

from __future__ import annotations

import random

from seat_inventory.logic.ports import Clock
from seat_inventory.models import SeatClassInventory, SeatKey

# DynamoDB allows 100 actions per transaction: one inventory update, one record per reservation
# and, when the class has a per-customer limit, one counter update per customer.
MAX_ACTIONS_PER_TRANSACTION = 100
# Each refused round teaches the planner something (a recorded duplicate, the seats left, a
# missing event, a closed sale, a customer's counter, a changed status); under heavy contention
# the state can change between rounds, so bound it.
MAX_SETTLE_ROUNDS = 8
# Transaction conflicts with a concurrent batch on the same hot item are retried in place, with
# jittered back-off, before the messages are handed back to the queue.
MAX_CONFLICT_RETRIES = 5
CONFLICT_BACKOFF_SECONDS = 0.02


def back_off(clock: Clock, conflicts: int) -> None:
    """Full-jitter exponential back-off after the `conflicts`-th transaction conflict in a row."""
    clock.sleep(random.uniform(0, CONFLICT_BACKOFF_SECONDS * 2**conflicts))


class InventoryHints:
    """What this container last learned about each seat class: the item as last seen, or no item.

    Only a hint. It decides whether a group starts with a strongly consistent read (a class this
    container has never seen, or one that looked too small for the group, missing, or closed)
    instead of an optimistic write, and which per-customer limit and capacity the first write
    assumes. So a container reads each class once, then writes optimistically while seats last;
    after a sell-out, rejections are answered from a read and the transaction writes only their
    records, never the hot inventory item, even in a container that starts after the sell-out.
    Correctness never rests on it: every seat is still taken through the guarded transaction,
    whose condition checks every assumption it was planned on.
    """

    _MISSING = -1

    def __init__(self) -> None:
        self._seats_left: dict[SeatKey, int] = {}
        self._items: dict[SeatKey, SeatClassInventory | None] = {}

    def should_read_first(self, key: SeatKey, seats_wanted: int, now: float | None = None) -> bool:
        known = self._seats_left.get(key)
        if known is None:
            return True
        if known < seats_wanted:
            return True
        item = self._items.get(key)
        return item is not None and now is not None and item.sale_closed_reason(now) is not None

    def learn(self, key: SeatKey, seats_left: int | None) -> None:
        """Records an observation: seats left, or None for no inventory item."""
        self._seats_left[key] = self._MISSING if seats_left is None else seats_left

    def learn_item(self, key: SeatKey, item: SeatClassInventory | None) -> None:
        """Records the whole item (limit, sale status and window, capacity), or None for no item."""
        self._items[key] = item
        self.learn(key, None if item is None else item.available)

    def assumed(self, key: SeatKey) -> SeatClassInventory | None:
        """The item as last seen, for the assumptions of an optimistic write; None when never seen."""
        return self._items.get(key)
