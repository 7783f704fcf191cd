"""Acceptance on DynamoDB Local: concurrent containers selling a seat class split over K shard items
(docs/explanation/sharding.md), with duplicate deliveries and reshards while they sell.

Demand is about twice the supply, so the class must sell exactly its capacity: no oversell, and no
seat stranded on a shard while requests are answered SOLD_OUT. Every reservation id gets exactly
one decision (redeliveries republish it flagged `duplicate`). The lifecycle run mixes holds,
confirmations, cancellations and expiries on shards and reshards meanwhile. DynamoDB Local's
transactions are atomic under concurrency (moto's are not, so no race is judged on moto).
"""

from __future__ import annotations

import json
import random
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable

import pytest

from seat_inventory.logic.reserve_seats import QueueMessage
from seat_inventory.logic.sweep_holds import SweepResult, release_expired_holds
from seat_inventory.models import Outcome, RequestType, ReservationOutcome, SeatClassInventory, SeatKey
from seat_tools.local.stack import LocalStack
from seat_tools.operator_commands import OperatorTable
from tests.fakes import RecordingPublisher
from tests.local.crowd import Crowd, Delivery, ShiftedClock, container, sweeper
from tests.local.test_lifecycle_concurrency import FINAL_SWEEP_AHEAD, _messages

pytestmark = pytest.mark.local_stack

WORKERS = 8
CAPACITY = 300
REQUESTS = 300  # 1-3 seats each: about twice the capacity


def _assert_shards_consistent(view: SeatClassInventory | None, capacity: int) -> SeatClassInventory:
    assert view is not None and view.complete
    for shard in view.shard_seats():
        assert min(shard.available, shard.held, shard.sold) >= 0, shard
        assert shard.available + shard.held + shard.sold == shard.capacity, shard
    assert view.capacity == capacity
    assert view.available + view.held + view.sold == capacity
    return view


def _resharder(admin: OperatorTable, key: SeatKey, counts: list[int], crowd: Crowd) -> Callable[[], None]:
    """Background work: reshards the class to each of `counts` in turn, 50 ms apart, while the
    containers sell."""

    def reshard() -> None:
        for shards in counts:
            if crowd.finished.wait(0.05):
                return
            admin.reshard(key, shards)

    return reshard


@pytest.mark.parametrize("shards", [4, 16])
def test_concurrent_containers_sell_exactly_the_capacity_over_k_shards(
    local_stack: LocalStack, shards: int
) -> None:
    # Given a class over K shards and twice as much demand, each message delivered 1-3 times
    rng = random.Random(shards)
    run_id = uuid.uuid4().hex[:8]
    key = SeatKey(f"sharded-{run_id}", "GA")
    admin = OperatorTable(local_stack.client("dynamodb"), local_stack.table_name)
    admin.create_seat_class(key, CAPACITY, shards=shards)
    quantities = {f"r-{run_id}-{n}": rng.randint(1, 3) for n in range(REQUESTS)}
    originals = [
        QueueMessage(
            f"m-{rid}",
            json.dumps({"reservation_id": rid, "event_id": key.event_id, "quantity": q, "customer_id": rid}),
        )
        for rid, q in quantities.items()
    ]
    deliveries = [m for m in originals for _ in range(rng.choice((1, 1, 2, 3)))]
    rng.shuffle(deliveries)
    queue = Delivery(list(deliveries))
    published: list[ReservationOutcome] = []

    # When eight containers sell while the class is resharded twice
    crowd = Crowd()
    crowd.run(
        [container(local_stack, queue, rng, batch=(5, 40), published=published) for _ in range(WORKERS)],
        [_resharder(admin, key, [shards * 2 if shards < 16 else 8, 3], crowd)],
    )
    assert crowd.errors == []

    # Then exactly the capacity is sold, on shards that each add up, and nothing is left anywhere
    view = _assert_shards_consistent(admin.read_inventory(key), CAPACITY)
    assert (view.sold, view.available, view.held) == (CAPACITY, 0, 0)
    records = admin.read_reservations(list(quantities))
    assert set(records) == set(quantities)
    confirmed = sum(r.quantity for r in records.values() if r.status is Outcome.CONFIRMED)
    assert confirmed == CAPACITY
    by_shard: dict[int, int] = defaultdict(int)
    for record in records.values():
        if record.status is Outcome.CONFIRMED:
            by_shard[record.shard] += record.quantity
    assert dict(by_shard) == {s.shard: s.sold for s in view.shard_seats() if s.sold}
    # every message answered; every reservation id decided exactly once
    assert {o.message_id for o in published} == {m.message_id for m in deliveries}
    decisions = Counter(o.reservation_id for o in published if not o.duplicate)
    assert set(decisions.values()) == {1} and set(decisions) == set(quantities)
    assert {o.outcome for o in published} == {Outcome.CONFIRMED, Outcome.SOLD_OUT}


def test_a_concurrent_lifecycle_over_shards_keeps_every_seat_and_applies_each_change_once(
    local_stack: LocalStack,
) -> None:
    # Given a class over 4 shards, and a shuffled, duplicated mix of reserve/hold/confirm/cancel
    rng = random.Random(20261124)
    run_id = uuid.uuid4().hex[:8]
    event_id = f"sharded-life-{run_id}"
    key = SeatKey(event_id, "GA")
    capacity = 150
    admin = OperatorTable(local_stack.client("dynamodb"), local_stack.table_name)
    admin.create_seat_class(key, capacity, shards=4)
    deliveries, quantities = _messages(event_id, f"r-{run_id}", rng)
    queue = Delivery(list(deliveries))
    published: list[ReservationOutcome] = []
    sweeps: list[SweepResult] = []

    # When containers, two sweepers and a resharder run at the same time
    crowd = Crowd()
    crowd.run(
        [container(local_stack, queue, rng, batch=(5, 40), published=published) for _ in range(WORKERS)],
        [
            crowd.repeat(sweeper(local_stack, limit=50, sweeps=sweeps), 0.02),
            crowd.repeat(sweeper(local_stack, limit=50, sweeps=sweeps), 0.02),
            _resharder(admin, key, [9, 2, 6], crowd),
        ],
    )
    assert crowd.errors == []
    sweeps.append(
        release_expired_holds(admin, RecordingPublisher(), ShiftedClock(FINAL_SWEEP_AHEAD), limit=10_000)
    )

    # Then every shard adds up, nothing is held, sold equals the confirmed records
    view = _assert_shards_consistent(admin.read_inventory(key), capacity)
    assert view.held == 0
    records = admin.read_reservations(list(quantities))
    by_status: dict[Outcome, int] = defaultdict(int)
    for record in records.values():
        by_status[record.status] += record.quantity
    assert view.sold == by_status[Outcome.CONFIRMED] and by_status[Outcome.HELD] == 0
    # And each reserve/hold was decided once, each confirm, cancel and expiry applied once
    mine = [o for o in published if o.reservation_id in quantities]
    assert {o.message_id for o in mine} == {m.message_id for m in deliveries}
    first: Callable[[ReservationOutcome], bool] = lambda o: not o.duplicate  # noqa: E731
    decisions = Counter(
        o.reservation_id
        for o in mine
        if o.request_type in (RequestType.RESERVE, RequestType.HOLD) and first(o)
    )
    assert set(decisions.values()) == {1} and set(decisions) == set(records)
    confirms = Counter(
        o.reservation_id
        for o in mine
        if o.request_type is RequestType.CONFIRM and o.outcome is Outcome.CONFIRMED and first(o)
    )
    cancels = Counter(
        o.reservation_id
        for o in mine
        if o.request_type is RequestType.CANCEL and o.outcome is Outcome.CANCELLED and first(o)
    )
    expiries = Counter(o.reservation_id for s in sweeps for o in s.released if o.reservation_id in quantities)
    assert max([*confirms.values(), *cancels.values(), *expiries.values(), 1]) == 1
    assert min(len(confirms), len(cancels), len(expiries)) > 0
