"""What a container keeps of mapped seat classes (docs/guides/seat-maps.md): each event's seat map and the
last view of each class's row items (`SeatMaps`), and what settling a mapped class needs from the
batch (`MappedContext`). A view is only for placing: every take is guarded on its seats."""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass, field

from seat_inventory.logic.ports import Clock, InventoryStore
from seat_inventory.logic.retry_deadline import ConflictDeadline
from seat_inventory.logic.seat_map import ClassMap, SeatMap
from seat_inventory.logic.seat_slices import Slice, deal
from seat_inventory.logic.shards import Draws
from seat_inventory.models import SeatKey, SeatRow

# A view of a whole class older than this is read again before placing best available.
VIEW_SECONDS = 2.0
# After a refused take, the view is read again once this old.
REFUSED_VIEW_SECONDS = 0.5
# A slice where this container saw another take (a refused take, a conflict, seats taken that its
# view did not show) within this many seconds is taken to be in use: tried only after every
# other slice with the seats (as `logic.shards.SHARD_IN_USE_SECONDS` does for shard items).
SLICE_IN_USE_SECONDS = 0.5
# Before a take in a slice, a container reads the slice and claims it for this long
# (`settle_mapped`), unless it holds a claim on it for at least half of that still (then it is the
# only one taking there: its view of the slice is as it is): a slice another container claimed is
# left (in use) rather than both taking there. On 20,000 stadium requests with `--event-pollers 7`,
# seats a second: 0.15 s 17,315; 0.08 s 18,580, 1% of the takes cancelled; 0.05 s 19,610, 6%;
# 0.3 s 12,277 (docs/guides/seat-maps.md, "Shorter claims").
CLAIM_SECONDS = 0.08
# A slice read this recently is placed on as read (its rows are as they were then) and claimed
# without reading it again.
SLICE_READ_SECONDS = 0.05


@dataclass(slots=True)
class SeatMaps:
    """Lives as long as the container: each event's seat map (a map never changes once created)
    and the last view of each mapped class's row items.

    An event without a map is not remembered: the caller asks only about classes it has not seen
    as counted (a class is one or the other, for good), so a map created after a container first
    saw its event is found at the next request."""

    maps: dict[str, SeatMap] = field(default_factory=dict)
    views: dict[SeatKey, dict[str, SeatRow]] = field(default_factory=dict)
    viewed_at: dict[SeatKey, float] = field(default_factory=dict)
    # Each class's slices (`seat_slices`), the one this container places in, and the smallest
    # quantity no block fits on the current view (forgotten whenever the view changes).
    slices: dict[SeatKey, tuple[Slice, ...]] = field(default_factory=dict)
    own_slice: dict[SeatKey, int] = field(default_factory=dict)
    no_fit: dict[SeatKey, int] = field(default_factory=dict)
    # Per class, the slices where another container was last seen taking, and when (`in_use`).
    busy: dict[SeatKey, dict[int, float]] = field(default_factory=dict)
    hurried: set[SeatKey] = field(default_factory=set)  # views to read again sooner (`stale_soon`)
    # This container's name in its claims (drawn at its first claim), and per class the slice
    # it last claimed and until when.
    owner: str | None = None
    claimed: dict[SeatKey, tuple[int, float]] = field(default_factory=dict)
    slice_read: dict[SeatKey, tuple[int, float]] = field(default_factory=dict)  # the last slice read, when

    def class_map(self, store: InventoryStore, key: SeatKey) -> ClassMap | None:
        """The class's map when it is mapped; None for a counted (or unknown) class."""
        seat_map = self.maps.get(key.event_id)
        if seat_map is None:
            seat_map = store.read_seat_map(key.event_id)
            if seat_map is None:
                return None
            self.maps[key.event_id] = seat_map
        return seat_map.classes.get(key.seat_class)

    def view(self, store: InventoryStore, key: SeatKey, now: float) -> dict[str, SeatRow]:
        if key not in self.views or now - self.viewed_at.get(key, 0.0) > VIEW_SECONDS:
            rows = store.read_seat_rows(key)
            self._forget_no_fit(key, rows)
            self.views[key] = rows
            self.viewed_at[key] = now
            self.hurried.discard(key)
        return self.views[key]

    def learn(self, key: SeatKey, rows: dict[str, SeatRow]) -> None:
        self._forget_no_fit(key, rows)
        self.views.setdefault(key, {}).update(rows)

    def _forget_no_fit(self, key: SeatKey, rows: dict[str, SeatRow]) -> None:
        """A quantity that fit nowhere still fits nowhere while no seat the view showed taken is
        free again (seats are only taken); a seat freed (a release) forgets it."""
        if key not in self.no_fit:
            return
        old = self.views.get(key, {})
        for row_id, row in rows.items():
            if row_id not in old or not old[row_id].states.keys() <= row.states.keys():
                self.no_fit.pop(key, None)
                return

    def stale_soon(self, key: SeatKey) -> None:
        """After a refused take: the view is read again once REFUSED_VIEW_SECONDS old (others may
        have sold elsewhere too), not at every refusal (the reads would be throttled)."""
        if key in self.viewed_at and key not in self.hurried:
            self.viewed_at[key] -= VIEW_SECONDS - REFUSED_VIEW_SECONDS
            self.hurried.add(key)

    def read_again_if_older(self, key: SeatKey, now: float, seconds: float) -> None:
        """When the view is older than `seconds`, the next `view` reads it again."""
        if now - self.viewed_at.get(key, now) > seconds:
            self.viewed_at[key] = now - VIEW_SECONDS - 1.0

    def leave(self, key: SeatKey, index: int | None, now: float) -> None:
        """Another container takes in slice `index` (None: the container's own): this one moves
        away from it, and keeps away while it is `in_use`."""
        own = self.own_slice.pop(key, None)
        index = own if index is None else index
        if index is not None:
            self.busy.setdefault(key, {})[index] = now

    def holds(self, key: SeatKey, index: int, now: float) -> bool:
        """Whether this container holds a claim on slice `index` for CLAIM_SECONDS / 2 more."""
        held = self.claimed.get(key)
        return held is not None and held[0] == index and held[1] - now >= CLAIM_SECONDS / 2

    def read_lately(self, key: SeatKey, index: int, now: float) -> bool:
        """Whether slice `index` was read within SLICE_READ_SECONDS (its rows are on the view as read)."""
        read = self.slice_read.get(key)
        return read is not None and read[0] == index and now - read[1] <= SLICE_READ_SECONDS

    def in_use(self, key: SeatKey, now: float) -> set[int]:
        """The slices another container was seen taking in within SLICE_IN_USE_SECONDS."""
        return {i for i, at in self.busy.get(key, {}).items() if now - at < SLICE_IN_USE_SECONDS}

    def slices_of(self, key: SeatKey, class_map: ClassMap) -> tuple[Slice, ...]:
        if key not in self.slices:
            self.slices[key] = deal(class_map)
        return self.slices[key]


def taken_seats(rows: dict[str, SeatRow]) -> set[str]:
    """The ids of the seats the rows show not free (row item `S-R1#0`'s position 7 is `S-R1-7`)."""
    taken: set[str] = set()
    for row in rows.values():
        taken.update(row.taken_seat_ids)
    return taken


@dataclass(frozen=True, slots=True)
class MappedContext:
    """What settling a mapped class needs from the batch: the store, the clock, the container's
    maps and views, the rejections' TTL and the deadline for retrying conflicts in place."""

    store: InventoryStore
    clock: Clock
    maps: SeatMaps
    rejection_ttl_seconds: int
    deadline: ConflictDeadline
    rng: Draws = random  # draws the container's slice (the `random` module: seeded runs repeat)


@dataclass(frozen=True, slots=True)
class MappedRules:
    """What a mapped class's row items say of its pools and admission (the first row's: every
    row carries the same, and each take is guarded on it)."""

    pools: tuple[str, ...] = ()
    admission_required: bool = False

    @classmethod
    def of(cls, rows: Mapping[str, SeatRow]) -> MappedRules:
        row = next(iter(rows.values()), None)
        return cls(row.pools, row.admission_required) if row is not None else cls()
