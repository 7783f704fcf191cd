"""Domain types shared by the layers: requests, outcomes, reservation records and inventory state.

Nothing here knows about boto3, SQS or SNS wire formats; the data-access module and the
publisher translate to and from these types.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum


def iso_utc(epoch_seconds: float) -> str:
    """ISO-8601 in UTC with a `Z`, as published in outcomes (`expires_at`) and shown by `seats`."""
    return datetime.fromtimestamp(epoch_seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


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
    # A reserve or hold on a class that requires an admission token, without a valid one
    # (missing, forged, expired, for another event or customer, or used by another reservation):
    # docs/guides/admission.md.
    ADMISSION_REFUSED = "ADMISSION_REFUSED"
    # Published by the ticket issuer when a sold reservation got its ticket numbers (never a
    # record's status: docs/guides/tickets.md).
    TICKETED = "TICKETED"
    # Mapped seat classes (docs/guides/seat-maps.md): chosen seats not free (the reason names them), or
    # chosen seats that would leave a single empty seat in a class that refuses orphans.
    SEATS_TAKEN = "SEATS_TAKEN"
    ORPHAN_SEAT = "ORPHAN_SEAT"
    # At the gate (docs/guides/checkin.md), never a record's status: a ticket passed on to another
    # customer (its old secret revoked, a new one issued), and a ticket admitted twice by
    # scanners that were offline (both scans named).
    TRANSFERRED = "TRANSFERRED"
    CHECKIN_CONFLICT = "CHECKIN_CONFLICT"


# Answers to a reserve or hold that took seats.
TAKES_SEATS = frozenset({Outcome.CONFIRMED, Outcome.HELD})
# Answers to a reserve or hold that took no seats: recorded, final, and expired by TTL.
REJECTIONS = frozenset(
    {
        Outcome.SOLD_OUT,
        Outcome.UNKNOWN_EVENT,
        Outcome.LIMIT_EXCEEDED,
        Outcome.SALE_CLOSED,
        Outcome.ADMISSION_REFUSED,
        Outcome.SEATS_TAKEN,
        Outcome.ORPHAN_SEAT,
    }
)


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


class SaleStatus(StrEnum):
    """The operator's switch on a seat class; a missing attribute means OPEN."""

    OPEN = "OPEN"
    CLOSED = "CLOSED"


@dataclass(frozen=True, slots=True)
class SeatKey:
    """Identifies one inventory item: the seats of one class for one event."""

    event_id: str
    seat_class: str


# A seat class belongs to at most this many capacity pools (docs/guides/pools.md): each is one more
# action in every transaction that takes or gives back its seats.
MAX_POOLS_PER_CLASS = 4


@dataclass(frozen=True, slots=True)
class PoolInventory:
    """A capacity pool of an event (docs/guides/pools.md): seats several classes share.

    Every class that belongs to it takes its seats from it as well as from its own capacity, in
    the same transaction; `available + held + sold == capacity`, none negative, like a class.
    A CLOSED pool sells no seat of any of its classes (confirm, cancel and expiry go on).
    """

    event_id: str
    pool: str
    capacity: int
    available: int
    held: int = 0
    sold: int = 0
    sale_status: SaleStatus = SaleStatus.OPEN
    version: int = 0
    # Sharding (docs/guides/pools.md, "Sharded pools"): the pool is split over `shard_count` items
    # (every item stores it). A view of one item has `shard` its index and no `shards`; a whole
    # read (one snapshot of every item) has `shards`, its totals are the pool's (`complete`).
    shard: int = 0
    shard_count: int = 1
    shards: tuple[ShardSeats, ...] = ()

    @property
    def complete(self) -> bool:
        """True when the view's numbers are the pool's: one item, or every item read at once."""
        return self.shard_count == 1 or len(self.shards) == self.shard_count

    def shard_for(self, class_shard: int) -> int:
        """The pool item a take from shard `class_shard` of a class writes (docs/guides/pools.md)."""
        return class_shard % self.shard_count

    def closed_reason(self) -> str | None:
        """Why the pool sells nothing, or None when it sells."""
        if self.sale_status is SaleStatus.CLOSED:
            return f"the sale of pool {self.pool} of {self.event_id} is closed"
        return None

    def moves_into(self, target: int, seats: int) -> dict[int, int]:
        """The seats to move into item `target` of a pool read whole (`shards`), fullest donors
        first, so that it has `seats` available (as far as the others have them)."""
        have = {s.shard: s.available for s in self.shards}
        short = seats - have.get(target, 0)
        moves: dict[int, int] = {}
        for donor, available in sorted(have.items(), key=lambda item: (-item[1], item[0])):
            if short <= 0:
                break
            if donor == target or available <= 0:
                continue
            moves[donor] = min(available, short)
            short -= moves[donor]
        return moves


# A record names each pool item its seats came from: the pool's name, and `#<n>` after it for
# shard n > 0 of a sharded pool (pool names are identifiers, which cannot contain `#`).
POOL_SHARD_MARK = "#"


def pool_ref(pool: str, shard: int = 0) -> str:
    """How a record names shard `shard` of pool `pool` (docs/guides/pools.md)."""
    return f"{pool}{POOL_SHARD_MARK}{shard}" if shard else pool


def split_pool_ref(ref: str) -> tuple[str, int]:
    """The pool and its shard a record's pool entry names (`pool_ref` reversed)."""
    name, _, shard = ref.partition(POOL_SHARD_MARK)
    return name, int(shard) if shard else 0


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


@dataclass(frozen=True, slots=True)
class TokenUse:
    """An admission token spent by a reservation: written with the reservation's seats, kept until
    `expires_at` (epoch seconds, the TTL: after the token's own expiry it cannot admit anyone)."""

    token_id: str
    reservation_id: str
    expires_at: int


# An order (docs/guides/orders.md) has 1 to this many lines: each is one more inventory item, counter
# and up to MAX_POOLS_PER_CLASS pools in its one transaction.
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
    # A mapped class's line (docs/guides/seat-maps.md): the chosen seat ids as asked, or once taken the
    # seats it took (best available included); None for a counted class, or best available as asked.
    seats: tuple[str, ...] | None = None


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
    # The message's `admission_token` as sent, and what its verification found (filled in by
    # `logic.reserve_seats` before the groups are planned; None: no token was sent).
    admission_token: str | None = None
    admission: AdmissionCheck | None = None
    # A mapped class (docs/guides/seat-maps.md): the chosen seats (`quantity` is their number), or None for
    # best available, which may `split` the seats when no block fits and takes wheelchair and
    # companion seats only when `accessible`.
    seats: tuple[str, ...] | None = None
    split: bool = False
    accessible: bool = False
    # A multi-line order (docs/guides/orders.md): its lines, all taken or none; `seat_class` is then
    # the first line's and `quantity` the seats of all lines. None: a single-line request.
    lines: tuple[OrderLine, ...] | None = None

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


@dataclass(frozen=True, slots=True)
class ReservationOutcome:
    """The final answer for one message, as stored (for a reserve or hold) and as published.

    `remaining` is the number of seats left in the class when the service knows it (it is
    always known for SOLD_OUT, which is decided from the inventory item itself).
    `duplicate` is True when this is a re-publication of an answer recorded earlier, or, for a
    confirm or cancel, when the reservation was already in the state asked for.
    `hold_expires_at` (epoch seconds) is set for answers about a hold.
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
    request_type: RequestType | None = RequestType.RESERVE
    hold_expires_at: int | None = None
    tickets: tuple[str, ...] | None = None  # a TICKETED outcome's ticket numbers, formatted
    # A mapped class's seat ids: those taken (HELD, CONFIRMED and the changes of such a
    # reservation), or those not free (SEATS_TAKEN) or stranded (ORPHAN_SEAT).
    seats: tuple[str, ...] | None = None
    # A multi-line order's lines (docs/guides/orders.md); None for a single-line reservation.
    lines: tuple[OrderLine, ...] | None = None

    def as_duplicate(self, message_id: str) -> ReservationOutcome:
        """The same recorded answer, marked as a re-publication for a redelivered message."""
        return dataclasses.replace(self, duplicate=True, message_id=message_id)


@dataclass(frozen=True, slots=True)
class GroupWrite:
    """One group's write (`InventoryStore.commit_outcomes`): its answers, the seats they take and
    from which shard item, and what the inventory guard checks.

    `seats_taken` seats (HELD answers' to `held`, CONFIRMED ones' to `sold`) come from the class's
    shard item `shard` (0 for a class of one item), after `moves` (shard -> seats) moved available
    seats into it from other shard items in the same transaction. The guard checks the sale status
    and window at `now` (None: the store's clock) and that the class's per-customer limit is
    `max_per_customer` (None: no limit); with a limit, `customer_seats` (customer -> seats taken
    here) is added to each customer's counter, guarded by the limit. `taken_at` (the caller's
    clock) is stored on the shard item, for `survey_shards`. Rejections' records expire (TTL) at
    `rejection_expires_at`, epoch seconds.

    Admission (docs/guides/admission.md): the guard also checks that the class requires an admission
    token exactly when `admission_required` says so (the planner's assumption, like the limit);
    each of `token_uses` is written in the same transaction, and only if the token was never used
    or was used by the same reservation (a redelivery is not a replay).

    Pools (docs/guides/pools.md): the guard checks that the class belongs to exactly `pools` (the
    planner's assumption); the seats taken also come off each of those pool items, each guarded
    like the class's item (there, `available >=` the seats taken, and open), and each record that
    takes seats remembers them, to give them back to the same pools.
    """

    key: SeatKey
    outcomes: Sequence[ReservationOutcome]
    seats_taken: int
    rejection_expires_at: int
    max_per_customer: int | None = None
    customer_seats: Mapping[str, int] = field(default_factory=dict)
    now: int | None = None
    shard: int = 0
    moves: Mapping[int, int] = field(default_factory=dict)
    taken_at: float | None = None
    admission_required: bool = False
    token_uses: Sequence[TokenUse] = ()
    pools: Sequence[str] = ()
    # Sharded pools (docs/guides/pools.md): the item of each pool the seats come off (pool -> shard,
    # absent: 0), after `pool_moves` (pool -> donor shard -> seats) moved available seats (and as
    # much capacity) into it from the pool's other items, each guarded by the donor's `available`.
    pool_shards: Mapping[str, int] = field(default_factory=dict)
    pool_moves: Mapping[str, Mapping[int, int]] = field(default_factory=dict)
    # A mapped class (docs/guides/seat-maps.md): the seats are taken from these row items (row item id ->
    # positions), each guarded on exactly those seats being free, instead of from the class's
    # inventory item; the sale rules and the limit are guarded on each row item.
    rows: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    # One line of an order (docs/guides/orders.md), whose answer (on the first line's write) counts the
    # seats of every line: whether this line's seats are held (a hold) rather than sold.
    order_line_held: bool | None = None

    def __post_init__(self) -> None:
        # A copy of what the caller passed: the write stays as it was made.
        object.__setattr__(self, "outcomes", tuple(self.outcomes))
        object.__setattr__(self, "pools", tuple(self.pools))
        object.__setattr__(self, "token_uses", tuple(self.token_uses))
        object.__setattr__(self, "customer_seats", dict(self.customer_seats))
        object.__setattr__(self, "moves", dict(self.moves))
        object.__setattr__(self, "pool_shards", {p: s for p, s in self.pool_shards.items() if s})
        object.__setattr__(self, "pool_moves", {p: dict(m) for p, m in self.pool_moves.items() if m})
        object.__setattr__(self, "rows", {row: tuple(p) for row, p in self.rows.items()})

    @property
    def counters(self) -> dict[str, int]:
        """The customer counters the write increments (none without a per-customer limit)."""
        return dict(self.customer_seats) if self.max_per_customer is not None else {}

    @property
    def records_only(self) -> bool:
        """True when the write takes no seats and counts no customer: it writes records only,
        each its own conditional write (nothing to be atomic with)."""
        return self.seats_taken == 0 and not self.counters and not self.token_uses

    @property
    def donors(self) -> dict[int, int]:
        """The shard items that move seats into `shard`, and how many (moves of no seats left out)."""
        return {donor: seats for donor, seats in self.moves.items() if seats > 0}

    @property
    def pool_refs(self) -> tuple[str, ...]:
        """The pool items the seats come off, as each record that takes seats names them."""
        return tuple(sorted(pool_ref(p, self.pool_shards.get(p, 0)) for p in self.pools))

    def pool_donors(self, pool: str) -> dict[int, int]:
        """The items of `pool` that move seats into its item `pool_shards[pool]`, and how many."""
        return {donor: seats for donor, seats in self.pool_moves.get(pool, {}).items() if seats > 0}

    @property
    def seats_held(self) -> int:
        """The seats of HELD answers (the rest of `seats_taken` is sold); an order's line: all
        its seats or none."""
        if self.order_line_held is not None:
            return self.seats_taken if self.order_line_held else 0
        return sum(o.quantity or 0 for o in self.outcomes if o.outcome is Outcome.HELD)


@dataclass(frozen=True, slots=True)
class PoolItemChange:
    """What writes committed together (an order's lines, docs/guides/orders.md) do to one item of a
    capacity pool: the writes that take seats off it (`takers`: their seats `taken`, `held` of
    them), the seats (and as much capacity) moved into it from the pool's other items, and those
    moved out of it into another line's item. One update per item: DynamoDB refuses two
    operations on one item in a transaction."""

    takers: tuple[GroupWrite, ...]
    taken: int
    held: int
    moved_in: int
    moved_out: int

    @property
    def needs(self) -> int:
        """The seats the item itself must have available: its guard is `available >=` these."""
        return self.taken - self.moved_in + self.moved_out


def check_writes_together(writes: Sequence[GroupWrite]) -> None:
    """Raises ValueError unless `writes` can be committed in one transaction (an order's lines,
    docs/guides/orders.md): distinct classes of one event, each taking seats, a mapped class's write
    moving no seats between shard items, and each write's moves fitting its seats."""
    keys = [w.key for w in writes]
    if len(set(keys)) != len(keys) or len({k.event_id for k in keys}) != 1:
        raise ValueError(f"writes committed together must be of distinct classes of one event: {keys}")
    if any(w.records_only or w.seats_taken <= 0 for w in writes):
        raise ValueError("writes committed together must each take seats")
    if any(w.rows and w.donors for w in writes):
        raise ValueError("a mapped class's write moves no seats between shard items")
    for w in writes:
        if w.shard in w.donors or sum(w.donors.values()) > w.seats_taken:
            raise ValueError(f"moves {w.donors} into shard {w.shard} do not fit {w.seats_taken} seat(s)")


def pool_item_changes(writes: Sequence[GroupWrite]) -> dict[tuple[str, int], PoolItemChange]:
    """Per pool item (pool, shard) the writes touch, in key order, what they do to it together:
    each write's seats go to its item `pool_shards[pool]`, its `pool_moves` come out of the donors
    (summed over writes: two lines on one item are one update, guarded on their sum)."""
    takers: dict[tuple[str, int], list[GroupWrite]] = {}
    moved_in: dict[tuple[str, int], int] = {}
    moved_out: dict[tuple[str, int], int] = {}
    for write in writes:
        if write.seats_taken <= 0:
            continue
        for pool in write.pools:
            target = (pool, write.pool_shards.get(pool, 0))
            takers.setdefault(target, []).append(write)
            for donor, seats in write.pool_donors(pool).items():
                moved_in[target] = moved_in.get(target, 0) + seats
                moved_out[(pool, donor)] = moved_out.get((pool, donor), 0) + seats
    changes: dict[tuple[str, int], PoolItemChange] = {}
    for item in sorted(takers.keys() | moved_out.keys()):
        mine = tuple(takers.get(item, ()))
        held = sum(w.seats_held for w in mine)
        changes[item] = PoolItemChange(
            mine, sum(w.seats_taken for w in mine), held, moved_in.get(item, 0), moved_out.get(item, 0)
        )
    return changes


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

    @property
    def uncounts_customer(self) -> bool:
        return self.releases_seats and self.record.customer_counted


class SeatState(StrEnum):
    """A seat's state on its row item; a free seat has no attribute."""

    HELD = "H"
    SOLD = "S"
    BLOCKED = "B"


@dataclass(frozen=True, slots=True)
class SeatRow:
    """One row item of a mapped class (docs/guides/seat-maps.md): the states of its seats that are not
    free (position -> state), its counts (`available + held + sold + blocked == len(positions)`)
    and the class's sale rules, copied on every row item so that each take is guarded on them."""

    key: SeatKey
    row_id: str  # `<section>-<row>#<block>`
    first: int  # its first position in the row
    size: int  # seats on the item
    states: Mapping[int, SeatState]
    available: int
    held: int
    sold: int
    max_per_customer: int | None = None
    sale_status: SaleStatus = SaleStatus.OPEN
    sale_starts_at: int | None = None
    sale_ends_at: int | None = None
    # The class's capacity pools and whether it requires admission tokens (docs/guides/pools.md,
    # docs/guides/admission.md), copied on every row item like the sale rules: each take is guarded on
    # them, as a counted class's take is on its inventory item.
    pools: tuple[str, ...] = ()
    admission_required: bool = False

    def sale_closed_reason(self, now: float) -> str | None:
        return SeatClassInventory(
            self.key.event_id,
            self.key.seat_class,
            0,
            0,
            0,
            sale_status=self.sale_status,
            sale_starts_at=self.sale_starts_at,
            sale_ends_at=self.sale_ends_at,
        ).sale_closed_reason(now)


# A seat class's inventory is split over at most this many shard items (docs/explanation/sharding.md). The
# bound comes from DynamoDB's 100 items per transaction and per `TransactGetItems`/`BatchGetItem`:
# a consistent read of the class reads every item in one `TransactGetItems`, operator changes
# write every item in one transaction, and a take that moves seats from every other item still
# leaves room for 100 - 64 = 36 reservation records.
MAX_SHARDS = 64


@dataclass(frozen=True, slots=True)
class ShardSurvey:
    """One shard item of a sharded class as a strongly consistent read of that item alone showed it.

    `taken_at` is when a transaction last took seats from it (the clock of the taking container,
    seconds; None when never): a shard taken from within the last moment is another container's
    (`logic.shards.pick_shard`). Only for routing: a survey of several items is no snapshot.
    """

    shard: int
    available: int
    taken_at: float | None = None


@dataclass(frozen=True, slots=True)
class ShardSeats:
    """The seats of one shard item of a seat class; `available + held + sold == capacity` on each."""

    shard: int
    capacity: int
    available: int
    held: int
    sold: int


@dataclass(frozen=True, slots=True)
class SeatClassInventory:
    """The state of one seat class: its totals over its shard items, and the sale rules.

    Invariant: `available + held + sold == capacity`, none negative, on the class and on each
    shard. The optional sale rules (`max_per_customer`, `sale_status`, `sale_starts_at`/
    `sale_ends_at` in epoch seconds) are the same on every shard and are enforced by the same
    conditional write that takes the seats. `version` counts operator changes (capacity, status,
    window, limit).

    Sharding (docs/explanation/sharding.md): `shard_items` items exist; groups are routed to the first
    `shard_count` of them (the others were retired by a reshard and still hold seats). `shards`
    holds the items this view was built from: all of them (`complete`, the totals are the
    class's) or only one (the item a refused write handed back: its own numbers, not the
    class's). An empty `shards` is a class of one item whose totals are its own.
    """

    event_id: str
    seat_class: str
    capacity: int
    available: int
    sold: int
    held: int = 0
    max_per_customer: int | None = None
    sale_status: SaleStatus = SaleStatus.OPEN
    sale_starts_at: int | None = None
    sale_ends_at: int | None = None
    version: int = 0
    shards: tuple[ShardSeats, ...] = ()
    shard_count: int = 1
    shard_items: int = 1
    # Reserve and hold need an admission token (docs/guides/admission.md); same on every shard item.
    admission_required: bool = False
    # The capacity pools the class takes its seats from as well (docs/guides/pools.md); every shard item.
    pools: tuple[str, ...] = ()
    # Those pools' items as a whole read of the class found them (a missing one is absent); None
    # when they were not read with it (a write's ALL_OLD, a read of shard 0 alone).
    pool_items: tuple[PoolInventory, ...] | None = None
    # Customers' counters read with the item (`InventoryStore.read_inventory(customers=...)`):
    # (customer, seats) for each customer asked for, 0 for one without a counter; None when
    # none were asked for.
    counters: tuple[tuple[str, int], ...] | None = None

    @property
    def seats_to_sell(self) -> int:
        """The seats a take could get: the class's, or fewer when a pool read with it has fewer
        (a closed or missing pool sells none)."""
        if self.pool_items is None or not self.pools:
            return self.available
        found = {p.pool: p for p in self.pool_items}
        pools = [found.get(name) for name in self.pools]
        if any(p is None or p.closed_reason() is not None for p in pools):
            return 0
        # One item of a sharded pool (read to route by) does not bound the class.
        return min([self.available, *(p.available for p in pools if p is not None and p.complete)])

    @property
    def key(self) -> SeatKey:
        return SeatKey(self.event_id, self.seat_class)

    @property
    def customer_seats(self) -> dict[str, int]:
        """The counters read with the item, by customer (empty when none were asked for)."""
        return dict(self.counters or ())

    @property
    def complete(self) -> bool:
        """True when the view covers every shard item: its totals are the class's."""
        return not self.shards or len(self.shards) == self.shard_items

    def shard_seats(self) -> tuple[ShardSeats, ...]:
        """The shard items of this view (a class of one item is its shard 0)."""
        if self.shards:
            return self.shards
        return (ShardSeats(0, self.capacity, self.available, self.held, self.sold),)

    def sale_closed_reason(self, now: float) -> str | None:
        """Why the class does not sell at `now`, or None when it does.

        The same rule as the condition of the write that takes seats, so that a refused write is
        classified with the `now` it was made with.
        """
        name = f"{self.event_id} {self.seat_class}"
        if self.sale_status is SaleStatus.CLOSED:
            return f"the sale of {name} is closed"
        if self.sale_starts_at is not None and now < self.sale_starts_at:
            return f"the sale of {name} opens at {iso_utc(self.sale_starts_at)}"
        if self.sale_ends_at is not None and now >= self.sale_ends_at:
            return f"the sale of {name} ended at {iso_utc(self.sale_ends_at)}"
        return None


@dataclass(slots=True)
class BatchResult:
    """What one SQS batch produced: the outcomes published and the messages to retry."""

    published: list[ReservationOutcome] = field(default_factory=list)
    failed_message_ids: list[str] = field(default_factory=list)
    handed_back: dict[str, str] = field(default_factory=dict)  # failed message id -> why
    seats_confirmed: int = 0
    seats_held: int = 0
    seats_released: int = 0


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
    """How an event numbers its tickets (`seats tickets configure`; docs/guides/tickets.md).

    `series` sequences (1 to MAX_TICKET_SERIES), each 1, 2, 3, ... without gap; a sale belongs
    to series `crc32(reservation_id) % series`. A number prints as `prefix`, then the series
    and a dash when there is more than one, then the serial zero-padded to `width` digits.
    """

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
    """Serials `first` .. `next_after - 1` of `series`, given in one transaction, in order.

    Committed only if the series' counter still says `first` (nobody numbered since it was
    read) and every reservation still waits for its numbers; the counter then says `next_after`.
    The batch is kept as the series' ledger entry.
    """

    series: TicketSeries
    first: int
    assignments: tuple[TicketAssignment, ...]

    @property
    def next_after(self) -> int:
        return self.first + sum(a.quantity for a in self.assignments)


@dataclass(frozen=True, slots=True)
class NumbersRefused:
    """A numbering transaction a failed condition cancelled (nothing was written).

    `counter_next` is the counter's value when its guard failed (another issuer numbered since
    it was read), None when the counter's guard held; `not_waiting` names the reservations that
    no longer wait for numbers (numbered by another issuer, or not found): leave them out.
    """

    counter_next: int | None
    not_waiting: frozenset[str] = frozenset()


class RetryableError(Exception):
    """A transient fault (throttling, transaction conflict, service error): retry the messages."""


class TransactionConflict(RetryableError):
    """Another transaction was writing the same item; retrying shortly usually succeeds."""


class Throttled(RetryableError):
    """DynamoDB refused the request for throughput (a hot partition's units were spent, or the
    table's): like a conflict, not a failure but a wait for the next units; retrying after a
    back-off usually succeeds."""


class StoreInconsistency(RetryableError):
    """The stored state breaks an invariant (a guard that cannot fail on consistent data failed).

    In the reservations handler only the affected messages are handed back; after
    MaxReceiveCount receives they reach the dead-letter queue, whose alarm calls an operator. In
    the hold sweeper the seat class is not retried, and the run fails after the rest of its work
    (`SweepHoldsErrorsAlarm`, `HoldsOverdueAlarm`). Nothing is written meanwhile.
    """


class OperatorOutcomeUnknown(Exception):
    """An operator change got no answer from DynamoDB, and neither did the reads that would tell
    whether it was applied: it may or may not have been. Not a retryable error: sending the change
    again under a new operation id could apply it twice."""


class EventAlreadyExists(Exception):
    """`create_event` was asked to create a seat class that already exists."""


class UnknownSeatClass(Exception):
    """An operator change named a seat class that has no inventory item."""


class InventoryChangeRefused(Exception):
    """An operator change would break the inventory's invariant (e.g. capacity below sold + held)."""
