"""`seats reserve | load | watch | dlq | invoke` through click's CliRunner, against moto."""

from __future__ import annotations

import inspect
import json
import os
import re
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import pytest
from click.testing import CliRunner, Result
from moto import mock_aws

from seat_inventory.models import Outcome, ReservationOutcome, ReservationRequest, SeatKey
from seat_inventory.parsing import parse_reservation
from seat_inventory.publishing.sns_publisher import SnsOutcomePublisher
from seat_tools import traffic
from seat_tools.cli.main import cli
from seat_tools.operator_commands import OperatorTable
from seat_tools.reservation_queues import queue_index, queue_name
from seat_tools.traffic import OutcomeCollector, reservation_body
from tests.integration.conftest import FakeHttpResponse
from tests.template_support import load_template

REPO = Path(__file__).resolve().parents[2]
EVENTS = REPO / "events"
REGION = "us-east-1"
TABLE_NAME = "seat-inventory-cli-test"
EVENT_FILES = sorted(EVENTS.glob("reserve_*.json"))
# The outcome each documented example must produce with the inventory `seed_events` creates.
EXPECTED_OUTCOMES = {
    "reserve_single.json": ["CONFIRMED"],
    "reserve_sold_out.json": ["SOLD_OUT"],
    "reserve_unknown_event.json": ["UNKNOWN_EVENT"],
}


@dataclass
class Aws:
    sqs: Any
    sns: Any
    dynamodb: Any
    queue_url: str
    dlq_url: str
    topic_arn: str

    def visible(self, queue_url: str) -> int:
        attributes = self.sqs.get_queue_attributes(
            QueueUrl=queue_url, AttributeNames=["ApproximateNumberOfMessages"]
        )["Attributes"]
        return int(attributes["ApproximateNumberOfMessages"])

    def drain(self, queue_url: str) -> list[dict[str, Any]]:
        messages: list[dict[str, Any]] = []
        while batch := self.sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10).get(
            "Messages", []
        ):
            messages.extend(batch)
            self.sqs.delete_message_batch(
                QueueUrl=queue_url,
                Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(batch)],
            )
        return messages

    def watch_queues(self) -> list[str]:
        return [
            url
            for url in self.sqs.list_queues().get("QueueUrls", [])
            if url.rsplit("/", 1)[-1].startswith(traffic.DEFAULT_WATCH_QUEUE_PREFIX)
        ]

    def subscriptions(self) -> list[dict[str, Any]]:
        return self.sns.list_subscriptions_by_topic(TopicArn=self.topic_arn)["Subscriptions"]


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[Aws]:
    """moto with the service's resources; the CLI finds them through the environment variables."""
    for name in (
        "SEATS_STACK_NAME",
        "AWS_PROFILE",
        "AWS_ENDPOINT_URL",
        "AWS_ENDPOINT_URL_DYNAMODB",
        "AWS_ENDPOINT_URL_SNS",
        "AWS_ENDPOINT_URL_SQS",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    monkeypatch.setenv("AWS_REGION", REGION)
    monkeypatch.setattr(traffic, "EMPTY_QUEUE_WAIT_S", 0)
    with mock_aws():
        session = boto3.session.Session(region_name=REGION)
        sqs, sns, dynamodb = session.client("sqs"), session.client("sns"), session.client("dynamodb")
        dynamodb.create_table(**load_template(REPO / "template.yaml").table_create_request(TABLE_NAME))
        resources = Aws(
            sqs=sqs,
            sns=sns,
            dynamodb=dynamodb,
            queue_url=sqs.create_queue(QueueName="seat-inventory-reservations")["QueueUrl"],
            dlq_url=sqs.create_queue(QueueName="seat-inventory-dlq")["QueueUrl"],
            topic_arn=sns.create_topic(Name="seat-inventory-outcomes")["TopicArn"],
        )
        monkeypatch.setenv("TABLE_NAME", TABLE_NAME)
        monkeypatch.setenv("OUTCOMES_TOPIC_ARN", resources.topic_arn)
        monkeypatch.setenv("RESERVATIONS_QUEUE_URL", resources.queue_url)
        monkeypatch.setenv("DEAD_LETTER_QUEUE_URL", resources.dlq_url)
        yield resources


def run(*args: str, input: str | None = None) -> Result:
    """Invokes `seats` with stdout and stderr kept apart (click < 8.2 mixes them by default)."""
    keep_stderr_apart: dict[str, Any] = (
        {"mix_stderr": False} if "mix_stderr" in inspect.signature(CliRunner.__init__).parameters else {}
    )
    return CliRunner(**keep_stderr_apart).invoke(cli, list(args), input=input, catch_exceptions=False)


def seed_events(aws: Aws) -> None:
    """The inventory the examples in events/ are written for."""
    table = OperatorTable(aws.dynamodb, TABLE_NAME)
    table.create_seat_class(SeatKey("concert-2026", "GA"), 100)
    table.create_seat_class(SeatKey("concert-2026", "VIP"), 10)
    table.create_seat_class(SeatKey("sold-out-show", "GA"), 1)


def sqs_event(*bodies: str) -> dict[str, Any]:
    return {
        "Records": [
            {
                "messageId": f"m-{index}",
                "receiptHandle": f"rh-{index}",
                "body": body,
                "attributes": {"ApproximateReceiveCount": "1"},
                "messageAttributes": {},
                "eventSource": "aws:sqs",
                "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:seat-inventory-reservations",
                "awsRegion": REGION,
            }
            for index, body in enumerate(bodies)
        ]
    }


# --------------------------------------------------------------------------- reserve and load


def test_reserve_sends_one_body_the_service_accepts(aws: Aws) -> None:
    # When one reservation is sent with a default reservation id
    result = run("reserve", "concert-2026", "--quantity", "3", "--customer", "c-7", "--seat-class", "VIP")

    # Then it prints the reservation id and the SQS message id of the one message on the queue
    assert result.exit_code == 0, result.output
    reservation_id = re.search(r"reservation_id\s+(\S+)", result.stdout).group(1)  # type: ignore[union-attr]
    message_id = re.search(r"message_id\s+(\S+)", result.stdout).group(1)  # type: ignore[union-attr]
    assert re.fullmatch(r"r-[0-9a-f]{12}", reservation_id)
    [message] = aws.drain(aws.queue_url)
    assert message["MessageId"] == message_id
    # and the service's parser accepts its body as exactly that request
    parsed = parse_reservation(message_id, message["Body"], default_seat_class="GA", max_quantity=10)
    assert parsed == ReservationRequest(message_id, reservation_id, "concert-2026", "VIP", 3, "c-7")


def test_reserve_with_an_explicit_id_and_the_default_class(aws: Aws) -> None:
    result = run(
        "reserve", "concert-2026", "--quantity", "1", "--customer", "c-1", "--reservation-id", "r-fixed"
    )

    assert result.exit_code == 0, result.output
    [message] = aws.drain(aws.queue_url)
    assert json.loads(message["Body"]) == reservation_body("r-fixed", "concert-2026", 1, "c-1")


def test_reserve_refuses_an_id_the_service_would_reject(aws: Aws) -> None:
    # When the event id contains a character ids may not have
    result = run("reserve", "concert#2026", "--quantity", "1", "--customer", "c-1")

    # Then it is a usage error and nothing is sent
    assert result.exit_code == 2
    assert "EVENT_ID" in result.stderr
    assert aws.visible(aws.queue_url) == 0


def test_load_sends_the_burst_and_summarises(aws: Aws) -> None:
    # When 60 requests with 10 % duplicates are sent
    result = run(
        "load", "concert-2026", "--requests", "60", "--concurrency", "2", "--duplicates", "10", "--seed", "5"
    )

    # Then the summary counts them and the queue holds all 60, 54 distinct reservation ids
    assert result.exit_code == 0, result.output
    assert re.search(
        r"sent 60, failed 0; 54 distinct reservations, 6 duplicates; [\d.]+ s, [\d.]+ msgs/s", result.stdout
    )
    bodies = [json.loads(m["Body"]) for m in aws.drain(aws.queue_url)]
    assert len(bodies) == 60
    assert len({b["reservation_id"] for b in bodies}) == 54


def test_load_spreads_the_burst_over_the_stacks_reservation_queues_by_reservation_id(aws: Aws) -> None:
    # Given a stack with 3 reservation queues (ReservationQueues 3: the first, -1 and -2)
    name = aws.queue_url.rpartition("/")[2]
    later = [aws.sqs.create_queue(QueueName=queue_name(name, i))["QueueUrl"] for i in (1, 2)]

    # When a burst is sent
    result = run("load", "concert-2026", "--requests", "90", "--seed", "7")

    # Then every request is on the queue its reservation id picks, each queue has some
    assert result.exit_code == 0, result.output
    received = 0
    for index, url in enumerate([aws.queue_url, *later]):
        ids = [json.loads(m["Body"])["reservation_id"] for m in aws.drain(url)]
        assert ids and all(queue_index(rid, 3) == index for rid in ids), index
        received += len(ids)
    assert received == 90


def test_load_says_in_one_line_that_the_queue_is_missing(aws: Aws) -> None:
    # Given the reservations queue no longer exists
    aws.sqs.delete_queue(QueueUrl=aws.queue_url)

    # When a burst is sent
    result = run("load", "concert-2026", "--requests", "15")

    # Then it says so once, before sending anything, with the exit code of a refused call
    assert result.exit_code == 5
    assert "NonExistentQueue" in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert "sent" not in result.stdout


def test_load_exits_non_zero_when_messages_cannot_be_sent(aws: Aws, monkeypatch: pytest.MonkeyPatch) -> None:
    # Given a queue that takes no message (every batch answered with a failed entry)
    real_client = boto3.session.Session.client

    def refusing_client(self: Any, service: str, *args: Any, **kwargs: Any) -> Any:
        client = real_client(self, service, *args, **kwargs)
        if service == "sqs":
            client.meta.events.register(
                "before-call.sqs.SendMessageBatch",
                lambda params, **_: (
                    FakeHttpResponse(200),
                    {
                        "Successful": [],
                        "Failed": [
                            {
                                "Id": e["Id"],
                                "SenderFault": True,
                                "Code": "InvalidMessageContents",
                                "Message": "no",
                            }
                            for e in json.loads(params["body"])["Entries"]
                        ],
                    },
                ),
            )
        return client

    monkeypatch.setattr(boto3.session.Session, "client", refusing_client)

    # When a burst is sent
    result = run("load", "concert-2026", "--requests", "15")

    # Then every message is reported failed, with the reason, and the exit status says so
    assert result.exit_code == 1
    assert "sent 0, failed 15" in result.stdout
    assert "InvalidMessageContents" in result.stderr


# --------------------------------------------------------------------------- watch


def outcome(reservation_id: str, kind: Outcome) -> ReservationOutcome:
    return ReservationOutcome(
        reservation_id=reservation_id,
        outcome=kind,
        reason="not enough seats left" if kind is Outcome.SOLD_OUT else "reserved",
        event_id="concert-2026",
        seat_class="GA",
        quantity=2,
        customer_id="c-1",
        remaining=1,
    )


def publish_once_subscribed(aws: Aws, outcomes: list[ReservationOutcome]) -> threading.Thread:
    """Publishes from another thread as soon as `watch` has subscribed its queue."""

    def publish() -> None:
        deadline = time.monotonic() + 3
        while not aws.subscriptions() and time.monotonic() < deadline:
            time.sleep(0.02)
        SnsOutcomePublisher(aws.sns, aws.topic_arn).publish(outcomes)

    thread = threading.Thread(target=publish, daemon=True)
    thread.start()
    return thread


def test_watch_prints_only_the_filtered_outcome_and_cleans_up(aws: Aws) -> None:
    # Given SOLD_OUT and CONFIRMED outcomes published while watching SOLD_OUT
    publisher = publish_once_subscribed(
        aws, [outcome("r-2", Outcome.CONFIRMED), outcome("r-1", Outcome.SOLD_OUT)]
    )

    # When watching for one SOLD_OUT outcome
    result = run("watch", "--outcome", "sold_out", "--count", "1", "--timeout", "3")
    publisher.join()

    # Then exactly the SOLD_OUT one is printed, on one readable line
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("SOLD_OUT") and "r-1" in lines[0] and "not enough seats left" in lines[0]
    assert "1 outcome(s)" in result.stderr
    # and the subscription and its queue are gone
    assert aws.subscriptions() == []
    assert aws.watch_queues() == []


def test_watch_json_prints_the_documents(aws: Aws) -> None:
    publisher = publish_once_subscribed(
        aws, [outcome("r-1", Outcome.CONFIRMED), outcome("r-2", Outcome.SOLD_OUT)]
    )

    result = run("watch", "--event", "concert-2026", "--count", "2", "--timeout", "3", "--json")
    publisher.join()

    assert result.exit_code == 0, result.output
    documents = [json.loads(line) for line in result.stdout.splitlines()]
    assert sorted((d["reservation_id"], d["outcome"]) for d in documents) == [
        ("r-1", "CONFIRMED"),
        ("r-2", "SOLD_OUT"),
    ]


def test_watch_removes_its_subscription_on_ctrl_c(aws: Aws, monkeypatch: pytest.MonkeyPatch) -> None:
    # Given the user presses Ctrl-C while watching
    def interrupted(self: OutcomeCollector, wait_seconds: int = 1) -> list[dict[str, Any]]:
        assert self.subscription_arn in {s["SubscriptionArn"] for s in aws.subscriptions()}
        raise KeyboardInterrupt

    monkeypatch.setattr(OutcomeCollector, "poll", interrupted)

    # When watch runs
    result = run("watch")

    # Then it ends cleanly and leaves no subscription or queue behind
    assert result.exit_code == 0, result.output
    assert aws.subscriptions() == []
    assert aws.watch_queues() == []


def test_watch_stops_at_the_timeout(aws: Aws) -> None:
    started = time.monotonic()
    result = run("watch", "--timeout", "0.3")

    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    assert "0 outcome(s)" in result.stderr
    # Well short of SQS's 20 s long poll (the hang this guards against), with room for a loaded
    # machine: the subscription's set-up and clean-up on moto took 1.9 s at load 8.
    assert time.monotonic() - started < 10
    assert aws.watch_queues() == []


# --------------------------------------------------------------------------- dlq


def dead_letters(aws: Aws, count: int) -> list[str]:
    bodies = [json.dumps(reservation_body(f"r-dead-{i}", "concert-2026", 1, "c-1")) for i in range(count)]
    for body in bodies:
        aws.sqs.send_message(QueueUrl=aws.dlq_url, MessageBody=body)
    return bodies


def test_dlq_show_lists_without_consuming(aws: Aws) -> None:
    # Given three dead letters
    bodies = dead_letters(aws, 3)

    # When they are shown as a table and as JSON
    table = run("dlq", "show")
    as_json = run("dlq", "show", "--json")

    # Then both list all three
    assert table.exit_code == 0 and as_json.exit_code == 0, table.output + as_json.output
    assert "3 message(s)" in table.stdout
    assert all(f"r-dead-{i}" in table.stdout for i in range(3))
    documents = json.loads(as_json.stdout)
    assert sorted(d["body"]["reservation_id"] for d in documents) == ["r-dead-0", "r-dead-1", "r-dead-2"]
    assert all({"message_id", "receive_count", "sent_at"} <= d.keys() for d in documents)
    # and they are all still in the queue, visible
    assert aws.visible(aws.dlq_url) == 3
    assert sorted(m["Body"] for m in aws.drain(aws.dlq_url)) == sorted(bodies)


def test_dlq_show_says_when_empty(aws: Aws) -> None:
    result = run("dlq", "show")

    assert result.exit_code == 0
    assert "empty" in result.stdout


def test_dlq_redrive_of_an_empty_queue_says_there_is_nothing_to_redrive(aws: Aws) -> None:
    # When the dead-letter queue is empty, redrive asks nothing and succeeds
    result = run("dlq", "redrive")

    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("nothing to redrive:")
    assert "Move" not in result.stdout + result.stderr
    assert json.loads(run("dlq", "redrive", "--output", "json").stdout) == {
        "moved": 0,
        "queue_url": aws.queue_url,
    }


def test_dlq_redrive_asks_first_and_moves_everything(aws: Aws) -> None:
    # Given three dead letters
    bodies = dead_letters(aws, 3)

    # When the confirmation is declined, nothing moves
    declined = run("dlq", "redrive", input="n\n")
    assert declined.exit_code == 1
    assert aws.visible(aws.dlq_url) == 3

    # When it is confirmed, all three move back and the DLQ is empty
    accepted = run("dlq", "redrive", input="y\n")
    assert accepted.exit_code == 0, accepted.output
    assert "moved 3 message(s)" in accepted.stdout
    assert aws.visible(aws.dlq_url) == 0
    assert sorted(m["Body"] for m in aws.drain(aws.queue_url)) == sorted(bodies)


def test_dlq_redrive_yes_and_max(aws: Aws) -> None:
    dead_letters(aws, 4)

    result = run("dlq", "redrive", "--yes", "--max", "2")

    assert result.exit_code == 0, result.output
    assert "moved 2 message(s)" in result.stdout
    assert (aws.visible(aws.queue_url), aws.visible(aws.dlq_url)) == (2, 2)


# --------------------------------------------------------------------------- invoke


def invoke_collecting(aws: Aws, *args: str) -> tuple[Result, list[dict[str, Any]]]:
    """Runs `seats invoke` while an unfiltered collector records every outcome published."""
    with OutcomeCollector(aws.sns, aws.sqs, aws.topic_arn) as collector:
        result = run("invoke", *args)
        outcomes = collector.collect(until=lambda docs: False, timeout_s=0.5, idle_s=0.2)
    return result, outcomes


def test_invoke_runs_an_event_through_the_real_handler(aws: Aws, tmp_path: Path) -> None:
    # Given an event with 5 seats left and a batch of a 3-seat request and a malformed one
    OperatorTable(aws.dynamodb, TABLE_NAME).create_seat_class(SeatKey("concert-2026", "GA"), 5)
    event_file = tmp_path / "event.json"
    event_file.write_text(
        json.dumps(sqs_event(json.dumps(reservation_body("r-1", "concert-2026", 3, "c-1")), '{"quantity": 1'))
    )
    environment_before = dict(os.environ)

    # When it is invoked in-process
    result, outcomes = invoke_collecting(aws, "-e", str(event_file))

    # Then stdout is only the handler's JSON response: nothing to retry
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {"batchItemFailures": []}
    # and the seats were taken and both answers published
    by_outcome = {o["outcome"]: o for o in outcomes}
    assert sorted(by_outcome) == ["CONFIRMED", "INVALID"]
    assert (by_outcome["CONFIRMED"]["reservation_id"], by_outcome["CONFIRMED"]["quantity"]) == ("r-1", 3)
    [inventory] = OperatorTable(aws.dynamodb, TABLE_NAME).get_event("concert-2026")
    assert (inventory.available, inventory.sold) == (2, 3)
    # and the process environment is as it was
    assert dict(os.environ) == environment_before


def test_invoke_env_vars_file_applies_all_but_docker_host_values(
    aws: Aws, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given the environment names a wrong table, and an env-vars file names the right one and a
    # docker-only endpoint (which, if applied, would send the handler's calls nowhere)
    monkeypatch.setenv("TABLE_NAME", "wrong-table")
    env_file = tmp_path / "env.json"
    env_file.write_text(
        json.dumps(
            {
                "Parameters": {"TABLE_NAME": "also-wrong", "LOG_LEVEL": "WARNING"},
                "ReserveSeatsFunction": {
                    "TABLE_NAME": TABLE_NAME,
                    "AWS_ENDPOINT_URL_DYNAMODB": "http://host.docker.internal:8000",
                },
            }
        )
    )
    OperatorTable(aws.dynamodb, TABLE_NAME).create_seat_class(SeatKey("concert-2026", "GA"), 5)
    event_file = tmp_path / "event.json"
    event_file.write_text(
        json.dumps(sqs_event(json.dumps(reservation_body("r-1", "concert-2026", 2, "c-1"))))
    )

    # When invoked with that file
    result, outcomes = invoke_collecting(aws, "-e", str(event_file), "--env-vars", str(env_file))

    # Then the function's table from the file was used, and the docker endpoint was skipped, saying so
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {"batchItemFailures": []}
    assert [o["outcome"] for o in outcomes] == ["CONFIRMED"]
    assert "AWS_ENDPOINT_URL_DYNAMODB" in result.stderr and "host.docker.internal" in result.stderr
    assert "AWS_ENDPOINT_URL_DYNAMODB" not in os.environ


def test_invoke_refuses_a_file_that_is_not_an_sqs_event(aws: Aws, tmp_path: Path) -> None:
    event_file = tmp_path / "event.json"
    event_file.write_text(json.dumps({"detail": {}}))

    result = run("invoke", "-e", str(event_file))

    assert result.exit_code == 2
    assert "not an SQS event" in result.stderr


@pytest.mark.parametrize("event_file", EVENT_FILES, ids=lambda path: path.name)
def test_invoke_runs_the_documented_events(aws: Aws, event_file: Path) -> None:
    # Given the inventory the examples are written for
    seed_events(aws)
    records = json.loads(event_file.read_text())["Records"]

    # When the example is invoked
    result, outcomes = invoke_collecting(aws, "-e", str(event_file))

    # Then nothing is handed back for retry and every message got exactly one answer
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {"batchItemFailures": []}
    assert len(outcomes) == len(records)
    expected = EXPECTED_OUTCOMES.get(event_file.name)
    if expected is not None:
        assert Counter(o["outcome"] for o in outcomes) == Counter(expected)


def test_invoke_with_the_local_env_vars_file(aws: Aws, monkeypatch: pytest.MonkeyPatch) -> None:
    # Given resources named as events/env.local.json names them, and no names in the environment
    function_env = json.loads((EVENTS / "env.local.json").read_text())["ReserveSeatsFunction"]
    topic_name = function_env["OUTCOMES_TOPIC_ARN"].rsplit(":", 1)[-1]
    aws.topic_arn = aws.sns.create_topic(Name=topic_name)["TopicArn"]
    assert aws.topic_arn == function_env["OUTCOMES_TOPIC_ARN"]
    aws.dynamodb.create_table(
        **load_template(REPO / "template.yaml").table_create_request(function_env["TABLE_NAME"])
    )
    OperatorTable(aws.dynamodb, function_env["TABLE_NAME"]).create_seat_class(
        SeatKey("concert-2026", "GA"), 10
    )
    monkeypatch.delenv("TABLE_NAME")
    monkeypatch.delenv("OUTCOMES_TOPIC_ARN")

    # When the single-reservation example is invoked with that file, as a user without Docker would
    result, outcomes = invoke_collecting(
        aws, "-e", str(EVENTS / "reserve_single.json"), "--env-vars", str(EVENTS / "env.local.json")
    )

    # Then the file's table and topic were used and its container-only endpoints were not
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {"batchItemFailures": []}
    assert [o["outcome"] for o in outcomes] == ["CONFIRMED"]
    assert "host.docker.internal" in result.stderr


def test_invoke_runs_an_api_proxy_event_through_the_gate_s_function(aws: Aws) -> None:
    """events/gate_*.json: API Gateway proxy events, run through the gate's handler (here the
    event has no check-in list and no reservation: each answered so, in one line)."""
    result = run("invoke", "-e", str(EVENTS / "gate_checkin.json"))
    assert result.exit_code == 0, result.output
    response = json.loads(result.stdout)
    answer = json.loads(response["body"])
    assert (response["statusCode"], answer["result"]) == (200, "UNKNOWN_LIST")
    result = run("invoke", "-e", str(EVENTS / "gate_tickets.json"))
    assert json.loads(result.stdout)["statusCode"] == 404
