"""Mapped seat classes on the in-memory store (docs/guides/seat-maps.md): chosen seats and best available
through reserve and hold, SEATS_TAKEN, ORPHAN_SEAT, duplicates, limits, the sale window,
confirm, cancel and expiry freeing exactly a reservation's seats, counted classes beside them."""

from __future__ import annotations

import json
from typing import Any

import pytest

from seat_inventory.logic.inventory_hints import InventoryHints
from seat_inventory.logic.reserve_seats import QueueMessage, reserve_seats
from seat_inventory.logic.seat_map import load_json
from seat_inventory.logic.sweep_holds import release_expired_holds
from seat_inventory.models import (
    Outcome,
    ReservationOutcome,
    SaleStatus,
    SeatKey,
    SeatState,
    TransactionConflict,
)
from seat_inventory.settings import Settings
from tests.fakes import FakeClock, InMemoryInventoryStore, RecordingPublisher

SETTINGS = Settings(
    table_name="t", outcomes_topic_arn="arn:aws:sns:us-east-1:1:t", rejection_record_ttl_days=15
)
KEY = SeatKey("e-1", "STALLS")
MAP = {
    "classes": {"STALLS": {"orphans": "refuse"}, "BALCONY": {"orphans": "allow"}},
    "sections": [
        {
            "id": "A",
            "class": "STALLS",
            "rank": 0,
            "rows": [
                {"id": "R1", "seats": 6, "flags": {"wheelchair": [1], "companion": [2]}},
                {"id": "R2", "seats": 6},
            ],
        },
        {"id": "B", "class": "BALCONY", "rank": 0, "rows": [{"id": "R1", "seats": 4}]},
    ],
}


def body(n: int, **fields: Any) -> QueueMessage:
    doc = {"reservation_id": f"r-{n}", "event_id": "e-1", "seat_class": "STALLS", "customer_id": f"c-{n}"}
    doc.update(fields)
    return QueueMessage(f"m-{n}", json.dumps(doc))


class Harness:
    def __init__(self, max_per_customer: int | None = None) -> None:
        self.store = InMemoryInventoryStore()
        self.store.add_seat_map("e-1", load_json(json.dumps(MAP)), max_per_customer=max_per_customer)
        self.store.add_event("e-1", capacity=5, seat_class="GA")
        self.publisher = RecordingPublisher()
        self.clock = FakeClock()
        self.hints = InventoryHints()

    def send(self, *messages: QueueMessage, hints: InventoryHints | None = None) -> list[ReservationOutcome]:
        before = len(self.publisher.published)
        result = reserve_seats(
            list(messages),
            store=self.store,
            publisher=self.publisher,
            settings=SETTINGS,
            clock=self.clock,
            hints=hints or self.hints,
        )
        assert result.failed_message_ids == []
        return self.publisher.published[before:]

    def states(self, key: SeatKey = KEY) -> dict[str, SeatState]:
        out = {}
        for row in self.store.seat_rows[key].values():
            prefix = row.row_id.split("#")[0]
            out.update({f"{prefix}-{p}": s for p, s in row.states.items()})
        return out

    def counts(self, key: SeatKey = KEY) -> tuple[int, int, int]:
        rows = self.store.seat_rows[key].values()
        return sum(r.available for r in rows), sum(r.held for r in rows), sum(r.sold for r in rows)


@pytest.fixture
def h() -> Harness:
    return Harness()


def test_chosen_seats_are_sold_and_listed(h: Harness) -> None:
    [answer] = h.send(body(1, seats=["A-R2-3", "A-R2-4"]))
    assert answer.outcome is Outcome.CONFIRMED
    assert answer.seats == ("A-R2-3", "A-R2-4")
    assert h.states() == {"A-R2-3": SeatState.SOLD, "A-R2-4": SeatState.SOLD}
    assert h.store.records["r-1"].seats == ("A-R2-3", "A-R2-4")
    assert h.counts() == (10, 0, 2)  # 12 seats, 2 sold


def test_chosen_seats_not_free_are_named_and_nothing_is_taken(h: Harness) -> None:
    h.send(body(1, seats=["A-R2-3", "A-R2-4"]))
    [answer] = h.send(body(2, seats=["A-R2-5", "A-R2-6", "A-R2-4"]))
    assert answer.outcome is Outcome.SEATS_TAKEN
    assert answer.seats == ("A-R2-4",)
    assert "A-R2-4" in answer.reason
    assert set(h.states()) == {"A-R2-3", "A-R2-4"}
    assert h.store.records["r-2"].outcome is Outcome.SEATS_TAKEN  # recorded: a redelivery gets it again


def test_a_choice_stranding_a_seat_is_refused_when_the_class_refuses_orphans(h: Harness) -> None:
    [answer] = h.send(body(1, seats=["A-R2-2", "A-R2-3"]))
    assert answer.outcome is Outcome.ORPHAN_SEAT
    assert answer.seats == ("A-R2-1",)
    balcony = [body(2, seat_class="BALCONY", seats=["B-R1-2", "B-R1-3"])]
    [allowed] = h.send(*balcony)
    assert allowed.outcome is Outcome.CONFIRMED


def test_best_available_takes_the_best_block_and_skips_accessible_seats(h: Harness) -> None:
    [answer] = h.send(body(1, quantity=2))
    # R1 is better, but its 1-2 are wheelchair/companion: 3-6 is a run of 4; 4-5 would strand
    # 3 and 6, so the block takes 3-4 or 5-6 (the first of a tie).
    assert answer.seats == ("A-R1-3", "A-R1-4")
    [accessible] = h.send(body(2, quantity=2, accessible=True))
    assert accessible.seats == ("A-R1-1", "A-R1-2")


def test_a_redelivered_request_is_answered_again_and_takes_nothing(h: Harness) -> None:
    [first] = h.send(body(1, quantity=3))
    [again] = h.send(body(1, quantity=3))
    assert again.duplicate and again.seats == first.seats
    assert h.counts() == (9, 0, 3)
    chosen = body(2, seats=["A-R2-1", "A-R2-2"])
    h.send(chosen)
    [repeat] = h.send(chosen)
    assert repeat.duplicate and repeat.outcome is Outcome.CONFIRMED
    assert h.counts() == (7, 0, 5)


def test_no_block_is_sold_out_unless_split(h: Harness) -> None:
    h.send(body(1, seats=["A-R2-3", "A-R2-4"]), body(2, seats=["A-R1-5", "A-R1-6"]))
    # Free: R1 1-4 (1-2 accessible), R2 1-2 and 5-6: no 3 together for a request without accessible.
    [sold_out] = h.send(body(3, quantity=3))
    assert sold_out.outcome is Outcome.SOLD_OUT
    [split] = h.send(body(4, quantity=3, split=True))
    assert split.outcome is Outcome.CONFIRMED and len(split.seats or ()) == 3


def test_refusals_whose_records_meet_a_transient_fault_are_handed_back_then_answered(h: Harness) -> None:
    h.send(body(1, seats=["A-R2-3", "A-R2-4"]), body(2, seats=["A-R1-5", "A-R1-6"]))
    # Two requests no block fits, taken together; their records' puts meet a transaction (a
    # duplicate's, writing the same record): both handed back, nothing answered, nothing lost.
    h.store.fail_next_commit.append(TransactionConflict("TransactionConflictException"))
    result = reserve_seats(
        [body(3, quantity=3), body(4, quantity=3)],
        store=h.store,
        publisher=h.publisher,
        settings=SETTINGS,
        clock=h.clock,
        hints=h.hints,
    )
    assert sorted(result.failed_message_ids) == ["m-3", "m-4"] and result.published == []
    again = h.send(body(3, quantity=3), body(4, quantity=3))
    assert [o.outcome for o in again] == [Outcome.SOLD_OUT] * 2


def test_hold_then_confirm_then_cancel_moves_exactly_its_seats(h: Harness) -> None:
    [held] = h.send(body(1, type="hold", seats=["A-R2-5", "A-R2-6"]))
    assert held.outcome is Outcome.HELD
    assert h.states() == {"A-R2-5": SeatState.HELD, "A-R2-6": SeatState.HELD}
    h.send(body(2, seats=["A-R2-1", "A-R2-2"]))
    [confirmed] = h.send(QueueMessage("m-3", json.dumps({"type": "confirm", "reservation_id": "r-1"})))
    assert confirmed.outcome is Outcome.CONFIRMED and confirmed.seats == ("A-R2-5", "A-R2-6")
    assert h.states()["A-R2-5"] is SeatState.SOLD
    [cancelled] = h.send(QueueMessage("m-4", json.dumps({"type": "cancel", "reservation_id": "r-1"})))
    assert cancelled.outcome is Outcome.CANCELLED
    assert h.states() == {"A-R2-1": SeatState.SOLD, "A-R2-2": SeatState.SOLD}
    [again] = h.send(QueueMessage("m-5", json.dumps({"type": "cancel", "reservation_id": "r-1"})))
    assert again.duplicate
    assert h.counts() == (10, 0, 2)


def test_an_expired_hold_frees_exactly_its_seats(h: Harness) -> None:
    h.send(body(1, type="hold", hold_seconds=60, seats=["A-R2-3", "A-R2-4"]))
    h.send(body(2, seats=["A-R2-1", "A-R2-2"]))
    h.clock.time += 61
    result = release_expired_holds(h.store, h.publisher, h.clock, limit=10)
    assert [o.seats for o in result.released] == [("A-R2-3", "A-R2-4")]
    assert h.states() == {"A-R2-1": SeatState.SOLD, "A-R2-2": SeatState.SOLD}
    assert h.counts() == (10, 0, 2)


def test_per_customer_limit() -> None:
    h = Harness(max_per_customer=3)
    [ok] = h.send(body(1, quantity=2))
    [refused] = h.send(
        QueueMessage("m-9", json.dumps({**json.loads(body(2, quantity=2).body), "customer_id": "c-1"}))
    )
    assert ok.outcome is Outcome.CONFIRMED
    assert refused.outcome is Outcome.LIMIT_EXCEEDED
    assert h.counts() == (10, 0, 2)


def test_a_closed_sale_is_refused_on_the_rows(h: Harness) -> None:
    h.store.change_rows(KEY, sale_status=SaleStatus.CLOSED)
    [answer] = h.send(body(1, quantity=2))
    assert answer.outcome is Outcome.SALE_CLOSED
    assert h.counts() == (12, 0, 0)


def test_a_stale_view_costs_a_retry_never_a_seat(h: Harness) -> None:
    other = InventoryHints()
    [mine] = h.send(body(1, quantity=2))
    [theirs] = h.send(body(2, quantity=2), hints=other)  # another container, its own view
    assert not set(mine.seats or ()) & set(theirs.seats or ())
    # This container's view still shows the seats the other took: its take is refused, the row
    # learned, and the request placed again.
    commits = h.store.transactions
    [next_one] = h.send(body(3, quantity=2))
    assert h.store.transactions == commits + 2  # refused once, then taken
    assert not set(next_one.seats or ()) & (set(mine.seats or ()) | set(theirs.seats or ()))
    assert h.counts() == (6, 0, 6)


def test_counted_classes_beside_mapped_ones_work_as_before(h: Harness) -> None:
    answers = h.send(
        QueueMessage(
            "m-1",
            json.dumps(
                {
                    "reservation_id": "g-1",
                    "event_id": "e-1",
                    "seat_class": "GA",
                    "quantity": 2,
                    "customer_id": "c",
                }
            ),
        ),
        QueueMessage(
            "m-2",
            json.dumps(
                {
                    "reservation_id": "g-2",
                    "event_id": "e-1",
                    "seat_class": "GA",
                    "seats": ["A-R1-1"],
                    "customer_id": "c",
                }
            ),
        ),
    )
    assert [a.outcome for a in answers] == [Outcome.CONFIRMED, Outcome.INVALID]
    assert "not a mapped seat class" in answers[1].reason
    assert h.store.inventory[SeatKey("e-1", "GA")].available == 3


def test_seats_of_another_class_are_invalid(h: Harness) -> None:
    [answer] = h.send(body(1, seats=["B-R1-1"]))
    assert answer.outcome is Outcome.INVALID and "not seats of this class" in answer.reason
    [special] = h.send(body(2, seats=["A-R1-1"]))
    assert special.outcome is Outcome.INVALID and "accessible" in special.reason


def test_a_counted_class_costs_one_map_lookup_per_container(h: Harness) -> None:
    def counted(n: int) -> QueueMessage:
        doc = {
            "reservation_id": f"g-{n}",
            "event_id": "e-1",
            "seat_class": "GA",
            "quantity": 1,
            "customer_id": "c",
        }
        return QueueMessage(f"gm-{n}", json.dumps(doc))

    before = h.store.map_reads
    for n in range(3):
        h.send(counted(n))
    assert h.store.map_reads == before + 1  # then the class is known as counted


def test_a_map_created_after_a_container_saw_its_event_is_found() -> None:
    h = Harness()
    early = QueueMessage("m-0", json.dumps({**json.loads(body(0, quantity=1).body), "event_id": "e-2"}))
    [unknown] = h.send(early)
    assert unknown.outcome is Outcome.UNKNOWN_EVENT
    h.store.add_seat_map("e-2", load_json(json.dumps(MAP)))
    late = QueueMessage("m-1", json.dumps({**json.loads(body(1, quantity=1).body), "event_id": "e-2"}))
    [sold] = h.send(late)
    assert sold.outcome is Outcome.CONFIRMED and sold.seats


def test_more_seats_than_the_limit_is_limit_exceeded_without_a_take() -> None:
    h = Harness(max_per_customer=2)
    [answer] = h.send(body(1, seats=["A-R2-1", "A-R2-2", "A-R2-3"]))
    assert answer.outcome is Outcome.LIMIT_EXCEEDED and "3 requested" in answer.reason
    assert h.counts() == (12, 0, 0)
