"""The interfaces the domain logic needs from the outside world (DynamoDB, SNS, the clock).

The real implementations live in `seat_inventory.dal` and `seat_inventory.publishing`; the unit
tests use in-memory fakes of the same shape.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from seat_inventory.logic.seat_map import SeatMap
from seat_inventory.models import (
    NumbersRefused,
    PoolInventory,
    ReservationOutcome,
    ReservationRecord,
    SeatClassInventory,
    SeatKey,
    SeatRow,
    ShardSurvey,
    Take,
    TicketBatch,
    TicketFormat,
    TicketSeries,
    Transition,
    TransitionsRefused,
    UnnumberedSale,
    WriteRefused,
)


class InventoryStore(Protocol):
    """Persistence of inventory, of each reservation's record and of per-customer counters."""

    def take(self, take: Take) -> WriteRefused | None:
        """Atomically takes the seats of every part of `take` and records its answers (the class
        items or row items, records, counters, token uses and pool items of `seat_inventory.transaction`).
        Returns None when it committed, a `WriteRefused` when a guard failed (nothing was
        written), and raises `RetryableError` on a transient fault (`TransactionConflict`,
        `Throttled`)."""
        ...

    def record_rejections(
        self, outcomes: Sequence[ReservationOutcome], *, expires_at: int
    ) -> WriteRefused | None:
        """Records answers that take no seats, each its own conditional write (exactly once: the
        record must not exist), expiring (TTL) at `expires_at`. Records that existed come back in
        `already_recorded` with their stored answers, and those written meanwhile in `written`;
        records a transient fault kept out are in neither. Only when a transient fault kept every
        record out does it raise `RetryableError`."""
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

    def change_status(
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
