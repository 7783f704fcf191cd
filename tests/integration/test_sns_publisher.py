"""The SNS publisher on moto: one message per outcome, PublishBatch in tens, failures returned."""

from __future__ import annotations

import json
from collections import Counter

from seat_inventory.models import Outcome, ReservationOutcome
from seat_inventory.publishing.sns_publisher import SnsOutcomePublisher
from tests.integration.conftest import Stack


def outcome(n: int, kind: Outcome = Outcome.CONFIRMED, event_id: str | None = "e-1") -> ReservationOutcome:
    return ReservationOutcome(
        reservation_id=f"r-{n}",
        outcome=kind,
        reason="because",
        event_id=event_id,
        seat_class="GA" if event_id else None,
        quantity=1,
        customer_id="c-1",
        remaining=5,
        message_id=f"m-{n}",
    )


def test_each_outcome_is_one_message_with_the_documented_body(stack: Stack) -> None:
    publisher = SnsOutcomePublisher(stack.faults.session.client("sns"), stack.topic_arn)

    failed = publisher.publish([outcome(1), outcome(2, Outcome.SOLD_OUT)])

    assert failed == []
    assert stack.outcomes() == [
        {
            "reservation_id": "r-1",
            "event_id": "e-1",
            "seat_class": "GA",
            "quantity": 1,
            "customer_id": "c-1",
            "outcome": "CONFIRMED",
            "remaining": 5,
            "reason": "because",
            "duplicate": False,
            "message_id": "m-1",
            "type": "reserve",
            "expires_at": None,
            "expires_at_epoch": None,
        },
        {
            "reservation_id": "r-2",
            "event_id": "e-1",
            "seat_class": "GA",
            "quantity": 1,
            "customer_id": "c-1",
            "outcome": "SOLD_OUT",
            "remaining": 5,
            "reason": "because",
            "duplicate": False,
            "message_id": "m-2",
            "type": "reserve",
            "expires_at": None,
            "expires_at_epoch": None,
        },
    ]


def test_outcomes_go_out_ten_per_call(stack: Stack) -> None:
    publisher = SnsOutcomePublisher(stack.faults.session.client("sns"), stack.topic_arn)

    publisher.publish([outcome(n) for n in range(25)])

    assert Counter(stack.faults.calls)["PublishBatch"] == 3
    assert len(stack.outcomes()) == 25


def test_an_outcome_without_event_id_still_publishes(stack: Stack) -> None:
    publisher = SnsOutcomePublisher(stack.faults.session.client("sns"), stack.topic_arn)
    assert publisher.publish([outcome(1, Outcome.INVALID, event_id=None)]) == []
    [document] = stack.outcomes()
    assert (document["outcome"], document["event_id"]) == ("INVALID", None)


def test_a_failed_call_returns_exactly_its_outcomes(stack: Stack) -> None:
    # The publisher makes its calls concurrently: fail the call that carries the first ten.
    stack.faults.fail(
        "sns.PublishBatch",
        "InternalError",
        when=lambda request: '"reservation_id":"r-0"' in str(request.get("body")),
    )
    publisher = SnsOutcomePublisher(stack.faults.session.client("sns"), stack.topic_arn)

    failed = publisher.publish([outcome(n) for n in range(12)])

    assert [o.reservation_id for o in failed] == [f"r-{n}" for n in range(10)]
    assert [d["reservation_id"] for d in stack.outcomes()] == ["r-10", "r-11"]


def test_entries_refused_inside_a_batch_are_returned(stack: Stack) -> None:
    def partially_failed(params, **_):
        body = params["body"]
        assert "PublishBatchRequestEntries" in json.dumps(body) or body
        return (
            type("R", (), {"status_code": 200, "headers": {}, "content": b""})(),
            {
                "Successful": [{"Id": "0", "MessageId": "x"}],
                "Failed": [{"Id": "1", "Code": "KMSThrottling", "SenderFault": False}],
            },
        )

    stack.faults.session.events.register("before-call.sns.PublishBatch", partially_failed)
    publisher = SnsOutcomePublisher(stack.faults.session.client("sns"), stack.topic_arn)

    failed = publisher.publish([outcome(0), outcome(1)])

    assert [o.reservation_id for o in failed] == ["r-1"]
