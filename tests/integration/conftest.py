"""moto-backed fixtures: resources built from template.yaml, the real handler, outcome capture, faults.

Faults are injected with botocore's own event hooks on the session the handler's clients are
built from: a `before-call` hook that returns an error response makes the real client raise the
real `ClientError`, and an `after-call` hook that raises simulates a crash after AWS committed.
"""

from __future__ import annotations

import dataclasses
import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from seat_inventory.handlers import reserve_seats as handler_module
from seat_inventory.settings import Settings
from seat_inventory.wiring import Adapters, SystemClock, build_adapters
from tests.template_support import load_template

REPO = Path(__file__).resolve().parents[2]
EVENTS = REPO / "events"
REGION = "us-east-1"


@pytest.fixture(scope="session")
def template() -> Any:
    return load_template(REPO / "template.yaml")


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in (
        "AWS_ENDPOINT_URL",
        "AWS_ENDPOINT_URL_DYNAMODB",
        "AWS_ENDPOINT_URL_SNS",
        "AWS_ENDPOINT_URL_SQS",
        "AWS_ENDPOINT_URL_SSM",
        "AWS_PROFILE",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    with mock_aws():
        yield


@dataclass
class Faults:
    """botocore hooks on the handler's session: `fail(...)` makes calls fail, `crash_after(...)` raises after success."""

    session: boto3.session.Session
    calls: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.session.events.register("before-call", self._count)

    def _count(self, model: Any, **_: Any) -> None:
        self.calls.append(model.name)

    def fail(
        self,
        service_operation: str,
        code: str,
        *,
        times: int = 1,
        when: Callable[[dict[str, Any]], bool] | None = None,
    ) -> None:
        """Makes the next `times` calls (matching `when`, which sees the serialized request) fail with `code`."""
        remaining = [times]
        lock = threading.Lock()  # the SNS publisher makes its calls from several threads

        def hook(params: dict[str, Any], **_: Any) -> Any:
            if when is not None and not when(params):
                return None
            with lock:
                if remaining[0] <= 0:
                    return None
                remaining[0] -= 1
            return (FakeHttpResponse(400), {"Error": {"Code": code, "Message": f"injected {code}"}})

        self.session.events.register(f"before-call.{service_operation}", hook)

    def crash_after(self, service_operation: str, *, times: int = 1) -> None:
        remaining = [times]
        lock = threading.Lock()

        def hook(**_: Any) -> None:
            with lock:
                crash = remaining[0] > 0
                remaining[0] -= crash
            if crash:
                raise SimulatedCrash(f"crashed after {service_operation} succeeded")

        self.session.events.register(f"after-call.{service_operation}", hook)


class SimulatedCrash(Exception):
    """Raised from an after-call hook: the AWS call committed, the function died before going on."""


class MovableClock(SystemClock):
    """The time the functions see, moved only by the test; `sleep` (the back-off after a transaction
    conflict) returns at once and is only counted."""

    def __init__(self, start: float) -> None:
        self.time = start
        self.slept = 0.0

    def now(self) -> float:
        return self.time

    def sleep(self, seconds: float) -> None:
        self.slept += seconds

    def advance(self, seconds: float) -> None:
        self.time += seconds


def adapters_factory(
    session: boto3.session.Session, clock: SystemClock | None = None
) -> Callable[..., Adapters]:
    """A `build_adapters` for a handler module to be patched with: clients from `session`, and
    `clock`; the pool sizes a handler passes (the issuer's) are passed on."""

    def factory(settings: Settings, **pools: int) -> Adapters:
        adapters = build_adapters(settings, session, **pools)
        return adapters if clock is None else dataclasses.replace(adapters, clock=clock)

    return factory


@dataclass
class FakeHttpResponse:
    status_code: int
    headers: dict[str, str] = field(default_factory=dict)
    content: bytes = b""


@dataclass
class LambdaContext:
    function_name: str = "ReserveSeatsFunction"
    function_version: str = "$LATEST"
    invoked_function_arn: str = "arn:aws:lambda:us-east-1:123456789012:function:ReserveSeatsFunction"
    memory_limit_in_mb: int = 512
    aws_request_id: str = "00000000-0000-0000-0000-000000000000"
    log_group_name: str = "/aws/lambda/ReserveSeatsFunction"
    log_stream_name: str = "local"

    def get_remaining_time_in_millis(self) -> int:
        return 30_000


@dataclass
class Stack:
    """The moto resources and the way to drive the real handler against them."""

    table_name: str
    topic_arn: str
    outcomes_queue_url: str
    faults: Faults
    sqs: Any
    dynamodb: Any

    def invoke(self, event: dict[str, Any]) -> dict[str, Any]:
        return handler_module.lambda_handler(event, LambdaContext())

    def outcomes(self) -> list[dict[str, Any]]:
        """Everything published to the topic since the last call, via a raw-delivery SQS subscription."""
        documents: list[dict[str, Any]] = []
        while True:
            messages = self.sqs.receive_message(QueueUrl=self.outcomes_queue_url, MaxNumberOfMessages=10).get(
                "Messages", []
            )
            if not messages:
                return documents
            for message in messages:
                documents.append(json.loads(message["Body"]))
                self.sqs.delete_message(
                    QueueUrl=self.outcomes_queue_url, ReceiptHandle=message["ReceiptHandle"]
                )

    def create_event(self, event_id: str, capacity: int, seat_class: str = "GA") -> None:
        from seat_inventory.models import SeatKey
        from seat_tools.operator_commands import OperatorTable

        OperatorTable(self.dynamodb, self.table_name).create_seat_class(
            SeatKey(event_id, seat_class), capacity
        )

    def inventory(self, event_id: str, seat_class: str = "GA") -> dict[str, int]:
        from seat_tools.operator_commands import OperatorTable

        for c in OperatorTable(self.dynamodb, self.table_name).get_event(event_id):
            if c.seat_class == seat_class:
                return {"capacity": c.capacity, "available": c.available, "sold": c.sold}
        raise KeyError(event_id)


def create_table_from_template(client: Any, template: Any, name: str) -> None:
    """The table exactly as template.yaml defines it (keys, attributes, billing, TTL, indexes)."""
    client.create_table(**template.table_create_request(name))
    ttl = template.table_ttl_attribute
    if ttl:
        client.update_time_to_live(
            TableName=name, TimeToLiveSpecification={"Enabled": True, "AttributeName": ttl}
        )


@pytest.fixture
def stack(aws: None, template: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[Stack]:
    session = boto3.session.Session(region_name=REGION)
    dynamodb = session.client("dynamodb")
    sns = session.client("sns")
    sqs = session.client("sqs")
    table_name = "seat-inventory-test"
    create_table_from_template(dynamodb, template, table_name)
    topic_arn = sns.create_topic(Name="seat-inventory-outcomes")["TopicArn"]
    queue_url = sqs.create_queue(QueueName="outcomes-subscriber")["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    sns.subscribe(
        TopicArn=topic_arn, Protocol="sqs", Endpoint=queue_arn, Attributes={"RawMessageDelivery": "true"}
    )

    for name, value in template.function_environment(
        overrides={"TABLE_NAME": table_name, "OUTCOMES_TOPIC_ARN": topic_arn}
    ).items():
        monkeypatch.setenv(name, str(value))
    handler_session = boto3.session.Session(region_name=REGION)
    monkeypatch.setattr(
        handler_module, "build_adapters", lambda settings: build_adapters(settings, handler_session)
    )
    handler_module.reset_container()
    yield Stack(table_name, topic_arn, queue_url, Faults(handler_session), sqs, dynamodb)
    handler_module.reset_container()


def load_event(name: str) -> dict[str, Any]:
    return json.loads((EVENTS / name).read_text())


def sqs_event(*bodies: Any, receive_count: int = 1) -> dict[str, Any]:
    """A minimal SQS Lambda event with one record per body (dicts are JSON-encoded)."""
    return {
        "Records": [
            {
                "messageId": f"msg-{index}",
                "receiptHandle": f"rh-{index}",
                "body": body if isinstance(body, str) else json.dumps(body),
                "attributes": {"ApproximateReceiveCount": str(receive_count)},
                "messageAttributes": {},
                "eventSource": "aws:sqs",
                "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:reservations",
                "awsRegion": REGION,
            }
            for index, body in enumerate(bodies)
        ]
    }
