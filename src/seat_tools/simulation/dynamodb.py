"""The inventory store as the simulation's containers see it: DynamoDB's semantics on a virtual clock.

`SimulatedTable` is the table (one per run): the in-memory store for the data, and the contention
model (`seat_tools.contention.model`, the same one the local stack's layer uses) for conflicts,
throttling, latency and units. `SimulatedDynamoStore` is one container's client of it; it
implements the `InventoryStore` port and answers as `dal.inventory_table.InventoryTable` does
after botocore:

- a transaction touching an item another in-flight transaction holds: after its latency,
  `TransactionConflict` (the DAL's mapping of a cancellation with `TransactionConflict`);
- a throttled transaction (`ThrottlingError` in its cancellation reasons): `Throttled` (the DAL's
  mapping), with no botocore retry (botocore retries no `TransactionCanceledException`);
- a throttled read (`ProvisionedThroughputExceededException`): retried as botocore's standard mode
  does (4 attempts, full-jitter back-off with a 1 s base for throttling), then `Throttled`;
- a sharded class is read as the DAL reads it (`dal.access`): a `GetItem` of shard 0, then a
  `TransactGetItems` of all its shard items, which a write on one of them cancels (the model's
  `transact_read`); read again `SHARDED_READ_ATTEMPTS` times with the DAL's back-off, then
  `TransactionConflict`; a throttled one raises `Throttled` at once;
- an admitted transaction waits its modelled latency, holding its items, then commits; a refused
  condition is reported as the DAL reports it (`WriteRefused`), and counted as cancelled with
  `ConditionalCheckFailed`. Reads see committed data only;
- a group without seats (rejections only) is written as the DAL writes it: one conditional
  PutItem per record (the model's single-item write: 1 unit per KB, its latency,
  `TransactionConflictException` on a record a transaction holds, throttling), `MAX_CONCURRENT_PUTS`
  at a time (the group takes about one put's latency per wave of that many); the in-memory store
  decides which records already existed (their units counted as wasted, like a cancelled
  transaction's). A throttled put is not retried as botocore would: a record is its own
  partition, so only the optional table quota can throttle one.

Items are keyed as the DAL keys them (`dal.items.inventory_key`, ...), so partitions are
the real ones. Write units come from item sizes (`record_item_bytes`).

A take or a status change is modelled on the items of the actions the table writes
(`seat_inventory.transaction`, keyed by `dal.expressions.item_key`, sized by role). To add a
store method: implement it on the in-memory store, then here pass its actions (or the items it
writes, keys from `dal.items`) with the in-memory call to `_transact` (or the reads to `_read`);
the model then gives it conflicts, throttling, latency and units like every other call.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from seat_inventory.dal.access import SHARDED_READ_ATTEMPTS, SHARDED_READ_BACKOFF_SECONDS
from seat_inventory.dal.expressions import item_key
from seat_inventory.dal.items import (
    UNNUMBERED_PREFIX,
    claim_key,
    customer_key,
    inventory_key,
    pool_key,
    reservation_key,
    row_key,
    seat_map_key,
    section_pk,
    unnumbered_bucket,
)
from seat_inventory.dal.seat_rows import MAX_CONCURRENT_SECTION_QUERIES
from seat_inventory.dal.writes import MAX_CONCURRENT_PUTS
from seat_inventory.logic.seat_map import SeatMap
from seat_inventory.models import (
    TAKES_SEATS,
    Outcome,
    PoolInventory,
    ReservationOutcome,
    ReservationRecord,
    RetryableError,
    SeatClassInventory,
    SeatKey,
    SeatRow,
    ShardSurvey,
    Take,
    Throttled,
    TransactionConflict,
    Transition,
    TransitionsRefused,
    WriteRefused,
)
from seat_inventory.transaction import (
    Action,
    ChangeStatus,
    PutRecord,
    Role,
    status_actions,
    take_actions,
)
from seat_tools.contention.model import (
    CONDITIONAL_CHECK_FAILED,
    INDEX_THROTTLING_REASONS,
    THROTTLED_KEY_RANGE,
    ContentionModel,
    Decision,
    IndexWrite,
    ItemRead,
    ItemWrite,
    Verdict,
    read_units,
    write_units,
)
from seat_tools.simulation import binding
from seat_tools.simulation.memory_store import InMemoryInventoryStore

# botocore's standard retry mode (wiring.CLIENT_CONFIG: max_attempts 4): a throttled request is
# retried after rand(0, 1) x min(1 s x 2^(attempt - 1), 20 s).
BOTOCORE_MAX_ATTEMPTS = 4
BOTOCORE_THROTTLING_BASE_S = 1.0
BOTOCORE_MAX_BACKOFF_S = 20.0
BATCH_GET_LIMIT = 100

# Sizes of the DAL's items in bytes (attribute names plus values, as DynamoDB counts them), for
# write units. A reservation record's fixed part (names, status, timestamps, numbers) was measured
# on the DAL's `record_item` with `bench.counting.item_size` (tests/unit/test_simulation.py checks
# the estimate against it); its variable part is its strings.
RECORD_FIXED_BYTES = 195
RECORD_TTL_BYTES = 15  # `expires_at`, on rejections
# `gsi2pk` / `gsi2sk` on a sold record, which put it in the TicketsToIssue index until it is
# numbered (docs/guides/tickets.md). The index entry itself is one more write unit (its projection is
# under 1 KB), billed but not taken from the table's partitions: `SimulatedTable.index_write_units`.
RECORD_TICKET_INDEX_BYTES = 25
INVENTORY_ITEM_BYTES = 200
# An event without a seat map: the GetItem finds nothing (a read unit all the same).
SEAT_MAP_ITEM_BYTES = 100
# A row item of a mapped class: about 400 bytes with its 40 seats taken (docs/guides/seat-maps.md).
ROW_ITEM_BYTES = 400
COUNTER_ITEM_BYTES = 150
# An admission token's use (docs/guides/admission.md): key, token id, reservation id, TTL.
TOKEN_USE_ITEM_BYTES = 150
# A slice's claim item (`dal.seat_rows.SeatRows.claim`): key, owner, until, TTL.
CLAIM_ITEM_BYTES = 120


_ROLE_BYTES = {
    Role.SEATS: INVENTORY_ITEM_BYTES,
    Role.ROW: ROW_ITEM_BYTES,
    Role.COUNTER: COUNTER_ITEM_BYTES,
    Role.POOL: INVENTORY_ITEM_BYTES,
    Role.TOKEN: TOKEN_USE_ITEM_BYTES,
}


def record_item_bytes(outcome: ReservationOutcome) -> int:
    """About the size of the reservation record the DAL writes for `outcome` (within a few bytes).

    Its strings are ASCII (the message contract's identifiers, and reasons built from them), so
    characters count as bytes.
    """
    ttl = 0 if outcome.outcome in TAKES_SEATS else RECORD_TTL_BYTES
    ticket_index = RECORD_TICKET_INDEX_BYTES if outcome.outcome is Outcome.CONFIRMED else 0
    return (
        RECORD_FIXED_BYTES
        + ttl
        + ticket_index
        + 2 * len(outcome.reservation_id)  # in the key and as an attribute
        + 2 * len(outcome.outcome)  # as `outcome` and as `status`
        + len(outcome.reason)
        + len(outcome.event_id or "")
        + len(outcome.seat_class or "")
        + len(outcome.customer_id or "")
        + len(outcome.message_id or "")
        + sum(len(seat) + 1 for seat in outcome.seats or ())  # a mapped class's seat ids
    )


def _sold_in(actions: Sequence[Action]) -> list[str]:
    """The reservations the actions put in the ticket issuer's index, in action order: each sale
    (a CONFIRMED answer, or a hold confirmed)."""
    sold = []
    for action in actions:
        if isinstance(action, PutRecord) and action.answer.outcome is Outcome.CONFIRMED:
            sold.append(action.answer.reservation_id)
        elif isinstance(action, ChangeStatus) and action.transition.to is Outcome.CONFIRMED:
            sold.append(action.transition.record.reservation_id)
    return sold


def _item_bytes(action: Action) -> int:
    """About the size of the item an action writes."""
    if isinstance(action, PutRecord):
        return record_item_bytes(action.answer)
    if isinstance(action, ChangeStatus):
        return record_item_bytes(action.transition.record.answer)
    return _ROLE_BYTES[action.role]


TICKETS_INDEX = "TicketsToIssue"


def ticket_index_writes(items: Sequence[ItemWrite], sold: Sequence[str]) -> list[IndexWrite]:
    """The TicketsToIssue entries a write makes: one per sold record (its `gsi2pk`, one of 128
    buckets: `dal.items.unnumbered_bucket`), at the record's position in `items`."""
    if not sold:
        return []
    positions = {item.item_key: position for position, item in enumerate(items)}
    writes = []
    for reservation_id in sold:
        _, record_key = _item_key(reservation_key(reservation_id))
        writes.append(
            IndexWrite(
                TICKETS_INDEX,
                positions.get(record_key, 0),
                f"{UNNUMBERED_PREFIX}{unnumbered_bucket(reservation_id)}",
            )
        )
    return writes


def refusal_cause(decision: Decision) -> str | None:
    """What refused a request, as `simulation.binding` counts it (None: it was admitted)."""
    if decision.verdict is Verdict.CONFLICT:
        return binding.CONFLICTS
    if decision.verdict is Verdict.THROTTLED:
        if decision.throttled_by in INDEX_THROTTLING_REASONS:
            return binding.INDEX
        return binding.PARTITIONS if decision.throttled_by == THROTTLED_KEY_RANGE else binding.TABLE
    return None


def _item_key(key: Mapping[str, Any]) -> tuple[str, str]:
    pk = key["pk"]["S"]
    return pk, f"{pk}|{key['sk']['S']}"


def section_query(key: SeatKey, section: str, items: int) -> ItemRead:
    """One `Query` of a section's row items (one partition key): DynamoDB sums the sizes of the
    items it returns and rounds up to 4 KB; eventually consistent, half a unit per 4 KB."""
    pk = section_pk(key, section)
    return ItemRead(pk, f"{pk}|query", read_units(items * ROW_ITEM_BYTES, consistent=False))


def _write(key: Mapping[str, Any], size_bytes: int) -> ItemWrite:
    pk, item_key = _item_key(key)
    return ItemWrite(pk, item_key, write_units(size_bytes, transactional=True))


def _read(key: Mapping[str, Any], size_bytes: int, *, transactional: bool = False) -> ItemRead:
    pk, item_key = _item_key(key)
    return ItemRead(pk, item_key, read_units(size_bytes, consistent=True, transactional=transactional))


class ContainerClock(Protocol):
    """A container's clock: virtual time; waits may end the invocation (its timeout)."""

    def now(self) -> float: ...

    def sleep(self, seconds: float) -> None:
        """Time the client spends itself (botocore's back-off)."""
        ...

    def wait_for_aws(self, seconds: float, cause: str | None = None) -> None:
        """Time a DynamoDB request takes on AWS (the contention model's latency); `cause`: why it
        was refused, if it was (`refusal_cause`), for the report of what held the sale."""
        ...


class SimulatedTable:
    """The table every container writes to: its data and its contention."""

    def __init__(self, data: InMemoryInventoryStore, model: ContentionModel, *, seed: int) -> None:
        self.data = data
        self.model = model
        self.rng = random.Random(seed)  # botocore's retry jitter
        self.requests: dict[str, int] = {}
        self.read_retries = 0  # throttled reads botocore sent again
        self.write_retries = 0  # throttled puts botocore sent again
        # Write units of the TicketsToIssue entries the sales wrote (1 per sold record): billed by
        # DynamoDB for the index, not the table's partitions, so outside the contention model.
        # (HoldsByExpiry's entries are not counted: the simulated workload holds no seats.)
        self.index_write_units = 0.0

    def count(self, operation: str) -> None:
        self.requests[operation] = self.requests.get(operation, 0) + 1

    def client(self, clock: ContainerClock) -> SimulatedDynamoStore:
        return SimulatedDynamoStore(self, clock)


class SimulatedDynamoStore:
    """One container's view of the table (the `InventoryStore` port)."""

    def __init__(self, table: SimulatedTable, clock: ContainerClock) -> None:
        self._table = table
        self._clock = clock

    # ------------------------------------------------------------------ InventoryStore
    def read_inventory(
        self, key: SeatKey, *, whole: bool = True, customers: Sequence[str] = ()
    ) -> SeatClassInventory | None:
        if customers:
            # Shard 0 and the counters in one consistent BatchGetItem (`dal.access`).
            counters = [_read(customer_key(key, c), COUNTER_ITEM_BYTES) for c in dict.fromkeys(customers)]
            self._read("BatchGetItem", [_read(inventory_key(key), INVENTORY_ITEM_BYTES), *counters])
        else:
            self._read("GetItem", [_read(inventory_key(key), INVENTORY_ITEM_BYTES)])
        item = self._table.data.read_inventory(key, whole=whole, customers=customers)
        if item is not None and item.pools:
            # Its pools' first items, in one BatchGetItem (`dal.access`; docs/guides/pools.md), and a
            # sharded pool read whole in one TransactGetItems when the class is.
            pools = [_read(pool_key(key.event_id, name), INVENTORY_ITEM_BYTES) for name in item.pools]
            self._read("BatchGetItem", pools)
            if whole or item.shard_items == 1:
                for pool in item.pool_items or ():
                    self._read_pool_whole(pool)
        if item is None or item.shard_items == 1 or not whole:
            return item
        # A sharded class (the in-memory store answers it whole; DynamoDB's shard 0 does not).
        shards = [
            _read(inventory_key(key, n), INVENTORY_ITEM_BYTES, transactional=True)
            for n in range(item.shard_items)
        ]
        for attempt in range(SHARDED_READ_ATTEMPTS):
            if self._transact_read(shards):
                return self._table.data.read_inventory(key)
            self._clock.sleep(SHARDED_READ_BACKOFF_SECONDS * 2**attempt)
        raise TransactionConflict(f"the shards of {key} kept changing while read")

    def _read_pool_whole(self, pool: PoolInventory) -> None:
        """`dal.access.TableAccess._whole_pool`: every item of a sharded pool in one
        `TransactGetItems`, refused while a write is in flight on one of them."""
        if pool.shard_count <= 1:
            return
        items = [
            _read(pool_key(pool.event_id, pool.pool, n), INVENTORY_ITEM_BYTES, transactional=True)
            for n in range(pool.shard_count)
        ]
        for attempt in range(SHARDED_READ_ATTEMPTS):
            if self._transact_read(items):
                return
            self._clock.sleep(SHARDED_READ_BACKOFF_SECONDS * 2**attempt)
        raise TransactionConflict(f"the items of pool {pool.pool} of {pool.event_id} stayed in use")

    def read_pools(self, event_id: str, pools: Sequence[str]) -> dict[str, PoolInventory]:
        """`dal.access.TableAccess.read_pools`: the pools' first items in one BatchGetItem, each
        sharded one then whole in one TransactGetItems."""
        self._read("BatchGetItem", [_read(pool_key(event_id, name), INVENTORY_ITEM_BYTES) for name in pools])
        found = self._table.data.read_pools(event_id, pools)
        for pool in found.values():
            self._read_pool_whole(pool)
        return found

    def read_seat_map(self, event_id: str) -> SeatMap | None:
        """Whether the event has a seat map (a GetItem, once per container and event)."""
        self._read("GetItem", [_read(seat_map_key(event_id), SEAT_MAP_ITEM_BYTES)])
        return self._table.data.read_seat_map(event_id)

    def read_seat_rows(self, key: SeatKey, row_ids: Sequence[str] | None = None) -> dict[str, SeatRow]:
        """Named rows: a consistent `BatchGetItem` (each item its own read units). All rows: the
        DAL's `Query` per section, `MAX_CONCURRENT_SECTION_QUERIES` at a time (each round over when
        its slowest is answered), eventually consistent (no `ConsistentRead`) and billed as
        DynamoDB bills a Query: the total size of the items it returns, rounded up to 4 KB, half
        for an eventually consistent read (`section_query`)."""
        rows = self._table.data.read_seat_rows(key, row_ids)
        if row_ids is not None:
            wanted = list(row_ids)
            for start in range(0, len(wanted), BATCH_GET_LIMIT):
                chunk = wanted[start : start + BATCH_GET_LIMIT]
                self._read("BatchGetItem", [_read(row_key(key, r), ROW_ITEM_BYTES) for r in chunk])
            return rows
        by_section: dict[str, int] = {}
        for row_id in rows:
            section = row_id.split("-", 1)[0]
            by_section[section] = by_section.get(section, 0) + 1
        queries = [section_query(key, section, count) for section, count in by_section.items()]
        for start in range(0, len(queries), MAX_CONCURRENT_SECTION_QUERIES):
            self._read_together(
                "Query", [[q] for q in queries[start : start + MAX_CONCURRENT_SECTION_QUERIES]]
            )
        return rows

    def claim(self, key: SeatKey, part: str, owner: str, *, now: float, until: float) -> bool:
        """`dal.seat_rows.SeatRows.claim`: one conditional UpdateItem, decided when DynamoDB
        answers it (claims sent together: the first answered is granted)."""
        table = self._table
        table.count("UpdateItem")
        pk, item_key = _item_key(claim_key(key, part))
        units = write_units(CLAIM_ITEM_BYTES, transactional=False)
        decision = table.model.write_item(ItemWrite(pk, item_key, units), operation="UpdateItem", now=now)
        self._clock.wait_for_aws(decision.latency_s, refusal_cause(decision))
        if decision.verdict is Verdict.CONFLICT:
            raise TransactionConflict("TransactionConflictException")
        if decision.verdict is Verdict.THROTTLED:
            raise Throttled("ProvisionedThroughputExceededException")
        granted = table.data.claim(key, part, owner, now=now, until=until)
        if not granted:
            table.model.finish(decision, cancelled_by=CONDITIONAL_CHECK_FAILED)
        return granted

    def survey_shards(self, key: SeatKey, shard_items: int) -> list[ShardSurvey]:
        # One BatchGetItem of every shard item, strongly consistent (dal.access): never refused by holds.
        self._read(
            "BatchGetItem", [_read(inventory_key(key, n), INVENTORY_ITEM_BYTES) for n in range(shard_items)]
        )
        return self._table.data.survey_shards(key, shard_items)

    def read_reservations(self, reservation_ids: Sequence[str]) -> dict[str, ReservationRecord]:
        unique = list(dict.fromkeys(reservation_ids))
        for start in range(0, len(unique), BATCH_GET_LIMIT):
            chunk = unique[start : start + BATCH_GET_LIMIT]
            self._read("BatchGetItem", [_read(reservation_key(i), 1024) for i in chunk])
        return self._table.data.read_reservations(unique)

    def take(self, take: Take) -> WriteRefused | None:
        """The table's transaction: the items of the actions it writes (`seat_inventory.transaction`)."""
        actions = take_actions(take)
        return self._transact(actions, lambda: self._table.data.take(take))

    def record_rejections(
        self, outcomes: Sequence[ReservationOutcome], *, expires_at: int
    ) -> WriteRefused | None:
        return self._put_records(outcomes, expires_at)

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
        actions = status_actions(
            key, transitions, now=now, capacity=capacity, release_expires_at=release_expires_at, lists=lists
        )

        def apply() -> TransitionsRefused | None:
            return self._table.data.change_status(
                key,
                transitions,
                now=now,
                capacity=capacity,
                release_expires_at=release_expires_at,
                lists=lists,
            )

        return self._transact(actions, apply)

    # ------------------------------------------------------------------ internals
    def _put_records(self, outcomes: Sequence[ReservationOutcome], expires_at: int) -> WriteRefused | None:
        """The table's `record_rejections`: one conditional PutItem per record, in waves of
        `MAX_CONCURRENT_PUTS` sent together, each wave over when its slowest put is answered."""
        table = self._table
        written: set[str] = set()
        recorded: dict[str, ReservationOutcome] = {}
        faults: list[RetryableError] = []
        for start in range(0, len(outcomes), MAX_CONCURRENT_PUTS):
            pending = list(outcomes[start : start + MAX_CONCURRENT_PUTS])
            # botocore (standard mode, as `wiring.py` sets it) retries a throttled put itself:
            # the wave's throttled puts are sent again after their back-offs, up to its attempts.
            for attempt in range(1, BOTOCORE_MAX_ATTEMPTS + 1):
                pending = self._put_wave(
                    pending, expires_at, written, recorded, faults, last=attempt == BOTOCORE_MAX_ATTEMPTS
                )
                if not pending:
                    break
                table.write_retries += len(pending)
                cap = min(BOTOCORE_THROTTLING_BASE_S * 2 ** (attempt - 1), BOTOCORE_MAX_BACKOFF_S)
                self._clock.sleep(max(table.rng.random() * cap for _ in pending))
        if faults and not written and not recorded:
            raise faults[0]
        if not faults and not recorded:
            return None
        return WriteRefused(
            inventory_refused=False, inventory=None, already_recorded=recorded, written=frozenset(written)
        )

    def _put_wave(
        self,
        wave: Sequence[ReservationOutcome],
        expires_at: int,
        written: set[str],
        recorded: dict[str, ReservationOutcome],
        faults: list[RetryableError],
        *,
        last: bool,
    ) -> list[ReservationOutcome]:
        """One wave of puts sent together, over when its slowest is answered; returns the
        throttled ones to send again (none when `last`: they become faults)."""
        table = self._table
        now = self._clock.now()
        decisions: list[Decision] = []
        for outcome in wave:
            table.count("PutItem")
            pk, item_key = _item_key(reservation_key(outcome.reservation_id))
            units = write_units(record_item_bytes(outcome), transactional=False)
            decisions.append(table.model.write_item(ItemWrite(pk, item_key, units), now=now))
        again: list[ReservationOutcome] = []
        try:
            causes = [c for c in map(refusal_cause, decisions) if c is not None]
            self._clock.wait_for_aws(max(d.latency_s for d in decisions), causes[0] if causes else None)
        finally:
            # Admitted puts are written on DynamoDB even when the invocation ends meanwhile.
            for outcome, decision in zip(wave, decisions, strict=True):
                if decision.verdict is Verdict.CONFLICT:
                    faults.append(TransactionConflict("TransactionConflictException"))
                elif decision.verdict is Verdict.THROTTLED:
                    if last:
                        faults.append(Throttled("ProvisionedThroughputExceededException"))
                    else:
                        again.append(outcome)
                elif (existing := table.data.put_record(outcome, expires_at)) is not None:
                    recorded[outcome.reservation_id] = existing
                    table.model.finish(decision, cancelled_by=CONDITIONAL_CHECK_FAILED)
                else:
                    written.add(outcome.reservation_id)
        return again

    def _transact(self, actions: Sequence[Action], apply: Any) -> Any:
        """The transaction of `actions` on the model; the sales among them put entries in the
        ticket issuer's index, billed if it commits."""
        items = [_write(item_key(action), _item_bytes(action)) for action in actions]
        index_writes = ticket_index_writes(items, _sold_in(actions))
        table = self._table
        table.count("TransactWriteItems")
        decision = table.model.transact_write(items, now=self._clock.now(), index_writes=index_writes)
        try:
            self._clock.wait_for_aws(decision.latency_s, refusal_cause(decision))
        finally:
            # An admitted transaction commits on DynamoDB even when the caller's invocation ends
            # while it waits (the function timeout): its effect is applied either way.
            refused = apply() if decision.verdict is Verdict.ADMITTED else None
            if refused is not None:
                table.model.finish(decision, cancelled_by=CONDITIONAL_CHECK_FAILED, now=self._clock.now())
            elif decision.verdict is Verdict.ADMITTED:
                table.index_write_units += sum(w.write_units for w in index_writes)
        if decision.verdict is Verdict.CONFLICT:
            raise TransactionConflict("TransactionConflict")
        if decision.verdict is Verdict.THROTTLED:
            raise Throttled("ThrottlingError")
        return refused

    def _transact_read(self, items: list[ItemRead]) -> bool:
        """A `TransactGetItems`: True when it answered, False when a write cancelled it."""
        table = self._table
        table.count("TransactGetItems")
        decision = table.model.transact_read(items, now=self._clock.now())
        try:
            self._clock.wait_for_aws(decision.latency_s, refusal_cause(decision))
        finally:
            decision = table.model.finish_read(decision, now=self._clock.now())
        if decision.verdict is Verdict.THROTTLED:
            raise Throttled("ThrottlingError")  # botocore retries no TransactionCanceledException
        return decision.admitted

    def _read_together(self, operation: str, requests: list[list[ItemRead]]) -> None:
        """Read requests sent at once (the DAL's threads; one request: `_read`), over when the
        slowest is answered; the throttled ones sent again after botocore's back-off (standard
        mode: 4 attempts, 1 s x 2^n full jitter), then `Throttled`."""
        table = self._table
        pending = requests
        for attempt in range(1, BOTOCORE_MAX_ATTEMPTS + 1):
            now = self._clock.now()
            decisions = []
            for items in pending:
                table.count(operation)
                decisions.append(table.model.read_items(items, operation=operation, now=now))
            causes = [c for c in map(refusal_cause, decisions) if c is not None]
            self._clock.wait_for_aws(max(d.latency_s for d in decisions), causes[0] if causes else None)
            pending = [
                r for r, d in zip(pending, decisions, strict=True) if d.verdict is not Verdict.ADMITTED
            ]
            if not pending:
                return
            if attempt == BOTOCORE_MAX_ATTEMPTS:
                break
            table.read_retries += len(pending)
            cap = min(BOTOCORE_THROTTLING_BASE_S * 2 ** (attempt - 1), BOTOCORE_MAX_BACKOFF_S)
            self._clock.sleep(max(table.rng.random() * cap for _ in pending))
        raise Throttled("ProvisionedThroughputExceededException")

    def _read(self, operation: str, items: list[ItemRead]) -> None:
        """One read request (GetItem, BatchGetItem, Query) of `items`."""
        self._read_together(operation, [items])


__all__ = ["SimulatedDynamoStore", "SimulatedTable", "record_item_bytes"]
