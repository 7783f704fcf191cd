"""An in-memory inventory store with the semantics of `dal.inventory_table.InventoryTable`.

It has the same guards (seats, sale status and window, the assumed per-customer limit, counters,
the status a record was read with, the capacity), the same refusal reports (the item or record
as it was), and writes nothing when any guard fails. Unit tests use it as the store's fake, and
`seats simulate` runs the service's logic against it (wrapped in `simulation.dynamodb`, which adds
DynamoDB's conflicts, throttling, latency and write units).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from seat_inventory.logic.ports import TransitionsRefused, WriteRefused
from seat_inventory.models import (
    Outcome,
    ReservationOutcome,
    ReservationRecord,
    SaleStatus,
    SeatClassInventory,
    SeatKey,
    Transition,
)

__all__ = ["InMemoryInventoryStore"]


@dataclass
class InMemoryInventoryStore:
    """Behaves like the DynamoDB transactions: guards on the inventory, records and counters."""

    inventory: dict[SeatKey, SeatClassInventory] = field(default_factory=dict)
    records: dict[str, ReservationOutcome] = field(default_factory=dict)  # the original answers
    expiry: dict[str, int | None] = field(default_factory=dict)  # the TTL attribute
    status: dict[str, Outcome] = field(default_factory=dict)
    counted: set[str] = field(default_factory=set)  # records with customer_counted
    outbox: set[str] = field(default_factory=set)  # EXPIRED records awaiting publication
    counters: dict[tuple[SeatKey, str], int] = field(default_factory=dict)
    transactions: int = 0
    inventory_writes: int = 0
    reads: int = 0
    batch_reads: int = 0
    fail_next: list[Exception] = field(default_factory=list)  # the next calls, whatever they are
    fail_next_commit: list[Exception] = field(default_factory=list)  # the next transactions only
    # Runs at the start of every commit: lets a test change the state "concurrently".
    before_commit: Callable[[], None] | None = None
    # Records the (eventually consistent) index still shows as live holds, as they were.
    stale_index: dict[str, ReservationRecord] = field(default_factory=dict)

    def add_event(
        self,
        event_id: str,
        capacity: int,
        seat_class: str = "GA",
        *,
        max_per_customer: int | None = None,
        sale_status: SaleStatus = SaleStatus.OPEN,
        sale_starts_at: int | None = None,
        sale_ends_at: int | None = None,
    ) -> None:
        self.inventory[SeatKey(event_id, seat_class)] = SeatClassInventory(
            event_id,
            seat_class,
            capacity,
            capacity,
            0,
            max_per_customer=max_per_customer,
            sale_status=sale_status,
            sale_starts_at=sale_starts_at,
            sale_ends_at=sale_ends_at,
        )

    def change_item(self, key: SeatKey, **changes: object) -> None:
        """An operator change (status, window, limit, capacity), as the `seats event` commands make."""
        self.inventory[key] = dataclasses.replace(self.inventory[key], **changes)  # type: ignore[arg-type]

    def _maybe_fail(self) -> None:
        if self.fail_next:
            raise self.fail_next.pop(0)

    def _begin_commit(self) -> None:
        self.transactions += 1
        self._maybe_fail()
        if self.fail_next_commit:
            raise self.fail_next_commit.pop(0)
        if self.before_commit is not None:
            hook, self.before_commit = self.before_commit, None
            hook()

    # ------------------------------------------------------------------ InventoryStore

    def read_inventory(self, key: SeatKey) -> SeatClassInventory | None:
        self.reads += 1
        self._maybe_fail()
        return self.inventory.get(key)

    def commit_outcomes(
        self,
        key: SeatKey,
        outcomes: Sequence[ReservationOutcome],
        *,
        seats_taken: int,
        rejection_expires_at: int,
        max_per_customer: int | None = None,
        customer_seats: Mapping[str, int] | None = None,
        now: int | None = None,
    ) -> WriteRefused | None:
        self._begin_commit()
        now = int(time.time()) if now is None else now
        item = self.inventory.get(key)
        inventory_refused = seats_taken > 0 and (
            item is None
            or item.available < seats_taken
            or item.sale_closed_reason(now) is not None
            or item.max_per_customer != max_per_customer
        )
        recorded = {
            o.reservation_id: self.records[o.reservation_id]
            for o in outcomes
            if o.reservation_id in self.records
        }
        counters = dict(customer_seats or {}) if max_per_customer is not None else {}
        refused_counters = {
            customer: self.counters[(key, customer)]
            for customer, seats in counters.items()
            if (key, customer) in self.counters
            and max_per_customer is not None
            and self.counters[(key, customer)] > max_per_customer - seats
        }
        if inventory_refused or recorded or refused_counters:
            return WriteRefused(
                inventory_refused=inventory_refused,
                inventory=item if inventory_refused else None,
                already_recorded=recorded,
                customer_seats=refused_counters,
            )
        if seats_taken > 0:
            assert item is not None
            held = sum(o.quantity or 0 for o in outcomes if o.outcome is Outcome.HELD)
            self.inventory_writes += 1
            self.inventory[key] = dataclasses.replace(
                item,
                available=item.available - seats_taken,
                sold=item.sold + seats_taken - held,
                held=item.held + held,
            )
        for outcome in outcomes:
            takes_seats = outcome.outcome in (Outcome.CONFIRMED, Outcome.HELD)
            self.records[outcome.reservation_id] = outcome
            self.status[outcome.reservation_id] = outcome.outcome
            self.expiry[outcome.reservation_id] = None if takes_seats else rejection_expires_at
            if takes_seats and max_per_customer is not None:
                self.counted.add(outcome.reservation_id)
        for customer, seats in counters.items():
            self.counters[(key, customer)] = self.counters.get((key, customer), 0) + seats
        return None

    def record(self, reservation_id: str) -> ReservationRecord | None:
        """The record as `read_reservations` returns it."""
        answer = self.records.get(reservation_id)
        if answer is None:
            return None
        return ReservationRecord(
            answer=answer,
            status=self.status[reservation_id],
            hold_expires_at=answer.hold_expires_at,
            customer_counted=reservation_id in self.counted,
            awaiting_publication=reservation_id in self.outbox,
        )

    def read_reservations(self, reservation_ids: Sequence[str]) -> dict[str, ReservationRecord]:
        self.batch_reads += 1
        self._maybe_fail()
        found = {i: self.record(i) for i in reservation_ids}
        return {i: r for i, r in found.items() if r is not None}

    def commit_transitions(
        self,
        key: SeatKey,
        transitions: Sequence[Transition],
        *,
        now: int,
        capacity: int | None,
        release_expires_at: int,
    ) -> TransitionsRefused | None:
        self._begin_commit()
        released = unheld = unsold = sold = 0
        uncount: dict[str, int] = {}
        for t in transitions:
            seats = t.record.quantity
            if t.record.status is Outcome.HELD:
                unheld += seats
            else:
                unsold += seats
            if t.to is Outcome.CONFIRMED:
                sold += seats
            else:
                released += seats
            if t.uncounts_customer:
                customer = t.record.answer.customer_id or ""
                uncount[customer] = uncount.get(customer, 0) + seats
        item = self.inventory.get(key)
        inventory_refused = (
            item is None
            or item.held < unheld
            or item.sold < unsold
            or (released > 0 and (item.capacity != capacity or item.available > (capacity or 0) - released))
        )
        refused_records: dict[str, ReservationRecord | None] = {}
        for t in transitions:
            current = self.record(t.record.reservation_id)
            if current is None or current.status is not t.record.status:
                refused_records[t.record.reservation_id] = current
            elif current.status is Outcome.HELD:
                expires_at = current.hold_expires_at or 0
                due = expires_at <= now
                if due != (t.to is Outcome.EXPIRED):
                    refused_records[t.record.reservation_id] = current
        refused_counters = frozenset(
            c for c, seats in uncount.items() if self.counters.get((key, c), -1) < seats
        )
        if inventory_refused or refused_records or refused_counters:
            return TransitionsRefused(
                inventory_refused=inventory_refused,
                inventory=item if inventory_refused else None,
                records=refused_records,
                counters_refused=refused_counters,
            )
        assert item is not None
        self.inventory_writes += 1
        self.inventory[key] = dataclasses.replace(
            item,
            available=item.available + released,
            held=item.held - unheld,
            sold=item.sold - unsold + sold,
        )
        for t in transitions:
            reservation_id = t.record.reservation_id
            self.status[reservation_id] = t.to
            if t.to is Outcome.EXPIRED:
                self.outbox.add(reservation_id)
            elif t.to is Outcome.CANCELLED and t.record.status is Outcome.HELD:
                self.expiry[reservation_id] = release_expires_at
        for customer, seats in uncount.items():
            self.counters[(key, customer)] -= seats
        return None

    # ------------------------------------------------------------------ HoldStore

    def find_expired_holds(self, now: int, limit: int) -> list[ReservationRecord]:
        self._maybe_fail()
        live = [r for r in (self.record(i) for i in self.records) if r and r.status is Outcome.HELD]
        due = {r.reservation_id: r for r in live if (r.hold_expires_at or 0) <= now}
        for reservation_id, stale in self.stale_index.items():
            if (stale.hold_expires_at or 0) <= now:
                due.setdefault(reservation_id, stale)
        return sorted(due.values(), key=lambda r: r.hold_expires_at or 0)[:limit]

    def find_unpublished_expiries(self, limit: int) -> list[ReservationRecord]:
        self._maybe_fail()
        found = [self.record(i) for i in sorted(self.outbox)]
        return [r for r in found if r is not None][:limit]

    def mark_expiries_published(self, records: Sequence[ReservationRecord], *, expires_at: int) -> int:
        cleared = 0
        for record in records:
            if record.reservation_id in self.outbox:
                self.outbox.discard(record.reservation_id)
                self.expiry[record.reservation_id] = expires_at
                cleared += 1
        return cleared
