"""The operator's commands and reads: create seat classes, sale status and window, limits, capacity."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from botocore.exceptions import ClientError

from seat_inventory.dal.access import TableAccess
from seat_inventory.dal.errors import CONDITION_FAILED, call, call_expecting
from seat_inventory.dal.items import (
    CLASS_PREFIX,
    INVENTORY_PREFIX,
    customer_key,
    inventory_from_item,
    inventory_key,
    number,
    record_from_item,
    reservation_key,
    timestamp,
)
from seat_inventory.models import (
    EventAlreadyExists,
    InventoryChangeRefused,
    ReservationOutcome,
    ReservationRecord,
    RetryableError,
    SaleStatus,
    SeatClassInventory,
    SeatKey,
    UnknownSeatClass,
)


class OperatorCommands(TableAccess):
    """The commands behind `seats event ...` and `seats reservation show`."""

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
            "capacity": number(capacity),
            "available": number(capacity),
            "held": number(0),
            "sold": number(0),
            "created_at": {"S": timestamp()},
        }
        if max_per_customer is not None:
            item["max_per_customer"] = number(max_per_customer)
        if sale_starts_at is not None:
            item["sale_starts_at"] = number(sale_starts_at)
        if sale_ends_at is not None:
            item["sale_ends_at"] = number(sale_ends_at)
        if closed:
            item["sale_status"] = {"S": SaleStatus.CLOSED.value}
        exists = call_expecting(
            CONDITION_FAILED,
            self._client.put_item,
            TableName=self._table_name,
            Item=item,
            ConditionExpression="attribute_not_exists(pk)",
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
        )
        if isinstance(exists, ClientError):
            old: Any = exists.response.get("Item")
            existing = inventory_from_item(old) if old else None
            raise EventAlreadyExists(
                f"event {key.event_id!r} already has seat class {key.seat_class!r}"
                + (f" (capacity {existing.capacity}, available {existing.available})" if existing else "")
            ) from exists
        return inventory_from_item(item)

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
            page = call(self._client.query, **request)
            classes.extend(inventory_from_item(item) for item in page.get("Items", []))
            if "LastEvaluatedKey" not in page:
                return sorted(classes, key=lambda c: c.seat_class)
            request["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def list_seat_classes(self) -> list[SeatClassInventory]:
        """Every seat class of every event, sorted by event and class (`seats event list`).

        A Scan: it reads the whole table (reservation records included) and is billed for it,
        about one read unit per 8 KB scanned (eventually consistent). Fine for an operator's look
        at a few thousand items; an index would be the way for millions.
        """
        classes: list[SeatClassInventory] = []
        request: dict[str, Any] = {
            "TableName": self._table_name,
            "FilterExpression": "begins_with(pk, :event_prefix) AND begins_with(sk, :class_prefix)",
            "ExpressionAttributeValues": {
                ":event_prefix": {"S": INVENTORY_PREFIX},
                ":class_prefix": {"S": CLASS_PREFIX},
            },
        }
        while True:
            page = call(self._client.scan, **request)
            classes.extend(inventory_from_item(item) for item in page.get("Items", []))
            if "LastEvaluatedKey" not in page:
                return sorted(classes, key=lambda c: (c.event_id, c.seat_class))
            request["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def get_reservation(self, reservation_id: str) -> ReservationOutcome | None:
        """The answer recorded for a reservation id, or None when none was recorded (or it expired)."""
        record = self.get_reservation_record(reservation_id)
        return record.answer if record else None

    def get_reservation_record(self, reservation_id: str) -> ReservationRecord | None:
        """The whole record (answer and current status), read strongly consistently, or None."""
        response = call(
            self._client.get_item,
            TableName=self._table_name,
            Key=reservation_key(reservation_id),
            ConsistentRead=True,
        )
        item = response.get("Item")
        return record_from_item(item) if item else None

    def get_customer_seats(self, key: SeatKey, customer_id: str) -> int:
        """The seats counted against a customer's limit in a seat class (0 when none)."""
        response = call(
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
                values[f":{name}"] = number(value)
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
        return self._operator_update(key, "SET max_per_customer = :limit", {":limit": number(limit)})

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
                {":n": number(delta)},
                names={"#capacity": "capacity"},
            )
        return self._operator_update(
            key,
            "SET #capacity = #capacity - :n, available = available - :n",
            {":n": number(-delta)},
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
                        ":capacity": number(capacity),
                        ":delta": number(delta),
                        ":version": number(current.version),
                        ":minus_delta": number(max(0, -delta)),
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
            "ExpressionAttributeValues": {**values, ":zero": number(0), ":one": number(1)},
            "ReturnValues": "ALL_NEW",
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }
        if names:
            request["ExpressionAttributeNames"] = names
        response = call_expecting(CONDITION_FAILED, self._client.update_item, **request)
        if isinstance(response, ClientError):
            old: Any = response.response.get("Item")
            if not old:
                raise UnknownSeatClass(
                    f"event {key.event_id!r} has no seat class {key.seat_class!r}"
                ) from response
            if refused is None:
                raise response
            raise refused(inventory_from_item(old)) from response
        return inventory_from_item(response["Attributes"])


class _VersionMoved(Exception):
    """The item's version changed between the read and the write of `set_capacity`."""


def _check_limit(limit: int | None) -> None:
    if limit is not None and limit < 1:
        raise ValueError("max_per_customer must be at least 1")


def _check_window(starts_at: int | None, ends_at: int | None) -> None:
    if starts_at is not None and ends_at is not None and ends_at <= starts_at:
        raise ValueError("the sale must end after it starts")
