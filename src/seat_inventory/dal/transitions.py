"""Confirm, cancel and expire: status changes, one transaction per group with the inventory and counters."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from seat_inventory.dal.access import TableAccess
from seat_inventory.dal.errors import (
    TRANSACTION_CANCELED,
    call_expecting,
    cancellation_reasons,
    failed_condition,
)
from seat_inventory.dal.items import (
    OUTBOX_PREFIX,
    awaiting_tickets_values,
    customer_key,
    hold_shard,
    inventory_from_item,
    inventory_key,
    number,
    pool_ref_key,
    record_from_item,
    reservation_key,
    timestamp,
)
from seat_inventory.dal.seat_rows import release_rows_actions
from seat_inventory.logic.ports import TransitionsRefused
from seat_inventory.models import (
    Outcome,
    ReservationRecord,
    RetryableError,
    SeatKey,
    StoreInconsistency,
    Transition,
)


@dataclass(frozen=True, slots=True)
class _InventoryDelta:
    """How one status-change transaction moves the inventory item."""

    released: int  # back to available
    unheld: int  # taken off held
    unsold: int  # taken off sold
    sold: int  # added to sold (held seats confirmed)

    @classmethod
    def of(cls, transitions: Sequence[Transition | tuple[Transition, int]]) -> _InventoryDelta:
        """The delta of these transitions' seats (each its record's quantity, or the seats given
        with it: one line of an order)."""
        released = unheld = unsold = sold = 0
        for moved in transitions:
            transition, seats = moved if isinstance(moved, tuple) else (moved, moved.record.quantity)
            if transition.record.status is Outcome.HELD:
                unheld += seats
            else:
                unsold += seats
            if transition.to is Outcome.CONFIRMED:
                sold += seats
            else:
                released += seats
        return cls(released, unheld, unsold, sold)


class Transitions(TableAccess):
    """Reading records and changing their status: `InventoryStore.read_reservations`, `commit_transitions`."""

    def read_reservations(self, reservation_ids: Sequence[str]) -> dict[str, ReservationRecord]:
        """Consistent BatchGetItem, 100 keys per call; unprocessed keys are asked again with back-off.

        Raises `RetryableError` when DynamoDB still leaves keys unprocessed after a few attempts.
        """
        keys = [reservation_key(i) for i in dict.fromkeys(reservation_ids)]
        items, complete = self._consistent_batch_get(keys)
        if not complete:
            raise RetryableError("BatchGetItem left keys unprocessed")
        return {record.reservation_id: record for record in map(record_from_item, items)}

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
        when seats go back and `capacity` is given, by `capacity = :capacity AND available <=
        :capacity - released` (DynamoDB conditions have no arithmetic, so the caller's capacity
        is checked too).

        A sharded class gets one such update per shard item its records' seats came from; the
        caller gives `capacity` only for a class of one item (shard 0). The guards on `held` and
        `sold` suffice on their own: every write keeps `available + held + sold == capacity` on
        each item, so seats given back can never exceed it.
        """
        if not transitions:
            return None
        # Each record's seats by the item they came from: its own class's shard item, or, for an
        # order (docs/guides/orders.md), each line's class's (`ReservationRecord.takes`).
        by_item: dict[tuple[SeatKey, int], list[tuple[Transition, int]]] = {}
        # A mapped class's seats (docs/guides/seat-maps.md) go back to their row items instead, each seat
        # guarded on its state: per class, the transitions with the seats of that class.
        by_rows: dict[SeatKey, list[Transition]] = {}
        counters: dict[tuple[SeatKey, str], int] = {}
        by_pool: dict[str, list[tuple[Transition, int]]] = {}
        for transition in transitions:
            for take in transition.record.takes():
                if take.seats:
                    by_rows.setdefault(take.key, []).append(_with_seats(transition, take.seats))
                else:
                    by_item.setdefault((take.key, take.shard), []).append((transition, take.quantity))
                if transition.releases_seats and take.customer_counted:
                    counter = (take.key, transition.record.answer.customer_id or "")
                    counters[counter] = counters.get(counter, 0) + take.quantity
                for pool in take.pools:
                    by_pool.setdefault(pool, []).append((transition, take.quantity))
        changed_at = timestamp()
        actions = [
            self._inventory_delta_action(
                item_class,
                _InventoryDelta.of(by_item[(item_class, shard)]),
                capacity if (item_class, shard) == (key, 0) else None,
                shard,
            )
            for item_class, shard in sorted(by_item, key=lambda k: (k[0].seat_class, k[1]))
        ]
        inventory_actions = len(actions)
        for rows_class in sorted(by_rows, key=lambda k: k.seat_class):
            actions += release_rows_actions(self._table_name, rows_class, by_rows[rows_class])
        row_actions = len(actions) - inventory_actions
        actions += [
            self._transition_action(t, now=now, changed_at=changed_at, release_expires_at=release_expires_at)
            for t in transitions
        ]
        customers = list(counters)
        actions += [self._uncount_customer_action(k, c, counters[(k, c)]) for k, c in customers]
        # The pools the records' seats came from get them back too (docs/guides/pools.md): each item a
        # record (or an order's line) names, the item of a sharded pool its seats came off.
        pools = sorted(by_pool)
        actions += [
            self._inventory_delta_action(
                key, _InventoryDelta.of(by_pool[pool]), None, 0, item_key=pool_ref_key(key.event_id, pool)
            )
            for pool in pools
        ]
        cancelled = call_expecting(
            TRANSACTION_CANCELED, self._client.transact_write_items, TransactItems=actions
        )
        if isinstance(cancelled, ClientError):
            refused, rows_refused = self._transition_refusal(
                cancelled,
                transitions,
                customers,
                inventory_actions=inventory_actions,
                row_actions=row_actions,
                pools=pools,
            )
            # A seat not in the state its record says, with every record as read: the rows and
            # the records disagree (a row refused because a record changed meanwhile is that
            # record's refusal, answered from the record).
            if rows_refused and not refused.records:
                raise StoreInconsistency(f"{key}: seats are not in the state their records say")
            return refused
        return None

    def _inventory_delta_action(
        self,
        key: SeatKey,
        delta: _InventoryDelta,
        capacity: int | None,
        shard: int,
        *,
        item_key: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """The update of one shard item (or, `item_key` given, of a capacity pool's item)."""
        updates: list[str] = []
        conditions = ["attribute_exists(pk)"]
        values: dict[str, Any] = {}
        names: dict[str, str] = {}
        if delta.released:
            updates.append("available = available + :released")
            values[":released"] = number(delta.released)
            if capacity is not None:
                conditions.append("#capacity = :capacity AND available <= :available_max")
                names["#capacity"] = "capacity"
                values[":capacity"] = number(capacity)
                values[":available_max"] = number(capacity - delta.released)
        if delta.unheld:
            updates.append("held = held - :unheld")
            conditions.append("held >= :unheld")
            values[":unheld"] = number(delta.unheld)
        if delta.unsold:
            conditions.append("sold >= :unsold")
            values[":unsold"] = number(delta.unsold)
        if delta.sold != delta.unsold:
            updates.append("sold = sold + :sold_delta")
            values[":sold_delta"] = number(delta.sold - delta.unsold)
        update: dict[str, Any] = {
            "TableName": self._table_name,
            "Key": item_key or inventory_key(key, shard),
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
        if transition.change_id is not None:
            sets.append("last_change_id = :change_id")
            values[":change_id"] = {"S": transition.change_id}
        removes = ["gsi1pk", "gsi1sk"]
        if transition.to is Outcome.CONFIRMED:
            # Sold: it waits for its ticket numbers in the issuer's index (docs/guides/tickets.md).
            sets.append("gsi2pk = :unnumbered, gsi2sk = :sold_at")
            index = awaiting_tickets_values(record.reservation_id, int(time.time() * 1000))
            values[":unnumbered"] = index["gsi2pk"]
            values[":sold_at"] = index["gsi2sk"]
        if record.status is Outcome.HELD:
            values[":now"] = number(now)
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
                values[":expires_at"] = number(release_expires_at)
        else:
            # Records written before statuses existed have only their outcome.
            condition = "(#status = :from OR (attribute_not_exists(#status) AND outcome = :from))"
            if transition.to is Outcome.CANCELLED:
                # Not while another customer holds one of its tickets (docs/guides/checkin.md).
                condition += " AND (attribute_not_exists(tickets_passed_on) OR tickets_passed_on = :none)"
                values[":none"] = number(0)
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
                "ExpressionAttributeValues": {":seats": number(seats)},
                "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
            }
        }

    @staticmethod
    def _transition_refusal(
        exc: ClientError,
        transitions: Sequence[Transition],
        customers: Sequence[tuple[SeatKey, str]],
        *,
        inventory_actions: int,
        row_actions: int = 0,
        pools: Sequence[str] = (),
    ) -> tuple[TransitionsRefused, bool]:
        """What refused, and whether a row item of a mapped class's seats did (reported apart:
        its ALL_OLD is a row, not a class item)."""
        reasons = cancellation_reasons(
            exc, inventory_actions + row_actions + len(transitions) + len(customers) + len(pools)
        )
        pool_reasons = reasons[len(reasons) - len(pools) :]
        reasons = reasons[: len(reasons) - len(pools)]
        inventory_reasons = reasons[:inventory_actions]
        rows_refused = any(
            failed_condition(r) for r in reasons[inventory_actions : inventory_actions + row_actions]
        )
        reasons = reasons[:inventory_actions] + reasons[inventory_actions + row_actions :]
        record_reasons = reasons[inventory_actions : inventory_actions + len(transitions)]
        counter_reasons = reasons[inventory_actions + len(transitions) :]
        refused_items = [r for r in inventory_reasons if failed_condition(r)]
        inventory_refused = bool(refused_items)
        old_inventory = refused_items[0].get("Item") if refused_items else None
        records: dict[str, ReservationRecord | None] = {}
        for transition, reason in zip(transitions, record_reasons, strict=True):
            if failed_condition(reason):
                old = reason.get("Item")
                records[transition.record.reservation_id] = record_from_item(old) if old else None
        refusal = TransitionsRefused(
            inventory_refused=inventory_refused,
            inventory=inventory_from_item(old_inventory) if inventory_refused and old_inventory else None,
            records=records,
            counters_refused=frozenset(
                c for (_, c), r in zip(customers, counter_reasons, strict=True) if failed_condition(r)
            ),
            pools_refused=frozenset(
                p for p, r in zip(pools, pool_reasons, strict=True) if failed_condition(r)
            ),
        )
        return refusal, rows_refused


def _with_seats(transition: Transition, seats: tuple[str, ...]) -> Transition:
    """The transition as `release_rows_actions` reads it: the record with these seats (an order's
    mapped line's; a single-line record's own)."""
    if transition.record.seats == seats:
        return transition
    record = dataclasses.replace(
        transition.record, answer=dataclasses.replace(transition.record.answer, seats=seats)
    )
    return dataclasses.replace(transition, record=record)
