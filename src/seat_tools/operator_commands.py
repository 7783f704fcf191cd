"""The operator's commands and reads: create seat classes, sale status and window, limits, capacity.

Every operator write happens exactly once, even when DynamoDB's reply is lost and the request is
sent again (botocore retries a read timeout or a 500 that may have succeeded). Each write carries
an operation id, and the inventory item keeps the ids of its last `RECENT_OPERATIONS` operator
writes (`recent_operations`). A change is read first, then written with one UpdateItem
conditional on the `version` read (every operator write bumps it; sales do not), so a retry of
a write that committed is refused, and the refusal (ALL_OLD) shows the retry's own id: that is
the success it was, not a conflict. A creation is a PutItem conditional on the item not existing,
recorded with its id the same way. When a write fails without an answer, the item is read again:
its own id says it was applied; otherwise it was not, and the error says so. Only when that read
fails too is the outcome unknown (`OperatorOutcomeUnknown`).
"""

from __future__ import annotations

import functools
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import ClientError

from seat_inventory.dal.errors import (
    CONDITION_FAILED,
    TRANSACTION_CANCELED,
    call,
    call_expecting,
    cancellation_reasons,
)
from seat_inventory.dal.inventory_table import InventoryTable
from seat_inventory.dal.items import (
    ADMISSION_REQUIRED,
    CLASS_PREFIX,
    INVENTORY_PREFIX,
    POOL_NAMES,
    customer_key,
    inventory_from_item,
    inventory_key,
    number,
    pool_names_value,
    record_from_item,
    reservation_key,
    timestamp,
)
from seat_inventory.models import (
    ReservationOutcome,
    ReservationRecord,
    RetryableError,
    SaleStatus,
    SeatClassInventory,
    SeatKey,
    TransactionConflict,
)
from seat_tools.exactly_once import (
    OPERATIONS_ATTRIBUTE,
    RECENT_OPERATIONS,
    applied_after_no_answer,
    new_operation_id,
    send_once,
)
from seat_tools.exactly_once import recent_operations as _operations
from seat_tools.operator_errors import (
    EventAlreadyExists,
    InventoryChangeRefused,
    UnknownSeatClass,
    WaitlistTakesNewSeats,
)
from seat_tools.pool_commands import PoolCommands, check_pool_names
from seat_tools.resharding import check_shard_count, rebalance, removal, spread
from seat_tools.seat_blocks import SeatBlockCommands
from seat_tools.seat_map_commands import SeatMapCommands
from seat_tools.ticket_admin import TicketAdmin
from seat_tools.waitlist_admin import WaitlistAdmin

# Operation ids an inventory item remembers (`exactly_once.RECENT_OPERATIONS`): 8 ids of 16
# characters add about 150 bytes to the item, well inside the 1 KB that one write unit of every
# reservation transaction covers.
# Reads and writes of one operator command: another operator's change in between makes it read
# again; a write without an answer is verified by reading, at most this often.
OPERATOR_ATTEMPTS = 5
OPERATOR_BACKOFF_SECONDS = 0.1
# Consistent reads of a sharded class (`read_inventory`, itself 5 quick attempts), each cancelled
# while a sale's transaction writes one of its shard items: read up to 10 times, with
# jittered back-offs of at most 33 s in all (about half that on average).
OPERATOR_READ_ATTEMPTS = 10
OPERATOR_READ_BACKOFF_CAP_SECONDS = 10.0


@dataclass(frozen=True, slots=True)
class _Change:
    """One operator change planned from the item as read: what to set, and what else to guard."""

    expression: str  # SET and/or REMOVE clauses; the version and the operation ids are added
    values: dict[str, Any] = field(default_factory=dict)
    names: dict[str, str] = field(default_factory=dict)
    guard: str | None = None  # a condition on what sales move (`available`), checked by the write
    refused: Callable[[SeatClassInventory], Exception] | None = None  # when the guard fails
    # A capacity change of the class, which a sharded class spreads over its shard items.
    capacity_delta: int | None = None


class OperatorCommands(PoolCommands):
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
        operation_id: str | None = None,
        shards: int = 1,
        admission_required: bool = False,
        pools: Sequence[str] = (),
    ) -> SeatClassInventory:
        """Creates the inventory of one seat class; never overwrites an existing one.

        A class that exists already raises `EventAlreadyExists`, unless this very operation
        created it (its reply was lost and the request was sent again): then it is returned.
        With `shards` > 1 the capacity is spread evenly over that many shard items, written in one
        transaction (docs/explanation/sharding.md); 1 writes a single item. With `admission_required` reserve
        and hold need an admission token (docs/guides/admission.md). With `pools` the class takes its
        seats from those capacity pools as well, which must exist (docs/guides/pools.md); a new class
        has sold nothing, so it joins a pool without changing the pool's counts.
        """
        operation_id = operation_id or new_operation_id()
        self._check_pools_exist(key.event_id, pools)
        if capacity < 0:
            raise ValueError("capacity must not be negative")
        _check_limit(max_per_customer)
        _check_window(sale_starts_at, sale_ends_at)
        check_shard_count(shards)
        if shards > 1:
            return self._create_sharded(
                key,
                capacity,
                shards,
                max_per_customer,
                sale_starts_at,
                sale_ends_at,
                closed,
                operation_id,
                admission_required=admission_required,
                pools=pools,
            )
        item: dict[str, Any] = {
            **inventory_key(key),
            **_shard_attributes(key, 0, capacity, timestamp()),
            OPERATIONS_ATTRIBUTE: {"L": [{"S": operation_id}]},
        }
        if max_per_customer is not None:
            item["max_per_customer"] = number(max_per_customer)
        if sale_starts_at is not None:
            item["sale_starts_at"] = number(sale_starts_at)
        if sale_ends_at is not None:
            item["sale_ends_at"] = number(sale_ends_at)
        if closed:
            item["sale_status"] = {"S": SaleStatus.CLOSED.value}
        if admission_required:
            item[ADMISSION_REQUIRED] = {"BOOL": True}
        if pools:
            item[POOL_NAMES] = pool_names_value(pools)
        exists: ClientError | None = None
        for attempt in range(OPERATOR_ATTEMPTS):
            try:
                response = call_expecting(
                    CONDITION_FAILED,
                    self._client.put_item,
                    TableName=self._table_name,
                    Item=item,
                    ConditionExpression="attribute_not_exists(pk)",
                    ReturnValuesOnConditionCheckFailure="ALL_OLD",
                )
            except RetryableError as exc:
                # No answer: the item, read again, tells whether this operation created it.
                stored = self._read_after_no_answer(key, operation_id, exc)
                if stored is not None:
                    return inventory_from_item(stored)
                if attempt == OPERATOR_ATTEMPTS - 1:
                    raise RetryableError(f"{exc}; {key.event_id} {key.seat_class} was not created") from exc
                continue
            exists = response if isinstance(response, ClientError) else None
            break
        if isinstance(exists, ClientError):
            old: Any = exists.response.get("Item")
            if old and operation_id in _operations(old):
                return inventory_from_item(old)  # this operation created it; its reply was lost
            existing = inventory_from_item(old) if old else None
            raise EventAlreadyExists(
                f"event {key.event_id!r} already has seat class {key.seat_class!r}"
                + (f" (capacity {existing.capacity}, available {existing.available})" if existing else "")
            ) from exists
        return inventory_from_item(item)

    def _create_sharded(
        self,
        key: SeatKey,
        capacity: int,
        shards: int,
        max_per_customer: int | None,
        sale_starts_at: int | None,
        sale_ends_at: int | None,
        closed: bool,
        operation_id: str,
        *,
        admission_required: bool = False,
        pools: Sequence[str] = (),
    ) -> SeatClassInventory:
        created_at = timestamp()
        puts: list[dict[str, Any]] = []
        for shard, seats in enumerate(spread(capacity, shards)):
            item: dict[str, Any] = {
                **inventory_key(key, shard),
                **_shard_attributes(key, shard, seats, created_at),
            }
            if shard == 0:
                item["shard_count"] = number(shards)
                item["shard_items"] = number(shards)
                item[OPERATIONS_ATTRIBUTE] = {"L": [{"S": operation_id}]}
            if max_per_customer is not None:
                item["max_per_customer"] = number(max_per_customer)
            if sale_starts_at is not None:
                item["sale_starts_at"] = number(sale_starts_at)
            if sale_ends_at is not None:
                item["sale_ends_at"] = number(sale_ends_at)
            if closed:
                item["sale_status"] = {"S": SaleStatus.CLOSED.value}
            if admission_required:
                item[ADMISSION_REQUIRED] = {"BOOL": True}
            if pools:
                item[POOL_NAMES] = pool_names_value(pools)
            puts.append(
                {
                    "Put": {
                        "TableName": self._table_name,
                        "Item": item,
                        "ConditionExpression": "attribute_not_exists(pk)",
                    }
                }
            )
        try:
            cancelled = call_expecting(
                TRANSACTION_CANCELED, self._client.transact_write_items, TransactItems=puts
            )
        except RetryableError as exc:
            if self._read_after_no_answer(key, operation_id, exc) is None:
                raise RetryableError(f"{exc}; {key.event_id} {key.seat_class} was not created") from exc
            cancelled = None
        if isinstance(cancelled, ClientError):
            cancellation_reasons(cancelled, len(puts))
            old = self._read_item(key)
            if old is None or operation_id not in _operations(old):
                raise EventAlreadyExists(
                    f"event {key.event_id!r} already has seat class {key.seat_class!r}"
                ) from cancelled
        created = self._read_class(key)
        if created is None:
            raise RetryableError(f"{key} was created but could not be read back")
        return created

    def check_pools_exist(self, event_id: str, pools: Sequence[str]) -> None:
        """A mapped class joins only pools that exist, as a counted class does (ValueError otherwise)."""
        self._check_pools_exist(event_id, pools)

    def _check_pools_exist(self, event_id: str, pools: Sequence[str]) -> None:
        """A class joins only pools that exist (`seats event pool create`); ValueError otherwise."""
        check_pool_names(pools)
        for pool in pools:
            if self.get_pool(event_id, pool) is None:
                raise ValueError(
                    f"event {event_id!r} has no pool {pool!r}; create it with `seats event pool create`"
                )

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
            classes.extend(self._whole_classes(page.get("Items", [])))
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
            classes.extend(self._whole_classes(page.get("Items", [])))
            if "LastEvaluatedKey" not in page:
                return sorted(classes, key=lambda c: (c.event_id, c.seat_class))
            request["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def _whole_classes(self, items: Sequence[Mapping[str, Any]]) -> list[SeatClassInventory]:
        """The classes whose shard 0 is among `items` (other shard items are skipped); a sharded
        class's totals come from a consistent read of all its items."""
        classes: list[SeatClassInventory] = []
        for item in items:
            view = inventory_from_item(item)
            if view.shard_seats()[0].shard != 0:
                continue
            classes.append(view if view.complete else self._read_class(view.key) or view)
        return classes

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

    def set_sale_status(
        self, key: SeatKey, status: SaleStatus, *, operation_id: str | None = None
    ) -> SeatClassInventory:
        """Opens or closes the sale of one seat class (confirmations and cancellations go on)."""
        return self._operator_write(
            key,
            lambda _: _Change("SET sale_status = :status", {":status": {"S": status.value}}),
            operation_id,
        )

    def set_sale_window(
        self, key: SeatKey, starts_at: int | None, ends_at: int | None, *, operation_id: str | None = None
    ) -> SeatClassInventory:
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
        return self._operator_write(key, lambda _: _Change(expression.strip(), values), operation_id)

    def set_max_per_customer(
        self, key: SeatKey, limit: int | None, *, operation_id: str | None = None
    ) -> SeatClassInventory:
        """Sets (or with None removes) the per-customer limit of one seat class.

        It applies to seats taken from now on: counters count only what was taken while a
        limit was set.
        """
        _check_limit(limit)
        if limit is None:
            change = _Change("REMOVE max_per_customer")
        else:
            change = _Change("SET max_per_customer = :limit", {":limit": number(limit)})
        return self._operator_write(key, lambda _: change, operation_id)

    def set_admission_required(
        self, key: SeatKey, required: bool, *, operation_id: str | None = None
    ) -> SeatClassInventory:
        """Makes reserve and hold of one seat class need an admission token, or no longer
        (docs/guides/admission.md). Exactly once like every operator write; the write that takes seats
        checks the flag the planner assumed, so a container that has not seen the change yet is
        refused and plans again."""
        if required:
            change = _Change(f"SET {ADMISSION_REQUIRED} = :required", {":required": {"BOOL": True}})
        else:
            change = _Change(f"REMOVE {ADMISSION_REQUIRED}")
        return self._operator_write(key, lambda _: change, operation_id)

    def change_capacity(
        self, key: SeatKey, delta: int, *, operation_id: str | None = None
    ) -> SeatClassInventory:
        """Adds seats (`capacity += n, available += n`) or removes unsold, unheld ones.

        Removing is guarded by `available >= :n`, so capacity never drops below sold + held.
        Sales between the read and the write are harmless (`available` moves by a relative
        amount, guarded); another operator change makes it read again; a retry of a write that
        committed is recognised by its operation id, so the seats are added or removed once.
        """
        if delta == 0:
            raise ValueError("the capacity change must not be 0")

        def plan(current: SeatClassInventory) -> _Change:
            if delta < 0 and current.available < -delta:
                raise _too_few(key, -delta, current)
            if delta > 0:
                _refuse_if_listed(key, current)
            return _Change(
                "SET #capacity = :capacity, available = available + :delta",
                {":capacity": number(current.capacity + delta), ":delta": number(delta)},
                {"#capacity": "capacity"},
                guard="available >= :minus_delta",
                refused=lambda item: _too_few(key, -delta, item),
                capacity_delta=delta,
            )

        return self._operator_write(key, plan, operation_id)

    def set_capacity(
        self, key: SeatKey, capacity: int, *, operation_id: str | None = None
    ) -> SeatClassInventory:
        """Sets the capacity to an absolute value (not below sold + held).

        The new `available` is derived from the capacity read, which an expression cannot do;
        the write requires the `version` read, so a concurrent operator change makes it read and
        try again.
        """
        if capacity < 0:
            raise ValueError("capacity must not be negative")

        def plan(current: SeatClassInventory) -> _Change:
            delta = capacity - current.capacity

            def refused(item: SeatClassInventory) -> Exception:
                return InventoryChangeRefused(
                    f"cannot set the capacity of {key.event_id} {key.seat_class} to {capacity}:"
                    f" {item.sold} sold and {item.held} held"
                )

            if delta < 0 and current.available < -delta:
                raise refused(current)
            if delta > 0:
                _refuse_if_listed(key, current)
            return _Change(
                "SET #capacity = :capacity, available = available + :delta",
                {":capacity": number(capacity), ":delta": number(delta)},
                {"#capacity": "capacity"},
                guard="available >= :minus_delta",
                refused=refused,
                capacity_delta=delta,
            )

        return self._operator_write(key, plan, operation_id)

    def reshard(self, key: SeatKey, shards: int, *, operation_id: str | None = None) -> SeatClassInventory:
        """Splits the class over `shards` shard items (1 to MAX_SHARDS), during a sale if need be.

        One transaction planned from a consistent read: missing shard items are created, the
        available seats (and as much capacity) move so that the first `shards` items hold equal
        shares and the others none, and shard 0 records the new counts. Every move is guarded by
        `available >=` what it takes off, shard 0 by the version and the number of items read, so
        capacity, available, held and sold of the class are the same before and after; a sale in
        between refuses it and it is planned again. Items beyond `shards` are kept (their held and
        sold seats come back to them) and still count.
        """
        check_shard_count(shards)
        operation_id = operation_id or new_operation_id()
        for _ in range(OPERATOR_ATTEMPTS * 2):
            item = self._read_item(key)
            if item is None:
                raise UnknownSeatClass(f"event {key.event_id!r} has no seat class {key.seat_class!r}")
            view = self._read_class(key)
            if view is None:
                raise UnknownSeatClass(f"event {key.event_id!r} has no seat class {key.seat_class!r}")
            if operation_id in _operations(item):
                return view
            per_shard = rebalance(view, shards)
            try:
                written = self._write_shards(
                    key, item, view, operation_id, "", None, per_shard, routed=shards
                )
            except RetryableError as exc:
                if self._read_after_no_answer(key, operation_id, exc) is not None:
                    return self._whole(key, view)
                continue
            if written:
                return self._whole(key, view)
        raise RetryableError(f"the seats of {key} kept moving during the reshard; try again")

    def _whole(self, key: SeatKey, fallback: SeatClassInventory) -> SeatClassInventory:
        """The class as it is now, read consistently over all its items."""
        return self._read_class(key) or fallback

    def _read_class(self, key: SeatKey) -> SeatClassInventory | None:
        """`read_inventory`, patient: on AWS a sale's transaction in flight on any shard item
        cancels the consistent read of a sharded class (`TransactGetItems`), and during a rush one
        almost always is, so an operator command reads again after a jittered back-off (0.1 s
        doubling, at most 10 s) before it gives up with the `TransactionConflict`."""
        for attempt in range(OPERATOR_READ_ATTEMPTS):
            try:
                return self.read_inventory(key)
            except TransactionConflict:
                if attempt == OPERATOR_READ_ATTEMPTS - 1:
                    raise
                cap = min(OPERATOR_BACKOFF_SECONDS * 2**attempt, OPERATOR_READ_BACKOFF_CAP_SECONDS)
                self._sleep(random.uniform(0, cap))
        raise AssertionError("unreachable")

    def _write_shards(
        self,
        key: SeatKey,
        item: Mapping[str, Any],
        view: SeatClassInventory,
        operation_id: str,
        expression: str,
        change: _Change | None,
        per_shard: Mapping[int, int],
        *,
        routed: int | None = None,
    ) -> bool:
        """One transaction over the shard items of a class: the sale-rule `expression` on every item
        (unless the change is a capacity change), `per_shard[n]` added to capacity and available of
        item n (creating items that do not exist yet), and on shard 0 the version, the operation
        id and (with `routed`) the new shard counts, guarded by the version and the number of items
        read. False when a condition refused it (nothing was written)."""
        rule = "" if change is not None and change.capacity_delta is not None else expression
        values_common = dict(change.values) if change is not None and rule else {}
        names_common = dict(change.names) if change is not None and rule else {}
        items = max(view.shard_items, max(per_shard, default=-1) + 1)
        actions: list[dict[str, Any]] = []
        created_at = timestamp()
        for shard in range(items):
            delta = per_shard.get(shard, 0)
            if shard >= view.shard_items:
                new_item = _new_shard_item(key, shard, delta, created_at, view)
                actions.append(
                    {
                        "Put": {
                            "TableName": self._table_name,
                            "Item": new_item,
                            "ConditionExpression": "attribute_not_exists(pk)",
                        }
                    }
                )
                continue
            if shard != 0 and not rule and delta == 0:
                continue
            sets: list[str] = []
            conditions = ["attribute_exists(pk)"]
            values: dict[str, Any] = dict(values_common)
            names: dict[str, str] = dict(names_common)
            if delta:
                sets.append(
                    "#shard_capacity = #shard_capacity + :shard_delta, available = available + :shard_delta"
                )
                names["#shard_capacity"] = "capacity"
                values[":shard_delta"] = number(delta)
            if delta < 0:
                conditions.append("available >= :shard_taken")
                values[":shard_taken"] = number(-delta)
            if shard == 0:
                recent = [*_operations(item), operation_id][-RECENT_OPERATIONS:]
                # Guarded by the version of `item`, the read whose recent operation ids this
                # rewrites: a change landing after it (even before `view` was read) refuses the write
                # rather than having its id dropped (its retry would be applied twice).
                version = inventory_from_item(item).version
                sets += ["version = :next_version", f"{OPERATIONS_ATTRIBUTE} = :operations"]
                values[":next_version"] = number(version + 1)
                values[":operations"] = {"L": [{"S": op} for op in recent]}
                if "version" in item:
                    conditions.append("version = :version")
                    values[":version"] = number(version)
                else:
                    conditions.append("attribute_not_exists(version)")
                conditions.append(
                    "(attribute_not_exists(shard_items) OR shard_items = :items)"
                    if view.shard_items == 1
                    else "shard_items = :items"
                )
                values[":items"] = number(view.shard_items)
                if routed is not None:
                    sets.append("shard_items = :new_items, shard_count = :routed")
                    values[":new_items"] = number(items)
                    values[":routed"] = number(routed)
            update: dict[str, Any] = {
                "TableName": self._table_name,
                "Key": inventory_key(key, shard),
                "UpdateExpression": _with_sets(rule, sets),
                "ConditionExpression": " AND ".join(conditions),
            }
            if values:
                update["ExpressionAttributeValues"] = values
            if names:
                update["ExpressionAttributeNames"] = names
            actions.append({"Update": update})
        cancelled = call_expecting(
            TRANSACTION_CANCELED, self._client.transact_write_items, TransactItems=actions
        )
        if isinstance(cancelled, ClientError):
            cancellation_reasons(cancelled, len(actions))
            return False
        return True

    def _read_item(self, key: SeatKey) -> dict[str, Any] | None:
        response = call(
            self._client.get_item, TableName=self._table_name, Key=inventory_key(key), ConsistentRead=True
        )
        item: Any = response.get("Item")
        return item

    def _read_after_no_answer(
        self, key: SeatKey, operation_id: str, error: RetryableError
    ) -> dict[str, Any] | None:
        """After a write that got no answer: the item if it shows `operation_id` (the write was
        applied), None if it does not (it was not). Raises `OperatorOutcomeUnknown` when the item
        cannot be read either (`exactly_once`)."""
        stored = applied_after_no_answer(
            lambda: self._read_item(key),
            operation_id,
            error,
            sleep=self._sleep,
            what=f"{key.event_id} {key.seat_class}",
            event_id=key.event_id,
        )
        return dict(stored) if stored is not None else None

    def _operator_write(
        self,
        key: SeatKey,
        plan: Callable[[SeatClassInventory], _Change],
        operation_id: str | None,
    ) -> SeatClassInventory:
        """Reads the item, then writes `plan(item)` once: one UpdateItem conditional on the
        `version` read, which bumps it and records `operation_id` among the item's recent ones.

        Returns the item as written. A refusal that shows `operation_id` is this write, sent
        again after its reply was lost: success. A refusal because another operator change
        moved the version reads again; one by the change's guard raises its `refused` error.
        """
        operation_id = operation_id or new_operation_id()
        unanswered: RetryableError | None = None
        for _ in range(OPERATOR_ATTEMPTS):
            item = self._read_item(key)
            if item is None:
                raise UnknownSeatClass(f"event {key.event_id!r} has no seat class {key.seat_class!r}")
            current = inventory_from_item(item)
            if operation_id in _operations(item):
                return self._whole(key, current)  # applied by an earlier attempt of this operation
            if current.shard_items > 1:
                # A sharded class: planned from all its items, written to all in one transaction.
                view = self._read_class(key)
                if view is None:
                    raise UnknownSeatClass(f"event {key.event_id!r} has no seat class {key.seat_class!r}")
                change = plan(view)
                per_shard = _capacity_changes(view, change.capacity_delta)
                try:
                    written = self._write_shards(
                        key, item, view, operation_id, change.expression, change, per_shard
                    )
                except RetryableError as exc:
                    if self._read_after_no_answer(key, operation_id, exc) is not None:
                        return self._whole(key, current)
                    unanswered = exc
                    continue
                if written or operation_id in _operations(self._read_item(key) or {}):
                    return self._whole(key, current)
                continue  # another change or a sale came first: plan again from a new read
            change = plan(current)
            request = self._update_request(key, item, change, operation_id)
            sent = send_once(
                functools.partial(call_expecting, CONDITION_FAILED, self._client.update_item, **request),
                operation_id=operation_id,
                read=lambda: self._read_item(key),
                sleep=self._sleep,
                what=f"{key.event_id} {key.seat_class}",
                event_id=key.event_id,
            )
            if sent.applied is not None:
                return inventory_from_item(sent.applied)
            if sent.unanswered is not None:
                unanswered = sent.unanswered  # not applied: plan again
                continue
            if sent.refused is None:
                raise UnknownSeatClass(
                    f"event {key.event_id!r} has no seat class {key.seat_class!r}"
                ) from sent.error
            refused_item = inventory_from_item(sent.refused)
            if refused_item.version != current.version or refused_item.shard_items > 1:
                continue  # another operator change (or a reshard) came first: plan again
            if change.refused is None:
                assert sent.error is not None
                raise sent.error
            raise change.refused(refused_item) from sent.error
        if unanswered is not None:
            raise RetryableError(
                f"{unanswered}; {key.event_id} {key.seat_class} was not changed"
            ) from unanswered
        raise RetryableError(f"{key.event_id} {key.seat_class} kept changing; it was not changed, try again")

    def _update_request(
        self, key: SeatKey, item: Mapping[str, Any], change: _Change, operation_id: str
    ) -> dict[str, Any]:
        recent = [*_operations(item), operation_id][-RECENT_OPERATIONS:]
        version = inventory_from_item(item).version
        bump = f"version = :next_version, {OPERATIONS_ATTRIBUTE} = :operations"
        expression = change.expression
        expression = (
            expression.replace("SET ", f"SET {bump}, ", 1)
            if "SET " in expression
            else f"SET {bump} {expression}"
        )
        # Never only shard 0 of a sharded class (a reshard between the read and the write).
        condition = (
            "attribute_exists(pk) AND (attribute_not_exists(shard_items) OR shard_items = :one_item) AND "
            + ("version = :version" if "version" in item else "attribute_not_exists(version)")
        )
        values = {
            **change.values,
            ":next_version": number(version + 1),
            ":operations": {"L": [{"S": op} for op in recent]},
            ":one_item": number(1),
        }
        if "version" in item:
            values[":version"] = number(version)
        if change.guard:
            condition += f" AND {change.guard}"
            delta = int(change.values.get(":delta", {"N": "0"})["N"])
            values[":minus_delta"] = number(max(0, -delta))
        request: dict[str, Any] = {
            "TableName": self._table_name,
            "Key": inventory_key(key),
            "UpdateExpression": expression,
            "ConditionExpression": condition,
            "ExpressionAttributeValues": values,
            "ReturnValues": "ALL_NEW",
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }
        if change.names:
            request["ExpressionAttributeNames"] = change.names
        return request


def _refuse_if_listed(key: SeatKey, current: SeatClassInventory) -> None:
    """Seats added to a class whose open waiting list takes them (not in capacity pools, whose
    new seats go on sale: docs/guides/waiting-list.md) are the list's."""
    if current.waitlist and not current.pools:
        raise WaitlistTakesNewSeats(
            f"{key.event_id} {key.seat_class} has an open waiting list: its new seats are offered to"
            " the list first (seats event capacity --add N, or seats waitlist add-seats)"
        )


def _capacity_changes(view: SeatClassInventory, delta: int | None) -> dict[int, int]:
    """A capacity change of a sharded class per shard item: seats added are spread over the routed
    shards, seats removed come off the shards with the most available."""
    if not delta:
        return {}
    if delta > 0:
        routed = max(1, min(view.shard_count, view.shard_items))
        return dict(enumerate(spread(delta, routed)))
    return {shard: -seats for shard, seats in removal(view, -delta).items()}


def _shard_attributes(key: SeatKey, shard: int, capacity: int, created_at: str) -> dict[str, Any]:
    """The attributes of a new inventory item holding `capacity` available seats."""
    attributes: dict[str, Any] = {
        "entity": {"S": "inventory"},
        "event_id": {"S": key.event_id},
        "seat_class": {"S": key.seat_class},
        "capacity": number(capacity),
        "available": number(capacity),
        "held": number(0),
        "sold": number(0),
        "created_at": {"S": created_at},
    }
    if shard:
        attributes["shard"] = number(shard)
    return attributes


def _new_shard_item(
    key: SeatKey, shard: int, capacity: int, created_at: str, view: SeatClassInventory
) -> dict[str, Any]:
    """A new shard item of a class being resharded: its seats, and the class's sale rules."""
    item = {**inventory_key(key, shard), **_shard_attributes(key, shard, capacity, created_at)}
    for name in ("max_per_customer", "sale_starts_at", "sale_ends_at"):
        value = getattr(view, name)
        if value is not None:
            item[name] = number(value)
    if view.sale_status is SaleStatus.CLOSED:
        item["sale_status"] = {"S": SaleStatus.CLOSED.value}
    if view.admission_required:
        item[ADMISSION_REQUIRED] = {"BOOL": True}
    if view.pools:
        item[POOL_NAMES] = pool_names_value(view.pools)
    return item


def _with_sets(expression: str, sets: Sequence[str]) -> str:
    """`expression` (SET and/or REMOVE clauses, or empty) with `sets` added to its SET clause."""
    if not sets:
        return expression
    joined = ", ".join(sets)
    if "SET " in expression:
        return expression.replace("SET ", f"SET {joined}, ", 1)
    return f"SET {joined} {expression}".strip()


def _too_few(key: SeatKey, seats: int, item: SeatClassInventory) -> InventoryChangeRefused:
    return InventoryChangeRefused(
        f"cannot remove {seats} seat(s) from {key.event_id} {key.seat_class}: only"
        f" {item.available} available ({item.sold} sold, {item.held} held, capacity {item.capacity})"
    )


def _check_limit(limit: int | None) -> None:
    if limit is not None and limit < 1:
        raise ValueError("max_per_customer must be at least 1")


def _check_window(starts_at: int | None, ends_at: int | None) -> None:
    if starts_at is not None and ends_at is not None and ends_at <= starts_at:
        raise ValueError("the sale must end after it starts")


class OperatorTable(
    InventoryTable, OperatorCommands, SeatBlockCommands, SeatMapCommands, TicketAdmin, WaitlistAdmin
):
    """The service's table with the operator's commands and reads: what the `seats` tools use."""
