"""Answers one SQS batch of messages: reservations, holds, confirmations and cancellations.

The rules (docs/guarantees.md):
- seats are taken only by one conditional transaction per (event, seat class) group, which also
  writes one record per reservation id (reserve and hold alike); a record that already exists
  means the request was answered before, and its stored answer is published again;
- the same write checks the sale status and window, and the per-customer limit (with one counter
  update per customer in the transaction); a refusal hands back the item as it was and the group
  is planned again from it;
- when a group does not fit in what is left, it is filled greedily in arrival order and the rest
  is answered SOLD_OUT (or LIMIT_EXCEEDED), in the same transaction;
- confirmations and cancellations run after the batch's reservations and holds (so a hold and its
  confirmation can share a batch), see `logic.change_reservations`;
- an outcome is published only after its transaction committed; a message whose write or
  publication hit a transient fault is returned for retry, and its retry re-publishes the
  stored answer without taking seats again.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from seat_inventory.logic.change_reservations import apply_changes
from seat_inventory.logic.hints import (
    MAX_ACTIONS_PER_TRANSACTION,
    MAX_SETTLE_ROUNDS,
    ConflictDeadline,
    InventoryHints,
    OwnShard,
)
from seat_inventory.logic.ports import Clock, InventoryStore, OutcomePublisher
from seat_inventory.logic.shards import pick_shard, route, routed_shards, shards_with
from seat_inventory.models import (
    TAKES_SEATS,
    BatchResult,
    ChangeRequest,
    InvalidMessage,
    Outcome,
    RequestType,
    ReservationOutcome,
    ReservationRequest,
    RetryableError,
    SeatClassInventory,
    SeatKey,
    Throttled,
    TransactionConflict,
    iso_utc,
)

__all__ = [
    "MAX_ACTIONS_PER_TRANSACTION",
    "MAX_RESERVATIONS_PER_TRANSACTION",
    "InventoryHints",
    "QueueMessage",
    "reserve_seats",
]
from seat_inventory.parsing import parse_reservation
from seat_inventory.settings import Settings

# Without a per-customer limit: one inventory update plus 99 reservation records.
MAX_RESERVATIONS_PER_TRANSACTION = MAX_ACTIONS_PER_TRANSACTION - 1
# How many times a container that needs a shard waits for one that no other container uses
# before it shares one in use (there are more containers than items with seats left).
MAX_SHARD_WAITS = 3
# Kept back from the invocation's remaining time for publishing and answering after the last
# conflict retry (publishing a batch's outcomes takes well under a second).
FINISH_RESERVE_SECONDS = 5.0


def conflict_deadline(now: float, remaining_ms: int) -> float:
    """Until when (clock time) an invocation with `remaining_ms` left retries conflicts in place."""
    return now + max(0.0, remaining_ms / 1000 - FINISH_RESERVE_SECONDS)


@dataclass(frozen=True, slots=True)
class QueueMessage:
    """The two parts of an SQS record the service reads."""

    message_id: str
    body: str


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


def _invalid_answer(message: InvalidMessage) -> ReservationOutcome:
    return ReservationOutcome(
        # The SQS message id stands in when the body has no usable reservation id.
        reservation_id=message.reservation_id or message.message_id,
        outcome=Outcome.INVALID,
        reason=message.reason,
        event_id=message.event_id,
        seat_class=message.seat_class,
        quantity=message.quantity,
        customer_id=message.customer_id,
        message_id=message.message_id,
        request_type=message.request_type,
    )


@dataclass(slots=True)
class GroupKnowledge:
    """What the planner knows about one group's inventory item while settling it.

    `verified` is True once the item was observed during this settlement (a consistent read or a
    refused write's ALL_OLD); only then may a rejection be decided without the inventory guard in
    the same transaction. Before that, `assumed_limit` is the per-customer limit the optimistic
    write assumes (and its condition checks). `counted` holds customers' counters as refused
    counter updates reported them.
    """

    verified: bool = False
    inventory: SeatClassInventory | None = None
    assumed_limit: int | None = None
    counted: dict[str, int] = field(default_factory=dict)

    def observe(self, inventory: SeatClassInventory | None) -> None:
        self.verified = True
        self.inventory = inventory

    @property
    def limit(self) -> int | None:
        if self.verified:
            return self.inventory.max_per_customer if self.inventory else None
        return self.assumed_limit


@dataclass(frozen=True, slots=True)
class GroupPlan:
    """One transaction's worth of answers: the seats they take, and the counter increments."""

    outcomes: list[ReservationOutcome]
    seats_taken: int
    limit: int | None
    customer_seats: dict[str, int]

    @property
    def action_count(self) -> int:
        return (1 if self.seats_taken else 0) + len(self.outcomes) + len(self.customer_seats)


def plan_group(
    key: SeatKey, pending: Sequence[ReservationRequest], knowledge: GroupKnowledge, *, now: int
) -> GroupPlan:
    """Decides an answer for each pending request of one group.

    With nothing verified yet every request is planned to take its seats (within the assumed
    per-customer limit): the transaction's guard decides. Once the item has been observed, a
    missing item is UNKNOWN_EVENT, a closed sale SALE_CLOSED, and otherwise the group is filled
    greedily in arrival order; what passes a customer's limit is LIMIT_EXCEEDED and what does
    not fit is SOLD_OUT.
    """
    if knowledge.verified and knowledge.inventory is None:
        reason = f"event {key.event_id!r} has no seat class {key.seat_class!r}"
        return GroupPlan([_answer(r, Outcome.UNKNOWN_EVENT, reason, None) for r in pending], 0, None, {})
    inventory = knowledge.inventory if knowledge.verified else None
    if inventory is not None:
        closed = inventory.sale_closed_reason(now)
        if closed:
            return GroupPlan([_answer(r, Outcome.SALE_CLOSED, closed, None) for r in pending], 0, None, {})
    limit = knowledge.limit
    left = inventory.available if inventory is not None else None
    taken_by_customer: dict[str, int] = {}
    decisions: list[tuple[ReservationRequest, Outcome, int]] = []  # request, outcome, counted before
    for request in pending:
        counted = knowledge.counted.get(request.customer_id, 0) + taken_by_customer.get(
            request.customer_id, 0
        )
        if limit is not None and counted + request.quantity > limit:
            decisions.append((request, Outcome.LIMIT_EXCEEDED, counted))
        elif left is not None and request.quantity > left:
            decisions.append((request, Outcome.SOLD_OUT, counted))
        else:
            if left is not None:
                left -= request.quantity
            taken_by_customer[request.customer_id] = (
                taken_by_customer.get(request.customer_id, 0) + request.quantity
            )
            decisions.append((request, Outcome.HELD if request.is_hold else Outcome.CONFIRMED, counted))
    outcomes: list[ReservationOutcome] = []
    for request, outcome, counted in decisions:
        if outcome is Outcome.CONFIRMED:
            outcomes.append(_answer(request, outcome, f"{request.quantity} seat(s) confirmed", left))
        elif outcome is Outcome.HELD:
            expires_at = now + (request.hold_seconds or 0)
            outcomes.append(
                _answer(
                    request,
                    outcome,
                    f"{request.quantity} seat(s) held until {iso_utc(expires_at)}",
                    left,
                    hold_expires_at=expires_at,
                )
            )
        elif outcome is Outcome.SOLD_OUT:
            outcomes.append(
                _answer(request, outcome, f"requested {request.quantity} seat(s), {left} left", left)
            )
        else:
            outcomes.append(
                _answer(
                    request,
                    outcome,
                    f"customer {request.customer_id!r} may take at most {limit} seat(s) of"
                    f" {key.event_id} {key.seat_class}; {counted} already taken,"
                    f" {request.quantity} requested",
                    left,
                )
            )
    seats = sum(taken_by_customer.values())
    return GroupPlan(outcomes, seats, limit, taken_by_customer if limit is not None else {})


def _prefix_that_fits(plan: GroupPlan, shard_moves: int = 0) -> int:
    """How many of the plan's answers (in arrival order) fit in one transaction with their actions,
    leaving room for `shard_moves` actions that move seats between shard items."""
    actions = shard_moves
    inventory_counted = False
    customers: set[str] = set()
    for index, outcome in enumerate(plan.outcomes):
        extra = 1
        takes_seats = outcome.outcome in TAKES_SEATS
        if takes_seats and not inventory_counted:
            extra += 1
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
    deadline = deadline or ConflictDeadline.after(clock)
    by_id = {r.reservation_id: r for r in requests}
    pending = list(requests)
    leftover: list[ReservationRequest] = []
    answers: dict[str, ReservationOutcome] = {}
    now = int(clock.now())
    knowledge = GroupKnowledge()
    assumed = hints.assumed(key)
    knowledge.assumed_limit = assumed.max_per_customer if assumed is not None else None

    conflicts = 0

    def read(*, whole: bool = True) -> None:
        # A consistent read of a sharded class (`TransactGetItems`) is cancelled by a transaction
        # in flight on one of its items, and any read of a hot item may be throttled: like a
        # conflicting or throttled write, it is retried until the deadline.
        nonlocal conflicts
        while True:
            try:
                inventory = store.read_inventory(key, whole=whole)
            except (TransactionConflict, Throttled) as exc:
                conflicts += 1
                if not deadline.back_off(clock, conflicts):
                    raise type(exc)(
                        f"{conflicts} reads in a row refused by conflicts or throttling (last: {exc}),"
                        " no consistent read before the deadline"
                    ) from exc
                continue
            break
        if inventory is not None and not inventory.complete:
            # Shard 0 of a sharded class: its rules and items, to route groups by; not its seats.
            hints.learn_item(key, inventory)
            knowledge.assumed_limit = inventory.max_per_customer
            if inventory.sale_closed_reason(now) is not None:
                read()  # closed: nobody writes to its items, and only a whole read can say so
            return
        knowledge.observe(inventory)
        hints.observe(key, inventory)

    def settle_on_a_shard(seats: int, shard_items: int) -> bool:
        """Surveys the class's shard items and settles on one that has `seats` and no other
        container; while every such item is in use, waits (like a conflict, until the deadline)
        and surveys again. False when no item alone has the seats."""
        nonlocal conflicts
        for wait in range(MAX_SHARD_WAITS + 1):
            survey = deadline.patiently(
                clock, lambda: store.survey_shards(key, shard_items), f"survey of {key}"
            )
            if not shards_with(survey, seats):
                return False
            # After the last wait, items in use count too (more containers than items with seats).
            picked = pick_shard(survey, seats, clock.now(), hints.rng, share=wait == MAX_SHARD_WAITS)
            if picked is not None:
                hints.settle_on(key, picked.shard, picked.available)
                return True
            conflicts += 1
            if not deadline.back_off(clock, conflicts):
                raise TransactionConflict(
                    f"every shard item of {key} with {seats} seat(s) stayed in use by other containers"
                    " until the deadline"
                )
        raise AssertionError("unreachable: the last wait settles on a shard")

    if hints.should_read_first(key, sum(r.quantity for r in requests), now):
        # A class never seen is first read as its item alone: a sharded class's shard 0 tells
        # its rules and items without reading every shard item while others write to them.
        read(whole=hints.assumed(key) is not None)
    rounds = 0
    while pending:
        if rounds >= MAX_SETTLE_ROUNDS:
            raise RetryableError(f"{key} did not settle after {MAX_SETTLE_ROUNDS} rounds")
        rounds += 1
        plan = plan_group(key, pending, knowledge, now=now)
        if plan.seats_taken == 0 and not knowledge.verified:
            # Rejections decided on assumptions alone would be written without the inventory
            # guard that checks them: observe the item first.
            read()
            continue
        view = knowledge.inventory if knowledge.verified else None
        seen = view or hints.assumed(key)
        own = hints.own_shard(key)
        first = _first_seats(plan)
        if (
            seen is not None
            and seen.shard_items > 1
            and plan.seats_taken
            and (view is None or any(s.available >= first for s in view.shard_seats()))
        ):
            # A sharded class whose first request one item can serve: the group takes from this
            # container's shard, as far as the seats last seen there go (its guard decides).
            # Only a request no item alone can serve needs a whole read and seats moved.
            if own is None or (own.left is not None and own.left < first):
                if not settle_on_a_shard(first, seen.shard_items):
                    read()  # no item alone has them: read the class whole (seats move, or too few)
                    continue
                own = hints.own_shard(key)
                assert own is not None
            shard, moves, on_own_shard = own.shard, dict[int, int](), True
            fits = min(_prefix_that_fits(plan), _prefix_within_seats(plan, own.left))
        else:
            # A class of one item, or a sharded one read whole: the seats may have to move into
            # one item from others, and each move is one more action in the transaction.
            preferred = own.shard if own is not None else hints.rng.randrange(routed_shards(seen))
            shard, moves = route(seen, plan.seats_taken, preferred, hints.rng, read_whole=view is not None)
            fits, on_own_shard = _prefix_that_fits(plan, len(moves)), False
        if fits < len(pending):
            leftover = pending[fits:] + leftover
            pending = pending[:fits]
            plan = plan_group(key, pending, knowledge, now=now)
            if not on_own_shard:
                # Fewer seats: the same item, or moves from no more items than planned for.
                shard, moves = route(seen, plan.seats_taken, shard, hints.rng, read_whole=view is not None)
        try:
            refused = store.commit_outcomes(
                key,
                plan.outcomes,
                seats_taken=plan.seats_taken,
                rejection_expires_at=now + rejection_ttl_seconds,
                max_per_customer=plan.limit,
                customer_seats=plan.customer_seats,
                now=now,
                shard=shard,
                moves=moves,
                taken_at=clock.now() if plan.seats_taken else None,
            )
        except (TransactionConflict, Throttled) as exc:
            # Another transaction held the item, or its partition's units were spent: wait for
            # a turn (on another shard of a sharded class: another partition).
            hints.leave_shard(key)
            conflicts += 1
            if not deadline.back_off(clock, conflicts):
                raise type(exc)(
                    f"{conflicts} transactions in a row refused by conflicts or throttling (last: {exc}),"
                    " none committed before the deadline"
                ) from exc
            rounds -= 1  # a conflict or throttling teaches nothing; the deadline bounds them instead
            continue
        if refused is None:
            if plan.seats_taken:
                hints.settle_on(key, shard, _left_on_shard(own, view, shard, moves, plan.seats_taken))
            answers.update((o.reservation_id, o) for o in plan.outcomes)
            _learn_commit(hints, key, knowledge, plan)
            return answers, leftover
        for reservation_id, stored in refused.already_recorded.items():
            request = by_id[reservation_id]
            answers[reservation_id] = stored.as_duplicate(request.message_id)
        settled = refused.already_recorded.keys() | refused.written
        pending = [r for r in pending if r.reservation_id not in settled]
        if refused.written:
            # Records of a group without seats are written one by one: those written stand, and
            # are handed back now; the rest (a transient fault kept them out) need another write.
            answers.update(
                (o.reservation_id, o) for o in plan.outcomes if o.reservation_id in refused.written
            )
            return answers, pending + leftover
        if refused.customer_seats.keys() - knowledge.counted.keys():
            # Customers' counters newly learned: progress, bounded by the group's customers (a
            # refusal shows only the counters of those the plan gave seats, so a group of many
            # customers at their limit with few seats left needs more rounds than the bound).
            rounds -= 1
        knowledge.counted.update(refused.customer_seats)
        shard_refused = refused.inventory
        if (
            on_own_shard
            and refused.inventory_refused
            and shard_refused is not None
            and not shard_refused.complete
            and shard_refused.sale_closed_reason(now) is None
            and shard_refused.max_per_customer == plan.limit
        ):
            # This container's shard alone is short: the next round takes what it has left, or
            # looks for another shard.
            hints.settle_on(key, shard, shard_refused.available)
        elif refused.inventory_refused and shard_refused is not None and not shard_refused.complete:
            # One shard refused: its numbers are not the class's. Read every shard together.
            read()
        elif refused.inventory_refused:
            knowledge.observe(refused.inventory)
            hints.observe(key, refused.inventory)
        elif not settled and not refused.customer_seats:
            raise RetryableError(f"transaction for {key} refused without a reason the planner knows")
    return answers, leftover


def _first_seats(plan: GroupPlan) -> int:
    """The seats of the plan's first answer that takes seats (0 when none does)."""
    return next((o.quantity or 0 for o in plan.outcomes if o.outcome in TAKES_SEATS), 0)


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
        return own.left - seats_taken
    return None


def _learn_commit(hints: InventoryHints, key: SeatKey, knowledge: GroupKnowledge, plan: GroupPlan) -> None:
    """After a commit, the container knows what it took: the item as it predicts it now."""
    inventory = knowledge.inventory if knowledge.verified else hints.assumed(key)
    if inventory is None:
        return
    held = sum(o.quantity or 0 for o in plan.outcomes if o.outcome is Outcome.HELD)
    hints.learn_item(
        key,
        dataclasses.replace(
            inventory,
            available=inventory.available - plan.seats_taken,
            held=inventory.held + held,
            sold=inventory.sold + plan.seats_taken - held,
        ),
    )


def _settle_groups(
    groups: Mapping[SeatKey, list[ReservationRequest]],
    *,
    store: InventoryStore,
    clock: Clock,
    settings: Settings,
    hints: InventoryHints,
    deadline: ConflictDeadline,
) -> tuple[dict[str, ReservationOutcome], dict[str, str]]:
    """Settles every group, one transaction at a time.

    Returns the answers by reservation id, and the message ids to retry with the reason for each.
    """
    answers: dict[str, ReservationOutcome] = {}
    failed: dict[str, str] = {}
    for key, requests in groups.items():
        remaining = list(requests)
        while remaining:
            chunk = remaining[:MAX_RESERVATIONS_PER_TRANSACTION]
            try:
                settled, leftover = settle_group(
                    key,
                    chunk,
                    store=store,
                    clock=clock,
                    rejection_ttl_seconds=settings.rejection_record_ttl_seconds,
                    hints=hints,
                    deadline=deadline,
                )
            except RetryableError as exc:
                reason = f"{key.event_id} {key.seat_class}: {type(exc).__name__}: {exc}"
                failed.update((r.message_id, reason) for r in chunk)
                remaining = remaining[len(chunk) :]
                continue
            answers.update(settled)
            remaining = leftover + remaining[len(chunk) :]
    return answers, failed


def reserve_seats(
    messages: Sequence[QueueMessage],
    *,
    store: InventoryStore,
    publisher: OutcomePublisher,
    settings: Settings,
    clock: Clock,
    hints: InventoryHints | None = None,
    deadline: float | None = None,
) -> BatchResult:
    """Answers every message of one SQS batch; returns what was published and what to retry.

    `hints` lives as long as the container, so that what one batch learns about a class (sold
    out, closed, its limit) spares the next batches a doomed write (see `InventoryHints`).
    Transaction conflicts are retried in place until `deadline` (clock time; the handler gives
    `conflict_deadline(...)` of the invocation; default `DEFAULT_CONFLICT_PATIENCE_SECONDS` from
    now): a conflict is not a failure, and a message handed back for one would count towards the
    dead-letter queue.
    """
    hints = hints if hints is not None else InventoryHints()
    conflicts_until = (
        ConflictDeadline.until(clock, deadline) if deadline is not None else ConflictDeadline.after(clock)
    )
    result = BatchResult()
    answers: dict[str, ReservationOutcome] = {}  # message id -> answer
    first_request: dict[str, ReservationRequest] = {}  # reservation id -> first message carrying it
    repeats: list[ReservationRequest] = []
    groups: dict[SeatKey, list[ReservationRequest]] = {}
    changes: list[ChangeRequest] = []

    seen_message_ids: set[str] = set()
    for message in messages:
        # A message id twice in one batch is one message delivered twice: it is answered once.
        if message.message_id in seen_message_ids:
            continue
        seen_message_ids.add(message.message_id)
        parsed = parse_reservation(
            message.message_id,
            message.body,
            default_seat_class=settings.default_seat_class,
            max_quantity=settings.max_seats_per_reservation,
            max_hold_seconds=settings.max_hold_seconds,
        )
        if isinstance(parsed, InvalidMessage):
            answers[message.message_id] = _invalid_answer(parsed)
        elif isinstance(parsed, ChangeRequest):
            changes.append(parsed)
        elif parsed.reservation_id in first_request:
            repeats.append(parsed)
        else:
            first_request[parsed.reservation_id] = parsed
            groups.setdefault(parsed.seat_key, []).append(parsed)

    group_answers, failed = _settle_groups(
        groups, store=store, clock=clock, settings=settings, hints=hints, deadline=conflicts_until
    )

    for request in first_request.values():
        if request.reservation_id in group_answers:
            answers[request.message_id] = group_answers[request.reservation_id]
    for repeat in repeats:
        original = group_answers.get(repeat.reservation_id)
        if original is None:
            failed[repeat.message_id] = "the first delivery of its reservation in this batch is retried"
        else:
            answers[repeat.message_id] = original.as_duplicate(repeat.message_id)

    if changes:
        # A confirmation or cancellation of a reservation whose own message must be retried
        # waits for it: answering UNKNOWN_RESERVATION now would be wrong a moment later.
        in_flight = {r.reservation_id for r in first_request.values() if r.message_id in failed}
        change_answers, change_failed = apply_changes(
            changes,
            store=store,
            clock=clock,
            hints=hints,
            rejection_ttl_seconds=settings.rejection_record_ttl_seconds,
            in_flight=in_flight,
            deadline=conflicts_until,
        )
        answers.update(change_answers)
        failed.update(change_failed)

    ordered = [
        answers[message_id]
        for message_id in dict.fromkeys(m.message_id for m in messages)
        if message_id in answers
    ]
    not_published = {o.message_id for o in publisher.publish(ordered)}
    for outcome in ordered:
        if outcome.message_id in not_published:
            failed[outcome.message_id or ""] = "its outcome was not published"
        else:
            result.published.append(outcome)
            _count_seats(result, outcome)
    result.failed_message_ids = [m.message_id for m in messages if m.message_id in failed]
    result.handed_back = {message_id: failed[message_id] for message_id in result.failed_message_ids}
    return result


def _count_seats(result: BatchResult, outcome: ReservationOutcome) -> None:
    if outcome.duplicate:
        return
    seats = outcome.quantity or 0
    if outcome.outcome is Outcome.CONFIRMED:
        result.seats_confirmed += seats
    elif outcome.outcome is Outcome.HELD:
        result.seats_held += seats
    elif outcome.outcome is Outcome.CANCELLED and outcome.request_type is RequestType.CANCEL:
        result.seats_released += seats
