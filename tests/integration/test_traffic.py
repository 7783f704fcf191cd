"""seat_tools.traffic against moto: bursts, sending, outcome collection, dead letters."""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

from seat_inventory.models import Outcome, ReservationOutcome, ReservationRequest
from seat_inventory.parsing import parse_reservation
from seat_inventory.publishing.sns_publisher import SnsOutcomePublisher
from seat_tools import traffic
from seat_tools.traffic import (
    OutcomeCollector,
    RedriveIncomplete,
    peek_dead_letters,
    plan_burst,
    redrive_dead_letters,
    reservation_body,
    send_messages,
)

REGION = "us-east-1"


@pytest.fixture
def moto_aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Fake credentials, no endpoint overrides, and every AWS call answered by moto."""
    for name in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_SNS", "AWS_ENDPOINT_URL_SQS", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    # moto answers a short poll exactly, so the one-second "is it really empty" wait is not needed.
    monkeypatch.setattr(traffic, "EMPTY_QUEUE_WAIT_S", 0)
    monkeypatch.setattr(traffic, "SEND_BACKOFF_S", 0.001)
    with mock_aws():
        yield


@pytest.fixture
def sqs(moto_aws: None) -> Any:
    return boto3.client("sqs", region_name=REGION)


@pytest.fixture
def sns(moto_aws: None) -> Any:
    return boto3.client("sns", region_name=REGION)


@pytest.fixture
def topic_arn(sns: Any) -> str:
    return sns.create_topic(Name="seat-inventory-outcomes")["TopicArn"]


def drain(sqs: Any, queue_url: str) -> list[dict[str, Any]]:
    """Every message of a queue (consumed), for assertions."""
    messages: list[dict[str, Any]] = []
    while True:
        batch = sqs.receive_message(
            QueueUrl=queue_url, MaxNumberOfMessages=10, MessageAttributeNames=["All"]
        ).get("Messages", [])
        if not batch:
            return messages
        messages.extend(batch)
        sqs.delete_message_batch(
            QueueUrl=queue_url,
            Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(batch)],
        )


def visible(sqs: Any, queue_url: str) -> int:
    return int(
        sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["ApproximateNumberOfMessages"])[
            "Attributes"
        ]["ApproximateNumberOfMessages"]
    )


def outcome(reservation_id: str, kind: Outcome, event_id: str = "concert-2026") -> ReservationOutcome:
    return ReservationOutcome(
        reservation_id=reservation_id,
        outcome=kind,
        reason="test",
        event_id=event_id,
        seat_class="GA",
        quantity=2,
        customer_id="c-1",
        remaining=0 if kind is Outcome.SOLD_OUT else 8,
    )


# --------------------------------------------------------------------------- bodies and bursts


@pytest.mark.parametrize("seat_class", [None, "VIP"])
def test_reservation_body_is_accepted_by_the_service_parser(seat_class: str | None) -> None:
    # Given a body built by the traffic library
    body = reservation_body("r-1", "concert-2026", 3, "c-9", seat_class=seat_class)

    # When the service parses it
    parsed = parse_reservation("m-1", json.dumps(body), default_seat_class="GA", max_quantity=10)

    # Then it is a valid request with exactly those fields (the default class when none is named)
    assert parsed == ReservationRequest("m-1", "r-1", "concert-2026", seat_class or "GA", 3, "c-9")
    assert ("seat_class" in body) is (seat_class is not None)


def test_plan_burst_has_the_requested_duplicates_each_after_its_original() -> None:
    # Given a burst of 200 requests with 15 % duplicates
    bodies = plan_burst("concert-2026", 200, duplicates_pct=15, max_quantity=6, seed=7, id_prefix="t")

    # Then there are 200 bodies, of which round(200 * 15 / 100) = 30 repeat a reservation id
    assert len(bodies) == 200
    ids = [body["reservation_id"] for body in bodies]
    assert len(set(ids)) == 170
    assert sum(count - 1 for count in Counter(ids).values()) == 30
    # and every repeat is an exact copy of a body sent earlier in the list
    first_seen: dict[str, dict[str, Any]] = {}
    for body in bodies:
        original = first_seen.setdefault(body["reservation_id"], body)
        assert body == original
    # and ids are prefix + counter, all valid for the service
    assert all(rid.startswith("t-") for rid in ids)
    for body in first_seen.values():
        assert isinstance(
            parse_reservation("m", json.dumps(body), default_seat_class="GA", max_quantity=6),
            ReservationRequest,
        )


def test_plan_burst_quantities_and_customers() -> None:
    # Given a burst without duplicates and the default 20 % multi-seat share
    bodies = plan_burst("concert-2026", 100, max_quantity=4, seed=1, seat_class="VIP")

    # Then exactly round(100 * 0.2) = 20 ask for 2..4 seats and the rest for one
    quantities = [body["quantity"] for body in bodies]
    assert sum(1 for q in quantities if q >= 2) == 20
    assert set(quantities) <= {1, 2, 3, 4}
    assert quantities.count(1) == 80
    # and customers vary, and every body names the seat class
    assert len({body["customer_id"] for body in bodies}) > 10
    assert {body["seat_class"] for body in bodies} == {"VIP"}


def test_plan_burst_is_deterministic_for_a_seed_and_runs_do_not_collide() -> None:
    # Given the same seed and prefix twice, and a different seed
    first = plan_burst("e", 120, duplicates_pct=25, seed=42, id_prefix="p")
    again = plan_burst("e", 120, duplicates_pct=25, seed=42, id_prefix="p")
    other = plan_burst("e", 120, duplicates_pct=25, seed=43, id_prefix="p")

    # Then the same seed gives the same list, another seed another one
    assert first == again
    assert first != other

    # And without a prefix two runs never share a reservation id, though their shape is the same
    run_a = plan_burst("e", 50, duplicates_pct=10, seed=42)
    run_b = plan_burst("e", 50, duplicates_pct=10, seed=42)
    assert not {b["reservation_id"] for b in run_a} & {b["reservation_id"] for b in run_b}
    assert [b["quantity"] for b in run_a] == [b["quantity"] for b in run_b]


def test_plan_burst_edges() -> None:
    # 100 % duplicates still needs one original to duplicate
    all_dupes = plan_burst("e", 10, duplicates_pct=100, id_prefix="x")
    assert len(all_dupes) == 10
    assert len({b["reservation_id"] for b in all_dupes}) == 1
    # nothing asked, nothing planned; one seat per request when max_quantity is 1
    assert plan_burst("e", 0) == []
    assert {b["quantity"] for b in plan_burst("e", 30, max_quantity=1, multi_seat_share=1)} == {1}
    # out-of-range arguments are refused rather than silently clamped
    for kwargs in (
        {"duplicates_pct": 101},
        {"multi_seat_share": 1.5},
        {"max_quantity": 0},
        {"id_prefix": "#bad"},
    ):
        with pytest.raises(ValueError):
            plan_burst("e", 5, **kwargs)


# --------------------------------------------------------------------------- sending


def test_send_messages_delivers_every_body_once(sqs: Any) -> None:
    # Given a queue and 45 bodies (five batches, the last one partial)
    queue_url = sqs.create_queue(QueueName="reservations")["QueueUrl"]
    bodies = plan_burst("concert-2026", 45, duplicates_pct=10, seed=3, id_prefix="s")
    progress: list[int] = []

    # When they are sent from four threads
    report = send_messages(sqs, queue_url, bodies, concurrency=4, on_sent=progress.append)

    # Then all were sent, progress added up to all, and the queue holds exactly those bodies
    assert (report.sent, report.failed, report.first_error) == (45, 0, None)
    assert sum(progress) == 45
    assert all(0 < n <= 10 for n in progress)
    received = Counter(json.dumps(json.loads(m["Body"]), sort_keys=True) for m in drain(sqs, queue_url))
    assert received == Counter(json.dumps(body, sort_keys=True) for body in bodies)


class FlakySqs:
    """Wraps a moto client; the first SendMessageBatch call reports some entries as failed."""

    def __init__(self, client: Any, *, fail_ids: set[str], sender_fault: bool) -> None:
        self._client = client
        self._fail_ids = fail_ids
        self._sender_fault = sender_fault
        self.calls = 0

    def send_message_batch(self, QueueUrl: str, Entries: list[dict[str, Any]]) -> dict[str, Any]:
        self.calls += 1
        if self.calls > 1 and not self._sender_fault:
            return self._client.send_message_batch(QueueUrl=QueueUrl, Entries=Entries)
        keep = [e for e in Entries if e["Id"] not in self._fail_ids]
        response = self._client.send_message_batch(QueueUrl=QueueUrl, Entries=keep) if keep else {}
        failed = [
            {"Id": e["Id"], "SenderFault": self._sender_fault, "Code": "InternalError", "Message": "injected"}
            for e in Entries
            if e["Id"] in self._fail_ids
        ]
        return {"Successful": response.get("Successful", []), "Failed": failed}


def test_send_messages_retries_entries_sqs_could_not_take(sqs: Any) -> None:
    # Given SQS refuses three entries of the batch once, for a reason of its own
    queue_url = sqs.create_queue(QueueName="reservations")["QueueUrl"]
    flaky = FlakySqs(sqs, fail_ids={"1", "4", "9"}, sender_fault=False)
    bodies = plan_burst("e", 10, id_prefix="f")

    # When the batch is sent
    report = send_messages(flaky, queue_url, bodies, concurrency=1)

    # Then the refused entries were sent again, once each, and nothing is missing or doubled
    assert (report.sent, report.failed) == (10, 0)
    assert flaky.calls == 2
    assert sorted(json.loads(m["Body"])["reservation_id"] for m in drain(sqs, queue_url)) == sorted(
        b["reservation_id"] for b in bodies
    )


def test_send_messages_counts_what_cannot_be_sent(sqs: Any) -> None:
    # Given SQS refuses two entries because of the messages themselves (a sender fault)
    queue_url = sqs.create_queue(QueueName="reservations")["QueueUrl"]
    flaky = FlakySqs(sqs, fail_ids={"0", "3"}, sender_fault=True)

    # When they are sent
    report = send_messages(flaky, queue_url, plan_burst("e", 10, id_prefix="g"), concurrency=1)

    # Then they are not retried (it could not help) and are counted, with the reason
    assert (report.sent, report.failed) == (8, 2)
    assert flaky.calls == 1
    assert report.first_error is not None and "InternalError" in report.first_error
    assert visible(sqs, queue_url) == 8


def test_send_messages_to_a_missing_queue_fails_everything_without_retrying(sqs: Any) -> None:
    # Given a queue URL that does not exist (a 4xx error: retrying cannot help)
    missing = sqs.create_queue(QueueName="gone")["QueueUrl"]
    sqs.delete_queue(QueueUrl=missing)

    # When 25 bodies are sent (each HTTP attempt counted, botocore's own retries included)
    attempts: list[str] = []
    sqs.meta.events.register("before-send.sqs.SendMessageBatch", lambda **_: attempts.append("send"))
    report = send_messages(sqs, missing, plan_burst("e", 25, id_prefix="h"), concurrency=2)

    # Then all 25 are reported failed with the error code, after one attempt per batch of ten
    assert (report.sent, report.failed) == (0, 25)
    assert report.first_error is not None and "NonExistentQueue" in report.first_error
    assert len(attempts) == 3


# --------------------------------------------------------------------------- collecting outcomes


def test_collector_honours_the_outcome_filter_and_cleans_up(sns: Any, sqs: Any, topic_arn: str) -> None:
    publisher = SnsOutcomePublisher(sns, topic_arn)
    # Given a collector for SOLD_OUT only, and one for everything
    with (
        OutcomeCollector(sns, sqs, topic_arn, outcome="SOLD_OUT") as sold_out,
        OutcomeCollector(sns, sqs, topic_arn) as everything,
    ):
        # When a SOLD_OUT and a CONFIRMED outcome are published
        assert publisher.publish([outcome("r-1", Outcome.SOLD_OUT), outcome("r-2", Outcome.CONFIRMED)]) == []

        # Then the filtered collector gets only the SOLD_OUT document, the other both
        got = sold_out.collect(until=lambda docs: len(docs) >= 1, timeout_s=1)
        got += sold_out.collect(until=lambda docs: False, timeout_s=0.3, idle_s=0.2)
        both = everything.collect(until=lambda docs: len(docs) >= 2, timeout_s=1)
        assert [(d["reservation_id"], d["outcome"]) for d in got] == [("r-1", "SOLD_OUT")]
        assert sorted(d["outcome"] for d in both) == ["CONFIRMED", "SOLD_OUT"]
        assert got[0]["remaining"] == 0
        # and the subscriptions use raw delivery and the filter policy
        attrs = sns.get_subscription_attributes(SubscriptionArn=sold_out.subscription_arn)["Attributes"]
        assert attrs["RawMessageDelivery"] == "true"
        assert json.loads(attrs["FilterPolicy"]) == {"outcome": ["SOLD_OUT"]}
        queue_names = {sold_out.queue_name, everything.queue_name}

    # And after the block no subscription and no temporary queue is left
    assert sns.list_subscriptions_by_topic(TopicArn=topic_arn)["Subscriptions"] == []
    assert not any(url.rsplit("/", 1)[-1] in queue_names for url in sqs.list_queues().get("QueueUrls", []))


def test_collector_filters_on_event_id(sns: Any, sqs: Any, topic_arn: str) -> None:
    # Given a collector for one event
    with OutcomeCollector(sns, sqs, topic_arn, event_id="match-1") as collector:
        # When outcomes of two events are published
        SnsOutcomePublisher(sns, topic_arn).publish(
            [outcome("r-1", Outcome.CONFIRMED, "match-1"), outcome("r-2", Outcome.CONFIRMED, "match-2")]
        )
        got = collector.collect(until=lambda docs: False, timeout_s=0.5, idle_s=0.3)

    # Then only that event's outcome arrived
    assert [d["reservation_id"] for d in got] == ["r-1"]


def test_collector_removes_subscription_and_queue_on_interrupt(sns: Any, sqs: Any, topic_arn: str) -> None:
    # Given a collector interrupted by Ctrl-C inside its block
    with (
        pytest.raises(KeyboardInterrupt),
        OutcomeCollector(sns, sqs, topic_arn, queue_name="interrupted") as c,
    ):
        assert c.queue_url is not None
        raise KeyboardInterrupt

    # Then its subscription and queue are gone anyway
    assert sns.list_subscriptions_by_topic(TopicArn=topic_arn)["Subscriptions"] == []
    with pytest.raises(ClientError):
        sqs.get_queue_url(QueueName="interrupted")


def test_collector_does_not_leave_a_queue_when_subscribing_fails(sns: Any, sqs: Any) -> None:
    # Given a topic that does not exist
    missing_topic = "arn:aws:sns:us-east-1:123456789012:no-such-topic"

    # When the collector is entered, subscribing fails
    with pytest.raises(ClientError), OutcomeCollector(sns, sqs, missing_topic, queue_name="orphan"):
        pass

    # Then the queue it had created was deleted
    with pytest.raises(ClientError):
        sqs.get_queue_url(QueueName="orphan")


def test_collect_stops_when_idle(sns: Any, sqs: Any, topic_arn: str) -> None:
    # Given nothing is published
    with OutcomeCollector(sns, sqs, topic_arn) as collector:
        started = time.monotonic()
        # When collecting with a long timeout but a short idle limit
        got = collector.collect(until=lambda docs: False, timeout_s=30, idle_s=0.3)
    # Then it returns empty after about the idle time
    assert got == []
    # Far short of the 30 s timeout, with room for a loaded machine.
    assert time.monotonic() - started < 10


# --------------------------------------------------------------------------- dead letters


def fill(sqs: Any, queue_url: str, count: int, *, prefix: str = "d") -> list[str]:
    bodies = [
        json.dumps(reservation_body(f"{prefix}-{i}", "concert-2026", 1, f"c-{i}")) for i in range(count)
    ]
    for start in range(0, count, 10):
        sqs.send_message_batch(
            QueueUrl=queue_url,
            Entries=[
                {"Id": str(i), "MessageBody": body} for i, body in enumerate(bodies[start : start + 10])
            ],
        )
    return bodies


def test_peek_reads_every_dead_letter_without_consuming(sqs: Any) -> None:
    # Given 25 dead letters
    dlq_url = sqs.create_queue(QueueName="dlq")["QueueUrl"]
    bodies = fill(sqs, dlq_url, 25)

    # When they are peeked at twice
    first = peek_dead_letters(sqs, dlq_url)
    second = peek_dead_letters(sqs, dlq_url)

    # Then each peek saw all 25 (not the same ten again and again), with their details
    assert sorted(letter["body"] for letter in first) == sorted(bodies)
    assert {letter["message_id"] for letter in second} == {letter["message_id"] for letter in first}
    assert all(letter["receive_count"] >= 1 for letter in first)
    assert all(letter["sent_at"] and letter["sent_at"].endswith("+00:00") for letter in first)
    # and every message is still there and visible
    assert visible(sqs, dlq_url) == 25
    assert len(drain(sqs, dlq_url)) == 25


def test_peek_respects_max_messages(sqs: Any) -> None:
    dlq_url = sqs.create_queue(QueueName="dlq")["QueueUrl"]
    fill(sqs, dlq_url, 15)

    letters = peek_dead_letters(sqs, dlq_url, max_messages=7)

    assert len(letters) == 7
    assert visible(sqs, dlq_url) == 15


def test_redrive_moves_every_dead_letter_back(sqs: Any) -> None:
    # Given 23 dead letters, one with a message attribute
    dlq_url = sqs.create_queue(QueueName="dlq")["QueueUrl"]
    queue_url = sqs.create_queue(QueueName="reservations")["QueueUrl"]
    bodies = fill(sqs, dlq_url, 22)
    sqs.send_message(
        QueueUrl=dlq_url,
        MessageBody=bodies[0].replace("d-0", "d-attr"),
        MessageAttributes={"producer": {"DataType": "String", "StringValue": "box-office"}},
    )

    # When they are redriven
    moved = redrive_dead_letters(sqs, dlq_url, queue_url)

    # Then all 23 moved, the DLQ is empty and the queue has the same bodies and attributes
    assert moved == 23
    assert visible(sqs, dlq_url) == 0
    messages = drain(sqs, queue_url)
    assert sorted(m["Body"] for m in messages) == sorted([*bodies, bodies[0].replace("d-0", "d-attr")])
    with_attrs = [m for m in messages if "d-attr" in m["Body"]]
    assert with_attrs[0]["MessageAttributes"]["producer"]["StringValue"] == "box-office"


def test_redrive_moves_at_most_max_messages(sqs: Any) -> None:
    dlq_url = sqs.create_queue(QueueName="dlq")["QueueUrl"]
    queue_url = sqs.create_queue(QueueName="reservations")["QueueUrl"]
    fill(sqs, dlq_url, 18)

    assert redrive_dead_letters(sqs, dlq_url, queue_url, max_messages=5) == 5

    assert visible(sqs, queue_url) == 5
    assert visible(sqs, dlq_url) == 13


def test_redrive_to_a_missing_queue_keeps_the_dead_letters(sqs: Any) -> None:
    # Given a target queue that does not exist
    dlq_url = sqs.create_queue(QueueName="dlq")["QueueUrl"]
    gone = sqs.create_queue(QueueName="gone")["QueueUrl"]
    sqs.delete_queue(QueueUrl=gone)
    fill(sqs, dlq_url, 4)

    # When redriving, it stops with an error
    with pytest.raises(RedriveIncomplete) as raised:
        redrive_dead_letters(sqs, dlq_url, gone)

    # Then nothing moved and every dead letter is still there, visible
    assert raised.value.moved == 0
    assert visible(sqs, dlq_url) == 4
