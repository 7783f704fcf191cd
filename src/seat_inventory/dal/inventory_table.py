"""The only module that talks to DynamoDB: every key, expression and error code lives here.

Single-table layout (table keys `pk`, `sk`; TTL attribute `expires_at`):

| item                 | pk                     | sk              | attributes                          |
|----------------------|------------------------|-----------------|-------------------------------------|
| seat-class inventory | `EVENT#<event_id>`     | `CLASS#<class>` | capacity, available, sold           |
| reservation record   | `RESERVATION#<res_id>` | `RESERVATION`   | the answer given (outcome, reason)  |

Seats are taken by one `TransactWriteItems` per group: a guarded decrement of the inventory
item plus one `attribute_not_exists` put per reservation record, so the decrement and the
dedupe markers commit together or not at all.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from botocore.exceptions import (
    ClientError,
    ConnectionClosedError,
    ConnectTimeoutError,
    EndpointConnectionError,
    ReadTimeoutError,
)

from seat_inventory.logic.ports import WriteRefused
from seat_inventory.models import (
    EventAlreadyExists,
    Outcome,
    ReservationOutcome,
    RetryableError,
    SeatClassInventory,
    SeatKey,
    TransactionConflict,
)

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

INVENTORY_PREFIX = "EVENT#"
CLASS_PREFIX = "CLASS#"
RESERVATION_PREFIX = "RESERVATION#"
RESERVATION_SK = "RESERVATION"

# Error codes that mean "try again later" rather than "your request is wrong".
RETRYABLE_ERROR_CODES = frozenset(
    {
        "ThrottlingException",
        "ProvisionedThroughputExceededException",
        "RequestLimitExceeded",
        "InternalServerError",
        "ServiceUnavailable",
        "TransactionInProgressException",
        "TransactionConflictException",
    }
)
RETRYABLE_CANCELLATION_CODES = frozenset({"ThrottlingError", "ProvisionedThroughputExceeded"})
NETWORK_ERRORS = (EndpointConnectionError, ConnectTimeoutError, ReadTimeoutError, ConnectionClosedError)


def inventory_key(key: SeatKey) -> dict[str, Any]:
    return {"pk": {"S": INVENTORY_PREFIX + key.event_id}, "sk": {"S": CLASS_PREFIX + key.seat_class}}


def reservation_key(reservation_id: str) -> dict[str, Any]:
    return {"pk": {"S": RESERVATION_PREFIX + reservation_id}, "sk": {"S": RESERVATION_SK}}


def _number(value: int) -> dict[str, str]:
    return {"N": str(value)}


def _inventory_from_item(item: Mapping[str, Any]) -> SeatClassInventory:
    return SeatClassInventory(
        event_id=item["event_id"]["S"],
        seat_class=item["seat_class"]["S"],
        capacity=int(item["capacity"]["N"]),
        available=int(item["available"]["N"]),
        sold=int(item["sold"]["N"]),
    )


def _optional_text(item: Mapping[str, Any], name: str) -> str | None:
    value = item.get(name)
    return value["S"] if value else None


def _optional_int(item: Mapping[str, Any], name: str) -> int | None:
    value = item.get(name)
    return int(value["N"]) if value else None


def _outcome_from_item(item: Mapping[str, Any]) -> ReservationOutcome:
    return ReservationOutcome(
        reservation_id=item["reservation_id"]["S"],
        outcome=Outcome(item["outcome"]["S"]),
        reason=item["reason"]["S"],
        event_id=_optional_text(item, "event_id"),
        seat_class=_optional_text(item, "seat_class"),
        quantity=_optional_int(item, "quantity"),
        customer_id=_optional_text(item, "customer_id"),
        remaining=_optional_int(item, "remaining"),
        message_id=_optional_text(item, "message_id"),
    )


def _record_item(outcome: ReservationOutcome, *, recorded_at: str, expires_at: int | None) -> dict[str, Any]:
    item: dict[str, Any] = {
        **reservation_key(outcome.reservation_id),
        "entity": {"S": "reservation"},
        "reservation_id": {"S": outcome.reservation_id},
        "outcome": {"S": outcome.outcome.value},
        "reason": {"S": outcome.reason},
        "recorded_at": {"S": recorded_at},
    }
    for name in ("event_id", "seat_class", "customer_id", "message_id"):
        value = getattr(outcome, name)
        if value is not None:
            item[name] = {"S": value}
    for name in ("quantity", "remaining"):
        value = getattr(outcome, name)
        if value is not None:
            item[name] = _number(value)
    if expires_at is not None:
        item["expires_at"] = _number(expires_at)
    return item


def _raise_retryable_or_reraise(exc: Exception) -> None:
    """Maps a transient AWS fault to RetryableError; anything else propagates unchanged."""
    if isinstance(exc, NETWORK_ERRORS):
        raise RetryableError(f"DynamoDB unreachable: {exc}") from exc
    if isinstance(exc, ClientError):
        code = exc.response.get("Error", {}).get("Code", "")
        if code == "TransactionConflictException":
            raise TransactionConflict(code) from exc
        if code in RETRYABLE_ERROR_CODES:
            raise RetryableError(code) from exc


class InventoryTable:
    """DynamoDB implementation of the `InventoryStore` port, plus the operator's queries."""

    def __init__(self, client: DynamoDBClient, table_name: str) -> None:
        self._client = client
        self._table_name = table_name

    @property
    def table_name(self) -> str:
        return self._table_name

    def commit_outcomes(
        self,
        key: SeatKey,
        outcomes: Sequence[ReservationOutcome],
        *,
        seats_taken: int,
        rejection_expires_at: int,
    ) -> WriteRefused | None:
        """One transaction: guarded decrement of the inventory (if seats are taken) + one record per answer.

        Confirmed sales are kept for good; rejections (SOLD_OUT, UNKNOWN_EVENT) expire by TTL after
        `rejection_expires_at`, long after SQS could still redeliver their message.
        """
        if not outcomes:
            return None
        recorded_at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        actions: list[dict[str, Any]] = []
        if seats_taken > 0:
            actions.append(
                {
                    "Update": {
                        "TableName": self._table_name,
                        "Key": inventory_key(key),
                        "UpdateExpression": "SET available = available - :seats, sold = sold + :seats",
                        "ConditionExpression": "attribute_exists(pk) AND available >= :seats",
                        "ExpressionAttributeValues": {":seats": _number(seats_taken)},
                        "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                    }
                }
            )
        for outcome in outcomes:
            expires_at = None if outcome.outcome is Outcome.CONFIRMED else rejection_expires_at
            actions.append(
                {
                    "Put": {
                        "TableName": self._table_name,
                        "Item": _record_item(outcome, recorded_at=recorded_at, expires_at=expires_at),
                        "ConditionExpression": "attribute_not_exists(pk)",
                        "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                    }
                }
            )
        try:
            self._client.transact_write_items(TransactItems=actions)  # type: ignore[arg-type]
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") == "TransactionCanceledException":
                return self._refusal(exc, outcomes, has_inventory_action=seats_taken > 0)
            _raise_retryable_or_reraise(exc)
            raise
        except NETWORK_ERRORS as exc:
            _raise_retryable_or_reraise(exc)
            raise
        return None

    @staticmethod
    def _refusal(
        exc: ClientError, outcomes: Sequence[ReservationOutcome], *, has_inventory_action: bool
    ) -> WriteRefused:
        """Reads the cancellation reasons (one per action, in order) into what the planner needs."""
        reasons: list[dict[str, Any]] = exc.response.get("CancellationReasons", [])  # type: ignore[assignment]
        codes = [reason.get("Code") or "None" for reason in reasons]
        if "TransactionConflict" in codes:
            raise TransactionConflict("TransactionConflict") from exc
        if any(code in RETRYABLE_CANCELLATION_CODES for code in codes):
            raise RetryableError(",".join(codes)) from exc
        unexpected = {code for code in codes if code not in ("None", "ConditionalCheckFailed")}
        expected_count = len(outcomes) + (1 if has_inventory_action else 0)
        if unexpected or len(reasons) != expected_count:
            raise RuntimeError(f"transaction cancelled for reasons {codes}") from exc
        inventory_refused = False
        inventory: SeatClassInventory | None = None
        record_reasons = reasons
        if has_inventory_action:
            inventory_reason, record_reasons = reasons[0], reasons[1:]
            if inventory_reason.get("Code") == "ConditionalCheckFailed":
                inventory_refused = True
                old = inventory_reason.get("Item")
                inventory = _inventory_from_item(old) if old else None
        already_recorded: dict[str, ReservationOutcome] = {}
        for outcome, reason in zip(outcomes, record_reasons, strict=True):
            if reason.get("Code") == "ConditionalCheckFailed":
                old = reason.get("Item")
                if not old:
                    raise RuntimeError("record condition failed without ALL_OLD item") from exc
                already_recorded[outcome.reservation_id] = _outcome_from_item(old)
        return WriteRefused(
            inventory_refused=inventory_refused, inventory=inventory, already_recorded=already_recorded
        )

    def read_inventory(self, key: SeatKey) -> SeatClassInventory | None:
        """GetItem with ConsistentRead: the seats left now, without writing to the hot item."""
        try:
            response = self._client.get_item(
                TableName=self._table_name, Key=inventory_key(key), ConsistentRead=True
            )
        except (ClientError, *NETWORK_ERRORS) as exc:
            _raise_retryable_or_reraise(exc)
            raise
        item = response.get("Item")
        return _inventory_from_item(item) if item else None

    def create_seat_class(self, key: SeatKey, capacity: int) -> SeatClassInventory:
        """Creates the inventory of one seat class; never overwrites an existing one."""
        if capacity < 0:
            raise ValueError("capacity must not be negative")
        item = {
            **inventory_key(key),
            "entity": {"S": "inventory"},
            "event_id": {"S": key.event_id},
            "seat_class": {"S": key.seat_class},
            "capacity": _number(capacity),
            "available": _number(capacity),
            "sold": _number(0),
            "created_at": {"S": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())},
        }
        try:
            self._client.put_item(
                TableName=self._table_name,
                Item=item,
                ConditionExpression="attribute_not_exists(pk)",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException":
                old: Any = exc.response.get("Item")
                existing = _inventory_from_item(old) if old else None
                raise EventAlreadyExists(
                    f"event {key.event_id!r} already has seat class {key.seat_class!r}"
                    + (f" (capacity {existing.capacity}, available {existing.available})" if existing else "")
                ) from exc
            _raise_retryable_or_reraise(exc)
            raise
        return _inventory_from_item(item)

    def get_event(self, event_id: str) -> list[SeatClassInventory]:
        """Every seat class of an event, read strongly consistently; empty when the event is unknown."""
        classes: list[SeatClassInventory] = []
        request: dict[str, Any] = {
            "TableName": self._table_name,
            "KeyConditionExpression": "pk = :pk AND begins_with(sk, :class_prefix)",
            "ExpressionAttributeValues": {
                ":pk": {"S": INVENTORY_PREFIX + event_id},
                ":class_prefix": {"S": CLASS_PREFIX},
            },
            "ConsistentRead": True,
        }
        while True:
            try:
                page = self._client.query(**request)
            except (ClientError, *NETWORK_ERRORS) as exc:
                _raise_retryable_or_reraise(exc)
                raise
            classes.extend(_inventory_from_item(item) for item in page.get("Items", []))
            if "LastEvaluatedKey" not in page:
                return sorted(classes, key=lambda c: c.seat_class)
            request["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def get_reservation(self, reservation_id: str) -> ReservationOutcome | None:
        """The answer recorded for a reservation id, or None when none was recorded (or it expired)."""
        try:
            response = self._client.get_item(
                TableName=self._table_name, Key=reservation_key(reservation_id), ConsistentRead=True
            )
        except (ClientError, *NETWORK_ERRORS) as exc:
            _raise_retryable_or_reraise(exc)
            raise
        item = response.get("Item")
        return _outcome_from_item(item) if item else None
