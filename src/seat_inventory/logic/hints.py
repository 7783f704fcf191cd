"""Per-container knowledge of seat classes, and the limits every transaction of the service obeys."""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from seat_inventory.logic.ports import Clock
from seat_inventory.logic.shards import Draws
from seat_inventory.models import SeatClassInventory, SeatKey, Throttled

_Result = TypeVar("_Result")

# DynamoDB allows 100 actions per transaction: one inventory update, one record per reservation
# and, when the class has a per-customer limit, one counter update per customer.
MAX_ACTIONS_PER_TRANSACTION = 100
# Each refused round teaches the planner something (a recorded duplicate, the seats left, a
# missing event, a closed sale, a customer's counter, a changed status); under heavy contention
# the state can change between rounds, so bound it.
MAX_SETTLE_ROUNDS = 8
# A transaction conflict is not a failure: another container's transaction held the same item for
# a few tens of milliseconds. It is retried in place with capped full-jitter exponential back-off
# until the invocation's deadline (`ConflictDeadline`); only a group that never got its turn by
# then is handed back to the queue. Throttling (`Throttled`: the hot partition's write units of
# this second are spent, cancelled attempts included) is the same kind of wait, retried the same
# way under the same deadline, with the same count of refusals in a row.
CONFLICT_BACKOFF_SECONDS = 0.02
CONFLICT_BACKOFF_CAP_SECONDS = 0.5
# Past this many doublings the pause is capped anyway (and 2**n stays a small number).
MAX_BACKOFF_DOUBLINGS = 10
# How long conflicts are retried when the caller gives no deadline (tools, tests, the sweeper).
DEFAULT_CONFLICT_PATIENCE_SECONDS = 20.0


@dataclass(slots=True)
class ConflictDeadline:
    """The clock time until which transaction conflicts are retried in place.

    The pauses it hands out are counted against the same budget, so retrying ends even under a
    clock that does not move while it sleeps (a test's); on a real clock that check never binds
    first, since the clock moves at least as far as the pauses.
    """

    at: float
    budget: float
    paused: float = 0.0

    @classmethod
    def until(cls, clock: Clock, at: float) -> ConflictDeadline:
        return cls(at, max(0.0, at - clock.now()))

    @classmethod
    def after(cls, clock: Clock, seconds: float = DEFAULT_CONFLICT_PATIENCE_SECONDS) -> ConflictDeadline:
        return cls.until(clock, clock.now() + seconds)

    def back_off(self, clock: Clock, conflicts: int) -> bool:
        """Sleeps a full-jitter exponential back-off after the `conflicts`-th conflict in a row and
        returns True; returns False (without sleeping) when the pause would end past the deadline."""
        ceiling = CONFLICT_BACKOFF_SECONDS * 2 ** min(conflicts, MAX_BACKOFF_DOUBLINGS)
        pause = random.uniform(0, min(CONFLICT_BACKOFF_CAP_SECONDS, ceiling))
        if clock.now() + pause > self.at or self.paused + pause > self.budget:
            return False
        self.paused += pause
        clock.sleep(pause)
        return True

    def patiently(self, clock: Clock, operation: Callable[[], _Result], what: str) -> _Result:
        """Calls `operation` (a read), retrying it in place with `back_off` while it is `Throttled`;
        raises `Throttled` when it is still refused at the deadline."""
        throttled = 0
        while True:
            try:
                return operation()
            except Throttled as exc:
                throttled += 1
                if not self.back_off(clock, throttled):
                    raise Throttled(
                        f"{what}: throttled {throttled} times in a row until the deadline"
                    ) from exc


# A group wanting at least this many seats is worth a second look at its class (one read) to learn
# how fast other containers take seats: a refused optimistic write of such a group costs two
# write units per reservation record in it, a read one read unit.
HOT_GROUP_SEATS = 10


@dataclass(frozen=True, slots=True)
class OwnShard:
    """The shard item a container takes a class's seats from, and the seats it last saw there."""

    shard: int
    left: int | None


@dataclass(slots=True)
class _Observation:
    """The seats left when this container last saw a class's item in DynamoDB, and what it took since."""

    available: int
    own_since: int = 0


class InventoryHints:
    """What this container learned about each seat class: the item as last seen, and how fast
    seats go.

    Only a hint. It decides whether a group starts with a strongly consistent read instead of an
    optimistic write, which per-customer limit and capacity the first write assumes, and how many
    seats a group takes at once when several containers compete for the last ones:

    - a class never seen, missing, closed, or with fewer seats left than the group wants is read
      first; after a sell-out, rejections are answered from a read and the transaction writes only
      their records, never the hot inventory item, even in a container that starts after it;
    - contention: between two observations of a class (consistent reads, or the item a refused
      write returned), the seats everyone took divided by the seats this container took estimate
      how many containers are taking seats at its pace. Seats left are then predicted as the last
      observation minus that factor times what this container took since, and a group reads first
      when the prediction leaves less than twice what the contenders want (the end of the sale);
      a class with a big group gets its second look early, to learn the factor;
    - `share`: once a read shows fewer seats than the contenders want, a group takes only its share
      of them (seats left / contention) in a small transaction and plans the rest from a new
      read. So containers racing for the last seats each commit a part instead of all but one
      having a whole batch's transaction refused.

    Correctness never rests on it: every seat is still taken through the guarded transaction,
    whose condition checks every assumption it was planned on.
    """

    _MISSING = -1

    def __init__(self, rng: Draws | None = None) -> None:
        # Draws the shard each transaction of a sharded class goes to (`logic.shards.route`); by
        # default the `random` module, so that a run seeded with `random.seed` is reproducible.
        self.rng: Draws = rng if rng is not None else random
        self._seats_left: dict[SeatKey, int] = {}
        self._items: dict[SeatKey, SeatClassInventory | None] = {}
        self._observed: dict[SeatKey, _Observation] = {}
        self._observations: dict[SeatKey, int] = {}
        self._contention: dict[SeatKey, float] = {}
        self._shards: dict[SeatKey, OwnShard] = {}

    def should_read_first(self, key: SeatKey, seats_wanted: int, now: float | None = None) -> bool:
        known = self._seats_left.get(key)
        item = self._items.get(key)
        if item is not None and now is not None and item.sale_closed_reason(now) is not None:
            return True
        if item is not None and item.shard_items > 1:
            # A sharded class: each container takes from a shard of its own (`logic.shards`), so
            # it never races others for one item and needs no estimate of their pace; it reads
            # the class whole only when the last such read left too few seats.
            return known is not None and known < seats_wanted
        if known is None:
            return True
        if known < seats_wanted:
            return True
        observed = self._observed.get(key)
        if observed is None:
            return False
        if self._observations.get(key, 0) == 1 and observed.own_since > 0 and seats_wanted >= HOT_GROUP_SEATS:
            return True  # the second look: how fast do others take seats?
        contention = self.contention(key)
        return self.predicted_left(key) < 2 * contention * seats_wanted

    def contention(self, key: SeatKey) -> float:
        """How many containers take this class's seats at this container's pace (at least 1)."""
        return self._contention.get(key, 1.0)

    def predicted_left(self, key: SeatKey) -> float:
        """Seats left now, as predicted from the last observation and the contention since."""
        observed = self._observed.get(key)
        if observed is None:
            known = self._seats_left.get(key, 0)
            return float(max(known, 0))
        return observed.available - self.contention(key) * observed.own_since

    def share(self, key: SeatKey, available: int, seats_wanted: int) -> int:
        """Seats a group may take at once out of `available` (just observed): all it wants, unless
        the contenders together want more than there is; then its share, at least one seat."""
        contention = self.contention(key)
        if contention <= 1.0 or available >= contention * seats_wanted:
            return seats_wanted
        return max(1, math.ceil(available / contention))

    def observe(self, key: SeatKey, item: SeatClassInventory | None) -> None:
        """Records the item as DynamoDB returned it (a consistent read, or a refused write's
        ALL_OLD), or None for no item, and updates the contention estimate. A view of one shard
        of a sharded class (not `complete`) says nothing about the class and is ignored."""
        if item is not None and not item.complete:
            return
        previous = self._observed.get(key)
        if item is None:
            self._observed.pop(key, None)
        else:
            if previous is not None and previous.own_since > 0:
                taken = previous.available - item.available
                self._contention[key] = max(1.0, taken / previous.own_since)
            self._observed[key] = _Observation(item.available)
            self._observations[key] = self._observations.get(key, 0) + 1
        self.learn_item(key, item)

    def took(self, key: SeatKey, seats: int, item: SeatClassInventory) -> None:
        """This container committed a transaction that took `seats`; `item` is the item as it
        predicts it now (not an observation)."""
        observed = self._observed.get(key)
        if observed is not None:
            observed.own_since += seats
        self.learn_item(key, item)

    def learn(self, key: SeatKey, seats_left: int | None) -> None:
        """Records this container's view of the seats left, or None for no inventory item."""
        self._seats_left[key] = self._MISSING if seats_left is None else seats_left

    def learn_item(self, key: SeatKey, item: SeatClassInventory | None) -> None:
        """Records the whole item (limit, sale status and window, capacity), or None for no item.

        One shard item of a sharded class (not `complete`) gives the class's rules and items but
        not its seats: the seats known stay those of the last view of the whole class."""
        self._items[key] = item
        if item is None or item.complete:
            self.learn(key, None if item is None else item.available)

    def own_shard(self, key: SeatKey) -> OwnShard | None:
        """This container's shard of a sharded class, None until it settles on one."""
        return self._shards.get(key)

    def settle_on(self, key: SeatKey, shard: int, left: int | None) -> None:
        """This container takes from `shard` (chosen from a survey, or a transaction committed
        there), which it saw with `left` available seats (None: not known)."""
        self._shards[key] = OwnShard(shard, left)

    def leave_shard(self, key: SeatKey) -> None:
        """A transaction conflicted on this container's shard: the next one looks for another."""
        self._shards.pop(key, None)

    def assumed(self, key: SeatKey) -> SeatClassInventory | None:
        """The item as last seen, for the assumptions of an optimistic write; None when never seen."""
        return self._items.get(key)
