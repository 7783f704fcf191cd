"""Releases holds that ran out: seats go back to `available`, each hold exactly once, and every
expiry is announced (EXPIRED on SNS) at least once (DynamoDB TTL deletes items only "within a few
days": not a release).

Each run publishes the outbox (expiries a previous run did not announce), finds the holds due
through the `HoldsByExpiry` index, and releases them per seat class (`settle_transitions`: each
record HELD -> EXPIRED only if still HELD and due, entering the outbox in the same transaction),
trying a class whose release met a transient fault again after a back-off, in smaller
transactions. What still failed is reported (`failed_groups`, `holds_overdue`); the handler then
fails the invocation (`SweepHoldsErrorsAlarm`).
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from seat_inventory.logic import answers
from seat_inventory.logic.change_reservations import TransitionResult, settle_transitions
from seat_inventory.logic.inventory_hints import InventoryHints
from seat_inventory.logic.ports import Clock, HoldStore, OutcomePublisher
from seat_inventory.models import (
    Outcome,
    ReservationOutcome,
    ReservationRecord,
    RetryableError,
    SeatKey,
    StoreInconsistency,
    Transition,
)
from seat_inventory.settings import DEFAULT_REJECTION_RECORD_TTL_DAYS, SECONDS_PER_DAY

# Rounds after the first for the seat classes whose release failed with a transient fault (after
# `settle_transitions`' own conflict retries). Each round waits a full-jitter back-off of up to
# RELEASE_BACKOFF_SECONDS * 2**round, once for all the classes left, and halves the transactions:
# at most 0.5 + 1 + 2 = 3.5 s of waiting per run, far inside the function's 30 s timeout.
RELEASE_RETRY_ROUNDS = 3
RELEASE_BACKOFF_SECONDS = 0.25


class SweepIncomplete(Exception):
    """A run left due holds unreleased (a fault outlasted its retries, or the stored state is
    inconsistent): the invocation fails, so that the function's Errors metric counts it."""


@dataclass(slots=True)
class SweepResult:
    """What one sweeper run did.

    `released` are the EXPIRED outcomes of holds this run released (published or not), including
    those a retry found released and in the outbox (this run's own attempt, whose reply was lost);
    `republished` counts outbox entries of earlier runs published now; `unpublished` counts
    outcomes SNS did not take (they stay in the outbox for the next run); `skipped` counts holds
    found due that were confirmed, cancelled or released by someone else first; `failed_groups`
    names the seat classes whose release still failed after the run's retries (a transient fault
    that outlasted them, or a `StoreInconsistency`), with the error; `holds_overdue` counts their
    due holds, still HELD. `oldest_overdue_seconds` is how long past its expiry the oldest due
    hold this run found was when the run started (0 when none was due): the sweeper's lag, which
    grows while releases fail or a backlog outgrows `limit`.
    """

    released: list[ReservationOutcome] = field(default_factory=list)
    seats_released: int = 0
    republished: int = 0
    unpublished: int = 0
    skipped: int = 0
    failed_groups: list[str] = field(default_factory=list)
    holds_overdue: int = 0
    oldest_overdue_seconds: int = 0


def _publish_and_clear(
    records: Sequence[ReservationRecord],
    *,
    store: HoldStore,
    publisher: OutcomePublisher,
    expires_at: int,
) -> int:
    """Publishes the records' EXPIRED outcomes; takes the published ones out of the outbox.

    Returns how many could not be published (they stay in the outbox).
    """
    if not records:
        return 0
    outcomes = {record.reservation_id: answers.expired(record) for record in records}
    not_published = {o.reservation_id for o in publisher.publish(list(outcomes.values()))}
    store.mark_expiries_published(
        [r for r in records if r.reservation_id not in not_published], expires_at=expires_at
    )
    return len(not_published)


def release_expired_holds(
    store: HoldStore,
    publisher: OutcomePublisher,
    clock: Clock,
    *,
    limit: int,
    rejection_ttl_seconds: int = DEFAULT_REJECTION_RECORD_TTL_DAYS * SECONDS_PER_DAY,
    hints: InventoryHints | None = None,
) -> SweepResult:
    """Runs the sweeper once: flushes the outbox, then releases at most `limit` holds due by now.

    A seat class whose release fails with a transient fault is tried again in this run (back-off,
    smaller transactions); what still failed is reported (`failed_groups`, `holds_overdue`) after
    the other classes were released and announced. Errors the service cannot classify propagate.
    """
    result = SweepResult()
    now = int(clock.now())
    record_ttl = now + rejection_ttl_seconds

    outbox = store.find_unpublished_expiries(limit)
    result.unpublished += _publish_and_clear(outbox, store=store, publisher=publisher, expires_at=record_ttl)
    result.republished = len(outbox) - result.unpublished

    flushed = {r.reservation_id for r in outbox}
    due = [
        r
        for r in store.find_expired_holds(now, limit)
        if r.hold_expired(now) and r.reservation_id not in flushed
    ]
    result.oldest_overdue_seconds = max((now - (r.hold_expires_at or now) for r in due), default=0)
    release = _Release(
        store, clock, hints if hints is not None else InventoryHints(), now, rejection_ttl_seconds
    )
    release.run(due)
    result.skipped = release.skipped
    result.failed_groups = [f"{k.event_id} {k.seat_class}: {release.errors[k]}" for k in release.failed]
    result.holds_overdue = sum(len(t) for t in release.failed.values())
    released = release.released + release.recovered  # released by this run as far as it can tell
    result.seats_released = sum(r.quantity for r in released)
    result.released = [answers.expired(r) for r in released]
    result.unpublished += _publish_and_clear(
        released, store=store, publisher=publisher, expires_at=record_ttl
    )
    return result


@dataclass(slots=True)
class _Release:
    """One run's releases, per seat class: what was released, what a retry found released by this
    run already (its reply was lost), what was skipped (changed by someone else first), and the
    classes that still failed, with their errors."""

    store: HoldStore
    clock: Clock
    hints: InventoryHints
    now: int
    rejection_ttl_seconds: int
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex)  # this run's `Transition.change_id`
    released: list[ReservationRecord] = field(default_factory=list)
    recovered: list[ReservationRecord] = field(default_factory=list)
    skipped: int = 0
    errors: dict[SeatKey, RetryableError] = field(default_factory=dict)
    failed: dict[SeatKey, list[Transition]] = field(default_factory=dict)

    def run(self, due: Sequence[ReservationRecord]) -> None:
        """Releases the due holds per class; a class that met a transient fault is tried again
        after a back-off, in transactions half as large, `RELEASE_RETRY_ROUNDS` times."""
        groups: dict[SeatKey, list[Transition]] = {}
        for record in due:
            if record.seat_key is not None:
                groups.setdefault(record.seat_key, []).append(
                    Transition(record, Outcome.EXPIRED, self.run_id)
                )
        size = max((len(t) for t in groups.values()), default=0)
        for attempt in range(1 + RELEASE_RETRY_ROUNDS):
            if attempt:
                if not groups:
                    break
                self.clock.sleep(random.uniform(0, RELEASE_BACKOFF_SECONDS * 2**attempt))
                size = max(1, -(-size // 2))
            left = self._round(groups, size)
            # A StoreInconsistency is not cured by waiting: it is reported at once.
            groups = {k: t for k, t in left.items() if not isinstance(self.errors[k], StoreInconsistency)}
            self.failed.update((k, t) for k, t in left.items() if k not in groups)
        self.failed.update(groups)

    def _round(
        self, groups: Mapping[SeatKey, list[Transition]], size: int
    ) -> dict[SeatKey, list[Transition]]:
        """Each class's releases in transactions of `size`; the transitions left of each class
        whose release failed."""
        left: dict[SeatKey, list[Transition]] = {}
        for key, transitions in groups.items():
            for start in range(0, len(transitions), size):
                settled = settle_transitions(
                    key,
                    transitions[start : start + size],
                    now=self.now,
                    store=self.store,
                    clock=self.clock,
                    hints=self.hints,
                    release_ttl_seconds=self.rejection_ttl_seconds,
                )
                self._take_in(settled)
                if settled.error is not None:
                    self.errors[key] = settled.error
                    left[key] = settled.failed + transitions[start + size :]
                    break
        return left

    def _take_in(self, settled: TransitionResult) -> None:
        self.released.extend(t.record for t in settled.committed)
        for now_stored in settled.superseded.values():
            # A hold found EXPIRED by this run's own id is its release whose reply was lost:
            # announce it now, not a run later. Another sweeper's release is not ours to count
            # (it announces it, or its outbox entry is published by a later run).
            if (
                now_stored is not None
                and now_stored.awaiting_publication
                and now_stored.last_change_id == self.run_id
            ):
                self.recovered.append(now_stored)
            else:
                self.skipped += 1
