"""Acceptance on DynamoDB Local behind the contention layer: a waiting list served while seats come
back (cancels), customers join (each join delivered one to three times), offers are accepted, and
two sweepers run their rounds at once, keeps every count (docs/guides/waiting-list.md), on a
counted class and on a mapped one (whose offers hold real seats: no seat is on two live records).

Containers (threads, each with its own client and hints) take batches off a shared at-least-once
queue; two sweepers release holds and serve the list in a loop; an accepter confirms the offers it
finds. At the end, with everything quiet and the list served out: the class's seats add up (held is
exactly the live holds plus the seats the list sets aside), no entry was offered twice or more
seats than came back, no seat is left aside while someone waits, and each customer has one entry.
DynamoDB Local's transactions are atomic under concurrency (moto's are not, so no race is judged on
moto).
"""

from __future__ import annotations

import json
import random
import threading
import time
import uuid
from typing import Any

import pytest

from seat_inventory.logic.inventory_hints import InventoryHints
from seat_inventory.logic.offer_rounds import run_offer_rounds
from seat_inventory.logic.reserve_seats import QueueMessage, reserve_seats
from seat_inventory.logic.seat_map import SeatMap, load_json
from seat_inventory.logic.sweep_holds import release_expired_holds
from seat_inventory.models import Outcome, RequestType, ReservationOutcome, SeatKey, SeatState
from seat_inventory.settings import Settings
from seat_inventory.wiring import SystemClock
from seat_tools.local.stack import LocalStack
from seat_tools.operator_commands import OperatorTable
from seat_tools.seat_map_commands import SaleRules
from tests.depth import sized
from tests.fakes import RecordingPublisher
from tests.local.crowd import Crowd, Delivery

pytestmark = [pytest.mark.local_stack, pytest.mark.bounded]

SEATS = sized("SEATS_WAITLIST_SEATS", ci=12, deep=40)
JOINERS = sized("SEATS_WAITLIST_JOINERS", ci=24, deep=100)
WORKERS = 4


def _body(key: SeatKey, rid: str, customer: str, quantity: int, **more: Any) -> str:
    return json.dumps(
        {
            "reservation_id": rid,
            "event_id": key.event_id,
            "seat_class": key.seat_class,
            "customer_id": customer,
            "quantity": quantity,
            **more,
        }
    )


# The mapped class: SEATS seats in rows of 4 (orphans allowed: every entry of 1 or 2 fits while
# its seats are there).
def _seat_map(seats: int) -> SeatMap:
    rows = [{"id": f"R{n + 1}", "seats": 4} for n in range(seats // 4)]
    doc = {
        "classes": {"ROW": {"orphans": "allow"}},
        "sections": [{"id": "S", "class": "ROW", "rank": 0, "rows": rows}],
    }
    return load_json(json.dumps(doc))


def _create(table: OperatorTable, key: SeatKey) -> None:
    if key.seat_class == "ROW":
        table.create_seat_map(key.event_id, _seat_map(SEATS), SaleRules())
    else:
        table.create_seat_class(key, SEATS, shards=2)


def _seats(table: OperatorTable, key: SeatKey) -> tuple[int, int, int, int]:
    """available, held, sold and set aside for the list, read strongly consistently."""
    if key.seat_class != "ROW":
        item, waiting = table.read_inventory(key), table.read_waitlist(key)
        assert item is not None and waiting is not None
        return item.available, item.held, item.sold, waiting.seats_held
    rows = table.read_seat_rows(key, [f"S-R{n + 1}#0" for n in range(SEATS // 4)]).values()
    for row in rows:
        assert row.available + row.held + row.sold == row.size
        assert row.held == sum(s in (SeatState.HELD, SeatState.LISTED) for s in row.states.values())
        assert row.sold == sum(s is SeatState.SOLD for s in row.states.values())
    listed = sum(s is SeatState.LISTED for row in rows for s in row.states.values())
    return sum(r.available for r in rows), sum(r.held for r in rows), sum(r.sold for r in rows), listed


def _messages(
    key: SeatKey, sold: list[str], rng: random.Random
) -> tuple[list[QueueMessage], dict[str, int], list[str]]:
    """Joins (one customer in four asks twice, with another reservation), each delivered 1-3 times,
    shuffled with cancels of three quarters of the sales; the joins' quantities; the cancelled."""
    messages: list[QueueMessage] = []
    joins: dict[str, int] = {}
    for n in range(JOINERS):
        for attempt in range(2 if n % 4 == 0 else 1):
            rid, quantity = f"{key.event_id}-w-{n}-{attempt}", rng.randint(1, 2)
            joins[rid] = quantity
            message = QueueMessage(f"m-{rid}", _body(key, rid, f"c-{n}", quantity, waitlist=True))
            messages += [message] * rng.randint(1, 3)
    cancelled = sold[: SEATS * 3 // 4]
    messages += [
        QueueMessage(f"m-cancel-{rid}", json.dumps({"type": "cancel", "reservation_id": rid}))
        for rid in cancelled
    ]
    rng.shuffle(messages)
    return messages, joins, cancelled


class _Race:
    """The containers, the sweepers and the accepter, each with its own client."""

    def __init__(self, local_stack: LocalStack, queue: Delivery, rng: random.Random) -> None:
        self.local_stack, self.queue, self.rng = local_stack, queue, rng
        self.settings = Settings(table_name=local_stack.table_name, outcomes_topic_arn="unused")
        self.clock = SystemClock()
        self.lock = threading.Lock()
        self.published: list[ReservationOutcome] = []
        self.offers: list[ReservationOutcome] = []

    def table(self) -> OperatorTable:
        return OperatorTable(self.local_stack.client("dynamodb"), self.local_stack.table_name)

    def send(self, table: OperatorTable, batch: list[QueueMessage], hints: InventoryHints) -> list[str]:
        publisher = RecordingPublisher()
        result = reserve_seats(
            batch,
            store=table,
            publisher=publisher,
            settings=self.settings,
            clock=self.clock,
            hints=hints,
            waitlist=table,
        )
        with self.lock:
            self.published.extend(publisher.published)
        return result.failed_message_ids

    def serve(self) -> None:
        own, hints = self.table(), InventoryHints()
        while (batch := self.queue.take(self.rng.randint(1, 6))) is not None:
            if not batch:
                time.sleep(0.01)
                continue
            try:
                failed = set(self.send(own, batch, hints))
            except BaseException:
                self.queue.done(batch)
                raise
            self.queue.done([m for m in batch if m.message_id in failed])

    def sweep(self) -> None:
        own = self.table()
        release_expired_holds(own, RecordingPublisher(), self.clock, limit=200)
        publisher = RecordingPublisher()
        rounds = run_offer_rounds(own, publisher, self.clock, limit=200)
        assert not rounds.failed, rounds.failed
        with self.lock:
            self.offers.extend(publisher.published)

    def accept(self) -> None:
        with self.lock:
            offered = sorted({o.reservation_id for o in self.offers})[:10]
        confirms = [
            QueueMessage(f"m-ok-{rid}-{time.time()}", json.dumps({"type": "confirm", "reservation_id": rid}))
            for rid in offered
        ]
        if confirms:
            self.send(self.table(), confirms, InventoryHints())


@pytest.mark.parametrize("seat_class", ["GA", "ROW"], ids=["counted", "mapped"])
def test_a_release_racing_joins_acceptances_and_two_sweepers_keeps_every_count(
    local_stack: LocalStack, seat_class: str
) -> None:
    event_id = f"wait-{uuid.uuid4().hex[:8]}"
    key = SeatKey(event_id, seat_class)
    table = OperatorTable(local_stack.client("dynamodb"), local_stack.table_name)
    _create(table, key)
    table.open_waitlist(key, offer_seconds=600)
    rng = random.Random(37)
    sold = [f"{event_id}-sold-{n}" for n in range(SEATS)]
    race = _Race(local_stack, Delivery([]), rng)
    race.send(table, [QueueMessage(f"m-{r}", _body(key, r, f"b-{r}", 1)) for r in sold], InventoryHints())
    assert [o.outcome for o in race.published] == [Outcome.CONFIRMED] * SEATS
    messages, joins, cancelled = _messages(key, sold, rng)
    race.queue.pending = messages
    crowd = Crowd()
    crowd.run(
        [race.serve] * WORKERS, [crowd.repeat(race.sweep, 0.05)] * 2 + [crowd.repeat(race.accept, 0.05)]
    )
    assert crowd.errors == []
    for _ in range(3):  # the list served out, everything quiet
        race.sweep()
    _check(table, key, race, joins, cancelled)


def _check(
    table: OperatorTable, key: SeatKey, race: _Race, joins: dict[str, int], cancelled: list[str]
) -> None:
    # The joins' own answers (the accepter's confirms are answered about the same reservations). A
    # join whose first delivery was handed back after it committed is answered from its record by
    # a redelivery, marked duplicate: WAITLISTED either way.
    waitlisted = {
        o.reservation_id: o.customer_id
        for o in race.published
        if o.request_type is RequestType.RESERVE and o.outcome is Outcome.WAITLISTED
    }
    customers = list(waitlisted.values())
    assert len(customers) == len(set(customers)), "a customer with two entries"
    records = table.read_reservations(sorted(joins))
    offered = {rid for rid, r in records.items() if r.answer.outcome is Outcome.OFFERED}
    assert offered, "no offer was made: the race tested nothing"
    assert offered <= set(waitlisted)
    assert {o.reservation_id for o in race.offers} == offered  # each offer announced
    assert sum(joins[rid] for rid in offered) <= len(cancelled), "more seats offered than came back"
    available, held, sold, set_aside = _seats(table, key)
    waiting = table.read_waitlist(key)
    assert waiting is not None
    assert available + held + sold == SEATS
    holds = sum(r.quantity for r in records.values() if r.status is Outcome.HELD)
    assert held == holds + set_aside
    confirmed = sum(r.quantity for r in records.values() if r.status is Outcome.CONFIRMED)
    assert sold == SEATS - len(cancelled) + confirmed
    if key.seat_class == "ROW":  # each live record's seats its own
        live = [r for r in records.values() if r.status in (Outcome.HELD, Outcome.CONFIRMED)]
        seats = [seat for r in live for seat in r.seats or ()]
        assert len(seats) == len(set(seats)) == sum(r.quantity for r in live), "a seat on two records"
    still_waiting = [rid for rid, r in records.items() if r.status is Outcome.WAITLISTED]
    assert waiting.waiting == len(still_waiting)
    if not still_waiting:
        assert set_aside == 0, "seats kept aside with nobody waiting"
    else:  # seats aside while someone waits: none the head fits, who waits for more
        view = table.waitlist_view(key, head=1)
        assert view is not None
        wanted = view.head[0].quantity
        if key.seat_class != "ROW":
            assert wanted > set_aside
        else:  # no block of `wanted` adjacent seats set aside on one row
            rows = table.read_seat_rows(key, [f"S-R{n + 1}#0" for n in range(SEATS // 4)]).values()
            for row in rows:
                listed = {p for p, s in row.states.items() if s is SeatState.LISTED}
                blocks = [range(p, p + wanted) for p in range(1, row.size - wanted + 2)]
                assert not any(set(block) <= listed for block in blocks), f"{row.row_id} fits the head"
