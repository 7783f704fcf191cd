"""The benchmark's request counter on a stubbed client: what it takes from botocore's events."""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from seat_inventory.bench.counting import RequestCounter

RECORD = {"pk": {"S": "RESERVATION#r-1"}, "sk": {"S": "RESERVATION"}, "outcome": {"S": "SOLD_OUT"}}
INVENTORY_UPDATE = {
    "Update": {
        "TableName": "t",
        "Key": {"pk": {"S": "EVENT#e-1"}, "sk": {"S": "CLASS#GA"}},
        "UpdateExpression": "SET available = available - :n",
        "ConditionExpression": "available >= :n",
        "ExpressionAttributeValues": {":n": {"N": "1"}},
    }
}
TRANSACTION: list[dict[str, Any]] = [INVENTORY_UPDATE, {"Put": {"TableName": "t", "Item": RECORD}}]


@pytest.fixture
def counted() -> tuple[Any, Stubber, RequestCounter]:
    client = boto3.client(
        "dynamodb", region_name="us-east-1", aws_access_key_id="test", aws_secret_access_key="test"
    )
    counter = RequestCounter()
    counter.register(client)
    return client, Stubber(client), counter


def test_a_refused_transaction_is_counted_with_its_reasons_and_the_units_it_would_bill(counted) -> None:
    client, stubber, counter = counted
    stubber.add_client_error(
        "transact_write_items",
        service_error_code="TransactionCanceledException",
        service_message="Transaction cancelled",
        modeled_fields={"CancellationReasons": [{"Code": "ConditionalCheckFailed"}, {"Code": "None"}]},
    )
    with stubber, pytest.raises(client.exceptions.TransactionCanceledException):
        client.transact_write_items(TransactItems=TRANSACTION)

    snapshot = counter.snapshot()
    assert snapshot["refused_transactions"] == {"ConditionalCheckFailed": 1}
    assert snapshot["refused_write_units"] == 4.0  # 2 for the inventory update, 2 for the record
    # the request is still counted as sent and billed like any other
    assert snapshot["calls"] == {"dynamodb.TransactWriteItems": 1}
    assert snapshot["hot_item_writes"] == 2
    assert snapshot["put_write_units"] == 2.0


def test_a_committed_transaction_is_not_counted_as_refused(counted) -> None:
    client, stubber, counter = counted
    stubber.add_response("transact_write_items", {})
    with stubber:
        client.transact_write_items(TransactItems=TRANSACTION)

    snapshot = counter.snapshot()
    assert snapshot["refused_transactions"] == {}
    assert snapshot["refused_write_units"] == 0.0
    assert snapshot["hot_item_write_requests"] == 1
