"""The interfaces the domain logic needs from the outside world (DynamoDB, SNS, the clock).

The real implementations live in `seat_inventory.dal` and `seat_inventory.publishing`; the unit
tests use in-memory fakes of the same shape.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from seat_inventory.logic.seat_map import SeatMap
from seat_inventory.models import (
    GroupWrite,
    NumbersRefused,
    PoolInventory,
    ReservationOutcome,
    ReservationRecord,
    SeatClassInventory,
    SeatKey,
    SeatRow,
    ShardSurvey,
    TicketBatch,
    TicketFormat,
    TicketSeries,
    Transition,
    UnnumberedSale,
)


@dataclass(frozen=True, slots=True)
class WriteRefused:
    """A write of a group's answers that a failed condition (or, for a group without seats, a
    transient fault on some of its records) stopped, and what it told us.

    `inventory_refused` is True when the inventory guard failed; `inventory` then holds the item
    as it was (too few seats left, sale closed, another per-customer limit than assumed), or is
    None when there is no such item (unknown event); for a sharded class it is only the shard
    item that refused (not `complete`).
    `already_recorded` maps each reservation id whose record already existed to the answer
    stored with it: those requests were answered before and must not take seats again.
    `customer_seats` maps each customer whose counter refused the increment to the seats the
    counter held: taking more would pass the per-customer limit.
    `written` names the records of a group without seats that were written all the same (its
    records are written one by one, not in one transaction): those answers stand. Records of the
    group in neither `written` nor `already_recorded` met a transient fault and were not written.
    `tokens_used` maps each admission token whose use was refused to the reservation that used it
    first: a replay, refused for good.
    `pools_refused` maps each capacity pool whose guard failed to its item as it was (too few
    seats left, or closed), or to None when the pool item does not exist (docs/guides/pools.md).
    """

    inventory_refused: bool
    inventory: SeatClassInventory | None
    already_recorded: Mapping[str, ReservationOutcome] = field(default_factory=dict)
    customer_seats: Mapping[str, int] = field(default_factory=dict)
    written: frozenset[str] = frozenset()
    tokens_used: Mapping[str, str] = field(default_factory=dict)
    pools_refused: Mapping[str, PoolInventory | None] = field(default_factory=dict)
    # A mapped class's write (`GroupWrite.rows`): the row items whose guard failed, as they were
    # (None: no such item).
    rows: Mapping[str, SeatRow | None] = field(default_factory=dict)
    # Several writes committed together (an order's lines, docs/guides/orders.md): for each write, in
    # order, what of it refused (its inventory item, its counters), or None when nothing of it
    # did; the fields above then sum them up (`inventory` is the first refusing item). Empty for
    # a single write.
    parts: tuple[WriteRefused | None, ...] = ()


@dataclass(frozen=True, slots=True)
class TransitionsRefused:
    """A status-change transaction that a failed condition cancelled (nothing was written).

    `records` maps each reservation id whose status condition failed to the record as it is now
    (None when it no longer exists): someone else changed it first. `inventory` is the item as it
    was when its guard failed (None when missing); `counters_refused` names the customers whose
    counter could not be decremented; `pools_refused` the capacity pools whose guard failed (or
    that do not exist): on consistent data that cannot happen.
    """

    inventory_refused: bool
    inventory: SeatClassInventory | None
    records: Mapping[str, ReservationRecord | None] = field(default_factory=dict)
    counters_refused: frozenset[str] = frozenset()
    pools_refused: frozenset[str] = frozenset()


class InventoryStore(Protocol):
    """Persistence of inventory, of each reservation's record and of per-customer counters."""

    def commit_outcomes(self, write: GroupWrite | Sequence[GroupWrite]) -> WriteRefused | None:
        """Atomically takes the write's seats and records every outcome; records a group without
        seats (only rejections) one record at a time.

        A sequence of writes (of one event, each of another counted class: an order's lines,
        docs/guides/orders.md) commits in ONE transaction, all or nothing: each write's inventory guards,
        counters and token uses as alone, the pools several of them share taken once for all
        (one update per pool, guarded on the sum). A record whose answer has `lines` stores, line
        by line, the shard, pools and counting of the write of that line's class. A refusal
        reports each write's part in `WriteRefused.parts`.

        Each record says which shard its seats came from; the guards are those `GroupWrite`
        describes. Returns None when everything committed, a `WriteRefused` when a condition
        failed (then nothing was written), and raises `RetryableError` on a transient fault.

        A write that is `records_only` writes no inventory, so it is not atomic across its
        records: each record is its own conditional write (1 write unit per KB instead of 2 in a
        transaction), made exactly once by its condition (the record must not exist). Records
        that already existed come back in `already_recorded` with their stored answers, and the
        records written meanwhile in `WriteRefused.written`; records a transient fault kept out
        are in neither (planned again). Only when a transient fault kept every record out does it
        raise `RetryableError` (`TransactionConflict`, `Throttled`).
        """
        ...

    def read_inventory(
        self, key: SeatKey, *, whole: bool = True, customers: Sequence[str] = ()
    ) -> SeatClassInventory | None:
        """The inventory item read strongly consistently, or None when there is none.

        A sharded class is read whole (every shard item in one snapshot) unless `whole` is False:
        then its shard 0 alone (its sale rules and items, a view that is not `complete`).
        `customers` (at most 99, only with `whole` False): those customers' counters are read
        with the item, each strongly consistently (one `BatchGetItem`, not a snapshot), into
        `SeatClassInventory.counters` (0 for a customer without a counter).

        Costs a read, never a write: used instead of a doomed conditional write once a seat
        class is known to be (nearly) sold out or closed.
        """
        ...

    def read_pools(self, event_id: str, pools: Sequence[str]) -> dict[str, PoolInventory]:
        """The event's capacity pools by name, each read whole (docs/guides/pools.md): a pool of one
        item strongly consistently, a sharded one in one snapshot of all its items (which a take in
        flight on one of them refuses: read again a few times, then `TransactionConflict`); a
        missing pool is absent. For a class without an inventory item to bring its pools along
        (`read_inventory`): a mapped class (docs/guides/seat-maps.md), before it refuses a request because
        of a pool."""
        ...

    def survey_shards(self, key: SeatKey, shard_items: int) -> list[ShardSurvey]:
        """The first `shard_items` shard items of a sharded class, each read strongly consistently
        (one `BatchGetItem`, never refused by a transaction in flight, a read unit per item), in
        shard order; items that do not exist are absent.

        Not a snapshot (seats moving between two items while they are read may be counted twice or
        not at all): it routes groups to shards, and never decides a rejection.
        """
        ...

    def read_reservations(self, reservation_ids: Sequence[str]) -> dict[str, ReservationRecord]:
        """The records of these reservation ids, read strongly consistently; missing ids are absent."""
        ...

    def read_seat_map(self, event_id: str) -> SeatMap | None:
        """The event's seat map (its mapped classes), or None when it has none (docs/guides/seat-maps.md)."""
        ...

    def read_seat_rows(self, key: SeatKey, row_ids: Sequence[str] | None = None) -> dict[str, SeatRow]:
        """Row items of a mapped class by row item id: those named, read strongly consistently, or
        (None) all of them, eventually consistent (a view for placing, never a decision: each take
        is guarded on its seats)."""
        ...

    def claim(self, key: SeatKey, part: str, owner: str, *, now: float, until: float) -> bool:
        """Claims `part` of a mapped class (a slice of its rows, docs/guides/seat-maps.md "At scale") for
        `owner` until `until` (epoch seconds): granted (True) when nobody holds it, `owner` already
        does, or the claim held ran out before `now`; False while another owner's claim runs. A
        claim only steers where containers place: every take is still guarded on its seats.
        Raises `RetryableError` on a transient fault."""
        ...

    def commit_transitions(
        self,
        key: SeatKey,
        transitions: Sequence[Transition],
        *,
        now: int,
        capacity: int | None,
        release_expires_at: int,
    ) -> TransitionsRefused | None:
        """Atomically moves every record to its new status and the inventory (and counters) with it.

        Each record's change is conditional on the status it was read with (so a change takes
        effect once however often it is asked for). Seats given back are guarded so that the
        class never exceeds `capacity` (the capacity the caller believes; a different one refuses).
        Records of seats that were never sold get TTL `release_expires_at`. Seats go back to the
        shard item each record names; an order's record (docs/guides/orders.md) names one per line
        (`ReservationRecord.takes`), so its change moves every line's class, pools and counters in
        the same transaction (`key` is then its first line's class); `capacity` is given only
        for a class of one item (None leaves the guards on held and sold, which keep each item's
        invariant on their own).
        """
        ...


class HoldStore(InventoryStore, Protocol):
    """What the hold sweeper needs on top of the inventory store: the expiry index and the outbox."""

    def find_expired_holds(self, now: int, limit: int) -> list[ReservationRecord]:
        """At most `limit` records still HELD whose hold ran out by `now` (eventually consistent)."""
        ...

    def find_unpublished_expiries(self, limit: int) -> list[ReservationRecord]:
        """At most `limit` EXPIRED records whose outcome has not been published yet (the outbox)."""
        ...

    def mark_expiries_published(self, records: Sequence[ReservationRecord], *, expires_at: int) -> int:
        """Takes the records out of the outbox (and gives them their TTL); returns how many it took out."""
        ...


class TicketStore(Protocol):
    """What the ticket issuer needs (docs/guides/tickets.md): the sold-but-unnumbered index, the series'
    counters, and one guarded write that numbers a batch together with its counter."""

    def find_unnumbered(self, limit: int) -> list[UnnumberedSale]:
        """At most `limit` sold reservations waiting for numbers, oldest sale first within each
        part of the index (eventually consistent: some may have been numbered meanwhile)."""
        ...

    def read_ticket_format(self, event_id: str) -> TicketFormat:
        """The event's numbering (series, prefix, width); the default when it has none."""
        ...

    def read_next_number(self, series: TicketSeries) -> int:
        """The series' next serial, read strongly consistently (1 when nothing was numbered)."""
        ...

    def commit_numbers(self, batch: TicketBatch) -> NumbersRefused | None:
        """Atomically: the counter moves from `batch.first` to `batch.next_after` (guarded: it
        must say `batch.first`), each reservation gets its numbers (guarded: it must still wait
        for them) and the batch is kept in the series' ledger, awaiting publication.

        Returns None when it committed, `NumbersRefused` when a guard failed (nothing written);
        raises `RetryableError` on a transient fault (conflict, throttle), when it may or may
        not have committed.
        """
        ...

    def find_unpublished_batches(self, limit: int) -> list[TicketBatch]:
        """At most `limit` ledger batches whose TICKETED outcomes were not published yet."""
        ...

    def mark_batches_published(self, batches: Sequence[TicketBatch]) -> int:
        """Takes the batches out of the publication outbox; returns how many it took out."""
        ...


class OutcomePublisher(Protocol):
    """Delivers outcomes to subscribers."""

    def publish(
        self,
        outcomes: Sequence[ReservationOutcome],
        *,
        retry_throttled: Callable[[int], bool] | None = None,
    ) -> list[ReservationOutcome]:
        """Publishes every outcome; returns the ones that could not be published.

        Outcomes the topic refused for its rate (throttling) are sent again while
        `retry_throttled(n)` (called after the n-th refusal in a row, from 0; it waits its back-off)
        returns True; without it, or once it returns False, they are returned like any other.
        """
        ...


class Clock(Protocol):
    def now(self) -> float: ...

    def sleep(self, seconds: float) -> None: ...
