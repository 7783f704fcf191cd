"""Acceptance on DynamoDB Local behind the contention layer: one admission token sent by many
concurrent requests, each with its own reservation id and its own container, buys exactly once
(docs/admission.md). The losers are refused for good (replayed, naming the winner), and every
redelivery republishes the same answer. DynamoDB Local's transactions are atomic under
concurrency (moto's are not, so no race is judged on moto).
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections import Counter

import pytest

from seat_inventory.dal.items import admission_key
from seat_inventory.logic.admission_tokens import TokenVerifier, fixed_keys, issue_token, parse_key_ring
from seat_inventory.logic.admission_tokens import new_key_ring_text as ring_text
from seat_inventory.logic.inventory_hints import InventoryHints
from seat_inventory.logic.reserve_seats import QueueMessage, reserve_seats
from seat_inventory.models import Outcome, ReservationOutcome, SeatKey
from seat_inventory.settings import Settings
from seat_inventory.wiring import SystemClock
from seat_tools.local.stack import LocalStack
from seat_tools.operator_commands import OperatorTable
from tests.depth import sized
from tests.fakes import RecordingPublisher

pytestmark = [pytest.mark.local_stack, pytest.mark.bounded]

TOKENS = sized("SEATS_ADMISSION_TOKENS", ci=3, deep=20)
SENDERS = sized("SEATS_ADMISSION_SENDERS", ci=8, deep=32)
RING = parse_key_ring(ring_text("k1", b"local-test-key-".ljust(32, b"x")))
MAX_ATTEMPTS = 40


def _send_until_answered(
    table: OperatorTable, settings: Settings, message: QueueMessage, verifier: TokenVerifier
) -> ReservationOutcome:
    """One container sending one message, redelivered (as SQS would) until it is answered."""
    hints, clock = InventoryHints(), SystemClock()
    for _ in range(MAX_ATTEMPTS):
        publisher = RecordingPublisher()
        result = reserve_seats(
            [message],
            store=table,
            publisher=publisher,
            settings=settings,
            clock=clock,
            hints=hints,
            admission=verifier,
        )
        if publisher.published:
            return publisher.published[0]
        assert result.failed_message_ids == [message.message_id]
        time.sleep(0.05)
    raise AssertionError(f"{message.message_id} not answered after {MAX_ATTEMPTS} deliveries")


def test_one_token_sent_by_many_concurrent_requests_buys_exactly_once(local_stack: LocalStack) -> None:
    event_id = f"adm-{uuid.uuid4().hex[:8]}"
    key = SeatKey(event_id, "GA")
    client = local_stack.client("dynamodb")
    table = OperatorTable(client, local_stack.table_name)
    table.create_seat_class(key, TOKENS * 2, admission_required=True)
    settings = Settings(table_name=local_stack.table_name, outcomes_topic_arn="unused")
    verifier = TokenVerifier(fixed_keys(RING))
    expires = int(time.time()) + 600
    messages: list[QueueMessage] = []
    for t in range(TOKENS):
        token = issue_token(
            RING, event_id=event_id, customer_id=f"c-{t}", expires_at=expires, token_id=f"{event_id}-t{t}"
        )
        for s in range(SENDERS):
            body = {
                "type": "hold" if s % 2 else "reserve",
                "reservation_id": f"{event_id}-t{t}-r{s}",
                "event_id": event_id,
                "quantity": 1,
                "customer_id": f"c-{t}",
                "admission_token": token,
            }
            messages.append(QueueMessage(f"m-{t}-{s}", json.dumps(body)))
    answers: dict[str, ReservationOutcome] = {}
    errors: list[BaseException] = []
    start = threading.Barrier(len(messages))

    def sender(message: QueueMessage) -> None:
        try:
            start.wait()
            answer = _send_until_answered(
                OperatorTable(local_stack.client("dynamodb"), local_stack.table_name),
                settings,
                message,
                verifier,
            )
            answers[message.message_id] = answer
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=sender, args=(m,)) for m in messages]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert not errors, errors[:3]
    assert len(answers) == len(messages)

    for t in range(TOKENS):
        mine = [a for mid, a in answers.items() if mid.startswith(f"m-{t}-")]
        outcomes = Counter(a.outcome for a in mine)
        winners = [a for a in mine if a.outcome in (Outcome.CONFIRMED, Outcome.HELD)]
        assert len(winners) == 1, outcomes
        winner = winners[0].reservation_id
        assert outcomes[Outcome.ADMISSION_REFUSED] == SENDERS - 1, outcomes
        assert {a.reason for a in mine if a.outcome is Outcome.ADMISSION_REFUSED} == {
            f"admission token replayed: already used by reservation {winner}"
        }
        stored = client.get_item(TableName=local_stack.table_name, Key=admission_key(f"{event_id}-t{t}"))[
            "Item"
        ]
        assert stored["reservation_id"]["S"] == winner

    view = table.get_event(event_id)[0]
    assert view.sold + view.held == TOKENS
    assert view.available == TOKENS

    # Every request redelivered once more: the same answers, as duplicates; no seat moves.
    again = {m.message_id: _send_until_answered(table, settings, m, verifier) for m in messages}
    assert all(a.duplicate for a in again.values())
    assert {m: (a.outcome, a.reason) for m, a in again.items()} == {
        m: (a.outcome, a.reason) for m, a in answers.items()
    }
    after = table.get_event(event_id)[0]
    assert (after.available, after.held, after.sold) == (view.available, view.held, view.sold)
