"""Repeated customers (bots, refreshes) under a per-customer limit: each LIMIT_EXCEEDED rests on
items observed while its group settled (a customer's counter, the class's limit), never on the
container's hints alone, and without reading a sharded class whole; a container that met customers
at their limit reads the next group's counters first instead of sending a transaction they cancel
for every customer in it (docs/explanation/guarantees.md, rule 9)."""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from dataclasses import dataclass, field

from seat_inventory.logic.group_plan import GroupKnowledge, GroupPlan
from seat_inventory.logic.group_plan import rests_on_observations as _rests_on_observations
from seat_inventory.logic.inventory_hints import InventoryHints
from seat_inventory.logic.reserve_seats import QueueMessage, reserve_seats
from seat_inventory.models import Outcome, ReservationOutcome, SeatClassInventory, SeatKey, Take, WriteRefused
from seat_inventory.settings import Settings
from tests.fakes import FakeClock, InMemoryInventoryStore, RecordingPublisher
from tests.writes import GroupWrite

SETTINGS = Settings(table_name="t", outcomes_topic_arn="arn:aws:sns:us-east-1:1:t")
KEY = SeatKey("e-1", "GA")


@dataclass
class SpyStore(InMemoryInventoryStore):
    """The in-memory store, noting each inventory read (whole, customers asked) and each write."""

    read_calls: list[tuple[bool, tuple[str, ...]]] = field(default_factory=list)
    writes: list[tuple[GroupWrite, WriteRefused | None]] = field(default_factory=list)

    def read_inventory(
        self, key: SeatKey, *, whole: bool = True, customers: Sequence[str] = ()
    ) -> SeatClassInventory | None:
        if not customers:  # the base class reads shard 0 through this method again
            self.read_calls.append((whole, ()))
        else:
            self.read_calls.append((whole, tuple(customers)))
        return super().read_inventory(key, whole=whole, customers=customers)

    def take(self, take: Take) -> WriteRefused | None:
        refused = super().take(take)
        self.writes.append((GroupWrite.of(take.parts[0], take), refused))
        return refused

    def record_rejections(
        self, outcomes: Sequence[ReservationOutcome], *, expires_at: int
    ) -> WriteRefused | None:
        refused = super().record_rejections(outcomes, expires_at=expires_at)
        self.writes.append((GroupWrite.rejections(outcomes, expires_at), refused))
        return refused

    def forget(self) -> None:
        self.read_calls.clear()
        self.writes.clear()

    @property
    def whole_reads(self) -> int:
        return sum(1 for whole, _ in self.read_calls if whole)

    @property
    def counter_reads(self) -> list[tuple[str, ...]]:
        return [customers for _, customers in self.read_calls if customers]


class Container:
    """One warm container: the same hints from batch to batch."""

    def __init__(self, store: SpyStore) -> None:
        self.store = store
        self.hints = InventoryHints(random.Random(3))
        self.clock = FakeClock()
        self.sent = 0

    def send(self, customers: Sequence[str], seats: int = 2) -> list[ReservationOutcome]:
        messages = []
        for customer in customers:
            self.sent += 1
            body = {
                "reservation_id": f"r-{self.sent}-{customer}",
                "event_id": KEY.event_id,
                "seat_class": KEY.seat_class,
                "quantity": seats,
                "customer_id": customer,
            }
            messages.append(QueueMessage(f"m-{self.sent}", json.dumps(body)))
        result = reserve_seats(
            messages,
            store=self.store,
            publisher=RecordingPublisher(),
            settings=SETTINGS,
            clock=self.clock,
            hints=self.hints,
        )
        assert result.handed_back == {}
        return result.published


def sale(shards: int, *, limit: int = 4, at_limit: Sequence[str] = ()) -> tuple[SpyStore, Container]:
    """A class with a limit of 4; `at_limit` customers already hold 4 seats; a container that has
    sold to others (so it knows the class: its next group writes first, optimistically)."""
    store = SpyStore()
    store.add_event(KEY.event_id, 400, max_per_customer=limit, shards=shards)
    for customer in at_limit:
        store.counters[(KEY, customer)] = 4
    container = Container(store)
    assert all(o.outcome is Outcome.CONFIRMED for o in container.send([f"w-{n}" for n in range(5)]))
    store.forget()
    return store, container


def test_customers_at_their_limit_are_refused_from_the_counters_their_write_met_without_a_whole_read() -> (
    None
):
    repeats = [f"c-{n}" for n in range(10)]
    store, container = sale(shards=8, at_limit=repeats)

    answers = container.send(repeats)

    assert [o.outcome for o in answers] == [Outcome.LIMIT_EXCEEDED] * 10
    assert "4 already taken, 2 requested" in answers[0].reason
    # One transaction, refused by the counters while the inventory guard (limit 4) held; the
    # answers rest on that refusal: written as records alone, with no read of the 8 shard items.
    (taken, refused), (rejections, _) = store.writes
    assert (
        refused is not None and not refused.inventory_refused and set(refused.customer_seats) == set(repeats)
    )
    assert taken.max_per_customer == 4
    assert rejections.records_only
    assert store.whole_reads == 0
    assert all(store.counters[(KEY, c)] == 4 for c in repeats)


def test_after_customers_at_their_limit_the_next_groups_counters_are_read_first_and_their_write_commits() -> (
    None
):
    repeats = [f"c-{n}" for n in range(10)]
    store, container = sale(shards=8, at_limit=repeats)
    container.send(repeats[:5])
    store.forget()

    # Newcomers and repeats mixed: the counters are read with shard 0, then one write commits.
    mixed = ["n-1", *repeats[5:], "n-2"]
    answers = {o.customer_id: o.outcome for o in container.send(mixed)}

    assert store.counter_reads == [tuple(mixed)]
    # The takes in a transaction of their own; then the refusals, as their records alone.
    assert [refused for _, refused in store.writes] == [None, None]
    (write, _), (refusals, _) = store.writes
    assert refusals.records_only and {o.customer_id for o in refusals.outcomes} == set(repeats[5:])
    assert {o.customer_id for o in write.outcomes} == {"n-1", "n-2"}
    assert set(write.counters) == {"n-1", "n-2"}  # customers at their limit are not counted
    assert answers == {"n-1": Outcome.CONFIRMED, "n-2": Outcome.CONFIRMED} | dict.fromkeys(
        repeats[5:], Outcome.LIMIT_EXCEEDED
    )
    assert store.whole_reads == 0
    assert (store.counters[(KEY, "n-1")], store.counters[(KEY, "c-7")]) == (2, 4)


def test_counters_read_first_only_after_a_group_met_a_customer_at_the_limit() -> None:
    store, container = sale(shards=8)

    # A sale without repeats: no counter is ever read.
    for batch in range(3):
        container.send([f"n-{batch}-{n}" for n in range(10)])
    assert store.counter_reads == []

    # A counter read that finds nobody at the limit turns the reads off again.
    store.counters[(KEY, "c-0")] = 4
    container.send(["c-0", "x-1"])
    container.send(["x-2", "x-3"])
    container.send(["x-4"])
    assert store.counter_reads == [("x-2", "x-3")]


def test_a_counter_refused_under_a_limit_the_class_no_longer_has_refuses_nothing() -> None:
    # The container assumes the limit 4 (its hints); an operator raised it to 6 since: the write
    # is refused by the inventory guard (another limit), and the customer's 4 seats leave room.
    store, container = sale(shards=4, at_limit=["c-1"])
    for item_key, item in list(store.inventory.items()):
        store.inventory[item_key] = type(item)(**{**_fields(item), "max_per_customer": 6})

    answers = container.send(["c-1"])

    assert [o.outcome for o in answers] == [Outcome.CONFIRMED]
    assert store.counters[(KEY, "c-1")] == 6


def test_a_single_item_class_answers_repeats_from_the_counter_refusal_too() -> None:
    store, container = sale(shards=1, at_limit=["c-1", "c-2"])

    answers = container.send(["c-1", "c-2"])

    assert [o.outcome for o in answers] == [Outcome.LIMIT_EXCEEDED] * 2
    assert store.read_calls == []
    assert [w.records_only for w, _ in store.writes] == [False, True]


def _plan(*outcomes: tuple[str, Outcome]) -> GroupPlan:
    answers = [
        ReservationOutcome(
            reservation_id=f"r-{customer}",
            outcome=outcome,
            reason="test",
            event_id=KEY.event_id,
            seat_class=KEY.seat_class,
            quantity=2,
            customer_id=customer,
        )
        for customer, outcome in outcomes
    ]
    return GroupPlan(answers, 0, 4, {})


def test_a_limit_exceeded_rests_on_a_counter_and_the_limit_both_observed_in_the_settlement() -> None:
    plan = _plan(("c-1", Outcome.LIMIT_EXCEEDED), ("c-2", Outcome.LIMIT_EXCEEDED))
    knowledge = GroupKnowledge(assumed_limit=4, counted={"c-1": 4, "c-2": 3})
    assert not _rests_on_observations(plan, knowledge)  # the limit is only assumed (hints)
    knowledge.observe_limit(6)
    assert not _rests_on_observations(plan, knowledge)  # observed, but not the plan's
    knowledge.observe_limit(4)
    assert _rests_on_observations(plan, knowledge)
    assert not _rests_on_observations(_plan(("c-3", Outcome.LIMIT_EXCEEDED)), knowledge)  # no counter seen
    sold_out = _plan(("c-1", Outcome.LIMIT_EXCEEDED), ("c-2", Outcome.SOLD_OUT))
    assert not _rests_on_observations(sold_out, knowledge)  # SOLD_OUT needs the class read


def _fields(item: SeatClassInventory) -> dict[str, object]:
    return {name: getattr(item, name) for name in item.__dataclass_fields__}


def test_near_the_sell_out_the_counters_a_refusal_did_not_show_are_read_at_once() -> None:
    # 6 seats left, which the container knows (so it reads the class first); 27 customers at
    # their limit, then 3 newcomers. Each refusal shows only the counters of the customers the
    # plan gave seats (3 here): found a transaction at a time, that was 9 refused transactions.
    store = SpyStore()
    store.add_event(KEY.event_id, 16, max_per_customer=4)
    container = Container(store)
    container.send([f"w-{n}" for n in range(5)])
    repeats = [f"c-{n}" for n in range(27)]
    for customer in repeats:
        store.counters[(KEY, customer)] = 4
    store.forget()

    answers = {o.customer_id: o.outcome for o in container.send([*repeats, "n-0", "n-1", "n-2"])}

    assert answers == dict.fromkeys(repeats, Outcome.LIMIT_EXCEEDED) | dict.fromkeys(
        ["n-0", "n-1", "n-2"], Outcome.CONFIRMED
    )
    refused = [r for _, r in store.writes if r is not None]
    assert len(refused) == 1 and set(refused[0].customer_seats) == {"c-0", "c-1", "c-2"}
    assert store.counter_reads == [(*(f"c-{n}" for n in range(3, 27)), "n-0", "n-1", "n-2")]


def test_a_refusal_that_rests_on_a_take_of_the_same_group_is_written_with_that_take() -> None:
    # c-1 holds 2 seats and asks twice more: the first take brings it to 4, so the second is
    # LIMIT_EXCEEDED only because of that take. It is not set aside (written after the take, it
    # would stand even if the take did not); c-2, at 4 already, is.
    store, container = sale(shards=4, at_limit=["c-2"])
    container.send(["c-2"])  # meets a customer at the limit: the next group reads counters first
    store.counters[(KEY, "c-1")] = 2
    store.forget()

    answers = [(o.customer_id, o.outcome) for o in container.send(["c-1", "c-1", "c-2", "n-1"])]

    assert answers == [
        ("c-1", Outcome.CONFIRMED),
        ("c-1", Outcome.LIMIT_EXCEEDED),
        ("c-2", Outcome.LIMIT_EXCEEDED),
        ("n-1", Outcome.CONFIRMED),
    ]
    (take, _), (aside, _) = store.writes
    assert [o.outcome for o in take.outcomes] == [
        Outcome.CONFIRMED,
        Outcome.LIMIT_EXCEEDED,
        Outcome.CONFIRMED,
    ]
    assert [o.customer_id for o in aside.outcomes] == ["c-2"] and aside.records_only
