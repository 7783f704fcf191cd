"""In-memory fakes of the ports, with the same semantics as the real adapters (atomic, all-or-nothing)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from seat_inventory.logic.ports import WriteRefused
from seat_inventory.models import (
    Outcome,
    ReservationOutcome,
    RetryableError,
    SeatClassInventory,
    SeatKey,
    TransactionConflict,
)


@dataclass
class InMemoryInventoryStore:
    """Behaves like the DynamoDB transaction: guard on the inventory, attribute_not_exists on records."""

    inventory: dict[SeatKey, SeatClassInventory] = field(default_factory=dict)
    records: dict[str, ReservationOutcome] = field(default_factory=dict)
    expiry: dict[str, int | None] = field(default_factory=dict)
    transactions: int = 0
    inventory_writes: int = 0
    fail_next: list[Exception] = field(default_factory=list)

    def add_event(self, event_id: str, capacity: int, seat_class: str = "GA") -> None:
        self.inventory[SeatKey(event_id, seat_class)] = SeatClassInventory(
            event_id, seat_class, capacity, capacity, 0
        )

    reads: int = 0

    def read_inventory(self, key: SeatKey) -> SeatClassInventory | None:
        self.reads += 1
        if self.fail_next:
            raise self.fail_next.pop(0)
        return self.inventory.get(key)

    def commit_outcomes(
        self,
        key: SeatKey,
        outcomes: Sequence[ReservationOutcome],
        *,
        seats_taken: int,
        rejection_expires_at: int,
    ) -> WriteRefused | None:
        self.transactions += 1
        if self.fail_next:
            raise self.fail_next.pop(0)
        item = self.inventory.get(key)
        inventory_refused = seats_taken > 0 and (item is None or item.available < seats_taken)
        recorded = {
            o.reservation_id: self.records[o.reservation_id]
            for o in outcomes
            if o.reservation_id in self.records
        }
        if inventory_refused or recorded:
            return WriteRefused(
                inventory_refused=inventory_refused,
                inventory=item if inventory_refused else None,
                already_recorded=recorded,
            )
        if seats_taken > 0:
            assert item is not None
            self.inventory_writes += 1
            self.inventory[key] = SeatClassInventory(
                item.event_id,
                item.seat_class,
                item.capacity,
                item.available - seats_taken,
                item.sold + seats_taken,
            )
        for outcome in outcomes:
            self.records[outcome.reservation_id] = outcome
            self.expiry[outcome.reservation_id] = (
                None if outcome.outcome is Outcome.CONFIRMED else rejection_expires_at
            )
        return None


@dataclass
class RecordingPublisher:
    """Collects what was published; can refuse chosen reservation ids, or everything, to test retries."""

    published: list[ReservationOutcome] = field(default_factory=list)
    refuse_ids: set[str] = field(default_factory=set)
    refuse_all: bool = False

    def publish(self, outcomes: Sequence[ReservationOutcome]) -> list[ReservationOutcome]:
        failed = [o for o in outcomes if self.refuse_all or o.reservation_id in self.refuse_ids]
        self.published.extend(o for o in outcomes if o not in failed)
        return failed


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
