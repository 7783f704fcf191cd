"""Outcomes: the final answer to each message, as recorded and published."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from enum import StrEnum

from seat_inventory.models.requests import OrderLine, RequestType


class Outcome(StrEnum):
    """The final answer to one message; published on SNS as the `outcome` attribute.

    The same values name a reservation record's `status` (docs/reference/contract.md,
    "Reservation lifecycle").
    """

    CONFIRMED = "CONFIRMED"
    SOLD_OUT = "SOLD_OUT"
    UNKNOWN_EVENT = "UNKNOWN_EVENT"
    INVALID = "INVALID"
    HELD = "HELD"
    EXPIRED = "EXPIRED"
    CANCELLED = "CANCELLED"
    LIMIT_EXCEEDED = "LIMIT_EXCEEDED"
    SALE_CLOSED = "SALE_CLOSED"
    UNKNOWN_RESERVATION = "UNKNOWN_RESERVATION"
    # No token that admits the request to a class that requires one (docs/guides/admission.md).
    ADMISSION_REFUSED = "ADMISSION_REFUSED"
    # A sale's ticket numbers, published by the issuer (never a record's status).
    TICKETED = "TICKETED"
    # Chosen seats not free, or stranding a single seat (docs/guides/seat-maps.md).
    SEATS_TAKEN = "SEATS_TAKEN"
    ORPHAN_SEAT = "ORPHAN_SEAT"
    # At the gate (docs/guides/checkin.md), never a record's status: a ticket passed on to another
    # customer (its old secret revoked, a new one issued), and a ticket admitted twice by
    # scanners that were offline (both scans named).
    TRANSFERRED = "TRANSFERRED"
    CHECKIN_CONFLICT = "CHECKIN_CONFLICT"
    # The waiting list (docs/guides/waiting-list.md): a request refused for lack of seats that
    # joined the list (its position in `position`), the list's offer of seats to it (a hold: its
    # record HELD), and its leaving the list.
    WAITLISTED = "WAITLISTED"
    OFFERED = "OFFERED"
    LEFT = "LEFT"


# Answers to a reserve or hold that took seats.
TAKES_SEATS = frozenset({Outcome.CONFIRMED, Outcome.HELD})


@dataclass(frozen=True, slots=True)
class ReservationOutcome:
    """The final answer to one message, as recorded (a reserve or hold) and published: `remaining` the
    seats left when known (always for SOLD_OUT), `duplicate` for an answer given before (or a change
    already made), `hold_expires_at` for a hold."""

    reservation_id: str
    outcome: Outcome
    reason: str
    event_id: str | None
    seat_class: str | None
    quantity: int | None
    customer_id: str | None
    remaining: int | None = None
    duplicate: bool = False
    message_id: str | None = None
    request_type: RequestType | None = RequestType.RESERVE
    hold_expires_at: int | None = None
    tickets: tuple[str, ...] | None = None  # a TICKETED outcome's ticket numbers, formatted
    # A mapped class's seat ids: taken, or not free (SEATS_TAKEN), or stranded (ORPHAN_SEAT).
    seats: tuple[str, ...] | None = None
    lines: tuple[OrderLine, ...] | None = None
    position: int | None = None  # WAITLISTED: the entry's place on the list (1: the head)

    def as_duplicate(self, message_id: str) -> ReservationOutcome:
        """The same recorded answer, marked as a re-publication for a redelivered message."""
        return dataclasses.replace(self, duplicate=True, message_id=message_id)


@dataclass(slots=True)
class BatchResult:
    """What one SQS batch produced: the outcomes published and the messages to retry."""

    published: list[ReservationOutcome] = field(default_factory=list)
    failed_message_ids: list[str] = field(default_factory=list)
    handed_back: dict[str, str] = field(default_factory=dict)  # failed message id -> why
    seats_confirmed: int = 0
    seats_held: int = 0
    seats_released: int = 0
