"""Acceptance on the real engines: a concurrent on-sale, poison messages, and the `seats` commands.

The on-sale runs the real handler in 8 worker processes against DynamoDB Local, whose conditional
transactions are atomic under concurrency (moto's DynamoDB is not, so it is not used here).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import EndpointConnectionError

from seat_inventory.handlers.reserve_seats import lambda_handler as real_handler
from seat_inventory.models import SeatClassInventory, SeatKey
from seat_tools.local.demo import DemoOptions, checks_passed, run_onsale, summarize
from seat_tools.local.runner import LocalRunner, runner_config
from seat_tools.local.stack import LocalStack
from seat_tools.operator_commands import OperatorTable
from seat_tools.traffic import OutcomeCollector, reservation_body, send_messages
from tests.depth import sized

pytestmark = pytest.mark.local_stack

# The concurrent on-sale (bounded, tests/depth.py): ONSALE_REQUESTS messages for a fifth as many
# seats, as `seats demo --single-item` sends them (10% re-sends, some for several seats).
ONSALE_REQUESTS = sized("SEATS_ONSALE_REQUESTS", ci=2000, deep=5000)
ONSALE_CAPACITY = ONSALE_REQUESTS // 5

SEATS = Path(sys.executable).parent / "seats"
POISON_HANDLER = f"{__name__}.poison_handler"
# While a poison test runs, a failed message comes back after two seconds instead of ten, and
# each batch is invoked as soon as it is received (no batching window), so a message is never
# still in a worker's hands when it becomes visible again.
POISON_VISIBILITY_TIMEOUT_S = 2


def poison_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """The real handler, except that a body containing "poison-raise" makes the invocation raise
    and one containing "poison-report" is reported in batchItemFailures (the others are handled)."""
    records = event["Records"]
    if any("poison-raise" in record["body"] for record in records):
        raise RuntimeError("poison message")
    poisoned = [record for record in records if "poison-report" in record["body"]]
    healthy = [record for record in records if record not in poisoned]
    response = real_handler({"Records": healthy}, context) if healthy else {"batchItemFailures": []}
    failures = [{"itemIdentifier": record["messageId"]} for record in poisoned]
    return {"batchItemFailures": [*response["batchItemFailures"], *failures]}


def _dead_letters(stack: LocalStack) -> list[dict[str, Any]]:
    sqs = stack.client("sqs")
    messages = sqs.receive_message(
        QueueUrl=stack.dead_letter_queue_url,
        MaxNumberOfMessages=10,
        VisibilityTimeout=0,
        MessageSystemAttributeNames=["ApproximateReceiveCount"],
    ).get("Messages", [])
    return list(messages)


def _wait_for(condition: Any, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout_s:.0f} s waiting for {what}")
        time.sleep(0.25)


@pytest.fixture
def fast_retries(local_stack: LocalStack) -> Iterator[LocalStack]:
    """The reservations queue with a one-second visibility timeout; the DLQ is emptied afterwards."""
    sqs = local_stack.client("sqs")
    with local_stack.visibility_timeout(POISON_VISIBILITY_TIMEOUT_S):
        try:
            yield local_stack
        finally:
            # Not PurgeQueue: SQS (and moto) allow one purge per queue per minute.
            while messages := sqs.receive_message(
                QueueUrl=local_stack.dead_letter_queue_url, MaxNumberOfMessages=10
            ).get("Messages"):
                sqs.delete_message_batch(
                    QueueUrl=local_stack.dead_letter_queue_url,
                    Entries=[
                        {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(messages)
                    ],
                )


def _answer(reservation_id: str, outcome: str, *, duplicate: bool = False) -> dict[str, Any]:
    return {"reservation_id": reservation_id, "outcome": outcome, "duplicate": duplicate, "remaining": 0}


def test_the_demo_verdict_catches_oversold_missing_and_contradictory_answers() -> None:
    # Given three requests for two seats, one of them re-sent
    bodies = [reservation_body(f"r-{n}", "e", 1, "c") for n in range(3)]
    bodies.append(dict(bodies[0]))
    table = SeatClassInventory(event_id="e", seat_class="GA", capacity=2, available=0, sold=2)

    # When the answers and the table agree
    clean = [_answer("r-0", "CONFIRMED"), _answer("r-1", "CONFIRMED"), _answer("r-2", "SOLD_OUT")]
    clean.append(_answer("r-0", "CONFIRMED", duplicate=True))
    verdict = summarize(capacity=2, bodies=bodies, outcomes=clean, inventory=table, elapsed_s=1.0)

    # Then every check passes
    assert (verdict["oversold"], verdict["outcomes_missing"], verdict["inconsistent"]) == (0, 0, 0)
    assert (verdict["confirmed_seats"], verdict["sold_out"], verdict["duplicates"]) == (2, 1, 1)
    assert checks_passed(verdict)

    # And a third CONFIRMED answer, a missing answer or a contradicting re-send each fail them
    oversold = summarize(
        capacity=2,
        bodies=bodies,
        outcomes=[*clean[:2], _answer("r-2", "CONFIRMED")],
        inventory=table,
        elapsed_s=1.0,
    )
    assert oversold["oversold"] == 1
    missing = summarize(capacity=2, bodies=bodies, outcomes=clean[:2], inventory=table, elapsed_s=1.0)
    assert missing["outcomes_missing"] == 1
    contradicted = [*clean[:3], _answer("r-0", "SOLD_OUT", duplicate=True)]
    inconsistent = summarize(capacity=2, bodies=bodies, outcomes=contradicted, inventory=table, elapsed_s=1.0)
    assert inconsistent["inconsistent"] == 1
    broken_table = SeatClassInventory(event_id="e", seat_class="GA", capacity=2, available=-1, sold=3)
    assert (
        summarize(capacity=2, bodies=bodies, outcomes=clean, inventory=broken_table, elapsed_s=1.0)[
            "oversold"
        ]
        > 0
    )
    assert not any(checks_passed(v) for v in (oversold, missing, inconsistent))


@pytest.mark.bounded
@pytest.mark.timeout(300)
def test_concurrent_onsale_sells_exactly_the_capacity_and_answers_every_reservation_once(
    local_stack: LocalStack,
) -> None:
    # Given an event with a fifth as many seats as requests, in one item that 8 function instances
    # share (the hardest case: `seats demo --single-item`; the demo's default keeps one item per worker)
    capacity, requests = ONSALE_CAPACITY, ONSALE_REQUESTS
    options = DemoOptions(
        capacity=capacity, requests=requests, duplicates_pct=10, workers=8, shards=1, seed=20240601
    )

    # When the reservation messages arrive at once, 10% of them re-sends, some for several seats
    run = run_onsale(options, local_stack)

    # Then exactly the capacity is sold, and the table agrees with itself and with the answers
    inventory = run.inventory
    assert inventory is not None
    assert inventory.sold == capacity
    assert inventory.available == 0
    assert inventory.available + inventory.sold == inventory.capacity == capacity
    summary = run.summary
    assert (summary["workers"], summary["shards"]) == (8, 1)
    assert summary["oversold"] == 0
    assert summary["confirmed_seats"] == capacity

    # And the burst really had duplicates and multi-seat requests
    assert summary["requests"] == requests
    assert summary["distinct_reservations"] == requests * 9 // 10
    assert any(body["quantity"] > 1 for body in run.bodies)

    # And every distinct reservation id has exactly one first answer; re-sends got the same outcome
    sent_ids = {body["reservation_id"] for body in run.bodies}
    answers: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for document in run.outcomes:
        if document["outcome"] != "TICKETED":  # the issuer's news about a sale, not an answer
            answers[document["reservation_id"]].append(document)
    assert set(answers) == sent_ids
    for reservation_id, documents in answers.items():
        assert len({d["outcome"] for d in documents}) == 1, (reservation_id, documents)
        assert sum(1 for d in documents if not d["duplicate"]) == 1, (reservation_id, documents)
    assert summary["duplicates"] >= requests // 10
    assert summary["outcomes_missing"] == 0
    assert summary["inconsistent"] == 0
    # And the ticket issuer, running beside the workers, numbered every sale soundly
    assert summary["tickets_audit"] == "ok" and summary["tickets_defects"] == 0

    # And the seats of the CONFIRMED reservation ids add up to what was sold
    quantity = {body["reservation_id"]: body["quantity"] for body in run.bodies}
    confirmed = {rid for rid, documents in answers.items() if documents[0]["outcome"] == "CONFIRMED"}
    assert sum(quantity[rid] for rid in confirmed) == capacity
    assert any(quantity[rid] > 1 for rid in confirmed)

    # And "remaining" was never negative in any answer, and nothing reached the dead-letter queue
    assert all(d["remaining"] is None or d["remaining"] >= 0 for d in run.outcomes)
    assert summary["dlq_depth"] == 0
    assert summary["handler_errors"] == 0
    assert local_stack.queue_depth() == (0, 0)


@pytest.mark.timeout(120)
def test_a_message_that_makes_the_handler_raise_reaches_the_dead_letter_queue(
    fast_retries: LocalStack,
) -> None:
    # Given a runner whose handler raises for a poisoned body
    stack = fast_retries
    max_receive_count = stack.template.queue.max_receive_count
    assert max_receive_count is not None
    config = replace(runner_config(stack, workers=2, handler=POISON_HANDLER), batching_window_s=0)
    body = json.dumps(
        {"reservation_id": f"poison-raise-{uuid.uuid4().hex[:8]}", "event_id": "e", "quantity": 1}
    )

    with LocalRunner(config) as runner:
        # When the poisoned message is sent
        stack.client("sqs").send_message(QueueUrl=stack.queue_url, MessageBody=body)

        # Then after maxReceiveCount failed invocations the redrive policy moves it to the DLQ
        _wait_for(lambda: stack.queue_depth(stack.dead_letter_queue_url)[0] == 1, 60, "the dead letter")
        assert runner.drain(stack.queue_depth, quiet_s=0.5, timeout_s=20)
    assert runner.stats.handler_errors == max_receive_count
    (letter,) = _dead_letters(stack)
    assert letter["Body"] == body
    assert int(letter["Attributes"]["ApproximateReceiveCount"]) >= max_receive_count


@pytest.mark.timeout(120)
def test_a_reported_item_failure_is_retried_alone_while_its_batch_mates_are_answered_once(
    fast_retries: LocalStack,
) -> None:
    # Given an event with seats and a runner whose handler reports a poisoned body as failed
    stack = fast_retries
    event_id = f"batch-{uuid.uuid4().hex[:8]}"
    OperatorTable(stack.client("dynamodb"), stack.table_name).create_seat_class(SeatKey(event_id, "GA"), 10)
    healthy = [reservation_body(f"{event_id}-{n}", event_id, 1, f"c-{n}") for n in range(3)]
    poisoned = {"reservation_id": f"poison-report-{event_id}", "event_id": event_id, "quantity": 1}
    max_receive_count = stack.template.queue.max_receive_count
    assert max_receive_count is not None
    config = replace(runner_config(stack, workers=1, handler=POISON_HANDLER), batching_window_s=0)

    with (
        OutcomeCollector(
            stack.client("sns"), stack.client("sqs"), stack.topic_arn, event_id=event_id
        ) as collector,
        LocalRunner(config) as runner,
    ):
        # When the four messages arrive together
        report = send_messages(stack.client("sqs"), stack.queue_url, [*healthy, poisoned])
        assert report.failed == 0

        # Then the poisoned one ends in the DLQ, and the others were answered exactly once
        _wait_for(lambda: stack.queue_depth(stack.dead_letter_queue_url)[0] == 1, 60, "the dead letter")
        assert runner.drain(stack.queue_depth, quiet_s=0.5, timeout_s=20)
        outcomes = collector.collect(until=lambda documents: len(documents) >= 3, timeout_s=10)
        outcomes += collector.collect(until=lambda documents: False, timeout_s=1.5)
    assert sorted(d["reservation_id"] for d in outcomes) == sorted(b["reservation_id"] for b in healthy)
    assert {d["outcome"] for d in outcomes} == {"CONFIRMED"}
    assert not any(d["duplicate"] for d in outcomes)
    assert runner.stats.item_failures == max_receive_count
    (letter,) = _dead_letters(stack)
    assert json.loads(letter["Body"]) == poisoned


@pytest.mark.timeout(180)
def test_seats_demo_json_prints_a_clean_summary_on_its_last_line() -> None:
    # Given a fresh clone's `seats` command
    # When the demo runs with a small on-sale, in its default configuration
    completed = subprocess.run(
        [str(SEATS), "demo", "--json", "--capacity", "600", "--requests", "1000"],
        capture_output=True,
        text=True,
        timeout=170,
        check=False,
    )

    # Then it succeeds and its last line is the JSON summary with nothing oversold or missing
    assert completed.returncode == 0, completed.stderr
    summary = json.loads(completed.stdout.strip().splitlines()[-1])
    assert summary["oversold"] == 0
    assert summary["outcomes_missing"] == 0
    assert summary["capacity"] == 600
    assert summary["requests"] == 1000
    assert summary["confirmed_seats"] == 600
    # in the recommended configuration: one item per worker, but no more items than the capacity
    # fills with a full batch each (99 messages of 1.4 seats on average, a tenth re-sends: about
    # 125 seats; 600 seats make 4 items of a batch or more)
    assert summary["workers"] == 8
    assert 110 < summary["seats_per_batch"] < 140
    assert summary["shards"] == int(600 // summary["seats_per_batch"])
    assert summary["sold"] == 600 and summary["available"] == 0
    for key in ("sold_out", "duplicates", "invalid", "elapsed_s", "reservations_per_s"):
        assert key in summary


@pytest.mark.timeout(90)
def test_seats_local_up_prints_exports_and_stops_everything_on_ctrl_c() -> None:
    # Given `seats local up` running in the foreground
    process = subprocess.Popen(
        [str(SEATS), "local", "up", "--no-runner"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    exports: dict[str, str] = {}
    try:
        assert process.stdout is not None
        for line in process.stdout:
            if line.startswith("export "):
                name, _, value = line[len("export ") :].strip().partition("=")
                exports[name] = value.strip("'")
            if "SEATS_API_URL" in exports:  # the last one
                break

        # When it is used from another shell with the printed variables, then interrupted
        dynamodb = boto3.client(
            "dynamodb",
            endpoint_url=exports["AWS_ENDPOINT_URL_DYNAMODB"],
            region_name=exports["AWS_REGION"],
            aws_access_key_id=exports["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=exports["AWS_SECRET_ACCESS_KEY"],
            config=Config(retries={"max_attempts": 1}, connect_timeout=2),
        )
        assert exports["TABLE_NAME"] in dynamodb.list_tables()["TableNames"]
        assert exports["RESERVATIONS_QUEUE_URL"].startswith(exports["AWS_ENDPOINT_URL_SQS"])
        with pytest.raises(urllib.error.HTTPError) as not_found:  # the checkout API answers too
            urllib.request.urlopen(exports["SEATS_API_URL"] + "/reservations/none", timeout=5)
        assert not_found.value.code == 404
        process.send_signal(signal.SIGINT)
        returncode = process.wait(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()

    # Then it exits cleanly and DynamoDB Local is gone
    assert returncode == 0
    with pytest.raises(EndpointConnectionError):
        dynamodb.list_tables()
