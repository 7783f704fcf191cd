"""The common design as a careful team would ship it: the baseline plus Powertools idempotency.

NOT part of the service: nothing deploys it; `seats bench` runs it as a third design. Each SQS
message goes through `aws_lambda_powertools.utilities.idempotency` (its DynamoDB persistence
layer, keyed on the reservation id) around the baseline's conditional `UpdateItem`, then one
SNS `Publish` of the answer:

1. a conditional `PutItem` of an INPROGRESS record in the idempotency table (a redelivered
   message whose record is COMPLETED gets the stored answer back, and takes no seats again);
2. the baseline's conditional `UpdateItem` on the inventory item (a failed condition: sold out);
3. an `UpdateItem` of the record to COMPLETED with the answer;
4. the `Publish` (again for a redelivered message: subscribers may see an answer twice).

The idempotency table is the utility's own (hash key `id`, TTL on `expiration`); the benchmark
creates it in its local stack (`create_table_request`) and names it in IDEMPOTENCY_TABLE_NAME.
Records are kept for the queue's message retention (14 days in template.yaml), so that no
redelivery can outlive its record.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

from aws_lambda_powertools.utilities.idempotency import (
    DynamoDBPersistenceLayer,
    IdempotencyConfig,
    idempotent_function,
)
from aws_lambda_powertools.utilities.idempotency.exceptions import BaseError as IdempotencyError
from botocore.exceptions import ClientError

from seat_tools.bench.baseline import cached_client, take_seats

IDEMPOTENCY_TABLE_ENV = "IDEMPOTENCY_TABLE_NAME"
KEY_ATTRIBUTE = "id"
EXPIRY_ATTRIBUTE = "expiration"
# The reservations queue's MessageRetentionPeriod in template.yaml (14 days).
RECORD_LIFETIME_S = 1_209_600


def create_table_request(table_name: str) -> dict[str, Any]:
    """The CreateTable request for the utility's table (its default key schema), on demand."""
    return {
        "TableName": table_name,
        "AttributeDefinitions": [{"AttributeName": KEY_ATTRIBUTE, "AttributeType": "S"}],
        "KeySchema": [{"AttributeName": KEY_ATTRIBUTE, "KeyType": "HASH"}],
        "BillingMode": "PAY_PER_REQUEST",
    }


# Built on the first invocation (settings are read at the edge, not at import): the idempotent
# reservation function and the config it registers the Lambda context with.
_reserver: tuple[Callable[..., dict[str, str]], IdempotencyConfig] | None = None


def _reserve_once(
    table_name: str, idempotency_table: str
) -> tuple[Callable[..., dict[str, str]], IdempotencyConfig]:
    global _reserver
    if _reserver is None:
        dynamodb = cached_client("dynamodb")
        persistence = DynamoDBPersistenceLayer(
            table_name=idempotency_table,
            key_attr=KEY_ATTRIBUTE,
            expiry_attr=EXPIRY_ATTRIBUTE,
            boto3_client=dynamodb,
        )
        config = IdempotencyConfig(
            event_key_jmespath="reservation_id", expires_after_seconds=RECORD_LIFETIME_S
        )

        @idempotent_function(data_keyword_argument="message", config=config, persistence_store=persistence)
        def reserve(message: dict[str, Any]) -> dict[str, str]:
            outcome, reason = take_seats(dynamodb, table_name, message)
            return {"outcome": outcome, "reason": reason}

        _reserver = (reserve, config)
    return _reserver


def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """Per message: the idempotent reservation, then one Publish; a message that raised (an AWS
    error, or its record still in progress in another invocation) is reported for retry."""
    table_name = os.environ["TABLE_NAME"]
    topic_arn = os.environ["OUTCOMES_TOPIC_ARN"]
    reserve, config = _reserve_once(table_name, os.environ[IDEMPOTENCY_TABLE_ENV])
    config.register_lambda_context(context)
    sns = cached_client("sns")
    failures = []
    for record in event["Records"]:
        try:
            message = json.loads(record["body"])
            answer = reserve(message=message)
            sns.publish(TopicArn=topic_arn, Message=json.dumps({**message, **answer}))
        except (ClientError, IdempotencyError, KeyError, ValueError):
            failures.append({"itemIdentifier": record["messageId"]})
    return {"batchItemFailures": failures}
