"""What held a simulated sale: the share of its time each limit was the one holding it.

The sale is a pipeline: requests arrive (through the API, or straight onto the queue), the event
source mapping reads them from the queue and invokes the function (at most as many invocations
at once as its concurrency in force allows: MaximumConcurrency as far as the scale-up has gone,
or 10 per event poller, and never more than the function's reserved concurrency), and each
invocation's container works (its CPU), then waits for DynamoDB and SNS, which answer, refuse or
make it wait. At every moment the sale is held by the stage that has work waiting while the
stage after it is starved, or by the stage that refuses the work. Sampled every `TICK_S` of
virtual time, each moment is shared among the invocation slots the mapping may run, each slot
counted by what holds it:

- a free slot while messages wait in the queue: `intake`, the mapping's reading of the queue
  (its receive calls: their rate and latency);
- a busy slot, by what its container is doing: its CPU (`cpu`), its cold start (`cold_starts`),
  waiting for DynamoDB or SNS answering in their ordinary time (`concurrency`: more invocations at
  once would have gone faster), or waiting out a refusal, by its cause (`partitions` a partition
  of the table, KeyRangeThroughputExceeded; `table` the table's quota or maximum; `index` the
  TicketsToIssue index, which throttles the table's writes; `conflicts` a transaction conflict;
  `sns` the region's publish quota);
- a free slot while nothing waits and requests are still to arrive: `api` when API Gateway
  answered 429 in that moment, else `arrivals` (the offered rate itself: not a limit).

When nothing waits and nothing is left to arrive (the sale's last batches), the moment is shared
among the busy slots only; with none busy, a batch still being gathered (its batching window
running out) makes it `intake`, messages handed back and waiting for their visibility timeout
`visibility`. The report covers the sale from its first request to its last
answer; `binding_limit` names the row with the largest share.
"""

from __future__ import annotations

import bisect
from collections import Counter
from dataclasses import dataclass, field

TICK_S = 0.01

# What a busy container can be doing (`Activities`), and the row each is counted in.
CPU = "cpu"
COLD = "cold"
DYNAMODB = "dynamodb"  # waiting for an answer DynamoDB gives in its ordinary time
SNS = "sns"  # waiting for SNS to accept a publication in its ordinary time
CONFLICTS = "conflicts"
PARTITIONS = "partitions"
TABLE = "table"
INDEX = "index"
SNS_THROTTLED = "sns_throttled"

ROWS = (
    "api",
    "arrivals",
    "intake",
    "cpu",
    "cold_starts",
    "concurrency",
    "partitions",
    "table",
    "index",
    "conflicts",
    "sns",
    "visibility",
)
ROW_OF_ACTIVITY = {
    CPU: "cpu",
    COLD: "cold_starts",
    DYNAMODB: "concurrency",
    SNS: "concurrency",
    CONFLICTS: "conflicts",
    PARTITIONS: "partitions",
    TABLE: "table",
    INDEX: "index",
    SNS_THROTTLED: "sns",
}
# What each row names, for the printed report.
ROW_MEANING = {
    "api": "API Gateway's throttle (429s)",
    "arrivals": "the arrivals (the offered rate, not a limit)",
    "intake": "the event source's reading of the queue (pollers, receive calls, scale-up)",
    "cpu": "the containers' CPU",
    "cold_starts": "cold starts",
    "concurrency": "the containers the mapping may run (waiting for DynamoDB/SNS in their ordinary time)",
    "partitions": "the table's partitions",
    "table": "the table's quota or maximum",
    "index": "the TicketsToIssue index",
    "conflicts": "transaction conflicts",
    "sns": "SNS's publish quota",
    "visibility": "handed-back messages waiting for the visibility timeout",
}


@dataclass
class Activities:
    """How many busy containers are doing each thing right now (updated as they block)."""

    counts: Counter[str] = field(default_factory=Counter)

    def move(self, old: str | None, new: str | None) -> None:
        if old is not None:
            self.counts[old] -= 1
        if new is not None:
            self.counts[new] += 1

    @property
    def busy(self) -> int:
        return sum(self.counts.values())


@dataclass
class BindingMonitor:
    """Accumulates, tick by tick, the row holding the sale (see the module's docstring)."""

    ticks: list[tuple[float, dict[str, float]]] = field(default_factory=list)
    api_refused_at: list[float] = field(default_factory=list)  # sorted times of the API's 429s

    def sample(
        self,
        now: float,
        *,
        visible: int,
        gathering: bool,
        slots: int,
        activities: Activities,
        arrivals_pending: bool,
        returning: bool,
    ) -> None:
        """One moment: `visible` messages in the queue, `gathering` a batch being gathered, `slots`
        the invocations the mapping may run now, `activities` what the busy ones do."""
        shares = self._classify(now, visible, gathering, slots, activities, arrivals_pending, returning)
        self.ticks.append((now, shares))

    def _classify(
        self,
        now: float,
        visible: int,
        gathering: bool,
        slots: int,
        activities: Activities,
        arrivals_pending: bool,
        returning: bool,
    ) -> dict[str, float]:
        busy = activities.busy
        free = max(0, slots - busy)
        if visible or arrivals_pending:
            whole = busy + free
            if not whole:
                return {"intake": 1.0} if visible else {}
            shares = self._busy_shares(activities, whole)
            if free:
                row = "intake" if visible else ("api" if self._refused_within(now) else "arrivals")
                shares[row] = shares.get(row, 0.0) + free / whole
            return shares
        if busy:
            return self._busy_shares(activities, busy)
        if gathering:
            return {"intake": 1.0}
        return {"visibility": 1.0} if returning else {}

    @staticmethod
    def _busy_shares(activities: Activities, whole: int) -> dict[str, float]:
        shares: dict[str, float] = {}
        for activity, count in activities.counts.items():
            if count > 0:
                row = ROW_OF_ACTIVITY[activity]
                shares[row] = shares.get(row, 0.0) + count / whole
        return shares

    def _refused_within(self, now: float) -> bool:
        """Whether API Gateway answered a 429 in the tick ending at `now`."""
        index = bisect.bisect_left(self.api_refused_at, now - TICK_S)
        return index < len(self.api_refused_at) and self.api_refused_at[index] <= now

    def shares(self, start: float, end: float) -> dict[str, float]:
        """Each row's share of the ticks from `start` to `end` (the sale), largest first."""
        totals: dict[str, float] = {}
        count = 0
        for at, shares in self.ticks:
            if start <= at <= end:
                count += 1
                for row, share in shares.items():
                    totals[row] = totals.get(row, 0.0) + share
        if not count:
            return {}
        return dict(sorted(((row, total / count) for row, total in totals.items()), key=lambda kv: -kv[1]))


def binding_limit(shares: dict[str, float]) -> str | None:
    """The row that held the sale longest (`arrivals`: the offered rate itself held it)."""
    return max(shares, key=lambda row: shares[row]) if shares else None
