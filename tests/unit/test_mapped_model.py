"""Model-based test of mapped classes on the in-memory store: random maps, chosen and
best-available reserves and holds, confirms, cancels, expiries, duplicate deliveries and two
containers with their own (stale) views. After every step: no seat in two live reservations,
each seat's state is its records', each row's counts are its states', counters are the records'."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from seat_inventory.logic.inventory_hints import InventoryHints
from seat_inventory.logic.reserve_seats import QueueMessage, reserve_seats
from seat_inventory.logic.seat_map import load_json
from seat_inventory.logic.sweep_holds import release_expired_holds
from seat_inventory.models import Outcome, SeatKey, SeatState, row_item_of
from seat_inventory.settings import Settings
from tests.fakes import FakeClock, InMemoryInventoryStore, RecordingPublisher

SETTINGS = Settings(
    table_name="t", outcomes_topic_arn="arn:aws:sns:us-east-1:1:t", rejection_record_ttl_days=15
)
KEY = SeatKey("e", "A")
LIMIT = 6


def seat_map_doc(rows: list[int], flags: list[dict[str, list[int]]], orphans: str) -> str:
    return json.dumps(
        {
            "classes": {"A": {"orphans": orphans}},
            "sections": [
                {
                    "id": "S",
                    "class": "A",
                    "rows": [
                        {"id": f"R{i}", "seats": n, **({"flags": f} if f else {})}
                        for i, (n, f) in enumerate(zip(rows, flags, strict=True))
                    ],
                }
            ],
        }
    )


@st.composite
def seat_maps(draw: st.DrawFn) -> str:
    rows = draw(st.lists(st.integers(min_value=1, max_value=9), min_size=1, max_size=4))
    flags = []
    for n in rows:
        f: dict[str, list[int]] = {}
        if draw(st.booleans()) and n >= 2:
            f["wheelchair"] = [1]
            f["companion"] = [2]
        if draw(st.booleans()):
            f["blocked"] = [n]
        if "wheelchair" in f and n == 2 and "blocked" in f:
            f.pop("blocked")
        flags.append(f)
    return seat_map_doc(rows, flags, draw(st.sampled_from(["refuse", "allow"])))


def check(store: InMemoryInventoryStore, seat_ids: list[str]) -> None:
    live: Counter[str] = Counter()
    expected: dict[str, SeatState] = {}
    per_customer: Counter[str] = Counter()
    for rid, answer in store.records.items():
        status = store.status[rid]
        if status in (Outcome.HELD, Outcome.CONFIRMED):
            for seat in answer.seats or ():
                live[seat] += 1
                expected[seat] = SeatState.HELD if status is Outcome.HELD else SeatState.SOLD
            if rid in store.counted:
                per_customer[answer.customer_id or ""] += answer.quantity or 0
    assert all(n == 1 for n in live.values()), f"a seat in two live reservations: {live}"
    rows = store.seat_rows[KEY]
    for row in rows.values():
        assert (
            row.available
            + row.held
            + row.sold
            + sum(1 for s in row.states.values() if s is SeatState.BLOCKED)
            == row.size
        )
        assert row.held == sum(1 for s in row.states.values() if s is SeatState.HELD)
        assert row.sold == sum(1 for s in row.states.values() if s is SeatState.SOLD)
    for seat in seat_ids:
        row_id, position = row_item_of(seat)
        state = rows[row_id].states.get(position)
        if state is SeatState.BLOCKED:
            assert seat not in expected
        else:
            assert state == expected.get(seat), f"{seat}: row says {state}, records say {expected.get(seat)}"
    ga = store.inventory[SeatKey("e", "GA")]
    ga_records = [a for rid, a in store.records.items() if a.seat_class == "GA"]
    ga_live = {
        s: sum(a.quantity or 0 for a in ga_records if store.status[a.reservation_id] is s)
        for s in (Outcome.HELD, Outcome.CONFIRMED)
    }
    assert (ga.held, ga.sold) == (ga_live[Outcome.HELD], ga_live[Outcome.CONFIRMED])
    assert ga.available + ga.held + ga.sold == ga.capacity and not any(a.seats for a in ga_records)
    for customer, seats in per_customer.items():
        assert store.counters.get((KEY, customer), 0) == seats
        assert seats <= LIMIT


@settings(max_examples=60, deadline=None)
@given(doc=seat_maps(), data=st.data())
def test_random_histories_keep_seats_and_records_in_step(doc: str, data: st.DataObject) -> None:
    store = InMemoryInventoryStore()
    seat_map = load_json(doc)
    store.add_seat_map("e", seat_map, max_per_customer=LIMIT)
    store.add_event("e", capacity=8, seat_class="GA")  # a counted class beside the mapped one
    seat_ids = sorted(seat_map.classes["A"].seats)
    containers = [InventoryHints(), InventoryHints()]
    publisher = RecordingPublisher()
    clock = FakeClock()
    sent: list[QueueMessage] = []
    reservations: list[str] = []
    answered: Counter[str] = Counter()

    def deliver(messages: list[QueueMessage]) -> None:
        before = len(publisher.published)
        result = reserve_seats(
            messages,
            store=store,
            publisher=publisher,
            settings=SETTINGS,
            clock=clock,
            hints=data.draw(st.sampled_from(containers)),
        )
        assert result.failed_message_ids == []
        for outcome in publisher.published[before:]:
            answered[outcome.message_id or ""] += 1

    for step in range(data.draw(st.integers(min_value=5, max_value=25))):
        action = data.draw(
            st.sampled_from(["chosen", "best", "best", "counted", "confirm", "cancel", "again", "time"])
        )
        doc_: dict[str, Any] = {"event_id": "e", "seat_class": "A", "customer_id": f"c{step % 3}"}
        if action == "counted":
            action = "best"
            doc_["seat_class"] = "GA"
        if action in ("chosen", "best"):
            rid = f"r{step}"
            doc_["reservation_id"] = rid
            if data.draw(st.booleans()):
                doc_["type"] = "hold"
                doc_["hold_seconds"] = 60
            if doc_["seat_class"] == "GA":
                doc_["quantity"] = data.draw(st.integers(min_value=1, max_value=3))
            elif action == "chosen":
                doc_["seats"] = data.draw(
                    st.lists(st.sampled_from(seat_ids), min_size=1, max_size=3, unique=True)
                )
            else:
                doc_["quantity"] = data.draw(st.integers(min_value=1, max_value=4))
                doc_["split"] = data.draw(st.booleans())
            if doc_["seat_class"] == "A":
                doc_["accessible"] = data.draw(st.booleans())
            reservations.append(rid)
            message = QueueMessage(f"m{step}", json.dumps(doc_))
        elif action in ("confirm", "cancel") and reservations:
            rid = data.draw(st.sampled_from(reservations))
            message = QueueMessage(f"m{step}", json.dumps({"type": action, "reservation_id": rid}))
        elif action == "again" and sent:
            message = data.draw(st.sampled_from(sent))  # a redelivery: same message id, same body
            answered[message.message_id] -= 1
        else:
            clock.time += data.draw(st.sampled_from([10, 61]))
            release_expired_holds(store, publisher, clock, limit=100)
            check(store, seat_ids)
            continue
        sent.append(message)
        deliver([message])
        check(store, seat_ids)
    # Every delivery was answered exactly once (a redelivery once more, as a duplicate or afresh).
    assert all(answered[m.message_id] == 1 for m in sent), answered
