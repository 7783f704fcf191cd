"""Ticket numbers (docs/guides/tickets.md): series, their format, the issuer's batches."""

from __future__ import annotations

import zlib
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class TicketSeries:
    """One gapless sequence of ticket numbers: series `series` of event `event_id`."""

    event_id: str
    series: int


MAX_TICKET_SERIES = 128
# Issuer lanes: a power of two, so each lane's sales are whole buckets of the index (512 of them).
MAX_ISSUER_LANES = 64


@dataclass(frozen=True, slots=True)
class IssuerLane:
    """One of `count` issuer runs numbering at once (docs/guides/tickets.md, "Lanes"): lane `index`
    takes the sales whose reservation id's CRC-32 is `index` modulo `count` (its share of the
    index's buckets) and publishes the batches of the series that are `index` modulo `count`. With
    as many series as lanes or a multiple of it, a series is numbered by one lane only."""

    index: int = 0
    count: int = 1

    def __post_init__(self) -> None:
        if self.count not in ISSUER_LANE_COUNTS:
            raise ValueError(
                f"issuer lanes must be a power of two from 1 to {MAX_ISSUER_LANES}, not {self.count}"
            )
        if not 0 <= self.index < self.count:
            raise ValueError(f"an issuer lane is 0 to {self.count - 1}, not {self.index}")

    @classmethod
    def of_sale(cls, reservation_id: str, count: int) -> IssuerLane:
        """The lane of `count` whose buckets hold the sale."""
        return cls(zlib.crc32(reservation_id.encode()) % count, count)

    def takes_sale(self, reservation_id: str) -> bool:
        return zlib.crc32(reservation_id.encode()) % self.count == self.index

    def takes_bucket(self, bucket: int) -> bool:
        """The index bucket (the sale's CRC-32 modulo a multiple of `count`) holds this lane's sales."""
        return bucket % self.count == self.index

    def takes_series(self, series: int) -> bool:
        return series % self.count == self.index


ISSUER_LANE_COUNTS = tuple(2**i for i in range(MAX_ISSUER_LANES.bit_length()))
WHOLE_INDEX = IssuerLane()
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
