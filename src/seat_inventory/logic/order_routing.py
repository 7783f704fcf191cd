"""Where a multi-line order's lines take their seats (docs/guides/orders.md, "Scale"): each counted
line's shard item (the container's own, as single lines route: `logic.shards`), and the one item
of each sharded pool every counted line of the order takes from, with the seats moved into it."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from seat_inventory.logic.shards import pick_shard, route
from seat_inventory.models import PoolInventory, SeatKey

if TYPE_CHECKING:
    from seat_inventory.logic.settle_order import OrderSettlement


@dataclass(frozen=True, slots=True)
class LineRoute:
    """Where one line takes its seats: shard item `shard`, after `moves` from other items; and
    off each sharded pool of its class, item `pool_shards[pool]` (class shard mod K), after
    `pool_moves[pool]` (donor item -> seats) moved into it (docs/guides/pools.md)."""

    shard: int
    moves: dict[int, int] = field(default_factory=dict)
    pool_shards: dict[str, int] = field(default_factory=dict)
    pool_moves: dict[str, dict[int, int]] = field(default_factory=dict)


class OrderRouter:
    """Routes an order's lines (`OrderSettlement`), reading its state and the container's hints."""

    def __init__(self, settlement: OrderSettlement) -> None:
        self.s = settlement

    def route(self) -> list[LineRoute] | None:
        """Each line's shard item and each pool's; None when a line's class was read again
        instead (no item alone had its seats)."""
        takes: list[LineRoute] = []
        for key, line in zip(self.s.keys, self.s.lines, strict=True):
            take = self._line_route(key, line.quantity)
            if take is None:
                return None
            takes.append(take)
        return self._route_pools(takes)

    def _line_route(self, key: SeatKey, seats: int) -> LineRoute | None:
        s = self.s
        view = s.view(key)
        hints = s.context.hints
        if view is None or view.shard_items == 1:  # a class of one item, or a mapped class
            return LineRoute(0)
        own = hints.own_shard(key)
        if own is not None and (own.left is None or own.left >= seats):
            return LineRoute(own.shard)
        if view.complete and key in s.verified:
            shard, moves = route(view, seats, own.shard if own else 0, hints.rng, read_whole=True)
            return LineRoute(shard, moves)
        context = s.context
        survey = context.deadline.patiently(
            context.clock, lambda: context.store.survey_shards(key, view.shard_items), f"survey of {key}"
        )
        picked = pick_shard(survey, seats, context.clock.now(), hints.rng, share=True)
        if picked is not None:
            hints.settle_on(key, picked.shard, picked.available)
            return LineRoute(picked.shard)
        s.read(key)  # no item alone has the seats: the whole class says whether seats move
        return None

    def _route_pools(self, takes: Sequence[LineRoute]) -> list[LineRoute]:
        """Each counted line's item of each sharded pool of its class: the one item the
        container's orders take from (`InventoryHints.own_pool_item`, else the first counted
        line's class shard mod K), the same for every counted line, and, where this settlement
        read the pool whole, the seats moved into it (`order_pool_routes`). A mapped line takes
        from item 0, as a single mapped take."""
        s = self.s
        demands = [
            PoolDemand(
                s.class_rules(key, s.view(key)).pools,
                take.shard,
                line.quantity,
                routed=key not in s.class_maps,
            )
            for key, line, take in zip(s.keys, s.lines, takes, strict=True)
        ]
        event_id = s.request.event_id or ""
        own = {
            pool: item
            for pool in {p for d in demands for p in d.pools}
            if (item := s.context.hints.own_pool_item(event_id, pool)) is not None
        }
        routes = order_pool_routes(demands, self._pool_views(), own)
        return [
            dataclasses.replace(take, pool_shards=shards, pool_moves=moves)
            for take, (shards, moves) in zip(takes, routes, strict=True)
        ]

    def _pool_views(self) -> dict[str, PoolInventory]:
        """What is known of each pool to route by: its items as seen in this settlement, else
        how many items it has as the hints last saw it (not their seats now)."""
        views: dict[str, PoolInventory] = {}
        for key in self.s.keys:
            assumed = self.s.context.hints.assumed(key)
            for pool in (assumed.pool_items or ()) if assumed is not None else ():
                views.setdefault(pool.pool, dataclasses.replace(pool, shards=()))
        views.update(self.s.pools_seen)
        return views


def pools_taken(takes: Sequence[LineRoute]) -> set[str]:
    """The sharded pools the takes route to an item of."""
    return {pool for take in takes for pool in take.pool_shards}


@dataclass(frozen=True, slots=True)
class PoolDemand:
    """One line as its pools see it: the pools of its class, its class shard, its seats."""

    pools: tuple[str, ...]
    shard: int
    seats: int
    routed: bool = True  # a counted line, routed to the order's item; False: a mapped line (item 0)


def order_pool_routes(
    demands: Sequence[PoolDemand], views: Mapping[str, PoolInventory], own: Mapping[str, int] | None = None
) -> list[tuple[dict[str, int], dict[str, dict[int, int]]]]:
    """Per line, where its seats come off each sharded pool, and the seats moved into that item
    from others.

    Every counted (`routed`) line of the order takes from **one** item of the pool: `own[pool]`,
    the item the container's orders take from, when it is one of the pool's items; else the
    first counted line's class shard mod K (as a single line's). So an order writes one item of
    each pool, and one its container keeps using, not one item per line that the other classes'
    containers write too (docs/guides/orders.md, "Scale"). Two containers may still meet on an item: the
    conflict makes both route afresh. A mapped line (not `routed`, shard 0) takes from item 0, as
    a single mapped take.

    Moves need a whole view of the pool (`shards`): lines on one item are summed, and each item
    the lines need more of than it has gets the difference from the items with seats to spare,
    most spare first (an item another line takes from gives only what that line leaves). The
    moves into an item are the first lines' on it, each at most its seats. With a view of one
    item only (K known, not the seats), the lines go to their items and the guards decide.
    """
    own = own or {}
    shards: list[dict[str, int]] = [{} for _ in demands]
    moves: list[dict[str, dict[int, int]]] = [{} for _ in demands]
    for name, view in views.items():
        on_pool = [(index, d) for index, d in enumerate(demands) if name in d.pools]
        if view.shard_count <= 1 or not on_pool:
            continue
        takers = _takers(view, on_pool, own.get(name))
        for index, item, _ in takers:
            shards[index][name] = item
        if view.shards:
            for index, given in _moves(view, takers).items():
                moves[index][name] = given
    return list(zip(shards, moves, strict=True))


def _takers(
    view: PoolInventory, on_pool: Sequence[tuple[int, PoolDemand]], order_item: int | None
) -> list[tuple[int, int, int]]:
    """(line, pool item, seats) for each line taking from the pool: counted lines on the order's
    item, a mapped one on its class shard's (0)."""
    routed = [d for _, d in on_pool if d.routed]
    if routed and (order_item is None or not 0 <= order_item < view.shard_count):
        order_item = view.shard_for(routed[0].shard)
    return [
        (index, order_item if d.routed and order_item is not None else view.shard_for(d.shard), d.seats)
        for index, d in on_pool
    ]


def _moves(view: PoolInventory, takers: Sequence[tuple[int, int, int]]) -> dict[int, dict[int, int]]:
    """Per line, the seats moved into its item from the pool's items with seats to spare."""
    wanted: dict[int, int] = {}
    for _, item, seats in takers:
        wanted[item] = wanted.get(item, 0) + seats
    spare = {s.shard: s.available - wanted.get(s.shard, 0) for s in view.shards}
    short = {item: max(0, -spare.get(item, -seats)) for item, seats in wanted.items()}
    moves: dict[int, dict[int, int]] = {}
    for index, item, seats in takers:
        need = min(seats, short[item])
        short[item] -= need
        for donor in sorted(spare, key=lambda n: (-spare[n], n)):
            if need <= 0 or spare[donor] <= 0:
                break
            given = min(need, spare[donor])
            moves.setdefault(index, {})[donor] = given
            spare[donor] -= given
            need -= given
    return moves
