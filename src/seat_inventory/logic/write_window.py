"""How much one container writes to the table at once: an adaptive window (AIMD, as TCP's
congestion window, RFC 5681), and the back-off a throttled write waits (docs/explanation/contention.md).

A throttled request consumes nothing, and a 100-action transaction needs about 200 units at
once: containers that back off on their own refusals ask ever less often and reach their deadline
uncommitted. So each container puts at most `records` reservations in one transaction: a
throttled transaction halves it (down to `MIN_RECORDS`), an admitted one widens it by
`INCREASE_RECORDS` (up to `MAX_RECORDS`). botocore's adaptive mode does not see cancelled
transactions; the service does (`Throttled`). No I/O, no clock.
"""

from __future__ import annotations

from dataclasses import dataclass

from seat_inventory.models import Throttled

# DynamoDB allows 100 actions per transaction: one inventory update and 99 records
# (`logic.limits.MAX_ACTIONS_PER_TRANSACTION`).
MAX_RECORDS = 99
MIN_RECORDS = 8
DECREASE_FACTOR = 0.5
INCREASE_RECORDS = 16


@dataclass(slots=True)
class AdaptiveWriteLimit:
    """One container's window: the most reservations it writes in one transaction.

    Lives as long as the container (it is part of its `InventoryHints`), so what one invocation
    learned about the table's throughput shapes the next. `throttles` and `admissions` count the
    outcomes it adapted to.
    """

    records: int = MAX_RECORDS
    throttles: int = 0
    admissions: int = 0

    def throttled(self) -> None:
        """A transaction was throttled: halve the window (not below `MIN_RECORDS`)."""
        self.throttles += 1
        self.records = max(MIN_RECORDS, int(self.records * DECREASE_FACTOR))

    def admitted(self) -> None:
        """A transaction was admitted (committed, or cancelled by a condition or a conflict: the
        table had its units): widen the window by `INCREASE_RECORDS` (not above `MAX_RECORDS`)."""
        self.admissions += 1
        self.records = min(MAX_RECORDS, self.records + INCREASE_RECORDS)


# `ConflictDeadline.back_off` draws its pause from 0 to 0.02 s x 2^n, capped at 0.5 s: from this
# n on, the cap.
THROTTLED_BACK_OFF_STEP = 5


def back_off_step(refusal: Exception, refusals: int) -> int:
    """Which step of the back-off to wait after `refusals` refusals in a row, the last `refusal`.

    A conflict waits longer after each conflict in a row (another container holds the item: its
    transaction ends within tens of milliseconds). A throttled request waits the capped back-off
    (up to 0.5 s, drawn at random) every time, however often this container was throttled before:
    the table's units are short for every container alike, and a back-off that grows with a
    container's own refusals lets those refused most ask least often, so the same few are refused
    until their deadline while the others get in (exponential back-off's capture effect).
    """
    return THROTTLED_BACK_OFF_STEP if isinstance(refusal, Throttled) else refusals
