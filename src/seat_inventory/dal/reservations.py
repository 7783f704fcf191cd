"""Taking seats: one transaction per group that decrements the inventory and records every answer;
a group of rejections only: one conditional PutItem per record."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from typing import Any

from botocore.exceptions import ClientError

from seat_inventory.dal.access import TableAccess
from seat_inventory.dal.errors import (
    CONDITION_FAILED,
    TRANSACTION_CANCELED,
    call_expecting,
    cancellation_reasons,
    failed_condition,
)
from seat_inventory.dal.items import (
    ADMISSION_REQUIRED,
    POOL_NAMES,
    SALE_OPEN_CONDITION,
    TAKEN_AT,
    admission_key,
    customer_key,
    inventory_from_item,
    inventory_key,
    number,
    outcome_from_item,
    pool_from_item,
    pool_key,
    pool_names_value,
    record_item,
    timestamp,
)
from seat_inventory.dal.seat_rows import rows_refusal, take_rows_actions
from seat_inventory.logic.ports import WriteRefused
from seat_inventory.models import (
    TAKES_SEATS,
    GroupWrite,
    PoolInventory,
    ReservationOutcome,
    RetryableError,
    SaleStatus,
    SeatClassInventory,
    SeatKey,
    StoreInconsistency,
    TokenUse,
    check_writes_together,
    pool_item_changes,
)

# Concurrent PutItem calls for a group of rejections: the client's whole connection pool
# (wiring.CLIENT_CONFIG), which nothing else uses meanwhile.
MAX_CONCURRENT_PUTS = 16


class Reservations(TableAccess):
    """Reserve and hold: `InventoryStore.commit_outcomes`."""

    _put_pool: ThreadPoolExecutor | None = None

    def commit_outcomes(self, write: GroupWrite | Sequence[GroupWrite]) -> WriteRefused | None:
        """One transaction: guarded decrement of the inventory, one record per answer, and one
        guarded increment per customer counter (with a per-customer limit).

        A write that takes no seats (rejections only) has nothing to be atomic with: each record is
        its own conditional PutItem (`_put_records`), 1 write unit per KB instead of 2.

        The seats are taken from shard item `write.shard`; its `donors` move available seats (and
        as much capacity) from other shard items into it in the same transaction, each guarded by
        `available >=` what it gives, so the class's totals never change by a move.

        Confirmed sales are kept for good, and so are holds while they last; rejections
        (SOLD_OUT, UNKNOWN_EVENT, LIMIT_EXCEEDED, SALE_CLOSED, ADMISSION_REFUSED) expire by TTL after
        `rejection_expires_at`, long after SQS could still redeliver their message.
        """
        if not isinstance(write, GroupWrite):
            return self._commit_together(list(write))
        if not write.outcomes:
            return None
        recorded_at = timestamp()
        donors = write.donors
        if donors and (write.shard in donors or sum(donors.values()) > write.seats_taken):
            raise ValueError(
                f"moves {donors} into shard {write.shard} do not fit {write.seats_taken} seat(s)"
            )
        if write.records_only:
            return self._put_records(
                write.outcomes, recorded_at=recorded_at, expires_at=write.rejection_expires_at
            )
        if write.rows:
            return self._commit_rows(write, recorded_at)
        actions: list[dict[str, Any]] = []
        if write.seats_taken > 0:
            actions.append(self._take_seats_action(write))
            actions.extend(
                self._move_seats_action(write.key, donor, seats) for donor, seats in donors.items()
            )
        actions.extend(self._record_action(write, outcome, recorded_at) for outcome in write.outcomes)
        counters = write.counters
        for customer_id, seats in counters.items():
            assert write.max_per_customer is not None
            actions.append(self._count_customer_action(write.key, customer_id, seats, write.max_per_customer))
        actions.extend(self._use_token_action(use) for use in write.token_uses)
        pool_items = _pool_items(write) if write.seats_taken > 0 else []
        actions.extend(self._pool_action(write, pool, shard) for pool, shard in pool_items)
        cancelled = call_expecting(
            TRANSACTION_CANCELED, self._client.transact_write_items, TransactItems=actions
        )
        if isinstance(cancelled, ClientError):
            inventory_actions = 1 + len(donors) if write.seats_taken > 0 else 0
            return self._refusal(
                cancelled,
                write.outcomes,
                list(counters),
                inventory_actions=inventory_actions,
                token_uses=write.token_uses,
                pools=pool_items,
            )
        return None

    def _pool_action(self, write: GroupWrite, pool: str, shard: int) -> dict[str, Any]:
        """The update of item `shard` of a pool: the take, or a donor's move into the take's item."""
        if shard == write.pool_shards.get(pool, 0):
            return self._take_from_pool_action(write, pool)
        return self._move_pool_seats_action(write.key.event_id, pool, shard, write.pool_donors(pool)[shard])

    def _move_pool_seats_action(self, event_id: str, pool: str, donor: int, seats: int) -> dict[str, Any]:
        """Takes `seats` available seats and as much capacity off item `donor` of a sharded pool
        (they move to the item the take writes), guarded by `available >=` what it gives: the
        pool's totals never change by a move (docs/guides/pools.md). ALL_OLD hands back the donor."""
        return {
            "Update": {
                "TableName": self._table_name,
                "Key": pool_key(event_id, pool, donor),
                "UpdateExpression": "SET #capacity = #capacity - :moved, available = available - :moved",
                "ConditionExpression": "attribute_exists(pk) AND available >= :moved",
                "ExpressionAttributeNames": {"#capacity": "capacity"},
                "ExpressionAttributeValues": {":moved": number(seats)},
                "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
            }
        }

    def _take_from_pool_action(self, write: GroupWrite, pool: str) -> dict[str, Any]:
        """Takes the write's seats off one capacity pool of the class (docs/guides/pools.md), guarded
        like the class's item: the pool exists, has the seats and is open. ALL_OLD hands back
        the pool as it was. On a sharded pool: its item `pool_shards[pool]`, which first gains
        the seats (and capacity) its donors move into it."""
        item = write.pool_shards.get(pool, 0)
        moved = sum(write.pool_donors(pool).values())
        return self._take_from_pool_item_action(write.key.event_id, pool, item, [write], moved=moved)

    def _take_from_pool_item_action(
        self, event_id: str, pool: str, item: int, writes: Sequence[GroupWrite], *, moved: int = 0
    ) -> dict[str, Any]:
        """Takes the seats of `writes` (each a class of the pool; several for an order's lines)
        off item `item` of the pool in one update, after `moved` seats (and as much capacity)
        moved into it; negative: moved out of it into another line's item of the pool. Guarded
        `available >=` the seats taken less those moved in (or plus those moved out)."""
        held = sum(w.seats_held for w in writes)
        sold = sum(w.seats_taken for w in writes) - held
        stamps = [w.now for w in writes if w.now is not None]
        now = int(time.time()) if not stamps else stamps[0]
        return {
            "Update": {
                "TableName": self._table_name,
                "Key": pool_key(event_id, pool, item),
                "UpdateExpression": (
                    "SET available = available - :seats, held = held + :held, sold = sold + :sold"
                    + (", #capacity = #capacity + :moved" if moved else "")
                ),
                "ConditionExpression": (
                    f"attribute_exists(pk) AND available >= :seats AND {SALE_OPEN_CONDITION}"
                ),
                "ExpressionAttributeValues": {
                    # What the item itself must have: the seats taken less those moved into it.
                    ":seats": number(held + sold - moved),
                    ":held": number(held),
                    ":sold": number(sold),
                    ":open": {"S": SaleStatus.OPEN.value},
                    ":now": number(now),
                    **({":moved": number(moved)} if moved else {}),
                },
                **({"ExpressionAttributeNames": {"#capacity": "capacity"}} if moved else {}),
                "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
            }
        }

    def _commit_together(self, writes: Sequence[GroupWrite]) -> WriteRefused | None:
        """Several writes of one event in ONE transaction (an order's lines, docs/guides/orders.md): each
        write's inventory item (and donor moves), records, counters and token uses, then one
        update per pool item any of them touches (`models.pool_item_changes`): the item each
        line's class shard routes to, guarded on the seats of all lines taking from it, and the
        items seats move from. At most 100 actions (the planner counts them); nothing is written
        when any guard fails."""
        if not writes:
            return None
        check_writes_together(writes)
        keys = [w.key for w in writes]
        recorded_at = timestamp()
        actions: list[dict[str, Any]] = []
        sizes: list[tuple[int, int, int, int]] = []  # per write: inventory, records, counters, tokens
        for write in writes:
            # A mapped class's line (docs/guides/seat-maps.md): its row items, each guarded on its seats.
            taking = (
                take_rows_actions(self._table_name, write)
                if write.rows
                else [
                    self._take_seats_action(write),
                    *(self._move_seats_action(write.key, d, n) for d, n in write.donors.items()),
                ]
            )
            actions.extend(taking)
            actions.extend(self._record_action(write, outcome, recorded_at) for outcome in write.outcomes)
            assert write.max_per_customer is not None or not write.counters
            actions.extend(
                self._count_customer_action(write.key, c, n, write.max_per_customer or 0)
                for c, n in write.counters.items()
            )
            actions.extend(self._use_token_action(use) for use in write.token_uses)
            sizes.append((len(taking), len(write.outcomes), len(write.counters), len(write.token_uses)))
        # One update per pool item the lines touch (docs/guides/orders.md): the seats of every line
        # that takes from it, guarded on their sum, after the seats moved into it (or less those
        # it gives another line's item); an item only giving is a donor's move.
        for write in writes:
            _pool_items(write)  # each write's moves fit its seats
        changes = pool_item_changes(writes)
        pools = list(changes)
        event_id = keys[0].event_id
        for (pool, item), change in changes.items():
            actions.append(
                self._take_from_pool_item_action(
                    event_id, pool, item, change.takers, moved=change.moved_in - change.moved_out
                )
                if change.takers
                else self._move_pool_seats_action(event_id, pool, item, change.moved_out)
            )
        cancelled = call_expecting(
            TRANSACTION_CANCELED, self._client.transact_write_items, TransactItems=actions
        )
        if not isinstance(cancelled, ClientError):
            return None
        reasons = cancellation_reasons(cancelled, len(actions))
        parts: list[WriteRefused | None] = []
        start = 0
        for write, (inventory, records, counters, tokens) in zip(writes, sizes, strict=True):
            end = start + inventory + records + counters + tokens
            part = (
                rows_refusal(
                    cancelled,
                    reasons[start:end],
                    list(write.rows),
                    write.outcomes,
                    list(write.counters),
                    write.token_uses,
                )
                if write.rows
                else self._refusal_of(
                    cancelled,
                    reasons[start:end],
                    write.outcomes,
                    list(write.counters),
                    inventory_actions=inventory,
                    token_uses=write.token_uses,
                )
            )
            start = end
            refused = (
                part.inventory_refused or part.already_recorded or part.customer_seats or part.tokens_used
            )
            parts.append(part if refused else None)
        pools_refused = _pools_refused(pools, reasons[start:])
        found = [p for p in parts if p is not None]
        first_item = next((p for p in found if p.inventory_refused), None)
        return WriteRefused(
            inventory_refused=first_item is not None,
            inventory=first_item.inventory if first_item is not None else None,
            already_recorded={k: v for p in found for k, v in p.already_recorded.items()},
            customer_seats={k: v for p in found for k, v in p.customer_seats.items()},
            tokens_used={k: v for p in found for k, v in p.tokens_used.items()},
            pools_refused=pools_refused,
            parts=tuple(parts),
        )

    def _use_token_action(self, use: TokenUse) -> dict[str, Any]:
        """Spends an admission token: written only if no reservation used it, or this one did (its
        redelivery is not a replay). ALL_OLD names the reservation that used it first."""
        return {
            "Put": {
                "TableName": self._table_name,
                "Item": {
                    **admission_key(use.token_id),
                    "entity": {"S": "admission_token"},
                    "token_id": {"S": use.token_id},
                    "reservation_id": {"S": use.reservation_id},
                    "expires_at": number(use.expires_at),
                },
                "ConditionExpression": "attribute_not_exists(pk) OR reservation_id = :reservation_id",
                "ExpressionAttributeValues": {":reservation_id": {"S": use.reservation_id}},
                "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
            }
        }

    def _commit_rows(self, write: GroupWrite, recorded_at: str) -> WriteRefused | None:
        """A mapped class's take (docs/guides/seat-maps.md): one guarded update per row item instead of the
        class's inventory item, then the records, counters and token uses as for a counted class,
        then the take off each of the class's pools (the item `pool_shards` names, after its
        donors' moves: `_pool_action`, as a counted class's take)."""
        actions = take_rows_actions(self._table_name, write)
        rows = list(write.rows)
        actions.extend(self._record_action(write, outcome, recorded_at) for outcome in write.outcomes)
        counters = write.counters
        for customer_id, seats in counters.items():
            assert write.max_per_customer is not None
            actions.append(self._count_customer_action(write.key, customer_id, seats, write.max_per_customer))
        actions.extend(self._use_token_action(use) for use in write.token_uses)
        pool_items = _pool_items(write)
        actions.extend(self._pool_action(write, pool, shard) for pool, shard in pool_items)
        cancelled = call_expecting(
            TRANSACTION_CANCELED, self._client.transact_write_items, TransactItems=actions
        )
        if not isinstance(cancelled, ClientError):
            return None
        reasons = cancellation_reasons(cancelled, len(actions))
        own = len(actions) - len(pool_items)
        refusal = rows_refusal(
            cancelled, reasons[:own], rows, write.outcomes, list(counters), write.token_uses
        )
        return dataclasses.replace(refusal, pools_refused=_pools_refused(pool_items, reasons[own:]))

    def _record_action(
        self, write: GroupWrite, outcome: ReservationOutcome, recorded_at: str
    ) -> dict[str, Any]:
        """The record of one answer, written only if none exists (ALL_OLD hands back the one that does)."""
        takes_seats = outcome.outcome in TAKES_SEATS
        return {
            "Put": {
                "TableName": self._table_name,
                "Item": record_item(
                    outcome,
                    recorded_at=recorded_at,
                    expires_at=None if takes_seats else write.rejection_expires_at,
                    customer_counted=takes_seats and write.max_per_customer is not None,
                    shard=write.shard if takes_seats else 0,
                    pools=write.pool_refs if takes_seats else (),
                ),
                "ConditionExpression": "attribute_not_exists(pk)",
                "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
            }
        }

    def _put_records(
        self, outcomes: Sequence[ReservationOutcome], *, recorded_at: str, expires_at: int
    ) -> WriteRefused | None:
        """One conditional PutItem per rejection's record, `MAX_CONCURRENT_PUTS` at a time.

        Each record is written exactly once by its condition; one that exists comes back with
        ALL_OLD. The puts are independent: those written stand whatever the others met, and are
        reported in `WriteRefused.written` when another found its record or failed transiently;
        only when a transient fault kept every record out is it raised (the first one).
        """

        def put(outcome: ReservationOutcome) -> ClientError | RetryableError | None:
            if outcome.outcome in TAKES_SEATS:
                raise ValueError(f"{outcome.reservation_id!r} takes seats: it needs the inventory")
            item = record_item(
                outcome, recorded_at=recorded_at, expires_at=expires_at, customer_counted=False
            )
            try:
                refused = call_expecting(
                    CONDITION_FAILED,
                    self._client.put_item,
                    TableName=self._table_name,
                    Item=item,
                    ConditionExpression="attribute_not_exists(pk)",
                    ReturnValuesOnConditionCheckFailure="ALL_OLD",
                )
            except RetryableError as exc:
                return exc
            return refused if isinstance(refused, ClientError) else None

        if len(outcomes) == 1:
            results = [put(outcomes[0])]
        else:
            if self._put_pool is None:
                # Lives as long as the container, like the client (which is thread-safe).
                self._put_pool = ThreadPoolExecutor(max_workers=MAX_CONCURRENT_PUTS, thread_name_prefix="put")
            futures = [self._put_pool.submit(put, outcome) for outcome in outcomes]
            # Every put is answered before anything is raised (a put that raised other than a
            # transient fault raises below), so no put is left running behind the caller.
            wait(futures)
            results = [future.result() for future in futures]
        written: set[str] = set()
        already_recorded: dict[str, ReservationOutcome] = {}
        faults: list[RetryableError] = []
        for outcome, result in zip(outcomes, results, strict=True):
            if isinstance(result, RetryableError):
                faults.append(result)
            elif isinstance(result, ClientError):
                response: dict[str, Any] = result.response  # type: ignore[assignment]
                if not response.get("Item"):
                    raise RuntimeError("record condition failed without ALL_OLD item") from result
                already_recorded[outcome.reservation_id] = outcome_from_item(response["Item"])
            else:
                written.add(outcome.reservation_id)
        if faults and not written and not already_recorded:
            raise faults[0]
        if not faults and not already_recorded:
            return None
        return WriteRefused(
            inventory_refused=False,
            inventory=None,
            already_recorded=already_recorded,
            written=frozenset(written),
        )

    def _take_seats_action(self, write: GroupWrite) -> dict[str, Any]:
        now = int(time.time()) if write.now is None else write.now
        held = write.seats_held
        sold = write.seats_taken - held
        moved = sum(write.donors.values())
        values: dict[str, Any] = {
            # What the item itself must have: the seats taken less those moved into it.
            ":seats": number(write.seats_taken - moved),
            ":open": {"S": SaleStatus.OPEN.value},
            ":now": number(now),
        }
        names: dict[str, str] = {}
        updates = ["available = available - :seats"]
        if moved:
            updates.append("#capacity = #capacity + :moved")
            values[":moved"] = number(moved)
            names["#capacity"] = "capacity"
        if sold:
            updates.append("sold = sold + :sold")
            values[":sold"] = number(sold)
        if write.taken_at is not None:
            updates.append(f"{TAKEN_AT} = :taken_at")
            values[":taken_at"] = {"N": f"{write.taken_at:.3f}"}
        if held:
            updates.append("held = if_not_exists(held, :zero) + :held")
            values[":held"] = number(held)
            values[":zero"] = number(0)
        condition = f"attribute_exists(pk) AND available >= :seats AND {SALE_OPEN_CONDITION}"
        # The limit the planner assumed is part of the guard: a stale assumption is refused, and
        # ALL_OLD hands back the real item to plan again from.
        if write.max_per_customer is None:
            condition += " AND attribute_not_exists(max_per_customer)"
        else:
            condition += " AND max_per_customer = :limit"
            values[":limit"] = number(write.max_per_customer)
        # So are the pools the class takes from besides (docs/guides/pools.md).
        if write.pools:
            condition += f" AND {POOL_NAMES} = :pools"
            values[":pools"] = pool_names_value(write.pools)
        else:
            condition += f" AND attribute_not_exists({POOL_NAMES})"
        # So is whether the class requires admission tokens (docs/guides/admission.md).
        if write.admission_required:
            condition += f" AND {ADMISSION_REQUIRED} = :required"
            values[":required"] = {"BOOL": True}
        else:
            condition += (
                f" AND (attribute_not_exists({ADMISSION_REQUIRED}) OR {ADMISSION_REQUIRED} = :not_required)"
            )
            values[":not_required"] = {"BOOL": False}
        update: dict[str, Any] = {
            "TableName": self._table_name,
            "Key": inventory_key(write.key, write.shard),
            "UpdateExpression": "SET " + ", ".join(updates),
            "ConditionExpression": condition,
            "ExpressionAttributeValues": values,
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }
        if names:
            update["ExpressionAttributeNames"] = names
        return {"Update": update}

    def _move_seats_action(self, key: SeatKey, donor: int, seats: int) -> dict[str, Any]:
        """Takes `seats` available seats and as much capacity off a shard item (they move to another)."""
        return {
            "Update": {
                "TableName": self._table_name,
                "Key": inventory_key(key, donor),
                "UpdateExpression": "SET #capacity = #capacity - :moved, available = available - :moved",
                "ConditionExpression": "attribute_exists(pk) AND available >= :moved",
                "ExpressionAttributeNames": {"#capacity": "capacity"},
                "ExpressionAttributeValues": {":moved": number(seats)},
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
                    ":zero": number(0),
                    ":seats": number(seats),
                    ":room": number(limit - seats),
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
        inventory_actions: int,
        token_uses: Sequence[TokenUse] = (),
        pools: Sequence[tuple[str, int]] = (),
    ) -> WriteRefused:
        """Reads the cancellation reasons (one per action, in order) into what the planner needs.

        A refused shard item hands back only its own numbers (`SeatClassInventory.complete` is
        False for a sharded class): the planner reads the whole class before deciding on it.
        """
        expected_count = len(outcomes) + len(customers) + inventory_actions + len(token_uses) + len(pools)
        reasons = cancellation_reasons(exc, expected_count)
        pool_reasons = reasons[len(reasons) - len(pools) :]
        refusal = Reservations._refusal_of(
            exc,
            reasons[: len(reasons) - len(pools)],
            outcomes,
            customers,
            inventory_actions=inventory_actions,
            token_uses=token_uses,
        )
        return dataclasses.replace(refusal, pools_refused=_pools_refused(pools, pool_reasons))

    @staticmethod
    def _refusal_of(
        exc: ClientError,
        reasons: Sequence[dict[str, Any]],
        outcomes: Sequence[ReservationOutcome],
        customers: Sequence[str],
        *,
        inventory_actions: int,
        token_uses: Sequence[TokenUse] = (),
    ) -> WriteRefused:
        """One write's part of the cancellation reasons (its inventory, records, counters and
        token uses, in that order), without pools."""
        inventory_refused = False
        inventory: SeatClassInventory | None = None
        inventory_reasons, record_reasons = reasons[:inventory_actions], reasons[inventory_actions:]
        for position, inventory_reason in enumerate(inventory_reasons):
            if failed_condition(inventory_reason):
                old = inventory_reason.get("Item")
                if not old and position > 0:
                    raise StoreInconsistency("a shard item that seats move from does not exist") from exc
                if not inventory_refused:
                    inventory = inventory_from_item(old) if old else None
                inventory_refused = True
        token_reasons = record_reasons[len(outcomes) + len(customers) :]
        counter_reasons = record_reasons[len(outcomes) : len(outcomes) + len(customers)]
        record_reasons = record_reasons[: len(outcomes)]
        already_recorded: dict[str, ReservationOutcome] = {}
        for outcome, reason in zip(outcomes, record_reasons, strict=True):
            if failed_condition(reason):
                old = reason.get("Item")
                if not old:
                    raise RuntimeError("record condition failed without ALL_OLD item") from exc
                already_recorded[outcome.reservation_id] = outcome_from_item(old)
        customer_seats: dict[str, int] = {}
        for customer_id, reason in zip(customers, counter_reasons, strict=True):
            if failed_condition(reason):
                old = reason.get("Item")
                if not old:
                    raise RuntimeError("counter condition failed without ALL_OLD item") from exc
                customer_seats[customer_id] = int(old["seats"]["N"])
        tokens_used: dict[str, str] = {}
        for use, reason in zip(token_uses, token_reasons, strict=True):
            if failed_condition(reason):
                old = reason.get("Item")
                if not old:
                    raise RuntimeError("token condition failed without ALL_OLD item") from exc
                tokens_used[use.token_id] = old["reservation_id"]["S"]
        return WriteRefused(
            inventory_refused=inventory_refused,
            inventory=inventory,
            already_recorded=already_recorded,
            customer_seats=customer_seats,
            tokens_used=tokens_used,
        )


def _pool_items(write: GroupWrite) -> list[tuple[str, int]]:
    """The pool items a take writes, in action order: per pool, the item the seats come off
    (`pool_shards`), then its donors (docs/guides/pools.md)."""
    items: list[tuple[str, int]] = []
    for pool in write.pools:
        shard = write.pool_shards.get(pool, 0)
        donors = write.pool_donors(pool)
        if shard in donors or sum(donors.values()) > write.seats_taken:
            raise ValueError(
                f"moves {donors} into item {shard} of pool {pool} do not fit {write.seats_taken} seat(s)"
            )
        items.append((pool, shard))
        items.extend((pool, donor) for donor in donors)
    return items


def _pools_refused(
    pools: Sequence[tuple[str, int]], reasons: Sequence[dict[str, Any]]
) -> dict[str, PoolInventory | None]:
    """The capacity pools whose guard failed, each as it was (None: the pool item is missing);
    for a sharded pool, the first of its items that refused (a view of that item alone)."""
    refused: dict[str, PoolInventory | None] = {}
    for (pool, _shard), reason in zip(pools, reasons, strict=True):
        if failed_condition(reason) and pool not in refused:
            old = reason.get("Item")
            refused[pool] = pool_from_item(old) if old else None
    return refused
