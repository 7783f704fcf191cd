"""The waiting list on the in-memory store, through the service's own entry points: requests refused
SOLD_OUT join it with a position, freed seats are set aside and offered to its head in join order
exactly once (an OFFERED hold), an offer is taken with a confirm or passes on when it runs out,
and the seats go back on sale when nobody waits."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from seat_inventory.logic.inventory_hints import InventoryHints
from seat_inventory.logic.offer_rounds import run_offer_rounds
from seat_inventory.logic.reserve_seats import QueueMessage, reserve_seats
from seat_inventory.logic.sweep_holds import release_expired_holds
from seat_inventory.models import Outcome, ReservationOutcome, SeatKey
from seat_inventory.settings import Settings
from tests.fakes import FakeClock, InMemoryInventoryStore, RecordingPublisher

SETTINGS = Settings(table_name="t", outcomes_topic_arn="arn:aws:sns:us-east-1:1:t")
NOW = 1_800_000_000
GA = SeatKey("e-1", "GA")


class Sale:
    """One seat class with a waiting list open on `store` (the in-memory store here; the table on
    moto in tests/integration/test_waitlist_table.py), and the messages a test sends to it."""

    def __init__(self, store: Any, *, offer_seconds: int = 600, key: SeatKey = GA) -> None:
        self.store = store
        self.store.open_waitlist(key, offer_seconds=offer_seconds)
        self.clock = FakeClock(time=NOW)
        self.hints = InventoryHints()
        self.published: list[ReservationOutcome] = []
        self.sent = 0

    def send(self, *bodies: dict[str, Any]) -> dict[str, ReservationOutcome]:
        """Each body as one message of one batch; the answers by reservation id."""
        messages = []
        for body in bodies:
            self.sent += 1
            if body.get("type") not in ("confirm", "cancel", "leave"):
                body = {"event_id": "e-1", **body}
            messages.append(QueueMessage(f"m-{self.sent}", json.dumps(body)))
        publisher = RecordingPublisher()
        result = reserve_seats(
            messages,
            store=self.store,
            publisher=publisher,
            settings=SETTINGS,
            clock=self.clock,
            hints=self.hints,
            waitlist=self.store,
        )
        assert not result.failed_message_ids, result.handed_back
        self.published += result.published
        return {o.reservation_id: o for o in result.published}

    def reserve(self, rid: str, customer: str, quantity: int = 1, **more: Any) -> ReservationOutcome:
        body = {"reservation_id": rid, "customer_id": customer, "quantity": quantity, **more}
        return self.send(body)[rid]

    def sweep(self) -> list[ReservationOutcome]:
        """The sweeper's run: holds that ran out released, then the lists' rounds; the offers
        published (by reservation id: the outbox is published in no particular order)."""
        release_expired_holds(self.store, RecordingPublisher(), self.clock, limit=100, hints=self.hints)
        publisher = RecordingPublisher()
        rounds = run_offer_rounds(self.store, publisher, self.clock, limit=100)
        assert not rounds.failed
        return sorted(publisher.published, key=lambda o: o.reservation_id)

    def seats(self) -> tuple[int, int, int]:
        item = self.store.read_inventory(GA)
        assert item.available + item.held + item.sold == item.capacity
        return item.available, item.held, item.sold

    def set_aside(self) -> int:
        waiting = self.store.read_waitlist(GA)
        assert waiting is not None
        return waiting.seats_held


MakeSale = Callable[..., Sale]


@pytest.fixture
def make_sale() -> MakeSale:
    """A sale of `capacity` seats (`shards` items) on the in-memory store."""

    def make(
        capacity: int = 4, *, shards: int = 1, offer_seconds: int = 600, max_per_customer: int | None = None
    ) -> Sale:
        store = InMemoryInventoryStore()
        store.add_event("e-1", capacity=capacity, shards=shards, max_per_customer=max_per_customer)
        return Sale(store, offer_seconds=offer_seconds)

    return make


def sold_out_with_three_waiting(sale: Sale) -> None:
    assert sale.reserve("r-a", "a", 4).outcome is Outcome.CONFIRMED
    joined = [
        sale.reserve("w-1", "c-1", 2, waitlist=True),
        sale.reserve("w-2", "c-2", 1, waitlist=True),
        sale.reserve("w-3", "c-3", 1, waitlist=True),
    ]
    assert [(o.outcome, o.position) for o in joined] == [(Outcome.WAITLISTED, n) for n in (1, 2, 3)]


def test_a_refused_request_that_asks_joins_with_its_position_and_others_are_refused_as_before(
    make_sale: MakeSale,
) -> None:
    sale = make_sale()
    sold_out_with_three_waiting(sale)
    plain = sale.reserve("r-b", "b", 1)
    assert plain.outcome is Outcome.SOLD_OUT and plain.position is None
    assert sale.store.read_waitlist(GA).waiting == 3  # type: ignore[union-attr]


def test_one_entry_per_customer_per_class_and_a_redelivery_is_the_same_answer(make_sale: MakeSale) -> None:
    sale = make_sale()
    sold_out_with_three_waiting(sale)
    again = sale.reserve("w-9", "c-1", 1, waitlist=True)
    assert again.outcome is Outcome.SOLD_OUT
    assert "has an entry on it already (reservation 'w-1')" in again.reason
    redelivered = sale.reserve("w-2", "c-2", 1, waitlist=True)
    assert redelivered.outcome is Outcome.WAITLISTED and redelivered.duplicate
    assert redelivered.position == 2
    assert sale.store.read_waitlist(GA).waiting == 3  # type: ignore[union-attr]


def test_freed_seats_are_set_aside_then_offered_to_the_head_in_join_order(make_sale: MakeSale) -> None:
    sale = make_sale()
    sold_out_with_three_waiting(sale)
    sale.send({"type": "cancel", "reservation_id": "r-a"})
    # Public availability counts the seats set aside: a new request is refused.
    assert sale.seats() == (0, 4, 0) and sale.set_aside() == 4
    assert sale.reserve("r-b", "b", 1).outcome is Outcome.SOLD_OUT
    offers = sale.sweep()
    assert [(o.reservation_id, o.outcome, o.quantity) for o in offers] == [
        ("w-1", Outcome.OFFERED, 2),
        ("w-2", Outcome.OFFERED, 1),
        ("w-3", Outcome.OFFERED, 1),
    ]
    assert all(o.hold_expires_at == NOW + 600 for o in offers)
    assert sale.seats() == (0, 4, 0) and sale.set_aside() == 0
    # Exactly once: another run (or a second sweeper) offers nothing again.
    assert sale.sweep() == []


def test_the_head_waits_for_its_seats_and_nobody_behind_it_is_served_first(make_sale: MakeSale) -> None:
    sale = make_sale()
    assert sale.reserve("r-a", "a", 1).outcome is Outcome.CONFIRMED
    assert sale.reserve("r-b", "b", 3).outcome is Outcome.CONFIRMED
    joined = [sale.reserve("w-1", "c-1", 2, waitlist=True), sale.reserve("w-2", "c-2", 1, waitlist=True)]
    assert [o.position for o in joined] == [1, 2], joined
    sale.send({"type": "cancel", "reservation_id": "r-a"})
    assert sale.sweep() == []  # one seat back: the head wants two
    sale.send({"type": "cancel", "reservation_id": "r-b"})
    assert [(o.reservation_id, o.quantity) for o in sale.sweep()] == [("w-1", 2), ("w-2", 1)]
    # Nobody waits any more: the seat left goes back on sale.
    assert sale.seats() == (1, 3, 0) and sale.set_aside() == 0


def test_an_offer_taken_with_a_confirm_is_sold_and_its_customer_is_never_offered_again(
    make_sale: MakeSale,
) -> None:
    sale = make_sale()
    sold_out_with_three_waiting(sale)
    sale.send({"type": "cancel", "reservation_id": "r-a"})
    sale.sweep()
    taken = sale.send({"type": "confirm", "reservation_id": "w-1"})["w-1"]
    assert taken.outcome is Outcome.CONFIRMED
    # The winner cancels: the seats go to the list, which nobody waits on: back on sale.
    sale.send({"type": "cancel", "reservation_id": "w-1"})
    assert sale.sweep() == []
    assert sale.seats() == (2, 2, 0)
    assert sale.reserve("w-1b", "c-1", 1, waitlist=True).outcome is Outcome.CONFIRMED


def test_an_offer_that_runs_out_passes_its_seats_to_the_next_entry(make_sale: MakeSale) -> None:
    sale = make_sale(capacity=2, offer_seconds=120)
    assert sale.reserve("r-a", "a", 2).outcome is Outcome.CONFIRMED
    sale.reserve("w-1", "c-1", 2, waitlist=True)
    sale.reserve("w-2", "c-2", 2, waitlist=True)
    sale.send({"type": "cancel", "reservation_id": "r-a"})
    assert [o.reservation_id for o in sale.sweep()] == ["w-1"]
    sale.clock.time += 121
    assert [o.reservation_id for o in sale.sweep()] == ["w-2"]
    late = sale.send({"type": "confirm", "reservation_id": "w-1"})["w-1"]
    assert late.outcome is Outcome.EXPIRED
    assert sale.send({"type": "confirm", "reservation_id": "w-2"})["w-2"].outcome is Outcome.CONFIRMED
    assert sale.seats() == (0, 0, 2)


def test_leaving_takes_the_entry_off_and_its_turn_passes(make_sale: MakeSale) -> None:
    sale = make_sale()
    sold_out_with_three_waiting(sale)
    left = sale.send({"type": "leave", "reservation_id": "w-1", "customer_id": "c-1"})["w-1"]
    assert left.outcome is Outcome.LEFT
    again = sale.send({"type": "leave", "reservation_id": "w-1"})["w-1"]
    assert again.outcome is Outcome.LEFT and again.duplicate
    sale.send({"type": "cancel", "reservation_id": "r-a"})
    assert [o.reservation_id for o in sale.sweep()] == ["w-2", "w-3"]
    assert sale.seats() == (2, 2, 0)
    offered = sale.send({"type": "leave", "reservation_id": "w-2"})["w-2"]
    assert offered.outcome is Outcome.HELD and "cancel the reservation" in offered.reason


def test_an_expired_hold_goes_to_the_list_and_a_sharded_class_offers_from_one_item(
    make_sale: MakeSale,
) -> None:
    sale = make_sale(capacity=8, shards=4)
    for n in range(8):
        held = sale.reserve(f"h-{n}", f"h{n}", 1, type="hold", hold_seconds=60)
        assert held.outcome is Outcome.HELD
    sale.reserve("w-1", "c-1", 3, waitlist=True)
    sale.clock.time += 61
    offers = sale.sweep()
    assert [(o.reservation_id, o.quantity) for o in offers] == [("w-1", 3)]
    assert sale.send({"type": "confirm", "reservation_id": "w-1"})["w-1"].outcome is Outcome.CONFIRMED
    assert sale.seats() == (5, 0, 3)


def test_no_list_open_means_the_refusal_says_so(make_sale: MakeSale) -> None:
    sale = make_sale()
    sale.store.close_waitlist(GA)
    sale.reserve("r-a", "a", 4)
    refused = sale.reserve("w-1", "c-1", 1, waitlist=True)
    assert refused.outcome is Outcome.SOLD_OUT and "waiting list is closed" in refused.reason


@pytest.mark.parametrize("value", ["yes", 1])
def test_waitlist_must_be_a_boolean(make_sale: MakeSale, value: object) -> None:
    sale = make_sale()
    answer = sale.send({"reservation_id": "w-1", "customer_id": "c", "quantity": 1, "waitlist": value})["w-1"]
    assert answer.outcome is Outcome.INVALID and "waitlist must be true or false" in answer.reason


def test_seats_added_for_the_list_are_offered_to_its_head_and_the_rest_go_on_sale(
    make_sale: MakeSale,
) -> None:
    sale = make_sale()
    sold_out_with_three_waiting(sale)
    sale.store.add_waitlist_seats(GA, 3)
    assert sale.seats() == (0, 3, 4)  # capacity 7: the three new seats set aside
    assert [(o.reservation_id, o.quantity) for o in sale.sweep()] == [("w-1", 2), ("w-2", 1)]
    sale.store.add_waitlist_seats(GA, 2)
    assert [o.reservation_id for o in sale.sweep()] == ["w-3"]
    assert sale.seats() == (1, 4, 4) and sale.set_aside() == 0


def test_an_offer_counts_against_the_limit_and_one_past_it_ends_the_entry(make_sale: MakeSale) -> None:
    sale = make_sale(3, max_per_customer=2)
    assert sale.reserve("r-x", "x", 2).outcome is Outcome.CONFIRMED
    assert sale.reserve("w-1", "c-1", 2, waitlist=True).outcome is Outcome.WAITLISTED  # 1 left
    assert sale.reserve("r-c1", "c-1", 1).outcome is Outcome.CONFIRMED  # c-1 bought the last one
    assert sale.reserve("w-2", "c-2", 1, waitlist=True).position == 2
    sale.send({"type": "cancel", "reservation_id": "r-x"})
    # w-1's customer bought a seat meanwhile: an offer of 2 would pass the limit. Both announced.
    announced = [(o.reservation_id, o.outcome) for o in sale.sweep()]
    assert announced == [("w-1", Outcome.LIMIT_EXCEEDED), ("w-2", Outcome.OFFERED)]
    ended = sale.store.read_reservations(["w-1"])["w-1"]
    assert ended.status is Outcome.LIMIT_EXCEEDED and "off the list" in ended.answer.reason
    assert sale.seats() == (1, 1, 1)  # w-2's offer held; the seat nobody waits for on sale
    # The offer counts against c-2's limit, and its cancel gives the count back.
    assert sale.store.read_inventory(GA, whole=False, customers=["c-2"]).customer_seats == {"c-2": 1}
    assert sale.send({"type": "cancel", "reservation_id": "w-2"})["w-2"].outcome is Outcome.CANCELLED
    assert sale.store.read_inventory(GA, whole=False, customers=["c-2"]).customer_seats == {"c-2": 0}


def test_a_run_past_its_time_budget_starts_no_round_and_the_next_run_serves_the_list(
    make_sale: MakeSale,
) -> None:
    sale = make_sale()
    sold_out_with_three_waiting(sale)
    sale.send({"type": "cancel", "reservation_id": "r-a"})
    spent = run_offer_rounds(sale.store, RecordingPublisher(), sale.clock, limit=100, budget_seconds=0)
    assert spent.offered == 0 and sale.set_aside() == 4
    assert [o.reservation_id for o in sale.sweep()] == ["w-1", "w-2", "w-3"]
