"""Settles one group (the requests of one batch for one counted seat class) in one transaction.

Each round (`logic.rounds`) plans an answer for every pending request from what is known of the
class (`logic.group_plan`), picks the shard item the seats come from and trims the plan to one
transaction (`logic.group_routing`), and commits it; a refusal hands back what the write assumed
wrongly (the item as it is, a recorded duplicate, a customer's counter, a token's first user, a
pool) and the next round plans again from it. Transaction conflicts and throttling are waited
out in place until the deadline (`logic.retry_deadline`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from seat_inventory.logic.group_plan import (
    GroupKnowledge,
    GroupPlan,
    after_commit,
    plan_group,
    refusals_to_set_aside,
    rests_on_observations,
)
from seat_inventory.logic.group_routing import GroupRouter, GroupTake, left_on_shard
from seat_inventory.logic.inventory_hints import InventoryHints
from seat_inventory.logic.limits import MAX_SETTLE_ROUNDS
from seat_inventory.logic.ports import Clock, InventoryStore
from seat_inventory.logic.retry_deadline import ConflictDeadline
from seat_inventory.logic.rounds import run_rounds, wait_or_raise
from seat_inventory.logic.write_window import back_off_step
from seat_inventory.models import (
    TAKES_SEATS,
    ClassRules,
    ClassTake,
    Outcome,
    ReservationOutcome,
    ReservationRequest,
    RetryableError,
    SeatClassInventory,
    SeatKey,
    Take,
    Throttled,
    TransactionConflict,
    WriteRefused,
)


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
    settlement = GroupSettlement(
        key=key,
        store=store,
        clock=clock,
        hints=hints,
        deadline=deadline or ConflictDeadline.after(clock),
        now=int(clock.now()),
        rejection_ttl_seconds=rejection_ttl_seconds,
        queue=list(requests),
        requested={r.reservation_id: r for r in requests},
    )
    settlement.start()
    run_rounds(
        settlement,
        bound=MAX_SETTLE_ROUNDS,
        exhausted=lambda: RetryableError(f"{key} did not settle after {MAX_SETTLE_ROUNDS} rounds"),
    )
    return settlement.answers, settlement.leftover


@dataclass(slots=True)
class GroupSettlement:
    """One group's settlement in progress: what is pending, answered and known, round by round
    (a `logic.rounds.Planner`)."""

    key: SeatKey
    store: InventoryStore
    clock: Clock
    hints: InventoryHints
    deadline: ConflictDeadline
    now: int
    rejection_ttl_seconds: int
    queue: list[ReservationRequest]  # pending
    requested: dict[str, ReservationRequest]  # reservation id -> its request
    leftover: list[ReservationRequest] = field(default_factory=list)
    # Refusals set aside while the group's takes are written (`_set_refusals_aside`).
    aside: list[ReservationRequest] = field(default_factory=list)
    answers: dict[str, ReservationOutcome] = field(default_factory=dict)
    knowledge: GroupKnowledge = field(default_factory=GroupKnowledge)
    # Conflicts and throttling met in a row by the group's reads, surveys and writes (one back-off).
    conflicts: int = 0

    def start(self) -> None:
        """Takes the limit the first write assumes from the hints, and reads the item first when
        the hints say an optimistic write would be refused (or doomed)."""
        assumed = self.hints.assumed(self.key)
        self.knowledge.assumed_limit = assumed.max_per_customer if assumed is not None else None
        self.knowledge.assumed_admission = assumed.admission_required if assumed is not None else False
        self.knowledge.assumed_pools = assumed.pools if assumed is not None else ()
        seats = sum(r.quantity for r in self.queue)
        if self.knowledge.assumed_limit is not None and self.hints.reads_counters(self.key):
            # Customers at their limit lately: their counters are read first (with shard 0, the
            # limit), rather than found by a transaction they would cancel for everyone; those
            # at the limit need no read of the class, nor seats.
            self._read(whole=False, customers=list(dict.fromkeys(r.customer_id for r in self.queue)))
            seats = plan_group(self.key, self.queue, self.knowledge, now=self.now).seats_taken
            if not seats:
                return
        if self.hints.should_read_first(self.key, seats, self.now):
            # A class never seen is first read as its item alone: a sharded class's shard 0 tells
            # its rules and items without reading every shard item while others write to them.
            self._read(whole=assumed is not None)

    # ------------------------------------------------------------------ the rounds (`Planner`)

    def pending(self) -> bool:
        if not self.queue and self.aside:
            # The takes are written: the refusals set aside are planned again (from the same
            # observations) and written as their records alone.
            self.queue, self.aside = self.aside, []
        return bool(self.queue)

    def plan(self) -> GroupTake | bool:
        """The round's take; or, when it read first (a round) or set refusals aside, no take."""
        plan = plan_group(self.key, self.queue, self.knowledge, now=self.now)
        decided = rests_on_observations(plan, self.knowledge)
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
        take = GroupRouter(self).route(plan)
        if take is None:
            self._read()  # no item alone has the seats: read the class whole (seats move, or too few)
            return True
        return take

    def write(self, take: GroupTake) -> WriteRefused | None:
        """The plan's answers recorded with its seats taken (one transaction), or, taking none,
        its rejections recorded alone."""
        plan = take.plan
        expires_at = self.now + self.rejection_ttl_seconds
        if not plan.seats_taken:
            refused = self.store.record_rejections(plan.outcomes, expires_at=expires_at)
        else:
            refused = self.store.take(Take([self._part(take)], expires_at, now=self.now))
        self.hints.write_limit.admitted()
        return refused

    def _part(self, take: GroupTake) -> ClassTake:
        plan = take.plan
        return ClassTake(
            self.key,
            plan.outcomes,
            seats=plan.seats_taken,
            held=sum(o.quantity or 0 for o in plan.outcomes if o.outcome is Outcome.HELD),
            rules=ClassRules(plan.limit, plan.admission_required, plan.pools),
            counters=plan.customer_seats,
            shard=take.shard,
            moves=take.moves,
            pool_shards=take.pools.shards if take.pools else {},
            pool_moves=take.pools.moves if take.pools else {},
            token_uses=plan.token_uses,
            taken_at=self.clock.now(),
        )

    def contended(self, take: GroupTake, exc: TransactionConflict | Throttled) -> None:
        """Another transaction held the item (a sharded class's next try goes to another shard),
        or the table's units were spent (the records span every partition: another shard would
        not help; the container writes less at once instead). Wait for a turn."""
        if isinstance(exc, Throttled):
            self.hints.write_limit.throttled()
        else:
            self.hints.leave_shard(self.key)
            self.hints.write_limit.admitted()
        self._back_off_or_raise(exc, "transactions", "none committed before the deadline")

    def committed(self, take: GroupTake) -> None:
        """Everything pending is answered; the container notes what it took, and from where."""
        plan = take.plan
        if plan.seats_taken:
            left = left_on_shard(take.own, self.knowledge.view, take.shard, take.moves, plan.seats_taken)
            self.hints.settle_on(self.key, take.shard, left)
        self.answers.update((o.reservation_id, o) for o in plan.outcomes)
        self._learn_commit(plan)
        self.queue = []

    def learn(self, take: GroupTake, refused: WriteRefused) -> bool:
        """Takes in what a refused write handed back; True when that spent a round (it taught
        something other than customers' counters and tokens)."""
        settled = self._learn_answered(refused, take.plan)
        if refused.written:
            return True
        new_counters = self._learn_counters(refused, take.plan)
        # Tokens found used are progress too, bounded by the group's tokens: each is refused for
        # good (replayed) in the next plan.
        new_tokens = bool(refused.tokens_used.keys() - self.knowledge.tokens_used.keys())
        self.knowledge.tokens_used.update(refused.tokens_used)
        self._learn_pools(refused)
        if refused.inventory_refused:
            self._learn_inventory(refused.inventory, take)
        elif not (settled or refused.customer_seats or refused.tokens_used or refused.pools_refused):
            raise RetryableError(f"transaction for {self.key} refused without a reason the planner knows")
        return not (new_counters or new_tokens)

    # ------------------------------------------------------------------ what a round decides on

    def trim(self, plan: GroupPlan, fits: int) -> GroupPlan:
        """The plan for the first `fits` pending requests; the others wait for the next transaction."""
        if fits >= len(self.queue):
            return plan
        self.leftover = self.queue[fits:] + self.leftover
        self.queue = self.queue[:fits]
        return plan_group(self.key, self.queue, self.knowledge, now=self.now)

    def _set_refusals_aside(self, plan: GroupPlan) -> bool:
        """Sets aside the plan's refusals that rest on observations alone (`refusals_to_set_aside`):
        the transaction that takes seats then holds only the takes (fewer actions and write units,
        and a conflict there cancels no refusal), and the refusals are written after it as their
        records alone. True when it set some aside."""
        aside = refusals_to_set_aside(plan, self.knowledge)
        if not aside or len(aside) == len(self.queue):
            return False
        self.aside.extend(r for r in self.queue if r.reservation_id in aside)
        self.queue = [r for r in self.queue if r.reservation_id not in aside]
        return True

    def _customers_to_count(self, plan: GroupPlan) -> list[str]:
        """The pending customers whose counters a plan that gives seats to some of them reads first
        (`InventoryHints.reads_counters`); none when every counter it needs is known."""
        if plan.limit is None or not self.hints.reads_counters(self.key):
            return []
        known = self.knowledge.counted.keys() | self.knowledge.counters_held
        if all(o.outcome not in TAKES_SEATS or o.customer_id in known for o in plan.outcomes):
            return []
        return [c for c in dict.fromkeys(r.customer_id for r in self.queue) if c not in known]

    # ------------------------------------------------------------------ what a refusal tells

    def _learn_answered(self, refused: WriteRefused, plan: GroupPlan) -> set[str]:
        """Requests answered before (their stored answers, as duplicates) and, of a group of
        rejections (written one by one), those written: both settled. The rest of such a group
        (a transient fault kept them out) needs another write."""
        for reservation_id, stored in refused.already_recorded.items():
            self.answers[reservation_id] = stored.as_duplicate(self.requested[reservation_id].message_id)
        settled = refused.already_recorded.keys() | refused.written
        self.queue = [r for r in self.queue if r.reservation_id not in settled]
        if refused.written:
            self.answers.update(
                (o.reservation_id, o) for o in plan.outcomes if o.reservation_id in refused.written
            )
            self.leftover = self.queue + self.leftover
            self.queue = []
        return settled

    def _learn_counters(self, refused: WriteRefused, plan: GroupPlan) -> bool:
        """Customers' counters a refusal showed; whether any is newly learned (or grew since it was
        read): progress, bounded by the group's customers and their limit (a refusal shows only
        the counters of those the plan gave seats, so a group of many customers at their limit
        with few seats left needs more rounds than the bound)."""
        counted = self.knowledge.counted
        new_counters = any(counted.get(c) != seats for c, seats in refused.customer_seats.items())
        self.knowledge.counters_held.update(plan.customer_seats.keys() - refused.customer_seats.keys())
        counted.update(refused.customer_seats)
        if refused.customer_seats:
            self.hints.note_customers_at_limit(self.key, at_limit=True)
        if plan.limit is not None and plan.seats_taken > 0 and not refused.inventory_refused:
            # The inventory guard held: its check that the class's limit is the one the plan
            # assumed held in the same transaction as the counters' refusals.
            self.knowledge.observe_limit(plan.limit)
        return new_counters

    def _learn_pools(self, refused: WriteRefused) -> None:
        """A capacity pool's item as it was: the next plan fits in what it has left, or is refused
        SOLD_OUT (SALE_CLOSED) naming it (docs/guides/pools.md). One item of a sharded pool is not the
        pool: it is read whole, and the next plan moves seats or refuses from that."""
        whole = {n: p for n, p in refused.pools_refused.items() if p is None or p.complete}
        self.knowledge.pools.update(whole)
        self.hints.learn_pools(self.key, whole.values())
        if len(whole) < len(refused.pools_refused):
            self._read()

    def _learn_inventory(self, item: SeatClassInventory | None, take: GroupTake) -> None:
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

    def _learn_commit(self, plan: GroupPlan) -> None:
        """After a commit, the container knows what it took: the item as it predicts it now."""
        inventory = self.knowledge.inventory if self.knowledge.verified else self.hints.assumed(self.key)
        if inventory is not None:
            self.hints.learn_item(self.key, after_commit(inventory, plan))

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
            seats.get(r.customer_id, 0) + r.quantity > limit for r in self.queue
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
        """Waits out one more conflict or throttling in a row, or raises it past the deadline."""
        self.conflicts += 1
        message = (
            f"{self.conflicts} {what} in a row refused by conflicts or throttling (last: {exc}), {outcome}"
        )
        wait_or_raise(self.deadline, self.clock, back_off_step(exc, self.conflicts), exc, message)
