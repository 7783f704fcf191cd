"""What every part of the data access shares: the client, the table, and the inventory read."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from seat_inventory.dal.errors import TRANSACTION_CANCELED, call, call_expecting, cancellation_reasons
from seat_inventory.dal.items import (
    SURVEY_NAMES,
    SURVEY_PROJECTION,
    class_view,
    customer_key,
    inventory_from_item,
    inventory_key,
    pool_from_item,
    pool_key,
    pool_view,
    survey_from_item,
)
from seat_inventory.models import (
    PoolInventory,
    RetryableError,
    SeatClassInventory,
    SeatKey,
    ShardSurvey,
    StoreInconsistency,
    TransactionConflict,
)

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

SHARDED_READ_ATTEMPTS = 5
SHARDED_READ_BACKOFF_SECONDS = 0.01
# Keys one BatchGetItem reads at most (DynamoDB's limit).
MAX_BATCH_GET_KEYS = 100


def _key_of(item: Mapping[str, Any]) -> tuple[str, str]:
    return item["pk"]["S"], item["sk"]["S"]


class TableAccess:
    """The DynamoDB client and table name that the concerns of `InventoryTable` work on."""

    def __init__(
        self, client: DynamoDBClient, table_name: str, *, sleep: Callable[[float], None] = time.sleep
    ) -> None:
        self._client = client
        self._table_name = table_name
        self._sleep = sleep

    @property
    def table_name(self) -> str:
        return self._table_name

    def read_inventory(
        self, key: SeatKey, *, whole: bool = True, customers: Sequence[str] = ()
    ) -> SeatClassInventory | None:
        """The seat class read strongly consistently, without writing to it.

        A class of one item is one GetItem. A sharded class is read in one `TransactGetItems` of
        all its shard items, a serializable snapshot: seats moving between shards are counted
        exactly once. A transaction in flight on one of them cancels the read; it is read again.
        With `whole` False, a sharded class is its shard 0 alone (the GetItem); with `customers`,
        their counters are read with it in one consistent `BatchGetItem` instead (each item an
        observation of its own, never refused by a transaction in flight).
        """
        if customers:
            if whole:
                raise ValueError("customers' counters are read with shard 0 alone (whole=False)")
            item, counters = self._read_with_counters(key, list(dict.fromkeys(customers)))
        else:
            response = call(
                self._client.get_item, TableName=self._table_name, Key=inventory_key(key), ConsistentRead=True
            )
            item, counters = response.get("Item"), None
        if not item:
            return None
        head = inventory_from_item(item)
        if counters is not None:
            head = dataclasses.replace(head, counters=counters)
        if not whole:
            # A class of one item read alone is read whole: with its pools. Shard 0 of a sharded
            # class alone comes with the first item of each pool (how many items it has, to route).
            return self._with_pools(head, whole=head.complete)
        for attempt in range(SHARDED_READ_ATTEMPTS):
            if head.complete:
                return self._with_pools(head)
            try:
                items = self._read_shard_items(key, head.shard_items)
            except TransactionConflict:
                self._sleep(SHARDED_READ_BACKOFF_SECONDS * 2**attempt)
                continue
            if items is None:
                return None
            view = class_view(items)
            if view.shard_items == head.shard_items:
                return self._with_pools(view)
            head = view  # resharded between the two reads: read the new set of items
        raise TransactionConflict(f"the shards of {key} kept changing while read")

    def _read_with_counters(
        self, key: SeatKey, customers: list[str]
    ) -> tuple[dict[str, Any] | None, tuple[tuple[str, int], ...]]:
        """Shard 0 (or the class's only item) and the customers' counters, each read strongly
        consistently in one `BatchGetItem`; unprocessed keys are asked again, still unprocessed
        the read is retried. A customer without a counter has 0 seats."""
        if len(customers) >= MAX_BATCH_GET_KEYS:
            most = MAX_BATCH_GET_KEYS - 1
            raise ValueError(f"at most {most} customers' counters per read, not {len(customers)}")
        wanted = {_key_of(customer_key(key, c)): c for c in customers}
        head_key = _key_of(inventory_key(key))
        request: dict[str, Any] = {
            self._table_name: {
                "Keys": [inventory_key(key), *(customer_key(key, c) for c in customers)],
                "ConsistentRead": True,
            }
        }
        found, complete = self._batch_get(request)
        if not complete:
            raise RetryableError(f"the counters of {key} stayed unprocessed")
        head: dict[str, Any] | None = None
        seats = dict.fromkeys(customers, 0)
        for item in found:
            item_key = _key_of(item)
            if item_key == head_key:
                head = item
            elif item_key in wanted:
                seats[wanted[item_key]] = int(item["seats"]["N"]) if "seats" in item else 0
        return head, tuple(seats.items())

    def _batch_get(self, request: dict[str, Any]) -> tuple[list[dict[str, Any]], bool]:
        """One `BatchGetItem` of this table, its unprocessed keys asked again with a doubling
        back-off (SHARDED_READ_ATTEMPTS in all): the items found, and whether every key was
        processed (the caller decides what a partial answer means)."""
        found: list[dict[str, Any]] = []
        for attempt in range(SHARDED_READ_ATTEMPTS):
            response = call(self._client.batch_get_item, RequestItems=request)
            found.extend(response.get("Responses", {}).get(self._table_name, []))
            request = response.get("UnprocessedKeys") or {}
            if not request:
                return found, True
            self._sleep(SHARDED_READ_BACKOFF_SECONDS * 2**attempt)
        return found, False

    def _consistent_batch_get(self, keys: Sequence[Mapping[str, Any]]) -> tuple[list[dict[str, Any]], bool]:
        """Strongly consistent `BatchGetItem`s of `keys`, MAX_BATCH_GET_KEYS a call, each as
        `_batch_get`: the items found (missing ones absent), and whether every key was processed."""
        found: list[dict[str, Any]] = []
        complete = True
        for start in range(0, len(keys), MAX_BATCH_GET_KEYS):
            chunk = list(keys[start : start + MAX_BATCH_GET_KEYS])
            items, done = self._batch_get({self._table_name: {"Keys": chunk, "ConsistentRead": True}})
            found.extend(items)
            complete = complete and done
        return found, complete

    def _with_pools(self, view: SeatClassInventory, *, whole: bool = True) -> SeatClassInventory:
        """A class in capacity pools (docs/guides/pools.md) with its pool items, each read strongly
        consistently in one `BatchGetItem` (each an observation of its own; a missing pool is
        absent). Unprocessed keys are asked again; still unprocessed, the read is retried.

        A sharded pool's first item tells how many it has; `whole`, the pool is then read in one
        `TransactGetItems` of all of them (a snapshot: its totals decide a refusal), otherwise it
        stays that item alone (not `complete`: it routes, and never decides a refusal)."""
        if not view.pools:
            return view
        pools = self._read_pools(view.event_id, view.pools, whole=whole)
        return dataclasses.replace(view, pool_items=tuple(pools))

    def read_pools(self, event_id: str, pools: Sequence[str]) -> dict[str, PoolInventory]:
        """`InventoryStore.read_pools`: each pool read whole (docs/guides/pools.md), as `_with_pools`
        reads a class's pools; a missing pool is absent."""
        return {p.pool: p for p in self._read_pools(event_id, pools, whole=True)}

    def _read_pools(self, event_id: str, names: Sequence[str], *, whole: bool) -> list[PoolInventory]:
        """The pools' first items in one consistent `BatchGetItem`; `whole`, each sharded one
        then read whole (`_whole_pool`). Sorted by name; missing pools absent."""
        request: dict[str, Any] = {
            self._table_name: {
                "Keys": [pool_key(event_id, name) for name in names],
                "ConsistentRead": True,
            }
        }
        found, complete = self._batch_get(request)
        if not complete:
            raise RetryableError(f"the pools {list(names)} of {event_id} stayed unprocessed")
        pools = sorted((pool_from_item(item) for item in found), key=lambda p: p.pool)
        return [self._whole_pool(p) for p in pools] if whole else pools

    def _whole_pool(self, head: PoolInventory) -> PoolInventory:
        """A sharded pool read in one `TransactGetItems` of all its items (a snapshot: seats moving
        between its items are counted once); a transaction in flight on one of them cancels the
        read, which is made again a few times, then raised as a conflict."""
        if head.complete:
            return head
        gets: list[dict[str, Any]] = [
            {"Get": {"TableName": self._table_name, "Key": pool_key(head.event_id, head.pool, shard)}}
            for shard in range(head.shard_count)
        ]
        for attempt in range(SHARDED_READ_ATTEMPTS):
            try:
                answer = call_expecting(
                    TRANSACTION_CANCELED, self._client.transact_get_items, TransactItems=gets
                )
                if isinstance(answer, ClientError):
                    cancellation_reasons(answer, len(gets))
                    raise RuntimeError("TransactGetItems cancelled without a reason") from answer
            except TransactionConflict:
                self._sleep(SHARDED_READ_BACKOFF_SECONDS * 2**attempt)
                continue
            items = [response.get("Item") for response in answer.get("Responses", [])]
            if len(items) != head.shard_count or not all(items):
                raise StoreInconsistency(
                    f"pool {head.pool} of {head.event_id} lists {head.shard_count} items; not all exist"
                )
            return pool_view([dict(item) for item in items if item])
        raise TransactionConflict(f"the items of pool {head.pool} of {head.event_id} stayed in use")

    def survey_shards(self, key: SeatKey, shard_items: int) -> list[ShardSurvey]:
        """Each shard item read strongly consistently on its own, in one `BatchGetItem`: never
        refused by a transaction in flight (unlike `TransactGetItems`), and no snapshot."""
        keys = [inventory_key(key, shard) for shard in range(shard_items)]
        request: dict[str, Any] = {
            self._table_name: {
                "Keys": keys,
                "ConsistentRead": True,
                "ProjectionExpression": SURVEY_PROJECTION,
                "ExpressionAttributeNames": SURVEY_NAMES,
            }
        }
        found, _ = self._batch_get(request)
        # Keys left unprocessed are left out: a survey only routes.
        return sorted((survey_from_item(item) for item in found), key=lambda s: s.shard)

    def _read_shard_items(self, key: SeatKey, shard_items: int) -> list[dict[str, Any]] | None:
        gets: list[dict[str, Any]] = [
            {"Get": {"TableName": self._table_name, "Key": inventory_key(key, shard)}}
            for shard in range(shard_items)
        ]
        cancelled = call_expecting(TRANSACTION_CANCELED, self._client.transact_get_items, TransactItems=gets)
        if isinstance(cancelled, ClientError):
            cancellation_reasons(cancelled, len(gets))
            raise RuntimeError("TransactGetItems cancelled without a reason") from cancelled
        items = [response.get("Item") for response in cancelled.get("Responses", [])]
        if not items or not items[0]:
            return None  # the class was deleted between the two reads
        if len(items) != shard_items or not all(items):
            raise StoreInconsistency(f"{key} lists {shard_items} shard items; not all exist")
        return [dict(item) for item in items if item]
