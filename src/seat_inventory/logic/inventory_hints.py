"""What one container learned about each seat class: the item as last seen, and for a sharded
class the shard item it takes seats from (`InventoryHints`). It lives as long as the container."""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import dataclass

from seat_inventory.logic.seat_views import SeatMaps
from seat_inventory.logic.shards import Draws
from seat_inventory.logic.write_window import AdaptiveWriteLimit
from seat_inventory.models import PoolInventory, SeatClassInventory, SeatKey


@dataclass(frozen=True, slots=True)
class OwnShard:
    """The shard item a container takes a class's seats from, and the seats it last saw there."""

    shard: int
    left: int | None


class InventoryHints:
    """What this container learned about each seat class: the item as last seen, and for a
    sharded class the shard item it takes seats from.

    Only a hint. It decides whether a group starts with a strongly consistent read instead of an
    optimistic write, which per-customer limit the first write assumes, and which shard item of a
    sharded class it goes to:

    - a class never seen, missing, closed, or with fewer seats left than the group wants is read
      first; after a sell-out, rejections are answered from a read and written as their records
      only, never with a write to an inventory item, even in a container that starts after it;
    - a sharded class: the container's own shard item (`own_shard`) and the seats it last saw
      there; a group takes from it as far as those go, and a container without one (or whose
      transaction conflicted there) surveys the items for one nobody else uses (`logic.shards`).

    It keeps no estimate of how fast other containers take a class's seats: a class that many
    containers sell at once is sharded, so that each container has an item of its own (measured
    in docs/explanation/sharding.md: on one item such estimates changed neither its rate nor its waste).
    Correctness never rests on hints: every seat is still taken through the guarded transaction,
    whose condition checks every assumption it was planned on.
    """

    _MISSING = -1

    def __init__(self, rng: Draws | None = None) -> None:
        # Draws the shard item a container settles on (`logic.shards.pick_shard`); by default the
        # `random` module, so that a run seeded with `random.seed` is reproducible.
        self.rng: Draws = rng if rng is not None else random
        self._seats_left: dict[SeatKey, int] = {}
        self._items: dict[SeatKey, SeatClassInventory | None] = {}
        self._shards: dict[SeatKey, OwnShard] = {}
        # Per (event, pool): the item of a sharded pool this container's orders take from.
        self._pool_items: dict[tuple[str, str], int] = {}
        # The most reservations this container writes in one transaction (`logic.write_window`).
        self.write_limit = AdaptiveWriteLimit()
        # Seat maps and the last view of each mapped class's rows (docs/guides/seat-maps.md).
        self.seat_maps = SeatMaps()
        # Classes whose last group met a customer at the limit (`reads_counters`).
        self._customers_at_limit: set[SeatKey] = set()

    def should_read_first(self, key: SeatKey, seats_wanted: int, now: float | None = None) -> bool:
        known = self._seats_left.get(key)
        item = self._items.get(key)
        if item is not None and now is not None and item.sale_closed_reason(now) is not None:
            return True
        if item is not None and item.shard_items > 1:
            # A sharded class is routed by surveys of its items, not by its total: it is read
            # whole only when the last such read left too few seats.
            return known is not None and known < seats_wanted
        return known is None or known < seats_wanted

    def observe(self, key: SeatKey, item: SeatClassInventory | None) -> None:
        """Records the item as DynamoDB returned it (a consistent read, or a refused write's
        ALL_OLD), or None for no item. A view of one shard of a sharded class (not `complete`)
        says nothing about the class and is ignored."""
        if item is not None and not item.complete:
            return
        self.learn_item(key, item)

    def learn(self, key: SeatKey, seats_left: int | None) -> None:
        """Records this container's view of the seats left, or None for no inventory item."""
        self._seats_left[key] = self._MISSING if seats_left is None else seats_left

    def learn_item(self, key: SeatKey, item: SeatClassInventory | None) -> None:
        """Records the whole item (limit, sale status and window, capacity), or None for no item.

        One shard item of a sharded class (not `complete`) gives the class's rules and items but
        not its seats: the seats known stay those of the last view of the whole class."""
        self._items[key] = item
        if item is None or item.complete:
            # A class in pools read with them: the seats a take could get (docs/guides/pools.md).
            self.learn(key, None if item is None else item.seats_to_sell)

    def learn_pools(self, key: SeatKey, pools: Iterable[PoolInventory | None]) -> None:
        """A refused write handed back pools of the class: its seats left are at most theirs
        (a closed or missing pool: none), so the next group reads the class and its pools first."""
        known = self._seats_left.get(key)
        for pool in pools:
            seats = 0 if pool is None or pool.closed_reason() is not None else pool.available
            known = seats if known is None or known == self._MISSING else min(known, seats)
        if known is not None:
            self._seats_left[key] = known

    def reads_counters(self, key: SeatKey) -> bool:
        """True when a group of this class starts by reading its customers' counters: the last
        group here met a customer at the limit (a refused counter, or a counter read). Repeats
        (bots, refreshes) then come in runs, and a customer at the limit in a transaction cancels
        it for every customer in it; a sale without repeats never reads them."""
        return key in self._customers_at_limit

    def note_customers_at_limit(self, key: SeatKey, *, at_limit: bool) -> None:
        """What a group of the class found: a customer at the limit, or (a counter read) none."""
        if at_limit:
            self._customers_at_limit.add(key)
        else:
            self._customers_at_limit.discard(key)

    def own_shard(self, key: SeatKey) -> OwnShard | None:
        """This container's shard of a sharded class, None until it settles on one."""
        return self._shards.get(key)

    def settle_on(self, key: SeatKey, shard: int, left: int | None) -> None:
        """This container takes from `shard` (chosen from a survey, or a transaction committed
        there), which it saw with `left` available seats (None: not known)."""
        self._shards[key] = OwnShard(shard, left)

    def leave_shard(self, key: SeatKey) -> None:
        """A transaction conflicted on this container's shard: the next one looks for another."""
        self._shards.pop(key, None)

    def own_pool_item(self, event_id: str, pool: str) -> int | None:
        """The item of a sharded pool this container's orders take from (docs/guides/orders.md), None
        until an order committed on one."""
        return self._pool_items.get((event_id, pool))

    def settle_on_pool_item(self, event_id: str, pool: str, item: int) -> None:
        """An order committed on item `item` of the pool: the next orders take from it too."""
        self._pool_items[(event_id, pool)] = item

    def leave_pool_items(self, event_id: str, pools: Iterable[str]) -> None:
        """An order's transaction conflicted: the next one routes its pools afresh."""
        for pool in pools:
            self._pool_items.pop((event_id, pool), None)

    def assumed(self, key: SeatKey) -> SeatClassInventory | None:
        """The item as last seen, for the assumptions of an optimistic write; None when never seen."""
        return self._items.get(key)
