"""Store records: a reservation as stored, the status changes of records, what a take writes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from seat_inventory.models.outcomes import Outcome, ReservationOutcome
from seat_inventory.models.views import SeatKey, pool_ref


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
