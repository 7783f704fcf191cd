"""Capacity pools and admission tokens on a mapped seat class, on the in-memory store
(docs/guides/pools.md, docs/guides/admission.md, docs/guides/seat-maps.md): a mapped class takes its seats from its row
items and from every pool it belongs to in the same write, shares a pool with counted classes,
gives the seats back to the pool its record names; a class requiring tokens spends one per
reservation, exactly once. The model-based test drives a pool shared by mapped and counted
classes through random reserves, holds, confirms, cancels, expiries, duplicates and closures.
"""

from __future__ import annotations

import json
import random

import pytest

from seat_inventory.logic.admission_tokens import MISSING
from seat_inventory.logic.inventory_hints import InventoryHints
from seat_inventory.logic.reserve_seats import QueueMessage
from seat_inventory.logic.seat_map import load_json
from seat_inventory.logic.sweep_holds import release_expired_holds
from seat_inventory.models import Outcome, ReservationOutcome, SaleStatus, SeatKey, split_pool_ref
from seat_tools.admission_keys import issue_token
from tests import containers
from tests.containers import NOW, RING, TTL, message, order, take
from tests.fakes import FakeClock, InMemoryInventoryStore, RecordingPublisher

STALLS = SeatKey("e-1", "STALLS")
MAP = {
    "classes": {"STALLS": {"orphans": "allow"}, "BALCONY": {"orphans": "allow"}},
    "sections": [
        {
            "id": "A",
            "class": "STALLS",
            "rank": 0,
            "rows": [{"id": "R1", "seats": 6}, {"id": "R2", "seats": 6}],
        },
        {"id": "B", "class": "BALCONY", "rank": 0, "rows": [{"id": "R1", "seats": 8}]},
    ],
}


class Container(containers.Container):
    """Checks admission tokens with RING; `run` answers by message id, every message answered."""

    def __init__(self, store: InMemoryInventoryStore, clock: FakeClock) -> None:
        super().__init__(store, clock, ring=RING)

    def run(self, *messages: QueueMessage) -> dict[str, ReservationOutcome]:
        return self.answered(*messages)


def store_with(*, hall: int = 5, stalls_pools=("hall",), required: bool = False) -> InMemoryInventoryStore:
    store = InMemoryInventoryStore()
    store.add_pool("e-1", "hall", hall)
    store.add_seat_map("e-1", load_json(json.dumps(MAP)), pools=stalls_pools, admission_required=required)
    store.add_event("e-1", 8, "GA", pools=["hall"])
    return store


def hall(store: InMemoryInventoryStore) -> tuple[int, int, int]:
    pool = store.pool("e-1", "hall")
    assert pool is not None and pool.available + pool.held + pool.sold == pool.capacity
    return pool.available, pool.held, pool.sold


def test_a_mapped_and_a_counted_class_share_a_pool_and_it_bounds_both() -> None:
    # Given a hall of 5 seats shared by the mapped STALLS (12 seats) and the counted GA (8)
    store = store_with()
    container = Container(store, FakeClock(time=NOW))

    # When STALLS takes 3 and GA 2, then STALLS asks for one more
    first = container.run(take(1, "STALLS", 3), take(2, "GA", 2))
    last = container.run(take(3, "STALLS", 1))

    # Then the hall is sold out: the last request is SOLD_OUT naming it, nothing of it taken
    assert [first["m-1"].outcome, first["m-2"].outcome] == [Outcome.CONFIRMED, Outcome.CONFIRMED]
    assert last["m-3"].outcome is Outcome.SOLD_OUT
    assert last["m-3"].reason == "requested 1 seat(s), 0 left in pool hall"
    assert hall(store) == (0, 0, 5)
    assert store.record("r-1").pools == ("hall",)  # type: ignore[union-attr]
    assert sum(r.sold for r in store.seat_rows[STALLS].values()) == 3


def test_cancel_and_expiry_give_a_mapped_reservations_seats_back_to_its_pool_once() -> None:
    store = store_with()
    clock = FakeClock(time=NOW)
    container = Container(store, clock)
    container.run(take(1, "STALLS", 2), take(2, "STALLS", 2, hold=60))
    assert hall(store) == (1, 2, 2)

    for n in (3, 4):  # a cancel redelivered gives back once
        container.run(message(n, type="cancel", reservation_id="r-1"))
    clock.time += 120
    for _ in range(2):  # the sweeper runs twice
        release_expired_holds(
            store, RecordingPublisher(), clock, limit=10, rejection_ttl_seconds=TTL, hints=InventoryHints()
        )

    assert hall(store) == (5, 0, 0)
    assert sum(r.available for r in store.seat_rows[STALLS].values()) == 12


def test_a_closed_pool_closes_the_mapped_class_sale() -> None:
    store = store_with()
    store.change_pool("e-1", "hall", sale_status=SaleStatus.CLOSED)

    answers = Container(store, FakeClock(time=NOW)).run(take(1, "STALLS", 2, seats=["A-R1-1", "A-R1-2"]))

    assert answers["m-1"].outcome is Outcome.SALE_CLOSED
    assert "pool hall" in answers["m-1"].reason and hall(store) == (5, 0, 0)


def test_a_sharded_pool_moves_seats_into_item_0_and_only_the_whole_pool_refuses() -> None:
    # Given a hall of 8 over 4 items (2 each) shared by the mapped STALLS and GA over 4 shards
    store = InMemoryInventoryStore()
    store.add_pool("e-1", "hall", 8, shards=4)
    store.add_seat_map("e-1", load_json(json.dumps(MAP)), pools=["hall"])
    store.add_event("e-1", 8, "GA", pools=["hall"], shards=4)
    container = Container(store, FakeClock(time=NOW))

    # When STALLS takes 3 (item 0 has 2), then 4, then GA takes what is left, then STALLS 1
    first = container.run(take(1, "STALLS", 3))
    second = container.run(take(2, "STALLS", 4))
    third = container.run(take(3, "GA", 1))
    last = container.run(take(4, "STALLS", 1))

    # Then seats moved into item 0 for both mapped takes, which name it; the last is SOLD_OUT
    # from the whole pool (no seat left), never from one item
    assert [first["m-1"].outcome, second["m-2"].outcome] == [Outcome.CONFIRMED, Outcome.CONFIRMED]
    assert store.record("r-1").pools == ("hall",)  # type: ignore[union-attr]
    assert third["m-3"].outcome is Outcome.CONFIRMED
    assert last["m-4"].outcome is Outcome.SOLD_OUT
    assert last["m-4"].reason == "requested 1 seat(s), 0 left in pool hall"
    whole = store.pool("e-1", "hall")
    assert whole is not None and (whole.capacity, whole.available, whole.sold) == (8, 0, 8)


def token(customer: str, jti: str) -> str:
    return issue_token(RING, event_id="e-1", customer_id=customer, expires_at=NOW + 600, token_id=jti)


def test_a_mapped_class_requiring_admission_spends_each_token_once() -> None:
    store = store_with(stalls_pools=(), required=True)
    container = Container(store, FakeClock(time=NOW))
    good = token("c-1", "t-1")

    answers = container.run(
        take(1, "STALLS", 2, admission_token=good),
        take(2, "STALLS", 1),
        take(3, "STALLS", 1, admission_token="not.a.token"),
    )
    # The same token for another reservation of the same customer: a replay, refused for good.
    replay = container.run(
        message(4, **json.loads(take(1, "STALLS", 1, admission_token=good).body) | {"reservation_id": "r-4"})
    )
    again = container.run(take(1, "STALLS", 2, admission_token=good))  # a redelivery of r-1

    assert answers["m-1"].outcome is Outcome.CONFIRMED
    assert answers["m-2"].outcome is Outcome.ADMISSION_REFUSED and answers["m-2"].reason.startswith(MISSING)
    assert answers["m-3"].outcome is Outcome.ADMISSION_REFUSED
    assert replay["m-4"].outcome is Outcome.ADMISSION_REFUSED
    assert replay["m-4"].reason == "admission token replayed: already used by reservation r-1"
    assert again["m-1"].outcome is Outcome.CONFIRMED and store.token_uses == {"t-1": "r-1"}
    assert sum(r.sold for r in store.seat_rows[STALLS].values()) == 2


def test_a_planner_that_assumed_no_token_learns_the_rule_from_the_refused_rows() -> None:
    # Given a container that saw STALLS without the rule, then an operator requires tokens
    store = store_with(stalls_pools=())
    container = Container(store, FakeClock(time=NOW))
    container.run(take(1, "STALLS", 1))
    store.change_rows(STALLS, admission_required=True)

    answers = container.run(take(2, "STALLS", 1))

    assert answers["m-2"].outcome is Outcome.ADMISSION_REFUSED
    assert sum(r.sold for r in store.seat_rows[STALLS].values()) == 1


# --- model-based --------------------------------------------------------------------------------


def check_counts(store: InMemoryInventoryStore, capacity: int) -> None:
    """Each class's and the pool's held and sold equal the live records; the pool within capacity."""
    held: dict[object, int] = {}
    sold: dict[object, int] = {}
    for rid in store.records:
        record = store.record(rid)
        if record is None or record.status not in (Outcome.HELD, Outcome.CONFIRMED):
            continue
        tally = held if record.status is Outcome.HELD else sold
        for taken in record.takes():  # an order's lines, or the record itself
            for owner in (taken.key, *taken.pools):
                tally[owner] = tally.get(owner, 0) + taken.quantity
            [ref] = taken.pools  # every class here belongs to the hall (`hall#n`: its item n)
            assert split_pool_ref(ref)[0] == "hall", rid
            if taken.seats:
                assert ref == "hall", rid  # a mapped class takes from item 0
    for key, rows in store.seat_rows.items():
        assert sum(r.held for r in rows.values()) == held.get(key, 0), key
        assert sum(r.sold for r in rows.values()) == sold.get(key, 0), key
    for key, item in store.inventory.items():
        assert (item.held, item.sold) == (held.get(key, 0), sold.get(key, 0)), key
    for (_, ref), item in store.pools.items():
        assert (item.held, item.sold) == (held.get(ref, 0), sold.get(ref, 0)), ref
        assert item.available >= 0 and item.available + item.held + item.sold == item.capacity
    pool = store.pool("e-1", "hall")
    assert pool is not None and pool.capacity == capacity
    assert pool.available >= 0 and pool.held + pool.sold <= capacity


@pytest.mark.parametrize("sharded", [False, True], ids=["one-item", "sharded"])
@pytest.mark.parametrize("seed", range(12))
def test_random_lifecycles_on_a_pool_shared_by_mapped_and_counted_classes(seed: int, sharded: bool) -> None:
    # Sharded: the hall over 2 or 4 items and GA over 1 to 4 shards: GA's takes land on item
    # s mod K, the mapped classes' on item 0, with seats moved into it from a whole read.
    rng = random.Random(seed)
    capacity = rng.randint(4, 14) * (2 if sharded else 1)
    store = InMemoryInventoryStore()
    store.add_pool("e-1", "hall", capacity, shards=rng.choice([2, 4]) if sharded else 1)
    store.add_seat_map("e-1", load_json(json.dumps(MAP)), pools=["hall"])
    shards = rng.choice([1, 2, 4]) if sharded else 1
    store.add_event("e-1", rng.randint(3, 10) * shards, "GA", pools=["hall"], shards=shards)
    classes = ["STALLS", "BALCONY", "GA"]
    clock = FakeClock(time=NOW)
    containers = [Container(store, clock) for _ in range(2)]
    sent: list[QueueMessage] = []
    for n in range(1, 200):
        roll = rng.random()
        live = [r for r in store.records if store.status[r] in (Outcome.HELD, Outcome.CONFIRMED)]
        if roll < 0.4 or not live:
            hold = rng.choice([None, rng.randint(60, 90)])
            msg = take(n, rng.choice(classes), rng.randint(1, 3), hold=hold)
        elif roll < 0.5:
            # An order of 1 to 3 lines, each of another class, all or nothing.
            picked = rng.sample(classes, rng.randint(1, 3))
            hold = rng.choice([None, rng.randint(60, 90)])
            msg = order(n, *((c, rng.randint(1, 2)) for c in picked), hold=hold)
        elif roll < 0.65:
            msg = message(n, type="confirm", reservation_id=rng.choice(live))
        elif roll < 0.8:
            msg = message(n, type="cancel", reservation_id=rng.choice(live))
        else:
            msg = rng.choice(sent) if sent else take(n, "GA")  # a duplicate (redelivery)
        sent.append(msg)
        rng.choice(containers).run(msg)
        clock.time += rng.randint(0, 20)
        if rng.random() < 0.2:
            release_expired_holds(
                store,
                RecordingPublisher(),
                clock,
                limit=100,
                rejection_ttl_seconds=TTL,
                hints=InventoryHints(),
            )
        if rng.random() < 0.05:
            status = rng.choice([SaleStatus.OPEN, SaleStatus.OPEN, SaleStatus.OPEN, SaleStatus.CLOSED])
            store.change_pool("e-1", "hall", sale_status=status)
        check_counts(store, capacity)


def test_an_order_with_a_mapped_and_a_counted_line_takes_their_shared_pool_all_or_nothing() -> None:
    # Given a hall of 5 shared by STALLS (mapped) and GA (counted)
    store = store_with()
    container = Container(store, FakeClock(time=NOW))

    # When an order takes 1 GA + 2 STALLS, and another 1 GA + 2 STALLS (only 2 left in the hall)
    first = container.run(order(1, ("GA", 1), ("STALLS", 2)))
    second = container.run(order(2, ("GA", 1), ("STALLS", 2)))

    # Then the first takes 3 of the hall, its mapped line naming it; the second nothing
    assert first["m-1"].outcome is Outcome.CONFIRMED and hall(store) == (2, 0, 3)
    mapped_line = first["m-1"].lines[1]  # type: ignore[index]
    assert mapped_line.pools == ("hall",) and len(mapped_line.seats or ()) == 2
    assert second["m-2"].outcome is Outcome.SOLD_OUT
    assert second["m-2"].reason == "line 2 (STALLS): requested 2 seat(s), 1 left in pool hall"
    assert sum(r.sold for r in store.seat_rows[STALLS].values()) == 2

    # And a cancel of the first order (sent twice) gives all its seats back to the hall once
    for n in (3, 4):
        container.run(message(n, type="cancel", reservation_id="o-1"))
    assert hall(store) == (5, 0, 0) and sum(r.sold for r in store.seat_rows[STALLS].values()) == 0


def test_an_order_of_mapped_lines_only_reads_a_sharded_pool_whole_and_moves_seats_into_item_0() -> None:
    store = InMemoryInventoryStore()
    store.add_pool("e-1", "hall", 8, shards=4)  # 2 seats on each item
    store.add_seat_map("e-1", load_json(json.dumps(MAP)), pools=["hall"])
    container = Container(store, FakeClock(time=NOW))

    answers = container.run(order(1, ("STALLS", 2), ("BALCONY", 3)))
    refused = container.run(order(2, ("STALLS", 2), ("BALCONY", 2)))

    assert answers["m-1"].outcome is Outcome.CONFIRMED
    whole = store.pool("e-1", "hall")
    assert whole is not None and (whole.capacity, whole.available, whole.sold) == (8, 3, 5)
    assert store.pools[("e-1", "hall")].sold == 5  # every mapped line on item 0
    assert refused["m-2"].outcome is Outcome.SOLD_OUT
    assert refused["m-2"].reason == "line 2 (BALCONY): requested 2 seat(s), 1 left in pool hall"


def test_an_order_with_a_mapped_line_requiring_admission_spends_the_token_once() -> None:
    store = store_with(stalls_pools=(), required=True)
    container = Container(store, FakeClock(time=NOW))
    good = token("c-1", "t-1")

    missing = container.run(order(1, ("GA", 1), ("STALLS", 1), customer_id="c-1"))
    bought = container.run(order(2, ("GA", 1), ("STALLS", 1), customer_id="c-1", admission_token=good))
    replay = container.run(order(3, ("STALLS", 1), customer_id="c-1", admission_token=good))

    assert missing["m-1"].outcome is Outcome.ADMISSION_REFUSED
    assert missing["m-1"].reason.startswith("line 2 (STALLS): " + MISSING)
    assert bought["m-2"].outcome is Outcome.CONFIRMED and store.token_uses == {"t-1": "o-2"}
    assert replay["m-3"].outcome is Outcome.ADMISSION_REFUSED
    assert replay["m-3"].reason.endswith("admission token replayed: already used by reservation o-2")
    assert sum(r.sold for r in store.seat_rows[STALLS].values()) == 1
