"""An in-memory inventory store with the semantics of `dal.inventory_table.InventoryTable`.

A take or a status change is the same list of actions the table writes (`seat_inventory.transaction`),
each checked here as its DynamoDB guard checks it, and written only when every guard held; the
refused ones are read back by the same reader (the item or record as it was). Rejections alone
are written one by one, as the table's PutItems are (`put_record`). Unit tests use it as
the store's fake, and `seats simulate` runs the service's logic against it (wrapped in
`simulation.dynamodb`, which adds DynamoDB's conflicts, throttling, latency and write units).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from seat_inventory.logic.seat_map import SeatMap
from seat_inventory.models import (
    WHOLE_INDEX,
    IssuerLane,
    NumbersRefused,
    Outcome,
    PoolInventory,
    ReservationOutcome,
    ReservationRecord,
    SaleStatus,
    SeatClassInventory,
    SeatKey,
    SeatRow,
    SeatState,
    ShardSeats,
    ShardSurvey,
    Take,
    TicketBatch,
    TicketFormat,
    TicketSeries,
    Transition,
    TransitionsRefused,
    UnnumberedSale,
    WriteRefused,
    pool_ref,
)
from seat_inventory.transaction import (
    Action,
    ChangeStatus,
    CountCustomer,
    Failure,
    MovePoolSeats,
    MoveSeats,
    PutRecord,
    ReleaseRow,
    ReturnPoolSeats,
    ReturnSeats,
    Role,
    TakeFromPool,
    TakeRow,
    TakeSeats,
    UncountCustomer,
    UseToken,
    status_actions,
    status_refusal,
    take_actions,
    take_refusal,
)
from seat_tools.resharding import check_shard_count, rebalance, spread
from seat_tools.seat_map_files import row_items
from seat_tools.simulation.memory_waitlist import (
    HOLDS,
    WAITLIST_APPLY,
    WAITLIST_CHECKS,
    MemoryLists,
    WaitlistMemory,
)

__all__ = ["InMemoryInventoryStore"]


@dataclass
class InMemoryInventoryStore(WaitlistMemory):
    """Behaves like the DynamoDB transactions: guards on the inventory, records and counters."""

    inventory: dict[SeatKey, SeatClassInventory] = field(default_factory=dict)
    records: dict[str, ReservationOutcome] = field(default_factory=dict)  # the original answers
    expiry: dict[str, int | None] = field(default_factory=dict)  # the TTL attribute
    status: dict[str, Outcome] = field(default_factory=dict)
    counted: set[str] = field(default_factory=set)  # records with customer_counted
    outbox: set[str] = field(default_factory=set)  # EXPIRED records awaiting publication
    counters: dict[tuple[SeatKey, str], int] = field(default_factory=dict)
    shard_of: dict[str, int] = field(default_factory=dict)  # records' `shard` when not 0
    change_ids: dict[str, str] = field(default_factory=dict)  # records' `last_change_id`
    taken_at: dict[tuple[SeatKey, int], float] = field(default_factory=dict)  # shard items' `last_taken_at`
    token_uses: dict[str, str] = field(default_factory=dict)  # admission token id -> reservation
    # Capacity pools (docs/guides/pools.md): (event, item) -> the pool item, where an item is named as a
    # record names it (`pool_ref`: the pool, `#<n>` after it for item n > 0 of a sharded pool);
    # records' `pool_names`.
    pools: dict[tuple[str, str], PoolInventory] = field(default_factory=dict)
    pools_of: dict[str, tuple[str, ...]] = field(default_factory=dict)
    transactions: int = 0
    inventory_writes: int = 0  # class, row and pool items written
    reads: int = 0
    batch_reads: int = 0
    surveys: int = 0
    fail_next: list[Exception] = field(default_factory=list)  # the next calls, whatever they are
    fail_next_commit: list[Exception] = field(default_factory=list)  # the next transactions only
    # Runs at the start of every commit: lets a test change the state "concurrently".
    before_commit: Callable[[], None] | None = None
    # Records the (eventually consistent) index still shows as live holds, as they were.
    stale_index: dict[str, ReservationRecord] = field(default_factory=dict)
    # Ticket numbers (`TicketStore`, docs/guides/tickets.md): sales waiting for numbers (-> when sold,
    # ms), the numbers given (-> series, first), the series' counters (next serial), the ledger
    # and its publication outbox, the events' numbering.
    awaiting_tickets: dict[str, int] = field(default_factory=dict)
    tickets: dict[str, tuple[int, int]] = field(default_factory=dict)
    ticket_counters: dict[TicketSeries, int] = field(default_factory=dict)
    ledger: dict[tuple[TicketSeries, int], TicketBatch] = field(default_factory=dict)
    ledger_unpublished: set[tuple[TicketSeries, int]] = field(default_factory=set)
    ticket_formats: dict[str, TicketFormat] = field(default_factory=dict)
    # Sales the (eventually consistent) index still lists as waiting though they were numbered.
    stale_unnumbered: dict[str, UnnumberedSale] = field(default_factory=dict)
    fail_next_numbers: list[Exception] = field(default_factory=list)  # before numbering commits
    lose_next_numbers_reply: list[Exception] = field(default_factory=list)  # after it committed
    before_numbers: Callable[[], None] | None = None  # runs at the start of commit_numbers
    number_commits: int = 0
    # Mapped seat classes (docs/guides/seat-maps.md): each event's map, and each class's row items.
    seat_maps: dict[str, SeatMap] = field(default_factory=dict)
    seat_rows: dict[SeatKey, dict[str, SeatRow]] = field(default_factory=dict)
    map_reads: int = 0
    # Claims on parts of mapped classes (`claim`): (class, part) -> (owner, until).
    claims: dict[tuple[SeatKey, str], tuple[str, float]] = field(default_factory=dict)
    clock_ms: Callable[[], int] = field(default=lambda: int(time.time() * 1000))
    # The waiting lists (docs/guides/waiting-list.md, `memory_waitlist`).
    waitlists: MemoryLists = field(default_factory=MemoryLists)

    def add_event(
        self,
        event_id: str,
        capacity: int,
        seat_class: str = "GA",
        *,
        max_per_customer: int | None = None,
        sale_status: SaleStatus = SaleStatus.OPEN,
        sale_starts_at: int | None = None,
        sale_ends_at: int | None = None,
        shards: int = 1,
        admission_required: bool = False,
        pools: Sequence[str] = (),
    ) -> None:
        check_shard_count(shards)
        self.inventory[SeatKey(event_id, seat_class)] = SeatClassInventory(
            event_id,
            seat_class,
            capacity,
            capacity,
            0,
            max_per_customer=max_per_customer,
            sale_status=sale_status,
            sale_starts_at=sale_starts_at,
            sale_ends_at=sale_ends_at,
            shards=()
            if shards == 1
            else tuple(ShardSeats(n, seats, seats, 0, 0) for n, seats in enumerate(spread(capacity, shards))),
            shard_count=shards,
            shard_items=shards,
            admission_required=admission_required,
            pools=tuple(sorted(pools)),
        )

    def add_pool(
        self,
        event_id: str,
        pool: str,
        capacity: int,
        *,
        sale_status: SaleStatus = SaleStatus.OPEN,
        shards: int = 1,
    ) -> None:
        """A capacity pool of the event (`seats event pool create`), all its seats available,
        spread over `shards` items."""
        check_shard_count(shards)
        for shard, seats in enumerate(spread(capacity, shards)):
            item = PoolInventory(
                event_id, pool, seats, seats, sale_status=sale_status, shard=shard, shard_count=shards
            )
            self.pools[(event_id, pool_ref(pool, shard))] = item

    def pool(self, event_id: str, pool: str) -> PoolInventory | None:
        """The pool as a whole (a sharded pool's totals, with its items in `shards`)."""
        head = self.pools.get((event_id, pool))
        if head is None or head.shard_count == 1:
            return head
        parts = [self.pools[(event_id, pool_ref(pool, n))] for n in range(head.shard_count)]
        return dataclasses.replace(
            head,
            capacity=sum(p.capacity for p in parts),
            available=sum(p.available for p in parts),
            held=sum(p.held for p in parts),
            sold=sum(p.sold for p in parts),
            shards=tuple(ShardSeats(p.shard, p.capacity, p.available, p.held, p.sold) for p in parts),
        )

    def reshard_pool(self, event_id: str, pool: str, shards: int) -> None:
        """`seats event pool reshard`: more items, available seats (and as much capacity) spread
        evenly over them; held and sold stay on the items they were taken from."""
        whole = self.pool(event_id, pool)
        assert whole is not None and shards >= whole.shard_count
        have = {s.shard: s for s in whole.shards} or {
            0: ShardSeats(0, whole.capacity, whole.available, whole.held, whole.sold)
        }
        for shard, seats in enumerate(spread(whole.available, shards)):
            old = have.get(shard, ShardSeats(shard, 0, 0, 0, 0))
            self.pools[(event_id, pool_ref(pool, shard))] = dataclasses.replace(
                whole,
                capacity=seats + old.held + old.sold,
                available=seats,
                held=old.held,
                sold=old.sold,
                shard=shard,
                shard_count=shards,
                shards=(),
            )

    def change_pool(self, event_id: str, pool: str, **changes: object) -> None:
        """An operator change of a pool (status, capacity with available), as `seats event pool`
        makes: a status on every item of a sharded pool, seats on its item 0."""
        head = self.pools[(event_id, pool)]
        for n in range(head.shard_count):
            ref = pool_ref(pool, n)
            mine = changes if n == 0 else {k: v for k, v in changes.items() if k == "sale_status"}
            self.pools[(event_id, ref)] = dataclasses.replace(self.pools[(event_id, ref)], **mine)  # type: ignore[arg-type]

    def add_seat_map(
        self,
        event_id: str,
        seat_map: SeatMap,
        *,
        max_per_customer: int | None = None,
        sale_status: SaleStatus = SaleStatus.OPEN,
        sale_starts_at: int | None = None,
        sale_ends_at: int | None = None,
        pools: Sequence[str] = (),
        admission_required: bool = False,
    ) -> None:
        """`SeatRows.create_seat_map`: the map and its row items, the sale rules on each."""
        self.seat_maps[event_id] = seat_map
        for name, class_map in seat_map.classes.items():
            key = SeatKey(event_id, name)
            self.seat_rows[key] = {
                item.row_id: SeatRow(
                    key,
                    item.row_id,
                    item.first,
                    item.size,
                    dict.fromkeys(item.blocked, SeatState.BLOCKED),
                    item.size - len(item.blocked),
                    0,
                    0,
                    max_per_customer,
                    sale_status,
                    sale_starts_at,
                    sale_ends_at,
                    tuple(sorted(pools)),
                    admission_required,
                )
                for item in row_items(class_map)
            }

    def change_rows(self, key: SeatKey, **changes: object) -> None:
        """A sale rule changed on every row item of a mapped class (as close/reopen would)."""
        rows = self.seat_rows[key]
        for row_id, row in rows.items():
            rows[row_id] = dataclasses.replace(row, **changes)  # type: ignore[arg-type]

    def read_seat_map(self, event_id: str) -> SeatMap | None:
        # Not one of the calls `fail_next` fails: the tests of counted classes inject faults
        # into the calls they make, and a group may ask first whether its class is mapped.
        self.map_reads += 1
        return self.seat_maps.get(event_id)

    def read_seat_rows(self, key: SeatKey, row_ids: Sequence[str] | None = None) -> dict[str, SeatRow]:
        self._maybe_fail()
        rows = self.seat_rows.get(key, {})
        if row_ids is None:
            return dict(rows)
        return {r: rows[r] for r in row_ids if r in rows}

    def claim(self, key: SeatKey, part: str, owner: str, *, now: float, until: float) -> bool:
        """`dal.seat_rows.SeatRows.claim`: granted when nobody holds the part, `owner` does, or
        the claim held ran out before `now`."""
        self._maybe_fail()
        held = self.claims.get((key, part))
        if held is not None and held[0] != owner and held[1] >= now:
            return False
        self.claims[(key, part)] = (owner, until)
        return True

    def reshard(self, key: SeatKey, shards: int) -> None:
        """`InventoryTable.reshard`: the available seats spread evenly over the first `shards` items."""
        item = self.inventory[key]
        changes = rebalance(item, shards)
        current = {s.shard: s for s in item.shard_seats()}
        moved = tuple(
            _add(current.get(n, ShardSeats(n, 0, 0, 0, 0)), capacity=change, available=change)
            for n, change in sorted(changes.items())
        )
        self.inventory[key] = _with_shards(
            dataclasses.replace(item, shard_count=shards, shard_items=len(moved)), moved
        )

    def change_item(self, key: SeatKey, **changes: object) -> None:
        """An operator change (status, window, limit, capacity), as the `seats event` commands make."""
        self.inventory[key] = dataclasses.replace(self.inventory[key], **changes)  # type: ignore[arg-type]

    def _maybe_fail(self) -> None:
        if self.fail_next:
            raise self.fail_next.pop(0)

    def _begin_commit(self) -> None:
        self.transactions += 1
        self._maybe_fail()
        if self.fail_next_commit:
            raise self.fail_next_commit.pop(0)
        if self.before_commit is not None:
            hook, self.before_commit = self.before_commit, None
            hook()

    # ------------------------------------------------------------------ InventoryStore

    def read_inventory(
        self, key: SeatKey, *, whole: bool = True, customers: Sequence[str] = ()
    ) -> SeatClassInventory | None:
        if customers:
            if whole:
                raise ValueError("customers' counters are read with shard 0 alone (whole=False)")
            view = self.read_inventory(key, whole=False)
            if view is None:
                return None
            counters = tuple((c, self.counters.get((key, c), 0)) for c in dict.fromkeys(customers))
            return dataclasses.replace(view, counters=counters)
        self.reads += 1
        self._maybe_fail()
        item = self.inventory.get(key)
        if item is not None and item.pools and (whole or item.shard_items == 1):
            # A whole read brings the class's pools along (`dal.access`), missing ones absent.
            found = (self.pool(key.event_id, name) for name in item.pools)
            return dataclasses.replace(item, pool_items=tuple(p for p in found if p is not None))
        if item is None or whole or item.shard_items == 1:
            return item
        # Shard 0 alone comes with each pool's item 0 (how many items it has, to route).
        heads = (self.pools.get((key.event_id, name)) for name in item.pools)
        view = _shard_view(item, item.shard_seats()[0])
        return (
            dataclasses.replace(view, pool_items=tuple(p for p in heads if p is not None))
            if item.pools
            else view
        )

    def read_pools(self, event_id: str, pools: Sequence[str]) -> dict[str, PoolInventory]:
        """`dal.access.TableAccess.read_pools`: each pool whole, missing ones absent."""
        self.reads += 1
        self._maybe_fail()
        found = {name: self.pool(event_id, name) for name in pools}
        return {name: pool for name, pool in found.items() if pool is not None}

    # ------------------------------------------------------------------ writes
    # Each action `seat_inventory.transaction` builds is checked against the state before the
    # transaction (its guard), then, when every guard held, applied: as `dal.expressions` writes it.

    def take(self, take: Take) -> WriteRefused | None:
        self._begin_commit()
        actions = take_actions(take)
        failures = self._failures(actions)
        if failures:
            return take_refusal(take, failures)
        self._apply(actions)
        return None

    def change_status(
        self,
        key: SeatKey,
        transitions: Sequence[Transition],
        *,
        now: int,
        capacity: int | None,
        release_expires_at: int,
        lists: Mapping[SeatKey, int] | None = None,
    ) -> TransitionsRefused | None:
        self._begin_commit()
        actions = status_actions(
            key, transitions, now=now, capacity=capacity, release_expires_at=release_expires_at, lists=lists
        )
        failures = self._failures(actions)
        if failures:
            return status_refusal(key, failures)
        self._apply(actions)
        return None

    def record_rejections(
        self, outcomes: Sequence[ReservationOutcome], *, expires_at: int
    ) -> WriteRefused | None:
        """Each record its own conditional put (as the DAL writes them)."""
        self._begin_commit()
        written: set[str] = set()
        recorded: dict[str, ReservationOutcome] = {}
        for outcome in outcomes:
            existing = self.put_record(outcome, expires_at)
            if existing is None:
                written.add(outcome.reservation_id)
            else:
                recorded[outcome.reservation_id] = existing
        if not recorded:
            return None
        return WriteRefused(False, None, already_recorded=recorded, written=frozenset(written))

    def _failures(self, actions: Sequence[Action]) -> list[Failure]:
        failures = []
        for action in actions:
            old = _CHECKS[type(action)](self, action)
            if old is not _HOLDS:
                failures.append((action, old))
        return failures

    def _apply(self, actions: Sequence[Action]) -> None:
        for action in actions:
            _APPLY[type(action)](self, action)
            self.inventory_writes += action.role in (Role.SEATS, Role.ROW, Role.POOL)

    def _shard(self, key: SeatKey, shard: int) -> tuple[SeatClassInventory | None, ShardSeats | None]:
        item = self.inventory.get(key)
        seats = {s.shard: s for s in item.shard_seats()}.get(shard) if item is not None else None
        return item, seats

    def _set_shard(self, key: SeatKey, shard: int, **change: int) -> None:
        item = self.inventory[key]
        shards = {s.shard: s for s in item.shard_seats()}
        shards[shard] = _add(shards[shard], **change)
        self.inventory[key] = _with_shards(item, tuple(shards[n] for n in sorted(shards)))

    def _check_take_seats(self, action: TakeSeats) -> object:
        item, seats = self._shard(action.key, action.shard)
        if item is None or seats is None:
            return None
        rules = action.rules
        if (
            seats.available < action.seats - action.moved
            or item.sale_closed_reason(_now(action.now)) is not None
            or item.max_per_customer != rules.max_per_customer
            or item.admission_required != rules.admission_required
            or item.pools != tuple(sorted(rules.pools))
        ):
            return _shard_view(item, seats)
        return _HOLDS

    def _apply_take_seats(self, action: TakeSeats) -> None:
        moved, sold = action.moved, action.seats - action.held
        change = {"capacity": moved, "available": moved - action.seats, "sold": sold, "held": action.held}
        self._set_shard(action.key, action.shard, **change)
        if action.taken_at is not None:
            self.taken_at[(action.key, action.shard)] = action.taken_at

    def _check_move_seats(self, action: MoveSeats) -> object:
        item, seats = self._shard(action.key, action.donor)
        if item is None or seats is None:
            return None
        return _shard_view(item, seats) if seats.available < action.seats else _HOLDS

    def _apply_move_seats(self, action: MoveSeats) -> None:
        self._set_shard(action.key, action.donor, capacity=-action.seats, available=-action.seats)

    def _check_take_row(self, action: TakeRow) -> object:
        row = self.seat_rows.get(action.key, {}).get(action.row_id)
        rules = action.rules
        if (
            row is None
            or any(p in row.states for p in action.positions)
            or row.sale_closed_reason(_now(action.now)) is not None
            or row.max_per_customer != rules.max_per_customer
            or row.pools != tuple(sorted(rules.pools))
            or row.admission_required != rules.admission_required
        ):
            return row
        return _HOLDS

    def _apply_take_row(self, action: TakeRow) -> None:
        rows = self.seat_rows[action.key]
        row = rows[action.row_id]
        state = SeatState.HELD if action.held else SeatState.SOLD
        taken = len(action.positions)
        rows[action.row_id] = dataclasses.replace(
            row,
            states={**row.states, **dict.fromkeys(action.positions, state)},
            available=row.available - taken,
            held=row.held + (taken if action.held else 0),
            sold=row.sold + (0 if action.held else taken),
        )

    def _check_put_record(self, action: PutRecord) -> object:
        existing = self.record(action.answer.reservation_id)
        return _HOLDS if existing is None else existing

    def _apply_put_record(self, action: PutRecord) -> None:
        answer, rid = action.answer, action.answer.reservation_id
        self.records[rid] = answer
        self.status[rid] = answer.outcome
        self.expiry[rid] = action.expires_at
        if action.counted:
            self.counted.add(rid)
        if action.shard:
            self.shard_of[rid] = action.shard
        if action.pools:
            self.pools_of[rid] = action.pools
        if answer.outcome is Outcome.CONFIRMED:
            self.awaiting_tickets[rid] = self.clock_ms()

    def _check_count_customer(self, action: CountCustomer) -> object:
        seats = self.counters.get((action.key, action.customer))
        return seats if seats is not None and seats > action.limit - action.seats else _HOLDS

    def _apply_count_customer(self, action: CountCustomer) -> None:
        counter = (action.key, action.customer)
        self.counters[counter] = self.counters.get(counter, 0) + action.seats

    def _check_use_token(self, action: UseToken) -> object:
        holder = self.token_uses.get(action.use.token_id)
        return holder if holder is not None and holder != action.use.reservation_id else _HOLDS

    def _apply_use_token(self, action: UseToken) -> None:
        self.token_uses[action.use.token_id] = action.use.reservation_id

    def _check_take_from_pool(self, action: TakeFromPool) -> object:
        pool = self.pools.get((action.event_id, pool_ref(action.pool, action.item)))
        if (
            pool is None
            or pool.available < action.seats - action.moved
            or pool.sale_status is SaleStatus.CLOSED
        ):
            return pool
        return _HOLDS

    def _apply_take_from_pool(self, action: TakeFromPool) -> None:
        sold = action.seats - action.held
        change = {"capacity": action.moved, "available": action.moved - action.seats, "held": action.held}
        self._set_pool(action.event_id, pool_ref(action.pool, action.item), sold=sold, **change)

    def _check_move_pool_seats(self, action: MovePoolSeats) -> object:
        pool = self.pools.get((action.event_id, pool_ref(action.pool, action.donor)))
        return pool if pool is None or pool.available < action.seats else _HOLDS

    def _apply_move_pool_seats(self, action: MovePoolSeats) -> None:
        ref = pool_ref(action.pool, action.donor)
        self._set_pool(action.event_id, ref, capacity=-action.seats, available=-action.seats)

    def _set_pool(self, event_id: str, ref: str, **change: int) -> None:
        pool = self.pools[(event_id, ref)]
        self.pools[(event_id, ref)] = dataclasses.replace(
            pool, **{name: getattr(pool, name) + delta for name, delta in change.items()}
        )

    def _check_return_seats(self, action: ReturnSeats) -> object:
        item, seats = self._shard(action.key, action.shard)
        if item is None or seats is None:
            return None
        delta, capacity = action.delta, action.capacity
        capacity_refuses = (
            delta.released > 0
            and capacity is not None
            and (seats.capacity != capacity or seats.available > capacity - delta.released)
        )
        rule_refuses = action.waitlist is not None and item.waitlist != action.waitlist
        if seats.held < delta.unheld or seats.sold < delta.unsold or capacity_refuses or rule_refuses:
            return _shard_view(item, seats)
        return _HOLDS

    def _apply_return_seats(self, action: ReturnSeats) -> None:
        delta = action.delta
        change = {
            "available": delta.released,
            "held": delta.listed - delta.unheld,
            "sold": delta.sold - delta.unsold,
        }
        self._set_shard(action.key, action.shard, **change)

    def _check_release_row(self, action: ReleaseRow) -> object:
        row = self.seat_rows.get(action.key, {}).get(action.row_id)
        if row is None or any(row.states.get(p) is not was for p, was, _ in action.seats):
            return row
        if action.waitlist is not None and row.waitlist != action.waitlist:
            return row
        if action.now is not None and row.sale_closed_reason(action.now) is not None:
            return row
        return _HOLDS

    def _apply_release_row(self, action: ReleaseRow) -> None:
        rows = self.seat_rows[action.key]
        row = rows[action.row_id]
        states = dict(row.states)
        counts = {"available": row.available, "held": row.held, "sold": row.sold}
        for p, was, after in action.seats:
            counts[_COUNTS[was]] -= 1
            counts[_COUNTS[after]] += 1
            if after is None:
                del states[p]
            else:
                states[p] = after
        rows[action.row_id] = dataclasses.replace(
            row, states=states, available=counts["available"], held=counts["held"], sold=counts["sold"]
        )

    def _check_change_status(self, action: ChangeStatus) -> object:
        t = action.transition
        current = self.record(t.record.reservation_id)
        if current is None or current.status is not t.record.status:
            return current
        due = (current.hold_expires_at or 0) <= action.now
        if current.status is Outcome.HELD and due != (t.to is Outcome.EXPIRED):
            return current
        return _HOLDS

    def _apply_change_status(self, action: ChangeStatus) -> None:
        t = action.transition
        reservation_id = t.record.reservation_id
        self.status[reservation_id] = t.to
        if t.change_id is not None:
            self.change_ids[reservation_id] = t.change_id
        if t.to is Outcome.EXPIRED:
            self.outbox.add(reservation_id)
        elif t.to is Outcome.CONFIRMED:
            self.awaiting_tickets[reservation_id] = self.clock_ms()
        elif t.to is Outcome.CANCELLED and t.record.status is Outcome.HELD:
            self.expiry[reservation_id] = action.release_expires_at

    def _check_uncount_customer(self, action: UncountCustomer) -> object:
        seats = self.counters.get((action.key, action.customer), -1)
        return (seats if seats >= 0 else None) if seats < action.seats else _HOLDS

    def _apply_uncount_customer(self, action: UncountCustomer) -> None:
        self.counters[(action.key, action.customer)] -= action.seats

    def _check_return_pool_seats(self, action: ReturnPoolSeats) -> object:
        pool = self.pools.get((action.event_id, action.ref))
        if pool is None or pool.held < action.delta.unheld or pool.sold < action.delta.unsold:
            return pool
        return _HOLDS

    def _apply_return_pool_seats(self, action: ReturnPoolSeats) -> None:
        delta = action.delta
        change = {
            "available": delta.released,
            "held": delta.listed - delta.unheld,
            "sold": delta.sold - delta.unsold,
        }
        self._set_pool(action.event_id, action.ref, **change)

    def survey_shards(self, key: SeatKey, shard_items: int) -> list[ShardSurvey]:
        self.surveys += 1
        self._maybe_fail()
        item = self.inventory.get(key)
        if item is None:
            return []
        return [
            ShardSurvey(s.shard, s.available, self.taken_at.get((key, s.shard)))
            for s in item.shard_seats()
            if s.shard < shard_items
        ]

    def put_record(self, outcome: ReservationOutcome, expires_at: int) -> ReservationOutcome | None:
        """One rejection's record, written unless it exists (a PutItem with `attribute_not_exists`):
        None when written, else the answer stored with it."""
        if outcome.outcome in (Outcome.CONFIRMED, Outcome.HELD):
            raise ValueError(f"{outcome.reservation_id!r} takes seats: it needs the inventory")
        existing = self.records.get(outcome.reservation_id)
        if existing is not None:
            return existing
        self.records[outcome.reservation_id] = outcome
        self.status[outcome.reservation_id] = outcome.outcome
        self.expiry[outcome.reservation_id] = expires_at
        return None

    def record(self, reservation_id: str) -> ReservationRecord | None:
        """The record as `read_reservations` returns it."""
        answer = self.records.get(reservation_id)
        if answer is None:
            return None
        return ReservationRecord(
            answer=answer,
            status=self.status[reservation_id],
            hold_expires_at=answer.hold_expires_at,
            customer_counted=reservation_id in self.counted,
            awaiting_publication=reservation_id in self.outbox,
            shard=self.shard_of.get(reservation_id, 0),
            last_change_id=self.change_ids.get(reservation_id),
            awaiting_tickets=reservation_id in self.awaiting_tickets,
            ticket_series=self.tickets[reservation_id][0] if reservation_id in self.tickets else None,
            ticket_first=self.tickets[reservation_id][1] if reservation_id in self.tickets else None,
            pools=self.pools_of.get(reservation_id, ()),
            waitlist_place=self.waitlists.record_places.get(reservation_id),
        )

    def read_reservations(self, reservation_ids: Sequence[str]) -> dict[str, ReservationRecord]:
        self.batch_reads += 1
        self._maybe_fail()
        found = {i: self.record(i) for i in reservation_ids}
        return {i: r for i, r in found.items() if r is not None}

    # ------------------------------------------------------------------ HoldStore

    def find_expired_holds(self, now: int, limit: int) -> list[ReservationRecord]:
        self._maybe_fail()
        live = [r for r in (self.record(i) for i in self.records) if r and r.status is Outcome.HELD]
        due = {r.reservation_id: r for r in live if (r.hold_expires_at or 0) <= now}
        for reservation_id, stale in self.stale_index.items():
            if (stale.hold_expires_at or 0) <= now:
                due.setdefault(reservation_id, stale)
        return sorted(due.values(), key=lambda r: r.hold_expires_at or 0)[:limit]

    def find_unpublished_expiries(self, limit: int) -> list[ReservationRecord]:
        self._maybe_fail()
        found = [self.record(i) for i in sorted(self.outbox)]
        return [r for r in found if r is not None][:limit]

    def mark_expiries_published(self, records: Sequence[ReservationRecord], *, expires_at: int) -> int:
        cleared = 0
        for record in records:
            if record.reservation_id in self.outbox:
                self.outbox.discard(record.reservation_id)
                self.expiry[record.reservation_id] = expires_at
                cleared += 1
        return cleared

    # ------------------------------------------------------------------ TicketStore

    def find_unnumbered(self, limit: int, lane: IssuerLane = WHOLE_INDEX) -> list[UnnumberedSale]:
        self._maybe_fail()
        found = {
            rid: UnnumberedSale(rid, self.records[rid].event_id or "", self.records[rid].quantity or 0, ms)
            for rid, ms in self.awaiting_tickets.items()
            if lane.takes_sale(rid)
        }
        for rid, stale in self.stale_unnumbered.items():
            if lane.takes_sale(rid):
                found.setdefault(rid, stale)
        return sorted(found.values(), key=lambda s: (s.sold_at_ms, s.reservation_id))[:limit]

    def read_ticket_format(self, event_id: str) -> TicketFormat:
        self._maybe_fail()
        return self.ticket_formats.get(event_id, TicketFormat())

    def read_next_number(self, series: TicketSeries) -> int:
        self._maybe_fail()
        return self.ticket_counters.get(series, 1)

    def commit_numbers(self, batch: TicketBatch) -> NumbersRefused | None:
        self.number_commits += 1
        self._maybe_fail()
        if self.fail_next_numbers:
            raise self.fail_next_numbers.pop(0)
        if self.before_numbers is not None:
            hook, self.before_numbers = self.before_numbers, None
            hook()
        current = self.ticket_counters.get(batch.series, 1)
        not_waiting = frozenset(
            a.reservation_id
            for a in batch.assignments
            if a.reservation_id not in self.awaiting_tickets or a.reservation_id in self.tickets
        )
        if current != batch.first or not_waiting:
            return NumbersRefused(
                counter_next=current if current != batch.first else None, not_waiting=not_waiting
            )
        if (batch.series, batch.first) in self.ledger:
            raise RuntimeError(f"ledger already has {batch.series} at {batch.first}")
        self.ticket_counters[batch.series] = batch.next_after
        for a in batch.assignments:
            self.tickets[a.reservation_id] = (batch.series.series, a.first)
            del self.awaiting_tickets[a.reservation_id]
        self.ledger[(batch.series, batch.first)] = batch
        self.ledger_unpublished.add((batch.series, batch.first))
        if self.lose_next_numbers_reply:
            raise self.lose_next_numbers_reply.pop(0)
        return None

    def find_unpublished_batches(self, limit: int, lane: IssuerLane = WHOLE_INDEX) -> list[TicketBatch]:
        self._maybe_fail()
        return [
            self.ledger[k]
            for k in sorted(self.ledger_unpublished, key=lambda k: (k[0].event_id, k[0].series, k[1]))
            if lane.takes_series(k[0].series)
        ][:limit]

    def mark_batches_published(self, batches: Sequence[TicketBatch]) -> int:
        cleared = 0
        for batch in batches:
            key = (batch.series, batch.first)
            if key in self.ledger_unpublished:
                self.ledger_unpublished.discard(key)
                cleared += 1
        return cleared


# How each state of a seat counts on its row item (a seat the waiting list holds is held).
_COUNTS = {SeatState.HELD: "held", SeatState.LISTED: "held", SeatState.SOLD: "sold", None: "available"}
_HOLDS = HOLDS  # a guard that held (any other check result is the refused item as it was)
_CHECKS: dict[type, Callable[..., object]] = {
    **WAITLIST_CHECKS,
    TakeSeats: InMemoryInventoryStore._check_take_seats,
    MoveSeats: InMemoryInventoryStore._check_move_seats,
    TakeRow: InMemoryInventoryStore._check_take_row,
    PutRecord: InMemoryInventoryStore._check_put_record,
    CountCustomer: InMemoryInventoryStore._check_count_customer,
    UseToken: InMemoryInventoryStore._check_use_token,
    TakeFromPool: InMemoryInventoryStore._check_take_from_pool,
    MovePoolSeats: InMemoryInventoryStore._check_move_pool_seats,
    ReturnSeats: InMemoryInventoryStore._check_return_seats,
    ReleaseRow: InMemoryInventoryStore._check_release_row,
    ChangeStatus: InMemoryInventoryStore._check_change_status,
    UncountCustomer: InMemoryInventoryStore._check_uncount_customer,
    ReturnPoolSeats: InMemoryInventoryStore._check_return_pool_seats,
}
_APPLY: dict[type, Callable[..., None]] = {
    **WAITLIST_APPLY,
    TakeSeats: InMemoryInventoryStore._apply_take_seats,
    MoveSeats: InMemoryInventoryStore._apply_move_seats,
    TakeRow: InMemoryInventoryStore._apply_take_row,
    PutRecord: InMemoryInventoryStore._apply_put_record,
    CountCustomer: InMemoryInventoryStore._apply_count_customer,
    UseToken: InMemoryInventoryStore._apply_use_token,
    TakeFromPool: InMemoryInventoryStore._apply_take_from_pool,
    MovePoolSeats: InMemoryInventoryStore._apply_move_pool_seats,
    ReturnSeats: InMemoryInventoryStore._apply_return_seats,
    ReleaseRow: InMemoryInventoryStore._apply_release_row,
    ChangeStatus: InMemoryInventoryStore._apply_change_status,
    UncountCustomer: InMemoryInventoryStore._apply_uncount_customer,
    ReturnPoolSeats: InMemoryInventoryStore._apply_return_pool_seats,
}


def _now(now: int | None) -> int:
    return int(time.time()) if now is None else now


def _add(
    shard: ShardSeats, *, capacity: int = 0, available: int = 0, held: int = 0, sold: int = 0
) -> ShardSeats:
    return ShardSeats(
        shard.shard,
        shard.capacity + capacity,
        shard.available + available,
        shard.held + held,
        shard.sold + sold,
    )


def _with_shards(item: SeatClassInventory, shards: tuple[ShardSeats, ...]) -> SeatClassInventory:
    """The class with these shard items, its totals their sums (a class of one item lists none)."""
    return dataclasses.replace(
        item,
        capacity=sum(s.capacity for s in shards),
        available=sum(s.available for s in shards),
        held=sum(s.held for s in shards),
        sold=sum(s.sold for s in shards),
        shards=() if len(shards) == 1 and item.shard_items == 1 else shards,
    )


def _shard_view(item: SeatClassInventory, shard: ShardSeats) -> SeatClassInventory:
    """What a refused write on one shard item hands back, as `dal.items.inventory_from_item` builds it."""
    if item.shard_items == 1:
        return item
    return dataclasses.replace(
        item,
        capacity=shard.capacity,
        available=shard.available,
        held=shard.held,
        sold=shard.sold,
        shards=(shard,),
        shard_items=item.shard_items if shard.shard == 0 else 0,
    )
