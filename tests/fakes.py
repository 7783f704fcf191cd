"""In-memory fakes of the ports, with the same semantics as the real adapters (atomic, all-or-nothing).

`InMemoryInventoryStore` (in `seat_tools.simulation.memory_store`, which `seats simulate` runs
on too) mirrors `dal.inventory_table.InventoryTable`: the same guards (seats, sale status and
window, the assumed per-customer limit, counters, the status a record was read with, the
capacity), the same refusal reports (the item or record as it was), and nothing written when any
guard fails.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from seat_inventory.models import ReservationOutcome, RetryableError, TransactionConflict
from seat_tools.simulation.memory_store import InMemoryInventoryStore


@dataclass
class RecordingPublisher:
    """Collects what was published; can refuse chosen reservation ids, or everything, to test retries,
    and refuse the first `throttle_calls` calls for the topic's rate (as SNS's `Throttled`)."""

    published: list[ReservationOutcome] = field(default_factory=list)
    refuse_ids: set[str] = field(default_factory=set)
    refuse_all: bool = False
    throttle_calls: int = 0
    throttled: int = 0  # calls refused for the rate so far
    calls_soon: int = 0  # publish_soon calls (a part of a batch of more than 99 messages)

    def publish(
        self,
        outcomes: Sequence[ReservationOutcome],
        *,
        retry_throttled: Callable[[int], bool] | None = None,
    ) -> list[ReservationOutcome]:
        refusals = 0
        while outcomes and self.throttled < self.throttle_calls:
            self.throttled += 1
            if retry_throttled is None or not retry_throttled(refusals):
                return list(outcomes)
            refusals += 1
        failed = [o for o in outcomes if self.refuse_all or o.reservation_id in self.refuse_ids]
        self.published.extend(o for o in outcomes if o not in failed)
        return failed

    def publish_soon(
        self,
        outcomes: Sequence[ReservationOutcome],
        *,
        retry_throttled: Callable[[int], bool] | None = None,
    ) -> Published:
        """Publishes at once (as `publish`); `calls_soon` counts these calls."""
        self.calls_soon += 1
        return Published(self.publish(outcomes, retry_throttled=retry_throttled))


@dataclass(frozen=True)
class Published:
    """A publication that is already over (`RecordingPublisher.publish_soon`)."""

    not_published: list[ReservationOutcome]

    def wait(self) -> list[ReservationOutcome]:
        return self.not_published


@dataclass
class FakeClock:
    time: float = 1_800_000_000.0
    slept: list[float] = field(default_factory=list)

    def now(self) -> float:
        return self.time

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.time += seconds


__all__ = [
    "FakeClock",
    "InMemoryInventoryStore",
    "RecordingPublisher",
    "RetryableError",
    "TransactionConflict",
]
