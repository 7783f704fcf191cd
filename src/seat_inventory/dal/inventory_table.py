"""The only module that talks to DynamoDB: every key, expression and error code lives here.

Single-table layout (table keys `pk`, `sk`; TTL attribute `expires_at`; sparse index
`HoldsByExpiry` on `gsi1pk` (S) / `gsi1sk` (N)):

| item                 | pk                     | sk                            |
|----------------------|------------------------|-------------------------------|
| seat-class inventory | `EVENT#<event_id>`     | `CLASS#<class>`               |
| customer counter     | `EVENT#<event_id>`     | `CUSTOMER#<class>#<customer>` |
| reservation record   | `RESERVATION#<res_id>` | `RESERVATION`                 |

- inventory: capacity, available, held, sold; optional max_per_customer, sale_status,
  sale_starts_at, sale_ends_at (epoch seconds); version (bumped by every operator change);
- customer counter: seats (taken while the class had a per-customer limit);
- reservation record: the answer given (outcome, reason, ...), its current status, request_type;
  a hold's hold_expires_at; customer_counted when its seats count against a limit.

A record is in the index while it is a live hold (`gsi1pk = HOLDS#<shard>`, `gsi1sk =
hold_expires_at`) and while its expiry waits to be published (`gsi1pk = EXPIRED#<shard>`, the
sweeper's outbox). The shard (0-7, from a CRC-32 of the reservation id) spreads the index's
partitions.

Seats are taken by one `TransactWriteItems` per group: a guarded decrement of the inventory
item, one `attribute_not_exists` put per reservation record and, with a per-customer limit, one
guarded counter increment per customer, so all of them commit together or not at all. Status
changes (confirm, cancel, expiry) are one transaction per group as well: each record's update is
conditional on the status it was read with, plus one guarded inventory update and the counters.
"""

from __future__ import annotations

import time
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from botocore.exceptions import (
    ClientError,
    ConnectionClosedError,
    ConnectTimeoutError,
    EndpointConnectionError,
    ReadTimeoutError,
)

from seat_inventory.logic.ports import TransitionsRefused, WriteRefused
from seat_inventory.models import (
    TAKES_SEATS,
    EventAlreadyExists,
    InventoryChangeRefused,
    Outcome,
    RequestType,
    ReservationOutcome,
    ReservationRecord,
    RetryableError,
    SaleStatus,
    SeatClassInventory,
    SeatKey,
    TransactionConflict,
    Transition,
    UnknownSeatClass,
)

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

_Response = TypeVar("_Response")

INVENTORY_PREFIX = "EVENT#"
CLASS_PREFIX = "CLASS#"
CUSTOMER_PREFIX = "CUSTOMER#"
RESERVATION_PREFIX = "RESERVATION#"
RESERVATION_SK = "RESERVATION"
HOLDS_INDEX = "HoldsByExpiry"
HOLD_SHARDS = 8
HOLDS_PREFIX = "HOLDS#"
OUTBOX_PREFIX = "EXPIRED#"
BATCH_GET_LIMIT = 100
BATCH_GET_ATTEMPTS = 5
BATCH_GET_BACKOFF_SECONDS = 0.05

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
TRANSACTION_CANCELED = "TransactionCanceledException"
CONDITION_FAILED = "ConditionalCheckFailedException"

# The conditions every write that takes seats adds: the sale is open at :now.
SALE_OPEN_CONDITION = (
    "(attribute_not_exists(sale_status) OR sale_status = :open)"
    " AND (attribute_not_exists(sale_starts_at) OR sale_starts_at <= :now)"
    " AND (attribute_not_exists(sale_ends_at) OR sale_ends_at > :now)"
)


def inventory_key(key: SeatKey) -> dict[str, Any]:
    return {"pk": {"S": INVENTORY_PREFIX + key.event_id}, "sk": {"S": CLASS_PREFIX + key.seat_class}}


def reservation_key(reservation_id: str) -> dict[str, Any]:
    return {"pk": {"S": RESERVATION_PREFIX + reservation_id}, "sk": {"S": RESERVATION_SK}}


def customer_key(key: SeatKey, customer_id: str) -> dict[str, Any]:
    return {
        "pk": {"S": INVENTORY_PREFIX + key.event_id},
        "sk": {"S": f"{CUSTOMER_PREFIX}{key.seat_class}#{customer_id}"},
    }


def hold_shard(reservation_id: str) -> int:
    """The index shard of a reservation: stable across processes and Python versions (CRC-32)."""
    return zlib.crc32(reservation_id.encode()) % HOLD_SHARDS


def _number(value: int) -> dict[str, str]:
    return {"N": str(value)}


def _timestamp() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _optional_text(item: Mapping[str, Any], name: str) -> str | None:
    value = item.get(name)
    return value["S"] if value else None


def _optional_int(item: Mapping[str, Any], name: str) -> int | None:
    value = item.get(name)
    return int(value["N"]) if value else None


def _inventory_from_item(item: Mapping[str, Any]) -> SeatClassInventory:
    # Items written before holds existed have no `held`: it is 0 (updates use if_not_exists).
    return SeatClassInventory(
        event_id=item["event_id"]["S"],
        seat_class=item["seat_class"]["S"],
        capacity=int(item["capacity"]["N"]),
        available=int(item["available"]["N"]),
        sold=int(item["sold"]["N"]),
        held=_optional_int(item, "held") or 0,
        max_per_customer=_optional_int(item, "max_per_customer"),
        sale_status=SaleStatus(_optional_text(item, "sale_status") or SaleStatus.OPEN.value),
        sale_starts_at=_optional_int(item, "sale_starts_at"),
        sale_ends_at=_optional_int(item, "sale_ends_at"),
        version=_optional_int(item, "version") or 0,
    )


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
        request_type=RequestType(_optional_text(item, "request_type") or RequestType.RESERVE.value),
        hold_expires_at=_optional_int(item, "hold_expires_at"),
    )


def _record_from_item(item: Mapping[str, Any]) -> ReservationRecord:
    answer = _outcome_from_item(item)
    status = _optional_text(item, "status")
    return ReservationRecord(
        answer=answer,
        # Records written before statuses existed are in the state of their answer.
        status=Outcome(status) if status else answer.outcome,
        hold_expires_at=answer.hold_expires_at,
        customer_counted=bool(item.get("customer_counted", {}).get("BOOL", False)),
        awaiting_publication=(_optional_text(item, "gsi1pk") or "").startswith(OUTBOX_PREFIX),
        status_changed_at=_optional_text(item, "status_changed_at"),
    )


def _record_item(
    outcome: ReservationOutcome, *, recorded_at: str, expires_at: int | None, customer_counted: bool
) -> dict[str, Any]:
    item: dict[str, Any] = {
        **reservation_key(outcome.reservation_id),
        "entity": {"S": "reservation"},
        "reservation_id": {"S": outcome.reservation_id},
        "outcome": {"S": outcome.outcome.value},
        "status": {"S": outcome.outcome.value},
        "reason": {"S": outcome.reason},
        "recorded_at": {"S": recorded_at},
        "request_type": {"S": (outcome.request_type or RequestType.RESERVE).value},
    }
    for name in ("event_id", "seat_class", "customer_id", "message_id"):
        value = getattr(outcome, name)
        if value is not None:
            item[name] = {"S": value}
    for name in ("quantity", "remaining", "hold_expires_at"):
        value = getattr(outcome, name)
        if value is not None:
            item[name] = _number(value)
    if outcome.outcome is Outcome.HELD:
        if outcome.hold_expires_at is None:
            raise ValueError(f"hold {outcome.reservation_id!r} has no expiry")
        item["gsi1pk"] = {"S": f"{HOLDS_PREFIX}{hold_shard(outcome.reservation_id)}"}
        item["gsi1sk"] = _number(outcome.hold_expires_at)
    if customer_counted:
        item["customer_counted"] = {"BOOL": True}
    if expires_at is not None:
        item["expires_at"] = _number(expires_at)
    return item


def _error_code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", ""))


def _call(operation: Callable[..., _Response], /, **params: Any) -> _Response:
    """Calls DynamoDB; the one place its faults are classified.

    Unreachable or a retryable error code raises RetryableError (a TransactionConflictException
    raises TransactionConflict); any other error propagates unchanged.
    """
    try:
        return operation(**params)
    except NETWORK_ERRORS as exc:
        raise RetryableError(f"DynamoDB unreachable: {exc}") from exc
    except ClientError as exc:
        code = _error_code(exc)
        if code == "TransactionConflictException":
            raise TransactionConflict(code) from exc
        if code in RETRYABLE_ERROR_CODES:
            raise RetryableError(code) from exc
        raise


def _call_expecting(
    code: str, operation: Callable[..., _Response], /, **params: Any
) -> _Response | ClientError:
    """`_call`, but the error with `code` (a refusal the caller reads) is returned instead of raised."""
    try:
        return _call(operation, **params)
    except ClientError as exc:
        if _error_code(exc) == code:
            return exc
        raise


def _cancellation_reasons(exc: ClientError, expected_count: int) -> list[dict[str, Any]]:
    """The per-action reasons of a cancelled transaction; transient ones raise a retryable error."""
    reasons: list[dict[str, Any]] = exc.response.get("CancellationReasons", [])  # type: ignore[assignment]
    codes = [reason.get("Code") or "None" for reason in reasons]
    if "TransactionConflict" in codes:
        raise TransactionConflict("TransactionConflict") from exc
    if any(code in RETRYABLE_CANCELLATION_CODES for code in codes):
        raise RetryableError(",".join(codes)) from exc
    unexpected = {code for code in codes if code not in ("None", "ConditionalCheckFailed")}
    if unexpected or len(reasons) != expected_count:
        raise RuntimeError(f"transaction cancelled for reasons {codes}") from exc
    return reasons


def _failed(reason: Mapping[str, Any]) -> bool:
    return reason.get("Code") == "ConditionalCheckFailed"


@dataclass(frozen=True, slots=True)
class _InventoryDelta:
    """How one status-change transaction moves the inventory item."""

    released: int  # back to available
    unheld: int  # taken off held
    unsold: int  # taken off sold
    sold: int  # added to sold (held seats confirmed)

    @classmethod
    def of(cls, transitions: Sequence[Transition]) -> _InventoryDelta:
        released = unheld = unsold = sold = 0
        for transition in transitions:
            seats = transition.record.quantity
            if transition.record.status is Outcome.HELD:
                unheld += seats
            else:
                unsold += seats
            if transition.to is Outcome.CONFIRMED:
                sold += seats
            else:
                released += seats
        return cls(released, unheld, unsold, sold)


class InventoryTable:
    """DynamoDB implementation of the `InventoryStore` and `HoldStore` ports, plus the operator's queries."""

    def __init__(
        self, client: DynamoDBClient, table_name: str, *, sleep: Callable[[float], None] = time.sleep
    ) -> None:
        self._client = client
        self._table_name = table_name
        self._sleep = sleep

    @property
    def table_name(self) -> str:
        return self._table_name

    # ------------------------------------------------------------------ reserve and hold

    def commit_outcomes(
        self,
        key: SeatKey,
        outcomes: Sequence[ReservationOutcome],
        *,
        seats_taken: int,
        rejection_expires_at: int,
        max_per_customer: int | None = None,
        customer_seats: Mapping[str, int] | None = None,
        now: int | None = None,
    ) -> WriteRefused | None:
        """One transaction: guarded decrement of the inventory (if seats are taken), one record per
        answer, and one guarded increment per customer counter (with a per-customer limit).

        Confirmed sales are kept for good, and so are holds while they last; rejections
        (SOLD_OUT, UNKNOWN_EVENT, LIMIT_EXCEEDED, SALE_CLOSED) expire by TTL after
        `rejection_expires_at`, long after SQS could still redeliver their message.
        """
        if not outcomes:
            return None
        now = int(time.time()) if now is None else now
        counters = dict(customer_seats or {}) if max_per_customer is not None else {}
        recorded_at = _timestamp()
        actions: list[dict[str, Any]] = []
        if seats_taken > 0:
            actions.append(self._take_seats_action(key, outcomes, seats_taken, max_per_customer, now))
        for outcome in outcomes:
            takes_seats = outcome.outcome in TAKES_SEATS
            expires_at = None if takes_seats else rejection_expires_at
            actions.append(
                {
                    "Put": {
                        "TableName": self._table_name,
                        "Item": _record_item(
                            outcome,
                            recorded_at=recorded_at,
                            expires_at=expires_at,
                            customer_counted=takes_seats and max_per_customer is not None,
                        ),
                        "ConditionExpression": "attribute_not_exists(pk)",
                        "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                    }
                }
            )
        customers = list(counters)
        for customer_id in customers:
            assert max_per_customer is not None
            actions.append(
                self._count_customer_action(key, customer_id, counters[customer_id], max_per_customer)
            )
        cancelled = _call_expecting(
            TRANSACTION_CANCELED, self._client.transact_write_items, TransactItems=actions
        )
        if isinstance(cancelled, ClientError):
            return self._refusal(cancelled, outcomes, customers, has_inventory_action=seats_taken > 0)
        return None

    def _take_seats_action(
        self,
        key: SeatKey,
        outcomes: Sequence[ReservationOutcome],
        seats_taken: int,
        max_per_customer: int | None,
        now: int,
    ) -> dict[str, Any]:
        held = sum(o.quantity or 0 for o in outcomes if o.outcome is Outcome.HELD)
        sold = seats_taken - held
        values: dict[str, Any] = {
            ":seats": _number(seats_taken),
            ":open": {"S": SaleStatus.OPEN.value},
            ":now": _number(now),
        }
        updates = ["available = available - :seats"]
        if sold:
            updates.append("sold = sold + :sold")
            values[":sold"] = _number(sold)
        if held:
            updates.append("held = if_not_exists(held, :zero) + :held")
            values[":held"] = _number(held)
            values[":zero"] = _number(0)
        condition = f"attribute_exists(pk) AND available >= :seats AND {SALE_OPEN_CONDITION}"
        # The limit the planner assumed is part of the guard: a stale assumption is refused, and
        # ALL_OLD hands back the real item to plan again from.
        if max_per_customer is None:
            condition += " AND attribute_not_exists(max_per_customer)"
        else:
            condition += " AND max_per_customer = :limit"
            values[":limit"] = _number(max_per_customer)
        return {
            "Update": {
                "TableName": self._table_name,
                "Key": inventory_key(key),
                "UpdateExpression": "SET " + ", ".join(updates),
                "ConditionExpression": condition,
                "ExpressionAttributeValues": values,
                "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
            }
        }

    def _count_customer_action(
        self, key: SeatKey, customer_id: str, seats: int, limit: int
    ) -> dict[str, Any]:
        if seats > limit:
            raise ValueError(f"{seats} seat(s) for customer {customer_id!r} pass the limit of {limit}")
        return {
            "Update": {
                "TableName": self._table_name,
                "Key": customer_key(key, customer_id),
                "UpdateExpression": (
                    "SET seats = if_not_exists(seats, :zero) + :seats, entity = :entity,"
                    " event_id = :event_id, seat_class = :seat_class, customer_id = :customer_id"
                ),
                "ConditionExpression": "attribute_not_exists(seats) OR seats <= :room",
                "ExpressionAttributeValues": {
                    ":zero": _number(0),
                    ":seats": _number(seats),
                    ":room": _number(limit - seats),
                    ":entity": {"S": "customer_counter"},
                    ":event_id": {"S": key.event_id},
                    ":seat_class": {"S": key.seat_class},
                    ":customer_id": {"S": customer_id},
                },
                "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
            }
        }

    @staticmethod
    def _refusal(
        exc: ClientError,
        outcomes: Sequence[ReservationOutcome],
        customers: Sequence[str],
        *,
        has_inventory_action: bool,
    ) -> WriteRefused:
        """Reads the cancellation reasons (one per action, in order) into what the planner needs."""
        expected_count = len(outcomes) + len(customers) + (1 if has_inventory_action else 0)
        reasons = _cancellation_reasons(exc, expected_count)
        inventory_refused = False
        inventory: SeatClassInventory | None = None
        record_reasons = reasons
        if has_inventory_action:
            inventory_reason, record_reasons = reasons[0], reasons[1:]
            if _failed(inventory_reason):
                inventory_refused = True
                old = inventory_reason.get("Item")
                inventory = _inventory_from_item(old) if old else None
        counter_reasons = record_reasons[len(outcomes) :]
        record_reasons = record_reasons[: len(outcomes)]
        already_recorded: dict[str, ReservationOutcome] = {}
        for outcome, reason in zip(outcomes, record_reasons, strict=True):
            if _failed(reason):
                old = reason.get("Item")
                if not old:
                    raise RuntimeError("record condition failed without ALL_OLD item") from exc
                already_recorded[outcome.reservation_id] = _outcome_from_item(old)
        customer_seats: dict[str, int] = {}
        for customer_id, reason in zip(customers, counter_reasons, strict=True):
            if _failed(reason):
                old = reason.get("Item")
                if not old:
                    raise RuntimeError("counter condition failed without ALL_OLD item") from exc
                customer_seats[customer_id] = int(old["seats"]["N"])
        return WriteRefused(
            inventory_refused=inventory_refused,
            inventory=inventory,
            already_recorded=already_recorded,
            customer_seats=customer_seats,
        )

    def read_inventory(self, key: SeatKey) -> SeatClassInventory | None:
        """GetItem with ConsistentRead: the seats left now, without writing to the hot item."""
        response = _call(
            self._client.get_item, TableName=self._table_name, Key=inventory_key(key), ConsistentRead=True
        )
        item = response.get("Item")
        return _inventory_from_item(item) if item else None

    # ------------------------------------------------------------------ confirm, cancel, expire

    def read_reservations(self, reservation_ids: Sequence[str]) -> dict[str, ReservationRecord]:
        """Consistent BatchGetItem, 100 keys per call; unprocessed keys are asked again with back-off.

        Raises `RetryableError` when DynamoDB still leaves keys unprocessed after a few attempts.
        """
        records: dict[str, ReservationRecord] = {}
        unique = list(dict.fromkeys(reservation_ids))
        for start in range(0, len(unique), BATCH_GET_LIMIT):
            keys: list[dict[str, Any]] = [reservation_key(i) for i in unique[start : start + BATCH_GET_LIMIT]]
            for attempt in range(BATCH_GET_ATTEMPTS):
                response = _call(
                    self._client.batch_get_item,
                    RequestItems={self._table_name: {"Keys": keys, "ConsistentRead": True}},
                )
                for item in response.get("Responses", {}).get(self._table_name, []):
                    record = _record_from_item(item)
                    records[record.reservation_id] = record
                unprocessed: Any = response.get("UnprocessedKeys", {})
                keys = list(unprocessed.get(self._table_name, {}).get("Keys", []))
                if not keys:
                    break
                self._sleep(BATCH_GET_BACKOFF_SECONDS * 2**attempt)
            if keys:
                raise RetryableError(f"BatchGetItem left {len(keys)} key(s) unprocessed")
        return records

    def commit_transitions(
        self,
        key: SeatKey,
        transitions: Sequence[Transition],
        *,
        now: int,
        capacity: int | None,
        release_expires_at: int,
    ) -> TransitionsRefused | None:
        """One transaction: the inventory update, one conditional update per record, the counters.

        The inventory update is `held -= confirmed + released holds`, `sold += confirmed - released
        sales`, `available += released`, guarded by `held >=` and `sold >=` what it takes off and,
        when seats go back, by `capacity = :capacity AND available <= :capacity - released`
        (DynamoDB conditions have no arithmetic, so the caller's capacity is checked too).
        """
        if not transitions:
            return None
        delta = _InventoryDelta.of(transitions)
        if delta.released and capacity is None:
            raise ValueError("releasing seats needs the capacity to guard against")
        counters: dict[str, int] = {}
        for transition in transitions:
            if transition.uncounts_customer:
                customer = transition.record.answer.customer_id or ""
                counters[customer] = counters.get(customer, 0) + transition.record.quantity
        changed_at = _timestamp()
        actions = [self._inventory_delta_action(key, delta, capacity)]
        actions += [
            self._transition_action(t, now=now, changed_at=changed_at, release_expires_at=release_expires_at)
            for t in transitions
        ]
        customers = list(counters)
        actions += [self._uncount_customer_action(key, c, counters[c]) for c in customers]
        cancelled = _call_expecting(
            TRANSACTION_CANCELED, self._client.transact_write_items, TransactItems=actions
        )
        if isinstance(cancelled, ClientError):
            return self._transition_refusal(cancelled, transitions, customers)
        return None

    def _inventory_delta_action(
        self, key: SeatKey, delta: _InventoryDelta, capacity: int | None
    ) -> dict[str, Any]:
        updates: list[str] = []
        conditions = ["attribute_exists(pk)"]
        values: dict[str, Any] = {}
        names: dict[str, str] = {}
        if delta.released:
            assert capacity is not None
            updates.append("available = available + :released")
            conditions.append("#capacity = :capacity AND available <= :available_max")
            names["#capacity"] = "capacity"
            values[":released"] = _number(delta.released)
            values[":capacity"] = _number(capacity)
            values[":available_max"] = _number(capacity - delta.released)
        if delta.unheld:
            updates.append("held = held - :unheld")
            conditions.append("held >= :unheld")
            values[":unheld"] = _number(delta.unheld)
        if delta.unsold:
            conditions.append("sold >= :unsold")
            values[":unsold"] = _number(delta.unsold)
        if delta.sold != delta.unsold:
            updates.append("sold = sold + :sold_delta")
            values[":sold_delta"] = _number(delta.sold - delta.unsold)
        update: dict[str, Any] = {
            "TableName": self._table_name,
            "Key": inventory_key(key),
            "UpdateExpression": "SET " + ", ".join(updates),
            "ConditionExpression": " AND ".join(conditions),
            "ExpressionAttributeValues": values,
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }
        if names:
            update["ExpressionAttributeNames"] = names
        return {"Update": update}

    def _transition_action(
        self, transition: Transition, *, now: int, changed_at: str, release_expires_at: int
    ) -> dict[str, Any]:
        record = transition.record
        values: dict[str, Any] = {
            ":to": {"S": transition.to.value},
            ":from": {"S": record.status.value},
            ":changed_at": {"S": changed_at},
        }
        sets = ["#status = :to", "status_changed_at = :changed_at"]
        removes = ["gsi1pk", "gsi1sk"]
        if record.status is Outcome.HELD:
            values[":now"] = _number(now)
            if transition.to is Outcome.EXPIRED:
                condition = "#status = :from AND hold_expires_at <= :now"
                # Into the outbox: the sweeper publishes EXPIRED, then takes it out.
                sets.append("gsi1pk = :outbox")
                values[":outbox"] = {"S": f"{OUTBOX_PREFIX}{hold_shard(record.reservation_id)}"}
                removes = []
            else:
                condition = "#status = :from AND hold_expires_at > :now"
            if transition.to is Outcome.CANCELLED:
                # A cancelled hold never sold a seat: it expires like a rejection.
                sets.append("expires_at = :expires_at")
                values[":expires_at"] = _number(release_expires_at)
        else:
            # Records written before statuses existed have only their outcome.
            condition = "#status = :from OR (attribute_not_exists(#status) AND outcome = :from)"
        expression = "SET " + ", ".join(sets) + (" REMOVE " + ", ".join(removes) if removes else "")
        return {
            "Update": {
                "TableName": self._table_name,
                "Key": reservation_key(record.reservation_id),
                "UpdateExpression": expression,
                "ConditionExpression": condition,
                "ExpressionAttributeNames": {"#status": "status"},
                "ExpressionAttributeValues": values,
                "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
            }
        }

    def _uncount_customer_action(self, key: SeatKey, customer_id: str, seats: int) -> dict[str, Any]:
        return {
            "Update": {
                "TableName": self._table_name,
                "Key": customer_key(key, customer_id),
                "UpdateExpression": "SET seats = seats - :seats",
                "ConditionExpression": "seats >= :seats",
                "ExpressionAttributeValues": {":seats": _number(seats)},
                "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
            }
        }

    @staticmethod
    def _transition_refusal(
        exc: ClientError, transitions: Sequence[Transition], customers: Sequence[str]
    ) -> TransitionsRefused:
        reasons = _cancellation_reasons(exc, 1 + len(transitions) + len(customers))
        inventory_reason = reasons[0]
        record_reasons = reasons[1 : 1 + len(transitions)]
        counter_reasons = reasons[1 + len(transitions) :]
        inventory_refused = _failed(inventory_reason)
        old_inventory = inventory_reason.get("Item")
        records: dict[str, ReservationRecord | None] = {}
        for transition, reason in zip(transitions, record_reasons, strict=True):
            if _failed(reason):
                old = reason.get("Item")
                records[transition.record.reservation_id] = _record_from_item(old) if old else None
        return TransitionsRefused(
            inventory_refused=inventory_refused,
            inventory=_inventory_from_item(old_inventory) if inventory_refused and old_inventory else None,
            records=records,
            counters_refused=frozenset(
                c for c, r in zip(customers, counter_reasons, strict=True) if _failed(r)
            ),
        )

    # ------------------------------------------------------------------ the sweeper's index

    def _query_index(
        self, partition: str, limit: int, now: int | None
    ) -> tuple[list[ReservationRecord], bool]:
        """Up to `limit` records of one index partition (due by `now` when given); and whether more remain."""
        request: dict[str, Any] = {
            "TableName": self._table_name,
            "IndexName": HOLDS_INDEX,
            "KeyConditionExpression": "gsi1pk = :pk" + (" AND gsi1sk <= :now" if now is not None else ""),
            "ExpressionAttributeValues": {":pk": {"S": partition}},
        }
        if now is not None:
            request["ExpressionAttributeValues"][":now"] = _number(now)
        records: list[ReservationRecord] = []
        while len(records) < limit:
            request["Limit"] = limit - len(records)
            page = _call(self._client.query, **request)
            records.extend(_record_from_item(item) for item in page.get("Items", []))
            if "LastEvaluatedKey" not in page:
                return records, False
            request["ExclusiveStartKey"] = page["LastEvaluatedKey"]
        return records, True

    def _query_shards(self, prefix: str, limit: int, now: int | None) -> list[ReservationRecord]:
        """Every shard gets an equal share of `limit` first, then shards with more get what is left."""
        found: list[ReservationRecord] = []
        more: list[int] = []
        share = max(1, -(-limit // HOLD_SHARDS))
        for shard in range(HOLD_SHARDS):
            records, has_more = self._query_index(f"{prefix}{shard}", min(share, limit - len(found)), now)
            found.extend(records)
            if has_more:
                more.append(shard)
            if len(found) >= limit:
                return found
        seen = {r.reservation_id for r in found}
        for shard in more:
            records, _ = self._query_index(f"{prefix}{shard}", limit - len(found) + share, now)
            found.extend(r for r in records if r.reservation_id not in seen)
            seen.update(r.reservation_id for r in records)
            if len(found) >= limit:
                return found[:limit]
        return found

    def find_expired_holds(self, now: int, limit: int) -> list[ReservationRecord]:
        """Query of each `HOLDS#<shard>` for `gsi1sk <= now`: holds that ran out (eventually consistent)."""
        return [r for r in self._query_shards(HOLDS_PREFIX, limit, now) if r.status is Outcome.HELD]

    def find_unpublished_expiries(self, limit: int) -> list[ReservationRecord]:
        """Query of each `EXPIRED#<shard>`: released holds whose EXPIRED outcome awaits publication."""
        return [r for r in self._query_shards(OUTBOX_PREFIX, limit, None) if r.status is Outcome.EXPIRED]

    def mark_expiries_published(self, records: Sequence[ReservationRecord], *, expires_at: int) -> int:
        """`REMOVE gsi1pk, gsi1sk SET expires_at` per record, conditional on it still being in the outbox.

        A record another sweeper took out first is skipped. The TTL starts only now, so an expiry
        is never deleted before it was announced.
        """
        cleared = 0
        for record in records:
            taken_out_first = _call_expecting(
                CONDITION_FAILED,
                self._client.update_item,
                TableName=self._table_name,
                Key=reservation_key(record.reservation_id),
                UpdateExpression="SET expires_at = :expires_at REMOVE gsi1pk, gsi1sk",
                ConditionExpression="gsi1pk = :outbox",
                ExpressionAttributeValues={
                    ":outbox": {"S": f"{OUTBOX_PREFIX}{hold_shard(record.reservation_id)}"},
                    ":expires_at": _number(expires_at),
                },
            )
            if not isinstance(taken_out_first, ClientError):
                cleared += 1
        return cleared

    # ------------------------------------------------------------------ operator

    def create_seat_class(
        self,
        key: SeatKey,
        capacity: int,
        *,
        max_per_customer: int | None = None,
        sale_starts_at: int | None = None,
        sale_ends_at: int | None = None,
        closed: bool = False,
    ) -> SeatClassInventory:
        """Creates the inventory of one seat class; never overwrites an existing one."""
        if capacity < 0:
            raise ValueError("capacity must not be negative")
        _check_limit(max_per_customer)
        _check_window(sale_starts_at, sale_ends_at)
        item: dict[str, Any] = {
            **inventory_key(key),
            "entity": {"S": "inventory"},
            "event_id": {"S": key.event_id},
            "seat_class": {"S": key.seat_class},
            "capacity": _number(capacity),
            "available": _number(capacity),
            "held": _number(0),
            "sold": _number(0),
            "created_at": {"S": _timestamp()},
        }
        if max_per_customer is not None:
            item["max_per_customer"] = _number(max_per_customer)
        if sale_starts_at is not None:
            item["sale_starts_at"] = _number(sale_starts_at)
        if sale_ends_at is not None:
            item["sale_ends_at"] = _number(sale_ends_at)
        if closed:
            item["sale_status"] = {"S": SaleStatus.CLOSED.value}
        exists = _call_expecting(
            CONDITION_FAILED,
            self._client.put_item,
            TableName=self._table_name,
            Item=item,
            ConditionExpression="attribute_not_exists(pk)",
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
        )
        if isinstance(exists, ClientError):
            old: Any = exists.response.get("Item")
            existing = _inventory_from_item(old) if old else None
            raise EventAlreadyExists(
                f"event {key.event_id!r} already has seat class {key.seat_class!r}"
                + (f" (capacity {existing.capacity}, available {existing.available})" if existing else "")
            ) from exists
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
            page = _call(self._client.query, **request)
            classes.extend(_inventory_from_item(item) for item in page.get("Items", []))
            if "LastEvaluatedKey" not in page:
                return sorted(classes, key=lambda c: c.seat_class)
            request["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def get_reservation(self, reservation_id: str) -> ReservationOutcome | None:
        """The answer recorded for a reservation id, or None when none was recorded (or it expired)."""
        record = self.get_reservation_record(reservation_id)
        return record.answer if record else None

    def get_reservation_record(self, reservation_id: str) -> ReservationRecord | None:
        """The whole record (answer and current status), read strongly consistently, or None."""
        response = _call(
            self._client.get_item,
            TableName=self._table_name,
            Key=reservation_key(reservation_id),
            ConsistentRead=True,
        )
        item = response.get("Item")
        return _record_from_item(item) if item else None

    def get_customer_seats(self, key: SeatKey, customer_id: str) -> int:
        """The seats counted against a customer's limit in a seat class (0 when none)."""
        response = _call(
            self._client.get_item,
            TableName=self._table_name,
            Key=customer_key(key, customer_id),
            ConsistentRead=True,
        )
        item = response.get("Item")
        return int(item["seats"]["N"]) if item else 0

    def set_sale_status(self, key: SeatKey, status: SaleStatus) -> SeatClassInventory:
        """Opens or closes the sale of one seat class (confirmations and cancellations go on)."""
        return self._operator_update(key, "SET sale_status = :status", {":status": {"S": status.value}})

    def set_sale_window(self, key: SeatKey, starts_at: int | None, ends_at: int | None) -> SeatClassInventory:
        """Replaces the sale window: seats sell from `starts_at` (inclusive) to `ends_at` (exclusive).

        None on either side leaves that side open; both None removes the window.
        """
        _check_window(starts_at, ends_at)
        sets: list[str] = []
        removes: list[str] = []
        values: dict[str, Any] = {}
        for name, value in (("sale_starts_at", starts_at), ("sale_ends_at", ends_at)):
            if value is None:
                removes.append(name)
            else:
                sets.append(f"{name} = :{name}")
                values[f":{name}"] = _number(value)
        expression = ("SET " + ", ".join(sets) if sets else "") + (
            " REMOVE " + ", ".join(removes) if removes else ""
        )
        return self._operator_update(key, expression.strip(), values)

    def set_max_per_customer(self, key: SeatKey, limit: int | None) -> SeatClassInventory:
        """Sets (or with None removes) the per-customer limit of one seat class.

        It applies to seats taken from now on: counters count only what was taken while a
        limit was set.
        """
        _check_limit(limit)
        if limit is None:
            return self._operator_update(key, "REMOVE max_per_customer", {})
        return self._operator_update(key, "SET max_per_customer = :limit", {":limit": _number(limit)})

    def change_capacity(self, key: SeatKey, delta: int) -> SeatClassInventory:
        """Adds seats (`capacity += n, available += n`) or removes unsold, unheld ones.

        Removing is guarded by `available >= :n`, so capacity never drops below sold + held; both
        are single conditional updates, so concurrent changes and sales never lose an update.
        """
        if delta == 0:
            raise ValueError("the capacity change must not be 0")
        if delta > 0:
            return self._operator_update(
                key,
                "SET #capacity = #capacity + :n, available = available + :n",
                {":n": _number(delta)},
                names={"#capacity": "capacity"},
            )
        return self._operator_update(
            key,
            "SET #capacity = #capacity - :n, available = available - :n",
            {":n": _number(-delta)},
            names={"#capacity": "capacity"},
            extra_condition="available >= :n",
            refused=lambda item: InventoryChangeRefused(
                f"cannot remove {-delta} seat(s) from {key.event_id} {key.seat_class}: only"
                f" {item.available} available ({item.sold} sold, {item.held} held, capacity {item.capacity})"
            ),
        )

    def set_capacity(self, key: SeatKey, capacity: int, *, attempts: int = 5) -> SeatClassInventory:
        """Sets the capacity to an absolute value: read, then one write guarded by the `version` read.

        The new `available` is derived from the capacity read, which an expression cannot do, so
        the write also requires the item's `version` to be the one read; a concurrent operator
        change makes it read and try again. Sales in between are harmless: `available` moves by
        a relative amount, guarded to stay at or above 0.
        """
        if capacity < 0:
            raise ValueError("capacity must not be negative")
        for _ in range(attempts):
            current = self.read_inventory(key)
            if current is None:
                raise UnknownSeatClass(f"event {key.event_id!r} has no seat class {key.seat_class!r}")
            delta = capacity - current.capacity
            if delta < 0 and current.available < -delta:
                raise InventoryChangeRefused(
                    f"cannot set the capacity of {key.event_id} {key.seat_class} to {capacity}:"
                    f" {current.sold} sold and {current.held} held"
                )
            version_condition = (
                "version = :version"
                if current.version
                else "(attribute_not_exists(version) OR version = :version)"
            )
            try:
                return self._operator_update(
                    key,
                    "SET #capacity = :capacity, available = available + :delta",
                    {
                        ":capacity": _number(capacity),
                        ":delta": _number(delta),
                        ":version": _number(current.version),
                        ":minus_delta": _number(max(0, -delta)),
                    },
                    names={"#capacity": "capacity"},
                    extra_condition=f"{version_condition} AND available >= :minus_delta",
                    refused=lambda item: _VersionMoved(),
                )
            except _VersionMoved:
                continue
        raise RetryableError(f"the capacity of {key} kept changing; try again")

    def _operator_update(
        self,
        key: SeatKey,
        expression: str,
        values: dict[str, Any],
        *,
        names: dict[str, str] | None = None,
        extra_condition: str | None = None,
        refused: Callable[[SeatClassInventory], Exception] | None = None,
    ) -> SeatClassInventory:
        """One conditional UpdateItem on an existing inventory item that also bumps its `version`."""
        bump = "version = if_not_exists(version, :zero) + :one"
        expression = (
            expression.replace("SET ", f"SET {bump}, ", 1)
            if "SET " in expression
            else f"SET {bump} {expression}"
        )
        condition = "attribute_exists(pk)" + (f" AND {extra_condition}" if extra_condition else "")
        request: dict[str, Any] = {
            "TableName": self._table_name,
            "Key": inventory_key(key),
            "UpdateExpression": expression,
            "ConditionExpression": condition,
            "ExpressionAttributeValues": {**values, ":zero": _number(0), ":one": _number(1)},
            "ReturnValues": "ALL_NEW",
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }
        if names:
            request["ExpressionAttributeNames"] = names
        response = _call_expecting(CONDITION_FAILED, self._client.update_item, **request)
        if isinstance(response, ClientError):
            old: Any = response.response.get("Item")
            if not old:
                raise UnknownSeatClass(
                    f"event {key.event_id!r} has no seat class {key.seat_class!r}"
                ) from response
            if refused is None:
                raise response
            raise refused(_inventory_from_item(old)) from response
        return _inventory_from_item(response["Attributes"])


class _VersionMoved(Exception):
    """The item's version changed between the read and the write of `set_capacity`."""


def _check_limit(limit: int | None) -> None:
    if limit is not None and limit < 1:
        raise ValueError("max_per_customer must be at least 1")


def _check_window(starts_at: int | None, ends_at: int | None) -> None:
    if starts_at is not None and ends_at is not None and ends_at <= starts_at:
        raise ValueError("the sale must end after it starts")
