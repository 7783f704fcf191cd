"""The operator's commands on capacity pools (`seats event pool ...`; docs/pools.md).

A pool is one item beside the event's seat classes. Like every operator change of a seat class
(`operator_commands`), each change is one conditional write that happens exactly once: it is
guarded by the `version` read and records its operation id among the item's recent ones, so a
retry after a lost reply is recognised instead of applied twice. Sales move `available`, `held`
and `sold` by relative, guarded amounts, so a change never races them into a wrong count.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import ClientError

from seat_inventory.dal.access import TableAccess
from seat_inventory.dal.errors import CONDITION_FAILED, call, call_expecting
from seat_inventory.dal.items import (
    INVENTORY_PREFIX,
    POOL_PREFIX,
    number,
    pool_from_item,
    pool_key,
    timestamp,
)
from seat_inventory.models import (
    MAX_POOLS_PER_CLASS,
    EventAlreadyExists,
    InventoryChangeRefused,
    OperatorOutcomeUnknown,
    PoolInventory,
    RetryableError,
    SaleStatus,
    UnknownSeatClass,
)
from seat_inventory.parsing import MAX_SEAT_CLASS_LENGTH, id_problem

OPERATIONS_ATTRIBUTE = "recent_operations"
RECENT_OPERATIONS = 8
POOL_ATTEMPTS = 5
POOL_BACKOFF_SECONDS = 0.1


def check_pool_names(pools: Sequence[str]) -> None:
    """Raises ValueError for a malformed pool name, a repeated one, or too many pools for a class."""
    if len(pools) > MAX_POOLS_PER_CLASS:
        raise ValueError(f"a seat class belongs to at most {MAX_POOLS_PER_CLASS} pools, not {len(pools)}")
    if len(set(pools)) != len(pools):
        raise ValueError(f"pools {list(pools)} name a pool twice")
    for name in pools:
        problem = id_problem("pool", name, MAX_SEAT_CLASS_LENGTH)
        if problem:
            raise ValueError(problem)


def _new_operation_id() -> str:
    return uuid.uuid4().hex[:16]


def _operations(item: Mapping[str, Any]) -> list[str]:
    return [value["S"] for value in item.get(OPERATIONS_ATTRIBUTE, {}).get("L", [])]


@dataclass(frozen=True, slots=True)
class _PoolChange:
    expression: str  # a SET clause; the version and the operation ids are added
    values: dict[str, Any] = field(default_factory=dict)
    guard: str | None = None
    refused: Callable[[PoolInventory], Exception] | None = None


class PoolCommands(TableAccess):
    """Create, list, resize, close and reopen an event's capacity pools."""

    def create_pool(
        self,
        event_id: str,
        pool: str,
        capacity: int,
        *,
        closed: bool = False,
        operation_id: str | None = None,
    ) -> PoolInventory:
        """Creates a pool with `capacity` available seats; never overwrites one. A retry of this
        very operation (its reply lost) returns the pool it created."""
        operation_id = operation_id or _new_operation_id()
        check_pool_names([pool])
        if capacity < 0:
            raise ValueError("capacity must not be negative")
        item: dict[str, Any] = {
            **pool_key(event_id, pool),
            "entity": {"S": "pool"},
            "event_id": {"S": event_id},
            "pool": {"S": pool},
            "capacity": number(capacity),
            "available": number(capacity),
            "held": number(0),
            "sold": number(0),
            "version": number(0),
            "created_at": {"S": timestamp()},
            OPERATIONS_ATTRIBUTE: {"L": [{"S": operation_id}]},
        }
        if closed:
            item["sale_status"] = {"S": SaleStatus.CLOSED.value}
        for _ in range(POOL_ATTEMPTS):
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
                stored = self._pool_after_no_answer(event_id, pool, operation_id, exc)
                if stored is not None:
                    return pool_from_item(stored)
                continue
            if not isinstance(response, ClientError):
                return pool_from_item(item)
            old: Any = response.response.get("Item") or {}
            if operation_id in _operations(old):
                return pool_from_item(old)
            raise EventAlreadyExists(f"event {event_id!r} already has pool {pool!r}") from response
        raise RetryableError(f"pool {pool} of {event_id} was not created; try again")

    def get_pool(self, event_id: str, pool: str) -> PoolInventory | None:
        item = self._read_pool_item(event_id, pool)
        return pool_from_item(item) if item is not None else None

    def get_pools(self, event_id: str) -> list[PoolInventory]:
        """Every pool of an event, read strongly consistently, by name."""
        request: dict[str, Any] = {
            "TableName": self._table_name,
            "KeyConditionExpression": "pk = :pk AND begins_with(sk, :pool_prefix)",
            "ExpressionAttributeValues": {
                ":pk": {"S": INVENTORY_PREFIX + event_id},
                ":pool_prefix": {"S": POOL_PREFIX},
            },
            "ConsistentRead": True,
        }
        pools: list[PoolInventory] = []
        while True:
            page = call(self._client.query, **request)
            pools.extend(pool_from_item(item) for item in page.get("Items", []))
            if "LastEvaluatedKey" not in page:
                return sorted(pools, key=lambda p: p.pool)
            request["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def set_pool_status(
        self, event_id: str, pool: str, status: SaleStatus, *, operation_id: str | None = None
    ) -> PoolInventory:
        """Opens or closes a pool: closed, none of its classes sells (confirm, cancel, expiry go on)."""
        change = _PoolChange("SET sale_status = :status", {":status": {"S": status.value}})
        return self._pool_write(event_id, pool, lambda _: change, operation_id)

    def change_pool_capacity(
        self, event_id: str, pool: str, delta: int, *, operation_id: str | None = None
    ) -> PoolInventory:
        """Adds seats to a pool (`capacity += n, available += n`) or removes available ones
        (guarded by `available >= n`: never below held + sold)."""
        if delta == 0:
            raise ValueError("the change must add or remove at least one seat")
        values = {":delta": number(delta)}
        guard = None
        if delta < 0:
            values[":removed"] = number(-delta)
            guard = "available >= :removed"

        def refused(item: PoolInventory) -> Exception:
            return InventoryChangeRefused(
                f"pool {pool} of {event_id} has {item.available} available seat(s); cannot remove {-delta}"
            )

        change = _PoolChange(
            "SET #capacity = #capacity + :delta, available = available + :delta", values, guard, refused
        )
        return self._pool_write(event_id, pool, lambda _: change, operation_id)

    def _read_pool_item(self, event_id: str, pool: str) -> dict[str, Any] | None:
        response = call(
            self._client.get_item,
            TableName=self._table_name,
            Key=pool_key(event_id, pool),
            ConsistentRead=True,
        )
        item: Any = response.get("Item")
        return item

    def _pool_after_no_answer(
        self, event_id: str, pool: str, operation_id: str, error: RetryableError
    ) -> dict[str, Any] | None:
        """After a write that got no answer: the pool item if it shows `operation_id` (applied),
        None if not; `OperatorOutcomeUnknown` when it cannot be read either."""
        for attempt in range(POOL_ATTEMPTS):
            self._sleep(random.uniform(0, POOL_BACKOFF_SECONDS * 2**attempt))
            try:
                item = self._read_pool_item(event_id, pool)
            except RetryableError:
                continue
            return item if item is not None and operation_id in _operations(item) else None
        raise OperatorOutcomeUnknown(
            f"DynamoDB did not answer the change of pool {pool} of {event_id} ({error}), nor the reads"
            f" that would tell whether it was applied (operation {operation_id}); `seats event show"
            f" {event_id}` shows where it stands"
        )

    def _pool_write(
        self,
        event_id: str,
        pool: str,
        plan: Callable[[PoolInventory], _PoolChange],
        operation_id: str | None,
    ) -> PoolInventory:
        """Reads the pool, then writes `plan(pool)` once, conditional on the version read."""
        operation_id = operation_id or _new_operation_id()
        for _ in range(POOL_ATTEMPTS):
            item = self._read_pool_item(event_id, pool)
            if item is None:
                raise UnknownSeatClass(f"event {event_id!r} has no pool {pool!r}")
            current = pool_from_item(item)
            if operation_id in _operations(item):
                return current  # applied by an earlier attempt of this operation
            change = plan(current)
            try:
                request = self._pool_update(item, change, operation_id)
                response = call_expecting(CONDITION_FAILED, self._client.update_item, **request)
            except RetryableError as exc:
                stored = self._pool_after_no_answer(event_id, pool, operation_id, exc)
                if stored is not None:
                    return pool_from_item(stored)
                continue
            if not isinstance(response, ClientError):
                return pool_from_item(response["Attributes"])
            old: Any = response.response.get("Item")
            if not old:
                raise UnknownSeatClass(f"event {event_id!r} has no pool {pool!r}") from response
            if operation_id in _operations(old):
                return pool_from_item(old)
            if pool_from_item(old).version != current.version or change.refused is None:
                continue  # another operator change came first: plan again
            raise change.refused(pool_from_item(old)) from response
        raise RetryableError(f"pool {pool} of {event_id} kept changing or did not answer; it was not changed")

    def _pool_update(self, item: Mapping[str, Any], change: _PoolChange, operation_id: str) -> dict[str, Any]:
        version = pool_from_item(item).version
        recent = [*_operations(item), operation_id][-RECENT_OPERATIONS:]
        condition = "attribute_exists(pk) AND version = :version"
        if change.guard:
            condition += f" AND {change.guard}"
        request: dict[str, Any] = {
            "TableName": self._table_name,
            "Key": {"pk": item["pk"], "sk": item["sk"]},
            "UpdateExpression": change.expression.replace(
                "SET ", f"SET version = :next_version, {OPERATIONS_ATTRIBUTE} = :operations, ", 1
            ),
            "ConditionExpression": condition,
            "ExpressionAttributeValues": {
                **change.values,
                ":version": number(version),
                ":next_version": number(version + 1),
                ":operations": {"L": [{"S": op} for op in recent]},
            },
            "ReturnValues": "ALL_NEW",
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }
        if "#capacity" in change.expression:
            request["ExpressionAttributeNames"] = {"#capacity": "capacity"}
        return request
