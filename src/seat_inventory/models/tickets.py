"""Ticket numbers (docs/guides/tickets.md): series, their format, the issuer's batches."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class TicketSeries:
    """One gapless sequence of ticket numbers: series `series` of event `event_id`."""

    event_id: str
    series: int


MAX_TICKET_SERIES = 128
MAX_TICKET_WIDTH = 12
MAX_TICKET_PREFIX = 16


@dataclass(frozen=True, slots=True)
class TicketFormat:
    """How an event numbers its tickets (docs/guides/tickets.md): `series` gapless sequences (a sale's is
    `crc32(reservation_id) % series`), printed `prefix`, the series and a dash when several, then
    the serial padded to `width` digits."""

    series: int = 1
    prefix: str = ""
    width: int = 0

    def label(self, series: int, serial: int) -> str:
        tag = f"{series}-" if self.series > 1 else ""
        return f"{self.prefix}{tag}{serial:0{self.width}d}"


@dataclass(frozen=True, slots=True)
class UnnumberedSale:
    """A sold reservation waiting for its ticket numbers, as the issuer's index shows it
    (eventually consistent: it may have been numbered meanwhile)."""

    reservation_id: str
    event_id: str
    quantity: int
    sold_at_ms: int


@dataclass(frozen=True, slots=True)
class TicketAssignment:
    """Reservation `reservation_id` gets serials `first` .. `first + quantity - 1`."""

    reservation_id: str
    first: int
    quantity: int

    @property
    def numbers(self) -> range:
        return range(self.first, self.first + self.quantity)


@dataclass(frozen=True, slots=True)
class TicketBatch:
    """Serials `first` .. `next_after - 1` of `series`, given in one transaction, only if the counter
    still says `first` and every reservation still waits; kept as the series' ledger entry."""

    series: TicketSeries
    first: int
    assignments: tuple[TicketAssignment, ...]

    @property
    def next_after(self) -> int:
        return self.first + sum(a.quantity for a in self.assignments)


@dataclass(frozen=True, slots=True)
class NumbersRefused:
    """A numbering refused: the counter as it was when its guard failed (None: it held), and the
    reservations that no longer wait for numbers (leave them out)."""

    counter_next: int | None
    not_waiting: frozenset[str] = frozenset()
