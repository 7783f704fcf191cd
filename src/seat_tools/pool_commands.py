"""The operator's commands on capacity pools (`seats event pool ...`; docs/guides/pools.md).

A pool is one item beside the event's seat classes. Like every operator change of a seat class
(`operator_commands`), each change is one conditional write that happens exactly once: it is
guarded by the `version` read and records its operation id among the item's recent ones, so a
retry after a lost reply is recognised instead of applied twice. Sales move `available`, `held`
and `sold` by relative, guarded amounts, so a change never races them into a wrong count.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from seat_inventory.dal.access import TableAccess
from seat_inventory.dal.errors import (
    CONDITION_FAILED,
    TRANSACTION_CANCELED,
    call,
    call_expecting,
    cancellation_reasons,
)
from seat_inventory.dal.items import (
    INVENTORY_PREFIX,
    POOL_PREFIX,
    number,
    pool_from_item,
    pool_key,
    pool_view,
    timestamp,
)
from seat_inventory.models import (
    MAX_POOLS_PER_CLASS,
    PoolInventory,
    RetryableError,
    SaleStatus,
    TransactionConflict,
)
from seat_inventory.parsing import MAX_SEAT_CLASS_LENGTH, id_problem
from seat_tools.exactly_once import (
    OPERATIONS_ATTRIBUTE,
    applied_after_no_answer,
    new_operation_id,
    operations_value,
    recent_operations,
    send_once,
)
from seat_tools.operator_errors import EventAlreadyExists, InventoryChangeRefused, UnknownSeatClass
from seat_tools.resharding import check_shard_count, spread

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


@dataclass(frozen=True, slots=True)
class _PoolChange:
    """One operator change of a pool: a status, or seats added (`delta` > 0) or removed (< 0)."""

    status: SaleStatus | None = None
    delta: int = 0
    refused: Callable[[PoolInventory], Exception] | None = None  # too few available to remove

    def per_item(self, view: PoolInventory) -> dict[int, int]:
        """A sharded pool's seats change per item: added ones spread over its items, removed
        ones off the fullest items first (raises `refused` when the pool as a whole, read in one
        snapshot, has too few available)."""
        if self.delta > 0:
            return dict(enumerate(spread(self.delta, view.shard_count)))
        if self.delta == 0:
            return {}
        if view.available < -self.delta:
            assert self.refused is not None
            raise self.refused(view)
        left, plan = -self.delta, {}
        for item in sorted(view.shards, key=lambda s: (-s.available, s.shard)):
            taken = min(item.available, left)
            if taken > 0:
                plan[item.shard] = -taken
                left -= taken
        return plan


def _item_update(
    change: _PoolChange, delta: int
) -> tuple[list[str], list[str], dict[str, Any], dict[str, str]]:
    """The SET clauses, conditions, values and names of one pool item's part of a change."""
    sets: list[str] = []
    conditions = ["attribute_exists(pk)"]
    values: dict[str, Any] = {}
    names: dict[str, str] = {}
    if change.status is not None:
        sets.append("sale_status = :status")
        values[":status"] = {"S": change.status.value}
    if delta:
        sets.append("#capacity = #capacity + :delta, available = available + :delta")
        values[":delta"] = number(delta)
        names["#capacity"] = "capacity"
    if delta < 0:
        # Sales move `available` meanwhile: never below what they hold and sold.
        conditions.append("available >= :removed")
        values[":removed"] = number(-delta)
    return sets, conditions, values, names


def _pool_item(event_id: str, pool: str, shard: int, seats: int, shards: int, closed: bool) -> dict[str, Any]:
    item: dict[str, Any] = {
        **pool_key(event_id, pool, shard),
        "entity": {"S": "pool"},
        "event_id": {"S": event_id},
        "pool": {"S": pool},
        "capacity": number(seats),
        "available": number(seats),
        "held": number(0),
        "sold": number(0),
        "created_at": {"S": timestamp()},
    }
    if shards > 1:
        item["shard_count"] = number(shards)
    if shard:
        item["shard"] = number(shard)
    if closed:
        item["sale_status"] = {"S": SaleStatus.CLOSED.value}
    return item


class PoolCommands(TableAccess):
    """Create, list, resize, close and reopen an event's capacity pools.

    A sharded pool (`shards` > 1, docs/guides/pools.md) is created, closed, reopened and resized in one
    transaction over all its items: item 0 carries the version and the operation ids, so each
    change still happens exactly once.
    """

    def create_pool(
        self,
        event_id: str,
        pool: str,
        capacity: int,
        *,
        closed: bool = False,
        shards: int = 1,
        operation_id: str | None = None,
    ) -> PoolInventory:
        """Creates a pool with `capacity` available seats spread over `shards` items; never
        overwrites one. A retry of this very operation (its reply lost) returns the pool it created."""
        operation_id = operation_id or new_operation_id()
        check_pool_names([pool])
        if capacity < 0:
            raise ValueError("capacity must not be negative")
        check_shard_count(shards)
        items = [
            _pool_item(event_id, pool, n, seats, shards, closed)
            for n, seats in enumerate(spread(capacity, shards))
        ]
        items[0].update(version=number(0), **{OPERATIONS_ATTRIBUTE: {"L": [{"S": operation_id}]}})
        read = functools.partial(self._read_pool_item, event_id, pool)
        what = f"pool {pool} of {event_id}"
        for _ in range(POOL_ATTEMPTS):
            try:
                exists = self._put_new(items)
            except RetryableError as exc:
                stored = applied_after_no_answer(
                    read, operation_id, exc, sleep=self._sleep, what=what, event_id=event_id
                )
                if stored is not None:
                    return self._whole_pool_patiently(pool_from_item(stored))
                continue
            if not exists:
                return pool_view(items) if shards > 1 else pool_from_item(items[0])
            old = read()
            if old is not None and operation_id in recent_operations(old):
                return self._whole_pool_patiently(pool_from_item(old))
            raise EventAlreadyExists(f"event {event_id!r} already has pool {pool!r}")
        raise RetryableError(f"pool {pool} of {event_id} was not created; try again")

    def _put_new(self, items: Sequence[dict[str, Any]]) -> bool:
        """Puts the new items (one PutItem, or one transaction for a sharded pool), each only if
        it does not exist; True when one existed (nothing was written)."""
        if len(items) == 1:
            response = call_expecting(
                CONDITION_FAILED,
                self._client.put_item,
                TableName=self._table_name,
                Item=items[0],
                ConditionExpression="attribute_not_exists(pk)",
            )
            return isinstance(response, ClientError)
        puts = [
            {
                "Put": {
                    "TableName": self._table_name,
                    "Item": item,
                    "ConditionExpression": "attribute_not_exists(pk)",
                }
            }
            for item in items
        ]
        cancelled = call_expecting(
            TRANSACTION_CANCELED, self._client.transact_write_items, TransactItems=puts
        )
        if isinstance(cancelled, ClientError):
            cancellation_reasons(cancelled, len(puts))  # transient reasons raise
            return True
        return False

    def get_pool(self, event_id: str, pool: str) -> PoolInventory | None:
        """The pool, a sharded one read whole (its totals, each item in `shards`)."""
        item = self._read_pool_item(event_id, pool)
        return self._whole_pool_patiently(pool_from_item(item)) if item is not None else None

    def get_pools(self, event_id: str) -> list[PoolInventory]:
        """Every pool of an event, read strongly consistently, by name; a sharded one whole."""
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
            pools.extend(self._whole_pool_patiently(pool_from_item(item)) for item in page.get("Items", []))
            if "LastEvaluatedKey" not in page:
                return sorted(pools, key=lambda p: p.pool)
            request["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def _whole_pool_patiently(self, head: PoolInventory) -> PoolInventory:
        """A pool from its item 0: as it is for a pool of one item, else read whole (a snapshot,
        a few times while sales' transactions keep cancelling it)."""
        for attempt in range(POOL_ATTEMPTS):
            try:
                return self._whole_pool(head)
            except TransactionConflict:
                self._sleep(random.uniform(0, POOL_BACKOFF_SECONDS * 2**attempt))
        return self._whole_pool(head)

    def set_pool_status(
        self, event_id: str, pool: str, status: SaleStatus, *, operation_id: str | None = None
    ) -> PoolInventory:
        """Opens or closes a pool: closed, none of its classes sells (confirm, cancel, expiry go
        on). Every item of a sharded pool changes in the one transaction."""
        return self._pool_write(event_id, pool, _PoolChange(status=status), operation_id)

    def change_pool_capacity(
        self, event_id: str, pool: str, delta: int, *, operation_id: str | None = None
    ) -> PoolInventory:
        """Adds seats to a pool (`capacity += n, available += n`) or removes available ones
        (guarded by `available >= n` on each item: never below held + sold)."""
        if delta == 0:
            raise ValueError("the change must add or remove at least one seat")

        def refused(item: PoolInventory) -> Exception:
            return InventoryChangeRefused(
                f"pool {pool} of {event_id} has {item.available} available seat(s); cannot remove {-delta}"
            )

        return self._pool_write(event_id, pool, _PoolChange(delta=delta, refused=refused), operation_id)

    def reshard_pool(
        self, event_id: str, pool: str, shards: int, *, operation_id: str | None = None
    ) -> PoolInventory:
        """Spreads a pool over more items (`shards`, up to 64), also during its sale: one
        transaction, planned from a whole read, creates the new items, moves available seats (and
        as much capacity) so that every item holds an equal share, and records the new count on
        every item; item 0 guarded by the version read (exactly once), each donor by its
        `available`. The pool's capacity, available, held and sold stay the same. Items are never
        removed: a record names the item its seats came off, and takes routed by the old count
        still land on items that exist."""
        check_shard_count(shards)
        operation_id = operation_id or new_operation_id()
        read = functools.partial(self._read_pool_item, event_id, pool)
        for _ in range(POOL_ATTEMPTS):
            item = read()
            if item is None:
                raise UnknownSeatClass(f"event {event_id!r} has no pool {pool!r}")
            head = pool_from_item(item)
            if operation_id in recent_operations(item):
                return self._whole_pool_patiently(head)
            if shards < head.shard_count:
                raise ValueError(
                    f"pool {pool} has {head.shard_count} items; a pool is never split over fewer"
                )
            if shards == head.shard_count:
                return self._whole_pool_patiently(head)
            actions = _reshard_actions(
                self._table_name, item, self._whole_pool_patiently(head), shards, operation_id
            )
            try:
                answer = call_expecting(
                    TRANSACTION_CANCELED, self._client.transact_write_items, TransactItems=actions
                )
                if isinstance(answer, ClientError):
                    cancellation_reasons(answer, len(actions))  # transient reasons raise
                    continue  # a sale or another change came first: plan again
            except RetryableError as exc:
                what = f"pool {pool} of {event_id}"
                stored = applied_after_no_answer(
                    read, operation_id, exc, sleep=self._sleep, what=what, event_id=event_id
                )
                if stored is None:
                    continue
            # Read again from item 0: the whole read goes by the new count.
            return self._whole_pool_patiently(pool_from_item(read() or item))
        raise RetryableError(
            f"pool {pool} of {event_id} kept changing or did not answer; it was not resharded"
        )

    def _read_pool_item(self, event_id: str, pool: str) -> dict[str, Any] | None:
        response = call(
            self._client.get_item,
            TableName=self._table_name,
            Key=pool_key(event_id, pool),
            ConsistentRead=True,
        )
        item: Any = response.get("Item")
        return item

    def _pool_write(
        self, event_id: str, pool: str, change: _PoolChange, operation_id: str | None
    ) -> PoolInventory:
        """Reads the pool, then writes `change` once, conditional on the version read
        (`exactly_once`); a sharded pool in one transaction over its items."""
        operation_id = operation_id or new_operation_id()
        read = functools.partial(self._read_pool_item, event_id, pool)
        what = f"pool {pool} of {event_id}"
        for _ in range(POOL_ATTEMPTS):
            item = read()
            if item is None:
                raise UnknownSeatClass(f"event {event_id!r} has no pool {pool!r}")
            current = pool_from_item(item)
            if operation_id in recent_operations(item):
                return self._whole_pool_patiently(current)  # applied by an earlier attempt of this operation
            if current.shard_count > 1:
                written = self._sharded_pool_write(item, change, operation_id)
                if written is not None:
                    return written
                continue  # another change or a sale came first: plan again from a new read
            request = self._pool_update(item, change, operation_id)
            sent = send_once(
                functools.partial(call_expecting, CONDITION_FAILED, self._client.update_item, **request),
                operation_id=operation_id,
                read=read,
                sleep=self._sleep,
                what=what,
                event_id=event_id,
            )
            if sent.applied is not None:
                return pool_from_item(sent.applied)
            if sent.unanswered is not None:
                continue
            if sent.refused is None:
                raise UnknownSeatClass(f"event {event_id!r} has no pool {pool!r}") from sent.error
            refused = pool_from_item(sent.refused)
            if refused.version != current.version or change.refused is None:
                continue  # another operator change came first: plan again
            raise change.refused(refused) from sent.error
        raise RetryableError(f"pool {pool} of {event_id} kept changing or did not answer; it was not changed")

    def _sharded_pool_write(
        self, item: Mapping[str, Any], change: _PoolChange, operation_id: str
    ) -> PoolInventory | None:
        """One transaction over every item of a sharded pool, planned from a whole read: item 0
        guarded by the version read and recording `operation_id`, each item that gives up seats
        by `available >=` them. The pool after it, or None when a guard refused (plan again)."""
        head = pool_from_item(item)
        view = self._whole_pool_patiently(head)
        deltas = change.per_item(view)
        actions: list[dict[str, Any]] = []
        for shard in range(head.shard_count):
            if shard and change.status is None and not deltas.get(shard):
                continue
            sets, conditions, values, names = _item_update(change, deltas.get(shard, 0))
            if shard == 0:
                sets += ["version = :next_version", f"{OPERATIONS_ATTRIBUTE} = :operations"]
                conditions.append("version = :version")
                values.update(
                    {
                        ":version": number(head.version),
                        ":next_version": number(head.version + 1),
                        ":operations": operations_value(item, operation_id),
                    }
                )
            update: dict[str, Any] = {
                "TableName": self._table_name,
                "Key": pool_key(head.event_id, head.pool, shard),
                "UpdateExpression": "SET " + ", ".join(sets),
                "ConditionExpression": " AND ".join(conditions),
                "ExpressionAttributeValues": values,
            }
            if names:
                update["ExpressionAttributeNames"] = names
            actions.append({"Update": update})
        read = functools.partial(self._read_pool_item, head.event_id, head.pool)
        try:
            cancelled = call_expecting(
                TRANSACTION_CANCELED, self._client.transact_write_items, TransactItems=actions
            )
            if isinstance(cancelled, ClientError):
                cancellation_reasons(cancelled, len(actions))  # transient reasons raise
                return None
        except RetryableError as exc:
            what = f"pool {head.pool} of {head.event_id}"
            stored = applied_after_no_answer(
                read, operation_id, exc, sleep=self._sleep, what=what, event_id=head.event_id
            )
            return self._whole_pool_patiently(pool_from_item(stored)) if stored is not None else None
        return self._whole_pool_patiently(head)

    def _pool_update(self, item: Mapping[str, Any], change: _PoolChange, operation_id: str) -> dict[str, Any]:
        """The UpdateItem of a pool of one item: the change, guarded by the version read."""
        version = pool_from_item(item).version
        sets, conditions, values, names = _item_update(change, change.delta)
        sets += ["version = :next_version", f"{OPERATIONS_ATTRIBUTE} = :operations"]
        conditions.append("version = :version")
        request: dict[str, Any] = {
            "TableName": self._table_name,
            "Key": {"pk": item["pk"], "sk": item["sk"]},
            "UpdateExpression": "SET " + ", ".join(sets),
            "ConditionExpression": " AND ".join(conditions),
            "ExpressionAttributeValues": {
                **values,
                ":version": number(version),
                ":next_version": number(version + 1),
                ":operations": operations_value(item, operation_id),
            },
            "ReturnValues": "ALL_NEW",
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }
        if names:
            request["ExpressionAttributeNames"] = names
        return request


def _reshard_actions(
    table_name: str, item: Mapping[str, Any], view: PoolInventory, shards: int, operation_id: str
) -> list[dict[str, Any]]:
    """The transaction of a pool's reshard to `shards` items: each existing item's update (its
    available moved toward an equal share, guarded when it gives; the new count; item 0's version
    and operation ids) and a put of each new item (never over an existing one)."""
    have = {s.shard: s.available for s in view.shards} or {0: view.available}
    target = dict(enumerate(spread(view.available, shards)))
    actions: list[dict[str, Any]] = []
    for shard in range(shards):
        if shard not in have:
            new = _pool_item(view.event_id, view.pool, shard, target[shard], shards, closed=False)
            new["sale_status"] = {"S": view.sale_status.value}
            actions.append(
                {
                    "Put": {
                        "TableName": table_name,
                        "Item": new,
                        "ConditionExpression": "attribute_not_exists(pk)",
                    }
                }
            )
            continue
        delta = target[shard] - have[shard]
        sets = ["shard_count = :count"]
        conditions = ["attribute_exists(pk)"]
        values: dict[str, Any] = {":count": number(shards)}
        if delta:
            sets.append("#capacity = #capacity + :delta, available = available + :delta")
            values[":delta"] = number(delta)
        if delta < 0:
            conditions.append("available >= :given")
            values[":given"] = number(-delta)
        if shard == 0:
            sets += ["version = :next_version", f"{OPERATIONS_ATTRIBUTE} = :operations"]
            conditions.append("version = :version")
            # The version of `item`, whose operation ids this rewrites: a change that landed
            # after it refuses the write rather than having its id dropped.
            version = pool_from_item(item).version
            values.update(
                {
                    ":version": number(version),
                    ":next_version": number(version + 1),
                    ":operations": operations_value(item, operation_id),
                }
            )
        update: dict[str, Any] = {
            "TableName": table_name,
            "Key": pool_key(view.event_id, view.pool, shard),
            "UpdateExpression": "SET " + ", ".join(sets),
            "ConditionExpression": " AND ".join(conditions),
            "ExpressionAttributeValues": values,
        }
        if delta:
            update["ExpressionAttributeNames"] = {"#capacity": "capacity"}
        actions.append({"Update": update})
    return actions
