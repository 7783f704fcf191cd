"""The store's writes: `InventoryStore.take`, `record_rejections`, `change_status`, and the read
of records they rest on (`read_reservations`).

A take or a status change is one `TransactWriteItems` of the actions `seat_inventory.transaction` builds,
rendered by `dal.expressions`; a cancellation's reasons (one per action, in order) are read back
by role there. Rejections alone have nothing to be atomic with: each record is its own
conditional PutItem (1 write unit per KB instead of 2 in a transaction).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
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
from seat_inventory.dal.expressions import decode, render
from seat_inventory.dal.items import (
    outcome_from_item,
    record_from_item,
    record_item,
    reservation_key,
    timestamp,
)
from seat_inventory.models import (
    TAKES_SEATS,
    ReservationOutcome,
    ReservationRecord,
    RetryableError,
    SeatKey,
    Take,
    Transition,
    TransitionsRefused,
    WriteRefused,
)
from seat_inventory.transaction import (
    Action,
    Failure,
    status_actions,
    status_refusal,
    take_actions,
    take_refusal,
)

# Concurrent PutItem calls for a group of rejections: the client's whole connection pool
# (wiring.CLIENT_CONFIG), which nothing else uses meanwhile.
MAX_CONCURRENT_PUTS = 16


class Writes(TableAccess):
    """Taking seats with their answers, recording rejections, changing reservations' status."""

    _put_pool: ThreadPoolExecutor | None = None

    def take(self, take: Take) -> WriteRefused | None:
        """One transaction of the take's actions; None when it committed, what refused otherwise.
        Confirmed sales are kept for good, holds while they last; rejections recorded with the
        take expire by TTL at `rejection_expires_at`, long after SQS could redeliver them."""
        actions = take_actions(take)
        return self._transact(actions, lambda failures: take_refusal(take, failures))

    def change_status(
        self,
        key: SeatKey,
        transitions: Sequence[Transition],
        *,
        now: int,
        capacity: int | None,
        release_expires_at: int,
        lists: Mapping[SeatKey, int] | None = None,
    ) -> TransitionsRefused | None:
        """One transaction: each record's new status (guarded on the one it was read with), the
        seats back to (or sold on) the items they came from, the customers' counters and pools
        (seats given back to a class in `lists` to its waiting list)."""
        if not transitions:
            return None
        actions = status_actions(
            key, transitions, now=now, capacity=capacity, release_expires_at=release_expires_at, lists=lists
        )
        return self._transact(actions, lambda failures: status_refusal(key, failures))

    def _transact(self, actions: Sequence[Action], refusal: Callable[[list[Failure]], Any]) -> Any:
        stamp = timestamp()
        items = [render(action, self._table_name, stamp) for action in actions]
        cancelled = call_expecting(
            TRANSACTION_CANCELED, self._client.transact_write_items, TransactItems=items
        )
        if not isinstance(cancelled, ClientError):
            return None
        reasons = cancellation_reasons(cancelled, len(actions))
        return refusal(
            [
                (action, decode(action, reason.get("Item")))
                for action, reason in zip(actions, reasons, strict=True)
                if failed_condition(reason)
            ]
        )

    def record_rejections(
        self, outcomes: Sequence[ReservationOutcome], *, expires_at: int
    ) -> WriteRefused | None:
        """One conditional PutItem per rejection's record, `MAX_CONCURRENT_PUTS` at a time.

        Each record is written exactly once by its condition; one that exists comes back with
        ALL_OLD. The puts are independent: those written stand whatever the others met, and are
        reported in `WriteRefused.written` when another found its record or failed transiently;
        only when a transient fault kept every record out is it raised (the first one).
        """
        stamp = timestamp()
        if len(outcomes) == 1:
            results = [self._put(outcomes[0], stamp, expires_at)]
        else:
            if self._put_pool is None:
                # Lives as long as the container, like the client (which is thread-safe).
                self._put_pool = ThreadPoolExecutor(max_workers=MAX_CONCURRENT_PUTS, thread_name_prefix="put")
            futures = [self._put_pool.submit(self._put, outcome, stamp, expires_at) for outcome in outcomes]
            # Every put is answered before anything is raised, so none is left running behind.
            wait(futures)
            results = [future.result() for future in futures]
        written: set[str] = set()
        recorded: dict[str, ReservationOutcome] = {}
        faults: list[RetryableError] = []
        for outcome, result in zip(outcomes, results, strict=True):
            if isinstance(result, RetryableError):
                faults.append(result)
            elif isinstance(result, ReservationOutcome):
                recorded[outcome.reservation_id] = result
            else:
                written.add(outcome.reservation_id)
        if faults and not written and not recorded:
            raise faults[0]
        if not faults and not recorded:
            return None
        return WriteRefused(False, None, already_recorded=recorded, written=frozenset(written))

    def _put(
        self, outcome: ReservationOutcome, stamp: str, expires_at: int
    ) -> ReservationOutcome | RetryableError | None:
        """The record written (None), the answer recorded before, or the transient fault met."""
        if outcome.outcome in TAKES_SEATS:
            raise ValueError(f"{outcome.reservation_id!r} takes seats: it needs the inventory")
        item = record_item(outcome, recorded_at=stamp, expires_at=expires_at, customer_counted=False)
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
        if not isinstance(refused, ClientError):
            return None
        old = refused.response.get("Item")
        if not old:
            raise RuntimeError("record condition failed without ALL_OLD item") from refused
        return outcome_from_item(old)  # type: ignore[arg-type]

    def read_reservations(self, reservation_ids: Sequence[str]) -> dict[str, ReservationRecord]:
        """Consistent BatchGetItem, 100 keys per call; unprocessed keys are asked again with back-off.

        Raises `RetryableError` when DynamoDB still leaves keys unprocessed after a few attempts.
        """
        keys = [reservation_key(i) for i in dict.fromkeys(reservation_ids)]
        items, complete = self._consistent_batch_get(keys)
        if not complete:
            raise RetryableError("BatchGetItem left keys unprocessed")
        return {record.reservation_id: record for record in map(record_from_item, items)}
