"""One operator write made exactly once, shared by the seat classes' and the pools' commands
(`operator_commands`, `pool_commands`).

A change is one conditional write that records its operation id among the item's last
`RECENT_OPERATIONS` ones. Sent again after its reply was lost, it is recognised: the write is
refused (its version guard no longer holds) and the item shows the id, or a read after the lost
reply shows it. `send_once` classifies one attempt; the callers decide what to plan again.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from seat_inventory.models import RetryableError
from seat_tools.operator_errors import OperatorOutcomeUnknown

# How many operation ids an item keeps: a retry is recognised as long as fewer than this many
# other operator writes landed on the item in between (they come seconds apart at most).
RECENT_OPERATIONS = 8
OPERATIONS_ATTRIBUTE = "recent_operations"
# Reads after a write that got no answer, with jittered exponential back-off.
NO_ANSWER_READS = 5
NO_ANSWER_BACKOFF_SECONDS = 0.1

Item = Mapping[str, Any]


def new_operation_id() -> str:
    return uuid.uuid4().hex[:16]


def recent_operations(item: Item) -> list[str]:
    """The operation ids an item shows (its last operator writes)."""
    return [value["S"] for value in item.get(OPERATIONS_ATTRIBUTE, {}).get("L", [])]


def operations_value(item: Item, operation_id: str) -> dict[str, Any]:
    """The item's recent operation ids with `operation_id` added, the oldest dropped."""
    recent = [*recent_operations(item), operation_id][-RECENT_OPERATIONS:]
    return {"L": [{"S": op} for op in recent]}


@dataclass(frozen=True, slots=True)
class Sent:
    """What one attempt of an exactly-once write came to.

    `applied` is the item as written (ALL_NEW), or as found showing the operation id (a retry of
    a write whose reply was lost); `refused` the item as it was when a condition refused the write
    (another change came first, or the change's own guard), with `error` the refusal; `missing`
    when the condition refused because there is no item. `unanswered`: DynamoDB did not answer and
    a read showed the write was not applied (it may be sent again).
    """

    applied: Item | None = None
    refused: Item | None = None
    missing: bool = False
    error: ClientError | None = None
    unanswered: RetryableError | None = None


def send_once(
    send: Callable[[], Any],
    *,
    operation_id: str,
    read: Callable[[], Item | None],
    sleep: Callable[[float], None],
    what: str,
    event_id: str,
) -> Sent:
    """Sends one conditional write (`send`: `call_expecting(CONDITION_FAILED, ...)`, which returns
    the refusal instead of raising it) and tells what it came to; `read` reads the item strongly
    consistently, `what` names it in errors."""
    try:
        response = send()
    except RetryableError as exc:
        stored = applied_after_no_answer(read, operation_id, exc, sleep=sleep, what=what, event_id=event_id)
        return Sent(applied=stored) if stored is not None else Sent(unanswered=exc)
    if not isinstance(response, ClientError):
        return Sent(applied=response.get("Attributes") or {})
    old: Item | None = response.response.get("Item")  # type: ignore[assignment]
    if not old:
        return Sent(missing=True, error=response)
    if operation_id in recent_operations(old):
        return Sent(applied=old)  # this write, sent again after its reply was lost
    return Sent(refused=old, error=response)


def applied_after_no_answer(
    read: Callable[[], Item | None],
    operation_id: str,
    error: RetryableError,
    *,
    sleep: Callable[[float], None],
    what: str,
    event_id: str,
) -> Item | None:
    """After a write that got no answer: the item if it shows `operation_id` (the write was
    applied), None if it does not (it was not). Raises `OperatorOutcomeUnknown` when the item
    cannot be read either."""
    for attempt in range(NO_ANSWER_READS):
        sleep(random.uniform(0, NO_ANSWER_BACKOFF_SECONDS * 2**attempt))
        try:
            item = read()
        except RetryableError:
            continue
        return item if item is not None and operation_id in recent_operations(item) else None
    raise OperatorOutcomeUnknown(
        f"DynamoDB did not answer the change of {what} ({error}), nor the reads that would tell"
        f" whether it was applied: it may or may not have been (operation {operation_id});"
        f" `seats event show {event_id}` shows where it stands"
    )
