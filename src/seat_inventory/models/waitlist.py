"""The waiting list (docs/guides/waiting-list.md): a seat class's list, its lanes, the entries'
places in join order, and what an offer round plans.

A class's list is spread over `WAITLIST_LANES` lanes so that no item is written by every join or
every offer: each lane is a partition of its own holding its entries' places (in join order) and
a lane item (how many entries wait there, the latest order key joined or fenced, and, for a
counted class, the list's seats held in that lane by where they are: `ledger_key`).
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from seat_inventory.models.outcomes import Outcome, ReservationOutcome
from seat_inventory.models.views import SeatKey

# Lanes of every class's list: joins of one batch go to one lane, and a round's offers are written
# lane by lane, each lane's in transactions of its own.
WAITLIST_LANES = 16
# How long an offer holds its seats unless the list says otherwise (`seats waitlist open`), and
# the bounds the operator may set.
DEFAULT_OFFER_SECONDS = 900
MIN_OFFER_SECONDS = 60
MAX_OFFER_SECONDS = 86_400

# A place's order key: `P#<join time, ms, 13 digits>#<index in its batch, 3 digits>#<reservation id>`;
# a fence is `P#<ms>` alone, so that it sorts before every key of that millisecond.
PLACE_PREFIX = "P#"


def order_key(ms: int, index: int, reservation_id: str) -> str:
    """The order key of the `index`-th entry of a join written at `ms` (epoch milliseconds)."""
    return f"{PLACE_PREFIX}{ms:013d}#{index:03d}#{reservation_id}"


def fence_key(ms: int) -> str:
    """The key a round fences the lanes at: every order key of `ms` or later sorts after it."""
    return f"{PLACE_PREFIX}{ms:013d}"


def key_ms(key: str) -> int:
    """The milliseconds of an order key or a fence (0 for the empty frontier of a new lane)."""
    digits = key[len(PLACE_PREFIX) : len(PLACE_PREFIX) + 13]
    return int(digits) if digits.isdigit() else 0


def ledger_key(shard: int, pools: Sequence[str] = ()) -> str:
    """Where some of a counted class's list seats are held: its shard item and the pool items
    (as a record names them, `models.pool_ref`), as a lane's ledger names them."""
    return f"s{shard}" + (f"|{','.join(sorted(pools))}" if pools else "")


def ledger_place(key: str) -> tuple[int, tuple[str, ...]]:
    """The shard item and pool items a ledger key names (`ledger_key` reversed)."""
    shard, _, pools = key.partition("|")
    return int(shard[1:]), tuple(pools.split(",")) if pools else ()


@dataclass(frozen=True, slots=True)
class Place:
    """An entry's place on its class's list: its lane and order key (join order), the reservation
    whose request joined, its customer and what it waits for (a mapped class: `split` and
    `accessible` as the request asked)."""

    key: SeatKey
    lane: int
    order: str
    reservation_id: str
    customer_id: str
    quantity: int
    split: bool = False
    accessible: bool = False


@dataclass(frozen=True, slots=True)
class Lane:
    """One lane of a list: the entries waiting in it, the latest order key joined or fenced
    (`frontier`: no place with a smaller key can be written any more), whether the list is open
    and until when it offers, and a counted class's list seats held in the lane (ledger key ->
    seats)."""

    lane: int
    waiting: int = 0
    frontier: str = ""
    open: bool = True
    until: int | None = None
    offer_seconds: int = DEFAULT_OFFER_SECONDS
    seats: Mapping[str, int] = field(default_factory=dict)

    @property
    def seats_held(self) -> int:
        return sum(self.seats.values())


@dataclass(frozen=True, slots=True)
class WaitingList:
    """A class's list as its lanes show it: open or not, offers until `until` (epoch seconds; None:
    until the sale ends), each offer holding its seats `offer_seconds`; `mapped`: the class has a
    seat map, and the list's seats are its row items' seats in state L (a counted class's are
    counted in the lanes)."""

    key: SeatKey
    open: bool
    until: int | None
    offer_seconds: int
    lanes: tuple[Lane, ...]
    mapped: bool = False

    @property
    def waiting(self) -> int:
        return sum(lane.waiting for lane in self.lanes)

    @property
    def seats_held(self) -> int:
        """A counted class's seats set aside for the list (held in the lanes' ledgers)."""
        return sum(lane.seats_held for lane in self.lanes)

    def offers_at(self, now: float) -> bool:
        """Whether the list offers seats at `now` (open, and before its `until`)."""
        return self.open and (self.until is None or now < self.until)


@dataclass(frozen=True, slots=True)
class EntryOffer:
    """One entry's offer: its place, when the hold ends, and its seats (a counted class: from the
    shard item and pool items of `ledger`; a mapped class: the seat ids), with the OFFERED
    answer its record takes once the round has built it."""

    place: Place
    expires_at: int
    ledger: str = ""
    seats: tuple[str, ...] = ()
    counted: bool = False  # the class has a per-customer limit: the offer counts against it
    answer: ReservationOutcome | None = None


@dataclass(frozen=True, slots=True)
class EntryEnd:
    """An entry off the list without an offer: it left (`to` LEFT, its record's answer kept), or an
    offer would pass its customer's limit (`to` LIMIT_EXCEEDED, with that `answer`); its record
    expires at `expires_at`."""

    place: Place
    to: Outcome
    expires_at: int
    answer: ReservationOutcome | None = None


@dataclass(frozen=True, slots=True)
class Join:
    """Requests refused SOLD_OUT joining a class's list in one transaction: each record (still that
    refusal) takes its WAITLISTED answer, each customer's entry and place are written, and the
    lane counts them, guarded on the list being open and the lane's frontier below the first key."""

    key: SeatKey
    lane: int
    entries: tuple[tuple[ReservationOutcome, Place], ...]

    @property
    def first(self) -> str:
        return self.entries[0][1].order

    @property
    def last(self) -> str:
        return self.entries[-1][1].order


@dataclass(frozen=True, slots=True)
class LedgerMove:
    """`seats` of the list's seats at `ledger` moving from lane `source` to lane `target`."""

    ledger: str
    source: int
    target: int
    seats: int


@dataclass(frozen=True, slots=True)
class ShardMove:
    """`seats` of the list's held seats (and as much capacity) moving from shard item `donor` to
    shard item `target` of a counted class, with the same pool items (`pools`): an entry's offer
    takes all its seats from one shard item."""

    donor: int
    target: int
    seats: int
    pools: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class LaneWrite:
    """One lane's share of a round (or a batch's leaves): the offers and ends of its entries,
    written together, each guarded on the entry still waiting, offers on the lane's seats (a
    mapped class: each seat still the list's, the sale open at `now`), the list offering at `now`
    and the customer's `limit`. A mapped class's offers hold seats of its `pools` as well."""

    key: SeatKey
    lane: int
    now: int
    offers: tuple[EntryOffer, ...] = ()
    ends: tuple[EntryEnd, ...] = ()
    limit: int | None = None
    pools: tuple[str, ...] = ()

    @property
    def ledger_taken(self) -> dict[str, int]:
        taken: dict[str, int] = {}
        for offer in self.offers:
            if offer.ledger:
                taken[offer.ledger] = taken.get(offer.ledger, 0) + offer.place.quantity
        return taken


@dataclass(frozen=True, slots=True)
class Rebalance:
    """What a counted class's round moves before its lanes offer: list seats between lanes (so that
    each lane holds what its entries are offered) and between shard items (so that each offer's
    seats are on one)."""

    key: SeatKey
    lanes: Mapping[int, Mapping[str, int]] = field(default_factory=dict)  # lane -> ledger key -> seats in
    shards: tuple[ShardMove, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.shards or any(any(change.values()) for change in self.lanes.values()))


@dataclass(frozen=True, slots=True)
class ListedReturn:
    """The list's seats going back on public sale: a counted class's from its lanes' ledgers (lane ->
    ledger key -> seats), a mapped class's seats in state L on its rows (row item -> positions,
    with the class's `pools`); guarded, when `empty`, on no entry waiting in any lane."""

    key: SeatKey
    ledgers: Mapping[int, Mapping[str, int]] = field(default_factory=dict)
    rows: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    pools: tuple[str, ...] = ()
    empty: bool = True
    lanes: int = WAITLIST_LANES

    @property
    def seats(self) -> int:
        return sum(sum(ledger.values()) for ledger in self.ledgers.values()) + sum(
            len(p) for p in self.rows.values()
        )


@dataclass(frozen=True, slots=True)
class ListRefused:
    """What stopped a write of the list (nothing was written): the records not as read (as they are;
    None: missing), places gone, lanes as they are (None: missing), seat rows refused, the
    reservation a customer's entry names when they have one, shard items refused."""

    records: Mapping[str, object] = field(default_factory=dict)
    places_gone: frozenset[str] = frozenset()
    lanes: Mapping[int, Lane | None] = field(default_factory=dict)
    rows: frozenset[str] = frozenset()
    entries: Mapping[str, str] = field(default_factory=dict)
    shards: frozenset[int] = frozenset()
    counters: Mapping[str, int] = field(default_factory=dict)
    pools: frozenset[str] = frozenset()


def lane_for(reservation_id: str) -> int:
    """The lane a reservation's joins and seats given back go to (spread over the lanes)."""
    return zlib.crc32(reservation_id.encode()) % WAITLIST_LANES
