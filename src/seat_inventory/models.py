"""Domain types shared by the layers: requests, outcomes and inventory state.

Nothing here knows about boto3, SQS or SNS wire formats; the data-access module and the
publisher translate to and from these types.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum


class Outcome(StrEnum):
    """The final answer to one reservation message; published on SNS as the `outcome` attribute."""

    CONFIRMED = "CONFIRMED"
    SOLD_OUT = "SOLD_OUT"
    UNKNOWN_EVENT = "UNKNOWN_EVENT"
    INVALID = "INVALID"


@dataclass(frozen=True, slots=True)
class SeatKey:
    """Identifies one inventory item: the seats of one class for one event."""

    event_id: str
    seat_class: str


@dataclass(frozen=True, slots=True)
class ReservationRequest:
    """A well-formed reservation message, as taken off the queue."""

    message_id: str
    reservation_id: str
    event_id: str
    seat_class: str
    quantity: int
    customer_id: str

    @property
    def seat_key(self) -> SeatKey:
        return SeatKey(self.event_id, self.seat_class)


@dataclass(frozen=True, slots=True)
class InvalidMessage:
    """A message that cannot be processed; `reason` says exactly what is wrong with it.

    The fields that could be read from the body are kept (or None) so the INVALID outcome
    tells the producer as much as possible about which request it refers to.
    """

    message_id: str
    reason: str
    reservation_id: str | None = None
    event_id: str | None = None
    seat_class: str | None = None
    quantity: int | None = None
    customer_id: str | None = None


@dataclass(frozen=True, slots=True)
class ReservationOutcome:
    """The final answer for one reservation id, as stored and as published.

    `remaining` is the number of seats left in the class when the service knows it (it is
    always known for SOLD_OUT, which is decided from the inventory item itself).
    `duplicate` is True when this is a re-publication of an answer recorded earlier.
    """

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

    def as_duplicate(self, message_id: str) -> ReservationOutcome:
        """The same recorded answer, marked as a re-publication for a redelivered message."""
        return ReservationOutcome(
            reservation_id=self.reservation_id,
            outcome=self.outcome,
            reason=self.reason,
            event_id=self.event_id,
            seat_class=self.seat_class,
            quantity=self.quantity,
            customer_id=self.customer_id,
            remaining=self.remaining,
            duplicate=True,
            message_id=message_id,
        )


@dataclass(frozen=True, slots=True)
class SeatClassInventory:
    """The state of one inventory item."""

    event_id: str
    seat_class: str
    capacity: int
    available: int
    sold: int


@dataclass(slots=True)
class BatchResult:
    """What one SQS batch produced: the outcomes published and the messages to retry."""

    published: list[ReservationOutcome] = field(default_factory=list)
    failed_message_ids: list[str] = field(default_factory=list)
    seats_confirmed: int = 0


class RetryableError(Exception):
    """A transient fault (throttling, transaction conflict, service error): retry the messages."""


class TransactionConflict(RetryableError):
    """Another transaction was writing the same item; retrying shortly usually succeeds."""


class EventAlreadyExists(Exception):
    """`create_event` was asked to create a seat class that already exists."""
