"""The benchmark's request counter: what it takes from botocore's events.

DynamoDB answers are served at the HTTP level (a `before-send` handler returning a raw response),
so botocore parses them, retries them and emits each attempt's events as with a real endpoint.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.awsrequest import AWSResponse
from botocore.config import Config
from botocore.stub import Stubber

from seat_tools.bench.counting import (
    RequestCounter,
    add_snapshots,
    latency_bucket,
    latency_percentile,
)
from seat_tools.bench.pricing import billed_write_units

RECORD = {"pk": {"S": "RESERVATION#r-1"}, "sk": {"S": "RESERVATION"}, "outcome": {"S": "SOLD_OUT"}}
INVENTORY_KEY = {"pk": {"S": "EVENT#e-1"}, "sk": {"S": "CLASS#GA"}}
INVENTORY_UPDATE = {
    "Update": {
        "TableName": "t",
        "Key": INVENTORY_KEY,
        "UpdateExpression": "SET available = available - :n",
        "ConditionExpression": "available >= :n",
        "ExpressionAttributeValues": {":n": {"N": "1"}},
    }
}
TRANSACTION: list[dict[str, Any]] = [INVENTORY_UPDATE, {"Put": {"TableName": "t", "Item": RECORD}}]
CREDENTIALS = {"region_name": "us-east-1", "aws_access_key_id": "test", "aws_secret_access_key": "test"}


class _Body:
    def __init__(self, content: bytes) -> None:
        self.content = content

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield self.content


class ScriptedDynamoDB:
    """Answers each HTTP request to DynamoDB with the next scripted (status, JSON body)."""

    def __init__(self, client: Any) -> None:
        self.replies: list[tuple[int, dict[str, Any]]] = []
        client.meta.events.register("before-send.dynamodb", self)

    def ok(self, body: dict[str, Any] | None = None) -> None:
        self.replies.append((200, body or {}))

    def error(self, status: int, code: str, **fields: Any) -> None:
        self.replies.append(
            (status, {"__type": f"com.amazonaws.dynamodb.v20120810#{code}", "message": code, **fields})
        )

    def __call__(self, request: Any, **_: Any) -> AWSResponse:
        status, body = self.replies.pop(0)
        headers = {"Content-Type": "application/x-amz-json-1.0"}
        return AWSResponse(request.url, status, headers, _Body(json.dumps(body).encode()))


@pytest.fixture
def dynamodb() -> tuple[Any, ScriptedDynamoDB, RequestCounter]:
    # One retry at most, so that a throttled call is two attempts and the test waits little.
    config = Config(retries={"mode": "standard", "max_attempts": 2})
    client = boto3.client("dynamodb", config=config, **CREDENTIALS)
    counter = RequestCounter()
    counter.register(client)
    return client, ScriptedDynamoDB(client), counter


def test_a_cancelled_transaction_is_counted_with_its_reasons_and_the_units_it_carried(dynamodb) -> None:
    client, engine, counter = dynamodb
    engine.error(
        400,
        "TransactionCanceledException",
        CancellationReasons=[{"Code": "TransactionConflict"}, {"Code": "None"}],
    )
    with pytest.raises(client.exceptions.TransactionCanceledException):
        client.transact_write_items(TransactItems=TRANSACTION)

    snapshot = counter.snapshot()
    assert snapshot["transactions"] == {"TransactionConflict": 1}
    assert snapshot["hot_item_transactions"] == {"TransactionConflict": 1}
    assert snapshot["cancelled_write_units"] == 4.0  # 2 for the inventory update, 2 for the record
    assert snapshot["dynamodb_errors"] == {"TransactWriteItems TransactionCanceledException": 1}
    assert snapshot["throttled_requests"] == 0
    # the request is still counted as sent and billed like any other
    assert snapshot["calls"] == {"dynamodb.TransactWriteItems": 1}
    assert snapshot["http_requests"] == {"dynamodb.TransactWriteItems": 1}
    assert snapshot["hot_item_writes"] == 2
    assert snapshot["put_write_units"] == 2.0


def test_committed_and_cancelled_transactions_add_up_to_the_attempts(dynamodb) -> None:
    client, engine, counter = dynamodb
    engine.ok()
    engine.error(
        400,
        "TransactionCanceledException",
        CancellationReasons=[{"Code": "ConditionalCheckFailed"}, {"Code": "None"}],
    )
    engine.ok()
    client.transact_write_items(TransactItems=TRANSACTION)
    with pytest.raises(client.exceptions.TransactionCanceledException):
        client.transact_write_items(TransactItems=TRANSACTION)
    client.transact_write_items(TransactItems=[{"Put": {"TableName": "t", "Item": RECORD}}])

    snapshot = counter.snapshot()
    assert snapshot["transactions"] == {"committed": 2, "ConditionalCheckFailed": 1}
    # the third touches no inventory item
    assert snapshot["hot_item_transactions"] == {"committed": 1, "ConditionalCheckFailed": 1}
    assert sum(snapshot["transactions"].values()) == snapshot["http_requests"]["dynamodb.TransactWriteItems"]
    assert snapshot["cancelled_write_units"] == 4.0


def test_a_throttled_attempt_that_botocore_retries_is_counted_once_per_attempt(dynamodb) -> None:
    client, engine, counter = dynamodb
    engine.error(400, "ThrottlingException")
    engine.ok()
    client.update_item(
        TableName="t",
        Key=INVENTORY_KEY,
        UpdateExpression="SET a = :a",
        ExpressionAttributeValues={":a": {"N": "1"}},
    )

    snapshot = counter.snapshot()
    assert snapshot["throttled_requests"] == 1
    assert snapshot["dynamodb_errors"] == {"UpdateItem ThrottlingException": 1}
    assert snapshot["http_requests"] == {"dynamodb.UpdateItem": 2}
    assert snapshot["calls"] == {"dynamodb.UpdateItem": 1}
    assert snapshot["transactions"] == {}


def test_a_transaction_cancelled_for_throttling_counts_as_throttled(dynamodb) -> None:
    client, engine, counter = dynamodb
    engine.error(
        400,
        "TransactionCanceledException",
        CancellationReasons=[{"Code": "ThrottlingError"}, {"Code": "None"}],
    )
    with pytest.raises(client.exceptions.TransactionCanceledException):
        client.transact_write_items(TransactItems=TRANSACTION)
    snapshot = counter.snapshot()
    assert snapshot["transactions"] == {"ThrottlingError": 1}
    assert snapshot["throttled_requests"] == 1


def test_a_single_write_on_an_item_held_by_a_transaction_is_counted_by_its_code(dynamodb) -> None:
    client, engine, counter = dynamodb
    engine.error(400, "TransactionConflictException")
    with pytest.raises(client.exceptions.TransactionConflictException):
        client.update_item(
            TableName="t",
            Key=INVENTORY_KEY,
            UpdateExpression="SET a = :a",
            ExpressionAttributeValues={":a": {"N": "1"}},
        )
    assert counter.snapshot()["dynamodb_errors"] == {"UpdateItem TransactionConflictException": 1}


def test_writes_to_other_items_of_the_inventory_partition_are_counted_apart(dynamodb) -> None:
    client, engine, counter = dynamodb
    counter_key = {"pk": {"S": "EVENT#e-1"}, "sk": {"S": "CUSTOMER#GA#c-1"}}
    engine.ok()
    client.transact_write_items(
        TransactItems=[
            INVENTORY_UPDATE,
            {"Update": {**INVENTORY_UPDATE["Update"], "Key": counter_key}},
            {"Update": {**INVENTORY_UPDATE["Update"], "Key": {"pk": {"S": "X#1"}, "sk": {"S": "Y"}}}},
        ]
    )
    snapshot = counter.snapshot()
    assert snapshot["hot_item_writes"] == 2
    assert snapshot["other_key_writes"] == 4
    assert snapshot["hot_partition_other_writes"] == 2


def test_the_time_from_send_and_first_receive_to_the_published_outcome_is_measured() -> None:
    now = [1000.0]
    counter = RequestCounter(clock=lambda: now[0])
    sqs = counter.register(boto3.client("sqs", **CREDENTIALS))
    sns = counter.register(boto3.client("sns", **CREDENTIALS))

    def message(reservation_id: str, sent_ms: int, received_ms: int) -> dict[str, Any]:
        return {
            "MessageId": reservation_id,
            "ReceiptHandle": "h",
            "MD5OfBody": "0" * 32,
            "Body": json.dumps({"reservation_id": reservation_id, "event_id": "e-1"}),
            "Attributes": {
                "SentTimestamp": str(sent_ms),
                "ApproximateFirstReceiveTimestamp": str(received_ms),
            },
        }

    with Stubber(sqs) as sqs_stub, Stubber(sns) as sns_stub:
        sqs_stub.add_response(
            "receive_message",
            {"Messages": [message("r-1", 999_000, 999_900), message("r-2", 990_000, 999_000)]},
        )
        sqs.receive_message(QueueUrl="https://sqs.us-east-1.amazonaws.com/1/q")
        sns_stub.add_response("publish_batch", {"Successful": [], "Failed": []})
        sns.publish_batch(
            TopicArn="arn:aws:sns:us-east-1:123456789012:t",
            PublishBatchRequestEntries=[
                {"Id": "1", "Message": json.dumps({"reservation_id": "r-1", "outcome": "CONFIRMED"})},
                {"Id": "2", "Message": json.dumps({"reservation_id": "r-2", "outcome": "CONFIRMED"})},
                {"Id": "3", "Message": json.dumps({"reservation_id": "r-9", "outcome": "CONFIRMED"})},
            ],
        )

    snapshot = add_snapshots([counter.snapshot()])
    assert snapshot["published_messages"] == 3
    assert snapshot["outcomes_without_message"] == 1
    # r-1: 1 s from send, 0.1 s from first receive; r-2: 10 s and 1 s
    assert snapshot["send_to_outcome"] == {latency_bucket(1.0): 1, latency_bucket(10.0): 1}
    assert latency_percentile(snapshot["send_to_outcome"], 0.5) == pytest.approx(1.0, rel=0.05)
    assert latency_percentile(snapshot["send_to_outcome"], 0.99) == pytest.approx(10.0, rel=0.05)
    assert latency_percentile(snapshot["receive_to_outcome"], 0.5) == pytest.approx(0.1, rel=0.05)


def test_latency_percentiles_are_read_within_the_bucket_width() -> None:
    values = [0.0005, *(n / 1000 for n in range(1, 1001))]  # 0.5 ms, then 1 ms .. 1 s
    histogram: dict[int, int] = {}
    for value in values:
        histogram[latency_bucket(value)] = histogram.get(latency_bucket(value), 0) + 1
    p50 = latency_percentile(histogram, 0.5)
    p99 = latency_percentile(histogram, 0.99)
    assert p50 is not None and 0.5 <= p50 <= 0.5 * 1.05
    assert p99 is not None and 0.99 <= p99 <= 0.99 * 1.05
    assert latency_percentile({}, 0.5) is None
    # JSON turns the buckets into strings; they read the same
    assert latency_percentile({str(k): v for k, v in histogram.items()}, 0.5) == p50


def test_a_committed_transaction_over_two_shard_items_counts_both_and_each_items_writes(dynamodb) -> None:
    client, engine, counter = dynamodb
    shard_update = {
        "Update": {**INVENTORY_UPDATE["Update"], "Key": {**INVENTORY_KEY, "pk": {"S": "EVENT#e-1#SHARD#3"}}}
    }
    engine.ok()
    client.transact_write_items(TransactItems=[*TRANSACTION, shard_update])

    snapshot = counter.snapshot()
    assert snapshot["hot_item_transactions"] == {"committed": 1}
    assert snapshot["hot_transaction_items"] == 2  # shard 0 and shard 3 in one transaction
    assert snapshot["hot_transaction_actions"] == 3
    assert snapshot["hot_item_writes_by_key"] == {"EVENT#e-1": 2, "EVENT#e-1#SHARD#3": 2}


def test_outcomes_published_are_counted_by_outcome_and_sold_out_by_event() -> None:
    counter = RequestCounter()
    sns = counter.register(boto3.client("sns", **CREDENTIALS))
    stubber = Stubber(sns)
    entries = [
        {
            "Id": str(n),
            "Message": json.dumps({"reservation_id": f"r-{n}", "event_id": event, "outcome": outcome}),
        }
        for n, (event, outcome) in enumerate(
            [("e-1", "CONFIRMED"), ("e-1", "SOLD_OUT"), ("e-2", "SOLD_OUT"), ("e-1", "SOLD_OUT")]
        )
    ]
    stubber.add_response("publish_batch", {"Successful": [], "Failed": []})
    with stubber:
        sns.publish_batch(TopicArn="arn:aws:sns:us-east-1:123456789012:t", PublishBatchRequestEntries=entries)

    snapshot = counter.snapshot()
    assert snapshot["outcomes"] == {"CONFIRMED": 1, "SOLD_OUT": 3}
    assert snapshot["sold_out_by_event"] == {"e-1": 2, "e-2": 1}


def test_index_writes_are_counted_and_billed_with_the_table_writes(dynamodb) -> None:
    # Given a sale that writes a sold record (it enters TicketsToIssue), a hold (it enters
    # HoldsByExpiry, whose entries are the whole item) and the issuer's numbering (the record
    # leaves the index)
    client, engine, counter = dynamodb
    sold = {**RECORD, "outcome": {"S": "CONFIRMED"}, "gsi2pk": {"S": "UNNUMBERED#7"}, "gsi2sk": {"N": "1"}}
    held = {**RECORD, "pk": {"S": "RESERVATION#r-2"}, "gsi1pk": {"S": "HOLDS#1"}, "note": {"S": "x" * 1500}}
    for _ in range(3):
        engine.ok()
    client.transact_write_items(TransactItems=[INVENTORY_UPDATE, {"Put": {"TableName": "t", "Item": sold}}])
    client.put_item(TableName="t", Item=held)
    client.transact_write_items(
        TransactItems=[
            {
                "Update": {
                    "TableName": "t",
                    "Key": {"pk": RECORD["pk"], "sk": RECORD["sk"]},
                    "UpdateExpression": "SET ticket_first = :f REMOVE gsi2pk, gsi2sk",
                    "ExpressionAttributeValues": {":f": {"N": "1"}},
                }
            }
        ]
    )
    # Then each index entry written or deleted is 1 unit per KB, not doubled by a transaction:
    # 1 for the sold record, 2 for the hold's whole item (1.5 KB), 1 for leaving the index
    snapshot = counter.snapshot()
    assert snapshot["index_write_units"] == 4.0
    # And the bill adds them: puts 2 (sold, transactional) + 2 (the hold, 1.5 KB), the inventory
    # update 2, the record's update 2, the indexes 4
    assert billed_write_units(snapshot, inventory_item_bytes=200) == 12.0
