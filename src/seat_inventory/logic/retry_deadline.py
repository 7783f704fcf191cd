"""How long transaction conflicts and throttling are waited out in place, and the back-off between tries.

A conflict is not a failure (another transaction held the item for tens of milliseconds), nor is
throttling (the partition's units of this second are spent): both are retried in place with
capped full-jitter exponential back-off until the invocation's deadline (`ConflictDeadline`);
only a write that never got its turn by then is handed back (docs/explanation/contention.md).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from seat_inventory.logic.ports import Clock
from seat_inventory.models import Throttled

_Result = TypeVar("_Result")

# The first pause is drawn from 0 to 20 ms, doubling per refusal in a row up to 0.5 s
# (docs/explanation/contention.md).
CONFLICT_BACKOFF_SECONDS = 0.02
CONFLICT_BACKOFF_CAP_SECONDS = 0.5
# Past this many doublings the pause is capped anyway (and 2**n stays a small number).
MAX_BACKOFF_DOUBLINGS = 10
# How long conflicts are retried when the caller gives no deadline (tools, tests, the sweeper).
DEFAULT_CONFLICT_PATIENCE_SECONDS = 20.0
# Kept back from the invocation's remaining time for publishing and answering after the last
# conflict retry: publishing a batch's outcomes is a few SNS calls of p50 20 ms / p90 40 ms each
# (the latency `seats simulate` models, docs/explanation/simulation.md).
FINISH_RESERVE_SECONDS = 5.0


def conflict_deadline(now: float, remaining_ms: int) -> float:
    """Until when (clock time) an invocation with `remaining_ms` left retries conflicts in place."""
    return now + max(0.0, remaining_ms / 1000 - FINISH_RESERVE_SECONDS)


@dataclass(slots=True)
class ConflictDeadline:
    """The clock time until which transaction conflicts are retried in place.

    The pauses it hands out are counted against the same budget, so retrying ends even under a
    clock that does not move while it sleeps (a test's); on a real clock that check never binds
    first, since the clock moves at least as far as the pauses.
    """

    at: float
    budget: float
    paused: float = 0.0

    @classmethod
    def until(cls, clock: Clock, at: float) -> ConflictDeadline:
        return cls(at, max(0.0, at - clock.now()))

    @classmethod
    def after(cls, clock: Clock, seconds: float = DEFAULT_CONFLICT_PATIENCE_SECONDS) -> ConflictDeadline:
        return cls.until(clock, clock.now() + seconds)

    def back_off(self, clock: Clock, conflicts: int) -> bool:
        """Sleeps a full-jitter exponential back-off after the `conflicts`-th conflict in a row and
        returns True; returns False (without sleeping) when the pause would end past the deadline."""
        ceiling = CONFLICT_BACKOFF_SECONDS * 2 ** min(conflicts, MAX_BACKOFF_DOUBLINGS)
        pause = random.uniform(0, min(CONFLICT_BACKOFF_CAP_SECONDS, ceiling))
        if clock.now() + pause > self.at or self.paused + pause > self.budget:
            return False
        self.paused += pause
        clock.sleep(pause)
        return True

    def patiently(self, clock: Clock, operation: Callable[[], _Result], what: str) -> _Result:
        """Calls `operation` (a read), retrying it in place with `back_off` while it is `Throttled`;
        raises `Throttled` when it is still refused at the deadline."""
        throttled = 0
        while True:
            try:
                return operation()
            except Throttled as exc:
                throttled += 1
                if not self.back_off(clock, throttled):
                    raise Throttled(
                        f"{what}: throttled {throttled} times in a row until the deadline"
                    ) from exc
