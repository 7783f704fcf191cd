"""Acceptance on DynamoDB Local behind the contention layer: one admission token sent by many
concurrent requests, each with its own reservation id and its own container, buys exactly once
(docs/guides/admission.md). The losers are refused for good (replayed, naming the winner), and every
redelivery republishes the same answer. DynamoDB Local's transactions are atomic under
concurrency (moto's are not, so no race is judged on moto).
"""

from __future__ import annotations

import uuid
from collections import Counter

import pytest

from seat_inventory.dal.items import admission_key
from seat_inventory.models import Outcome, SeatKey
from seat_inventory.settings import Settings
from seat_tools.local.stack import LocalStack
from seat_tools.operator_commands import OperatorTable
from tests.depth import sized
from tests.local.crowd import admission_verifier, race, send_until_answered, token_messages

pytestmark = [pytest.mark.local_stack, pytest.mark.bounded]

TOKENS = sized("SEATS_ADMISSION_TOKENS", ci=3, deep=20)
SENDERS = sized("SEATS_ADMISSION_SENDERS", ci=8, deep=32)


def test_one_token_sent_by_many_concurrent_requests_buys_exactly_once(local_stack: LocalStack) -> None:
    event_id = f"adm-{uuid.uuid4().hex[:8]}"
    key = SeatKey(event_id, "GA")
    client = local_stack.client("dynamodb")
    table = OperatorTable(client, local_stack.table_name)
    table.create_seat_class(key, TOKENS * 2, admission_required=True)
    settings = Settings(table_name=local_stack.table_name, outcomes_topic_arn="unused")
    verifier = admission_verifier()
    messages = token_messages(event_id, TOKENS, SENDERS)
    answers, _ = race(local_stack, settings, messages, verifier=verifier)

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
    again = {m.message_id: send_until_answered(table, settings, m, verifier) for m in messages}
    assert all(a.duplicate for a in again.values())
    assert {m: (a.outcome, a.reason) for m, a in again.items()} == {
        m: (a.outcome, a.reason) for m, a in answers.items()
    }
    after = table.get_event(event_id)[0]
    assert (after.available, after.held, after.sold) == (view.available, view.held, view.sold)
