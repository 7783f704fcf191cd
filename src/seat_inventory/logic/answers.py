"""Every answer the service gives, built here and nowhere else: the seats taken (a request's, or
an order's lines), a judgement of the rule book (`logic.rules`) with its reason, an invalid
message, a confirm's or cancel's answer, a hold's expiry and a sale's ticket numbers.

tests/unit/test_code_shape.py fails when an outcome is constructed anywhere else in the service.
"""

from __future__ import annotations

from dataclasses import replace

from seat_inventory.logic.rules import Judgement
from seat_inventory.models import (
    ChangeRequest,
    InvalidMessage,
    OrderLine,
    Outcome,
    Place,
    RequestType,
    ReservationOutcome,
    ReservationRecord,
    ReservationRequest,
    SeatKey,
    TicketBatch,
    TicketFormat,
    iso_utc,
)


def _answer(
    request: ReservationRequest,
    outcome: Outcome,
    reason: str,
    *,
    remaining: int | None = None,
    hold_expires_at: int | None = None,
    seats: tuple[str, ...] | None = None,
) -> ReservationOutcome:
    return ReservationOutcome(
        reservation_id=request.reservation_id,
        outcome=outcome,
        reason=reason,
        event_id=request.event_id,
        seat_class=request.seat_class if request.lines is None else None,
        quantity=request.quantity,
        customer_id=request.customer_id,
        remaining=remaining,
        message_id=request.message_id,
        request_type=request.request_type,
        hold_expires_at=hold_expires_at,
        seats=seats,
        lines=request.lines,
    )


def taken(
    request: ReservationRequest,
    now: int,
    *,
    remaining: int | None = None,
    seats: tuple[str, ...] | None = None,
    lines: tuple[OrderLine, ...] | None = None,
) -> ReservationOutcome:
    """CONFIRMED (a reserve) or HELD until `now` + its hold (a hold), with the seats a mapped class
    gave, or, for an order, with its lines as taken (where their seats came from)."""
    if lines is not None:
        request = replace(request, lines=lines)
        what = f"{sum(line.quantity for line in lines)} seat(s) in {len(lines)} line(s)"
    else:
        what = f"{request.quantity} seat(s)"
    names = f": {', '.join(seats)}" if seats is not None else ""
    if not request.is_hold:
        return _answer(
            request, Outcome.CONFIRMED, f"{what} confirmed{names}", remaining=remaining, seats=seats
        )
    expires_at = now + (request.hold_seconds or 0)
    reason = f"{what} held until {iso_utc(expires_at)}{names}"
    return _answer(
        request, Outcome.HELD, reason, remaining=remaining, hold_expires_at=expires_at, seats=seats
    )


def refused(
    request: ReservationRequest, judgement: Judgement, *, remaining: int | None = None
) -> ReservationOutcome:
    """The refusal the judgement names, its reason rendered; `remaining` is the seats left (by
    default a SOLD_OUT's)."""
    assert judgement.outcome is not None
    if remaining is None and judgement.outcome is Outcome.SOLD_OUT:
        remaining = judgement.left
    reason = _reason(judgement, request.seat_key, request.customer_id)
    return _answer(request, judgement.outcome, reason, remaining=remaining, seats=judgement.seats)


def line_refused(request: ReservationRequest, index: int, judgement: Judgement) -> ReservationOutcome:
    """An order refused for its line `index`: the line's refusal, its reason prefixed with the
    line (`line 2 (CHILD): requested 3 seat(s), 1 left`)."""
    assert judgement.outcome is not None and request.lines is not None
    line = request.lines[index]
    key = SeatKey(request.event_id, line.seat_class)
    if judgement.outcome is Outcome.UNKNOWN_EVENT:
        reason = f"no inventory for {key.event_id} {key.seat_class}"
    else:
        reason = _reason(judgement, key, request.customer_id)
    remaining = judgement.left if judgement.outcome is Outcome.SOLD_OUT else None
    answer = _answer(
        request,
        judgement.outcome,
        f"line {index + 1} ({line.seat_class}): {reason}",
        remaining=remaining,
        seats=judgement.seats,
    )
    return replace(answer, seat_class=line.seat_class)


def _reason(judgement: Judgement, key: SeatKey, customer_id: str) -> str:
    outcome = judgement.outcome
    if outcome is Outcome.UNKNOWN_EVENT:
        return f"event {key.event_id!r} has no seat class {key.seat_class!r}"
    if outcome is Outcome.LIMIT_EXCEEDED:
        counted = f"{judgement.counted} already taken, " if judgement.counted is not None else ""
        return (
            f"customer {customer_id!r} may take at most {judgement.limit} seat(s) of"
            f" {key.event_id} {key.seat_class}; {counted}{judgement.quantity} requested"
        )
    if outcome is Outcome.SOLD_OUT and judgement.placement:
        together = "" if judgement.split else " together"
        return f"requested {judgement.quantity} seat(s){together}; no placement fits ({judgement.left} left)"
    if outcome is Outcome.SOLD_OUT:
        where = f" in pool {judgement.pool}" if judgement.pool is not None else ""
        return f"requested {judgement.quantity} seat(s), {judgement.left} left{where}"
    return judgement.reason


def invalid(message: InvalidMessage) -> ReservationOutcome:
    """INVALID: the message cannot be processed (never recorded); as much of the request as could
    be read, the SQS message id standing in for a reservation id it lacks."""
    m = message
    rid = m.reservation_id or m.message_id
    return ReservationOutcome(
        rid,
        Outcome.INVALID,
        m.reason,
        m.event_id,
        m.seat_class,
        m.quantity,
        m.customer_id,
        message_id=m.message_id,
        request_type=m.request_type,
    )


def change(
    request: ChangeRequest,
    record: ReservationRecord,
    outcome: Outcome,
    reason: str,
    *,
    duplicate: bool = False,
) -> ReservationOutcome:
    """A confirm's or cancel's answer about a recorded reservation: where it stands now."""
    a = record.answer
    return ReservationOutcome(
        a.reservation_id,
        outcome,
        reason,
        a.event_id,
        a.seat_class,
        a.quantity,
        a.customer_id,
        duplicate=duplicate,
        message_id=request.message_id,
        request_type=request.request_type,
        hold_expires_at=record.hold_expires_at,
        seats=a.seats,
        lines=a.lines,
    )


def change_without_record(request: ChangeRequest, outcome: Outcome, why: str) -> ReservationOutcome:
    """A refusal that tells nothing of the reservation: none is recorded, or it is not the caller's."""
    reason = f"{why}; nothing to {request.request_type.value}"
    return ReservationOutcome(
        request.reservation_id,
        outcome,
        reason,
        None,
        None,
        None,
        request.customer_id,
        message_id=request.message_id,
        request_type=request.request_type,
    )


def expired(record: ReservationRecord) -> ReservationOutcome:
    """The EXPIRED outcome published for a released hold (no message asked for it)."""
    a = record.answer
    expired_at = iso_utc(record.hold_expires_at) if record.hold_expires_at is not None else "its expiry"
    reason = f"the hold expired at {expired_at}; {record.quantity} seat(s) released"
    return ReservationOutcome(
        a.reservation_id,
        Outcome.EXPIRED,
        reason,
        a.event_id,
        a.seat_class,
        a.quantity,
        a.customer_id,
        request_type=RequestType.EXPIRE,
        hold_expires_at=record.hold_expires_at,
        seats=a.seats,
        lines=a.lines,
    )


def ticketed(batch: TicketBatch, fmt: TicketFormat) -> list[ReservationOutcome]:
    """The TICKETED outcomes of a batch (one per reservation, its numbers formatted)."""
    series = batch.series
    return [
        ReservationOutcome(
            a.reservation_id,
            Outcome.TICKETED,
            f"{a.quantity} ticket(s) numbered in series {series.series}",
            series.event_id,
            None,
            a.quantity,
            None,
            request_type=RequestType.TICKET,
            tickets=tuple(fmt.label(series.series, n) for n in a.numbers),
        )
        for a in batch.assignments
    ]


# ---------------------------------------------------------------------------- the waiting list


def waitlisted(refusal: ReservationOutcome, position: int) -> ReservationOutcome:
    """WAITLISTED: a request refused for lack of seats joined its class's waiting list at
    `position` (1: the head), the refusal's reason kept before it."""
    reason = f"{refusal.reason}; on the waiting list at position {position}"
    return replace(refusal, outcome=Outcome.WAITLISTED, reason=reason, position=position, remaining=None)


def not_waitlisted(refusal: ReservationOutcome, why: str) -> ReservationOutcome:
    """The refusal of a request that asked to join the waiting list and could not, saying why."""
    return replace(refusal, reason=f"{refusal.reason}; not on the waiting list: {why}")


def offered(place: Place, expires_at: int, seats: tuple[str, ...] = ()) -> ReservationOutcome:
    """OFFERED: seats freed for the waiting list held for the entry's customer until `expires_at`
    (a mapped class: the `seats` named; no message asked for it; a `confirm` of the reservation
    takes them)."""
    key = place.key
    return ReservationOutcome(
        place.reservation_id,
        Outcome.OFFERED,
        f"{place.quantity} seat(s) offered from the waiting list, held until {iso_utc(expires_at)};"
        " confirm the reservation to take them",
        key.event_id,
        key.seat_class,
        place.quantity,
        place.customer_id,
        request_type=RequestType.OFFER,
        hold_expires_at=expires_at,
        seats=seats or None,
    )


def left(request: ChangeRequest, record: ReservationRecord) -> ReservationOutcome:
    """LEFT: the reservation's entry is off the waiting list (it will not be offered seats)."""
    return change(request, record, Outcome.LEFT, "left the waiting list")


def not_waiting(request: ChangeRequest, record: ReservationRecord) -> ReservationOutcome:
    """A leave of a reservation not on the waiting list: where it stands (LEFT again: a duplicate)."""
    status = record.status
    if status is Outcome.LEFT:
        return change(request, record, Outcome.LEFT, "already left the waiting list", duplicate=True)
    if status is Outcome.HELD and record.answer.outcome is Outcome.OFFERED:
        why = "its entry was offered seats, held for it; cancel the reservation to give them back"
    else:
        why = f"the reservation was answered {status.value}, it is not on the waiting list"
    return change(request, record, status, f"{why}; nothing to leave")


def offer_announced(record: ReservationRecord) -> ReservationOutcome:
    """The answer published for a record in the offers' outbox, as the record keeps it: OFFERED, or
    LIMIT_EXCEEDED for an entry an offer would have taken past its customer's limit."""
    return replace(record.answer, message_id=None, duplicate=False)


def offer_over_limit(place: Place, limit: int, counted: int | None) -> ReservationOutcome:
    """LIMIT_EXCEEDED for a waiting entry whose offer would take its customer past the class's
    limit (it bought seats of the class meanwhile): off the list, offered nothing."""
    key = place.key
    has = f"{counted} already taken, " if counted is not None else ""
    return ReservationOutcome(
        place.reservation_id,
        Outcome.LIMIT_EXCEEDED,
        f"customer {place.customer_id!r} may take at most {limit} seat(s) of {key.event_id} {key.seat_class};"
        f" {has}{place.quantity} offered from the waiting list; off the list",
        key.event_id,
        key.seat_class,
        place.quantity,
        place.customer_id,
        request_type=RequestType.OFFER,
    )
