"""The per-event ceiling: how many reservations per second one seat class can take on AWS.

Derived from what a bench run measured on the hot workload and from the contention model's
settings (`seat_tools.contention.model`: AWS's documented per-partition limit and the
published latencies), with these assumptions:

1. Write units: the inventory item's partition takes `write_units_per_s` (1,000) write units
   per second. Reservations per second <= that / the partition's write units per confirmed
   reservation, as counted (cancelled transactions included: AWS charges a cancelled
   transaction's units, the model assumes, and they come out of the same partition's budget).
2. Serialization (transactional designs only): a `TransactWriteItems` holds the inventory item
   from its start to its commit, so the item commits one transaction at a time. With the
   committed hot-item transactions' mean size n (actions, as counted) and their mean latency
   on AWS (the model's log-normal for n items: mean = p50 x exp(sigma^2 / 2)), commits per
   second <= 1 / that mean, and reservations per second <= confirmed reservations per committed
   transaction (as counted) x commits per second. This is an upper bound: it assumes the next
   transaction starts the instant the previous one commits, which a queue of contending
   containers approaches but never reaches (a cancelled attempt holds nothing, and a retry
   starts later).

The ceiling is the lower of the two. Designs without transactions (one `UpdateItem` per message)
only have the first.

A class sharded over K items (docs/explanation/sharding.md) has K partition keys, each with its own write
units and each committing one transaction at a time:

1. the busiest shard item's partition bounds the rate: its share of the class's inventory writes
   (as counted per item) times the write units per reservation must stay within 1,000 per second;
2. the K items together commit at most K item-transactions per mean latency: with m shard items
   per committed transaction (as counted: a transaction that moves seats between shards holds
   several), commits per second <= K / (m x mean latency). This assumes at least K containers
   selling at once, spread evenly over the shards: with fewer containers than shards, some
   shards sit idle and the rate measured stays far below it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from seat_tools.contention.model import ContentionSettings, mean_latency_ms

TRANSACT_WRITE = "TransactWriteItems"


@dataclass(frozen=True)
class Ceiling:
    """The two bounds (reservations per second per event) and what each rests on."""

    write_units_per_reservation: float
    write_units_bound: float
    actions_per_transaction: float | None = None
    transaction_latency_s: float | None = None
    reservations_per_transaction: float | None = None
    serialization_bound: float | None = None
    shards: int = 1
    busiest_shard_share: float = 1.0  # the busiest item's share of the inventory writes
    shard_items_per_transaction: float | None = None

    @property
    def value(self) -> float:
        bounds = [self.write_units_bound]
        if self.serialization_bound is not None:
            bounds.append(self.serialization_bound)
        return min(bounds)

    @property
    def limited_by(self) -> str:
        if self.serialization_bound is not None and self.serialization_bound < self.write_units_bound:
            return "one transaction at a time on the item" + (" (each)" if self.shards > 1 else "")
        return "the partition's write units" + (" (the busiest shard's)" if self.shards > 1 else "")


def mean_transaction_latency_s(actions: float) -> float:
    """Mean AWS latency (seconds) of a TransactWriteItems of `actions` items, by the model's
    distribution (the published quantiles, tail included)."""
    return mean_latency_ms(TRANSACT_WRITE, max(1, round(actions))) / 1000


def ceiling_per_event(
    *,
    write_units_per_reservation: float,
    settings: ContentionSettings,
    confirmed: int = 0,
    committed_transactions: int = 0,
    transaction_actions: int = 0,
    shards: int = 1,
    busiest_shard_share: float = 1.0,
    transaction_items: int | None = None,
) -> Ceiling:
    """The ceiling from a run's counts on one hot seat class (see the module's assumptions).

    `shards` is K, the class's shard items; `busiest_shard_share` the largest share of the
    inventory writes one of them took; `transaction_items` the shard items the committed
    transactions held in all (None: one each).
    """
    if shards < 1 or not 0 < busiest_shard_share <= 1:
        raise ValueError("shards >= 1 and 0 < busiest_shard_share <= 1")
    busiest_units = write_units_per_reservation * busiest_shard_share
    write_bound = settings.write_units_per_s / busiest_units if busiest_units > 0 else math.inf
    if not committed_transactions or not confirmed:
        return Ceiling(
            write_units_per_reservation, write_bound, shards=shards, busiest_shard_share=busiest_shard_share
        )
    actions = transaction_actions / committed_transactions
    latency = mean_transaction_latency_s(actions)
    per_transaction = confirmed / committed_transactions
    items = (transaction_items or committed_transactions) / committed_transactions
    return Ceiling(
        write_units_per_reservation,
        write_bound,
        actions_per_transaction=actions,
        transaction_latency_s=latency,
        reservations_per_transaction=per_transaction,
        serialization_bound=per_transaction * shards / (max(items, 1.0) * latency),
        shards=shards,
        busiest_shard_share=busiest_shard_share,
        shard_items_per_transaction=items,
    )
