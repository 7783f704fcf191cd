"""The operator's block and unblock of seats of a mapped class (`seats event block` / `unblock`,
docs/guides/seat-maps.md).

A blocked seat is `p<position> = B` on its row item, as the map's `blocked` flag writes it at
creation: never sold. Blocking takes a free seat out of sale (`available` down by one), unblocking
gives back a seat an operator blocked (`available` up by one); held and sold seats are never
touched, and a seat the map itself blocks stays blocked.

One `TransactWriteItems` per command, one update per row item the seats are on, each guarded on
exactly its seats: all free (`attribute_not_exists(p<n>)`) to block, all blocked (`p<n> = :B`) to
unblock, so either every seat named changes or none does. Exactly once, like the other operator
commands (operator_commands.py): each update also sets the row item's `last_operation` to the
command's operation id; a write sent again after its reply was lost (botocore retries a read
timeout or a 500 that may have succeeded) is refused by its own guard, and the refusal (ALL_OLD)
shows its own id: the success it was, not a refusal. A write without any answer is checked by
reading its first row item. One id per row item (not a list: a row item stays under 1 KB): a
retry is recognised unless another block or unblock of the same row item landed in between.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from botocore.exceptions import ClientError

from seat_inventory.dal.errors import (
    TRANSACTION_CANCELED,
    call,
    call_expecting,
    cancellation_reasons,
    failed_condition,
)
from seat_inventory.dal.items import WAITLIST_RULE, number, row_key, seat_attribute
from seat_inventory.dal.seat_rows import SeatRows
from seat_inventory.models import (
    RetryableError,
    SeatKey,
    SeatRow,
    SeatState,
    TransactionConflict,
    seats_by_row,
)
from seat_tools.operator_errors import InventoryChangeRefused, OperatorOutcomeUnknown, UnknownSeatClass

LAST_OPERATION = "last_operation"
# TransactWriteItems takes at most 100 actions: one per row item.
MAX_ROW_ITEMS = 100
ATTEMPTS = 5
BACKOFF_SECONDS = 0.1
_STATE_NAMES = {"H": "held", "S": "sold", "B": "blocked", "L": "set aside for the waiting list"}


def block_update(
    table_name: str, key: SeatKey, row_id: str, positions: Sequence[int], operation_id: str
) -> dict[str, Any]:
    """Blocks free seats of one row item: each guarded free, `available` down by their number."""
    names = {f"#p{i}": seat_attribute(p) for i, p in enumerate(positions)}
    free = " AND ".join(f"attribute_not_exists({name})" for name in names)
    sets = [f"{name} = :blocked" for name in names]
    return _update(
        table_name,
        key,
        row_id,
        "SET " + ", ".join([*sets, "available = available - :n", f"{LAST_OPERATION} = :op"]),
        f"attribute_exists(pk) AND {free}",
        names,
        {
            ":blocked": {"S": SeatState.BLOCKED.value},
            ":n": number(len(positions)),
            ":op": {"S": operation_id},
        },
    )


def unblock_update(
    table_name: str,
    key: SeatKey,
    row_id: str,
    positions: Sequence[int],
    operation_id: str,
    *,
    to_list: bool = False,
) -> dict[str, Any]:
    """Gives back blocked seats of one row item, each guarded blocked: free (`available` up by
    their number) or, `to_list`, set aside for the class's open waiting list (state L, `held` up),
    guarded on the row item's list rule being that."""
    names = {f"#p{i}": seat_attribute(p) for i, p in enumerate(positions)}
    blocked = " AND ".join(f"{name} = :blocked" for name in names)
    values: dict[str, Any] = {
        ":blocked": {"S": SeatState.BLOCKED.value},
        ":n": number(len(positions)),
        ":op": {"S": operation_id},
    }
    names["#rule"] = WAITLIST_RULE
    if to_list:
        values[":listed"] = {"S": SeatState.LISTED.value}
        values[":listing"] = {"BOOL": True}
        sets = ", ".join(f"{name} = :listed" for name in names if name != "#rule")
        expression = f"SET {sets}, held = held + :n, {LAST_OPERATION} = :op"
        rule = "#rule = :listing"
    else:
        expression = f"SET available = available + :n, {LAST_OPERATION} = :op REMOVE " + ", ".join(
            name for name in names if name != "#rule"
        )
        rule = "attribute_not_exists(#rule)"
    return _update(
        table_name, key, row_id, expression, f"attribute_exists(pk) AND {blocked} AND {rule}", names, values
    )


def _values(count: int, operation_id: str) -> dict[str, Any]:
    return {":blocked": {"S": SeatState.BLOCKED.value}, ":n": number(count), ":op": {"S": operation_id}}


def _update(
    table_name: str,
    key: SeatKey,
    row_id: str,
    expression: str,
    condition: str,
    names: Mapping[str, str],
    values: Mapping[str, Any],
) -> dict[str, Any]:
    return {
        "Update": {
            "TableName": table_name,
            "Key": row_key(key, row_id),
            "UpdateExpression": expression,
            "ConditionExpression": condition,
            "ExpressionAttributeNames": dict(names),
            "ExpressionAttributeValues": dict(values),
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }
    }


class SeatBlockCommands(SeatRows):
    """`block_seats` and `unblock_seats` (OperatorTable)."""

    def block_seats(
        self, key: SeatKey, seats: Iterable[str], *, operation_id: str | None = None
    ) -> dict[str, SeatRow]:
        """Blocks free seats (all or none); returns their row items as written."""
        return self._change_seats(key, seats, block=True, operation_id=operation_id)

    def unblock_seats(
        self, key: SeatKey, seats: Iterable[str], *, operation_id: str | None = None
    ) -> dict[str, SeatRow]:
        """Gives back seats an operator blocked (all or none): on sale, or set aside for the class's
        open waiting list (docs/guides/waiting-list.md; a class without capacity pools); returns
        their row items as written."""
        return self._change_seats(key, seats, block=False, operation_id=operation_id)

    def _actions(
        self, key: SeatKey, by_row: Mapping[str, tuple[int, ...]], block: bool, operation_id: str
    ) -> list[dict[str, Any]]:
        """One update per row item; an unblock sets the seats aside on the rows whose list rule is
        on (read strongly consistently; each update is guarded on the rule as read)."""
        rows = sorted(by_row.items())
        if block:
            return [block_update(self._table_name, key, r, p, operation_id) for r, p in rows]
        read = self.read_seat_rows(key, [r for r, _ in rows])
        listing = {r for r, row in read.items() if row.waitlist and not row.pools}
        return [
            unblock_update(self._table_name, key, r, p, operation_id, to_list=r in listing) for r, p in rows
        ]

    def _change_seats(
        self, key: SeatKey, seats: Iterable[str], *, block: bool, operation_id: str | None
    ) -> dict[str, SeatRow]:
        operation_id = operation_id or uuid.uuid4().hex[:16]  # as operator_commands.new_operation_id
        by_row = self._checked_seats(key, list(dict.fromkeys(seats)), block)
        unanswered: RetryableError | None = None
        for attempt in range(ATTEMPTS):
            actions = self._actions(key, by_row, block, operation_id)
            try:
                response = call_expecting(
                    TRANSACTION_CANCELED, self._client.transact_write_items, TransactItems=actions
                )
                if isinstance(response, ClientError):
                    reasons = cancellation_reasons(response, len(actions))
                    if self._seats_applied_before(reasons, operation_id):
                        return self.read_seat_rows(key, sorted(by_row))
                    refusal = self._seats_refusal(key, by_row, reasons, block)
                    if refusal is None:  # a list opened or closed meanwhile: read the rule again
                        unanswered = RetryableError("the waiting list rule changed during the write")
                        continue
                    raise refusal from response
            except TransactionConflict as exc:  # a sale on one of the rows at that moment: not applied
                unanswered = exc
                self._sleep(random.uniform(0, BACKOFF_SECONDS * 2**attempt))
                continue
            except RetryableError as exc:
                if not self._seats_applied_after_no_answer(key, min(by_row), operation_id, exc):
                    unanswered = exc
                    continue
            return self.read_seat_rows(key, sorted(by_row))
        raise RetryableError(f"{unanswered}; no seat of {key.event_id} {key.seat_class} was changed")

    def _checked_seats(self, key: SeatKey, seats: list[str], block: bool) -> dict[str, tuple[int, ...]]:
        """The seats by row item, after checking them against the class's map."""
        if not seats:
            raise ValueError("name at least one seat")
        seat_map = self.read_seat_map(key.event_id)
        class_map = seat_map.classes.get(key.seat_class) if seat_map else None
        if class_map is None:
            raise UnknownSeatClass(f"event {key.event_id!r} has no mapped seat class {key.seat_class!r}")
        for seat in seats:
            found = class_map.seats.get(seat)
            if found is None:
                raise ValueError(f"seat {seat!r} is not a seat of {key.seat_class} on the event's map")
            if found.blocked and not block:
                raise InventoryChangeRefused(
                    f"seat {seat} is blocked by the seat map itself; it stays blocked"
                )
        by_row = seats_by_row(seats)
        if len(by_row) > MAX_ROW_ITEMS:
            raise ValueError(f"the seats are on {len(by_row)} row items; at most {MAX_ROW_ITEMS} per command")
        return by_row

    @staticmethod
    def _seats_applied_before(reasons: Sequence[Mapping[str, Any]], operation_id: str) -> bool:
        """A refusal whose rows already carry this operation: it was applied, its reply lost."""
        return any(
            reason.get("Item", {}).get(LAST_OPERATION, {}).get("S") == operation_id for reason in reasons
        )

    def _seats_refusal(
        self,
        key: SeatKey,
        by_row: Mapping[str, tuple[int, ...]],
        reasons: Sequence[Mapping[str, Any]],
        block: bool,
    ) -> Exception | None:
        """What refused the write (None: every seat as wanted, so the list rule refused it)."""
        problems: list[str] = []
        for (row_id, positions), reason in zip(sorted(by_row.items()), reasons, strict=True):
            if not failed_condition(reason):
                continue
            item = reason.get("Item")
            if not item:
                return UnknownSeatClass(
                    f"row item {row_id} of {key.event_id} {key.seat_class} does not exist"
                )
            prefix = row_id.split("#", 1)[0]
            for position in positions:
                state = item.get(seat_attribute(position), {}).get("S")
                if block and state is not None:
                    problems.append(f"{prefix}-{position} is {_STATE_NAMES.get(state, state)}")
                elif not block and state != SeatState.BLOCKED.value:
                    problems.append(f"{prefix}-{position} is {_STATE_NAMES.get(state or '', 'free')}")
        if not problems:
            return None
        wanted = "free to be blocked" if block else "blocked to be unblocked"
        return InventoryChangeRefused(f"seats must be {wanted}: {', '.join(problems)}")

    def _seats_applied_after_no_answer(
        self, key: SeatKey, row_id: str, operation_id: str, error: RetryableError
    ) -> bool:
        """After a write without an answer: whether its first row item shows the operation."""
        for attempt in range(ATTEMPTS):
            self._sleep(random.uniform(0, BACKOFF_SECONDS * 2**attempt))
            try:
                response = call(
                    self._client.get_item,
                    TableName=self._table_name,
                    Key=row_key(key, row_id),
                    ConsistentRead=True,
                )
            except RetryableError:
                continue
            item: Any = response.get("Item") or {}
            return bool(item.get(LAST_OPERATION, {}).get("S") == operation_id)
        raise OperatorOutcomeUnknown(
            f"DynamoDB did not answer the change of seats of {key.event_id} {key.seat_class} ({error}), nor"
            f" the reads that would tell whether it was applied (operation {operation_id});"
            f" `seats event show {key.event_id} --seats` shows where they stand"
        )
