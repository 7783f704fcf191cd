"""The adaptive write window (`logic.write_window`): AIMD on the reservations per transaction, and the
back-off a throttled write waits, alone and inside the planner."""

from __future__ import annotations

import json
import math

from seat_inventory.logic.inventory_hints import InventoryHints
from seat_inventory.logic.reserve_seats import QueueMessage, reserve_seats
from seat_inventory.logic.retry_deadline import CONFLICT_BACKOFF_CAP_SECONDS, CONFLICT_BACKOFF_SECONDS
from seat_inventory.logic.write_window import (
    INCREASE_RECORDS,
    MAX_RECORDS,
    MIN_RECORDS,
    THROTTLED_BACK_OFF_STEP,
    AdaptiveWriteLimit,
    back_off_step,
)
from seat_inventory.models import Outcome, SeatKey, Throttled, TransactionConflict
from seat_inventory.settings import Settings
from tests.fakes import FakeClock, InMemoryInventoryStore, RecordingPublisher

SETTINGS = Settings(table_name="t", outcomes_topic_arn="arn:aws:sns:us-east-1:1:t")


def test_the_window_starts_at_a_full_transaction_halves_on_throttling_and_stops_at_its_floor() -> None:
    limit = AdaptiveWriteLimit()
    assert limit.records == MAX_RECORDS == 99

    limit.throttled()
    assert limit.records == 49
    limit.throttled()
    assert limit.records == 24
    for _ in range(10):
        limit.throttled()
    assert limit.records == MIN_RECORDS
    assert limit.throttles == 12


def test_the_window_grows_by_a_step_per_admitted_write_up_to_a_full_transaction() -> None:
    limit = AdaptiveWriteLimit(records=MIN_RECORDS)

    limit.admitted()
    assert limit.records == MIN_RECORDS + INCREASE_RECORDS
    limit.admitted()
    assert limit.records == MIN_RECORDS + 2 * INCREASE_RECORDS
    for _ in range(50):
        limit.admitted()
    assert limit.records == MAX_RECORDS
    assert limit.admissions == 52

    # Additive increase, multiplicative decrease: one throttle undoes several admissions.
    limit.throttled()
    assert limit.records == MAX_RECORDS // 2


def test_a_throttled_write_waits_the_capped_back_off_however_often_it_was_refused() -> None:
    # The cap of ConflictDeadline.back_off: 0.02 s x 2^step reaches 0.5 s at this step.
    assert CONFLICT_BACKOFF_SECONDS * 2**THROTTLED_BACK_OFF_STEP >= CONFLICT_BACKOFF_CAP_SECONDS
    assert CONFLICT_BACKOFF_SECONDS * 2 ** (THROTTLED_BACK_OFF_STEP - 1) < CONFLICT_BACKOFF_CAP_SECONDS
    throttled = Throttled("ThrottlingError")
    assert [back_off_step(throttled, n) for n in (1, 2, 9)] == [THROTTLED_BACK_OFF_STEP] * 3
    conflict = TransactionConflict("TransactionConflict")
    assert [back_off_step(conflict, n) for n in (1, 2, 9)] == [1, 2, 9]


def _messages(count: int, start: int = 0) -> list[QueueMessage]:
    return [
        QueueMessage(
            f"m-{n}",
            json.dumps(
                {"reservation_id": f"r-{n}", "event_id": "e-1", "quantity": 1, "customer_id": f"c-{n}"}
            ),
        )
        for n in range(start, start + count)
    ]


def test_after_a_throttled_transaction_the_planner_writes_the_group_in_halves() -> None:
    store = InMemoryInventoryStore()
    store.add_event("e-1", capacity=500)
    store.fail_next_commit = [Throttled("ThrottlingError")]
    publisher = RecordingPublisher()
    hints = InventoryHints()
    clock = FakeClock()

    result = reserve_seats(
        _messages(99), store=store, publisher=publisher, settings=SETTINGS, clock=clock, hints=hints
    )

    assert result.failed_message_ids == []
    assert [o.outcome for o in publisher.published] == [Outcome.CONFIRMED] * 99
    # One throttled transaction of 99, then 49 (the halved window) and the 50 left (the window
    # grew after the first commit); the back-off after the throttle was at most the cap (0.5 s).
    assert store.transactions == 3
    assert store.inventory[SeatKey("e-1", "GA")].sold == 99
    assert hints.write_limit.throttles == 1 and hints.write_limit.admissions == 2
    assert hints.write_limit.records == 49 + 2 * INCREASE_RECORDS
    assert len(clock.slept) == 1 and clock.slept[0] <= CONFLICT_BACKOFF_CAP_SECONDS

    # The window lives with the container: its next batch starts from it; throttled twice, it
    # writes the 21 requests in transactions of a quarter of it.
    quarter = (49 + 2 * INCREASE_RECORDS) // 2 // 2
    store.fail_next_commit = [Throttled("ThrottlingError")] * 2
    reserve_seats(
        _messages(21, start=99), store=store, publisher=publisher, settings=SETTINGS, clock=clock, hints=hints
    )
    assert store.transactions == 3 + 2 + math.ceil(21 / quarter)
    assert store.inventory[SeatKey("e-1", "GA")].sold == 120
    assert hints.write_limit.throttles == 3
