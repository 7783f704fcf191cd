"""An in-memory inventory store with the semantics of `dal.inventory_table.InventoryTable`.

It has the same guards (seats, sale status and window, the assumed per-customer limit, counters,
the status a record was read with, the capacity), the same refusal reports (the item or record
as it was), and writes nothing when any guard fails, except in a group without seats, whose
records are written one by one as the DAL's PutItems are (`put_record`). Unit tests use it as
the store's fake, and `seats simulate` runs the service's logic against it (wrapped in
`simulation.dynamodb`, which adds DynamoDB's conflicts, throttling, latency and write units).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from seat_inventory.logic.ports import TransitionsRefused, WriteRefused
from seat_inventory.logic.seat_map import SeatMap, row_item_of, row_items
from seat_inventory.logic.shards import check_shard_count, rebalance, spread
from seat_inventory.models import (
    GroupWrite,
    NumbersRefused,
    Outcome,
    PoolInventory,
    PoolItemChange,
    ReservationOutcome,
    ReservationRecord,
    SaleStatus,
    SeatClassInventory,
    SeatKey,
    SeatRow,
    SeatState,
    ShardSeats,
    ShardSurvey,
    StoreInconsistency,
    TicketBatch,
    TicketFormat,
    TicketSeries,
    Transition,
    UnnumberedSale,
    check_writes_together,
    pool_item_changes,
    pool_ref,
)

__all__ = ["InMemoryInventoryStore"]


@dataclass
class InMemoryInventoryStore:
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
    inventory_writes: int = 0
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

    def _commit_rows(self, write: GroupWrite) -> WriteRefused | None:
        """A mapped take (`dal.seat_rows.take_rows_actions`): every seat free on its row item, the
        sale open, the limit, pools and admission rule the ones assumed; the record new; the
        counters under the limit; the tokens unused; each pool's item with the seats, open."""
        refused = self._rows_part(write)
        pools_refused = self._pools_refused(write, 0)
        if refused is not None or pools_refused:
            return dataclasses.replace(
                refused or WriteRefused(inventory_refused=False, inventory=None), pools_refused=pools_refused
            )
        self._take_rows(write)
        self._take_from_pools(write)
        self._write_records(write)
        return None

    def _rows_part(self, write: GroupWrite) -> WriteRefused | None:
        """What refuses a mapped take: its row items' guards, its records and its counters."""
        now = int(time.time()) if write.now is None else write.now
        rows = self.seat_rows.get(write.key, {})
        refused_rows: dict[str, SeatRow | None] = {}
        for row_id, positions in write.rows.items():
            row = rows.get(row_id)
            if (
                row is None
                or any(p in row.states for p in positions)
                or row.sale_closed_reason(now) is not None
                or row.max_per_customer != write.max_per_customer
                or row.pools != tuple(sorted(write.pools))
                or row.admission_required != write.admission_required
            ):
                refused_rows[row_id] = row
        refused = self._refusal(dataclasses.replace(write, seats_taken=0), check_pools=False)
        if not refused_rows and refused is None:
            return None
        return WriteRefused(
            inventory_refused=bool(refused_rows),
            inventory=None,
            already_recorded=refused.already_recorded if refused else {},
            customer_seats=refused.customer_seats if refused else {},
            tokens_used=refused.tokens_used if refused else {},
            rows=refused_rows,
        )

    def _take_rows(self, write: GroupWrite) -> None:
        """The seats of a mapped take become held or sold on their row items."""
        rows = self.seat_rows[write.key]
        state = SeatState.HELD if write.seats_held else SeatState.SOLD
        for row_id, positions in write.rows.items():
            row = rows[row_id]
            states = dict(row.states)
            states.update(dict.fromkeys(positions, state))
            rows[row_id] = dataclasses.replace(
                row,
                states=states,
                available=row.available - len(positions),
                held=row.held + (len(positions) if state is SeatState.HELD else 0),
                sold=row.sold + (len(positions) if state is SeatState.SOLD else 0),
            )
        self.inventory_writes += len(write.rows)

    def _write_records(self, write: GroupWrite) -> None:
        for outcome in write.outcomes:
            takes_seats = outcome.outcome in (Outcome.CONFIRMED, Outcome.HELD)
            self.records[outcome.reservation_id] = outcome
            self.status[outcome.reservation_id] = outcome.outcome
            self.expiry[outcome.reservation_id] = None if takes_seats else write.rejection_expires_at
            if takes_seats and write.max_per_customer is not None:
                self.counted.add(outcome.reservation_id)
            if takes_seats and write.pools:
                self.pools_of[outcome.reservation_id] = write.pool_refs
            if outcome.outcome is Outcome.CONFIRMED:
                self.awaiting_tickets[outcome.reservation_id] = self.clock_ms()
        for customer, seats in write.counters.items():
            self.counters[(write.key, customer)] = self.counters.get((write.key, customer), 0) + seats
        for use in write.token_uses:
            self.token_uses[use.token_id] = use.reservation_id

    def _rows_refuse(self, changes: dict[tuple[SeatKey, str], list[tuple[int, SeatState, bool]]]) -> bool:
        """Whether a seat given back or sold is not in the state its record says (or its row item
        is missing): `dal.seat_rows.release_rows_actions`' guards."""
        for (key, row_id), seats in changes.items():
            row = self.seat_rows.get(key, {}).get(row_id)
            if row is None or any(row.states.get(p) is not was for p, was, _ in seats):
                return True
        return False

    def _change_rows(self, changes: dict[tuple[SeatKey, str], list[tuple[int, SeatState, bool]]]) -> None:
        """Each seat sold (confirm) or freed (cancel, expiry) on its row item, the counts with it."""
        for (key, row_id), seats in changes.items():
            rows = self.seat_rows[key]
            row = rows[row_id]
            states = dict(row.states)
            available, held, sold = row.available, row.held, row.sold
            for p, was, sells in seats:
                if was is SeatState.HELD:
                    held -= 1
                else:
                    sold -= 1
                if sells:
                    states[p] = SeatState.SOLD
                    sold += 1
                else:
                    del states[p]
                    available += 1
            rows[row_id] = dataclasses.replace(row, states=states, available=available, held=held, sold=sold)
        self.inventory_writes += len(changes)

    def _refused_records(
        self, transitions: Sequence[Transition], now: int
    ) -> dict[str, ReservationRecord | None]:
        refused: dict[str, ReservationRecord | None] = {}
        for t in transitions:
            current = self.record(t.record.reservation_id)
            if current is None or current.status is not t.record.status:
                refused[t.record.reservation_id] = current
            elif current.status is Outcome.HELD:
                due = (current.hold_expires_at or 0) <= now
                if due != (t.to is Outcome.EXPIRED):
                    refused[t.record.reservation_id] = current
        return refused

    def _apply_transitions(
        self,
        transitions: Sequence[Transition],
        uncount: dict[tuple[SeatKey, str], int],
        release_expires_at: int,
    ) -> None:
        for t in transitions:
            reservation_id = t.record.reservation_id
            self.status[reservation_id] = t.to
            if t.change_id is not None:
                self.change_ids[reservation_id] = t.change_id
            if t.to is Outcome.EXPIRED:
                self.outbox.add(reservation_id)
            elif t.to is Outcome.CONFIRMED:
                self.awaiting_tickets[reservation_id] = self.clock_ms()
            elif t.to is Outcome.CANCELLED and t.record.status is Outcome.HELD:
                self.expiry[reservation_id] = release_expires_at
        for counter, seats in uncount.items():
            self.counters[counter] -= seats

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

    def commit_outcomes(self, write: GroupWrite | Sequence[GroupWrite]) -> WriteRefused | None:
        self._begin_commit()
        if not isinstance(write, GroupWrite):
            return self._commit_together(list(write))
        if write.records_only:
            return self._put_records(write.outcomes, write.rejection_expires_at)
        if write.rows:
            return self._commit_rows(write)
        refused = self._refusal(write)
        if refused is not None:
            return refused
        self._apply_write(write)
        return None

    def _commit_together(self, writes: Sequence[GroupWrite]) -> WriteRefused | None:
        """Several writes in one transaction (`dal.reservations.Reservations._commit_together`):
        every write's guards and the pools' (on the seats of all writes that take from each)
        are checked first, and nothing is written when any refuses."""
        if not writes:
            return None
        check_writes_together(writes)
        for w in writes:
            for name in w.pools:
                donors = w.pool_donors(name)
                if w.pool_shards.get(name, 0) in donors or sum(donors.values()) > w.seats_taken:
                    raise ValueError(f"moves {donors} of pool {name} do not fit {w.seats_taken} seat(s)")
        parts = tuple(self._rows_part(w) if w.rows else self._refusal(w, check_pools=False) for w in writes)
        event_id = writes[0].key.event_id
        # One update per pool item (`models.pool_item_changes`), guarded on what all lines need
        # of it; the first refusing item of a pool is handed back (a view of that item alone).
        changes = pool_item_changes(writes)
        pools_refused: dict[str, PoolInventory | None] = {}
        for (name, shard), change in changes.items():
            pool = self.pools.get((event_id, pool_ref(name, shard)))
            if name not in pools_refused and (
                pool is None
                or pool.available < change.needs
                or (change.takers and pool.sale_status is SaleStatus.CLOSED)
            ):
                pools_refused[name] = pool
        found = [p for p in parts if p is not None]
        if not found and not pools_refused:
            for w in writes:
                if w.rows:
                    self._take_rows(w)
                    self._write_records(w)
                else:
                    self._apply_write(w, pools=False)
            self._change_pool_items(event_id, changes)
            return None
        first_item = next((p for p in found if p.inventory_refused), None)
        return WriteRefused(
            inventory_refused=first_item is not None,
            inventory=first_item.inventory if first_item is not None else None,
            already_recorded={k: v for p in found for k, v in p.already_recorded.items()},
            customer_seats={k: v for p in found for k, v in p.customer_seats.items()},
            tokens_used={k: v for p in found for k, v in p.tokens_used.items()},
            pools_refused=pools_refused,
            parts=parts,
        )

    def _apply_write(self, write: GroupWrite, *, pools: bool = True) -> None:
        """Writes what a write whose guards all held takes and records (without `pools`, not
        its pools: writes committed together change each pool item once)."""
        if write.seats_taken > 0:
            self._take_seats(write)
            if pools:
                self._take_from_pools(write)
        for outcome in write.outcomes:
            takes_seats = outcome.outcome in (Outcome.CONFIRMED, Outcome.HELD)
            self.records[outcome.reservation_id] = outcome
            if takes_seats and write.shard:
                self.shard_of[outcome.reservation_id] = write.shard
            if takes_seats and write.pools:
                self.pools_of[outcome.reservation_id] = write.pool_refs
            self.status[outcome.reservation_id] = outcome.outcome
            self.expiry[outcome.reservation_id] = None if takes_seats else write.rejection_expires_at
            if takes_seats and write.max_per_customer is not None:
                self.counted.add(outcome.reservation_id)
            if outcome.outcome is Outcome.CONFIRMED:
                self.awaiting_tickets[outcome.reservation_id] = self.clock_ms()
        for customer, seats in write.counters.items():
            self.counters[(write.key, customer)] = self.counters.get((write.key, customer), 0) + seats
        for use in write.token_uses:
            self.token_uses[use.token_id] = use.reservation_id

    def _pools_refused(self, write: GroupWrite, now: int) -> dict[str, PoolInventory | None]:
        """The write's pools whose guard fails: missing, too few seats, or closed."""
        if write.seats_taken <= 0:
            return {}
        refused: dict[str, PoolInventory | None] = {}
        for name in write.pools:
            target = write.pool_shards.get(name, 0)
            donors = write.pool_donors(name)
            pool = self.pools.get((write.key.event_id, pool_ref(name, target)))
            if (
                pool is None
                or pool.available + sum(donors.values()) < write.seats_taken
                or pool.sale_status is SaleStatus.CLOSED
            ):
                refused[name] = pool
                continue
            for donor, seats in donors.items():
                # Each donor is guarded by `available >=` what it gives (`dal.reservations`).
                given = self.pools.get((write.key.event_id, pool_ref(name, donor)))
                if given is None or given.available < seats:
                    refused[name] = given
                    break
        return refused

    def _take_from_pools(self, write: GroupWrite) -> None:
        held = write.seats_held
        event_id = write.key.event_id
        for name in write.pools:
            donors = write.pool_donors(name)
            for donor, seats in donors.items():
                given = self.pools[(event_id, pool_ref(name, donor))]
                self.pools[(event_id, pool_ref(name, donor))] = dataclasses.replace(
                    given, capacity=given.capacity - seats, available=given.available - seats
                )
            ref = pool_ref(name, write.pool_shards.get(name, 0))
            pool = self.pools[(event_id, ref)]
            moved = sum(donors.values())
            self.pools[(event_id, ref)] = dataclasses.replace(
                pool,
                capacity=pool.capacity + moved,
                available=pool.available + moved - write.seats_taken,
                held=pool.held + held,
                sold=pool.sold + write.seats_taken - held,
            )
            self.inventory_writes += 1 + len(donors)

    def _change_pool_items(self, event_id: str, changes: Mapping[tuple[str, int], PoolItemChange]) -> None:
        """Each pool item's change of writes committed together, once (`dal.reservations`)."""
        for (name, shard), change in changes.items():
            ref = pool_ref(name, shard)
            pool = self.pools[(event_id, ref)]
            moved = change.moved_in - change.moved_out
            self.pools[(event_id, ref)] = dataclasses.replace(
                pool,
                capacity=pool.capacity + moved,
                available=pool.available + moved - change.taken,
                held=pool.held + change.held,
                sold=pool.sold + change.taken - change.held,
            )
            self.inventory_writes += 1

    def _refusal(self, write: GroupWrite, *, check_pools: bool = True) -> WriteRefused | None:
        """What the write's conditions refuse (as DynamoDB's cancellation reasons tell), or None;
        without `check_pools`, the pools' own guards are left out (the caller checks them)."""
        now = int(time.time()) if write.now is None else write.now
        item = self.inventory.get(write.key)
        moves = write.donors
        shards = {s.shard: s for s in item.shard_seats()} if item is not None else {}
        refusing: SeatClassInventory | None = None
        inventory_refused = False
        if write.seats_taken > 0:
            target = shards.get(write.shard)
            if item is None or target is None:
                inventory_refused = True
            elif (
                target.available < write.seats_taken - sum(moves.values())
                or item.sale_closed_reason(now) is not None
                or item.max_per_customer != write.max_per_customer
                or item.admission_required != write.admission_required
                or item.pools != tuple(sorted(write.pools))
            ):
                inventory_refused, refusing = True, _shard_view(item, target)
            else:
                for donor, seats in moves.items():
                    if donor not in shards or shards[donor].available < seats:
                        inventory_refused = True
                        if donor in shards:
                            refusing = _shard_view(item, shards[donor])
                        break
        recorded = {
            o.reservation_id: self.records[o.reservation_id]
            for o in write.outcomes
            if o.reservation_id in self.records
        }
        limit = write.max_per_customer
        refused_counters = {
            customer: self.counters[(write.key, customer)]
            for customer, seats in write.counters.items()
            if (write.key, customer) in self.counters
            and limit is not None
            and self.counters[(write.key, customer)] > limit - seats
        }
        # A token use is written if no reservation used it, or this one did (a redelivery).
        tokens_used = {
            use.token_id: self.token_uses[use.token_id]
            for use in write.token_uses
            if self.token_uses.get(use.token_id, use.reservation_id) != use.reservation_id
        }
        pools_refused = self._pools_refused(write, now) if check_pools else {}
        if not (inventory_refused or recorded or refused_counters or tokens_used or pools_refused):
            return None
        return WriteRefused(
            inventory_refused=inventory_refused,
            inventory=refusing,
            already_recorded=recorded,
            customer_seats=refused_counters,
            tokens_used=tokens_used,
            pools_refused=pools_refused,
        )

    def _take_seats(self, write: GroupWrite) -> None:
        """Takes the write's seats from its shard item, after moving the donors' seats into it."""
        item = self.inventory[write.key]
        shards = {s.shard: s for s in item.shard_seats()}
        moves = write.donors
        held = write.seats_held
        moved = sum(moves.values())
        self.inventory_writes += 1 + len(moves)
        for donor, seats in moves.items():
            shards[donor] = _add(shards[donor], capacity=-seats, available=-seats)
        shards[write.shard] = _add(
            shards[write.shard],
            capacity=moved,
            available=moved - write.seats_taken,
            sold=write.seats_taken - held,
            held=held,
        )
        self.inventory[write.key] = _with_shards(item, tuple(shards[n] for n in sorted(shards)))
        if write.taken_at is not None:
            self.taken_at[(write.key, write.shard)] = write.taken_at

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

    def _put_records(self, outcomes: Sequence[ReservationOutcome], expires_at: int) -> WriteRefused | None:
        """A group without seats: each record is its own conditional put (as the DAL writes it)."""
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
        return WriteRefused(
            inventory_refused=False, inventory=None, already_recorded=recorded, written=frozenset(written)
        )

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
        )

    def read_reservations(self, reservation_ids: Sequence[str]) -> dict[str, ReservationRecord]:
        self.batch_reads += 1
        self._maybe_fail()
        found = {i: self.record(i) for i in reservation_ids}
        return {i: r for i, r in found.items() if r is not None}

    def commit_transitions(
        self,
        key: SeatKey,
        transitions: Sequence[Transition],
        *,
        now: int,
        capacity: int | None,
        release_expires_at: int,
    ) -> TransitionsRefused | None:
        self._begin_commit()
        deltas, rows, uncount = _transition_moves(transitions)
        inventory_refused, refusing = self._items_refusing(key, deltas, capacity)
        refused_records = self._refused_records(transitions, now)
        if self._rows_refuse(rows) and not refused_records:
            raise StoreInconsistency(f"{key}: seats are not in the state their records say")
        refused_counters = frozenset(c for k, c in uncount if self.counters.get((k, c), -1) < uncount[(k, c)])
        pool_deltas = _pool_deltas(transitions)
        refused_pools = self._pools_refusing(key.event_id, pool_deltas)
        if inventory_refused or refused_records or refused_counters or refused_pools:
            return TransitionsRefused(
                inventory_refused=inventory_refused,
                inventory=refusing,
                records=refused_records,
                counters_refused=refused_counters,
                pools_refused=refused_pools,
            )
        self.inventory_writes += len(deltas)
        for item_key in sorted({k for k, _ in deltas}, key=lambda k: k.seat_class):
            item = self.inventory[item_key]
            shards = {s.shard: s for s in item.shard_seats()}
            for (k, n), (released, unheld, unsold, sold) in deltas.items():
                if k == item_key:
                    shards[n] = _add(shards[n], available=released, held=-unheld, sold=sold - unsold)
            self.inventory[item_key] = _with_shards(item, tuple(shards[n] for n in sorted(shards)))
        self._change_rows(rows)
        self._apply_transitions(transitions, uncount, release_expires_at)
        self._give_back_to_pools(key.event_id, pool_deltas)
        return None

    def _items_refusing(
        self, key: SeatKey, deltas: dict[tuple[SeatKey, int], list[int]], capacity: int | None
    ) -> tuple[bool, SeatClassInventory | None]:
        """Whether a status change's inventory guards refuse (an item missing, fewer held or sold
        seats than it takes off, `capacity` not that of `key`'s shard 0), and the item that does."""
        for item_key, n in sorted(deltas, key=lambda k: (k[0].seat_class, k[1])):
            released, unheld, unsold, _ = deltas[(item_key, n)]
            item = self.inventory.get(item_key)
            seats_of = {s.shard: s for s in item.shard_seats()}.get(n) if item is not None else None
            if item is None or seats_of is None:
                return True, None
            capacity_refuses = (
                (item_key, n) == (key, 0)
                and released > 0
                and capacity is not None
                and (seats_of.capacity != capacity or seats_of.available > capacity - released)
            )
            if seats_of.held < unheld or seats_of.sold < unsold or capacity_refuses:
                return True, _shard_view(item, seats_of)
        return False, None

    def _pools_refusing(self, event_id: str, deltas: dict[str, tuple[int, int, int, int]]) -> frozenset[str]:
        """The pools whose guard refuses a status change: missing, or fewer held or sold seats."""
        refusing: set[str] = set()
        for name, (_, unheld, unsold, _) in deltas.items():
            pool = self.pools.get((event_id, name))
            if pool is None or pool.held < unheld or pool.sold < unsold:
                refusing.add(name)
        return frozenset(refusing)

    def _give_back_to_pools(self, event_id: str, deltas: dict[str, tuple[int, int, int, int]]) -> None:
        for name, (released, unheld, unsold, sold) in deltas.items():
            pool = self.pools[(event_id, name)]
            self.pools[(event_id, name)] = dataclasses.replace(
                pool,
                available=pool.available + released,
                held=pool.held - unheld,
                sold=pool.sold + sold - unsold,
            )
        self.inventory_writes += len(deltas)

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

    def find_unnumbered(self, limit: int) -> list[UnnumberedSale]:
        self._maybe_fail()
        found = {
            rid: UnnumberedSale(rid, self.records[rid].event_id or "", self.records[rid].quantity or 0, ms)
            for rid, ms in self.awaiting_tickets.items()
        }
        for rid, stale in self.stale_unnumbered.items():
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

    def find_unpublished_batches(self, limit: int) -> list[TicketBatch]:
        self._maybe_fail()
        return [
            self.ledger[k]
            for k in sorted(self.ledger_unpublished, key=lambda k: (k[0].event_id, k[0].series, k[1]))
        ][:limit]

    def mark_batches_published(self, batches: Sequence[TicketBatch]) -> int:
        cleared = 0
        for batch in batches:
            key = (batch.series, batch.first)
            if key in self.ledger_unpublished:
                self.ledger_unpublished.discard(key)
                cleared += 1
        return cleared


def _transition_moves(
    transitions: Sequence[Transition],
) -> tuple[
    dict[tuple[SeatKey, int], list[int]],
    dict[tuple[SeatKey, str], list[tuple[int, SeatState, bool]]],
    dict[tuple[SeatKey, str], int],
]:
    """What status changes move, per item their seats came from (`ReservationRecord.takes`: the
    record's class, or each line's of an order, docs/guides/orders.md): a class's shard item ->
    [released, unheld, unsold, sold]; a mapped class's row item -> (position, state it must be
    in, sold after); a customer counter -> seats taken off."""
    deltas: dict[tuple[SeatKey, int], list[int]] = {}
    rows: dict[tuple[SeatKey, str], list[tuple[int, SeatState, bool]]] = {}
    uncount: dict[tuple[SeatKey, str], int] = {}
    for t in transitions:
        for take in t.record.takes():
            if take.seats:
                was = SeatState.HELD if t.record.status is Outcome.HELD else SeatState.SOLD
                for seat in take.seats:
                    row_id, position = row_item_of(seat)
                    rows.setdefault((take.key, row_id), []).append((position, was, not t.releases_seats))
            else:
                delta = deltas.setdefault((take.key, take.shard), [0, 0, 0, 0])
                delta[1 if t.record.status is Outcome.HELD else 2] += take.quantity
                delta[3 if t.to is Outcome.CONFIRMED else 0] += take.quantity
            if t.releases_seats and take.customer_counted:
                counter = (take.key, t.record.answer.customer_id or "")
                uncount[counter] = uncount.get(counter, 0) + take.quantity
    return deltas, rows, uncount


def _pool_deltas(transitions: Sequence[Transition]) -> dict[str, tuple[int, int, int, int]]:
    """Per capacity pool the records' seats came from: released, unheld, unsold, sold (the DAL's
    `_InventoryDelta` of the pool's records)."""
    deltas: dict[str, list[int]] = {}
    for t in transitions:
        for take in t.record.takes():
            for name in take.pools:
                delta = deltas.setdefault(name, [0, 0, 0, 0])
                delta[1 if t.record.status is Outcome.HELD else 2] += take.quantity
                delta[3 if t.to is Outcome.CONFIRMED else 0] += take.quantity
    return {name: (d[0], d[1], d[2], d[3]) for name, d in deltas.items()}


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
