"""The one round loop every planner runs: plan, write, learn.

Each round a planner plans a write from what it knows (or, knowing too little, reads instead),
the store commits it, and the planner learns from what a refused write handed back. A transaction
conflict or throttling teaches nothing: it is waited out (`wait_or_raise`, until the deadline),
not counted as a round. What differs between the planners is only what they plan and learn
(`Planner`): a group of counted requests (`settle_group`), a mapped take (`settle_mapped`: one
request, or a batch's best-available requests together), a multi-line order (`settle_order`), a
group's status changes (`change_reservations`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, TypeVar

from seat_inventory.logic.ports import Clock
from seat_inventory.logic.retry_deadline import ConflictDeadline
from seat_inventory.models import Throttled, TransactionConflict

Attempt = TypeVar("Attempt")
Refused = TypeVar("Refused")


class Planner(Protocol[Attempt, Refused]):
    def pending(self) -> bool:
        """Whether anything is left to settle."""
        ...

    def plan(self) -> Attempt | bool:
        """The write to make; or, when it read (or answered) instead, whether that spent a round."""
        ...

    def write(self, attempt: Attempt) -> Refused | None:
        """Commits the attempt: None when it committed, what refused it otherwise."""
        ...

    def contended(self, attempt: Attempt, exc: TransactionConflict | Throttled) -> None:
        """The write met a conflict or throttling: wait for a turn, or raise past the deadline."""
        ...

    def committed(self, attempt: Attempt) -> None:
        """The write committed: its answers stand."""
        ...

    def learn(self, attempt: Attempt, refused: Refused) -> bool:
        """Takes in what a refused write handed back; whether that spent a round."""
        ...


def run_rounds(
    planner: Planner[Attempt, Refused],
    *,
    bound: int | None,
    exhausted: Callable[[], Exception],
    fresh_after_commit: bool = False,
) -> None:
    """Runs the planner until nothing is pending; raises `exhausted()` once `bound` rounds were
    spent (None: no bound; the planner's deadline bounds it). A commit is a round too, or, with
    `fresh_after_commit`, starts the count again."""
    rounds = 0
    while planner.pending():
        if bound is not None and rounds >= bound:
            raise exhausted()
        attempt = planner.plan()
        if isinstance(attempt, bool):
            rounds += attempt
            continue
        try:
            refused = planner.write(attempt)
        except (TransactionConflict, Throttled) as exc:
            planner.contended(attempt, exc)
            continue
        if refused is None:
            planner.committed(attempt)
            rounds = 0 if fresh_after_commit else rounds + 1
        elif planner.learn(attempt, refused):
            rounds += 1


def wait_or_raise(
    deadline: ConflictDeadline, clock: Clock, step: int, exc: TransactionConflict | Throttled, message: str
) -> None:
    """Waits the back-off of `step` (`ConflictDeadline.back_off`), or raises `exc`'s kind with
    `message` when the pause would end past the deadline."""
    if not deadline.back_off(clock, step):
        raise type(exc)(message) from exc
