"""Views: the inventory as a read (or a refused write) shows it: seat classes, their shard items,
capacity pools and a mapped class's row items."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum


def iso_utc(epoch_seconds: float) -> str:
    """ISO-8601 in UTC with a `Z`, as published in outcomes (`expires_at`) and shown by `seats`."""
    return datetime.fromtimestamp(epoch_seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class SaleStatus(StrEnum):
    """The operator's switch on a seat class; a missing attribute means OPEN."""

    OPEN = "OPEN"
    CLOSED = "CLOSED"


def sale_closed_reason(
    name: str, status: SaleStatus, starts_at: int | None, ends_at: int | None, now: float
) -> str | None:
    """Why `name` (a class) does not sell at `now`, or None when it does: the rule of the guard
    of every write that takes seats, so that a refused write is classified with its own `now`."""
    if status is SaleStatus.CLOSED:
        return f"the sale of {name} is closed"
    if starts_at is not None and now < starts_at:
        return f"the sale of {name} opens at {iso_utc(starts_at)}"
    if ends_at is not None and now >= ends_at:
        return f"the sale of {name} ended at {iso_utc(ends_at)}"
    return None


@dataclass(frozen=True, slots=True)
class SeatKey:
    """Identifies one inventory item: the seats of one class for one event."""

    event_id: str
    seat_class: str


# A seat class belongs to at most this many capacity pools (docs/guides/pools.md).
MAX_POOLS_PER_CLASS = 4
# A seat class has at most this many shard items (docs/explanation/sharding.md): one `TransactGetItems` reads
# them all, and a take moving seats from every other one leaves room for 36 records.
MAX_SHARDS = 64


@dataclass(frozen=True, slots=True)
class ShardSurvey:
    """One shard item as a read of that item alone showed it, and when a take last wrote it (`taken_at`,
    the taker's clock): for routing only (no snapshot: it never decides a refusal)."""

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
class PoolInventory:
    """A capacity pool of an event (docs/guides/pools.md): seats several classes share, each of their takes
    taking from it too; `available + held + sold == capacity`. A CLOSED pool sells none."""

    event_id: str
    pool: str
    capacity: int
    available: int
    held: int = 0
    sold: int = 0
    sale_status: SaleStatus = SaleStatus.OPEN
    version: int = 0
    # A sharded pool (docs/guides/pools.md): one item's view (`shard`), or every item's (`shards`).
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


# A record names each pool item its seats came from: the pool, `#<n>` after it for item n > 0.
POOL_SHARD_MARK = "#"


def pool_ref(pool: str, shard: int = 0) -> str:
    """How a record names shard `shard` of pool `pool` (docs/guides/pools.md)."""
    return f"{pool}{POOL_SHARD_MARK}{shard}" if shard else pool


def split_pool_ref(ref: str) -> tuple[str, int]:
    """The pool and its shard a record's pool entry names (`pool_ref` reversed)."""
    name, _, shard = ref.partition(POOL_SHARD_MARK)
    return name, int(shard) if shard else 0


@dataclass(frozen=True, slots=True)
class SeatClassInventory:
    """One seat class: its totals over its shard items (`available + held + sold == capacity` on each),
    and the sale rules every item carries and every take is guarded on.

    Sharding (docs/explanation/sharding.md): `shard_items` items exist, groups go to the first `shard_count`;
    `shards` holds the items this view was built from: all of them (`complete`) or the one a refused
    write handed back. An empty `shards` is a class of one item."""

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
    admission_required: bool = False
    pools: tuple[str, ...] = ()
    # Its pools as a read of the class found them; None when not read with it.
    pool_items: tuple[PoolInventory, ...] | None = None
    # (customer, seats) for the customers whose counters were read with it.
    counters: tuple[tuple[str, int], ...] | None = None
    # Seats given back go to the class's waiting list (docs/guides/waiting-list.md).
    waitlist: bool = False

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
        """Why the class does not sell at `now`, or None when it does."""
        name = f"{self.event_id} {self.seat_class}"
        return sale_closed_reason(name, self.sale_status, self.sale_starts_at, self.sale_ends_at, now)


class SeatState(StrEnum):
    """A seat's state on its row item; a free seat has no attribute."""

    HELD = "H"
    SOLD = "S"
    BLOCKED = "B"
    # Set aside for the class's waiting list (docs/guides/waiting-list.md): counted as held.
    LISTED = "L"


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
    pools: tuple[str, ...] = ()
    admission_required: bool = False
    waitlist: bool = False  # seats given back go to the class's waiting list
    # `taken_seat_ids`, worked out on first use (a row's states never change in place).
    _taken: frozenset[str] | None = field(default=None, init=False, repr=False, compare=False)

    def sale_closed_reason(self, now: float) -> str | None:
        name = f"{self.key.event_id} {self.key.seat_class}"
        return sale_closed_reason(name, self.sale_status, self.sale_starts_at, self.sale_ends_at, now)

    @property
    def taken_seat_ids(self) -> frozenset[str]:
        """The ids of the seats not free (item `S-R1#0`'s position 7 is seat `S-R1-7`): placement
        asks them of every row it looks at, for every request."""
        taken = self._taken
        if taken is None:
            prefix = f"{self.row_id.split('#', 1)[0]}-"
            taken = frozenset(f"{prefix}{position}" for position in self.states)
            object.__setattr__(self, "_taken", taken)
        return taken


# A row's seats are stored on row items of at most this many seats (docs/guides/seat-maps.md): an item
# stays under 1 KB, so a transaction writes it for 2 write units.
ROW_BLOCK = 40


def row_item_of(seat: str) -> tuple[str, int]:
    """The row item id (`<section>-<row>#<block>`) holding seat `<section>-<row>-<position>`, and
    the position. Raises ValueError for an id that is not a seat id."""
    section, row, position_text = seat.split("-")
    position = int(position_text)
    if position < 1:
        raise ValueError(f"bad seat id {seat!r}")
    return f"{section}-{row}#{(position - 1) // ROW_BLOCK}", position


def seats_by_row(seats: Iterable[str]) -> dict[str, tuple[int, ...]]:
    """Seat ids by the row item that holds them (row item id -> positions, in the seats' order)."""
    by_row: dict[str, list[int]] = {}
    for seat in seats:
        row_id, position = row_item_of(seat)
        by_row.setdefault(row_id, []).append(position)
    return {row: tuple(positions) for row, positions in by_row.items()}
