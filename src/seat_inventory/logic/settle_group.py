"""Settles one group (the requests of one batch for one seat class) in one conditional transaction.

Each round plans an answer for every pending request from what is known of the class, picks the
shard item the seats come from, trims the plan to one transaction, and commits it; a refusal
hands back what the write assumed wrongly (the item as it is, a recorded duplicate, a customer's
counter) and the next round plans again from it. Transaction conflicts and throttling are waited
out in place until the deadline (`logic.retry_deadline`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from seat_inventory.logic.admission_tokens import replay_refusal, use_expires_at
from seat_inventory.logic.inventory_hints import InventoryHints, OwnShard
from seat_inventory.logic.limits import MAX_ACTIONS_PER_TRANSACTION, MAX_SETTLE_ROUNDS
from seat_inventory.logic.ports import Clock, InventoryStore
from seat_inventory.logic.retry_deadline import ConflictDeadline
from seat_inventory.logic.shards import (
    gather_moves,
    gather_target,
    pick_shard,
    route,
    routed_shards,
    shards_with,
)
from seat_inventory.logic.write_window import back_off_step
from seat_inventory.models import (
    TAKES_SEATS,
    AdmissionCheck,
    ClassRules,
    ClassTake,
    Outcome,
    PoolInventory,
    ReservationOutcome,
    ReservationRequest,
    RetryableError,
    SeatClassInventory,
    SeatKey,
    ShardSurvey,
    StoreInconsistency,
    Take,
    Throttled,
    TokenUse,
    TransactionConflict,
    WriteRefused,
    iso_utc,
)

# How many times a container that needs a shard waits for one that no other container uses
# before it shares one in use (there are more containers than items with seats left). With 3,
# `seats simulate --requests 1000000 --containers 100 --shards 64` cancels 9.8% of transactions
# and hands back no message (docs/explanation/sharding.md, "How to size K": main at the end of issue 13).
MAX_SHARD_WAITS = 3
# A group taking seats for at most this many reservations does not wait: it shares an item in
# use at once. Waiting spares a conflict that would cancel a transaction of up to 100 actions,
# charged its write units; a small one risks little, and waiting only delays it while the items
# with seats are all in use (a repeated-customer sale's drain, where most customers of a group
# are at their limit and the few left take a few seats each). 24 is about half the reservations
# a transaction holds with a per-customer limit (49, each with its counter); docs/explanation/simulation.md,
# "Repeated customers on a pre-warmed table", has the runs.
SHARE_AT_ONCE_TAKES = 24


def settle_group(
    key: SeatKey,
    requests: Sequence[ReservationRequest],
    *,
    store: InventoryStore,
    clock: Clock,
    rejection_ttl_seconds: int,
    hints: InventoryHints,
    deadline: ConflictDeadline | None = None,
) -> tuple[dict[str, ReservationOutcome], list[ReservationRequest]]:
    """Commits the answers of one group in one transaction.

    Returns the answer for every reservation id it settled, and the requests (in order) that did
    not fit in that transaction's 100 actions, or (a group without seats, written record by
    record) that a transient fault kept out while others were written, and still need a write.
    Raises `RetryableError` when a transient fault prevented a commit, or transaction conflicts
    or throttling went on until `deadline` (default: `ConflictDeadline.after(clock)`); nothing
    was written then.
    """
    settlement = _Settlement(
        key=key,
        store=store,
        clock=clock,
        hints=hints,
        deadline=deadline or ConflictDeadline.after(clock),
        now=int(clock.now()),
        rejection_ttl_seconds=rejection_ttl_seconds,
        pending=list(requests),
        requested={r.reservation_id: r for r in requests},
    )
    return settlement.run()


@dataclass(slots=True)
class GroupKnowledge:
    """What the planner knows about one group's inventory item while settling it.

    `verified` is True once the item was observed during this settlement (a consistent read or a
    refused write's ALL_OLD); only then may a rejection be decided without the inventory guard in
    the same transaction. Before that, `assumed_limit` is the per-customer limit the optimistic
    write assumes (and its condition checks). `counted` holds customers' counters as refused
    counter updates reported them. `assumed_admission` is whether the class requires an admission
    token, as assumed (like the limit, checked by the write's guard); `tokens_used` holds the
    admission tokens refused writes reported used, and by which reservation. `assumed_pools` are
    the capacity pools the class is assumed to belong to (checked by the write's guard), and
    `pools` the pool items refused writes handed back (None: the pool does not exist).
    `counters_held` names the customers whose counter update held in a refused write (the
    planner need not read their counters). `observed_limit` is the class's per-customer limit as
    observed during this settlement (`limit_observed`): read with any of its items, handed back by
    a refused item, or checked by the inventory guard of a refused write whose guard held.
    `counted` holds observations too (a refused counter, or a counter read), so a LIMIT_EXCEEDED
    from both rests on items observed after the request came, as a SOLD_OUT rests on the class
    read: it is written without the inventory guard and without reading the class whole.
    """

    verified: bool = False
    inventory: SeatClassInventory | None = None
    assumed_limit: int | None = None
    counted: dict[str, int] = field(default_factory=dict)
    counters_held: set[str] = field(default_factory=set)
    observed_limit: int | None = None
    limit_observed: bool = False
    assumed_admission: bool = False
    tokens_used: dict[str, str] = field(default_factory=dict)
    assumed_pools: tuple[str, ...] = ()
    pools: dict[str, PoolInventory | None] = field(default_factory=dict)

    def observe(self, inventory: SeatClassInventory | None) -> None:
        self.verified = True
        self.inventory = inventory
        if inventory is not None:
            self.observe_limit(inventory.max_per_customer)
        if inventory is not None and inventory.pool_items is not None:
            # Pools read with the class are observed too (a missing one as None).
            found = {p.pool: p for p in inventory.pool_items}
            self.pools.update((name, found.get(name)) for name in inventory.pools)

    def observe_limit(self, limit: int | None) -> None:
        """The class's limit as an item read or a write's guard showed it during this settlement."""
        self.observed_limit = limit
        self.limit_observed = True

    @property
    def view(self) -> SeatClassInventory | None:
        """The item as observed during this settlement; None until then (or when there is none)."""
        return self.inventory if self.verified else None

    @property
    def limit(self) -> int | None:
        if self.verified:
            return self.inventory.max_per_customer if self.inventory else None
        return self.assumed_limit

    @property
    def admission_required(self) -> bool:
        if self.verified:
            return self.inventory.admission_required if self.inventory else False
        return self.assumed_admission

    @property
    def class_pools(self) -> tuple[str, ...]:
        """The capacity pools the class takes its seats from as well (docs/guides/pools.md)."""
        if self.verified:
            return self.inventory.pools if self.inventory else ()
        return self.assumed_pools


@dataclass(frozen=True, slots=True)
class GroupPlan:
    """One transaction's worth of answers: the seats they take, and the counter increments."""

    outcomes: list[ReservationOutcome]
    seats_taken: int
    limit: int | None
    customer_seats: dict[str, int]
    admission_required: bool = False
    token_uses: tuple[TokenUse, ...] = ()
    pools: tuple[str, ...] = ()

    @property
    def first_seats(self) -> int:
        """The seats of the first answer that takes seats (0 when none does)."""
        return next((o.quantity or 0 for o in self.outcomes if o.outcome in TAKES_SEATS), 0)


@dataclass(frozen=True, slots=True)
class _Take:
    """Where a round's plan takes its seats: shard item `shard`, after `moves` (shard -> seats) from
    others; `own` is the container's shard as routing found it, `on_own_shard` whether the plan
    was routed there (and trimmed to the seats last seen on it)."""

    plan: GroupPlan
    shard: int
    moves: dict[int, int]
    own: OwnShard | None
    on_own_shard: bool
    # Sharded pools (docs/guides/pools.md): the item of each pool the seats come off, and the seats
    # moved into it from the pool's other items (`_PoolRoute`).
    pools: _PoolRoute | None = None


@dataclass(slots=True)
class _Settlement:
    """One group's settlement in progress: what is pending, answered and known, round by round."""

    key: SeatKey
    store: InventoryStore
    clock: Clock
    hints: InventoryHints
    deadline: ConflictDeadline
    now: int
    rejection_ttl_seconds: int
    pending: list[ReservationRequest]
    requested: dict[str, ReservationRequest]  # reservation id -> its request
    leftover: list[ReservationRequest] = field(default_factory=list)
    # Refusals set aside while the group's takes are written (`_set_refusals_aside`).
    aside: list[ReservationRequest] = field(default_factory=list)
    answers: dict[str, ReservationOutcome] = field(default_factory=dict)
    knowledge: GroupKnowledge = field(default_factory=GroupKnowledge)
    # Conflicts and throttling met in a row by the group's reads, surveys and writes (one back-off).
    conflicts: int = 0

    def run(self) -> tuple[dict[str, ReservationOutcome], list[ReservationRequest]]:
        """Rounds until nothing is pending: the answers, and the requests left for another write."""
        self._start()
        rounds = 0
        while self.pending or self.aside:
            if not self.pending:
                # The takes are written: the refusals set aside are planned again (from the
                # same observations) and written as their records alone.
                self.pending, self.aside = self.aside, []
            if rounds >= MAX_SETTLE_ROUNDS:
                raise RetryableError(f"{self.key} did not settle after {MAX_SETTLE_ROUNDS} rounds")
            if self._round():
                rounds += 1
        return self.answers, self.leftover

    def _start(self) -> None:
        """Takes the limit the first write assumes from the hints, and reads the item first when
        the hints say an optimistic write would be refused (or doomed)."""
        assumed = self.hints.assumed(self.key)
        self.knowledge.assumed_limit = assumed.max_per_customer if assumed is not None else None
        self.knowledge.assumed_admission = assumed.admission_required if assumed is not None else False
        self.knowledge.assumed_pools = assumed.pools if assumed is not None else ()
        seats = sum(r.quantity for r in self.pending)
        if self.knowledge.assumed_limit is not None and self.hints.reads_counters(self.key):
            # Customers at their limit lately: their counters are read first (with shard 0, the
            # limit), rather than found by a transaction they would cancel for everyone; those
            # at the limit need no read of the class, nor seats.
            self._read(whole=False, customers=list(dict.fromkeys(r.customer_id for r in self.pending)))
            seats = plan_group(self.key, self.pending, self.knowledge, now=self.now).seats_taken
            if not seats:
                return
        if self.hints.should_read_first(self.key, seats, self.now):
            # A class never seen is first read as its item alone: a sharded class's shard 0 tells
            # its rules and items without reading every shard item while others write to them.
            self._read(whole=assumed is not None)

    def _round(self) -> bool:
        """Plans, routes and commits the pending requests once; True when it spent a round (it
        read the item, or a refusal taught something other than customers' counters)."""
        plan = plan_group(self.key, self.pending, self.knowledge, now=self.now)
        decided = _rests_on_observations(plan, self.knowledge)
        if plan.seats_taken == 0 and not self.knowledge.verified and not decided:
            # Rejections decided on assumptions alone would be written without the inventory
            # guard that checks them: observe the item first. LIMIT_EXCEEDED decided from counters
            # and a limit observed in this settlement need no read of the class.
            self._read()
            return True
        unknown = self._customers_to_count(plan)
        if unknown:
            # Customers at the limit met lately: the counters of those the plan gives seats are
            # read at once, rather than found a transaction at a time (each refusal shows only
            # the counters of the customers it gave seats, a few when few seats are left).
            self._read(whole=False, customers=unknown)
            return True
        if plan.seats_taken and self._set_refusals_aside(plan):
            return False
        take = self._route(plan)
        if take is None:
            self._read()  # no item alone has the seats: read the class whole (seats move, or too few)
            return True
        try:
            refused = self._commit(take)
        except (TransactionConflict, Throttled) as exc:
            # Another transaction held the item (a sharded class's next try goes to another
            # shard), or the table's units were spent (the records span every partition: another
            # shard would not help; the container writes less at once instead). Wait for a turn.
            if isinstance(exc, Throttled):
                self.hints.write_limit.throttled()
            else:
                self.hints.leave_shard(self.key)
                self.hints.write_limit.admitted()
            self._back_off_or_raise(exc, "transactions", "none committed before the deadline")
            return False
        self.hints.write_limit.admitted()
        if refused is None:
            self._committed(take)
            return True
        return self._learn_from(refused, take)

    def _set_refusals_aside(self, plan: GroupPlan) -> bool:
        """Sets aside the plan's LIMIT_EXCEEDED answers that rest on observations alone (the
        customer's counter, not seats this plan gives it, and the limit observed): the
        transaction that takes seats then holds only the takes (fewer actions and write units,
        and a conflict there cancels no refusal), and the refusals are written after it as their
        records alone. True when it set some aside."""
        limit = plan.limit
        counted = self.knowledge.counted
        if limit is None or not self.knowledge.limit_observed or self.knowledge.observed_limit != limit:
            return False
        aside = {
            o.reservation_id
            for o in plan.outcomes
            if o.outcome is Outcome.LIMIT_EXCEEDED
            and o.customer_id in counted
            and counted[o.customer_id or ""] + (o.quantity or 0) > limit
        }
        if not aside or len(aside) == len(self.pending):
            return False
        self.aside.extend(r for r in self.pending if r.reservation_id in aside)
        self.pending = [r for r in self.pending if r.reservation_id not in aside]
        return True

    def _customers_to_count(self, plan: GroupPlan) -> list[str]:
        """The pending customers whose counters a plan that gives seats to some of them reads first
        (`InventoryHints.reads_counters`); none when every counter it needs is known."""
        if plan.limit is None or not self.hints.reads_counters(self.key):
            return []
        known = self.knowledge.counted.keys() | self.knowledge.counters_held
        if all(o.outcome not in TAKES_SEATS or o.customer_id in known for o in plan.outcomes):
            return []
        return [c for c in dict.fromkeys(r.customer_id for r in self.pending) if c not in known]

    # ------------------------------------------------------------------ routing a round's plan

    def _route(self, plan: GroupPlan) -> _Take | None:
        """Where the plan takes its seats, trimmed to what one transaction holds; None when the
        class is sharded and no item alone has the seats of its first request."""
        view = self.knowledge.view
        seen = view or self.hints.assumed(self.key)
        if (
            seen is not None
            and seen.shard_items > 1
            and plan.seats_taken
            and (view is None or any(s.available >= plan.first_seats for s in view.shard_seats()))
        ):
            # A sharded class whose first request one item can serve: the group takes from this
            # container's shard. Only a request no item alone can serve needs a whole read and
            # seats moved.
            return self._take_from_own_shard(plan, seen)
        return self._take_routed(plan, seen, read_whole=view is not None)

    def _take_from_own_shard(self, plan: GroupPlan, seen: SeatClassInventory) -> _Take | None:
        """Takes from this container's shard as far as the seats last seen there go (its guard
        decides); settles on another one first when it has none or too few for the first request."""
        own = self.hints.own_shard(self.key)
        if own is None or (own.left is not None and own.left < plan.first_seats):
            takes = sum(1 for o in plan.outcomes if o.outcome in TAKES_SEATS)
            waits = 0 if takes <= SHARE_AT_ONCE_TAKES else MAX_SHARD_WAITS
            short_of = self._settle_on_a_shard(plan.first_seats, seen.shard_items, waits)
            if short_of is not None:
                return self._take_with_moves(plan, short_of)
            own = self.hints.own_shard(self.key)
            assert own is not None
        pool_moves = self._pool_route(own.shard, plan.seats_taken).move_count
        fits = min(
            _prefix_that_fits(plan, pool_moves), _prefix_within_seats(plan, own.left), self._window(plan)
        )
        plan = self._trim(plan, fits)
        return _Take(plan, own.shard, {}, own, True, self._pool_route(own.shard, plan.seats_taken))

    def _take_with_moves(self, plan: GroupPlan, survey: Sequence[ShardSurvey]) -> _Take | None:
        """No shard item alone has the seats of the first request, but the survey shows enough
        over several: the seats move into one item in the same transaction, each move guarded by
        its donor's `available >=` (a survey is no snapshot: the guards decide). None when the
        survey shows too few: only a consistent read of the whole class can say SOLD_OUT."""
        total = sum(s.available for s in survey)
        if total < plan.first_seats:
            return None
        plan = self._trim(plan, min(_prefix_within_seats(plan, total), self._window(plan)))
        now = self.clock.now()
        target = gather_target(survey, now, self.hints.rng)
        moves = gather_moves(survey, target, plan.seats_taken, now)
        pool_moves = self._pool_route(target.shard, plan.seats_taken).move_count
        fits = _prefix_that_fits(plan, len(moves) + pool_moves)
        if fits < len(self.pending):
            plan = self._trim(plan, fits)
            moves = gather_moves(survey, target, plan.seats_taken, now)  # fewer seats, no more donors
        own = OwnShard(target.shard, target.available)
        return _Take(plan, target.shard, moves, own, False, self._pool_route(target.shard, plan.seats_taken))

    def _take_routed(self, plan: GroupPlan, seen: SeatClassInventory | None, *, read_whole: bool) -> _Take:
        """A class of one item, or a sharded one read whole: the seats may have to move into one
        item from others, and each move is one more action in the transaction."""
        own = self.hints.own_shard(self.key)
        rng = self.hints.rng
        preferred = own.shard if own is not None else rng.randrange(routed_shards(seen))
        shard, moves = route(seen, plan.seats_taken, preferred, rng, read_whole=read_whole)
        pool_moves = self._pool_route(shard, plan.seats_taken).move_count
        fits = min(_prefix_that_fits(plan, len(moves) + pool_moves), self._window(plan))
        if fits < len(self.pending):
            plan = self._trim(plan, fits)
            # Fewer seats: the same item, or moves from no more items than planned for.
            shard, moves = route(seen, plan.seats_taken, shard, rng, read_whole=read_whole)
        return _Take(plan, shard, moves, own, False, self._pool_route(shard, plan.seats_taken))

    def _pool_route(self, shard: int, seats: int) -> _PoolRoute:
        """Where a take from class shard `shard` takes its seats off each sharded pool of the
        class (docs/guides/pools.md): the pool's item `shard mod K`, the seats moved into it as the
        pools' views in hand show them (the guards decide)."""
        views: dict[str, PoolInventory] = {}
        assumed = self.hints.assumed(self.key)
        if assumed is not None and assumed.pool_items:
            # Seen before this settlement: how many items each pool has, not their seats now.
            views.update((p.pool, dataclasses.replace(p, shards=())) for p in assumed.pool_items)
        views.update((name, p) for name, p in self.knowledge.pools.items() if p is not None)
        pools = self.knowledge.class_pools
        return _PoolRoute.of({name: v for name, v in views.items() if name in pools}, shard, seats)

    def _window(self, plan: GroupPlan) -> int:
        """How many of the pending requests this container writes in one transaction that takes
        seats: its adaptive window (`logic.write_window`); rejections alone are puts, not windowed."""
        return self.hints.write_limit.records if plan.seats_taken else len(self.pending)

    def _trim(self, plan: GroupPlan, fits: int) -> GroupPlan:
        """The plan for the first `fits` pending requests; the others wait for the next transaction."""
        if fits >= len(self.pending):
            return plan
        self.leftover = self.pending[fits:] + self.leftover
        self.pending = self.pending[:fits]
        return plan_group(self.key, self.pending, self.knowledge, now=self.now)

    def _settle_on_a_shard(self, seats: int, shard_items: int, waits: int) -> list[ShardSurvey] | None:
        """Surveys the class's shard items and settles on one that has `seats` and no other
        container; while every such item is in use, waits (like a conflict, until the deadline)
        and surveys again, at most `waits` times, then shares one. None once settled; the survey
        when no item alone has the seats."""
        for wait in range(waits + 1):
            survey = self.deadline.patiently(
                self.clock, lambda: self.store.survey_shards(self.key, shard_items), f"survey of {self.key}"
            )
            if not shards_with(survey, seats):
                return survey
            # After the last wait, items in use count too (more containers than items with seats).
            share = wait == waits
            picked = pick_shard(survey, seats, self.clock.now(), self.hints.rng, share=share)
            if picked is not None:
                self.hints.settle_on(self.key, picked.shard, picked.available)
                return None
            self.conflicts += 1
            if not self.deadline.back_off(self.clock, self.conflicts):
                raise TransactionConflict(
                    f"every shard item of {self.key} with {seats} seat(s) stayed in use by other"
                    " containers until the deadline"
                )
        raise AssertionError("unreachable: the last wait settles on a shard")

    # ------------------------------------------------------------------ writing and what it tells

    def _commit(self, take: _Take) -> WriteRefused | None:
        """The plan's answers recorded with its seats taken (one transaction), or, taking none,
        its rejections recorded alone."""
        plan = take.plan
        expires_at = self.now + self.rejection_ttl_seconds
        if not plan.seats_taken:
            return self.store.record_rejections(plan.outcomes, expires_at=expires_at)
        held = sum(o.quantity or 0 for o in plan.outcomes if o.outcome is Outcome.HELD)
        part = ClassTake(
            self.key,
            plan.outcomes,
            seats=plan.seats_taken,
            held=held,
            rules=ClassRules(plan.limit, plan.admission_required, plan.pools),
            counters=plan.customer_seats,
            shard=take.shard,
            moves=take.moves,
            pool_shards=take.pools.shards if take.pools else {},
            pool_moves=take.pools.moves if take.pools else {},
            token_uses=plan.token_uses,
            taken_at=self.clock.now(),
        )
        return self.store.take(Take([part], expires_at, now=self.now))

    def _committed(self, take: _Take) -> None:
        """Everything pending is answered; the container notes what it took, and from where."""
        plan = take.plan
        if plan.seats_taken:
            left = _left_on_shard(take.own, self.knowledge.view, take.shard, take.moves, plan.seats_taken)
            self.hints.settle_on(self.key, take.shard, left)
        self.answers.update((o.reservation_id, o) for o in plan.outcomes)
        _learn_commit(self.hints, self.key, self.knowledge, plan)
        self.pending = []

    def _learn_from(self, refused: WriteRefused, take: _Take) -> bool:
        """Takes in what a refused write handed back; True when that spent a round (it taught
        something other than customers' counters)."""
        for reservation_id, stored in refused.already_recorded.items():
            self.answers[reservation_id] = stored.as_duplicate(self.requested[reservation_id].message_id)
        settled = refused.already_recorded.keys() | refused.written
        self.pending = [r for r in self.pending if r.reservation_id not in settled]
        if refused.written:
            # Records of a group without seats are written one by one: those written stand, and
            # are handed back now; the rest (a transient fault kept them out) need another write.
            self.answers.update(
                (o.reservation_id, o) for o in take.plan.outcomes if o.reservation_id in refused.written
            )
            self.leftover = self.pending + self.leftover
            self.pending = []
            return True
        # Customers' counters newly learned (or grown since they were read) are progress, bounded
        # by the group's customers and their limit (a refusal shows only the counters of those
        # the plan gave seats, so a group of many customers at their limit with few seats left
        # needs more rounds than the bound).
        counted = self.knowledge.counted
        new_counters = any(counted.get(c) != seats for c, seats in refused.customer_seats.items())
        self.knowledge.counters_held.update(take.plan.customer_seats.keys() - refused.customer_seats.keys())
        self.knowledge.counted.update(refused.customer_seats)
        if refused.customer_seats:
            self.hints.note_customers_at_limit(self.key, at_limit=True)
        if _limit_checked_by(refused, take.plan):
            self.knowledge.observe_limit(take.plan.limit)
        # Tokens found used are progress too, bounded by the group's tokens: each is refused for
        # good (replayed) in the next plan.
        new_tokens = bool(refused.tokens_used.keys() - self.knowledge.tokens_used.keys())
        self.knowledge.tokens_used.update(refused.tokens_used)
        # A capacity pool's item as it was: the next plan fits in what it has left, or is
        # refused SOLD_OUT (SALE_CLOSED) naming it (docs/guides/pools.md). One item of a sharded pool
        # is not the pool: it is read whole, and the next plan moves seats or refuses from that.
        whole = {n: p for n, p in refused.pools_refused.items() if p is None or p.complete}
        self.knowledge.pools.update(whole)
        self.hints.learn_pools(self.key, whole.values())
        if len(whole) < len(refused.pools_refused):
            self._read()
        if refused.inventory_refused:
            self._learn_inventory(refused.inventory, take)
        elif not (settled or refused.customer_seats or refused.tokens_used or refused.pools_refused):
            raise RetryableError(f"transaction for {self.key} refused without a reason the planner knows")
        return not (new_counters or new_tokens)

    def _learn_inventory(self, item: SeatClassInventory | None, take: _Take) -> None:
        """The inventory guard refused and handed back `item` as it was (None: there is none)."""
        if item is not None:
            self.knowledge.observe_limit(item.max_per_customer)  # every shard item has the class's
        if item is None or item.complete:
            self._observe(item)
        elif (
            take.on_own_shard
            and item.sale_closed_reason(self.now) is None
            and item.max_per_customer == take.plan.limit
            and item.admission_required == take.plan.admission_required
        ):
            # This container's shard alone is short: the next round takes what it has left, or
            # looks for another shard.
            self.hints.settle_on(self.key, take.shard, item.available)
        else:
            self._read()  # one shard refused: its numbers are not the class's; read every shard

    # ------------------------------------------------------------------ reading the item

    def _read(self, *, whole: bool = True, customers: Sequence[str] = ()) -> None:
        """Reads the item consistently and takes it in; a sharded class's shard 0 alone (`whole`
        False) gives its rules and items to route by, not its seats; `customers` (with `whole`
        False) reads their counters with it."""
        inventory = self._read_patiently(whole, customers)
        if inventory is not None and inventory.counters is not None:
            self._take_counters(inventory)
        if inventory is not None:
            self.knowledge.observe_limit(inventory.max_per_customer)
        if inventory is not None and not inventory.complete:
            self.hints.learn_item(self.key, inventory)
            self.knowledge.assumed_limit = inventory.max_per_customer
            self.knowledge.assumed_admission = inventory.admission_required
            self.knowledge.assumed_pools = inventory.pools
            if inventory.sale_closed_reason(self.now) is not None:
                self._read()  # closed: nobody writes to its items, and only a whole read can say so
            return
        self._observe(inventory)

    def _take_counters(self, inventory: SeatClassInventory) -> None:
        """Counters read with the item: the plan decides from them, and the container notes
        whether any pending request would pass the limit (`InventoryHints.reads_counters`)."""
        seats = inventory.customer_seats
        self.knowledge.counted.update(seats)
        limit = inventory.max_per_customer
        at_limit = limit is not None and any(
            seats.get(r.customer_id, 0) + r.quantity > limit for r in self.pending
        )
        self.hints.note_customers_at_limit(self.key, at_limit=at_limit)

    def _read_patiently(self, whole: bool, customers: Sequence[str] = ()) -> SeatClassInventory | None:
        """A consistent read of a sharded class (`TransactGetItems`) is cancelled by a transaction
        in flight on one of its items, and any read of a hot item may be throttled: like a
        conflicting or throttled write, it is retried until the deadline."""
        while True:
            try:
                if customers:
                    return self.store.read_inventory(self.key, whole=whole, customers=customers)
                return self.store.read_inventory(self.key, whole=whole)
            except (TransactionConflict, Throttled) as exc:
                self._back_off_or_raise(exc, "reads", "no consistent read before the deadline")

    def _observe(self, inventory: SeatClassInventory | None) -> None:
        self.knowledge.observe(inventory)
        self.hints.observe(self.key, inventory)

    def _back_off_or_raise(self, exc: TransactionConflict | Throttled, what: str, outcome: str) -> None:
        """Waits out one more conflict or throttling in a row, or raises it when the back-off
        would end past the deadline."""
        self.conflicts += 1
        if not self.deadline.back_off(self.clock, back_off_step(exc, self.conflicts)):
            raise type(exc)(
                f"{self.conflicts} {what} in a row refused by conflicts or throttling (last: {exc}),"
                f" {outcome}"
            ) from exc


def plan_group(
    key: SeatKey, pending: Sequence[ReservationRequest], knowledge: GroupKnowledge, *, now: int
) -> GroupPlan:
    """Decides an answer for each pending request of one group.

    With nothing verified yet every request is planned to take its seats (within the assumed
    per-customer limit): the transaction's guard decides. Once the item has been observed, a
    missing item is UNKNOWN_EVENT, a closed sale SALE_CLOSED, and otherwise the group is filled
    greedily in arrival order; what passes a customer's limit is LIMIT_EXCEEDED and what does
    not fit is SOLD_OUT. In a class that requires admission, a request without a token that
    admits it (or whose token another reservation used) is ADMISSION_REFUSED before anything else;
    one that takes seats spends its token in the same write.
    """
    if knowledge.verified and knowledge.inventory is None:
        reason = f"event {key.event_id!r} has no seat class {key.seat_class!r}"
        return GroupPlan([_answer(r, Outcome.UNKNOWN_EVENT, reason, None) for r in pending], 0, None, {})
    inventory = knowledge.view
    pools = _PoolRoom.of(key, knowledge)
    closed = inventory.sale_closed_reason(now) if inventory is not None else None
    closed = closed or pools.closed_reason()
    if closed:
        return GroupPlan([_answer(r, Outcome.SALE_CLOSED, closed, None) for r in pending], 0, None, {})
    limit = knowledge.limit
    left = inventory.available if inventory is not None else None
    taken_by_customer: dict[str, int] = {}
    decisions: list[tuple[ReservationRequest, Outcome, int]] = []  # request, outcome, counted before
    admission = _AdmissionPlan(knowledge.tokens_used) if knowledge.admission_required else None
    for request in pending:
        counted = knowledge.counted.get(request.customer_id, 0) + taken_by_customer.get(
            request.customer_id, 0
        )
        if admission is not None and admission.refuse(request):
            decisions.append((request, Outcome.ADMISSION_REFUSED, counted))
        elif limit is not None and counted + request.quantity > limit:
            decisions.append((request, Outcome.LIMIT_EXCEEDED, counted))
        elif (left is not None and request.quantity > left) or not pools.fits(request.quantity):
            decisions.append((request, Outcome.SOLD_OUT, counted))
        else:
            pools.take(request.quantity)
            if left is not None:
                left -= request.quantity
            taken_by_customer[request.customer_id] = (
                taken_by_customer.get(request.customer_id, 0) + request.quantity
            )
            if admission is not None:
                admission.spend(request)
            decisions.append((request, Outcome.HELD if request.is_hold else Outcome.CONFIRMED, counted))
    refusals = admission.refusals if admission is not None else {}
    outcomes = [
        _decided_answer(
            key,
            request,
            outcome,
            counted,
            limit=limit,
            left=left,
            now=now,
            refusal=refusals.get(request.reservation_id),
            pools=pools,
        )
        for request, outcome, counted in decisions
    ]
    seats = sum(taken_by_customer.values())
    return GroupPlan(
        outcomes,
        seats,
        limit,
        taken_by_customer if limit is not None else {},
        admission_required=admission is not None,
        token_uses=tuple(admission.uses) if admission is not None else (),
        pools=pools.names,
    )


@dataclass(slots=True)
class _PoolRoom:
    """The capacity pools side of one plan (docs/guides/pools.md): the seats left in each pool a refused
    write handed back, as the plan takes them. Pools not seen yet are not bounded here: the
    write's guard on each pool item decides."""

    names: tuple[str, ...]
    known: dict[str, PoolInventory]
    left: dict[str, int]

    @classmethod
    def of(cls, key: SeatKey, knowledge: GroupKnowledge) -> _PoolRoom:
        names = knowledge.class_pools
        known: dict[str, PoolInventory] = {}
        for name in names:
            if name not in knowledge.pools:
                continue
            pool = knowledge.pools[name]
            if pool is None:
                raise StoreInconsistency(
                    f"{key.event_id} {key.seat_class} takes from pool {name!r}, which does not exist"
                )
            if pool.complete:
                # One item of a sharded pool bounds nothing: only a whole read decides a refusal.
                known[name] = pool
        return cls(names, known, {name: pool.available for name, pool in known.items()})

    def closed_reason(self) -> str | None:
        return next((r for p in self.known.values() if (r := p.closed_reason()) is not None), None)

    def fits(self, seats: int) -> bool:
        return all(seats <= left for left in self.left.values())

    def take(self, seats: int) -> None:
        for name in self.left:
            self.left[name] -= seats

    def tightest(self) -> tuple[str, int] | None:
        """The known pool with the fewest seats left, and how many; None when none is known."""
        return min(self.left.items(), key=lambda item: item[1]) if self.left else None


@dataclass(frozen=True, slots=True)
class _PoolRoute:
    """Where a take's seats come off its sharded pools (docs/guides/pools.md): a take from shard s of
    a class writes item `s mod K` of a pool of K items (so a container that owns class shard s
    owns that pool item as far as the class's shards spread over containers), and when a view of
    the whole pool shows that item short, seats (and as much capacity) move into it from the
    pool's fullest other items in the same transaction, each guarded by `available >=` what it
    gives. Pools of one item: shard 0, no moves."""

    shards: dict[str, int]
    moves: dict[str, dict[int, int]]

    @property
    def move_count(self) -> int:
        return sum(len(m) for m in self.moves.values())

    @classmethod
    def of(cls, views: Mapping[str, PoolInventory], shard: int, seats: int) -> _PoolRoute:
        shards: dict[str, int] = {}
        moves: dict[str, dict[int, int]] = {}
        for name, view in views.items():
            if view.shard_count <= 1:
                continue
            target = view.shard_for(shard)
            shards[name] = target
            if view.shards and seats:
                moves[name] = view.moves_into(target, seats)
        return cls(shards, {name: m for name, m in moves.items() if m})


@dataclass(slots=True)
class _AdmissionPlan:
    """The admission side of one plan: who is refused and why, and the tokens the takes spend.

    A token spends once: after another reservation used it (`used`, as refused writes told) or
    after an earlier request of this plan took seats with it, it is a replay.
    """

    used: Mapping[str, str]  # token id -> the reservation that used it
    spent: dict[str, str] = field(default_factory=dict)  # token id -> reservation, in this plan
    uses: list[TokenUse] = field(default_factory=list)
    refusals: dict[str, str] = field(default_factory=dict)  # reservation id -> why refused

    def refuse(self, request: ReservationRequest) -> bool:
        """True (and the reason noted) when the request's token does not admit it."""
        check = request.admission or AdmissionCheck()
        if check.refusal is None and check.token_id is None:
            check = AdmissionCheck(refusal="admission token not verified")
        holder = None
        if check.refusal is None and check.token_id is not None:
            holder = self.spent.get(check.token_id) or self.used.get(check.token_id)
        if holder == request.reservation_id:
            holder = None  # the same reservation again (a redelivery): not a replay
        reason = check.refusal or (replay_refusal(holder) if holder is not None else None)
        if reason is not None:
            self.refusals[request.reservation_id] = reason
        return reason is not None

    def spend(self, request: ReservationRequest) -> None:
        check = request.admission
        assert check is not None and check.token_id is not None
        self.spent[check.token_id] = request.reservation_id
        self.uses.append(TokenUse(check.token_id, request.reservation_id, use_expires_at(check)))


def _decided_answer(
    key: SeatKey,
    request: ReservationRequest,
    outcome: Outcome,
    counted: int,
    *,
    limit: int | None,
    left: int | None,
    now: int,
    refusal: str | None = None,
    pools: _PoolRoom | None = None,
) -> ReservationOutcome:
    """The answer `plan_group` decided, with its reason; `left` is what the group leaves (in the
    class, or in its tightest known pool when that has fewer: a SOLD_OUT then names the pool)."""
    tightest = pools.tightest() if pools is not None else None
    pool_name: str | None = None
    if tightest is not None and (left is None or tightest[1] < left):
        pool_name, left = tightest
    if outcome is Outcome.ADMISSION_REFUSED:
        return _answer(request, outcome, refusal or "admission token refused", left)
    if outcome is Outcome.CONFIRMED:
        return _answer(request, outcome, f"{request.quantity} seat(s) confirmed", left)
    if outcome is Outcome.HELD:
        expires_at = now + (request.hold_seconds or 0)
        reason = f"{request.quantity} seat(s) held until {iso_utc(expires_at)}"
        return _answer(request, outcome, reason, left, hold_expires_at=expires_at)
    if outcome is Outcome.SOLD_OUT:
        where = f" in pool {pool_name}" if pool_name is not None else ""
        return _answer(request, outcome, f"requested {request.quantity} seat(s), {left} left{where}", left)
    return _answer(
        request,
        outcome,
        f"customer {request.customer_id!r} may take at most {limit} seat(s) of"
        f" {key.event_id} {key.seat_class}; {counted} already taken,"
        f" {request.quantity} requested",
        left,
    )


def _answer(
    request: ReservationRequest,
    outcome: Outcome,
    reason: str,
    remaining: int | None,
    *,
    hold_expires_at: int | None = None,
) -> ReservationOutcome:
    return ReservationOutcome(
        reservation_id=request.reservation_id,
        outcome=outcome,
        reason=reason,
        event_id=request.event_id,
        seat_class=request.seat_class,
        quantity=request.quantity,
        customer_id=request.customer_id,
        remaining=remaining,
        message_id=request.message_id,
        request_type=request.request_type,
        hold_expires_at=hold_expires_at,
    )


def _limit_checked_by(refused: WriteRefused, plan: GroupPlan) -> bool:
    """True when a refused write's inventory guard held: its check that the class's limit is the
    one the plan assumed held in the same transaction as the counters' refusals. DynamoDB reports
    a null code for each action whose condition held (API `CancellationReason`); a refused item's
    own limit is taken in by `_learn_inventory`."""
    return plan.limit is not None and plan.seats_taken > 0 and not refused.inventory_refused


def _rests_on_observations(plan: GroupPlan, knowledge: GroupKnowledge) -> bool:
    """True when every answer of a plan that takes no seats is a LIMIT_EXCEEDED decided from the
    customer's counter and the class's limit as observed during this settlement."""
    return (
        plan.limit is not None
        and knowledge.limit_observed
        and knowledge.observed_limit == plan.limit
        and all(
            o.outcome is Outcome.LIMIT_EXCEEDED and (o.customer_id or "") in knowledge.counted
            for o in plan.outcomes
        )
    )


def _prefix_that_fits(plan: GroupPlan, shard_moves: int = 0) -> int:
    """How many of the plan's answers (in arrival order) fit in one transaction with their actions,
    leaving room for `shard_moves` actions that move seats between shard items."""
    actions = shard_moves
    inventory_counted = False
    pool_actions = len(plan.pools)
    customers: set[str] = set()
    spending = {use.reservation_id for use in plan.token_uses}
    for index, outcome in enumerate(plan.outcomes):
        extra = 2 if outcome.reservation_id in spending else 1
        takes_seats = outcome.outcome in TAKES_SEATS
        if takes_seats and not inventory_counted:
            extra += 1 + pool_actions
        if takes_seats and plan.limit is not None and outcome.customer_id not in customers:
            extra += 1
        if actions + extra > MAX_ACTIONS_PER_TRANSACTION:
            return index
        actions += extra
        if takes_seats:
            inventory_counted = True
            if plan.limit is not None:
                customers.add(outcome.customer_id or "")
    return len(plan.outcomes)


def _prefix_within_seats(plan: GroupPlan, left: int | None) -> int:
    """How many of the plan's answers (in arrival order) take no more than `left` seats in all
    (None: no bound); the rest waits for the next transaction."""
    if left is None:
        return len(plan.outcomes)
    taken = 0
    for index, outcome in enumerate(plan.outcomes):
        if outcome.outcome in TAKES_SEATS:
            taken += outcome.quantity or 0
            if taken > left:
                return index
    return len(plan.outcomes)


def _left_on_shard(
    own: OwnShard | None,
    view: SeatClassInventory | None,
    shard: int,
    moves: Mapping[int, int],
    seats_taken: int,
) -> int | None:
    """The seats a committed take left on `shard`, as far as this container knows them."""
    if view is not None:
        seen = next((s for s in view.shard_seats() if s.shard == shard), None)
        return None if seen is None else seen.available + sum(moves.values()) - seats_taken
    if own is not None and own.shard == shard and own.left is not None:
        return own.left + sum(moves.values()) - seats_taken
    return None


def _learn_commit(hints: InventoryHints, key: SeatKey, knowledge: GroupKnowledge, plan: GroupPlan) -> None:
    """After a commit, the container knows what it took: the item as it predicts it now."""
    inventory = knowledge.inventory if knowledge.verified else hints.assumed(key)
    if inventory is None:
        return
    held = sum(o.quantity or 0 for o in plan.outcomes if o.outcome is Outcome.HELD)
    pool_items = inventory.pool_items
    if pool_items is not None and plan.seats_taken:
        # The pools read with the class gave the same seats (docs/guides/pools.md).
        pool_items = tuple(
            dataclasses.replace(p, available=p.available - plan.seats_taken) if p.pool in plan.pools else p
            for p in pool_items
        )
    hints.learn_item(
        key,
        dataclasses.replace(
            inventory,
            available=inventory.available - plan.seats_taken,
            held=inventory.held + held,
            sold=inventory.sold + plan.seats_taken - held,
            pool_items=pool_items,
        ),
    )
