"""The batch logic on in-memory fakes: greedy fill, dedupe, final rejections, partial failures."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from seat_inventory.logic.inventory_hints import InventoryHints
from seat_inventory.logic.limits import MAX_RESERVATIONS_PER_TRANSACTION
from seat_inventory.logic.reserve_seats import QueueMessage, reserve_seats
from seat_inventory.logic.retry_deadline import CONFLICT_BACKOFF_CAP_SECONDS, conflict_deadline
from seat_inventory.models import (
    Outcome,
    RetryableError,
    SaleStatus,
    SeatKey,
    Throttled,
    TransactionConflict,
    WriteRefused,
)
from seat_inventory.settings import Settings
from tests.fakes import FakeClock, InMemoryInventoryStore, RecordingPublisher
from tests.writes import spy_writes

SETTINGS = Settings(
    table_name="t", outcomes_topic_arn="arn:aws:sns:us-east-1:1:t", rejection_record_ttl_days=15
)


def message(
    n: int,
    reservation_id: str | None = None,
    *,
    event_id: str = "e-1",
    quantity: int = 1,
    seat_class: str = "GA",
) -> QueueMessage:
    body = {
        "reservation_id": reservation_id or f"r-{n}",
        "event_id": event_id,
        "seat_class": seat_class,
        "quantity": quantity,
        "customer_id": f"c-{n}",
    }
    return QueueMessage(f"m-{n}", json.dumps(body))


@pytest.fixture
def store() -> InMemoryInventoryStore:
    store = InMemoryInventoryStore()
    store.add_event("e-1", capacity=10)
    return store


@pytest.fixture
def publisher() -> RecordingPublisher:
    return RecordingPublisher()


def run(
    messages: list[QueueMessage],
    store: InMemoryInventoryStore,
    publisher: RecordingPublisher,
    clock: FakeClock | None = None,
):
    return reserve_seats(
        messages, store=store, publisher=publisher, settings=SETTINGS, clock=clock or FakeClock()
    )


def outcomes_by_message(publisher: RecordingPublisher) -> dict[str, Outcome]:
    return {o.message_id or "": o.outcome for o in publisher.published}


def test_a_batch_for_one_seat_class_costs_one_inventory_write(store, publisher) -> None:
    result = run([message(n, quantity=2) for n in range(5)], store, publisher)

    assert result.failed_message_ids == []
    assert store.inventory_writes == 1
    assert store.transactions == 1
    assert store.inventory[SeatKey("e-1", "GA")].available == 0
    assert [o.outcome for o in publisher.published] == [Outcome.CONFIRMED] * 5
    assert result.seats_confirmed == 10


def test_a_group_that_does_not_fit_is_filled_greedily_in_arrival_order(store, publisher) -> None:
    messages = [
        message(1, quantity=4),
        message(2, quantity=4),
        message(3, quantity=4),
        message(4, quantity=2),
        message(5, quantity=1),
    ]

    run(messages, store, publisher)

    assert outcomes_by_message(publisher) == {
        "m-1": Outcome.CONFIRMED,
        "m-2": Outcome.CONFIRMED,
        "m-3": Outcome.SOLD_OUT,
        "m-4": Outcome.CONFIRMED,
        "m-5": Outcome.SOLD_OUT,
    }
    assert store.inventory[SeatKey("e-1", "GA")].available == 0
    assert store.inventory[SeatKey("e-1", "GA")].sold == 10
    sold_out = next(o for o in publisher.published if o.message_id == "m-3")
    assert (sold_out.remaining, sold_out.reason) == (0, "requested 4 seat(s), 0 left")
    # a container reads a class it has never seen first, so one transaction commits the whole group
    assert store.reads == 1
    assert store.transactions == 1
    assert store.inventory_writes == 1


def test_an_optimistic_write_planned_on_a_stale_hint_is_refused_then_filled_from_what_it_saw(
    store, publisher
) -> None:
    hints = InventoryHints()
    hints.learn(SeatKey("e-1", "GA"), 10)  # stale: the class has 5 seats left
    key = SeatKey("e-1", "GA")
    store.inventory[key] = dataclasses.replace(store.inventory[key], available=5, capacity=5)

    result = run_with_hints([message(1, quantity=4), message(2, quantity=4)], store, publisher, hints)

    assert [o.outcome for o in result.published] == [Outcome.CONFIRMED, Outcome.SOLD_OUT]
    # no read: the refused transaction returned the item (ReturnValuesOnConditionCheckFailure)
    assert (store.reads, store.transactions, store.inventory_writes) == (0, 2, 1)
    assert store.inventory[SeatKey("e-1", "GA")].available == 1


def test_an_unknown_event_is_answered_and_recorded(store, publisher) -> None:
    run([message(1, event_id="nope")], store, publisher)

    [answer] = publisher.published
    assert answer.outcome is Outcome.UNKNOWN_EVENT
    assert answer.reason == "event 'nope' has no seat class 'GA'"
    assert store.records["r-1"].outcome is Outcome.UNKNOWN_EVENT


def test_an_unknown_seat_class_of_a_known_event_is_unknown_event(store, publisher) -> None:
    run([message(1, seat_class="VIP")], store, publisher)

    assert publisher.published[0].outcome is Outcome.UNKNOWN_EVENT


def test_rejections_expire_and_confirmations_do_not(store, publisher) -> None:
    clock = FakeClock(time=1_000)
    run([message(1, quantity=10), message(2), message(3, event_id="nope")], store, publisher, clock)

    assert store.expiry == {"r-1": None, "r-2": 1_000 + 15 * 86_400, "r-3": 1_000 + 15 * 86_400}


def test_a_duplicate_in_the_same_batch_takes_seats_once_and_gets_the_same_answer(store, publisher) -> None:
    result = run([message(1, "r-1", quantity=3), message(2, "r-1", quantity=3)], store, publisher)

    assert store.inventory[SeatKey("e-1", "GA")].sold == 3
    first, second = publisher.published
    assert (first.outcome, first.duplicate, second.outcome, second.duplicate) == (
        Outcome.CONFIRMED,
        False,
        Outcome.CONFIRMED,
        True,
    )
    assert second.reservation_id == "r-1"
    assert result.seats_confirmed == 3


def test_a_redelivery_days_later_republishes_the_stored_answer_and_takes_nothing(store, publisher) -> None:
    run([message(1, quantity=3)], store, publisher)

    later = RecordingPublisher()
    result = run(
        [message(1, quantity=3), message(2, quantity=1)],
        store,
        later,
        FakeClock(time=1_800_000_000 + 5 * 86_400),
    )

    assert store.inventory[SeatKey("e-1", "GA")].sold == 4
    redelivered, fresh = later.published
    assert (redelivered.outcome, redelivered.duplicate) == (Outcome.CONFIRMED, True)
    assert (fresh.outcome, fresh.duplicate) == (Outcome.CONFIRMED, False)
    assert result.seats_confirmed == 1


def test_a_sold_out_answer_is_final_even_after_seats_are_freed(store, publisher) -> None:
    run([message(1, quantity=10), message(2, quantity=1)], store, publisher)
    assert outcomes_by_message(publisher)["m-2"] is Outcome.SOLD_OUT
    key = SeatKey("e-1", "GA")
    inv = store.inventory[key]
    store.inventory[key] = type(inv)(inv.event_id, inv.seat_class, inv.capacity, 5, 5)  # seats freed

    again = RecordingPublisher()
    run([message(2, quantity=1)], store, again)

    assert [(o.outcome, o.duplicate) for o in again.published] == [(Outcome.SOLD_OUT, True)]
    assert store.inventory[key].available == 5


def test_invalid_messages_are_answered_and_do_not_fail_the_batch(store, publisher) -> None:
    messages = [message(1), QueueMessage("m-bad", "{not json"), message(2)]

    result = run(messages, store, publisher)

    assert result.failed_message_ids == []
    assert outcomes_by_message(publisher) == {
        "m-1": Outcome.CONFIRMED,
        "m-bad": Outcome.INVALID,
        "m-2": Outcome.CONFIRMED,
    }
    invalid = next(o for o in publisher.published if o.outcome is Outcome.INVALID)
    assert invalid.reservation_id == "m-bad"  # the SQS message id stands in
    assert "r-bad" not in store.records


def test_a_group_hit_by_a_transient_fault_is_retried_alone(publisher) -> None:
    store = InMemoryInventoryStore()
    store.add_event("e-1", capacity=10)
    store.add_event("e-2", capacity=10)
    store.fail_next = [RetryableError("InternalServerError")]

    result = run(
        [message(1, event_id="e-1"), message(2, event_id="e-2"), message(3, event_id="e-1")], store, publisher
    )

    assert result.failed_message_ids == ["m-1", "m-3"]
    assert outcomes_by_message(publisher) == {"m-2": Outcome.CONFIRMED}
    assert store.inventory[SeatKey("e-1", "GA")].sold == 0


def test_transaction_conflicts_are_retried_in_place_with_backoff(store, publisher) -> None:
    store.fail_next_commit = [TransactionConflict("TransactionConflict")] * 2
    clock = FakeClock()

    result = run([message(1)], store, publisher, clock)

    assert result.failed_message_ids == []
    assert len(clock.slept) == 2
    assert store.inventory[SeatKey("e-1", "GA")].sold == 1


def test_a_conflict_storm_is_waited_out_in_place_until_the_deadline(store, publisher) -> None:
    # 40 conflicts in a row (other containers' transactions on the hot item): no message goes back
    # to the queue, where each return would count towards the dead-letter queue.
    store.fail_next_commit = [TransactionConflict("TransactionConflict")] * 40
    clock = FakeClock()
    started = clock.now()

    result = reserve_seats(
        [message(1)], store=store, publisher=publisher, settings=SETTINGS, clock=clock, deadline=started + 25
    )

    assert result.failed_message_ids == []
    assert outcomes_by_message(publisher) == {"m-1": Outcome.CONFIRMED}
    assert len(clock.slept) == 40
    assert max(clock.slept) <= CONFLICT_BACKOFF_CAP_SECONDS
    assert clock.now() <= started + 25


def test_conflicts_past_the_deadline_hand_the_messages_back_and_say_why(store, publisher) -> None:
    store.fail_next_commit = [TransactionConflict("TransactionConflict")] * 1000
    clock = FakeClock()
    deadline = conflict_deadline(clock.now(), remaining_ms=8_000)  # 3 s for conflicts, 5 s kept back

    result = reserve_seats(
        [message(1), message(2, event_id="e-2")],
        store=store,
        publisher=publisher,
        settings=SETTINGS,
        clock=clock,
        deadline=deadline,
    )

    assert result.failed_message_ids == ["m-1", "m-2"]
    assert publisher.published == []
    assert clock.now() <= deadline
    assert result.handed_back["m-1"].startswith("e-1 GA: TransactionConflict: ")
    assert "transactions in a row refused by conflicts or throttling" in result.handed_back["m-1"]
    assert "none committed before the deadline" in result.handed_back["m-1"]
    assert result.handed_back["m-2"].startswith("e-2 GA: TransactionConflict: ")


def test_a_transient_fault_hands_the_group_back_with_its_reason(store, publisher) -> None:
    store.fail_next_commit = [RetryableError("InternalServerError")]

    result = run([message(1)], store, publisher)

    assert result.handed_back == {"m-1": "e-1 GA: RetryableError: InternalServerError"}


def test_throttled_transactions_and_reads_are_retried_in_place_then_commit(store, publisher) -> None:
    # The hot partition's units are spent: the first read and three transactions are throttled.
    store.fail_next = [Throttled("ProvisionedThroughputExceededException")]
    store.fail_next_commit = [Throttled("ThrottlingError")] * 3
    clock = FakeClock()
    started = clock.now()

    result = reserve_seats(
        [message(1), message(2)],
        store=store,
        publisher=publisher,
        settings=SETTINGS,
        clock=clock,
        deadline=started + 25,
    )

    assert result.failed_message_ids == []
    assert result.handed_back == {}
    assert outcomes_by_message(publisher) == {"m-1": Outcome.CONFIRMED, "m-2": Outcome.CONFIRMED}
    assert len(clock.slept) == 4  # one back-off per refusal, none more
    assert max(clock.slept) <= CONFLICT_BACKOFF_CAP_SECONDS
    assert store.inventory[SeatKey("e-1", "GA")].sold == 2
    assert store.transactions == 4  # three throttled attempts, one commit


def test_throttling_that_never_heals_hands_the_messages_back_at_the_deadline(store, publisher) -> None:
    store.fail_next_commit = [Throttled("ThrottlingError")] * 10_000
    clock = FakeClock()
    deadline = conflict_deadline(clock.now(), remaining_ms=8_000)  # 3 s of patience, 5 s kept back

    result = reserve_seats(
        [message(1), message(2, event_id="e-2")],
        store=store,
        publisher=publisher,
        settings=SETTINGS,
        clock=clock,
        deadline=deadline,
    )

    assert result.failed_message_ids == ["m-1", "m-2"]
    assert publisher.published == []
    assert clock.now() <= deadline
    assert len(clock.slept) > 1  # retried in place first
    assert result.handed_back["m-1"].startswith("e-1 GA: Throttled: ")
    assert "refused by conflicts or throttling (last: ThrottlingError)" in result.handed_back["m-1"]
    assert "none committed before the deadline" in result.handed_back["m-1"]
    assert result.handed_back["m-2"].startswith("e-2 GA: Throttled: ")
    assert store.inventory[SeatKey("e-1", "GA")].sold == 0


def test_a_read_throttled_until_the_deadline_hands_the_messages_back(publisher) -> None:
    store = InMemoryInventoryStore()
    store.add_event("e-1", capacity=10)
    store.fail_next = [Throttled("ProvisionedThroughputExceededException")] * 10_000
    clock = FakeClock()
    deadline = conflict_deadline(clock.now(), remaining_ms=8_000)

    result = reserve_seats(
        [message(1)], store=store, publisher=publisher, settings=SETTINGS, clock=clock, deadline=deadline
    )

    assert result.failed_message_ids == ["m-1"]
    assert result.handed_back["m-1"].startswith("e-1 GA: Throttled: ")
    assert "reads in a row refused by conflicts or throttling" in result.handed_back["m-1"]
    assert "no consistent read before the deadline" in result.handed_back["m-1"]
    assert store.transactions == 0


def test_a_failed_publication_is_retried_and_republishes_without_taking_seats(store) -> None:
    publisher = RecordingPublisher(refuse_ids={"r-2"})
    first = run([message(1, quantity=2), message(2, quantity=2)], store, publisher)
    assert first.failed_message_ids == ["m-2"]
    assert store.inventory[SeatKey("e-1", "GA")].sold == 4

    retry_publisher = RecordingPublisher()
    second = run([message(2, quantity=2)], store, retry_publisher)

    assert second.failed_message_ids == []
    assert [(o.reservation_id, o.outcome) for o in retry_publisher.published] == [("r-2", Outcome.CONFIRMED)]
    assert store.inventory[SeatKey("e-1", "GA")].sold == 4


def test_a_publication_refused_for_the_topics_rate_is_retried_in_place_and_nothing_goes_back(store) -> None:
    # Given SNS refusing the first 3 calls for the region's publish rate (Throttled)
    publisher = RecordingPublisher(throttle_calls=3)
    clock = FakeClock()

    # When a batch is answered
    result = run([message(1), message(2)], store, publisher, clock)

    # Then the answers wait out the throttling in place, with back-off, and none is handed back
    assert result.failed_message_ids == []
    assert [o.reservation_id for o in publisher.published] == ["r-1", "r-2"]
    assert publisher.throttled == 3 and len(clock.slept) == 3
    assert all(0 <= pause <= CONFLICT_BACKOFF_CAP_SECONDS for pause in clock.slept)


def test_a_publication_still_throttled_at_the_deadline_is_handed_back_with_its_seats_recorded(store) -> None:
    publisher = RecordingPublisher(throttle_calls=1_000_000)
    clock = FakeClock()
    deadline = conflict_deadline(clock.now(), remaining_ms=8_000)

    result = reserve_seats(
        [message(1)], store=store, publisher=publisher, settings=SETTINGS, clock=clock, deadline=deadline
    )

    assert result.failed_message_ids == ["m-1"]
    assert result.handed_back["m-1"] == "its outcome was not published"
    assert clock.now() <= deadline and publisher.published == []
    assert store.inventory[SeatKey("e-1", "GA")].sold == 1  # its retry republishes the recorded answer


def test_a_duplicate_whose_original_failed_is_retried_too(store, publisher) -> None:
    store.fail_next = [RetryableError("ThrottlingException")]

    result = run([message(1, "r-1"), message(2, "r-1")], store, publisher)

    assert result.failed_message_ids == ["m-1", "m-2"]


def test_large_groups_are_split_at_the_transaction_limit(publisher) -> None:
    store = InMemoryInventoryStore()
    store.add_event("e-1", capacity=1000)
    count = MAX_RESERVATIONS_PER_TRANSACTION + 20

    run([message(n) for n in range(count)], store, publisher)

    assert store.transactions == 2
    assert store.inventory[SeatKey("e-1", "GA")].sold == count
    assert len(publisher.published) == count


def test_a_batch_of_more_than_one_transaction_is_answered_in_parts_each_published_before_the_next_is_written(
    publisher,
) -> None:
    store = InMemoryInventoryStore()
    store.add_event("e-1", capacity=1000)
    published_when_written: list[int] = []
    take = store.take

    def counting_take(*args, **kwargs):  # type: ignore[no-untyped-def]
        published_when_written.append(len(publisher.published))
        return take(*args, **kwargs)

    store.take = counting_take  # type: ignore[method-assign]
    count = 2 * MAX_RESERVATIONS_PER_TRANSACTION + 10
    publisher.refuse_ids = {"r-5", f"r-{count - 1}"}

    result = run([message(n) for n in range(count)], store, publisher)

    assert published_when_written == [0, 98, 98 + 99]
    assert publisher.calls_soon == 2
    assert store.inventory[SeatKey("e-1", "GA")].sold == count
    assert [o.message_id for o in result.published] == [
        f"m-{n}" for n in range(count) if n not in (5, count - 1)
    ]
    assert result.failed_message_ids == ["m-5", f"m-{count - 1}"]
    assert result.handed_back["m-5"] == "its outcome was not published"
    assert result.seats_confirmed == count - 2


def test_a_change_in_a_later_part_waits_for_its_hold_an_earlier_part_handed_back(publisher) -> None:
    store = InMemoryInventoryStore()
    store.add_event("e-1", capacity=1000)
    store.fail_next_commit = [RetryableError("InternalServerError")]  # the first part's write
    hold = dataclasses.replace(message(0), body=json.dumps({**json.loads(message(0).body), "type": "hold"}))
    first_part = [hold, *(message(n) for n in range(1, MAX_RESERVATIONS_PER_TRANSACTION))]
    confirm = QueueMessage("m-confirm", json.dumps({"type": "confirm", "reservation_id": "r-0"}))

    result = run([*first_part, confirm, message(500)], store, publisher)

    assert result.failed_message_ids == [m.message_id for m in first_part] + ["m-confirm"]
    assert result.handed_back["m-confirm"] == "its reserve or hold message is being retried"
    assert outcomes_by_message(publisher) == {"m-500": Outcome.CONFIRMED}


def test_a_part_that_raises_waits_for_the_publications_under_way_then_raises(publisher) -> None:
    store = InMemoryInventoryStore()
    store.add_event("e-1", capacity=1000)
    waited: list[int] = []
    start = publisher.publish_soon

    def publish_soon(outcomes, **kwargs):  # type: ignore[no-untyped-def]
        return _Waited(start(outcomes, **kwargs), waited, len(outcomes))

    publisher.publish_soon = publish_soon  # type: ignore[method-assign]
    take = store.take

    def take_then_fail(*args, **kwargs):  # type: ignore[no-untyped-def]
        if store.transactions >= 1:
            raise RuntimeError("a bug in the second part")
        return take(*args, **kwargs)

    store.take = take_then_fail  # type: ignore[method-assign]

    with pytest.raises(RuntimeError, match="second part"):
        run([message(n) for n in range(MAX_RESERVATIONS_PER_TRANSACTION + 1)], store, publisher)
    assert waited == [MAX_RESERVATIONS_PER_TRANSACTION]  # the first part's publication, waited for


@dataclasses.dataclass
class _Waited:
    """A publication under way that notes, when waited for, how many answers it carried."""

    started: Any
    waited: list[int]
    answers: int

    def wait(self) -> list[Any]:
        self.waited.append(self.answers)
        return self.started.wait()


def test_a_batch_of_at_most_one_transaction_is_published_in_one_call(store, publisher) -> None:
    run([message(n) for n in range(MAX_RESERVATIONS_PER_TRANSACTION)], store, publisher)
    assert publisher.calls_soon == 0


def test_an_empty_batch_publishes_nothing(store, publisher) -> None:
    result = run([], store, publisher)
    assert (result.published, result.failed_message_ids, store.transactions) == ([], [], 0)


# --- after a sell-out, rejections cost a read, not a write to the hot item -----------------------


def run_with_hints(messages, store, publisher, hints):
    return reserve_seats(
        messages, store=store, publisher=publisher, settings=SETTINGS, clock=FakeClock(), hints=hints
    )


def test_once_sold_out_later_batches_read_instead_of_writing_the_hot_item(store, publisher) -> None:
    hints = InventoryHints()
    run_with_hints(
        [message(n, quantity=5) for n in range(3)], store, publisher, hints
    )  # sells out, learns 0 left
    writes_before, transactions_before = store.inventory_writes, store.transactions

    result = run_with_hints([message(n, quantity=1) for n in range(10, 20)], store, publisher, hints)

    assert store.inventory_writes == writes_before  # the hot item was not written
    assert store.reads == 2  # the new container's first read, then the sold-out class's
    assert store.transactions == transactions_before + 1  # one transaction: the ten rejection records
    assert [o.outcome for o in result.published] == [Outcome.SOLD_OUT] * 10
    assert all(o.remaining == 0 for o in result.published)


def test_a_stale_hint_never_refuses_seats_that_are_there(store, publisher) -> None:
    hints = InventoryHints()
    hints.learn(SeatKey("e-1", "GA"), 0)  # stale: the class actually has 10 seats

    result = run_with_hints([message(1, quantity=4)], store, publisher, hints)

    assert [o.outcome for o in result.published] == [Outcome.CONFIRMED]
    assert result.published[0].remaining == 6
    assert store.inventory[SeatKey("e-1", "GA")].sold == 4


def test_a_known_missing_event_is_answered_from_a_read(publisher) -> None:
    store = InMemoryInventoryStore()
    hints = InventoryHints()
    run_with_hints([message(1, event_id="nope")], store, publisher, hints)
    store.add_event("nope", capacity=5)  # created after the first answer

    result = run_with_hints([message(2, event_id="nope")], store, publisher, hints)

    assert store.reads == 2  # the first batch's (a class never seen), then the missing event's
    assert [o.outcome for o in result.published] == [Outcome.CONFIRMED]


def test_a_plentiful_class_is_read_once_by_a_container_then_written_optimistically(store, publisher) -> None:
    hints = InventoryHints()
    for n in range(5):
        run_with_hints([message(n)], store, publisher, hints)
    assert (store.reads, store.transactions) == (1, 5)


def test_a_new_container_answers_a_sold_out_class_without_writing_its_item(store, publisher) -> None:
    key = SeatKey("e-1", "GA")
    store.inventory[key] = dataclasses.replace(
        store.inventory[key], available=0, sold=store.inventory[key].capacity
    )

    result = run_with_hints([message(n) for n in range(5)], store, publisher, InventoryHints())

    assert [o.outcome for o in result.published] == [Outcome.SOLD_OUT] * 5
    assert (store.reads, store.inventory_writes) == (1, 0)


# --- the last seats: containers that compete for them take shares, not whole batches ----------


def commits_of(store: InMemoryInventoryStore) -> list[tuple[int, int, bool]]:
    """Records every transaction the store is asked for: (records, seats taken, refused)."""
    seen: list[tuple[int, int, bool]] = []

    def commit_outcomes(write: Any, refused: WriteRefused | None) -> None:
        seen.append((len(write.outcomes), write.seats_taken, refused is not None))

    spy_writes(store, commit_outcomes)
    return seen


def warm_container(
    publisher: RecordingPublisher, *, capacity: int, batches: int
) -> tuple[InMemoryInventoryStore, SeatKey, InventoryHints]:
    """A class of `capacity` seats, and the hints of a container that answered `batches`
    batches of ten one-seat requests for it."""
    store = InMemoryInventoryStore()
    store.add_event("e-1", capacity=capacity)
    hints = InventoryHints()
    for batch in range(batches):
        run_with_hints([message(n) for n in range(10 * batch, 10 * batch + 10)], store, publisher, hints)
    return store, SeatKey("e-1", "GA"), hints


def test_a_container_that_knows_enough_seats_writes_without_reading_first(publisher) -> None:
    store, key, hints = warm_container(publisher, capacity=100, batches=1)  # read, took 10
    store.change_item(key, available=20, sold=80)  # other containers take 70 meanwhile
    commits = commits_of(store)

    result = run_with_hints([message(n) for n in range(10, 20)], store, publisher, hints)

    # By its own count 90 seats are left: its write goes first, and its guard (20 left) lets it.
    assert commits == [(10, 10, False)]
    assert store.reads == 1
    assert [o.outcome for o in result.published] == [Outcome.CONFIRMED] * 10
    assert store.inventory[key].available == 10


def test_near_the_end_of_the_sale_a_refused_write_is_planned_again_from_the_item_it_hands_back(
    publisher,
) -> None:
    store, key, hints = warm_container(publisher, capacity=30, batches=2)  # read, took 10, took 10
    store.change_item(key, available=5, sold=25)  # another container takes 5
    commits = commits_of(store)

    result = run_with_hints([message(n) for n in range(20, 30)], store, publisher, hints)

    # By its own count 10 seats are left, as many as it wants: the write is refused and hands
    # back the item (5 left), from which the group is planned again without another read.
    assert commits == [(10, 10, True), (10, 5, False)]
    assert store.reads == 1
    outcomes = [o.outcome for o in result.published]
    assert outcomes == [Outcome.CONFIRMED] * 5 + [Outcome.SOLD_OUT] * 5
    assert store.inventory[key].available == 0


def test_a_failed_read_hands_the_group_back(store, publisher) -> None:
    hints = InventoryHints()
    hints.learn(SeatKey("e-1", "GA"), 0)
    store.fail_next = [RetryableError("ThrottlingException")]

    result = run_with_hints([message(1)], store, publisher, hints)

    assert result.failed_message_ids == ["m-1"]
    assert publisher.published == []


def test_a_message_id_twice_in_one_batch_is_answered_once_with_its_first_answer(store, publisher) -> None:
    # Given the same SQS message twice in one batch (an at-least-once redelivery)
    result = run([message(1, quantity=2), message(1, quantity=2)], store, publisher)

    # Then it takes its seats once and gets one, original answer
    assert [(o.message_id, o.outcome, o.duplicate) for o in publisher.published] == [
        ("m-1", Outcome.CONFIRMED, False)
    ]
    assert result.failed_message_ids == []
    assert store.inventory[SeatKey("e-1", "GA")].sold == 2


def test_a_sharded_class_never_seen_is_read_as_shard_0_and_its_limit_assumed_from_it(publisher) -> None:
    store = InMemoryInventoryStore()
    store.add_event("e-1", capacity=40, shards=4, max_per_customer=5)
    commits = commits_of(store)
    whole_reads: list[bool] = []
    read = store.read_inventory

    def read_inventory(key, *, whole=True):  # type: ignore[no-untyped-def]
        whole_reads.append(whole)
        return read(key, whole=whole)

    store.read_inventory = read_inventory  # type: ignore[method-assign]

    result = run_with_hints([message(n) for n in range(5)], store, publisher, InventoryHints())

    # One GetItem of shard 0 (rules, items), one survey for an item, one transaction on it: no
    # read of every item, and no write refused for assuming no per-customer limit.
    assert whole_reads == [False]
    assert store.surveys == 1
    assert commits == [(5, 5, False)]
    assert [o.outcome for o in result.published] == [Outcome.CONFIRMED] * 5
    assert store.inventory[SeatKey("e-1", "GA")].available == 35


def test_a_closed_sharded_class_never_seen_is_answered_from_one_whole_read(publisher) -> None:
    store = InMemoryInventoryStore()
    store.add_event("e-1", capacity=40, shards=4, sale_status=SaleStatus.CLOSED)
    commits = commits_of(store)

    result = run_with_hints([message(n) for n in range(3)], store, publisher, InventoryHints())

    # Shard 0 shows the sale closed: the class is read whole at once (no survey, no refused take).
    assert store.reads == 2 and store.surveys == 0
    assert commits == [(3, 0, False)]
    assert [o.outcome for o in result.published] == [Outcome.SALE_CLOSED] * 3
