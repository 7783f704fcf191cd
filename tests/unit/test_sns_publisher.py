"""The SNS publisher on a stubbed client: a call refused for the publish rate is sent again while the
caller allows it; any other failure is returned at once."""

from __future__ import annotations

import boto3
from botocore.stub import ANY, Stubber

from seat_inventory.models import Outcome, ReservationOutcome
from seat_inventory.publishing.sns_publisher import SnsOutcomePublisher

TOPIC = "arn:aws:sns:us-east-1:123456789012:outcomes"


def outcome(n: int) -> ReservationOutcome:
    return ReservationOutcome(
        f"r-{n}", Outcome.CONFIRMED, "1 seat(s) confirmed", "e", "GA", 1, "c", message_id=f"m-{n}"
    )


def client_and_stub():  # type: ignore[no-untyped-def]
    client = boto3.client("sns", region_name="us-east-1", aws_access_key_id="k", aws_secret_access_key="s")
    return client, Stubber(client)


def expect_throttled(stub: Stubber) -> None:
    stub.add_client_error(
        "publish_batch", service_error_code="Throttled", http_status_code=429, expected_params=None
    )


def expect_accepted(stub: Stubber, count: int) -> None:
    stub.add_response(
        "publish_batch",
        {"Successful": [{"Id": str(i), "MessageId": f"id-{i}"} for i in range(count)], "Failed": []},
        {"TopicArn": TOPIC, "PublishBatchRequestEntries": ANY},
    )


def test_a_throttled_call_is_sent_again_while_the_caller_allows() -> None:
    client, stub = client_and_stub()
    expect_throttled(stub)
    expect_throttled(stub)
    expect_accepted(stub, 3)
    waits: list[int] = []

    def retry(refusals: int) -> bool:
        waits.append(refusals)
        return True

    with stub:
        failed = SnsOutcomePublisher(client, TOPIC).publish(
            [outcome(n) for n in range(3)], retry_throttled=retry
        )

    assert failed == [] and waits == [0, 1]
    stub.assert_no_pending_responses()


def test_throttled_outcomes_are_returned_once_the_caller_stops_waiting_and_without_a_caller() -> None:
    client, stub = client_and_stub()
    expect_throttled(stub)
    expect_throttled(stub)
    outcomes = [outcome(n) for n in range(2)]

    with stub:
        publisher = SnsOutcomePublisher(client, TOPIC)
        assert publisher.publish(outcomes, retry_throttled=lambda refusals: False) == outcomes
        assert publisher.publish(outcomes) == outcomes
    stub.assert_no_pending_responses()


def test_any_other_refusal_is_returned_at_once_for_the_queue_to_retry() -> None:
    client, stub = client_and_stub()
    stub.add_client_error("publish_batch", service_error_code="AuthorizationError", http_status_code=403)
    outcomes = [outcome(1)]
    asked: list[int] = []

    with stub:
        failed = SnsOutcomePublisher(client, TOPIC).publish(
            outcomes, retry_throttled=lambda n: asked.append(n) or True
        )

    assert failed == outcomes and asked == []
