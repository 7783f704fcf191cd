"""A counted group's plan: an answer for each pending request of one seat class, judged by the rule
book against what the settlement knows of the class (`GroupKnowledge`), and how many of them one
transaction holds. Pure: no store, no clock."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from seat_inventory.logic import answers
from seat_inventory.logic.admission_tokens import use_expires_at
from seat_inventory.logic.limits import MAX_ACTIONS_PER_TRANSACTION
from seat_inventory.logic.rules import ClassFacts, Judgement, LineAsk, admission_refusal, judge
from seat_inventory.models import (
    TAKES_SEATS,
    Outcome,
    PoolInventory,
    ReservationOutcome,
    ReservationRequest,
    SeatClassInventory,
    SeatKey,
    StoreInconsistency,
    TokenUse,
)


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


def plan_group(
    key: SeatKey, pending: Sequence[ReservationRequest], knowledge: GroupKnowledge, *, now: int
) -> GroupPlan:
    """Decides an answer for each pending request of one group, by the rule book (`logic.rules`).

    With nothing verified yet every request is planned to take its seats (within the assumed
    per-customer limit): the transaction's guard decides. Once the item has been observed, the
    group is filled greedily in arrival order, each request judged against what the requests
    before it left: the class's seats, each pool's known whole, the customer's counter, the
    tokens spent. A request that takes spends its token in the same write. Every answer tells
    the seats the group leaves (in the class, or in its tightest known pool when that has fewer).
    """
    inventory = knowledge.view
    pools = _PoolRoom.of(key, knowledge)
    closed = inventory.sale_closed_reason(now) if inventory is not None else None
    facts = ClassFacts(
        missing=knowledge.verified and inventory is None,
        closed=closed or pools.closed_reason(),
        limit=knowledge.limit,
        admission_required=knowledge.admission_required,
        seats_left=inventory.available if inventory is not None else None,
        pools_left=pools.left,
    )
    taken_by_customer: dict[str, int] = {}
    admission = _AdmissionPlan(knowledge.tokens_used)
    judged: list[tuple[ReservationRequest, Judgement]] = []
    for request in pending:
        counted = knowledge.counted.get(request.customer_id, 0) + taken_by_customer.get(
            request.customer_id, 0
        )
        refusal = admission.refusal(request) if facts.admission_required else None
        judgement = judge(LineAsk(request.quantity, counted, refusal), facts)
        judged.append((request, judgement))
        if judgement.takes:
            pools.take(request.quantity)
            if facts.seats_left is not None:
                facts = dataclasses.replace(facts, seats_left=facts.seats_left - request.quantity)
            taken_by_customer[request.customer_id] = (
                taken_by_customer.get(request.customer_id, 0) + request.quantity
            )
            if facts.admission_required:
                admission.spend(request)
    return GroupPlan(
        _answers(judged, facts.seats_left, pools, now),
        sum(taken_by_customer.values()),
        facts.limit,
        taken_by_customer if facts.limit is not None else {},
        admission_required=facts.admission_required,
        token_uses=tuple(admission.uses),
        pools=pools.names,
    )


def _answers(
    judged: Sequence[tuple[ReservationRequest, Judgement]], left: int | None, pools: _PoolRoom, now: int
) -> list[ReservationOutcome]:
    """The group's answers: each tells the seats it leaves, in the class or in its tightest known
    pool (a SOLD_OUT then names the pool); an unknown or closed class tells none."""
    tightest = pools.tightest()
    pool: str | None = None
    if tightest is not None and (left is None or tightest[1] < left):
        pool, left = tightest
    outcomes = []
    for request, judgement in judged:
        if judgement.takes:
            outcomes.append(answers.taken(request, now, remaining=left))
        elif judgement.outcome in (Outcome.UNKNOWN_EVENT, Outcome.SALE_CLOSED):
            outcomes.append(answers.refused(request, judgement))
        else:
            final = dataclasses.replace(judgement, left=left, pool=pool)
            outcomes.append(answers.refused(request, final, remaining=left))
    return outcomes


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


@dataclass(slots=True)
class _AdmissionPlan:
    """The admission side of one plan: the tokens the takes spend. A token spends once: after
    another reservation used it (`used`, as refused writes told) or after an earlier request of
    this plan took seats with it, it is a replay."""

    used: Mapping[str, str]  # token id -> the reservation that used it
    spent: dict[str, str] = field(default_factory=dict)  # token id -> reservation, in this plan
    uses: list[TokenUse] = field(default_factory=list)

    def refusal(self, request: ReservationRequest) -> str | None:
        """Why the request's token does not admit it, or None."""
        check = request.admission
        token = check.token_id if check is not None else None
        holder = (self.spent.get(token) or self.used.get(token)) if token is not None else None
        return admission_refusal(check, request.reservation_id, holder)

    def spend(self, request: ReservationRequest) -> None:
        check = request.admission
        assert check is not None and check.token_id is not None
        self.spent[check.token_id] = request.reservation_id
        self.uses.append(TokenUse(check.token_id, request.reservation_id, use_expires_at(check)))


def rests_on_observations(plan: GroupPlan, knowledge: GroupKnowledge) -> bool:
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


def prefix_that_fits(plan: GroupPlan, shard_moves: int = 0) -> int:
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


def prefix_within_seats(plan: GroupPlan, left: int | None) -> int:
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


def refusals_to_set_aside(plan: GroupPlan, knowledge: GroupKnowledge) -> set[str]:
    """The plan's LIMIT_EXCEEDED answers that rest on observations alone: the customer's counter,
    not seats this plan gives it, and the limit observed in this settlement."""
    limit, counted = plan.limit, knowledge.counted
    if limit is None or not knowledge.limit_observed or knowledge.observed_limit != limit:
        return set()
    return {
        o.reservation_id
        for o in plan.outcomes
        if o.outcome is Outcome.LIMIT_EXCEEDED
        and o.customer_id in counted
        and counted[o.customer_id or ""] + (o.quantity or 0) > limit
    }


def after_commit(inventory: SeatClassInventory, plan: GroupPlan) -> SeatClassInventory:
    """The class as a committed plan left it, as far as this container can tell: its seats taken
    (held or sold), and off the pools read with it (docs/guides/pools.md)."""
    held = sum(o.quantity or 0 for o in plan.outcomes if o.outcome is Outcome.HELD)
    pool_items = inventory.pool_items
    if pool_items is not None and plan.seats_taken:
        pool_items = tuple(
            dataclasses.replace(p, available=p.available - plan.seats_taken) if p.pool in plan.pools else p
            for p in pool_items
        )
    return dataclasses.replace(
        inventory,
        available=inventory.available - plan.seats_taken,
        held=inventory.held + held,
        sold=inventory.sold + plan.seats_taken - held,
        pool_items=pool_items,
    )
