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
    """What a take does to one seat class: the answers recorded with it and the seats they take.

    A counted class's `seats` (`held` of them held) come off shard item `shard` after `moves`
    (donor -> seats) moved seats into it; a mapped class's off its row items (`rows`: row item ->
    positions). The guards check the seats, the sale at the take's `now` and the `rules` assumed;
    `counters` (customer -> seats) count against the limit, `token_uses` spend tokens, and each pool
    of the rules gives the seats too, from item `pool_shards[pool]` after `pool_moves[pool]`."""

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
    """One transaction that takes seats (`InventoryStore.take`), all or nothing: a part per seat class
    (an order's lines are several, of one event), each pool item they share written once. Rejections
    recorded with it expire at `rejection_expires_at`; the guards judge the sale at `now`."""

    parts: Sequence[ClassTake]
    rejection_expires_at: int
    now: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "parts", tuple(self.parts))


@dataclass(frozen=True, slots=True)
class WriteRefused:
    """What stopped a take (nothing was written), or the records of `record_rejections` not written.

    `inventory`: the first refusing class item as it was (a shard item alone is not `complete`; None:
    no such class); `already_recorded`: the answers stored before; `customer_seats`: the counters
    that refused; `tokens_used`: each token's first user; `pools_refused`/`rows`: the refusing pool
    items and row items as they were (None: missing); `parts`: each part's own refusal (or None);
    `written`: the rejections written all the same (the rest met a transient fault)."""

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
    """What stopped a status change (nothing was written): `records` changed by someone else first (as
    they are now; None: gone), the classes whose waiting list rule changed, and the class item,
    counters and pool items whose guard failed (on consistent data these cannot)."""

    inventory_refused: bool
    inventory: SeatClassInventory | None
    records: Mapping[str, ReservationRecord | None] = field(default_factory=dict)
    counters_refused: frozenset[str] = frozenset()
    pools_refused: frozenset[str] = frozenset()
    # Classes whose waiting list rule was not the one the change assumed (docs/guides/waiting-list.md).
    lists_changed: frozenset[SeatKey] = frozenset()


@dataclass(frozen=True, slots=True)
class ReservationRecord:
    """One reservation as stored: the answer it was given (republished verbatim to duplicates), its
    status now, and where its seats came from (`takes`: the shard item, pools and counting of the
    record, or of each line of an order), to go back there. `awaiting_publication`: an expiry in the
    sweeper's outbox; `last_change_id`: the attempt that made the last status change."""

    answer: ReservationOutcome
    status: Outcome
    hold_expires_at: int | None = None
    customer_counted: bool = False
    awaiting_publication: bool = False
    status_changed_at: str | None = None
    shard: int = 0  # the shard item its seats came from
    last_change_id: str | None = None  # the change_id of the last Transition that gave one
    # Ticket numbers (docs/guides/tickets.md): waiting for the issuer, or numbered from `ticket_first`.
    awaiting_tickets: bool = False
    ticket_series: int | None = None
    ticket_first: int | None = None
    pools: tuple[str, ...] = ()
    # How many of its tickets another customer holds now (passed on, docs/guides/checkin.md): while
    # any is, the reservation cannot be cancelled (its seats are no longer all the buyer's).
    tickets_passed_on: int = 0
    # WAITLISTED: its place on the class's waiting list (lane, order key; docs/guides/waiting-list.md).
    waitlist_place: tuple[int, str] | None = None

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
    """One status change to commit: `record` as read, moving to `to` (CONFIRMED, CANCELLED, EXPIRED); its
    seats move with it (held to sold, or back to available)."""

    record: ReservationRecord
    to: Outcome
    # Stored as `last_change_id`: a retry can tell its own change (reply lost) from another's.
    change_id: str | None = None

    @property
    def releases_seats(self) -> bool:
        return self.to is not Outcome.CONFIRMED
