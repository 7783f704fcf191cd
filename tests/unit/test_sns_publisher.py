"""The SNS publisher on a stubbed client: a call refused for the publish rate is sent again while the
caller allows it; any other failure is returned at once."""

from __future__ import annotations

import threading
import time
import urllib.parse
from unittest import mock

import boto3
from botocore import awsrequest
from botocore.awsrequest import AWSResponse
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


def test_a_publication_started_soon_runs_while_the_caller_goes_on_and_returns_what_publish_would() -> None:
    client, stub = client_and_stub()
    release = threading.Event()
    calling = threading.Event()

    def hold_the_call(**_):  # type: ignore[no-untyped-def]
        calling.set()
        assert release.wait(5)

    client.meta.events.register("before-parameter-build.sns.PublishBatch", hold_the_call)
    expect_throttled(stub)
    expect_accepted(stub, 1)
    stub.add_client_error("publish_batch", service_error_code="AuthorizationError", http_status_code=403)
    waits: list[int] = []

    with stub:
        publisher = SnsOutcomePublisher(client, TOPIC)
        first = publisher.publish_soon([outcome(1)], retry_throttled=lambda n: waits.append(n) or True)
        assert calling.wait(5)  # the call is under way on its own thread; the caller goes on
        second = publisher.publish_soon([outcome(2)])
        release.set()
        assert first.wait() == []
        assert second.wait() == [outcome(2)]
    assert waits == [0]
    stub.assert_no_pending_responses()


def test_a_publication_under_way_does_not_hold_up_the_next_parts_calls() -> None:
    client, stub = client_and_stub()
    release = threading.Event()
    held = {"now": 0, "ever": 0}
    lock = threading.Lock()

    def hold_the_first_ten_calls(**_):  # type: ignore[no-untyped-def]
        with lock:
            if held["ever"] == 10:
                return
            held["ever"] += 1
            held["now"] += 1
        release.wait(5)
        with lock:
            held["now"] -= 1

    client.meta.events.register("before-parameter-build.sns.PublishBatch", hold_the_first_ten_calls)
    for _ in range(12):
        expect_accepted(stub, 10)

    with stub:
        publisher = SnsOutcomePublisher(client, TOPIC)
        under_way = publisher.publish_soon([outcome(n) for n in range(99)])  # ten calls, all held
        deadline = time.monotonic() + 5
        while held["now"] < 10 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert held["now"] == 10
        # the first part's ten calls are all out: the next part's two calls go out on their own
        assert publisher.publish([outcome(n) for n in range(100, 120)]) == []
        assert held["now"] == 10
        release.set()
        assert under_way.wait() == []
    stub.assert_no_pending_responses()


SUCCESS_XML = (
    b'<PublishBatchResponse xmlns="http://sns.amazonaws.com/doc/2010-03-31/"><PublishBatchResult>'
    b"<Successful>%s</Successful><Failed/></PublishBatchResult>"
    b"<ResponseMetadata><RequestId>x</RequestId></ResponseMetadata></PublishBatchResponse>"
)


def sent_bodies(*, encoded_once: bool) -> tuple[list[bytes], int]:
    """The bodies a publisher's calls put on the wire for 25 outcomes (one of a seat class whose
    name is not ASCII: it is a message attribute), and how many times botocore URL-encoded a body while making them."""
    client = boto3.client("sns", region_name="us-east-1", aws_access_key_id="k", aws_secret_access_key="s")
    bodies: list[bytes] = []

    def answer(request, **_):  # type: ignore[no-untyped-def]
        body = request.body if isinstance(request.body, bytes) else request.body.encode()
        bodies.append(body)
        entries = urllib.parse.parse_qs(body.decode())
        ids = [v[0] for k, v in entries.items() if k.endswith(".Id")]
        members = b"".join(b"<member><Id>%s</Id><MessageId>m</MessageId></member>" % i.encode() for i in ids)
        return AWSResponse(request.url, 200, {}, _Raw(SUCCESS_XML % members))

    client.meta.events.register("before-send.sns.PublishBatch", answer)
    outcomes = [outcome(n) for n in range(24)] + [
        ReservationOutcome("r-é", Outcome.SOLD_OUT, "sold out: ø", "e", "Zoë & co", 1, "c", message_id="m-ü")
    ]
    real = awsrequest.urlencode
    counted = {"calls": 0}

    def counting(*args, **kwargs):  # type: ignore[no-untyped-def]
        counted["calls"] += 1
        return real(*args, **kwargs)

    with mock.patch.object(awsrequest, "urlencode", counting):
        if encoded_once:
            failed = SnsOutcomePublisher(client, TOPIC, max_concurrent_calls=1).publish(outcomes)
        else:
            with mock.patch("seat_inventory.publishing.sns_publisher.encode_body_once"):
                failed = SnsOutcomePublisher(client, TOPIC, max_concurrent_calls=1).publish(outcomes)
    assert failed == []
    return sorted(bodies), counted["calls"]


class _Raw:
    def __init__(self, data: bytes) -> None:
        self._data = data

    def stream(self, **_):  # type: ignore[no-untyped-def]
        yield self._data


def test_each_body_is_encoded_once_and_the_bytes_sent_are_botocores_own() -> None:
    hooked, hooked_encodings = sent_bodies(encoded_once=True)
    plain, plain_encodings = sent_bodies(encoded_once=False)
    assert len(hooked) == 3
    assert hooked == plain
    assert any(b"Zo%C3%AB+%26+co" in body for body in hooked)
    assert hooked_encodings == 0
    assert plain_encodings >= 3 * 3


def test_the_hook_is_registered_once_however_many_publishers_share_a_client() -> None:
    client = boto3.client("sns", region_name="us-east-1", aws_access_key_id="k", aws_secret_access_key="s")
    for _ in range(3):
        SnsOutcomePublisher(client, TOPIC)
    handlers = [
        h for h in client.meta.events._emitter._handlers.prefix_search("request-created.sns.PublishBatch")
    ]
    assert sum(1 for h in handlers if getattr(h, "__name__", "") == "_encode_form_body") == 1
