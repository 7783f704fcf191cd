"""`seats bench --orders N`: multi-line orders through the real handler on the local stack
(docs/guides/orders.md, docs/reference/benchmarks.md "Orders").

One event with `ORDER_CLASSES` counted classes, each `capacity` seats over `shards` items, all in
one capacity pool (as many seats as the classes together, over `pool_shards` items). N orders of
1 to 4 lines of one seat each (classes drawn with the seed) are sent to the stack's queue and
drained by the local runner's workers (the reservation function as deployed). Then every class
and the pool are read, and every order's record: each class's and the pool's sold and held must
equal the confirmed records' lines, each record must hold all its order's lines or none, and no
order may be refused SOLD_OUT while its failing line's class still has its seats and the pool
those of it and the lines before it.
"""

from __future__ import annotations

import random
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from seat_inventory.models import Outcome, SeatKey, split_pool_ref
from seat_tools.bench.counting import COMMITTED, add_snapshots
from seat_tools.bench.run import SERVICE, Bench
from seat_tools.local.stack import LocalStack
from seat_tools.traffic import ORDER_CLASSES, OrderRequests

POOL = "hall"


@dataclass
class OrdersBenchResult:
    """What one orders run measured and found (`rows` prints it)."""

    orders: int
    lines_asked: int
    capacity: int
    shards: int
    pool_shards: int
    workers: int
    elapsed_s: float
    outcomes: dict[str, int]  # published answers by outcome (a redelivery may be answered again)
    recorded: dict[str, int]  # the orders' records by outcome: one per order
    lines_confirmed: int
    seats_sold: int
    transactions: dict[str, int]  # TransactWriteItems attempts: committed, and cancelled by reason
    handed_back: int
    problems: list[str] = field(default_factory=list)

    @property
    def cancelled_share(self) -> float:
        total = sum(self.transactions.values())
        return (total - self.transactions.get(COMMITTED, 0)) / total if total else 0.0

    def per_s(self, count: int) -> float:
        return count / self.elapsed_s if self.elapsed_s > 0 else 0.0

    def rows(self) -> list[tuple[str, str]]:
        confirmed = self.recorded.get(Outcome.CONFIRMED.value, 0)
        cancelled = {k: v for k, v in self.transactions.items() if k != COMMITTED}
        return [
            (
                "workload",
                f"{self.orders:,} orders of 1-4 lines of 1 seat ({self.lines_asked:,} lines) over"
                f" {len(ORDER_CLASSES)} classes of {self.capacity:,} seats on {self.shards} item(s) each,"
                f" one pool over {self.pool_shards} item(s); {self.workers} workers",
            ),
            (
                "orders confirmed / s",
                f"{self.per_s(confirmed):,.1f} ({confirmed:,} in {self.elapsed_s:.1f} s)",
            ),
            ("lines confirmed / s", f"{self.per_s(self.lines_confirmed):,.1f} ({self.lines_confirmed:,})"),
            ("seats sold / s", f"{self.per_s(self.seats_sold):,.1f} ({self.seats_sold:,})"),
            ("answers by outcome", ", ".join(f"{k} {v:,}" for k, v in sorted(self.outcomes.items())) or "-"),
            ("records by outcome", ", ".join(f"{k} {v:,}" for k, v in sorted(self.recorded.items())) or "-"),
            (
                "transactions",
                f"{self.transactions.get(COMMITTED, 0):,} committed, {sum(cancelled.values()):,} cancelled"
                f" ({self.cancelled_share:.0%}"
                + "".join(f"; {k} {v:,}" for k, v in sorted(cancelled.items()))
                + ")",
            ),
            ("messages handed back", f"{self.handed_back:,}"),
            (
                "counts",
                "; ".join(self.problems)
                if self.problems
                else "ok (every class and pool item equals the records)",
            ),
        ]


def run_orders_bench(
    stack: LocalStack,
    *,
    orders: int,
    capacity: int | None = None,
    shards: int = 1,
    pool_shards: int = 1,
    workers: int = 4,
    seed: int = 1,
    progress: Callable[[str], None] = lambda _line: None,
) -> OrdersBenchResult:
    """Runs `orders` orders through the reservation function on a started local stack and checks
    the counts (see the module's docstring); `capacity` None: each class has a seat per order."""
    seats = orders if capacity is None else capacity
    bench = Bench(stack, workers=workers, progress=progress)
    event_id = f"orders-{uuid.uuid4().hex[:8]}"
    bench.store.create_pool(event_id, POOL, seats * len(ORDER_CLASSES), shards=pool_shards)
    for seat_class in ORDER_CLASSES:
        bench.store.create_seat_class(SeatKey(event_id, seat_class), seats, shards=shards, pools=[POOL])
    drawn = OrderRequests.draw(orders, (1, len(ORDER_CLASSES)), 1, random.Random(seed))
    bodies: list[dict[str, Any]] = [
        {
            "reservation_id": f"{event_id}-{n}",
            "event_id": event_id,
            "customer_id": f"c-{n}",
            "lines": drawn.line_objects(n),
        }
        for n in range(orders)
    ]
    progress(f"orders: {orders} orders ({drawn.line_count} lines) on {event_id}, {workers} workers")
    bench.send(bodies)
    stats, elapsed = bench.drain(SERVICE, counted=True)
    counts = add_snapshots(stats.worker_reports)
    result = OrdersBenchResult(
        orders=orders,
        lines_asked=drawn.line_count,
        capacity=seats,
        shards=shards,
        pool_shards=pool_shards,
        workers=workers,
        elapsed_s=elapsed,
        outcomes={k: int(v) for k, v in counts.get("outcomes", {}).items() if v},
        recorded={},
        lines_confirmed=0,
        seats_sold=0,
        transactions={k: int(v) for k, v in counts.get("transactions", {}).items() if v},
        handed_back=stats.messages - stats.deleted,
    )
    _check(bench, event_id, drawn, result)
    return result


def _check(bench: Bench, event_id: str, drawn: OrderRequests, result: OrdersBenchResult) -> None:
    """Every class, every pool item and every order's record, read after the run."""
    recorded: Counter[str] = Counter()
    by_class: Counter[str] = Counter()
    by_pool_item: Counter[int] = Counter()
    refused: list[tuple[int, str | None, str]] = []  # SOLD_OUT orders: the failing line's class, the reason
    for n, asked in enumerate(drawn.lines):
        record = bench.store.get_reservation(f"{event_id}-{n}")
        if record is None:
            result.problems.append(f"order {n} has no record")
            continue
        recorded[record.outcome.value] += 1
        if record.outcome is Outcome.SOLD_OUT:
            refused.append((n, record.seat_class, record.reason))
        if record.outcome is not Outcome.CONFIRMED:
            continue
        lines = record.lines or ()
        if tuple((line.seat_class, line.quantity) for line in lines) != asked:
            result.problems.append(f"order {n} half-taken or changed: {lines} for {asked}")
        result.lines_confirmed += len(lines)
        for line in lines:
            by_class[line.seat_class] += line.quantity
            for ref in line.pools:
                by_pool_item[split_pool_ref(ref)[1]] += line.quantity
    result.recorded = dict(recorded)
    result.seats_sold = sum(by_class.values())
    left: dict[str, int] = {}
    for seat_class in ORDER_CLASSES:
        view = bench.store.read_inventory(SeatKey(event_id, seat_class))
        if view is None or (view.sold, view.held) != (by_class[seat_class], 0):
            sold = None if view is None else (view.sold, view.held)
            result.problems.append(f"{seat_class}: sold, held {sold}; records {by_class[seat_class]}")
        left[seat_class] = view.available if view is not None else 0
    pool = bench.store.get_pool(event_id, POOL)
    pool_left = pool.available if pool is not None else 0
    wrong = [
        (n, reason)
        for n, seat_class, reason in refused
        if drawn.refusal_contradicted(n, seat_class, left.get(seat_class or "", 0), pool_left)
    ]
    if wrong:
        named = "; ".join(f"order {n}: {reason}" for n, reason in wrong[:3])
        result.problems.append(
            f"{len(wrong)} order(s) SOLD_OUT whose line's class and pool have the seats left ({named})"
        )
    if pool is None or (pool.sold, pool.held) != (result.seats_sold, 0):
        sold = None if pool is None else (pool.sold, pool.held)
        result.problems.append(f"pool {POOL}: sold, held {sold}; records {result.seats_sold}")
    elif pool.shards and by_pool_item and any(s.sold != by_pool_item[s.shard] for s in pool.shards):
        result.problems.append(f"pool {POOL}: an item's sold differs from the records naming it")
