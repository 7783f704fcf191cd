"""How much one container writes to the table at once: an adaptive window (AIMD).

DynamoDB throttles a request when its partition (or the table) has not the write units it needs
at that moment; a throttled request consumes nothing (docs/explanation/contention.md). Under a table that
admits fewer transactions than the containers send, who gets in is whoever asks when the
partitions' units have refilled enough, and a 100-action transaction needs about 200 of them at
once. Each container retrying on its own, with an exponential back-off that grows with its own
refusals, lets the unlucky ones ask ever less often: their groups reach the invocation's
deadline uncommitted and are handed back to the queue (180 s there), which is what made a sale on
a new table (4,000 write units per second) slower than on one item (docs/explanation/simulation.md).

So each container keeps a congestion window, as TCP does (additive increase, multiplicative
decrease, RFC 5681): the most reservations it puts in one transaction (its only write in flight).
It starts at the most a transaction holds; a throttled transaction halves it, down to
`MIN_RECORDS`; each admitted one widens it by `INCREASE_RECORDS`, up to `MAX_RECORDS`. A container
that meets throttling thus asks for fewer units at a time, which the partitions (refilling at
1,000 units per second each) have sooner: a container refused again and again gets in with a
smaller transaction instead of waiting for its deadline, every container's window tends to the
same size (a larger transaction is throttled more often, as a larger TCP window loses more), and
the table's units are still all used (throttled requests take none). And a throttled write waits
the capped back-off every time (`back_off_step`), not one that grows with its own refusals.
Smaller transactions cost a little more per reservation (the inventory item's 2 units are shared
by fewer records: 2.25 units at `MIN_RECORDS` instead of 2.02 at 99); docs/explanation/simulation.md has the
figures before and after.

The AWS SDKs' "adaptive" retry mode limits a client's request rate in the same spirit
(https://docs.aws.amazon.com/sdkref/latest/guide/feature-retry-behavior.html), but botocore
applies it only to the errors it retries itself, and it retries no cancelled transaction: the
service sees those (`Throttled`) and adapts here. No I/O, no clock: the same code runs in the
Lambda and in `seats simulate`.
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
