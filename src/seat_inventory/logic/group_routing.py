"""Where a counted group's take comes from: the shard item of a sharded class this container
takes from (`logic.shards`), the seats moved into it when no item alone has them, each sharded
pool's item, and how much of the plan one transaction holds (its actions, the seats last seen
on the item, the container's write window)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from seat_inventory.logic.group_plan import GroupPlan, prefix_that_fits, prefix_within_seats
from seat_inventory.logic.inventory_hints import OwnShard
from seat_inventory.logic.shards import (
    gather_moves,
    gather_target,
    pick_shard,
    route,
    routed_shards,
    shards_with,
)
from seat_inventory.models import (
    TAKES_SEATS,
    PoolInventory,
    SeatClassInventory,
    ShardSurvey,
    TransactionConflict,
)

if TYPE_CHECKING:
    from seat_inventory.logic.settle_group import GroupSettlement

# How many times a container that needs a shard waits for one that no other container uses
# before it shares one in use (there are more containers than items with seats left). With 3,
# `seats simulate --requests 1000000 --containers 100 --shards 64` cancels 9.8% of transactions
# and hands back no message (docs/explanation/sharding.md, "How to size K").
MAX_SHARD_WAITS = 3
# A group taking seats for at most this many reservations does not wait: it shares an item in
# use at once. Waiting spares a conflict that would cancel a transaction of up to 100 actions,
# charged its write units; a small one risks little, and waiting only delays it while the items
# with seats are all in use (a repeated-customer sale's drain, where most customers of a group
# are at their limit and the few left take a few seats each). 24 is about half the reservations
# a transaction holds with a per-customer limit (49, each with its counter); docs/explanation/simulation.md,
# "Repeated customers on a pre-warmed table", has the runs.
SHARE_AT_ONCE_TAKES = 24


@dataclass(frozen=True, slots=True)
class PoolRoute:
    """Where a take's seats come off its sharded pools (docs/guides/pools.md): a take from shard s of
    a class writes item `s mod K` of a pool of K items (so a container that owns class shard s
    owns that pool item as far as the class's shards spread over containers), and when a view of
    the whole pool shows that item short, seats (and as much capacity) move into it from the
    pool's fullest other items in the same transaction, each guarded by `available >=` what it
    gives. Pools of one item: shard 0, no moves."""

    shards: dict[str, int]
    moves: dict[str, dict[int, int]]

    @property
    def move_count(self) -> int:
        return sum(len(m) for m in self.moves.values())

    @classmethod
    def of(cls, views: Mapping[str, PoolInventory], shard: int, seats: int) -> PoolRoute:
        shards: dict[str, int] = {}
        moves: dict[str, dict[int, int]] = {}
        for name, view in views.items():
            if view.shard_count <= 1:
                continue
            target = view.shard_for(shard)
            shards[name] = target
            if view.shards and seats:
                moves[name] = view.moves_into(target, seats)
        return cls(shards, {name: m for name, m in moves.items() if m})


@dataclass(frozen=True, slots=True)
class GroupTake:
    """Where a round's plan takes its seats: shard item `shard`, after `moves` (shard -> seats) from
    others; `own` is the container's shard as routing found it, `on_own_shard` whether the plan
    was routed there (and trimmed to the seats last seen on it); `pools`: each sharded pool's item
    and the seats moved into it."""

    plan: GroupPlan
    shard: int
    moves: dict[int, int]
    own: OwnShard | None
    on_own_shard: bool
    pools: PoolRoute | None = None


class GroupRouter:
    """Routes a settlement's plans (`GroupSettlement`): reads its state, trims its pending requests
    to what one transaction holds, and settles the container on a shard item."""

    def __init__(self, settlement: GroupSettlement) -> None:
        self.s = settlement

    def route(self, plan: GroupPlan) -> GroupTake | None:
        """Where the plan takes its seats, trimmed to what one transaction holds; None when the
        class is sharded and no item alone has the seats of its first request."""
        s = self.s
        view = s.knowledge.view
        seen = view or s.hints.assumed(s.key)
        if (
            seen is not None
            and seen.shard_items > 1
            and plan.seats_taken
            and (view is None or any(item.available >= plan.first_seats for item in view.shard_seats()))
        ):
            # A sharded class whose first request one item can serve: the group takes from this
            # container's shard. Only a request no item alone can serve needs a whole read and
            # seats moved.
            return self._take_from_own_shard(plan, seen)
        return self._take_routed(plan, seen, read_whole=view is not None)

    def _take_from_own_shard(self, plan: GroupPlan, seen: SeatClassInventory) -> GroupTake | None:
        """Takes from this container's shard as far as the seats last seen there go (its guard
        decides); settles on another one first when it has none or too few for the first request."""
        s = self.s
        own = s.hints.own_shard(s.key)
        if own is None or (own.left is not None and own.left < plan.first_seats):
            takes = sum(1 for o in plan.outcomes if o.outcome in TAKES_SEATS)
            waits = 0 if takes <= SHARE_AT_ONCE_TAKES else MAX_SHARD_WAITS
            short_of = self._settle_on_a_shard(plan.first_seats, seen.shard_items, waits)
            if short_of is not None:
                return self._take_with_moves(plan, short_of)
            own = s.hints.own_shard(s.key)
            assert own is not None
        pool_moves = self._pool_route(own.shard, plan.seats_taken).move_count
        fits = min(prefix_that_fits(plan, pool_moves), prefix_within_seats(plan, own.left), self.window(plan))
        plan = s.trim(plan, fits)
        return GroupTake(plan, own.shard, {}, own, True, self._pool_route(own.shard, plan.seats_taken))

    def _take_with_moves(self, plan: GroupPlan, survey: Sequence[ShardSurvey]) -> GroupTake | None:
        """No shard item alone has the seats of the first request, but the survey shows enough
        over several: the seats move into one item in the same transaction, each move guarded by
        its donor's `available >=` (a survey is no snapshot: the guards decide). None when the
        survey shows too few: only a consistent read of the whole class can say SOLD_OUT."""
        s = self.s
        total = sum(item.available for item in survey)
        if total < plan.first_seats:
            return None
        plan = s.trim(plan, min(prefix_within_seats(plan, total), self.window(plan)))
        now = s.clock.now()
        target = gather_target(survey, now, s.hints.rng)
        moves = gather_moves(survey, target, plan.seats_taken, now)
        pool_moves = self._pool_route(target.shard, plan.seats_taken).move_count
        fits = prefix_that_fits(plan, len(moves) + pool_moves)
        if fits < len(s.queue):
            plan = s.trim(plan, fits)
            moves = gather_moves(survey, target, plan.seats_taken, now)  # fewer seats, no more donors
        own = OwnShard(target.shard, target.available)
        return GroupTake(
            plan, target.shard, moves, own, False, self._pool_route(target.shard, plan.seats_taken)
        )

    def _take_routed(
        self, plan: GroupPlan, seen: SeatClassInventory | None, *, read_whole: bool
    ) -> GroupTake:
        """A class of one item, or a sharded one read whole: the seats may have to move into one
        item from others, and each move is one more action in the transaction."""
        s = self.s
        own = s.hints.own_shard(s.key)
        rng = s.hints.rng
        preferred = own.shard if own is not None else rng.randrange(routed_shards(seen))
        shard, moves = route(seen, plan.seats_taken, preferred, rng, read_whole=read_whole)
        pool_moves = self._pool_route(shard, plan.seats_taken).move_count
        fits = min(prefix_that_fits(plan, len(moves) + pool_moves), self.window(plan))
        if fits < len(s.queue):
            plan = s.trim(plan, fits)
            # Fewer seats: the same item, or moves from no more items than planned for.
            shard, moves = route(seen, plan.seats_taken, shard, rng, read_whole=read_whole)
        return GroupTake(plan, shard, moves, own, False, self._pool_route(shard, plan.seats_taken))

    def _pool_route(self, shard: int, seats: int) -> PoolRoute:
        """Where a take from class shard `shard` takes its seats off each sharded pool of the
        class (docs/guides/pools.md): the pool's item `shard mod K`, the seats moved into it as the
        pools' views in hand show them (the guards decide)."""
        s = self.s
        views: dict[str, PoolInventory] = {}
        assumed = s.hints.assumed(s.key)
        if assumed is not None and assumed.pool_items:
            # Seen before this settlement: how many items each pool has, not their seats now.
            views.update((p.pool, dataclasses.replace(p, shards=())) for p in assumed.pool_items)
        views.update((name, p) for name, p in s.knowledge.pools.items() if p is not None)
        pools = s.knowledge.class_pools
        return PoolRoute.of({name: v for name, v in views.items() if name in pools}, shard, seats)

    def window(self, plan: GroupPlan) -> int:
        """How many of the pending requests this container writes in one transaction that takes
        seats: its adaptive window (`logic.write_window`); rejections alone are puts, not windowed."""
        return self.s.hints.write_limit.records if plan.seats_taken else len(self.s.queue)

    def _settle_on_a_shard(self, seats: int, shard_items: int, waits: int) -> list[ShardSurvey] | None:
        """Surveys the class's shard items and settles on one that has `seats` and no other
        container; while every such item is in use, waits (like a conflict, until the deadline)
        and surveys again, at most `waits` times, then shares one. None once settled; the survey
        when no item alone has the seats."""
        s = self.s
        for wait in range(waits + 1):
            survey = s.deadline.patiently(
                s.clock, lambda: s.store.survey_shards(s.key, shard_items), f"survey of {s.key}"
            )
            if not shards_with(survey, seats):
                return survey
            # After the last wait, items in use count too (more containers than items with seats).
            share = wait == waits
            picked = pick_shard(survey, seats, s.clock.now(), s.hints.rng, share=share)
            if picked is not None:
                s.hints.settle_on(s.key, picked.shard, picked.available)
                return None
            s.conflicts += 1
            if not s.deadline.back_off(s.clock, s.conflicts):
                raise TransactionConflict(
                    f"every shard item of {s.key} with {seats} seat(s) stayed in use by other"
                    " containers until the deadline"
                )
        raise AssertionError("unreachable: the last wait settles on a shard")


def left_on_shard(
    own: OwnShard | None,
    view: SeatClassInventory | None,
    shard: int,
    moves: Mapping[int, int],
    seats_taken: int,
) -> int | None:
    """The seats a committed take left on `shard`, as far as this container knows them."""
    if view is not None:
        seen = next((item for item in view.shard_seats() if item.shard == shard), None)
        return None if seen is None else seen.available + sum(moves.values()) - seats_taken
    if own is not None and own.shard == shard and own.left is not None:
        return own.left + sum(moves.values()) - seats_taken
    return None
