"""Domain types of the gate (docs/guides/checkin.md): ticket secrets, holders, check-in lists and scans,
offline conflicts and transfers.

Nothing here knows about boto3; the gate's data access (`dal/checkins.py`, `dal/transfers.py`)
translates these to and from items.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from seat_inventory.models import Outcome, ReservationRecord, SeatKey

# Ids a scanner or a caller chooses: a nonce, a gate, a check-in list, a transfer id, a customer.
GATE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@-]{0,63}")
TRANSFER_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}")
CUSTOMER_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}")


class GateResult(StrEnum):
    """The answer to a scan, an offline upload's scan or a transfer (docs/guides/checkin.md)."""

    ADMITTED = "ADMITTED"
    EXITED = "EXITED"
    ALREADY_CHECKED_IN = "ALREADY_CHECKED_IN"
    NOT_CHECKED_IN = "NOT_CHECKED_IN"
    # An offline scan uploaded: recorded, recorded as one of a conflict, or uploaded before.
    ACCEPTED = "ACCEPTED"
    CONFLICT = "CONFLICT"
    DUPLICATE = "DUPLICATE"
    TRANSFERRED = "TRANSFERRED"
    # Refusals, each with a one-line reason.
    INVALID = "INVALID"
    FORGED = "FORGED"
    WRONG_EVENT = "WRONG_EVENT"
    REVOKED = "REVOKED"
    CANCELLED = "CANCELLED"
    UNKNOWN_TICKET = "UNKNOWN_TICKET"
    UNKNOWN_LIST = "UNKNOWN_LIST"
    NOT_HOLDER = "NOT_HOLDER"
    LIMIT_EXCEEDED = "LIMIT_EXCEEDED"


class Direction(StrEnum):
    """A scan lets someone in, or (on a list that allows re-entry) out."""

    IN = "in"
    OUT = "out"


@dataclass(frozen=True, slots=True)
class TicketRef:
    """One ticket: serial `serial` of series `series` of event `event_id` (docs/guides/tickets.md)."""

    event_id: str
    series: int
    serial: int


@dataclass(frozen=True, slots=True)
class TicketClaim:
    """What a verified secret says: the ticket, its seat, and the holder generation it was issued
    for (a transfer revokes every generation below the new one)."""

    ticket: TicketRef
    seat_class: str
    seat: str | None
    generation: int
    key_id: str


@dataclass(frozen=True, slots=True)
class SecretRefusal:
    """Why a secret admits no one: INVALID (malformed), FORGED or WRONG_EVENT, in one line."""

    result: GateResult
    reason: str


@dataclass(frozen=True, slots=True)
class TicketHolder:
    """Who holds a ticket now: generation 0 is the buyer, with no transfer; each transfer to
    another customer (or back) makes the next generation. `counted` says the ticket is on the
    holder's per-customer counter of its class; `revoked_at` is when each earlier generation's
    secret was revoked (epoch ms)."""

    customer_id: str | None
    generation: int = 0
    counted: bool = False
    transfer_id: str | None = None
    at_ms: int | None = None
    revoked_at: Mapping[int, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class TicketSeat:
    """A ticket's place in its reservation: its class, its seat (a mapped class's) and whether the
    buyer's per-customer counter of that class counts it."""

    seat_class: str
    seat: str | None
    buyer_counted: bool


def ticket_seat(record: ReservationRecord, index: int) -> TicketSeat:
    """The `index`-th ticket of a reservation (0 for its first serial): its class and seat. An
    order's tickets follow its lines in order, each line's seats in order (docs/guides/checkin.md)."""
    if not 0 <= index < record.quantity:
        raise ValueError(f"{record.reservation_id} has {record.quantity} ticket(s), not a {index + 1}th")
    for line in record.takes():
        if index < line.quantity:
            seat = line.seats[index] if line.seats else None
            return TicketSeat(line.key.seat_class, seat, line.customer_counted)
        index -= line.quantity
    raise ValueError(f"{record.reservation_id}'s lines hold fewer seats than its quantity")


@dataclass(frozen=True, slots=True)
class HeldTicket:
    """A ticket as the store reads it: its reservation record (strongly consistent) and holder."""

    ticket: TicketRef
    record: ReservationRecord
    seat: TicketSeat
    holder: TicketHolder

    @property
    def reservation_id(self) -> str:
        return self.record.reservation_id

    @property
    def buyer(self) -> str | None:
        return self.record.answer.customer_id

    @property
    def live(self) -> bool:
        return self.record.status is Outcome.CONFIRMED

    @property
    def passed_on(self) -> bool:
        return self.holder.customer_id != self.buyer

    @property
    def seat_key(self) -> SeatKey:
        return SeatKey(self.ticket.event_id, self.seat.seat_class)


@dataclass(frozen=True, slots=True)
class CheckinList:
    """A check-in list of an event: scans on it admit a ticket once, or again after an exit scan
    when it allows re-entry."""

    event_id: str
    name: str
    allow_reentry: bool = False


@dataclass(frozen=True, slots=True)
class Scan:
    """One scan: who chose it (`nonce`, unique per scan), where (`gate`), when (epoch ms; an
    offline scan's is the scanner's clock) and which way."""

    nonce: str
    gate: str
    at_ms: int
    direction: Direction = Direction.IN
    offline: bool = False


@dataclass(frozen=True, slots=True)
class ScanRecord:
    """A scan as the ticket's check-in item keeps it: the answer it got (replayed to the same
    nonce), the generation of the secret scanned, whether it let someone in or out (`moved`),
    the entry an ALREADY_CHECKED_IN names, and for an offline scan the conflicts it is in."""

    scan: Scan
    result: GateResult
    reason: str
    generation: int
    moved: bool
    first: Scan | None = None


@dataclass(frozen=True, slots=True)
class Conflict:
    """A ticket let in twice while offline (`second` came in while `first` had not gone out, or
    on a list without re-entry at all), or let in with a secret revoked before the scan (`second`
    None, `reason` says what revoked it)."""

    ticket: TicketRef
    list_name: str
    first: Scan
    second: Scan | None
    reason: str

    @property
    def key(self) -> tuple[str, str]:
        return self.first.nonce, self.second.nonce if self.second else ""


@dataclass(frozen=True, slots=True)
class CheckinState:
    """A ticket's check-in item on one list: where it is (`inside`), its first and last entry,
    every scan by nonce, the conflicts found, and the version each write moves on."""

    inside: bool = False
    entered: Scan | None = None
    last_in: Scan | None = None
    scans: Mapping[str, ScanRecord] = field(default_factory=dict)
    conflicts: tuple[Conflict, ...] = ()
    version: int = 0


@dataclass(frozen=True, slots=True)
class ScanAnswer:
    """What a scanner is told: the result, a one-line reason, the ticket's label and seat when
    the secret named them, the entry an ALREADY_CHECKED_IN names, the conflicts an offline scan
    is in, and whether this is the answer given to the same nonce before (`replay`)."""

    result: GateResult
    reason: str
    nonce: str | None = None
    ticket: str | None = None
    seat_class: str | None = None
    seat: str | None = None
    first: Scan | None = None
    conflicts: tuple[Conflict, ...] = ()
    replay: bool = False

    @property
    def admits(self) -> bool:
        return self.result is GateResult.ADMITTED


@dataclass(frozen=True, slots=True)
class TransferRecord:
    """A transfer as kept (`TRANSFER#<id>`): the ticket, from whom to whom, and the generation
    it made; `previous` is the transfer that made the generation before (None: the buyer's)."""

    transfer_id: str
    ticket: TicketRef
    reservation_id: str
    from_customer: str | None
    to_customer: str
    generation: int
    at_ms: int
    previous: str | None = None


@dataclass(frozen=True, slots=True)
class TransferWrite:
    """One transfer to commit atomically: the ticket's holder moves from `before` to `after` on
    its reservation record (guarded on `before`'s generation and the record being CONFIRMED),
    `passed_on_delta` moves the record's count of tickets others hold, the giver's counter goes
    down by one when `before.counted`, the receiver's up by one when `after.counted` (guarded by
    `limit`, checked on `limit_item`'s item as the reader saw it), and the transfer is kept."""

    held: HeldTicket
    before: TicketHolder
    after: TicketHolder
    passed_on_delta: int
    limit: int | None
    record: TransferRecord


@dataclass(frozen=True, slots=True)
class TransferRefused:
    """A transfer a condition cancelled (nothing written): the record moved on (`record_changed`),
    the receiver is at the class's limit, the limit changed, or the transfer id is taken
    (`existing`, the transfer kept under it)."""

    record_changed: bool = False
    limit_reached: bool = False
    limit_changed: bool = False
    existing: TransferRecord | None = None


@dataclass(frozen=True, slots=True)
class TransferAnswer:
    """What the caller of a transfer is told: TRANSFERRED with the receiver's new secret, or a
    refusal; `duplicate` when the transfer id was committed before (the same answer again)."""

    result: GateResult
    reason: str
    transfer_id: str | None = None
    ticket: str | None = None
    secret: str | None = None
    generation: int | None = None
    duplicate: bool = False
