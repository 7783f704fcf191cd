"""The Redis peer as a function on the queue, so that `seats bench` runs it like the other designs.

NOT part of the service: nothing deploys it. Per SQS message, one run of the reserve script on
the Redis server named by REDIS_URL (`bench.redis_peer`: a guarded `DECRBY` that records the
reservation id); then the batch's answers are published the way the service publishes its own
(`publishing.sns_publisher`: PublishBatch, ten per call, in the service's answer format), so
that the rates of the two differ by their stores, not by how they publish. A message whose
script raised, or whose answer SNS did not take, is reported for retry; its redelivery gets the
script's recorded answer and takes no seats twice.
"""

from __future__ import annotations

import json
import os
from typing import Any

from seat_inventory.models import Outcome, ReservationOutcome, SeatKey
from seat_inventory.publishing.sns_publisher import SnsOutcomePublisher
from seat_tools.bench.baseline import cached_client
from seat_tools.bench.redis_peer import RedisInventory, redis_client

REDIS_URL_ENV = "REDIS_URL"

# Built on the first invocation (settings are read at the edge, not at import).
_inventory: RedisInventory | None = None
_publisher: SnsOutcomePublisher | None = None


def _once(url: str, topic_arn: str) -> tuple[RedisInventory, SnsOutcomePublisher]:
    global _inventory, _publisher
    if _inventory is None:
        _inventory = RedisInventory(redis_client(url))
    if _publisher is None:
        _publisher = SnsOutcomePublisher(cached_client("sns"), topic_arn)
    return _inventory, _publisher


def take_seats(inventory: RedisInventory, message: dict[str, Any], message_id: str) -> ReservationOutcome:
    """The script's answer to one reservation message, as the outcome to publish."""
    key = SeatKey(message["event_id"], message.get("seat_class") or "GA")
    quantity = int(message["quantity"])
    answer = inventory.reserve(key, str(message["reservation_id"]), quantity)
    if answer.outcome is Outcome.CONFIRMED:
        reason = f"{quantity} seat(s) confirmed"
    elif answer.outcome is Outcome.SOLD_OUT:
        reason = f"requested {quantity} seat(s), {answer.seats} left"
    elif answer.outcome is Outcome.UNKNOWN_EVENT:
        reason = f"no seat class {key.seat_class} for event {key.event_id}"
    else:
        reason = f"quantity {message['quantity']!r} is not a whole number of seats"
    return ReservationOutcome(
        reservation_id=str(message["reservation_id"]),
        outcome=answer.outcome,
        reason=reason,
        event_id=key.event_id,
        seat_class=key.seat_class,
        quantity=quantity,
        customer_id=message.get("customer_id"),
        remaining=None if answer.replay else answer.seats,
        duplicate=answer.replay,
        message_id=message_id,
    )


def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """One script run per message, then the answers published in batches; a message whose script
    raised or whose answer was not published is reported for retry."""
    import redis

    inventory, publisher = _once(os.environ[REDIS_URL_ENV], os.environ["OUTCOMES_TOPIC_ARN"])
    failures = []
    answers = []
    for record in event["Records"]:
        try:
            answers.append(take_seats(inventory, json.loads(record["body"]), record["messageId"]))
        except (redis.RedisError, KeyError, ValueError):
            failures.append({"itemIdentifier": record["messageId"]})
    failures += [{"itemIdentifier": outcome.message_id} for outcome in publisher.publish(answers)]
    return {"batchItemFailures": failures}
