"""The hold sweeper on in-memory fakes: released once, announced at least once, never early."""

from __future__ import annotations

import dataclasses
import json

import pytest

from seat_inventory.logic.inventory_hints import InventoryHints
from seat_inventory.logic.reserve_seats import QueueMessage, reserve_seats
from seat_inventory.logic.sweep_holds import release_expired_holds
from seat_inventory.models import Outcome, RequestType, RetryableError, SeatKey, TransactionConflict
from seat_inventory.settings import Settings
from tests.fakes import FakeClock, InMemoryInventoryStore, RecordingPublisher

SETTINGS = Settings(table_name="t", outcomes_topic_arn="arn:aws:sns:us-east-1:1:t")
NOW = 1_800_000_000
TTL = 15 * 86_400
GA = SeatKey("e-1", "GA")
VIP = SeatKey("e-1", "VIP")


@pytest.fixture
def store() -> InMemoryInventoryStore:
    store = InMemoryInventoryStore()
    store.add_event("e-1", capacity=10)
    store.add_event("e-1", capacity=5, seat_class="VIP")
    return store


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(time=NOW)


def hold(
    store,
    clock,
    rid: str,
    *,
    quantity: int = 1,
    seconds: int = 60,
    seat_class: str = "GA",
    customer: str = "c-1",
):
    body = {
        "type": "hold",
        "reservation_id": rid,
        "event_id": "e-1",
        "seat_class": seat_class,
        "quantity": quantity,
        "customer_id": customer,
        "hold_seconds": seconds,
    }
    result = reserve_seats(
        [QueueMessage(f"m-{rid}", json.dumps(body))],
        store=store,
        publisher=RecordingPublisher(),
        settings=SETTINGS,
        clock=clock,
    )
    assert [o.outcome for o in result.published] == [Outcome.HELD]


def sweep(store, clock, publisher=None, *, limit: int = 100):
    return release_expired_holds(
        store,
        publisher or RecordingPublisher(),
        clock,
        limit=limit,
        rejection_ttl_seconds=TTL,
        hints=InventoryHints(),
    )


def seats(store, key=GA) -> tuple[int, int, int]:
    item = store.inventory[key]
    assert item.available + item.held + item.sold == item.capacity
    return item.available, item.held, item.sold


def test_an_expired_hold_is_released_announced_and_taken_out_of_the_outbox(store, clock) -> None:
    # Given a hold of 3 seats for 60 s, and 60 s later
    hold(store, clock, "h-1", quantity=3)
    clock.time += 60
    publisher = RecordingPublisher()

    # When the sweeper runs
    result = sweep(store, clock, publisher)

    # Then the seats are available again, the record says EXPIRED, and EXPIRED was published once
    assert seats(store) == (10, 0, 0)
    assert store.status["h-1"] is Outcome.EXPIRED
    [published] = publisher.published
    assert (published.outcome, published.request_type, published.quantity, published.message_id) == (
        Outcome.EXPIRED,
        RequestType.EXPIRE,
        3,
        None,
    )
    assert published.reason == "the hold expired at 2027-01-15T08:01:00Z; 3 seat(s) released"
    assert published.hold_expires_at == NOW + 60
    assert store.outbox == set()
    assert store.expiry["h-1"] == NOW + 60 + TTL
    assert (len(result.released), result.seats_released, result.unpublished) == (1, 3, 0)


def test_a_hold_is_not_released_a_second_early(store, clock) -> None:
    hold(store, clock, "h-1", seconds=60)
    clock.time += 59

    result = sweep(store, clock)

    assert result.released == []
    assert store.status["h-1"] is Outcome.HELD
    assert seats(store) == (9, 1, 0)


def test_a_second_run_releases_and_announces_nothing(store, clock) -> None:
    hold(store, clock, "h-1", quantity=2)
    clock.time += 60
    sweep(store, clock)
    publisher = RecordingPublisher()

    result = sweep(store, clock, publisher)

    assert (result.released, publisher.published) == ([], [])
    assert seats(store) == (10, 0, 0)


def test_two_sweepers_that_found_the_same_hold_release_it_once(store, clock) -> None:
    # Given a hold that a second sweeper's (eventually consistent) index still shows as live
    hold(store, clock, "h-1", quantity=2)
    clock.time += 60
    stale = store.record("h-1")
    assert stale is not None
    first = sweep(store, clock)
    store.stale_index["h-1"] = stale

    # When the second sweeper runs on what it found
    second = sweep(store, clock)

    # Then its release is refused by the status condition: the seats came back once
    assert len(first.released) == 1
    assert (second.released, second.skipped) == ([], 1)
    assert seats(store) == (10, 0, 0)


def test_sweepers_interleaved_inside_one_release_release_each_hold_once(store, clock) -> None:
    hold(store, clock, "h-1", quantity=1)
    hold(store, clock, "h-2", quantity=2)
    clock.time += 60
    other: list = []

    # Another sweeper commits its release between this one's query and its transaction
    store.before_commit = lambda: other.append(sweep(store, clock))
    result = sweep(store, clock)

    assert sorted(o.reservation_id for o in other[0].released) == ["h-1", "h-2"]
    assert (result.released, result.skipped) == ([], 2)
    assert seats(store) == (10, 0, 0)


def test_a_hold_confirmed_after_the_index_read_is_skipped(store, clock) -> None:
    hold(store, clock, "h-1", quantity=2)
    clock.time += 60
    stale = store.record("h-1")
    store.status["h-1"] = Outcome.CONFIRMED  # a confirm won just before expiry
    store.change_item(GA, held=0, sold=2)
    assert stale is not None
    store.stale_index["h-1"] = stale

    result = sweep(store, clock)

    assert (result.released, result.skipped) == ([], 1)
    assert store.status["h-1"] is Outcome.CONFIRMED
    assert seats(store) == (8, 0, 2)


def test_an_expiry_whose_publication_failed_is_published_by_the_next_run(store, clock) -> None:
    # Given a release whose EXPIRED outcome SNS refused
    hold(store, clock, "h-1", quantity=2)
    clock.time += 60
    failed = sweep(store, clock, RecordingPublisher(refuse_all=True))
    assert (len(failed.released), failed.unpublished) == (1, 1)
    assert store.outbox == {"h-1"}
    assert store.expiry["h-1"] is None  # kept until announced

    # When the next run comes
    publisher = RecordingPublisher()
    result = sweep(store, clock, publisher)

    # Then it publishes the expiry from the outbox, without releasing anything again
    assert [(o.reservation_id, o.outcome) for o in publisher.published] == [("h-1", Outcome.EXPIRED)]
    assert (result.republished, result.released) == (1, [])
    assert store.outbox == set()
    assert seats(store) == (10, 0, 0)


def test_holds_of_several_classes_are_released_one_transaction_per_class(store, clock) -> None:
    for n in range(3):
        hold(store, clock, f"g-{n}")
        hold(store, clock, f"v-{n}", seat_class="VIP")
    clock.time += 60
    transactions = store.transactions

    result = sweep(store, clock)

    assert store.transactions == transactions + 2
    assert len(result.released) == 6
    assert seats(store, GA) == (10, 0, 0) and seats(store, VIP) == (5, 0, 0)


def test_a_throttled_class_is_retried_in_the_same_run_after_a_back_off(store, clock) -> None:
    hold(store, clock, "g-1")
    hold(store, clock, "v-1", seat_class="VIP")
    clock.time += 60
    store.fail_next_commit = [RetryableError("ThrottlingException")]

    result = sweep(store, clock)

    assert len(result.released) == 2 and result.failed_groups == []
    assert (result.holds_overdue, len(clock.slept)) == (0, 1)
    assert seats(store, GA) == (10, 0, 0) and seats(store, VIP) == (5, 0, 0)


def test_a_release_retried_after_a_fault_goes_in_smaller_transactions(store, clock) -> None:
    for n in range(4):
        hold(store, clock, f"h-{n}")
    clock.time += 60
    store.fail_next_commit = [RetryableError("ThrottlingException")] * 2
    transactions = store.transactions

    result = sweep(store, clock)

    # refused with 4 holds; after a back-off, refused again with the first 2 (the round stops at
    # its first failure); after another, one transaction per hold
    assert len(result.released) == 4 and result.failed_groups == []
    assert store.transactions - transactions == 1 + 1 + 4 and len(clock.slept) == 2
    assert seats(store) == (10, 0, 0)


def test_a_class_whose_release_keeps_failing_is_reported_overdue_and_the_others_are_released(
    store, clock
) -> None:
    hold(store, clock, "g-1", quantity=2)
    hold(store, clock, "v-1", seat_class="VIP")
    clock.time += 90
    throttled = RetryableError("ThrottlingException")
    calls: list[SeatKey] = []
    commit = store.change_status

    def refuse_ga(key, transitions, **kwargs):
        calls.append(key)
        if key == GA:
            raise throttled
        return commit(key, transitions, **kwargs)

    store.change_status = refuse_ga  # type: ignore[method-assign]

    result = sweep(store, clock)

    assert [o.reservation_id for o in result.released] == ["v-1"]
    assert result.failed_groups == ["e-1 GA: ThrottlingException"]
    assert (result.holds_overdue, result.oldest_overdue_seconds) == (1, 30)
    assert calls.count(GA) == 4 and len(clock.slept) == 3  # the first try, then 3 rounds after a back-off
    assert seats(store, GA) == (8, 2, 0) and seats(store, VIP) == (5, 0, 0)


def test_an_inconsistent_class_is_reported_at_once_without_retries(store, clock) -> None:
    hold(store, clock, "g-1")
    clock.time += 60
    del store.inventory[GA]  # a hold whose seat class has no inventory item
    reads = store.reads

    result = sweep(store, clock)

    assert result.failed_groups == [
        "e-1 GA: SeatKey(event_id='e-1', seat_class='GA') has reservations but no inventory item"
    ]
    assert result.holds_overdue == 1 and store.reads - reads == 1 and clock.slept == []


def test_a_run_reports_how_late_the_oldest_due_hold_it_found_was(store, clock) -> None:
    hold(store, clock, "h-1", seconds=60)
    hold(store, clock, "h-2", seconds=120)
    clock.time += 200

    result = sweep(store, clock)

    assert (len(result.released), result.oldest_overdue_seconds, result.holds_overdue) == (2, 140, 0)
    assert sweep(store, clock).oldest_overdue_seconds == 0


def test_conflicts_are_retried_in_place(store, clock) -> None:
    hold(store, clock, "h-1")
    clock.time += 60
    store.fail_next_commit = [TransactionConflict("TransactionConflict")]

    result = sweep(store, clock)

    assert len(result.released) == 1


def test_the_limit_caps_one_run_and_the_backlog_drains_over_runs(store, clock) -> None:
    for n in range(5):
        hold(store, clock, f"h-{n}")
    clock.time += 60

    runs = [len(sweep(store, clock, limit=2).released) for _ in range(4)]

    assert runs == [2, 2, 1, 0]
    assert seats(store) == (10, 0, 0)


def test_an_expiry_gives_the_customer_their_seats_back(store, clock) -> None:
    store.change_item(GA, max_per_customer=2)
    hold(store, clock, "h-1", quantity=2, customer="c-7")
    assert store.counters[(GA, "c-7")] == 2
    clock.time += 60

    sweep(store, clock)

    assert store.counters[(GA, "c-7")] == 0


def test_a_release_whose_reply_was_lost_is_announced_by_the_same_run(store, clock) -> None:
    hold(store, clock, "h-1")
    clock.time += 60
    commit = store.change_status

    def lose_the_first_reply(key, transitions, **kwargs):
        store.change_status = commit  # type: ignore[method-assign]
        commit(key, transitions, **kwargs)
        raise RetryableError("DynamoDB unreachable: Read timeout")

    store.change_status = lose_the_first_reply  # type: ignore[method-assign]
    publisher = RecordingPublisher()

    result = sweep(store, clock, publisher)

    # the retry finds the hold released and in the outbox: announced now, once, not a run later
    assert [(o.reservation_id, o.outcome) for o in publisher.published] == [("h-1", Outcome.EXPIRED)]
    assert [o.reservation_id for o in result.released] == ["h-1"]
    assert (result.republished, result.skipped, result.failed_groups) == (0, 0, [])
    assert store.outbox == set() and seats(store) == (10, 0, 0)


def test_a_release_by_another_sweeper_found_in_a_retry_is_not_counted_as_this_runs(store, clock) -> None:
    hold(store, clock, "h-1")
    clock.time += 60
    commit = store.change_status

    def another_sweeper_releases_first(key, transitions, **kwargs):
        store.change_status = commit  # type: ignore[method-assign]
        theirs = [dataclasses.replace(t, change_id="another-run") for t in transitions]
        assert commit(key, theirs, **kwargs) is None
        raise RetryableError("DynamoDB unreachable: Read timeout")

    store.change_status = another_sweeper_releases_first  # type: ignore[method-assign]
    publisher = RecordingPublisher()

    result = sweep(store, clock, publisher)

    # the retry finds the hold released by the other run: skipped, left in the outbox for it
    assert (result.released, publisher.published, result.skipped) == ([], [], 1)
    assert store.outbox == {"h-1"} and seats(store) == (10, 0, 0)
