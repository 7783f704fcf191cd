"""Releases holds that ran out: seats go back to `available`, each hold exactly once, and every
expiry is announced (EXPIRED on SNS) at least once.

DynamoDB TTL is not used for the release: AWS deletes expired items only "within a few days".
The sweeper runs on a schedule (template parameter `SweepSchedule`) and:
1. flushes the outbox: expired holds whose EXPIRED outcome was not published yet (a previous
   run's publication failed, or it stopped in between) are published and taken out;
2. finds live holds due by now through the sparse index `HoldsByExpiry` (8 shards);
3. releases them per seat class in one transaction per 100 actions (`settle_transitions`): each
   record moves HELD -> EXPIRED only if it is still HELD and due, so a hold confirmed or cancelled
   meanwhile is skipped, and two sweepers running at once release it once; released records
   enter the outbox in the same transaction. A seat class whose release hits a transient fault
   is tried again within the run, after a jittered back-off and in smaller transactions
   (`RELEASE_RETRY_ROUNDS`): the release writes the inventory item that every reservation of an
   on-sale writes, so conflicts and throttling are likeliest exactly when seats are scarce;
4. publishes their EXPIRED outcomes and takes the published ones out of the outbox.

A run that still could not release every due hold it found reports them (`failed_groups`,
`holds_overdue`) and the handler fails the invocation (`SweepIncomplete`), so the function's
Errors metric and `SweepHoldsErrorsAlarm` see it; every run also reports how late the oldest due
hold it found was (`oldest_overdue_seconds`, the metric of `HoldsOverdueAlarm`).
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field

from seat_inventory.logic.change_reservations import TransitionResult, settle_transitions
from seat_inventory.logic.inventory_hints import InventoryHints
from seat_inventory.logic.ports import Clock, HoldStore, OutcomePublisher
from seat_inventory.models import (
    Outcome,
    RequestType,
    ReservationOutcome,
    ReservationRecord,
    RetryableError,
    SeatKey,
    StoreInconsistency,
    Transition,
    iso_utc,
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


def expiry_outcome(record: ReservationRecord) -> ReservationOutcome:
    """The EXPIRED outcome published for a released hold (no message asked for it: `message_id` is None)."""
    answer = record.answer
    expired_at = iso_utc(record.hold_expires_at) if record.hold_expires_at is not None else "its expiry"
    return ReservationOutcome(
        reservation_id=answer.reservation_id,
        outcome=Outcome.EXPIRED,
        reason=f"the hold expired at {expired_at}; {record.quantity} seat(s) released",
        event_id=answer.event_id,
        seat_class=answer.seat_class,
        quantity=answer.quantity,
        customer_id=answer.customer_id,
        request_type=RequestType.EXPIRE,
        hold_expires_at=record.hold_expires_at,
        seats=answer.seats,
        lines=answer.lines,
    )


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
    outcomes = {record.reservation_id: expiry_outcome(record) for record in records}
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
    hints = hints if hints is not None else InventoryHints()
    result = SweepResult()
    now = int(clock.now())
    run_id = uuid.uuid4().hex  # stamped on this run's releases (Transition.change_id)
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
    groups: dict[SeatKey, list[Transition]] = {}
    for record in due:
        if record.seat_key is not None:
            groups.setdefault(record.seat_key, []).append(Transition(record, Outcome.EXPIRED, run_id))

    result.oldest_overdue_seconds = max((now - (r.hold_expires_at or now) for r in due), default=0)

    def settle(key: SeatKey, transitions: Sequence[Transition]) -> TransitionResult:
        return settle_transitions(
            key,
            transitions,
            now=now,
            store=store,
            clock=clock,
            hints=hints,
            release_ttl_seconds=rejection_ttl_seconds,
        )

    released: list[ReservationRecord] = []
    recovered: list[ReservationRecord] = []  # found in the outbox by a retry
    errors: dict[SeatKey, RetryableError] = {}
    failed: dict[SeatKey, list[Transition]] = {}
    size = max((len(t) for t in groups.values()), default=0)
    for attempt in range(1 + RELEASE_RETRY_ROUNDS):
        if attempt:
            if not groups:
                break
            clock.sleep(random.uniform(0, RELEASE_BACKOFF_SECONDS * 2**attempt))
            size = max(1, -(-size // 2))
        left: dict[SeatKey, list[Transition]] = {}
        for key, transitions in groups.items():
            for start in range(0, len(transitions), size):
                settled = settle(key, transitions[start : start + size])
                released.extend(t.record for t in settled.committed)
                for now_stored in settled.superseded.values():
                    # A hold found EXPIRED by this run's own id is its release whose reply was
                    # lost: announce it now, not a run later. Another sweeper's release is not ours
                    # to count (it announces it, or its outbox entry is published by a later run).
                    if (
                        now_stored is not None
                        and now_stored.awaiting_publication
                        and now_stored.last_change_id == run_id
                    ):
                        recovered.append(now_stored)
                    else:
                        result.skipped += 1
                if settled.error is not None:
                    errors[key] = settled.error
                    left[key] = settled.failed + transitions[start + size :]
                    break
        # A StoreInconsistency is not cured by waiting: it is reported at once.
        groups = {k: t for k, t in left.items() if not isinstance(errors[k], StoreInconsistency)}
        failed.update((k, t) for k, t in left.items() if k not in groups)
    failed.update(groups)
    result.failed_groups = [f"{k.event_id} {k.seat_class}: {errors[k]}" for k in failed]
    result.holds_overdue = sum(len(t) for t in failed.values())
    released += recovered  # released by this run as far as it can tell (its reply was lost)
    result.seats_released = sum(r.quantity for r in released)
    result.released = [expiry_outcome(r) for r in released]
    result.unpublished += _publish_and_clear(
        released, store=store, publisher=publisher, expires_at=record_ttl
    )
    return result
