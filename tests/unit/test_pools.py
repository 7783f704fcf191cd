"""Capacity pools (docs/guides/pools.md) on the in-memory store: a class takes its seats from its own
capacity and from every pool it belongs to, in the same write; releases give them back once.

Given / When / Then; the fake store has the DAL's guards (tests/fakes.py), and the model-based
test drives random pools, classes, reserves, holds, confirms, cancels, expiries and duplicates.
"""

from __future__ import annotations

import dataclasses
import random

import pytest

from seat_inventory.logic.inventory_hints import InventoryHints
from seat_inventory.logic.reserve_seats import QueueMessage
from seat_inventory.logic.sweep_holds import release_expired_holds
from seat_inventory.models import Outcome, SaleStatus, SeatKey, StoreInconsistency, pool_ref, split_pool_ref
from tests.containers import NOW, TTL, Container, StepClock, counting_pool_refusals, message, take
from tests.fakes import FakeClock, InMemoryInventoryStore, RecordingPublisher
from tests.writes import GroupWrite, commit_outcomes


@pytest.fixture
def store() -> InMemoryInventoryStore:
    # A weekend: 10 seats; Saturday (8) and the weekend pass (6) both use them.
    store = InMemoryInventoryStore()
    store.add_pool("e-1", "weekend", 10)
    store.add_event("e-1", 8, "SAT", pools=["weekend"])
    store.add_event("e-1", 6, "PASS", pools=["weekend"])
    store.add_event("e-1", 5, "PARKING")
    return store


@pytest.fixture
def container(store: InMemoryInventoryStore) -> Container:
    return Container(store, FakeClock(time=NOW))


def pool_seats(store: InMemoryInventoryStore, name: str = "weekend") -> tuple[int, int, int]:
    pool = store.pool("e-1", name)
    assert pool is not None
    assert pool.available + pool.held + pool.sold == pool.capacity, "pool invariant broken"
    return pool.available, pool.held, pool.sold


def test_classes_take_from_their_shared_pool_and_the_pool_bounds_them(container, store) -> None:
    # When Saturday sells 6 and the pass 4: the pool's 10 are gone, though each class has seats left
    container.run(take(1, "SAT", 6))
    container.run(take(2, "PASS", 4))
    result = container.run(take(3, "SAT", 1), take(4, "PARKING", 2))

    # Then the last Saturday ticket is SOLD_OUT, naming the pool; the parking (no pool) sells
    assert result.failed_message_ids == []
    assert [container.answer(f"m-{n}").outcome for n in (3, 4)] == [Outcome.SOLD_OUT, Outcome.CONFIRMED]
    refused = container.answer("m-3")
    assert refused.reason == "requested 1 seat(s), 0 left in pool weekend"
    assert refused.remaining == 0
    assert pool_seats(store) == (0, 0, 10)
    assert store.inventory[SeatKey("e-1", "SAT")].available == 2
    # Records remember the pools their seats came from; the parking's none.
    assert store.record("r-1").pools == ("weekend",)
    assert store.record("r-4").pools == ()


def test_a_group_that_the_pool_cannot_serve_whole_takes_what_fits_in_arrival_order(container, store) -> None:
    # Given 7 of the pool's 10 seats gone
    container.run(take(1, "PASS", 6))
    container.run(take(2, "SAT", 1))
    # When Saturday's next group wants 2, 2 and 1 (the pool has 3)
    container.run(take(3, "SAT", 2), take(4, "SAT", 2), take(5, "SAT", 1))
    # Then the first and the last fit, the middle one does not
    assert [container.answer(f"m-{n}").outcome for n in (3, 4, 5)] == [
        Outcome.CONFIRMED,
        Outcome.SOLD_OUT,
        Outcome.CONFIRMED,
    ]
    assert pool_seats(store) == (0, 0, 10)


def test_a_closed_pool_closes_the_sale_of_its_classes_only(container, store) -> None:
    store.change_pool("e-1", "weekend", sale_status=SaleStatus.CLOSED)
    container.run(take(1, "SAT"), take(2, "PARKING"))
    assert container.answer("m-1").outcome is Outcome.SALE_CLOSED
    assert container.answer("m-1").reason == "the sale of pool weekend of e-1 is closed"
    assert container.answer("m-2").outcome is Outcome.CONFIRMED
    assert pool_seats(store) == (10, 0, 0)


def test_cancel_confirm_and_expiry_give_the_pool_its_seats_back_exactly_once(container, store) -> None:
    clock = container.clock
    container.run(take(1, "SAT", 3))
    container.run(take(2, "PASS", 2, hold=60), take(3, "PASS", 1, hold=60))
    assert pool_seats(store) == (4, 3, 3)

    # The first hold is confirmed, the sale cancelled (twice: a redelivery)
    container.run(message(10, type="confirm", reservation_id="r-2"))
    container.run(message(11, type="cancel", reservation_id="r-1"))
    container.run(message(12, type="cancel", reservation_id="r-1"))
    assert pool_seats(store) == (7, 1, 2)

    # The other hold runs out; the sweeper gives its seat back (run twice: once)
    clock.time += 61
    for _ in range(2):
        release_expired_holds(
            store, RecordingPublisher(), clock, limit=100, rejection_ttl_seconds=TTL, hints=InventoryHints()
        )
    assert pool_seats(store) == (8, 0, 2)
    assert store.inventory[SeatKey("e-1", "PASS")].available == 4


def test_a_class_that_names_a_missing_pool_sells_nothing_and_hands_the_messages_back(store) -> None:
    store.add_event("e-1", 5, "SUN", pools=["sunday"])
    container = Container(store, FakeClock(time=NOW))
    result = container.run(take(1, "SUN"))
    assert result.failed_message_ids == ["m-1"]
    assert store.inventory[SeatKey("e-1", "SUN")].available == 5


def test_the_planner_raises_a_store_inconsistency_for_a_missing_pool(store) -> None:
    from seat_inventory.logic.group_plan import GroupKnowledge, plan_group
    from seat_inventory.models import ReservationRequest

    knowledge = GroupKnowledge()
    knowledge.observe(store.inventory[SeatKey("e-1", "SAT")])
    knowledge.pools["weekend"] = None
    request = ReservationRequest("m", "r", "e-1", "SAT", 1, "c")
    with pytest.raises(StoreInconsistency, match="pool 'weekend'"):
        plan_group(SeatKey("e-1", "SAT"), [request], knowledge, now=NOW)


# --- model-based --------------------------------------------------------------------------------


def check_counts(store: InMemoryInventoryStore, capacities: dict[tuple[str, str], int] | None = None) -> None:
    """Every class's and pool's counts equal its live records; no pool over its capacity."""
    held: dict[object, int] = {}
    sold: dict[object, int] = {}
    for rid in store.records:
        record = store.record(rid)
        assert record is not None
        if record.status not in (Outcome.HELD, Outcome.CONFIRMED):
            continue
        tally = held if record.status is Outcome.HELD else sold
        # Each record names the pool item its seats came off (`P#n` for item n of a sharded pool).
        owners: list[object] = [record.seat_key, *(("pool", p) for p in record.pools)]
        for owner in owners:
            tally[owner] = tally.get(owner, 0) + record.quantity
    for key, item in store.inventory.items():
        assert (item.held, item.sold) == (held.get(key, 0), sold.get(key, 0)), key
        assert item.available + item.held + item.sold == item.capacity and item.available >= 0
        expected_pools = {p for p in item.pools}
        for rid in store.records:
            record = store.record(rid)
            if (
                record is not None
                and record.seat_key == key
                and record.status in (Outcome.HELD, Outcome.CONFIRMED)
            ):
                assert {split_pool_ref(p)[0] for p in record.pools} == expected_pools
    for (_, ref), pool in store.pools.items():
        owner = ("pool", ref)
        assert (pool.held, pool.sold) == (held.get(owner, 0), sold.get(owner, 0)), ref
        assert pool.available + pool.held + pool.sold == pool.capacity
        assert 0 <= pool.available <= pool.capacity
    for (event_id, ref), capacity in (capacities or {}).items():
        # A pool as a whole (the sum of its items) keeps its capacity: moves only shift seats.
        whole = store.pool(event_id, ref)
        assert whole is not None and whole.capacity == capacity, ref
        assert whole.held + whole.sold <= capacity


@pytest.mark.parametrize("sharded", [False, True], ids=["one-item", "sharded"])
@pytest.mark.parametrize("seed", range(12))
def test_random_pools_classes_and_lifecycles_keep_every_count_equal_to_the_records(
    seed: int, sharded: bool
) -> None:
    # Sharded: every pool is split over 1 to 4 items and every class over 1 to 8, with more
    # containers, so that takes land on different pool items and seats move between them.
    rng = random.Random(seed)
    store = InMemoryInventoryStore()
    pools = [f"p{n}" for n in range(rng.randint(1, 3))]
    capacities: dict[tuple[str, str], int] = {}
    for name in pools:
        capacities[("e-1", name)] = rng.randint(3, 15) * (3 if sharded else 1)
        store.add_pool("e-1", name, capacities[("e-1", name)], shards=rng.choice([1, 2, 4]) if sharded else 1)
    classes = [f"C{n}" for n in range(rng.randint(2, 4))]
    for name in classes:
        members = rng.sample(pools, rng.randint(0, len(pools)))
        shards = rng.choice([1, 2, 4, 8]) if sharded else 1
        store.add_event("e-1", rng.randint(2, 12) * (3 if sharded else 1), name, shards=shards, pools=members)
    clock = FakeClock(time=NOW)
    containers = [Container(store, clock) for _ in range(4 if sharded else 2)]
    sent: list[QueueMessage] = []
    n = 0
    for _ in range(40):
        batch: list[QueueMessage] = []
        for _ in range(rng.randint(1, 6)):
            n += 1
            roll = rng.random()
            live = [r for r in store.records if store.status[r] in (Outcome.HELD, Outcome.CONFIRMED)]
            if roll < 0.45 or not live:
                hold = rng.choice([None, rng.randint(5, 60)])
                batch.append(take(n, rng.choice(classes), rng.randint(1, 4), hold=hold))
            elif roll < 0.6:
                batch.append(message(n, type="confirm", reservation_id=rng.choice(live)))
            elif roll < 0.75:
                batch.append(message(n, type="cancel", reservation_id=rng.choice(live)))
            elif sent:
                batch.append(rng.choice(sent))  # a duplicate (redelivery)
        sent.extend(batch)
        rng.choice(containers).run(*batch)
        clock.time += rng.randint(0, 20)
        if rng.random() < 0.3:
            release_expired_holds(
                store,
                RecordingPublisher(),
                clock,
                limit=100,
                rejection_ttl_seconds=TTL,
                hints=InventoryHints(),
            )
        if rng.random() < 0.1:
            # An operator closes or reopens a pool now and then.
            name = rng.choice(pools)
            status = rng.choice([SaleStatus.OPEN, SaleStatus.CLOSED])
            store.change_pool("e-1", name, sale_status=status)
        if sharded and rng.random() < 0.1:
            # An operator spreads a pool over more items during the sale (held and sold stay).
            name = rng.choice(pools)
            store.reshard_pool("e-1", name, min(8, 2 * store.pools[("e-1", name)].shard_count))
        check_counts(store, capacities)
    sold = sum(p.sold for p in store.pools.values())
    assert sold >= 0


def test_a_sharded_class_and_a_plain_one_share_a_pool_exactly_across_containers() -> None:
    # Given a pool of 12 shared by a class over 4 shard items (20 seats) and a plain class (20)
    store = InMemoryInventoryStore()
    store.add_pool("e-1", "hall", 12)
    store.add_event("e-1", 20, "FLOOR", shards=4, pools=["hall"])
    store.add_event("e-1", 20, "BALCONY", pools=["hall"])
    clock = FakeClock(time=NOW)
    containers = [Container(store, clock) for _ in range(4)]

    # When four containers each send batches to both classes, more than the pool holds
    answers = []
    for n in range(10):
        for index, container in enumerate(containers):
            seat_class = "FLOOR" if (n + index) % 2 else "BALCONY"
            m = n * 10 + index
            container.run(take(m, seat_class, 1, hold=60 if m % 3 == 0 else None))
            answers.extend(container.published)

    # Then exactly the pool's 12 seats were taken, over both classes, and the records agree
    taken = [a for a in answers if a.outcome in (Outcome.CONFIRMED, Outcome.HELD)]
    assert len(taken) == 12
    assert pool_seats(store, "hall")[0] == 0
    assert {a.outcome for a in answers} == {Outcome.CONFIRMED, Outcome.HELD, Outcome.SOLD_OUT}
    check_counts(store)


@pytest.mark.parametrize(("pools", "units"), [((), 4), (("a",), 6), (("a", "b"), 8)])
def test_each_pool_adds_two_write_units_to_a_take_and_to_its_give_back(pools, units) -> None:
    # Units as the simulation's DynamoDB model charges them (AWS's rules: 2 per transactional
    # item of up to 1 KB): one reservation, then its cancel.
    from seat_inventory.models import ReservationOutcome, Transition
    from seat_tools.contention.model import ContentionModel, ContentionSettings
    from seat_tools.simulation.dynamodb import SimulatedTable

    data = InMemoryInventoryStore()
    for name in pools:
        data.add_pool("e-1", name, 10)
    data.add_event("e-1", 10, "GA", pools=pools)
    clock = StepClock()
    model = ContentionModel(ContentionSettings(), clock=clock.now, rng=random.Random(1))
    store = SimulatedTable(data, model, seed=1).client(clock)
    key = SeatKey("e-1", "GA")
    sold = ReservationOutcome("r-1", Outcome.CONFIRMED, "1 seat(s) confirmed", "e-1", "GA", 1, "c")

    assert commit_outcomes(store, GroupWrite(key, [sold], 1, 0, now=NOW, pools=pools)) is None
    taken = model.counters().write_units_consumed
    record = data.record("r-1")
    assert record is not None
    assert (
        store.change_status(
            key, [Transition(record, Outcome.CANCELLED)], now=NOW, capacity=10, release_expires_at=NOW
        )
        is None
    )

    assert taken == units
    assert model.counters().write_units_consumed - taken == units
    assert all(p.available == 10 for p in data.pools.values())


def test_after_a_pool_sells_out_the_next_groups_read_it_instead_of_a_doomed_write(store) -> None:
    # Given a container that saw the pool refuse a write (Saturday still has seats of its own)
    refusals = counting_pool_refusals(store)
    container = Container(store, FakeClock(time=NOW))
    other = Container(store, FakeClock(time=NOW))
    container.run(take(1, "SAT", 2))
    other.run(take(2, "PASS", 6))
    other.run(take(3, "SAT", 2))
    container.run(take(4, "SAT", 1))
    assert len(refusals) == 1  # container's hint said 6 left in SAT: its write met the pool
    assert container.answer("m-4").reason == "requested 1 seat(s), 0 left in pool weekend"
    reads = store.reads

    # When more groups come from both containers
    container.run(take(5, "SAT", 1))
    other.run(take(6, "SAT", 1))
    other.run(take(7, "SAT", 1))

    # Then each is answered SOLD_OUT from a read of the class with its pool: no refused write
    assert len(refusals) == 1
    assert store.reads == reads + 3
    assert container.answer("m-5").reason == "requested 1 seat(s), 0 left in pool weekend"
    assert other.answer("m-7").reason == "requested 1 seat(s), 0 left in pool weekend"
    assert pool_seats(store) == (0, 0, 10)


# --- sharded pools (docs/guides/pools.md, "Sharded pools") ------------------------------------------------


def test_a_take_from_class_shard_s_writes_pool_item_s_mod_k_from_the_first_write() -> None:
    # Given a hall of 16 seats over 4 items and a class over 8 shards, never seen by the container
    store = InMemoryInventoryStore()
    store.add_pool("e-1", "hall", 16, shards=4)
    store.add_event("e-1", 40, "FLOOR", shards=8, pools=["hall"])
    refusals = counting_pool_refusals(store)
    container = Container(store, FakeClock(time=NOW))

    # When it takes seats in three groups
    for n in range(3):
        container.run(take(n, "FLOOR", 1))

    # Then each record names pool item (class shard mod 4), and no write was refused
    for n in range(3):
        record = store.record(f"r-{n}")
        assert record is not None
        assert record.pools == (pool_ref("hall", record.shard % 4),)
    assert refusals == []
    check_counts(store, {("e-1", "hall"): 16})


def test_a_short_pool_item_gets_seats_moved_in_and_only_the_whole_pool_refuses() -> None:
    # Given a hall of 8 seats over 4 items (2 each) and a class of one item: it writes item 0
    store = InMemoryInventoryStore()
    store.add_pool("e-1", "hall", 8, shards=4)
    store.add_event("e-1", 40, "FLOOR", pools=["hall"])
    container = Container(store, FakeClock(time=NOW))

    # When it asks 5 seats (item 0 has 2), then 4 (the pool has 3 left), then 3
    answers = []
    for n, quantity in ((1, 5), (2, 4), (3, 3)):
        container.run(take(n, "FLOOR", quantity))
        answers.append(container.answer(f"m-{n}"))

    # Then the 5 and the 3 are taken with seats moved into item 0; the 4 is refused by the pool
    # as a whole, naming it; the pool kept its capacity and every seat is on item 0's records
    assert [a.outcome for a in answers] == [Outcome.CONFIRMED, Outcome.SOLD_OUT, Outcome.CONFIRMED]
    assert answers[1].reason == "requested 4 seat(s), 3 left in pool hall"
    pool = store.pool("e-1", "hall")
    assert pool is not None and (pool.capacity, pool.available, pool.sold) == (8, 0, 8)
    assert [s.capacity for s in pool.shards] == [8, 0, 0, 0]
    check_counts(store, {("e-1", "hall"): 8})


def test_a_donor_that_sold_meanwhile_refuses_the_move_and_the_group_is_planned_again() -> None:
    # Given a hall of 8 over 4 items and a class of one item asking 5 seats (item 0 has 2)
    store = InMemoryInventoryStore()
    store.add_pool("e-1", "hall", 8, shards=4)
    store.add_event("e-1", 40, "FLOOR", pools=["hall"])
    refusals = counting_pool_refusals(store)
    container = Container(store, FakeClock(time=NOW))

    def another_container_sells_item_1() -> None:
        key = ("e-1", "hall#1")
        item = store.pools[key]
        store.pools[key] = dataclasses.replace(item, available=0, sold=item.sold + item.available)

    # Its first write moves seats, planned from the whole read a class never seen starts with.
    store.before_commit = another_container_sells_item_1

    # When it runs (another container sells item 1's 2 seats just before the move)
    container.run(take(1, "FLOOR", 5))

    # Then the move from item 1 is refused, the pool is read again and the 5 seats are taken
    # with seats moved from the items that still have them: no seat taken twice
    assert container.answer("m-1").outcome is Outcome.CONFIRMED
    pool = store.pool("e-1", "hall")
    assert pool is not None and (pool.capacity, pool.available, pool.sold) == (8, 1, 7)
    assert all(s.available >= 0 for s in pool.shards)
    assert len(refusals) == 1 and refusals[0].pools_refused["hall"].shard == 1  # type: ignore[attr-defined]


def test_one_pool_item_refusing_is_never_a_sold_out_the_pool_is_read_whole_first() -> None:
    # Given two containers of a class of one item (both write pool item 0 of a hall of 8 over 4)
    store = InMemoryInventoryStore()
    store.add_pool("e-1", "hall", 8, shards=4)
    store.add_event("e-1", 40, "FLOOR", pools=["hall"])
    refusals = counting_pool_refusals(store)
    first, other = Container(store, FakeClock(time=NOW)), Container(store, FakeClock(time=NOW))
    first.run(take(1, "FLOOR", 1))  # it has seen the class and its pool: 7 seats to sell
    other.run(take(2, "FLOOR", 1))  # item 0 is now empty

    # When the first container takes 2 more (its hint says 7: it writes item 0 straight away)
    first.run(take(3, "FLOOR", 2))

    # Then item 0 alone refused, the pool was read whole, and 2 seats moved in: CONFIRMED
    assert len(refusals) == 1
    assert refusals[0].pools_refused["hall"].complete is False  # type: ignore[attr-defined]
    assert first.answer("m-3").outcome is Outcome.CONFIRMED
    record = store.record("r-3")
    assert record is not None and record.pools == ("hall",)
    check_counts(store, {("e-1", "hall"): 8})
