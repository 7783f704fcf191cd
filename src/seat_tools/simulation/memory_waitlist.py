"""The waiting lists of the in-memory store (docs/guides/waiting-list.md), with the semantics of
`dal.waitlist.WaitlistQueries`: each list's lanes, places and customers' entries, the writes of
`seat_inventory.transaction` checked and applied as the table's guards and updates do, and the
operator's opening and closing of a list (`seats waitlist open|close`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from seat_inventory.models import (
    DEFAULT_OFFER_SECONDS,
    WAITLIST_LANES,
    Join,
    Lane,
    LaneWrite,
    ListedReturn,
    ListRefused,
    Outcome,
    Place,
    PoolInventory,
    Rebalance,
    ReservationOutcome,
    ReservationRecord,
    SeatClassInventory,
    SeatKey,
    SeatRow,
    ShardSeats,
    WaitingList,
)
from seat_inventory.transaction import (
    Action,
    ChangeLane,
    ClaimEntry,
    DropPlace,
    EndEntry,
    Failure,
    JoinRecord,
    MoveHeld,
    OfferRecord,
    PutPlace,
    added_seats_actions,
    join_actions,
    lane_actions,
    list_refusal,
    rebalance_actions,
    return_actions,
)

HOLDS = object()  # a guard that held (any other check result is the refused item as it was)


@dataclass(frozen=True, slots=True)
class ListSettings:
    open: bool = True
    until: int | None = None
    offer_seconds: int = DEFAULT_OFFER_SECONDS
    lanes: int = WAITLIST_LANES
    mapped: bool = False


@dataclass
class MemoryLists:
    """Every class's list: its settings, lanes, places (per lane, by order key), customers' entries
    (-> the reservation that joined), waiting records' places, and the offers' outbox."""

    settings: dict[SeatKey, ListSettings] = field(default_factory=dict)
    lanes: dict[tuple[SeatKey, int], Lane] = field(default_factory=dict)
    places: dict[tuple[SeatKey, int], dict[str, Place]] = field(default_factory=dict)
    entries: dict[tuple[SeatKey, str], str] = field(default_factory=dict)
    record_places: dict[str, tuple[int, str]] = field(default_factory=dict)
    outbox: set[str] = field(default_factory=set)
    fences: int = 0


class WaitlistMemory:
    """The in-memory store's waiting lists: `WaitlistStore` and the sweeper's part of `ListStore`."""

    waitlists: MemoryLists
    inventory: dict[SeatKey, SeatClassInventory]
    seat_rows: dict[SeatKey, dict[str, SeatRow]]
    records: dict[str, ReservationOutcome]
    status: dict[str, Outcome]
    expiry: dict[str, int | None]
    counted: set[str]
    shard_of: dict[str, int]
    pools_of: dict[str, tuple[str, ...]]
    pools: dict[tuple[str, str], PoolInventory]
    reads: int
    _begin_commit: Callable[[], None]
    _maybe_fail: Callable[[], None]
    _failures: Callable[[Sequence[Action]], list[Failure]]
    _apply: Callable[[Sequence[Action]], None]
    record: Callable[[str], ReservationRecord | None]

    # ------------------------------------------------------------------ the operator's commands

    def open_waitlist(
        self,
        key: SeatKey,
        *,
        until: int | None = None,
        offer_seconds: int = DEFAULT_OFFER_SECONDS,
        lanes: int = WAITLIST_LANES,
    ) -> None:
        """`seats waitlist open`: the list and its lanes (kept if they exist), the rule on the class."""
        lists = self.waitlists
        mapped = key not in self.inventory and bool(self.seat_rows.get(key))
        lists.settings[key] = ListSettings(True, until, offer_seconds, lanes, mapped)
        for lane in range(lanes):
            old = lists.lanes.get((key, lane), Lane(lane))
            lists.lanes[(key, lane)] = dataclasses.replace(
                old, open=True, until=until, offer_seconds=offer_seconds
            )
        self._set_rule(key, True)

    def add_waitlist_seats(self, key: SeatKey, seats: int) -> ListRefused | None:
        """`seats waitlist add-seats`: `seats` more seats for the class, set aside for its list."""
        item = self.inventory[key]
        capacity = item.shard_seats()[0].capacity
        return self._transact(added_seats_actions(key, seats, capacity=capacity, lane=0))

    def close_waitlist(self, key: SeatKey) -> None:
        """`seats waitlist close`: seats given back go on sale again; the list offers no more."""
        lists = self.waitlists
        lists.settings[key] = dataclasses.replace(lists.settings[key], open=False)
        for (k, lane), old in list(lists.lanes.items()):
            if k == key:
                lists.lanes[(k, lane)] = dataclasses.replace(old, open=False)
        self._set_rule(key, False)

    def _set_rule(self, key: SeatKey, waitlist: bool) -> None:
        if key in self.inventory:
            self.inventory[key] = dataclasses.replace(self.inventory[key], waitlist=waitlist)
        rows = self.seat_rows.get(key, {})
        for row_id, row in rows.items():
            rows[row_id] = dataclasses.replace(row, waitlist=waitlist)

    # ------------------------------------------------------------------ WaitlistStore

    def read_waitlist(self, key: SeatKey) -> WaitingList | None:
        self.reads += 1
        self._maybe_fail()
        settings = self.waitlists.settings.get(key)
        if settings is None:
            return None
        lanes = tuple(self.waitlists.lanes[(key, n)] for n in range(settings.lanes))
        return WaitingList(key, settings.open, settings.until, settings.offer_seconds, lanes, settings.mapped)

    def read_places(self, key: SeatKey, lane: int, *, after: str, before: str, limit: int) -> list[Place]:
        self.reads += 1
        self._maybe_fail()
        places = self.waitlists.places.get((key, lane), {})
        return [places[o] for o in sorted(places) if after < o < before][:limit]

    def fence_lanes(self, key: SeatKey, lanes: Sequence[int], frontier: str) -> None:
        self._maybe_fail()
        for n in lanes:
            lane = self.waitlists.lanes.get((key, n))
            if lane is not None and lane.frontier < frontier:
                self.waitlists.lanes[(key, n)] = dataclasses.replace(lane, frontier=frontier)
                self.waitlists.fences += 1

    def join_waitlist(self, join: Join) -> ListRefused | None:
        return self._transact(join_actions(join))

    def write_lanes(self, writes: Sequence[LaneWrite]) -> list[ListRefused | None]:
        return [self._transact(lane_actions(write)) for write in writes]

    def rebalance(self, rebalance: Rebalance) -> ListRefused | None:
        return self._transact(rebalance_actions(rebalance))

    def return_listed(self, back: ListedReturn) -> ListRefused | None:
        return self._transact(return_actions(back))

    def _transact(self, actions: Sequence[Action]) -> ListRefused | None:
        self._begin_commit()
        failures = self._failures(actions)
        if failures:
            return list_refusal(failures)
        self._apply(actions)
        return None

    # ------------------------------------------------------------------ the sweeper's part

    def find_open_lists(self) -> list[SeatKey]:
        self._maybe_fail()
        return sorted(
            (k for k, s in self.waitlists.settings.items() if s.open),
            key=lambda k: (k.event_id, k.seat_class),
        )

    def find_unpublished_offers(self, limit: int) -> list[ReservationRecord]:
        self._maybe_fail()
        found = [self.record(rid) for rid in sorted(self.waitlists.outbox)]
        return [r for r in found if r is not None][:limit]

    def mark_offers_published(self, records: Sequence[ReservationRecord]) -> int:
        cleared = 0
        for record in records:
            if record.reservation_id in self.waitlists.outbox:
                self.waitlists.outbox.discard(record.reservation_id)
                cleared += 1
        return cleared

    # ------------------------------------------------------------------ the actions' guards and writes

    def _check_change_lane(self, action: ChangeLane) -> object:
        lane = self.waitlists.lanes.get((action.key, action.lane))
        if lane is None or lane.waiting < -action.waiting:
            return lane
        if any(lane.seats.get(k, 0) < -n for k, n in action.ledger.items() if n < 0):
            return lane
        if (action.join is not None or action.offer_at is not None) and not lane.open:
            return lane
        if action.join is not None and not lane.frontier < action.join[0]:
            return lane
        if action.offer_at is not None and lane.until is not None and lane.until <= action.offer_at:
            return lane
        if action.empty and lane.waiting:
            return lane
        return HOLDS

    def _apply_change_lane(self, action: ChangeLane) -> None:
        lane = self.waitlists.lanes[(action.key, action.lane)]
        seats = dict(lane.seats)
        for k, n in action.ledger.items():
            seats[k] = seats.get(k, 0) + n
        frontier = action.join[1] if action.join is not None else lane.frontier
        self.waitlists.lanes[(action.key, action.lane)] = dataclasses.replace(
            lane, waiting=lane.waiting + action.waiting, seats=seats, frontier=frontier
        )

    def _check_put_place(self, action: PutPlace) -> object:
        place = action.place
        there = self.waitlists.places.get((place.key, place.lane), {})
        return place.order if place.order in there else HOLDS

    def _apply_put_place(self, action: PutPlace) -> None:
        place = action.place
        self.waitlists.places.setdefault((place.key, place.lane), {})[place.order] = place

    def _check_drop_place(self, action: DropPlace) -> object:
        place = action.place
        return HOLDS if place.order in self.waitlists.places.get((place.key, place.lane), {}) else None

    def _apply_drop_place(self, action: DropPlace) -> None:
        place = action.place
        del self.waitlists.places[(place.key, place.lane)][place.order]

    def _check_claim_entry(self, action: ClaimEntry) -> object:
        place = action.place
        return self.waitlists.entries.get((place.key, place.customer_id), HOLDS)

    def _apply_claim_entry(self, action: ClaimEntry) -> None:
        place = action.place
        self.waitlists.entries[(place.key, place.customer_id)] = place.reservation_id

    def _check_record_in(self, reservation_id: str, status: Outcome) -> object:
        current = self.record(reservation_id)
        return HOLDS if current is not None and current.status is status else current

    def _check_join_record(self, action: JoinRecord) -> object:
        return self._check_record_in(action.answer.reservation_id, Outcome.SOLD_OUT)

    def _apply_join_record(self, action: JoinRecord) -> None:
        rid = action.answer.reservation_id
        self.records[rid] = action.answer
        self.status[rid] = Outcome.WAITLISTED
        self.expiry[rid] = None
        self.waitlists.record_places[rid] = (action.place.lane, action.place.order)

    def _check_offer_record(self, action: OfferRecord) -> object:
        return self._check_record_in(action.answer.reservation_id, Outcome.WAITLISTED)

    def _apply_offer_record(self, action: OfferRecord) -> None:
        rid = action.answer.reservation_id
        self.records[rid] = action.answer
        self.status[rid] = Outcome.HELD
        self.waitlists.record_places.pop(rid, None)
        self.waitlists.outbox.add(rid)
        if action.shard:
            self.shard_of[rid] = action.shard
        if action.pools:
            self.pools_of[rid] = action.pools
        if action.counted:
            self.counted.add(rid)

    def _check_end_entry(self, action: EndEntry) -> object:
        return self._check_record_in(action.reservation_id, Outcome.WAITLISTED)

    def _apply_end_entry(self, action: EndEntry) -> None:
        rid = action.reservation_id
        if action.answer is not None:
            self.records[rid] = action.answer
        self.status[rid] = action.to
        self.expiry[rid] = action.expires_at
        self.waitlists.record_places.pop(rid, None)
        if action.announce:
            self.waitlists.outbox.add(rid)

    def _check_move_held(self, action: MoveHeld) -> object:
        item = self.inventory.get(action.key)
        shards = {s.shard: s for s in item.shard_seats()} if item is not None else {}
        seats = shards.get(action.shard)
        if item is None or seats is None or seats.held < -action.seats:
            return item
        if action.capacity is not None and seats.capacity != action.capacity:
            return item
        if action.waitlist is not None and item.waitlist != action.waitlist:
            return item
        return HOLDS

    def _apply_move_held(self, action: MoveHeld) -> None:
        item = self.inventory[action.key]
        shards = {s.shard: s for s in item.shard_seats()}
        old = shards[action.shard]
        shards[action.shard] = ShardSeats(
            old.shard, old.capacity + action.seats, old.available, old.held + action.seats, old.sold
        )
        parts = tuple(shards[n] for n in sorted(shards))
        self.inventory[action.key] = dataclasses.replace(
            item,
            capacity=sum(s.capacity for s in parts),
            held=sum(s.held for s in parts),
            shards=() if len(parts) == 1 and item.shard_items == 1 else parts,
        )


WAITLIST_CHECKS: dict[type, Callable[..., object]] = {
    ChangeLane: WaitlistMemory._check_change_lane,
    PutPlace: WaitlistMemory._check_put_place,
    DropPlace: WaitlistMemory._check_drop_place,
    ClaimEntry: WaitlistMemory._check_claim_entry,
    JoinRecord: WaitlistMemory._check_join_record,
    OfferRecord: WaitlistMemory._check_offer_record,
    EndEntry: WaitlistMemory._check_end_entry,
    MoveHeld: WaitlistMemory._check_move_held,
}
WAITLIST_APPLY: dict[type, Callable[..., None]] = {
    ChangeLane: WaitlistMemory._apply_change_lane,
    PutPlace: WaitlistMemory._apply_put_place,
    DropPlace: WaitlistMemory._apply_drop_place,
    ClaimEntry: WaitlistMemory._apply_claim_entry,
    JoinRecord: WaitlistMemory._apply_join_record,
    OfferRecord: WaitlistMemory._apply_offer_record,
    EndEntry: WaitlistMemory._apply_end_entry,
    MoveHeld: WaitlistMemory._apply_move_held,
}
