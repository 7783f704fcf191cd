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
   enter the outbox in the same transaction;
4. publishes their EXPIRED outcomes and takes the published ones out of the outbox.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from seat_inventory.logic.change_reservations import settle_transitions
from seat_inventory.logic.hints import InventoryHints
from seat_inventory.logic.ports import Clock, HoldStore, OutcomePublisher
from seat_inventory.models import (
    Outcome,
    RequestType,
    ReservationOutcome,
    ReservationRecord,
    SeatKey,
    Transition,
    iso_utc,
)
from seat_inventory.settings import DEFAULT_REJECTION_RECORD_TTL_DAYS, SECONDS_PER_DAY


@dataclass(slots=True)
class SweepResult:
    """What one sweeper run did.

    `released` are the EXPIRED outcomes of holds this run released (published or not);
    `republished` counts outbox entries of earlier runs published now; `unpublished` counts
    outcomes SNS did not take (they stay in the outbox for the next run); `skipped` counts holds
    found due that were confirmed, cancelled or released by someone else first; `failed_groups`
    names seat classes whose release hit a transient fault (retried by the next run).
    """

    released: list[ReservationOutcome] = field(default_factory=list)
    seats_released: int = 0
    republished: int = 0
    unpublished: int = 0
    skipped: int = 0
    failed_groups: list[str] = field(default_factory=list)


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

    Transient faults of one seat class leave its holds for the next run (`failed_groups`);
    errors the service cannot classify propagate, so the scheduled invocation fails visibly.
    """
    hints = hints if hints is not None else InventoryHints()
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
    groups: dict[SeatKey, list[Transition]] = {}
    for record in due:
        if record.seat_key is not None:
            groups.setdefault(record.seat_key, []).append(Transition(record, Outcome.EXPIRED))

    released: list[ReservationRecord] = []
    for key, transitions in groups.items():
        settled = settle_transitions(
            key,
            transitions,
            now=now,
            store=store,
            clock=clock,
            hints=hints,
            release_ttl_seconds=rejection_ttl_seconds,
        )
        result.skipped += len(settled.superseded)
        if settled.error is not None:
            result.failed_groups.append(f"{key.event_id} {key.seat_class}: {settled.error}")
        for transition in settled.committed:
            released.append(transition.record)
            result.seats_released += transition.record.quantity

    result.released = [expiry_outcome(r) for r in released]
    result.unpublished += _publish_and_clear(
        released, store=store, publisher=publisher, expires_at=record_ttl
    )
    return result
