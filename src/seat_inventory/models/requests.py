"""Requests: what a well-formed (or malformed) queue message asks for."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from seat_inventory.models.views import SeatKey


class RequestType(StrEnum):
    """What an outcome answers: the message's `type`, or `expire` for the sweeper's release of a hold."""

    RESERVE = "reserve"
    HOLD = "hold"
    CONFIRM = "confirm"
    CANCEL = "cancel"
    EXPIRE = "expire"
    TICKET = "ticket"
    TRANSFER = "transfer"
    CHECKIN = "checkin"
    # The waiting list (docs/guides/waiting-list.md): leaving it (a message), and the list's offer.
    LEAVE = "leave"
    OFFER = "offer"


@dataclass(frozen=True, slots=True)
class AdmissionCheck:
    """What the edge found of a request's admission token.

    See `logic.admission_tokens` and docs/guides/admission.md.

    `token_id` and `expires_at` (epoch seconds) are the verified token's; `refusal` says why the
    token does not admit the request (missing, forged, expired, another event or customer), None
    when it does. Whether the class requires a token at all is the inventory's to say.
    """

    token_id: str | None = None
    expires_at: int | None = None
    refusal: str | None = "no admission_token in the message"

    @property
    def admits(self) -> bool:
        return self.refusal is None and self.token_id is not None


# An order (docs/guides/orders.md) has 1 to this many lines, all in one transaction.
MAX_ORDER_LINES = 4


@dataclass(frozen=True, slots=True)
class OrderLine:
    """One line of a multi-line order (docs/guides/orders.md): `quantity` seats of `seat_class`.

    As asked and as answered, only the class and the quantity; once recorded, where its seats
    came from as well, to give them back there: the shard item, the capacity pools, and whether
    they count against the customer's per-class limit (never published).
    """

    seat_class: str
    quantity: int
    shard: int = 0
    pools: tuple[str, ...] = ()
    customer_counted: bool = False
    # A mapped class's line: the chosen seats as asked, or once taken the seats it took.
    seats: tuple[str, ...] | None = None


@dataclass(frozen=True, slots=True)
class ReservationRequest:
    """A well-formed reserve or hold message, as taken off the queue.

    `hold_seconds` is set for a hold (`request_type` HOLD) and None for a reservation.
    """

    message_id: str
    reservation_id: str
    event_id: str
    seat_class: str
    quantity: int
    customer_id: str
    request_type: RequestType = RequestType.RESERVE
    hold_seconds: int | None = None
    # The `admission_token` as sent, and what its verification found (`logic.reserve_seats`).
    admission_token: str | None = None
    admission: AdmissionCheck | None = None
    # A mapped class: the chosen seats, or None for best available (`split`, `accessible`).
    seats: tuple[str, ...] | None = None
    split: bool = False
    accessible: bool = False
    # An order's lines (then `seat_class` is the first line's, `quantity` all lines' seats).
    lines: tuple[OrderLine, ...] | None = None
    # Refused for lack of seats, the request joins the class's waiting list if it has one open.
    waitlist: bool = False

    @property
    def seat_key(self) -> SeatKey:
        return SeatKey(self.event_id, self.seat_class)

    @property
    def is_hold(self) -> bool:
        return self.request_type is RequestType.HOLD


@dataclass(frozen=True, slots=True)
class ChangeRequest:
    """A well-formed confirm or cancel message: a status change of an existing reservation.

    `customer_id`, when the producer sent one, must match the reservation's customer.
    """

    message_id: str
    reservation_id: str
    request_type: RequestType
    customer_id: str | None = None


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
    request_type: RequestType | None = None
