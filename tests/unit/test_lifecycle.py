"""Holds, confirmations, cancellations, per-customer limits and sale windows, on in-memory fakes.

Every test reads Given / When / Then; the fake store has the DynamoDB adapter's semantics
(guards, refusals with the item as it was, all-or-nothing), see tests/fakes.py.
"""

from __future__ import annotations

import dataclasses
import json

import pytest

from seat_inventory.logic.inventory_hints import InventoryHints
from seat_inventory.logic.limits import MAX_ACTIONS_PER_TRANSACTION
from seat_inventory.logic.reserve_seats import QueueMessage, reserve_seats
from seat_inventory.models import (
    BatchResult,
    Outcome,
    RequestType,
    RetryableError,
    SaleStatus,
    SeatKey,
    Throttled,
    TransactionConflict,
)
from seat_inventory.settings import Settings
from tests.fakes import FakeClock, InMemoryInventoryStore, RecordingPublisher

SETTINGS = Settings(table_name="t", outcomes_topic_arn="arn:aws:sns:us-east-1:1:t", max_hold_seconds=3600)
NOW = 1_800_000_000
TTL = 15 * 86_400
GA = SeatKey("e-1", "GA")


def body_message(message_id: str, **body: object) -> QueueMessage:
    return QueueMessage(message_id, json.dumps(body))


def reserve(
    n: int, rid: str | None = None, *, quantity: int = 1, customer: str | None = None, **extra
) -> QueueMessage:
    return body_message(
        f"m-{n}",
        reservation_id=rid or f"r-{n}",
        event_id=extra.pop("event_id", "e-1"),
        seat_class=extra.pop("seat_class", "GA"),
        quantity=quantity,
        customer_id=customer or f"c-{n}",
        **extra,
    )


def hold(
    n: int, rid: str | None = None, *, quantity: int = 1, customer: str | None = None, **extra
) -> QueueMessage:
    return reserve(n, rid, quantity=quantity, customer=customer, type="hold", **extra)


def confirm(n: int, rid: str, **extra) -> QueueMessage:
    return body_message(f"m-{n}", type="confirm", reservation_id=rid, **extra)


def cancel(n: int, rid: str, **extra) -> QueueMessage:
    return body_message(f"m-{n}", type="cancel", reservation_id=rid, **extra)


@pytest.fixture
def store() -> InMemoryInventoryStore:
    store = InMemoryInventoryStore()
    store.add_event("e-1", capacity=10)
    return store


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(time=NOW)


class Service:
    """Runs batches against one store, one clock and one container's hints."""

    def __init__(self, store: InMemoryInventoryStore, clock: FakeClock) -> None:
        self.store = store
        self.clock = clock
        self.hints = InventoryHints()
        self.publisher = RecordingPublisher()

    def run(self, *messages: QueueMessage) -> BatchResult:
        self.publisher = RecordingPublisher()
        return reserve_seats(
            list(messages),
            store=self.store,
            publisher=self.publisher,
            settings=SETTINGS,
            clock=self.clock,
            hints=self.hints,
        )

    def answers(self) -> list[tuple[str, Outcome, bool]]:
        return [(o.message_id or "", o.outcome, o.duplicate) for o in self.publisher.published]

    def answer(self, message_id: str):
        [found] = [o for o in self.publisher.published if o.message_id == message_id]
        return found


@pytest.fixture
def service(store: InMemoryInventoryStore, clock: FakeClock) -> Service:
    return Service(store, clock)


def seats(store: InMemoryInventoryStore, key: SeatKey = GA) -> tuple[int, int, int]:
    item = store.inventory[key]
    assert item.available + item.held + item.sold == item.capacity, "invariant broken"
    return item.available, item.held, item.sold


# --- hold ---------------------------------------------------------------------------------------


def test_a_hold_takes_seats_into_held_and_answers_when_it_expires(service, store) -> None:
    # When a customer holds 3 seats for 5 minutes
    result = service.run(hold(1, quantity=3, hold_seconds=300))

    # Then the seats are held, not sold, and the answer says until when
    assert result.failed_message_ids == []
    assert seats(store) == (7, 3, 0)
    answer = service.answer("m-1")
    assert (answer.outcome, answer.request_type, answer.hold_expires_at) == (
        Outcome.HELD,
        RequestType.HOLD,
        NOW + 300,
    )
    assert answer.reason == "3 seat(s) held until 2027-01-15T08:05:00Z"
    assert store.status["r-1"] is Outcome.HELD
    assert store.expiry["r-1"] is None  # no TTL while the hold lives
    assert result.seats_held == 3


def test_a_hold_without_hold_seconds_lasts_ten_minutes(service) -> None:
    service.run(hold(1))
    assert service.answer("m-1").hold_expires_at == NOW + 600


def test_holds_and_reservations_of_one_class_share_one_transaction(service, store) -> None:
    # When reservations and holds of the same class arrive in one batch
    service.run(reserve(1, quantity=2), hold(2, quantity=3), reserve(3, quantity=1), hold(4, quantity=1))

    # Then one guarded write takes them all: sold gets the reservations, held the holds
    assert (store.transactions, store.inventory_writes) == (1, 1)
    assert seats(store) == (3, 4, 3)
    assert [a[1] for a in service.answers()] == [
        Outcome.CONFIRMED,
        Outcome.HELD,
        Outcome.CONFIRMED,
        Outcome.HELD,
    ]


def test_a_hold_that_does_not_fit_is_sold_out_and_recorded_as_final(service, store) -> None:
    service.run(hold(1, quantity=8), hold(2, quantity=3))

    assert [a[1] for a in service.answers()] == [Outcome.HELD, Outcome.SOLD_OUT]
    assert service.answer("m-2").remaining == 2
    assert store.expiry["r-2"] == NOW + TTL
    assert seats(store) == (2, 8, 0)


def test_a_redelivered_hold_republishes_its_original_answer_even_after_a_confirmation(service, store) -> None:
    # Given a hold that was confirmed since
    service.run(hold(1, quantity=2))
    original = service.answer("m-1")
    service.run(confirm(2, "r-1"))

    # When the hold message is delivered again
    service.run(hold(1, quantity=2))

    # Then its original answer is published again, marked duplicate, and nothing moves
    again = service.answer("m-1")
    assert again == dataclasses.replace(original, duplicate=True)
    assert seats(store) == (8, 0, 2)


def test_a_hold_longer_than_the_deployment_allows_is_invalid(service, store) -> None:
    service.run(hold(1, hold_seconds=3601))
    assert service.answer("m-1").outcome is Outcome.INVALID
    assert service.answer("m-1").request_type is RequestType.HOLD
    assert "r-1" not in store.records


# --- confirm --------------------------------------------------------------------------------------


def test_confirming_a_live_hold_sells_its_seats(service, store, clock) -> None:
    service.run(hold(1, quantity=2))
    clock.time += 599

    result = service.run(confirm(2, "r-1", customer_id="c-1"))

    assert service.answers() == [("m-2", Outcome.CONFIRMED, False)]
    answer = service.answer("m-2")
    assert (answer.quantity, answer.customer_id, answer.request_type) == (2, "c-1", RequestType.CONFIRM)
    assert answer.reason == "2 held seat(s) confirmed"
    assert seats(store) == (8, 0, 2)
    assert store.status["r-1"] is Outcome.CONFIRMED
    assert store.records["r-1"].outcome is Outcome.HELD  # the original answer is kept
    assert result.seats_confirmed == 2


def test_a_redelivered_confirm_is_answered_with_the_current_state_and_changes_nothing(service, store) -> None:
    service.run(hold(1, quantity=2))
    service.run(confirm(2, "r-1"))
    transactions = store.transactions

    result = service.run(confirm(2, "r-1"))

    assert service.answers() == [("m-2", Outcome.CONFIRMED, True)]
    assert service.answer("m-2").reason == "already confirmed"
    assert store.transactions == transactions
    assert seats(store) == (8, 0, 2)
    assert result.seats_confirmed == 0


def test_confirming_an_unknown_reservation_is_answered_and_not_recorded(service, store) -> None:
    service.run(confirm(1, "r-404"))

    answer = service.answer("m-1")
    assert (answer.outcome, answer.reason) == (
        Outcome.UNKNOWN_RESERVATION,
        "no reservation 'r-404' is recorded; nothing to confirm",
    )
    assert "r-404" not in store.records
    assert store.transactions == 0


def test_an_unknown_reservation_answer_is_not_final(service, store) -> None:
    # Given a confirm that arrived before its hold (SQS standard queues do not keep order)
    service.run(confirm(1, "r-2"))
    service.run(hold(2, quantity=1))

    # When the confirm is sent again
    service.run(confirm(3, "r-2"))

    # Then it now finds the hold
    assert service.answers() == [("m-3", Outcome.CONFIRMED, False)]


def test_confirming_an_expired_hold_before_the_sweeper_ran_is_answered_expired(service, store, clock) -> None:
    service.run(hold(1, quantity=2, hold_seconds=60))
    clock.time += 60

    service.run(confirm(2, "r-1"))

    answer = service.answer("m-2")
    assert answer.outcome is Outcome.EXPIRED
    assert answer.reason.startswith("the hold expired at 2027-01-15T08:01:00Z")
    assert seats(store) == (8, 2, 0)  # the sweeper releases it, not the confirm
    assert store.status["r-1"] is Outcome.HELD


@pytest.mark.parametrize(
    ("status", "reason"),
    [
        (Outcome.CANCELLED, "the reservation was cancelled; nothing to confirm"),
        (Outcome.EXPIRED, "the hold expired at 2027-01-15T08:10:00Z; nothing to confirm"),
    ],
)
def test_confirming_a_released_hold_says_what_became_of_it(service, store, status, reason) -> None:
    service.run(hold(1))
    store.status["r-1"] = status

    service.run(confirm(2, "r-1"))

    assert (service.answer("m-2").outcome, service.answer("m-2").reason) == (status, reason)


def test_confirming_a_rejected_reservation_says_there_is_nothing_to_confirm(service, store) -> None:
    service.run(reserve(1, quantity=10), hold(2, quantity=1))

    service.run(confirm(3, "r-2"))

    answer = service.answer("m-3")
    assert (answer.outcome, answer.reason) == (
        Outcome.SOLD_OUT,
        "the reservation was answered SOLD_OUT; nothing to confirm",
    )


def test_confirming_a_plain_reservation_is_a_duplicate_confirmation(service) -> None:
    service.run(reserve(1))
    service.run(confirm(2, "r-1"))
    assert service.answers() == [("m-2", Outcome.CONFIRMED, True)]


def test_a_confirm_naming_another_customer_is_refused_and_changes_nothing(service, store) -> None:
    service.run(hold(1, customer="c-1"))

    service.run(confirm(2, "r-1", customer_id="c-2"))

    answer = service.answer("m-2")
    assert answer.outcome is Outcome.INVALID
    assert answer.reason == "customer_id 'c-2' does not match the reservation's customer; nothing to confirm"
    assert (answer.event_id, answer.quantity) == (None, None)  # nothing about the reservation leaks
    assert store.status["r-1"] is Outcome.HELD


def test_a_hold_and_its_confirmation_can_share_a_batch(service, store) -> None:
    service.run(hold(1, quantity=2), confirm(2, "r-1"))

    assert service.answers() == [("m-1", Outcome.HELD, False), ("m-2", Outcome.CONFIRMED, False)]
    assert seats(store) == (8, 0, 2)


def test_the_same_confirm_twice_in_a_batch_takes_effect_once(service, store) -> None:
    service.run(hold(1, quantity=2))

    service.run(confirm(2, "r-1"), confirm(3, "r-1"))

    assert service.answers() == [("m-2", Outcome.CONFIRMED, False), ("m-3", Outcome.CONFIRMED, True)]
    assert seats(store) == (8, 0, 2)


def test_confirm_then_cancel_in_one_batch_apply_in_order(service, store) -> None:
    service.run(hold(1, quantity=2))

    service.run(confirm(2, "r-1"), cancel(3, "r-1"))

    assert service.answers() == [("m-2", Outcome.CONFIRMED, False), ("m-3", Outcome.CANCELLED, False)]
    assert seats(store) == (10, 0, 0)


def test_confirmations_of_one_class_cost_one_read_and_one_transaction(service, store) -> None:
    service.run(*(hold(n) for n in range(5)))
    transactions = store.transactions

    service.run(*(confirm(10 + n, f"r-{n}") for n in range(5)))

    assert store.batch_reads == 1
    assert store.transactions == transactions + 1
    assert seats(store) == (5, 0, 5)


def test_a_cancel_that_wins_the_race_turns_the_confirm_into_its_answer(service, store, clock) -> None:
    # Given a hold, and a cancellation that commits between the confirm's read and its write
    service.run(hold(1, quantity=2))

    def concurrent_cancel() -> None:
        other = Service(store, clock)
        other.run(cancel(9, "r-1"))

    store.before_commit = concurrent_cancel

    # When the confirm is processed
    result = service.run(confirm(2, "r-1"))

    # Then the confirm's condition fails, and it is answered from the record DynamoDB returned
    assert result.failed_message_ids == []
    assert service.answers() == [("m-2", Outcome.CANCELLED, False)]
    assert service.answer("m-2").reason == "the reservation was cancelled; nothing to confirm"
    assert seats(store) == (10, 0, 0)


def test_a_confirm_whose_hold_is_being_retried_is_retried_too(service, store) -> None:
    # Given a hold whose transaction is throttled, and its confirm in the same batch
    store.fail_next = [RetryableError("InternalServerError")]

    result = service.run(hold(1), confirm(2, "r-1"))

    # Then both come back rather than the confirm being answered UNKNOWN_RESERVATION
    assert result.failed_message_ids == ["m-1", "m-2"]
    assert service.answers() == []


def test_a_failed_read_of_the_records_hands_the_changes_back(service, store) -> None:
    service.run(hold(1))

    def fail_the_next_call() -> None:  # runs inside the reservation's commit, which succeeds
        store.fail_next = [RetryableError("InternalServerError")]

    store.before_commit = fail_the_next_call

    result = service.run(confirm(2, "r-1"), reserve(3))

    assert result.failed_message_ids == ["m-2"]
    assert service.answers() == [("m-3", Outcome.CONFIRMED, False)]


def test_conflicts_on_a_status_change_are_retried_in_place(service, store, clock) -> None:
    service.run(hold(1))
    store.fail_next_commit = [TransactionConflict("TransactionConflict")] * 2

    result = service.run(confirm(2, "r-1"))

    assert result.failed_message_ids == []
    assert len(clock.slept) == 2
    assert store.status["r-1"] is Outcome.CONFIRMED


def test_a_conflict_storm_on_a_status_change_is_waited_out_in_place(service, store, clock) -> None:
    service.run(hold(1))
    store.fail_next_commit = [TransactionConflict("TransactionConflict")] * 30

    result = service.run(confirm(2, "r-1"))

    assert result.failed_message_ids == []
    assert store.status["r-1"] is Outcome.CONFIRMED


def test_conflicts_on_a_status_change_past_the_deadline_hand_the_message_back(service, store) -> None:
    service.run(hold(1))
    store.fail_next_commit = [TransactionConflict("TransactionConflict")] * 10_000

    result = service.run(confirm(2, "r-1"))

    assert result.failed_message_ids == ["m-2"]
    assert result.handed_back["m-2"].startswith("TransactionConflict: status changes of")
    assert store.status["r-1"] is Outcome.HELD


def test_throttled_status_changes_and_record_reads_are_retried_in_place(service, store, clock) -> None:
    service.run(hold(1))
    slept = len(clock.slept)
    store.fail_next = [Throttled("ProvisionedThroughputExceededException")]  # the records' read
    store.fail_next_commit = [Throttled("ThrottlingError")] * 2

    result = service.run(confirm(2, "r-1"))

    assert result.failed_message_ids == []
    assert len(clock.slept) - slept == 3
    assert store.status["r-1"] is Outcome.CONFIRMED


def test_throttling_of_a_status_change_past_the_deadline_hands_the_message_back(service, store) -> None:
    service.run(hold(1))
    store.fail_next_commit = [Throttled("ThrottlingError")] * 10_000

    result = service.run(confirm(2, "r-1"))

    assert result.failed_message_ids == ["m-2"]
    assert result.handed_back["m-2"].startswith("Throttled: status changes of")
    assert store.status["r-1"] is Outcome.HELD


def test_confirm_and_cancel_go_on_while_the_sale_is_closed(service, store) -> None:
    service.run(hold(1), reserve(2))
    store.change_item(GA, sale_status=SaleStatus.CLOSED)

    service.run(confirm(3, "r-1"), cancel(4, "r-2"))

    assert service.answers() == [("m-3", Outcome.CONFIRMED, False), ("m-4", Outcome.CANCELLED, False)]


def test_a_broken_inventory_is_never_written_and_the_message_goes_back(service, store) -> None:
    # Given a hold whose seats are (wrongly) not in `held` any more
    service.run(hold(1, quantity=2))
    store.change_item(GA, held=0, available=10)

    # When it is confirmed
    result = service.run(confirm(2, "r-1"))

    # Then the guard refuses, nothing is written, and the message is retried (then dead-lettered)
    assert result.failed_message_ids == ["m-2"]
    assert store.status["r-1"] is Outcome.HELD
    assert store.inventory[GA].sold == 0


# --- cancel ---------------------------------------------------------------------------------------


def test_cancelling_a_confirmed_reservation_gives_its_seats_back_and_keeps_the_record(service, store) -> None:
    service.run(reserve(1, quantity=3))

    result = service.run(cancel(2, "r-1"))

    assert service.answers() == [("m-2", Outcome.CANCELLED, False)]
    assert service.answer("m-2").reason == "3 seat(s) released"
    assert seats(store) == (10, 0, 0)
    assert store.status["r-1"] is Outcome.CANCELLED
    assert store.expiry["r-1"] is None  # a sale and its cancellation are kept: the ledger
    assert result.seats_released == 3


def test_cancelling_a_hold_gives_its_seats_back_and_lets_the_record_expire(service, store) -> None:
    service.run(hold(1, quantity=3))

    service.run(cancel(2, "r-1"))

    assert seats(store) == (10, 0, 0)
    assert store.status["r-1"] is Outcome.CANCELLED
    assert store.expiry["r-1"] == NOW + TTL


def test_a_cancellation_takes_effect_once_however_often_it_is_delivered(service, store) -> None:
    service.run(reserve(1, quantity=3), reserve(2, quantity=2))

    service.run(cancel(3, "r-1"), cancel(4, "r-1"))
    service.run(cancel(3, "r-1"))

    assert service.answers() == [("m-3", Outcome.CANCELLED, True)]
    assert service.answer("m-3").reason == "already cancelled"
    assert seats(store) == (8, 0, 2)


def test_cancelling_an_expired_hold_leaves_the_release_to_the_sweeper(service, store, clock) -> None:
    service.run(hold(1, quantity=2, hold_seconds=60))
    clock.time += 61

    service.run(cancel(2, "r-1"))

    assert service.answer("m-2").outcome is Outcome.EXPIRED
    assert seats(store) == (8, 2, 0)


def test_cancelling_an_unknown_or_rejected_reservation_changes_nothing(service, store) -> None:
    service.run(reserve(1, quantity=10), reserve(2))

    service.run(cancel(3, "r-404"), cancel(4, "r-2"))

    assert [(a[1]) for a in service.answers()] == [Outcome.UNKNOWN_RESERVATION, Outcome.SOLD_OUT]
    assert service.answer("m-4").reason == "the reservation was answered SOLD_OUT; nothing to cancel"
    assert seats(store) == (0, 0, 10)


def test_a_stale_capacity_costs_one_refused_round_not_a_wrong_write(service, store) -> None:
    # Given a container that last saw the class with capacity 10, then an operator added 5 seats
    service.run(reserve(1, quantity=10), reserve(2))  # learns the item (sold out)
    item = store.inventory[GA]
    store.inventory[GA] = dataclasses.replace(item, capacity=15, available=item.available + 5)
    transactions = store.transactions

    # When a reservation is cancelled
    service.run(cancel(3, "r-1"))

    # Then the guard refuses the assumed capacity, and the retry with the real one commits
    assert service.answers() == [("m-3", Outcome.CANCELLED, False)]
    assert store.transactions == transactions + 2
    assert seats(store) == (15, 0, 0)


def test_many_cancellations_of_one_class_commit_together(service, store) -> None:
    store.add_event("e-1", capacity=200)
    service.run(*(reserve(n) for n in range(150)))

    service.run(*(cancel(1000 + n, f"r-{n}") for n in range(150)))

    assert all(a[1] is Outcome.CANCELLED for a in service.answers())
    assert seats(store) == (200, 0, 0)


# --- per-customer limit ----------------------------------------------------------------------


@pytest.fixture
def limited(store: InMemoryInventoryStore) -> InMemoryInventoryStore:
    store.change_item(GA, max_per_customer=4)
    return store


def test_requests_past_a_customers_limit_are_answered_limit_exceeded(service, limited) -> None:
    # When one customer asks for 3, then 2, then 1 seats with a limit of 4
    service.run(
        reserve(1, quantity=3, customer="c-1"),
        hold(2, quantity=2, customer="c-1"),
        reserve(3, quantity=1, customer="c-1"),
        reserve(4, quantity=4, customer="c-2"),
    )

    # Then what would pass the limit is refused, in arrival order, and the rest is taken
    answers = [a[1] for a in service.answers()]
    assert answers == [Outcome.CONFIRMED, Outcome.LIMIT_EXCEEDED, Outcome.CONFIRMED, Outcome.CONFIRMED]
    refused = service.answer("m-2")
    assert (
        refused.reason == "customer 'c-1' may take at most 4 seat(s) of e-1 GA; 3 already taken, 2 requested"
    )
    assert limited.counters == {(GA, "c-1"): 4, (GA, "c-2"): 4}
    assert limited.expiry["r-2"] == NOW + TTL  # recorded and final, like SOLD_OUT
    assert limited.counted == {"r-1", "r-3", "r-4"}


def test_the_limit_counts_across_batches(service, limited) -> None:
    service.run(reserve(1, quantity=3, customer="c-1"))

    service.run(reserve(2, quantity=2, customer="c-1"), reserve(3, quantity=1, customer="c-1"))

    assert [a[1] for a in service.answers()] == [Outcome.LIMIT_EXCEEDED, Outcome.CONFIRMED]
    assert service.answer("m-2").reason.endswith("3 already taken, 2 requested")
    assert limited.counters[(GA, "c-1")] == 4


def test_a_limit_set_after_the_container_looked_is_enforced(service, store) -> None:
    # Given a container that saw the class without a limit
    service.run(reserve(1, quantity=10), reserve(2))
    store.inventory[GA] = dataclasses.replace(
        store.inventory[GA], capacity=20, available=10, max_per_customer=2
    )

    # When a customer asks for 3 seats
    service.run(reserve(3, quantity=3, customer="c-9"))

    # Then the write that assumed no limit is refused, and the re-plan applies the real one
    assert service.answers() == [("m-3", Outcome.LIMIT_EXCEEDED, False)]


def test_a_limit_removed_after_the_container_looked_no_longer_applies(service, limited) -> None:
    service.run(reserve(1, quantity=4, customer="c-1"))
    limited.change_item(GA, max_per_customer=None)

    service.run(reserve(2, quantity=3, customer="c-1"))

    assert service.answers() == [("m-2", Outcome.CONFIRMED, False)]
    assert limited.counters[(GA, "c-1")] == 4  # not counted without a limit
    assert "r-2" not in limited.counted


def test_rejections_planned_on_an_assumed_limit_are_checked_by_a_read_first(service, limited) -> None:
    # Given a container that learned the limit of 4
    service.run(reserve(1, quantity=1, customer="c-1"))
    # and an operator who then raised it to 10
    limited.change_item(GA, max_per_customer=10)
    reads = limited.reads

    # When the only request would pass the old limit
    service.run(reserve(2, quantity=5, customer="c-2"))

    # Then it is not refused on the stale assumption
    assert limited.reads == reads + 1
    assert service.answers() == [("m-2", Outcome.CONFIRMED, False)]


def test_cancel_and_expiry_give_the_customer_their_seats_back(service, limited, clock) -> None:
    from seat_inventory.logic.sweep_holds import release_expired_holds

    service.run(reserve(1, quantity=2, customer="c-1"), hold(2, quantity=2, customer="c-1", hold_seconds=60))
    assert limited.counters[(GA, "c-1")] == 4

    service.run(cancel(3, "r-1"))
    clock.time += 60
    release_expired_holds(limited, RecordingPublisher(), clock, limit=10)

    assert limited.counters[(GA, "c-1")] == 0
    service.run(reserve(4, quantity=4, customer="c-1"))
    assert service.answers() == [("m-4", Outcome.CONFIRMED, False)]


def test_a_batch_with_a_limit_is_split_to_fit_the_counter_updates(service, store) -> None:
    store.add_event("e-1", capacity=500, max_per_customer=2)
    service.run(reserve(0))  # the container learns the limit
    transactions = store.transactions

    result = service.run(*(reserve(n) for n in range(1, 99)))

    # 98 customers: each needs a record and a counter, so two transactions of 1 + 2 x 49 actions
    assert result.failed_message_ids == []
    assert len(service.answers()) == 98
    assert all(a[1] is Outcome.CONFIRMED for a in service.answers())
    assert store.transactions == transactions + 2
    assert len(store.counters) == 99
    assert 1 + 2 * 49 <= MAX_ACTIONS_PER_TRANSACTION < 1 + 2 * 50


def test_a_limit_discovered_mid_batch_still_fits_the_transaction(service, store) -> None:
    # Given a container that never saw the class, which has a limit
    store.add_event("e-1", capacity=500, max_per_customer=2)

    # When 99 customers reserve in one batch
    result = service.run(*(reserve(n) for n in range(99)))

    # Then the planner learns the limit from the refusal and splits the group to fit
    assert result.failed_message_ids == []
    assert len(service.answers()) == 99
    assert all(a[1] is Outcome.CONFIRMED for a in service.answers())
    assert store.inventory[GA].sold == 99


# --- sale status and window -------------------------------------------------------------------------


def test_a_closed_class_answers_sale_closed_and_the_answer_is_final(service, store) -> None:
    store.change_item(GA, sale_status=SaleStatus.CLOSED)

    service.run(reserve(1), hold(2))
    assert [a[1] for a in service.answers()] == [Outcome.SALE_CLOSED, Outcome.SALE_CLOSED]
    assert service.answer("m-1").reason == "the sale of e-1 GA is closed"
    assert store.expiry["r-1"] == NOW + TTL

    store.change_item(GA, sale_status=SaleStatus.OPEN)
    service.run(reserve(1), reserve(3))
    assert service.answers() == [("m-1", Outcome.SALE_CLOSED, True), ("m-3", Outcome.CONFIRMED, False)]
    assert seats(store) == (9, 0, 1)


@pytest.mark.parametrize(
    ("window", "reason"),
    [
        ({"sale_starts_at": NOW + 1}, "the sale of e-1 GA opens at 2027-01-15T08:00:01Z"),
        ({"sale_ends_at": NOW}, "the sale of e-1 GA ended at 2027-01-15T08:00:00Z"),
        (
            {"sale_starts_at": NOW - 100, "sale_ends_at": NOW},
            "the sale of e-1 GA ended at 2027-01-15T08:00:00Z",
        ),
    ],
)
def test_a_request_outside_the_window_is_sale_closed(service, store, window, reason) -> None:
    store.change_item(GA, **window)

    service.run(reserve(1))

    assert (service.answer("m-1").outcome, service.answer("m-1").reason) == (Outcome.SALE_CLOSED, reason)
    assert seats(store) == (10, 0, 0)


def test_a_request_inside_the_window_is_served(service, store) -> None:
    store.change_item(GA, sale_starts_at=NOW, sale_ends_at=NOW + 1)
    service.run(reserve(1))
    assert service.answer("m-1").outcome is Outcome.CONFIRMED


def test_once_closed_later_batches_read_instead_of_writing_the_hot_item(service, store) -> None:
    store.change_item(GA, sale_status=SaleStatus.CLOSED)
    service.run(reserve(1))
    writes, reads = store.inventory_writes, store.reads

    service.run(reserve(2), reserve(3))

    assert store.reads == reads + 1
    assert store.inventory_writes == writes
    assert [a[1] for a in service.answers()] == [Outcome.SALE_CLOSED, Outcome.SALE_CLOSED]


def test_a_reopened_sale_is_seen_by_the_read(service, store) -> None:
    store.change_item(GA, sale_status=SaleStatus.CLOSED)
    service.run(reserve(1))
    store.change_item(GA, sale_status=SaleStatus.OPEN)

    service.run(reserve(2))

    assert service.answers() == [("m-2", Outcome.CONFIRMED, False)]
