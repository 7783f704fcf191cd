"""`seats simulate --order-lines LO-HI`: every request is a multi-line order (docs/guides/orders.md).

The event has `ORDER_CLASSES` counted classes, each sharded like the single class of a plain run
and all in one capacity pool when the run has one (`--pool-shards`). Request i is an order of
LO to HI lines (drawn with the seed), each line `seats_per_request` seats of a different class
(drawn too). The checks compare every class's items and every pool's items with the records'
lines, every order's record with the lines it asked for (all taken or none), and count the
orders refused SOLD_OUT while their failing line's class had its seats and the pool those of it
and the lines before it.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from seat_inventory.models import Outcome, ReservationOutcome, SeatKey, split_pool_ref
from seat_tools.simulation.memory_store import InMemoryInventoryStore
from seat_tools.traffic import ORDER_CLASSES, OrderRequests


def order_figures(
    data: InMemoryInventoryStore,
    event_id: str,
    orders: OrderRequests,
    pool: str | None,
    sale_seconds: float,
) -> dict[str, Any]:
    """The orders' own figures (lines and seats confirmed, per second) and the checks: every class's
    and pool item's held and sold equal the records' lines, each order took all its lines or none."""
    problems: list[str] = []
    class_sold: Counter[str] = Counter()
    shard_sold: Counter[tuple[str, int]] = Counter()
    pool_sold: Counter[str] = Counter()
    lines_confirmed = 0
    recorded: Counter[str] = Counter(outcome.outcome.value for outcome in data.records.values())
    for outcome in data.records.values():
        request = int(outcome.reservation_id.removeprefix("r-"))
        taken = _taken_lines(outcome)
        if outcome.outcome is Outcome.CONFIRMED:
            asked = orders.lines[request]
            if tuple((line.seat_class, line.quantity) for line in taken) != asked:
                problems.append(f"order {outcome.reservation_id} half-taken or changed: {taken} for {asked}")
            lines_confirmed += len(taken)
            for line in taken:
                class_sold[line.seat_class] += line.quantity
                shard_sold[(line.seat_class, line.shard)] += line.quantity
                for ref in line.pools:
                    pool_sold[ref] += line.quantity
        elif outcome.outcome is Outcome.HELD:
            problems.append(f"order {outcome.reservation_id} held: the workload holds nothing")
    for seat_class in ORDER_CLASSES:
        _check_class(data, SeatKey(event_id, seat_class), class_sold, shard_sold, problems)
    if pool is not None:
        _check_pool(data, event_id, pool, pool_sold, sum(class_sold.values()), problems)
    wrong = _refused_with_seats_left(data, event_id, orders, pool)
    if wrong:
        problems.append(
            f"{wrong:,} order(s) SOLD_OUT while their failing line's class and the pool have its seats left"
        )
    seats = sum(class_sold.values())
    return {
        "orders": {
            "lines_asked": orders.line_count,
            "lines_per_order": orders.line_count / len(orders.lines),
            "lines_confirmed": lines_confirmed,
            "lines_confirmed_per_s": lines_confirmed / sale_seconds if sale_seconds > 0 else 0.0,
            "seats_sold": seats,
            # One record per order answered (`outcomes` counts first publications only: an order
            # whose first answer was lost with its batch is answered again as a duplicate).
            "recorded": dict(sorted(recorded.items())),
            "sold_by_class": dict(sorted(class_sold.items())),
        },
        "invariants": problems[:10] or "ok",
    }


def _refused_with_seats_left(
    data: InMemoryInventoryStore, event_id: str, orders: OrderRequests, pool: str | None
) -> int:
    """SOLD_OUT orders whose failing line's class and the pool still have the seats that refused
    it at the end (`OrderRequests.refusal_contradicted`): seats only go in this workload (no holds,
    no cancels), so they had them at the refusal too."""
    whole = data.pool(event_id, pool) if pool is not None else None
    pool_left = whole.available if whole is not None else None
    wrong = 0
    for outcome in data.records.values():
        if outcome.outcome is not Outcome.SOLD_OUT or outcome.seat_class is None:
            continue
        request = int(outcome.reservation_id.removeprefix("r-"))
        left = data.inventory[SeatKey(event_id, outcome.seat_class)].available
        wrong += orders.refusal_contradicted(request, outcome.seat_class, left, pool_left)
    return wrong


def _taken_lines(outcome: ReservationOutcome) -> tuple[Any, ...]:
    return outcome.lines or ()


def _check_class(
    data: InMemoryInventoryStore,
    key: SeatKey,
    class_sold: Counter[str],
    shard_sold: Counter[tuple[str, int]],
    problems: list[str],
) -> None:
    item = data.inventory[key]
    if item.sold != class_sold[key.seat_class] or item.held != 0:
        problems.append(
            f"{key.seat_class}: sold {item.sold}, held {item.held}; records {class_sold[key.seat_class]}"
        )
    if item.available + item.held + item.sold != item.capacity or item.available < 0:
        problems.append(f"{key.seat_class}: available + held + sold != capacity, or below 0")
    for shard in item.shards:
        if shard.sold != shard_sold[(key.seat_class, shard.shard)]:
            problems.append(
                f"{key.seat_class} shard {shard.shard}: sold {shard.sold};"
                f" records {shard_sold[(key.seat_class, shard.shard)]}"
            )
        if shard.available < 0 or shard.available + shard.held + shard.sold != shard.capacity:
            problems.append(f"{key.seat_class} shard {shard.shard}: counts do not add up")


def _check_pool(
    data: InMemoryInventoryStore,
    event_id: str,
    pool: str,
    pool_sold: Counter[str],
    seats: int,
    problems: list[str],
) -> None:
    whole = data.pool(event_id, pool)
    if whole is None:
        problems.append(f"pool {pool} missing")
        return
    if whole.sold != seats or whole.held != 0 or whole.available < 0:
        problems.append(f"pool {pool}: sold {whole.sold}, held {whole.held}; the classes sold {seats}")
    by_item: Counter[int] = Counter()
    for ref, sold in pool_sold.items():
        name, shard = split_pool_ref(ref)
        if name == pool:
            by_item[shard] += sold
    for (event, ref), item in data.pools.items():
        name, shard = split_pool_ref(ref)
        if event != event_id or name != pool:
            continue
        if item.sold != by_item[shard]:
            problems.append(f"pool item {ref}: sold {item.sold}; records name it for {by_item[shard]}")
        if item.available < 0 or item.available + item.held + item.sold != item.capacity:
            problems.append(f"pool item {ref}: counts do not add up")
