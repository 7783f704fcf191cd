"""Answers one SQS batch of reservation messages.

The rules (README "Guarantees"):
- seats are taken only by one conditional transaction per (event, seat class) group, which also
  writes one record per reservation id; a record that already exists means the request was
  answered before, and its stored answer is published again;
- when a group does not fit in what is left, it is filled greedily in arrival order and the rest
  is answered SOLD_OUT, in the same transaction;
- an outcome is published only after its transaction committed; a message whose write or
  publication hit a transient fault is returned for retry, and its retry re-publishes the
  stored answer without taking seats again.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from seat_inventory.logic.ports import Clock, InventoryStore, OutcomePublisher
from seat_inventory.models import (
    BatchResult,
    InvalidMessage,
    Outcome,
    ReservationOutcome,
    ReservationRequest,
    RetryableError,
    SeatKey,
    TransactionConflict,
)
from seat_inventory.parsing import parse_reservation
from seat_inventory.settings import Settings

# DynamoDB allows 100 actions per transaction: one inventory update plus 99 reservation records.
MAX_RESERVATIONS_PER_TRANSACTION = 99
# Each refused round teaches the planner something (a recorded duplicate, the seats left, a
# missing event); under heavy contention the seats left can change between rounds, so bound it.
MAX_SETTLE_ROUNDS = 8
# Transaction conflicts with a concurrent batch on the same hot item are retried in place, with
# jittered back-off, before the messages are handed back to the queue.
MAX_CONFLICT_RETRIES = 5
CONFLICT_BACKOFF_SECONDS = 0.02


class InventoryHints:
    """What this container last learned about each seat class: seats left, or no such item.

    Only a hint: it decides whether a group starts with a strongly consistent read (when the
    class looked too small for the group, or missing) instead of an optimistic write. After a
    sell-out, rejections are then answered from that read and the transaction writes only
    their records, never the hot inventory item. Correctness never rests on it: every seat is
    still taken through the guarded transaction.
    """

    _MISSING = -1

    def __init__(self) -> None:
        self._seats_left: dict[SeatKey, int] = {}

    def should_read_first(self, key: SeatKey, seats_wanted: int) -> bool:
        known = self._seats_left.get(key)
        return known is not None and known < seats_wanted

    def learn(self, key: SeatKey, seats_left: int | None) -> None:
        """Records an observation: seats left, or None for no inventory item."""
        self._seats_left[key] = self._MISSING if seats_left is None else seats_left


@dataclass(frozen=True, slots=True)
class QueueMessage:
    """The two parts of an SQS record the service reads."""

    message_id: str
    body: str


def _chunks(items: Sequence[ReservationRequest], size: int) -> Iterator[Sequence[ReservationRequest]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _answer(
    request: ReservationRequest, outcome: Outcome, reason: str, remaining: int | None
) -> ReservationOutcome:
    return ReservationOutcome(
        reservation_id=request.reservation_id,
        outcome=outcome,
        reason=reason,
        event_id=request.event_id,
        seat_class=request.seat_class,
        quantity=request.quantity,
        customer_id=request.customer_id,
        remaining=remaining,
        message_id=request.message_id,
    )


def _invalid_answer(message: InvalidMessage) -> ReservationOutcome:
    return ReservationOutcome(
        # The SQS message id stands in when the body has no usable reservation id.
        reservation_id=message.reservation_id or message.message_id,
        outcome=Outcome.INVALID,
        reason=message.reason,
        event_id=message.event_id,
        seat_class=message.seat_class,
        quantity=message.quantity,
        customer_id=message.customer_id,
        message_id=message.message_id,
    )


def plan_group(
    key: SeatKey,
    pending: Sequence[ReservationRequest],
    *,
    seats_left: int | None,
    event_missing: bool,
) -> tuple[list[ReservationOutcome], int]:
    """Decides an answer for each pending request of one group; returns them and the seats taken.

    With nothing known yet (`seats_left` None) every request is planned CONFIRMED: the
    transaction's guard decides. Once the guard has reported how many seats are left, the group
    is filled greedily in arrival order and the rest is SOLD_OUT.
    """
    if event_missing:
        reason = f"event {key.event_id!r} has no seat class {key.seat_class!r}"
        return [_answer(r, Outcome.UNKNOWN_EVENT, reason, None) for r in pending], 0
    if seats_left is None:
        seats = sum(r.quantity for r in pending)
        return [
            _answer(r, Outcome.CONFIRMED, f"{r.quantity} seat(s) confirmed", None) for r in pending
        ], seats
    left = seats_left
    taken: list[ReservationRequest] = []
    refused: list[ReservationRequest] = []
    for request in pending:
        if request.quantity <= left:
            taken.append(request)
            left -= request.quantity
        else:
            refused.append(request)
    outcomes = [_answer(r, Outcome.CONFIRMED, f"{r.quantity} seat(s) confirmed", left) for r in taken]
    outcomes += [
        _answer(r, Outcome.SOLD_OUT, f"requested {r.quantity} seat(s), {left} left", left) for r in refused
    ]
    return outcomes, seats_left - left


def settle_group(
    key: SeatKey,
    requests: Sequence[ReservationRequest],
    *,
    store: InventoryStore,
    clock: Clock,
    rejection_ttl_seconds: int,
    hints: InventoryHints,
) -> dict[str, ReservationOutcome]:
    """Commits the answers of one group (at most one transaction's worth of requests).

    Returns the answer for every reservation id of the group. Raises `RetryableError` when a
    transient fault or persistent contention prevented a commit; nothing was written then.
    """
    by_id = {r.reservation_id: r for r in requests}
    pending = list(requests)
    answers: dict[str, ReservationOutcome] = {}
    seats_left: int | None = None
    event_missing = False
    if hints.should_read_first(key, sum(r.quantity for r in requests)):
        inventory = store.read_inventory(key)
        event_missing = inventory is None
        seats_left = None if inventory is None else inventory.available
        hints.learn(key, seats_left)
    conflicts = 0
    rounds = 0
    while pending:
        if rounds >= MAX_SETTLE_ROUNDS:
            raise RetryableError(f"{key} did not settle after {MAX_SETTLE_ROUNDS} rounds")
        rounds += 1
        outcomes, seats = plan_group(key, pending, seats_left=seats_left, event_missing=event_missing)
        try:
            refused = store.commit_outcomes(
                key,
                outcomes,
                seats_taken=seats,
                rejection_expires_at=int(clock.now()) + rejection_ttl_seconds,
            )
        except TransactionConflict:
            conflicts += 1
            if conflicts > MAX_CONFLICT_RETRIES:
                raise
            rounds -= 1  # a conflict teaches nothing; it is bounded by MAX_CONFLICT_RETRIES instead
            clock.sleep(random.uniform(0, CONFLICT_BACKOFF_SECONDS * 2**conflicts))
            continue
        if refused is None:
            answers.update((o.reservation_id, o) for o in outcomes)
            if seats_left is not None:
                hints.learn(key, seats_left - seats)
            return answers
        for reservation_id, stored in refused.already_recorded.items():
            request = by_id[reservation_id]
            answers[reservation_id] = stored.as_duplicate(request.message_id)
        pending = [r for r in pending if r.reservation_id not in refused.already_recorded]
        if refused.inventory_refused:
            if refused.inventory is None:
                event_missing = True
            else:
                seats_left = refused.inventory.available
            hints.learn(key, seats_left)
        elif not refused.already_recorded:
            raise RetryableError(f"transaction for {key} refused without a reason the planner knows")
    return answers


def reserve_seats(
    messages: Sequence[QueueMessage],
    *,
    store: InventoryStore,
    publisher: OutcomePublisher,
    settings: Settings,
    clock: Clock,
    hints: InventoryHints | None = None,
) -> BatchResult:
    """Answers every message of one SQS batch; returns what was published and what to retry.

    `hints` lives as long as the container, so that what one batch learns about a sold-out
    class spares the next batches a doomed write (see `InventoryHints`).
    """
    hints = hints if hints is not None else InventoryHints()
    result = BatchResult()
    failed: set[str] = set()
    answers: dict[str, ReservationOutcome] = {}  # message id -> answer
    first_request: dict[str, ReservationRequest] = {}  # reservation id -> first message carrying it
    repeats: list[ReservationRequest] = []
    groups: dict[SeatKey, list[ReservationRequest]] = {}

    for message in messages:
        parsed = parse_reservation(
            message.message_id,
            message.body,
            default_seat_class=settings.default_seat_class,
            max_quantity=settings.max_seats_per_reservation,
        )
        if isinstance(parsed, InvalidMessage):
            answers[message.message_id] = _invalid_answer(parsed)
        elif parsed.reservation_id in first_request:
            repeats.append(parsed)
        else:
            first_request[parsed.reservation_id] = parsed
            groups.setdefault(parsed.seat_key, []).append(parsed)

    group_answers: dict[str, ReservationOutcome] = {}
    for key, requests in groups.items():
        for chunk in _chunks(requests, MAX_RESERVATIONS_PER_TRANSACTION):
            try:
                group_answers.update(
                    settle_group(
                        key,
                        chunk,
                        store=store,
                        clock=clock,
                        rejection_ttl_seconds=settings.rejection_record_ttl_seconds,
                        hints=hints,
                    )
                )
            except RetryableError:
                failed.update(r.message_id for r in chunk)

    for request in first_request.values():
        if request.reservation_id in group_answers:
            answers[request.message_id] = group_answers[request.reservation_id]
    for repeat in repeats:
        original = group_answers.get(repeat.reservation_id)
        if original is None:
            failed.add(repeat.message_id)
        else:
            answers[repeat.message_id] = original.as_duplicate(repeat.message_id)

    ordered = [answers[m.message_id] for m in messages if m.message_id in answers]
    not_published = {o.message_id for o in publisher.publish(ordered)}
    for outcome in ordered:
        if outcome.message_id in not_published:
            failed.add(outcome.message_id or "")
        else:
            result.published.append(outcome)
            if outcome.outcome is Outcome.CONFIRMED and not outcome.duplicate:
                result.seats_confirmed += outcome.quantity or 0
    result.failed_message_ids = [m.message_id for m in messages if m.message_id in failed]
    return result
