"""Acceptance on DynamoDB Local behind the contention layer, for a mapped seat class
(docs/guides/seat-maps.md) in a capacity pool and requiring admission tokens (docs/guides/pools.md,
docs/guides/admission.md): a mapped class and a counted class racing for the last seats of the pool
they share sell it exactly (the pool as one item, and over 4 items with the counted class over 4
shards, seats moved into the item the mapped class writes); one admission token sent by many
concurrent requests on a mapped class buys exactly once. Every request is its own container,
sent (and redelivered, as SQS would) until answered. DynamoDB Local's transactions are atomic
under concurrency (moto's are not, so no race is judged on moto).
"""

from __future__ import annotations

import json
import uuid
from collections import Counter

import pytest

from seat_inventory.logic.reserve_seats import QueueMessage
from seat_inventory.logic.seat_map import load_json
from seat_inventory.models import Outcome, SeatKey
from seat_inventory.settings import Settings
from seat_tools.local.stack import LocalStack
from seat_tools.operator_commands import OperatorTable
from seat_tools.seat_map_commands import SaleRules
from tests.depth import sized
from tests.local.crowd import admission_verifier, race, send_until_answered, token_messages

pytestmark = [pytest.mark.local_stack, pytest.mark.bounded]

POOL_SEATS = sized("SEATS_MAPPED_POOL_SEATS", ci=6, deep=40)
SENDERS = sized("SEATS_MAPPED_POOL_SENDERS", ci=8, deep=48)  # per class
TOKENS = sized("SEATS_MAPPED_ADMISSION_TOKENS", ci=2, deep=10)
TOKEN_SENDERS = sized("SEATS_MAPPED_ADMISSION_SENDERS", ci=6, deep=24)


def _one_seat(event_id: str, seat_class: str, name: str, *, hold_seconds: int | None = None) -> QueueMessage:
    """A reserve of one seat (a hold, with `hold_seconds`), named `name` in its ids."""
    body = {
        "type": "hold" if hold_seconds else "reserve",
        "reservation_id": f"{event_id}-{seat_class}-{name}",
        "event_id": event_id,
        "seat_class": seat_class,
        "quantity": 1,
        "customer_id": f"c-{name}",
        **({"hold_seconds": hold_seconds} if hold_seconds else {}),
    }
    return QueueMessage(f"m-{seat_class}-{name}", json.dumps(body))


def _map(seats: int) -> str:
    """A mapped class STALLS with at least `seats` seats, rows of 10."""
    rows = [{"id": f"R{n + 1}", "seats": 10} for n in range(max(1, -(-seats // 10)))]
    return json.dumps(
        {
            "classes": {"STALLS": {"orphans": "allow"}},
            "sections": [{"id": "A", "class": "STALLS", "rank": 0, "rows": rows}],
        }
    )


@pytest.mark.parametrize(
    ("pool_shards", "class_shards"), [(1, 1), (4, 4)], ids=["one-item-pool", "sharded-pool"]
)
def test_a_mapped_and_a_counted_class_racing_for_a_shared_pool_sell_it_exactly(
    local_stack: LocalStack, pool_shards: int, class_shards: int
) -> None:
    event_id = f"mpool-{uuid.uuid4().hex[:8]}"
    table = OperatorTable(local_stack.client("dynamodb"), local_stack.table_name)
    table.create_pool(event_id, "hall", POOL_SEATS, shards=pool_shards)
    # Each class alone could serve every request: only the pool bounds them.
    table.create_seat_map(event_id, load_json(_map(SENDERS)), SaleRules(pools=("hall",)))
    table.create_seat_class(SeatKey(event_id, "GA"), SENDERS, pools=["hall"], shards=class_shards)
    settings = Settings(table_name=local_stack.table_name, outcomes_topic_arn="unused")
    # One STALLS seat taken before the race (the race's winners may all be GA's; this one cancels below)
    first = send_until_answered(table, settings, _one_seat(event_id, "STALLS", "first"))
    assert first.outcome is Outcome.CONFIRMED and first.seats is not None and len(first.seats) == 1
    messages = [
        _one_seat(event_id, seat_class, str(n), hold_seconds=600 if n % 3 == 0 else None)
        for seat_class in ("STALLS", "GA")
        for n in range(SENDERS)
    ]

    answers = race(local_stack, settings, messages)[0]

    outcomes = Counter(a.outcome for a in answers.values())
    assert outcomes[Outcome.CONFIRMED] + outcomes[Outcome.HELD] == POOL_SEATS - 1, outcomes
    assert outcomes[Outcome.SOLD_OUT] == len(messages) - (POOL_SEATS - 1), outcomes
    assert all(
        a.reason.endswith("left in pool hall") for a in answers.values() if a.outcome is Outcome.SOLD_OUT
    )
    pool = table.get_pool(event_id, "hall")
    assert pool is not None and pool.capacity == POOL_SEATS and pool.available == 0
    for item in pool.shards:
        assert item.available + item.held + item.sold == item.capacity and item.available >= 0
    mapped = [first, *(a for a in answers.values() if a.seat_class == "STALLS" and a.seats)]
    rows = table.read_seat_rows(SeatKey(event_id, "STALLS")).values()
    assert sum(r.held + r.sold for r in rows) == len(mapped)
    assert len({s for a in mapped for s in a.seats or ()}) == len(mapped)  # no seat twice
    [ga] = table.get_event(event_id)
    assert pool.held == ga.held + sum(r.held for r in rows) == outcomes[Outcome.HELD]
    assert pool.sold == ga.sold + sum(r.sold for r in rows) == outcomes[Outcome.CONFIRMED] + 1
    print("mapped winners", len(mapped) - 1, "counted", POOL_SEATS - len(mapped))

    # A mapped reservation cancels: its seat goes back to the pool (item 0) once, however often sent.
    cancel = QueueMessage("m-cancel", json.dumps({"type": "cancel", "reservation_id": first.reservation_id}))
    for _ in range(2):
        send_until_answered(table, settings, cancel)
    after = table.get_pool(event_id, "hall")
    assert after is not None and after.available == 1
    assert after.held + after.sold == POOL_SEATS - 1


def test_one_token_sent_by_many_concurrent_requests_buys_mapped_seats_exactly_once(
    local_stack: LocalStack,
) -> None:
    event_id = f"madm-{uuid.uuid4().hex[:8]}"
    table = OperatorTable(local_stack.client("dynamodb"), local_stack.table_name)
    table.create_seat_map(event_id, load_json(_map(TOKENS * 2)), SaleRules(admission_required=True))
    settings = Settings(table_name=local_stack.table_name, outcomes_topic_arn="unused")
    verifier = admission_verifier()
    messages = token_messages(event_id, TOKENS, TOKEN_SENDERS, seat_class="STALLS")

    answers = race(local_stack, settings, messages, verifier=verifier)[0]

    for t in range(TOKENS):
        mine = [a for mid, a in answers.items() if mid.startswith(f"m-{t}-")]
        winners = [a for a in mine if a.outcome in (Outcome.CONFIRMED, Outcome.HELD)]
        assert len(winners) == 1, Counter(a.outcome for a in mine)
        assert {a.reason for a in mine if a.outcome is Outcome.ADMISSION_REFUSED} == {
            f"admission token replayed: already used by reservation {winners[0].reservation_id}"
        }
    rows = table.read_seat_rows(SeatKey(event_id, "STALLS")).values()
    assert sum(r.held + r.sold for r in rows) == TOKENS

    # Every request redelivered once more: the same answers, as duplicates; no seat moves.
    again = {m.message_id: send_until_answered(table, settings, m, verifier) for m in messages}
    assert all(a.duplicate for a in again.values())
    assert {m: (a.outcome, a.reason) for m, a in again.items()} == {
        m: (a.outcome, a.reason) for m, a in answers.items()
    }
    rows = table.read_seat_rows(SeatKey(event_id, "STALLS")).values()
    assert sum(r.held + r.sold for r in rows) == TOKENS


def test_orders_of_a_mapped_and_a_counted_line_racing_for_a_shared_pool_sell_it_exactly(
    local_stack: LocalStack,
) -> None:
    # Every order takes one STALLS seat (mapped) and one GA seat (counted) from the hall: with an
    # even number of seats in it, exactly half as many orders win, all or nothing each.
    seats = POOL_SEATS - POOL_SEATS % 2
    event_id = f"mord-{uuid.uuid4().hex[:8]}"
    table = OperatorTable(local_stack.client("dynamodb"), local_stack.table_name)
    table.create_pool(event_id, "hall", seats)
    table.create_seat_map(event_id, load_json(_map(SENDERS)), SaleRules(pools=("hall",)))
    table.create_seat_class(SeatKey(event_id, "GA"), SENDERS, pools=["hall"])
    settings = Settings(table_name=local_stack.table_name, outcomes_topic_arn="unused")
    lines = [{"seat_class": "STALLS", "quantity": 1}, {"seat_class": "GA", "quantity": 1}]
    messages = [
        QueueMessage(
            f"m-{n}",
            json.dumps(
                {
                    "reservation_id": f"{event_id}-o{n}",
                    "event_id": event_id,
                    "customer_id": f"c-{n}",
                    "lines": lines,
                }
            ),
        )
        for n in range(SENDERS)
    ]

    answers = race(local_stack, settings, messages)[0]

    outcomes = Counter(a.outcome for a in answers.values())
    assert outcomes[Outcome.CONFIRMED] == seats // 2, outcomes
    assert outcomes[Outcome.SOLD_OUT] == SENDERS - seats // 2, outcomes
    pool = table.get_pool(event_id, "hall")
    assert pool is not None and (pool.available, pool.sold) == (0, seats)
    rows = table.read_seat_rows(SeatKey(event_id, "STALLS")).values()
    [ga] = table.get_event(event_id)
    assert sum(r.sold for r in rows) == ga.sold == seats // 2
