"""The common design, kept only so that `seats bench` can compare the service against it.

NOT part of the service: nothing deploys it. It is what the well-known samples do (the AWS
airline booking sample among them): for each SQS message, one conditional `UpdateItem` that takes
the seats off the inventory item (a failed condition means sold out) and one SNS `Publish` of the
outcome. It uses the service's table layout and inventory items (created by the same `seats`
code), so both run on the same stack and the same data.

It has none of the service's guarantees: a redelivered message takes its seats twice (no record
per reservation id), and an error after the update loses the answer. The benchmark sends no
duplicates, so its counts are what this design costs at best.
"""

from __future__ import annotations

import json
import os
from typing import Any

import boto3
from botocore.exceptions import ClientError

from seat_inventory.dal.items import inventory_key
from seat_inventory.models import SeatKey
from seat_inventory.wiring import CLIENT_CONFIG

_clients: dict[str, Any] = {}


def cached_client(service: str) -> Any:
    if service not in _clients:
        _clients[service] = boto3.session.Session().client(service, config=CLIENT_CONFIG)  # type: ignore[call-overload]
    return _clients[service]


def take_seats(dynamodb: Any, table_name: str, message: dict[str, Any]) -> tuple[str, str]:
    """One conditional UpdateItem on the inventory item: CONFIRMED, or SOLD_OUT when the guard fails."""
    key = SeatKey(message["event_id"], message.get("seat_class") or "GA")
    quantity = int(message["quantity"])
    try:
        dynamodb.update_item(
            TableName=table_name,
            Key=inventory_key(key),
            UpdateExpression="SET available = available - :q, sold = sold + :q",
            ConditionExpression="available >= :q",
            ExpressionAttributeValues={":q": {"N": str(quantity)}},
        )
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException":
            return "SOLD_OUT", f"requested {quantity} seat(s), not enough left"
        raise
    return "CONFIRMED", f"{quantity} seat(s) confirmed"


def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """One UpdateItem and one Publish per message; a message that raised is reported for retry."""
    table_name = os.environ["TABLE_NAME"]
    topic_arn = os.environ["OUTCOMES_TOPIC_ARN"]
    dynamodb, sns = cached_client("dynamodb"), cached_client("sns")
    failures = []
    for record in event["Records"]:
        try:
            message = json.loads(record["body"])
            outcome, reason = take_seats(dynamodb, table_name, message)
            sns.publish(
                TopicArn=topic_arn,
                Message=json.dumps({**message, "outcome": outcome, "reason": reason}),
            )
        except (ClientError, KeyError, ValueError):
            failures.append({"itemIdentifier": record["messageId"]})
    return {"batchItemFailures": failures}
