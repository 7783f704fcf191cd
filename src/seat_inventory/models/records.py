"""Store records: a reservation as stored, the status changes of records, what a take writes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from seat_inventory.models.outcomes import Outcome, ReservationOutcome
from seat_inventory.models.views import PoolInventory, SeatClassInventory, SeatKey, SeatRow, pool_ref


@dataclass(frozen=True, slots=True)
class TokenUse:
    """An admission token spent by a reservation: written with the reservation's seats, kept until
    `expires_at` (epoch seconds, the TTL: after the token's own expiry it cannot admit anyone)."""

    token_id: str
    reservation_id: str
    expires_at: int


# An order (docs/guides/orders.md) has 1 to this many lines: each is one more inventory item, counter


@dataclass(frozen=True, slots=True)
class LineTake:
    """Where one line of a record (a single-line record is its own only line) took its seats:
    what a status change moves back, line by line (`ReservationRecord.takes`)."""

    key: SeatKey
    quantity: int
    shard: int
    pools: tuple[str, ...]
    customer_counted: bool
    seats: tuple[str, ...] = ()  # a mapped class's: its row items' seats, not the class's item


@dataclass(frozen=True, slots=True)
class ClassRules:
    """What a take assumes of a class's rules, which its guard checks (a stale assumption is
    refused and handed back): the per-customer limit, whether reserve and hold need an admission
    token (docs/guides/admission.md), and the capacity pools the class takes its seats from as well
    (docs/guides/pools.md)."""

    max_per_customer: int | None = None
    admission_required: bool = False
    pools: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ClassTake:
    """What a take does to one seat class: the answers recorded with it (each record says where
    its seats came from, to give them back there) and the seats they take.

    A counted class's `seats` (`held` of them held, the rest sold) come off its shard item
    `shard` (0 for a class of one item), after `moves` (shard -> seats) moved available seats (and
    as much capacity) into it from other shard items, each guarded by the donor's `available`;
    `taken_at` (the taker's clock) is stored on the item, for `survey_shards`. A mapped class
    (docs/guides/seat-maps.md) takes them off its row items instead (`rows`: row item -> positions), each
    guarded on exactly those seats being free. Either guard checks the sale status and window
    and the `rules` assumed. With a per-customer limit, `counters` (customer -> seats taken here)
    are added to the customers' counters, guarded by the limit. `token_uses` are written only if
    no other reservation used the token first. Each pool of `rules.pools` gives the seats too:
    its item `pool_shards[pool]` (absent: 0), after `pool_moves` (pool -> donor item -> seats).
    """

    key: SeatKey
    outcomes: Sequence[ReservationOutcome] = ()
    seats: int = 0
    held: int = 0
    rules: ClassRules = ClassRules()
    counters: Mapping[str, int] = field(default_factory=dict)
    shard: int = 0
    moves: Mapping[int, int] = field(default_factory=dict)
    rows: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    pool_shards: Mapping[str, int] = field(default_factory=dict)
    pool_moves: Mapping[str, Mapping[int, int]] = field(default_factory=dict)
    token_uses: Sequence[TokenUse] = ()
    taken_at: float | None = None

    def __post_init__(self) -> None:
        # A copy of what the caller passed: the take stays as it was made.
        object.__setattr__(self, "outcomes", tuple(self.outcomes))
        object.__setattr__(self, "token_uses", tuple(self.token_uses))
        counters = dict(self.counters) if self.rules.max_per_customer is not None else {}
        object.__setattr__(self, "counters", counters)
        object.__setattr__(self, "moves", {d: n for d, n in self.moves.items() if n > 0})
        object.__setattr__(self, "rows", {row: tuple(p) for row, p in self.rows.items()})
        object.__setattr__(self, "pool_shards", {p: s for p, s in self.pool_shards.items() if s})
        moves = {p: {d: n for d, n in m.items() if n > 0} for p, m in self.pool_moves.items()}
        object.__setattr__(self, "pool_moves", {p: m for p, m in moves.items() if m})

    @property
    def pool_refs(self) -> tuple[str, ...]:
        """The pool items the seats come off, as each record that takes seats names them."""
        return tuple(sorted(pool_ref(p, self.pool_shards.get(p, 0)) for p in self.rules.pools))


@dataclass(frozen=True, slots=True)
class Take:
    """One transaction that takes seats (`InventoryStore.take`): a part per seat class (one for a
    group of requests or a mapped take; an order's lines, all of one event), and each capacity
    pool item they share written once, guarded on their sum. All of it or nothing. Rejections
    recorded with the take expire (TTL) at `rejection_expires_at`; the guards judge the sale
    window at `now` (None: the store's clock)."""

    parts: Sequence[ClassTake]
    rejection_expires_at: int
    now: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "parts", tuple(self.parts))


@dataclass(frozen=True, slots=True)
class WriteRefused:
    """What stopped a take (a failed guard: nothing was written), or the records of
    `InventoryStore.record_rejections` that were not written.

    `inventory_refused`: a class's guard failed (its item or a row item); `inventory` is then the
    first refusing class item as it was (for a sharded class only that item: not `complete`), or
    None when there is no such item (unknown event). `already_recorded`: reservation id -> the
    answer stored before (those requests were answered and take nothing). `customer_seats`:
    customer -> the seats their counter held (taking more passes the limit). `tokens_used`: token
    -> the reservation that used it first (a replay). `pools_refused`: pool -> the first refusing
    item as it was (None: missing). `rows`: a mapped class's refusing row items (None: missing).
    `parts`: per part of the take, what of it refused, or None. `written`: the records of
    `record_rejections` written all the same (each is its own write); records in neither
    `written` nor `already_recorded` met a transient fault.
    """

    inventory_refused: bool
    inventory: SeatClassInventory | None
    already_recorded: Mapping[str, ReservationOutcome] = field(default_factory=dict)
    customer_seats: Mapping[str, int] = field(default_factory=dict)
    written: frozenset[str] = frozenset()
    tokens_used: Mapping[str, str] = field(default_factory=dict)
    pools_refused: Mapping[str, PoolInventory | None] = field(default_factory=dict)
    rows: Mapping[str, SeatRow | None] = field(default_factory=dict)
    parts: tuple[WriteRefused | None, ...] = ()


@dataclass(frozen=True, slots=True)
class TransitionsRefused:
    """A status-change transaction that a failed guard cancelled (nothing was written).

    `records`: reservation id -> the record as it is now (None when it no longer exists), for
    each record someone else changed first. `inventory_refused`/`inventory`: a class item's guard
    failed, and that item as it was (None when missing); `counters_refused` the customers whose
    counter could not be decremented; `pools_refused` the pool items whose guard failed (or that
    do not exist): on consistent data that cannot happen.
    """

    inventory_refused: bool
    inventory: SeatClassInventory | None
    records: Mapping[str, ReservationRecord | None] = field(default_factory=dict)
    counters_refused: frozenset[str] = frozenset()
    pools_refused: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class ReservationRecord:
    """One reservation as stored: the original answer, and where the reservation stands now.

    `answer` is what the reserve or hold message was told (republished verbatim to duplicates);
    `status` moves on with confirm, cancel and expiry (HELD -> CONFIRMED -> CANCELLED, ...).
    `customer_counted` says the seats were added to the customer's per-class counter, so
    releasing them must take them off again. `awaiting_publication` marks an expired hold whose
    EXPIRED outcome the sweeper has not yet published (its outbox). `shard` is the shard item of
    the seat class its seats were taken from, and go back to. `last_change_id` names the attempt
    that made the last status change, when it gave one (`Transition.change_id`).
    """

    answer: ReservationOutcome
    status: Outcome
    hold_expires_at: int | None = None
    customer_counted: bool = False
    awaiting_publication: bool = False
    status_changed_at: str | None = None
    shard: int = 0  # the shard item its seats came from
    last_change_id: str | None = None  # the change_id of the last Transition that gave one
    # Ticket numbers (docs/guides/tickets.md): sold and waiting for the issuer, or numbered
    # `ticket_first` .. `ticket_first + quantity - 1` in series `ticket_series`.
    awaiting_tickets: bool = False
    ticket_series: int | None = None
    ticket_first: int | None = None
    # The capacity pools its seats were taken from, and go back to (docs/guides/pools.md).
    pools: tuple[str, ...] = ()
    # How many of its tickets another customer holds now (passed on, docs/guides/checkin.md): while
    # any is, the reservation cannot be cancelled (its seats are no longer all the buyer's).
    tickets_passed_on: int = 0

    @property
    def ticket_numbers(self) -> range:
        """The serials of its tickets in its series (empty while not numbered)."""
        if self.ticket_first is None:
            return range(0)
        return range(self.ticket_first, self.ticket_first + self.quantity)

    @property
    def reservation_id(self) -> str:
        return self.answer.reservation_id

    @property
    def seats(self) -> tuple[str, ...]:
        """The seat ids it took in a mapped class (empty for a counted class)."""
        return self.answer.seats or ()

    @property
    def seat_key(self) -> SeatKey | None:
        """The class its seats came from; for an order (docs/guides/orders.md), its first line's: the
        key its status changes are grouped under (they move every line's class)."""
        if self.answer.event_id is not None and self.answer.lines:
            return SeatKey(self.answer.event_id, self.answer.lines[0].seat_class)
        if self.answer.event_id is None or self.answer.seat_class is None:
            return None
        return SeatKey(self.answer.event_id, self.answer.seat_class)

    def takes(self) -> tuple[LineTake, ...]:
        """Where its seats came from, line by line: an order's lines, or the record itself."""
        event_id = self.answer.event_id or ""
        if self.answer.lines:
            return tuple(
                LineTake(
                    SeatKey(event_id, line.seat_class),
                    line.quantity,
                    line.shard,
                    line.pools,
                    line.customer_counted,
                    line.seats or (),
                )
                for line in self.answer.lines
            )
        key = self.seat_key or SeatKey(event_id, "")
        return (LineTake(key, self.quantity, self.shard, self.pools, self.customer_counted, self.seats),)

    @property
    def quantity(self) -> int:
        return self.answer.quantity or 0

    def hold_expired(self, now: float) -> bool:
        """True for a HELD record whose hold has run out (the sweeper may not have released it yet)."""
        return (
            self.status is Outcome.HELD and self.hold_expires_at is not None and self.hold_expires_at <= now
        )


@dataclass(frozen=True, slots=True)
class Transition:
    """One status change to commit: `record` as read, moving to `to` (CONFIRMED, CANCELLED or EXPIRED).

    The inventory moves with it: HELD -> CONFIRMED turns held seats into sold ones;
    HELD -> CANCELLED/EXPIRED and CONFIRMED -> CANCELLED give the seats back to `available`.
    """

    record: ReservationRecord
    to: Outcome
    # Stored with the record (`last_change_id`) when given: a retry of the same attempt can tell
    # its own committed change (whose reply was lost) from a change someone else made.
    change_id: str | None = None

    @property
    def releases_seats(self) -> bool:
        return self.to is not Outcome.CONFIRMED
