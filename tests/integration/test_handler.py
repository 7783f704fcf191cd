"""The real Lambda handler on moto: the sample events, partial failures, crashes and redelivery."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from tests.integration.conftest import EVENTS, SimulatedCrash, Stack, load_event, sqs_event


def reservation(
    reservation_id: str, event_id: str = "concert-2026", quantity: int = 2, seat_class: str | None = "GA"
) -> dict:
    body = {
        "reservation_id": reservation_id,
        "event_id": event_id,
        "quantity": quantity,
        "customer_id": "c-1",
    }
    if seat_class is not None:
        body["seat_class"] = seat_class
    return body


@pytest.fixture
def concert(stack: Stack) -> Stack:
    stack.create_event("concert-2026", 100, "GA")
    stack.create_event("concert-2026", 10, "VIP")
    stack.create_event("sold-out-show", 2, "GA")
    return stack


# --- every sample event, as `sam local invoke -e events/<file>.json` would run it ----------------

EXPECTED_OUTCOMES = {
    "reserve_single.json": ["CONFIRMED"],
    "reserve_batch_mixed.json": [
        "CONFIRMED",
        "CONFIRMED",
        "CONFIRMED",
        "CONFIRMED",
        "UNKNOWN_EVENT",
        "INVALID",
    ],
    "reserve_duplicate.json": ["CONFIRMED", "CONFIRMED"],
    "reserve_sold_out.json": ["SOLD_OUT"],
    "reserve_unknown_event.json": ["UNKNOWN_EVENT"],
    "reserve_malformed.json": ["INVALID"] * 5,
}


def test_every_sample_event_has_an_expectation() -> None:
    assert sorted(p.name for p in EVENTS.glob("reserve_*.json")) == sorted(EXPECTED_OUTCOMES)


@pytest.mark.parametrize("name", sorted(EXPECTED_OUTCOMES))
def test_sample_event_is_answered_as_documented(concert: Stack, name: str) -> None:
    event = load_event(name)

    response = concert.invoke(event)

    assert response == {"batchItemFailures": []}
    outcomes = concert.outcomes()
    by_message = {o["message_id"]: o["outcome"] for o in outcomes}
    assert [by_message[r["messageId"]] for r in event["Records"]] == EXPECTED_OUTCOMES[name]
    for document in outcomes:
        assert {
            "reservation_id",
            "event_id",
            "seat_class",
            "quantity",
            "customer_id",
            "outcome",
            "remaining",
            "reason",
        } <= set(document)


def test_the_malformed_sample_gives_a_precise_reason_for_each_body(concert: Stack) -> None:
    concert.invoke(load_event("reserve_malformed.json"))
    reasons = sorted(o["reason"] for o in concert.outcomes())
    assert any(r.startswith("body is not valid JSON") for r in reasons)
    assert any(r.startswith("missing required field(s): event_id") for r in reasons)
    assert "quantity must be at least 1, got 0" in reasons
    assert "quantity must be an integer, got float 2.5" in reasons
    assert "quantity 11 is above the maximum of 10 seats per reservation" in reasons


def test_the_duplicate_sample_takes_seats_once(concert: Stack) -> None:
    concert.invoke(load_event("reserve_duplicate.json"))
    outcomes = concert.outcomes()
    assert {o["reservation_id"] for o in outcomes} == {"r-1001"}
    assert sorted(o["duplicate"] for o in outcomes) == [False, True]
    assert concert.inventory("concert-2026")["sold"] == 2


def test_the_sold_out_sample_reports_what_is_left(concert: Stack) -> None:
    concert.invoke(load_event("reserve_sold_out.json"))
    [outcome] = concert.outcomes()
    assert (outcome["outcome"], outcome["remaining"]) == ("SOLD_OUT", 2)
    assert concert.inventory("sold-out-show") == {"capacity": 2, "available": 2, "sold": 0}


# --- message attributes for filter policies -----------------------------------------------------


def test_outcomes_carry_attributes_that_filter_policies_can_match(concert: Stack) -> None:
    sns, sqs = concert.faults.session.client("sns"), concert.sqs
    queue_url = sqs.create_queue(QueueName="sold-out-only")["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    sns.subscribe(
        TopicArn=concert.topic_arn,
        Protocol="sqs",
        Endpoint=queue_arn,
        Attributes={"RawMessageDelivery": "true", "FilterPolicy": json.dumps({"outcome": ["SOLD_OUT"]})},
    )

    concert.invoke(sqs_event(reservation("r-1", "sold-out-show", 1), reservation("r-2", "sold-out-show", 2)))

    received = sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10)["Messages"]
    assert [json.loads(m["Body"])["reservation_id"] for m in received] == ["r-2"]


# --- transient faults: only what failed comes back ------------------------------------------------


def test_a_throttled_group_is_retried_in_place_while_the_rest_of_the_batch_completes(concert: Stack) -> None:
    # Throttling of the hot item is a wait for its turn, like a conflict: nothing goes back to the queue.
    concert.faults.fail(
        "dynamodb.TransactWriteItems",
        "ThrottlingException",
        times=2,
        when=lambda request: "CLASS#VIP" in str(request.get("body")),
    )
    event = sqs_event(reservation("r-1"), reservation("r-2", seat_class="VIP"), reservation("r-3"))

    response = concert.invoke(event)

    assert response == {"batchItemFailures": []}
    assert sorted(o["reservation_id"] for o in concert.outcomes()) == ["r-1", "r-2", "r-3"]
    assert concert.inventory("concert-2026", "VIP")["sold"] == 2


def _sold_out_batch(concert: Stack) -> dict:
    """Sells out `sold-out-show` (faults are registered before: the container's clients copy the
    session's hooks when the first invocation builds them); a batch of five one-seat requests."""
    assert concert.invoke(sqs_event(reservation("r-0", "sold-out-show"))) == {"batchItemFailures": []}
    concert.outcomes()
    concert.faults.calls.clear()
    return sqs_event(*(reservation(f"r-{n}", "sold-out-show", 1) for n in range(1, 6)))


def _answers(concert: Stack) -> list[tuple[str, str, bool]]:
    return sorted((o["reservation_id"], o["outcome"], o["duplicate"]) for o in concert.outcomes())


@pytest.mark.parametrize("code", ["TransactionConflictException", "InternalServerError"])
def test_rejections_after_a_sell_out_are_put_one_by_one_and_a_fault_on_one_is_written_again(
    concert: Stack, code: str
) -> None:
    attempts: list[str] = []  # PutItem attempts on r-3's record, the faulted one included

    def on_r3(request: dict) -> bool:
        found = b"RESERVATION#r-3" in request["body"]
        attempts.extend(["r-3"] if found else [])
        return found

    concert.faults.fail("dynamodb.PutItem", code, when=on_r3)
    event = _sold_out_batch(concert)

    response = concert.invoke(event)

    # Every rejection answered once, as a first answer: five puts reached DynamoDB (the faulted
    # attempt is answered by the fault hook, before the hook that counts calls), r-3's on its
    # second attempt; no transaction.
    assert response == {"batchItemFailures": []}
    assert _answers(concert) == [(f"r-{n}", "SOLD_OUT", False) for n in range(1, 6)]
    assert (Counter(concert.faults.calls)["PutItem"], attempts) == (5, ["r-3", "r-3"])
    assert "TransactWriteItems" not in concert.faults.calls
    assert concert.inventory("sold-out-show") == {"capacity": 2, "available": 0, "sold": 2}


def test_a_rejection_a_fault_keeps_out_is_handed_back_alone_and_its_redelivery_answers_it_once(
    concert: Stack,
) -> None:
    concert.faults.fail(
        "dynamodb.PutItem", "InternalServerError", times=2, when=lambda r: b"RESERVATION#r-3" in r["body"]
    )
    event = _sold_out_batch(concert)

    response = concert.invoke(event)

    # The records written stand and are answered; only r-3's message goes back to the queue.
    assert response == {"batchItemFailures": [{"itemIdentifier": "msg-2"}]}
    assert _answers(concert) == [(f"r-{n}", "SOLD_OUT", False) for n in (1, 2, 4, 5)]

    # When the whole batch comes again, r-3 is answered for the first time, the rest as duplicates.
    assert concert.invoke(event) == {"batchItemFailures": []}
    assert _answers(concert) == [(f"r-{n}", "SOLD_OUT", n != 3) for n in range(1, 6)]


def test_a_transient_service_error_hands_only_its_group_back(concert: Stack) -> None:
    concert.faults.fail(
        "dynamodb.TransactWriteItems",
        "InternalServerError",
        when=lambda request: "CLASS#VIP" in str(request.get("body")),
    )
    event = sqs_event(reservation("r-1"), reservation("r-2", seat_class="VIP"), reservation("r-3"))

    response = concert.invoke(event)

    assert response == {"batchItemFailures": [{"itemIdentifier": "msg-1"}]}
    assert sorted(o["reservation_id"] for o in concert.outcomes()) == ["r-1", "r-3"]
    assert concert.inventory("concert-2026", "VIP")["sold"] == 0

    retry = concert.invoke({"Records": [event["Records"][1]]})

    assert retry == {"batchItemFailures": []}
    assert [(o["reservation_id"], o["outcome"]) for o in concert.outcomes()] == [("r-2", "CONFIRMED")]
    assert concert.inventory("concert-2026", "VIP")["sold"] == 2


def test_an_sns_throttle_is_waited_out_in_place_and_nothing_goes_back(concert: Stack) -> None:
    # SNS refuses the call twice for the region's publish rate (`Throttled`, which botocore does
    # not retry): the handler sends it again after its back-off, within the invocation
    concert.faults.fail("sns.PublishBatch", "Throttled", times=2)

    response = concert.invoke(sqs_event(reservation("r-1"), reservation("r-2")))

    assert response == {"batchItemFailures": []}
    published = concert.outcomes()
    assert [(o["reservation_id"], o["outcome"], o["duplicate"]) for o in published] == [
        ("r-1", "CONFIRMED", False),
        ("r-2", "CONFIRMED", False),
    ]
    assert concert.inventory("concert-2026")["sold"] == 4


def test_an_sns_failure_retries_only_the_unpublished_and_takes_no_more_seats(concert: Stack) -> None:
    concert.faults.fail("sns.PublishBatch", "InternalError")
    event = sqs_event(reservation("r-1"), reservation("r-2"))

    response = concert.invoke(event)

    assert response == {"batchItemFailures": [{"itemIdentifier": "msg-0"}, {"itemIdentifier": "msg-1"}]}
    assert concert.outcomes() == []
    assert concert.inventory("concert-2026")["sold"] == 4

    retry = concert.invoke(event)

    assert retry == {"batchItemFailures": []}
    published = concert.outcomes()
    assert [(o["reservation_id"], o["outcome"], o["duplicate"]) for o in published] == [
        ("r-1", "CONFIRMED", True),
        ("r-2", "CONFIRMED", True),
    ]
    assert concert.inventory("concert-2026")["sold"] == 4


def test_a_crash_after_the_transaction_and_before_the_publish_loses_and_doubles_nothing(
    concert: Stack,
) -> None:
    concert.faults.crash_after("dynamodb.TransactWriteItems")
    event = sqs_event(reservation("r-1", quantity=3), reservation("r-2", quantity=1))

    with pytest.raises(SimulatedCrash):
        concert.invoke(event)
    assert concert.outcomes() == []
    assert concert.inventory("concert-2026")["sold"] == 4  # the transaction committed

    # SQS redelivers the whole batch after the visibility timeout
    response = concert.invoke(
        sqs_event(reservation("r-1", quantity=3), reservation("r-2", quantity=1), receive_count=2)
    )

    assert response == {"batchItemFailures": []}
    assert sorted((o["reservation_id"], o["outcome"]) for o in concert.outcomes()) == [
        ("r-1", "CONFIRMED"),
        ("r-2", "CONFIRMED"),
    ]
    assert concert.inventory("concert-2026") == {"capacity": 100, "available": 96, "sold": 4}


def test_an_unexpected_error_fails_the_whole_batch_so_nothing_is_silently_dropped(concert: Stack) -> None:
    concert.faults.fail("dynamodb.TransactWriteItems", "AccessDeniedException")
    with pytest.raises(Exception, match="AccessDenied"):
        concert.invoke(sqs_event(reservation("r-1")))
    assert concert.outcomes() == []


def test_a_batch_of_99_for_one_class_costs_one_transaction(concert: Stack) -> None:
    event = sqs_event(*(reservation(f"r-{n}", quantity=1) for n in range(99)))

    concert.invoke(event)

    assert Counter(concert.faults.calls)["TransactWriteItems"] == 1
    assert Counter(concert.faults.calls)["PublishBatch"] == 10
    assert concert.inventory("concert-2026")["sold"] == 99


def test_events_folder_holds_only_json(concert: Stack) -> None:
    for path in Path(EVENTS).iterdir():
        json.loads(path.read_text())


# --- the lifecycle samples, in the order a checkout sends them -----------------------------------

# Each sample runs after the ones before it: hold.json holds h-3001 (GA) and h-3002 (VIP),
# confirm.json confirms h-3001 (and names an unknown hold), cancel.json cancels both.
LIFECYCLE_SAMPLES = [
    ("hold.json", ["HELD", "HELD"]),
    ("confirm.json", ["CONFIRMED", "UNKNOWN_RESERVATION"]),
    ("cancel.json", ["CANCELLED", "CANCELLED"]),
]
NOT_SQS_SAMPLES = {"env.local.json", "sweep_schedule.json", "issue_schedule.json"} | {
    p.name
    for p in EVENTS.glob("gate_*.json")  # API Gateway proxy events of the gate's function
}


def test_every_lifecycle_sample_has_an_expectation() -> None:
    from tests.integration.test_sample_events import SCENARIOS  # run with their own inventories there

    names = (
        {p.name for p in EVENTS.glob("*.json")} - set(EXPECTED_OUTCOMES) - NOT_SQS_SAMPLES - set(SCENARIOS)
    )
    assert sorted(names) == sorted(name for name, _ in LIFECYCLE_SAMPLES)


@pytest.mark.parametrize("position", range(len(LIFECYCLE_SAMPLES)), ids=[n for n, _ in LIFECYCLE_SAMPLES])
def test_lifecycle_sample_is_answered_as_documented(concert: Stack, position: int) -> None:
    # Given the samples that come before it
    for name, _ in LIFECYCLE_SAMPLES[:position]:
        assert concert.invoke(load_event(name)) == {"batchItemFailures": []}
    concert.outcomes()
    name, expected = LIFECYCLE_SAMPLES[position]
    event = load_event(name)

    # When the sample is invoked
    response = concert.invoke(event)

    # Then every record gets its documented answer, with the lifecycle fields
    assert response == {"batchItemFailures": []}
    outcomes = concert.outcomes()
    by_message = {o["message_id"]: o for o in outcomes}
    assert [by_message[r["messageId"]]["outcome"] for r in event["Records"]] == expected
    for record in event["Records"]:
        document = by_message[record["messageId"]]
        assert document["type"] == json.loads(record["body"])["type"]
        assert {"expires_at", "expires_at_epoch", "duplicate", "reason"} <= set(document)


def test_lifecycle_samples_carry_a_correct_md5_of_their_bodies() -> None:
    import hashlib

    for name, _ in LIFECYCLE_SAMPLES:
        for record in load_event(name)["Records"]:
            assert record["md5OfBody"] == hashlib.md5(record["body"].encode()).hexdigest()
