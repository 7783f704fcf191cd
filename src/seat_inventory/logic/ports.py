"""The interfaces the domain logic needs from the outside world (DynamoDB, SNS, the clock).

The real implementations live in `seat_inventory.dal` and `seat_inventory.publishing`; the unit
tests use in-memory fakes of the same shape.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

from seat_inventory.logic.seat_map import SeatMap
from seat_inventory.models import (
    WHOLE_INDEX,
    IssuerLane,
    Join,
    LaneWrite,
    ListedReturn,
    ListRefused,
    NumbersRefused,
    Place,
    PoolInventory,
    Rebalance,
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
    WaitingList,
    WriteRefused,
)


class InventoryStore(Protocol):
    """Persistence of inventory, of each reservation's record and of per-customer counters."""

    def take(self, take: Take) -> WriteRefused | None:
        """Takes every part's seats and records its answers in one transaction (the actions of
        `seat_inventory.transaction`): None when it committed, what refused otherwise (nothing
        written); `RetryableError` on a transient fault (`TransactionConflict`, `Throttled`)."""
        ...

    def record_rejections(
        self, outcomes: Sequence[ReservationOutcome], *, expires_at: int
    ) -> WriteRefused | None:
        """Records answers that take no seats, each its own conditional write (the record must not
        exist), expiring at `expires_at`: None when all were written; else those that existed
        (`already_recorded`, their stored answers) and those written (`written`); the rest met a
        transient fault. `RetryableError` when a transient fault kept every record out."""
        ...

    def read_inventory(
        self, key: SeatKey, *, whole: bool = True, customers: Sequence[str] = ()
    ) -> SeatClassInventory | None:
        """The class read strongly consistently (with its pools), or None when there is none: a
        sharded class whole (one snapshot of its items), or with `whole` False its shard 0 alone
        (its rules and items; not `complete`), then with `customers`' counters (at most 99; 0 for
        none) in `SeatClassInventory.counters`."""
        ...

    def read_pools(self, event_id: str, pools: Sequence[str]) -> dict[str, PoolInventory]:
        """The event's capacity pools by name, each read whole (a sharded one in one snapshot;
        `TransactionConflict` when takes in flight keep refusing it); missing ones absent. For a
        mapped class, which has no inventory item to bring its pools along (docs/guides/pools.md)."""
        ...

    def survey_shards(self, key: SeatKey, shard_items: int) -> list[ShardSurvey]:
        """The first `shard_items` items of a sharded class, each read strongly consistently on its
        own (no snapshot: it routes, never decides a rejection), in shard order."""
        ...

    def read_reservations(self, reservation_ids: Sequence[str]) -> dict[str, ReservationRecord]:
        """The records of these reservation ids, read strongly consistently; missing ids are absent."""
        ...

    def read_seat_map(self, event_id: str) -> SeatMap | None:
        """The event's seat map (its mapped classes), or None when it has none (docs/guides/seat-maps.md)."""
        ...

    def read_seat_rows(self, key: SeatKey, row_ids: Sequence[str] | None = None) -> dict[str, SeatRow]:
        """A mapped class's row items by id: those named, strongly consistently, or (None) all of
        them, eventually consistent (a view to place on: each take is guarded on its seats)."""
        ...

    def claim(self, key: SeatKey, part: str, owner: str, *, now: float, until: float) -> bool:
        """Claims `part` of a mapped class (a slice of its rows) for `owner` until `until`: True
        unless another owner's claim runs past `now`. It only steers placing (docs/guides/seat-maps.md)."""
        ...

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
        """Moves every record to its new status, guarded on the status it was read with, and its
        seats with it (to the items, rows, pools and counters each line names: an order's change
        moves every line), in one transaction; `capacity` (a class of one item's, as the caller
        believes it) guards seats given back to `key`; records never sold expire at
        `release_expires_at`. Seats given back to a class in `lists` go to its waiting list (a
        counted class's into the lane it names), each item guarded on the rule assumed."""
        ...


class WaitlistStore(Protocol):
    """A class's waiting list (docs/guides/waiting-list.md): its lanes and places, and the writes
    that join it, offer its seats, move them, end entries and put its seats back on sale."""

    def read_waitlist(self, key: SeatKey) -> WaitingList | None:
        """The class's list and its lanes, read strongly consistently (None: it never had one)."""
        ...

    def read_places(self, key: SeatKey, lane: int, *, after: str, before: str, limit: int) -> list[Place]:
        """At most `limit` places of a lane with an order key after `after` and before `before`,
        in join order, read strongly consistently."""
        ...

    def fence_lanes(self, key: SeatKey, lanes: Sequence[int], frontier: str) -> None:
        """Moves each lane's frontier up to `frontier` (where it is below): no place with a smaller
        key is written there any more."""
        ...

    def join_waitlist(self, join: Join) -> ListRefused | None:
        """One transaction: each record (still SOLD_OUT) waits, each customer's entry and place
        are written, the lane counts them (`transaction.join_actions`); None when it committed."""
        ...

    def write_lanes(self, writes: Sequence[LaneWrite]) -> list[ListRefused | None]:
        """Each lane's offers and ends, a transaction each (`transaction.lane_actions`), the lanes
        at once: per write, None when it committed, what refused otherwise. `RetryableError` (a
        conflict or throttling) when one met a transient fault; the others stand."""
        ...

    def rebalance(self, rebalance: Rebalance) -> ListRefused | None:
        """One transaction moving a counted class's list seats between shard items and lanes."""
        ...

    def return_listed(self, back: ListedReturn) -> ListRefused | None:
        """One transaction putting the list's seats back on sale (`transaction.return_actions`)."""
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


class ListStore(HoldStore, WaitlistStore, Protocol):
    """What the sweeper's offer rounds need on top (docs/guides/waiting-list.md): the open lists,
    and the outbox of offers whose OFFERED outcome is not published yet."""

    def find_open_lists(self) -> list[SeatKey]:
        """The classes whose waiting list is open (eventually consistent)."""
        ...

    def find_unpublished_offers(self, limit: int) -> list[ReservationRecord]:
        """At most `limit` records offered whose OFFERED outcome awaits publication."""
        ...

    def mark_offers_published(self, records: Sequence[ReservationRecord]) -> int:
        """Takes the records out of the offers' outbox; returns how many it took out."""
        ...


class TicketStore(Protocol):
    """What the ticket issuer needs (docs/guides/tickets.md): the sold-but-unnumbered index, the series'
    counters, and one guarded write that numbers a batch together with its counter."""

    def find_unnumbered(self, limit: int, lane: IssuerLane = WHOLE_INDEX) -> list[UnnumberedSale]:
        """At most `limit` of `lane`'s sold reservations waiting for numbers (eventually consistent)."""
        ...

    def read_ticket_format(self, event_id: str) -> TicketFormat:
        """The event's numbering (series, prefix, width); the default when it has none."""
        ...

    def read_next_number(self, series: TicketSeries) -> int:
        """The series' next serial, read strongly consistently (1 when nothing was numbered)."""
        ...

    def commit_numbers(self, batch: TicketBatch) -> NumbersRefused | None:
        """One transaction: the counter from `batch.first` to `batch.next_after` (guarded), each
        reservation's numbers (guarded: it still waits) and the batch in the ledger's outbox.
        `RetryableError` on a transient fault, when it may or may not have committed."""
        ...

    def find_unpublished_batches(self, limit: int, lane: IssuerLane = WHOLE_INDEX) -> list[TicketBatch]:
        """At most `limit` ledger batches of `lane`'s series whose TICKETED outcomes were not
        published yet."""
        ...

    def mark_batches_published(self, batches: Sequence[TicketBatch]) -> int:
        """Takes the batches out of the publication outbox; returns how many it took out."""
        ...


class LaneStarter(Protocol):
    """Starts the ticket issuer's other lanes (docs/guides/tickets.md, "Lanes")."""

    def start_lanes(self, lanes: Sequence[int], count: int, until: float) -> list[int]:
        """Starts each of `lanes` (of `count`), to number until the epoch second `until`; returns
        the lanes it could not start."""
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


class BatchPublisher(OutcomePublisher, Protocol):
    """The reserve function's publisher: also starts a publication and lets it run while the
    function writes the next part of its batch."""

    def publish_soon(
        self,
        outcomes: Sequence[ReservationOutcome],
        *,
        retry_throttled: Callable[[int], bool] | None = None,
    ) -> PendingPublication:
        """Starts publishing as `publish` does and returns at once: the caller writes its next
        transaction while SNS answers, and `wait`s for what `publish` would have returned."""
        ...


class PendingPublication(Protocol):
    """A publication under way (`OutcomePublisher.publish_soon`)."""

    def wait(self) -> list[ReservationOutcome]:
        """Waits until it is over; returns the outcomes that could not be published."""
        ...


class Clock(Protocol):
    def now(self) -> float: ...

    def sleep(self, seconds: float) -> None: ...
