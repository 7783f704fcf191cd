"""Shard arithmetic for the operator's commands and the simulation (docs/explanation/sharding.md): how many
shard items a class may have, how capacity is spread over them, added or removed, and how a
reshard spreads the available seats. The service only routes over the items that exist."""

from __future__ import annotations

from collections.abc import Mapping

from seat_inventory.models import MAX_SHARDS, SeatClassInventory


def check_shard_count(shards: int) -> None:
    if not 1 <= shards <= MAX_SHARDS:
        raise ValueError(f"the number of shards must be 1 to {MAX_SHARDS}, not {shards}")


def spread(total: int, shards: int) -> list[int]:
    """`total` split as evenly as possible over `shards` parts, the larger ones first."""
    base, extra = divmod(total, shards)
    return [base + (1 if index < extra else 0) for index in range(shards)]


def removal(view: SeatClassInventory, seats: int) -> dict[int, int]:
    """Which shards give up `seats` available seats (and as much capacity): the fullest first."""
    plan: dict[int, int] = {}
    left = seats
    for shard in sorted(view.shard_seats(), key=lambda s: (-s.available, s.shard)):
        if left <= 0:
            break
        take = min(shard.available, left)
        if take:
            plan[shard.shard] = take
            left -= take
    if left > 0:
        raise ValueError(f"only {view.available} seat(s) available, {seats} to remove")
    return plan


def rebalance(view: SeatClassInventory, shards: int) -> dict[int, int]:
    """The change of available seats (and capacity) per shard item that spreads the class's
    available seats evenly over the first `shards` items and empties the others (retired ones
    keep only their held and sold seats). The changes sum to 0: a reshard conserves the class."""
    check_shard_count(shards)
    items = max(shards, view.shard_items)
    current: Mapping[int, int] = {s.shard: s.available for s in view.shard_seats()}
    target = spread(view.available, shards) + [0] * (items - shards)
    return {shard: target[shard] - current.get(shard, 0) for shard in range(items)}
