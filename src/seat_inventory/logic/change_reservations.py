"""Confirmations, cancellations and expiries: status changes of recorded reservations.

The rules (docs/reference/contract.md, "Reservation lifecycle"):
- the records of all confirm and cancel messages of a batch are read in one consistent
  BatchGetItem; each change is decided from the record as read (`decide_change`);
- the changes of one (event, seat class) commit in one transaction: each record's update is
  conditional on the status it was read with (and, for a hold, on whether it has run out), the
  inventory moves with them in one guarded update (seats given back never exceed the capacity),
  and per-customer counters are decremented for seats that counted. The condition on the status
  is the dedupe: a change takes effect once however often its message is delivered, and a
  redelivery is answered with the reservation's current state;
- a record whose condition fails was changed by someone else first: it is answered from the
  record DynamoDB hands back (ALL_OLD), and the rest of the group is committed without it.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from functools import partial

from seat_inventory.logic.inventory_hints import InventoryHints
from seat_inventory.logic.limits import MAX_ACTIONS_PER_TRANSACTION, MAX_SETTLE_ROUNDS
from seat_inventory.logic.ports import Clock, InventoryStore
from seat_inventory.logic.retry_deadline import ConflictDeadline
from seat_inventory.models import (
    ChangeRequest,
    Outcome,
    RequestType,
    ReservationOutcome,
    ReservationRecord,
    RetryableError,
    SeatKey,
    StoreInconsistency,
    Throttled,
    TransactionConflict,
    Transition,
    iso_utc,
    row_item_of,
)


def _change_answer(
    request: ChangeRequest,
    record: ReservationRecord,
    outcome: Outcome,
    reason: str,
    *,
    duplicate: bool = False,
) -> ReservationOutcome:
    answer = record.answer
    return ReservationOutcome(
        reservation_id=answer.reservation_id,
        outcome=outcome,
        reason=reason,
        event_id=answer.event_id,
        seat_class=answer.seat_class,
        quantity=answer.quantity,
        customer_id=answer.customer_id,
        duplicate=duplicate,
        message_id=request.message_id,
        request_type=request.request_type,
        hold_expires_at=record.hold_expires_at,
        seats=answer.seats,
        lines=answer.lines,
    )


def _answer_without_record(request: ChangeRequest, outcome: Outcome, why: str) -> ReservationOutcome:
    """A refusal that tells nothing of the reservation: none is recorded, or it is not the caller's."""
    return ReservationOutcome(
        reservation_id=request.reservation_id,
        outcome=outcome,
        reason=f"{why}; nothing to {request.request_type.value}",
        event_id=None,
        seat_class=None,
        quantity=None,
        customer_id=request.customer_id,
        message_id=request.message_id,
        request_type=request.request_type,
    )


def decide_change(
    request: ChangeRequest, record: ReservationRecord | None, now: int
) -> Transition | ReservationOutcome:
    """What a confirm or cancel does to the reservation as read at `now`: a transition, or an answer.

    Only a live hold can be confirmed; a live hold or a confirmed reservation can be cancelled.
    Everything else is answered with where the reservation stands (duplicate when it already is
    in the state asked for), and nothing is written for it.
    """
    verb = request.request_type.value
    if record is None:
        return _answer_without_record(
            request, Outcome.UNKNOWN_RESERVATION, f"no reservation {request.reservation_id!r} is recorded"
        )
    if request.customer_id is not None and request.customer_id != record.answer.customer_id:
        return _answer_without_record(
            request,
            Outcome.INVALID,
            f"customer_id {request.customer_id!r} does not match the reservation's customer",
        )
    status = record.status
    if record.hold_expired(now):
        assert record.hold_expires_at is not None
        return _change_answer(
            request,
            record,
            Outcome.EXPIRED,
            f"the hold expired at {iso_utc(record.hold_expires_at)}; its seats are being released,"
            f" nothing to {verb}",
        )
    target = Outcome.CONFIRMED if request.request_type is RequestType.CONFIRM else Outcome.CANCELLED
    if target is Outcome.CANCELLED and status is Outcome.CONFIRMED and record.tickets_passed_on:
        return _change_answer(
            request,
            record,
            status,
            f"{record.tickets_passed_on} of its tickets are held by other customers (passed on);"
            f" nothing to {verb}",
        )
    if status is target:
        done = "confirmed" if target is Outcome.CONFIRMED else "cancelled"
        return _change_answer(request, record, target, f"already {done}", duplicate=True)
    if status is Outcome.HELD or (status is Outcome.CONFIRMED and target is Outcome.CANCELLED):
        return Transition(record, target)
    if status is Outcome.EXPIRED and record.hold_expires_at is not None:
        reason = f"the hold expired at {iso_utc(record.hold_expires_at)}; nothing to {verb}"
    elif status is Outcome.CANCELLED:
        reason = f"the reservation was cancelled; nothing to {verb}"
    else:
        reason = f"the reservation was answered {status.value}; nothing to {verb}"
    return _change_answer(request, record, status, reason)


def transition_answer(request: ChangeRequest, transition: Transition) -> ReservationOutcome:
    """The answer to a confirm or cancel whose transition committed."""
    record = transition.record
    if transition.to is Outcome.CONFIRMED:
        reason = f"{record.quantity} held seat(s) confirmed"
    else:
        reason = f"{record.quantity} seat(s) released"
    return _change_answer(request, record, transition.to, reason)


@dataclass(slots=True)
class TransitionResult:
    """What became of a group's transitions: committed, superseded by a change made first, or failed.

    `failed` holds the transitions left uncommitted by `error` (a transient fault, persistent
    contention, or a `StoreInconsistency`); transactions committed before it stay committed.
    """

    committed: list[Transition] = field(default_factory=list)
    superseded: dict[str, ReservationRecord | None] = field(default_factory=dict)
    failed: list[Transition] = field(default_factory=list)
    error: RetryableError | None = None


def _prefix_that_fits(transitions: Sequence[Transition]) -> int:
    actions = 0
    items: set[tuple[SeatKey, int]] = set()  # one update per shard item the records' seats came from
    counters: set[tuple[SeatKey, str]] = set()
    rows: set[tuple[SeatKey, str]] = set()  # a mapped class: one update per row item its seats are on
    pools: set[str] = set()  # one update per capacity pool the records' seats came from
    for index, transition in enumerate(transitions):
        # An order's record moves every line's class (docs/guides/orders.md): count each line's items.
        takes = transition.record.takes()
        customer = transition.record.answer.customer_id or ""
        new_pools = {pool for take in takes for pool in take.pools} - pools
        new_rows = {(t.key, row_item_of(s)[0]) for t in takes for s in t.seats} - rows
        new_items = {(t.key, t.shard) for t in takes if not t.seats} - items
        new_counters = {
            (t.key, customer) for t in takes if transition.releases_seats and t.customer_counted
        } - counters
        extra = 1 + len(new_pools) + len(new_rows) + len(new_items) + len(new_counters)
        if actions + extra > MAX_ACTIONS_PER_TRANSACTION:
            return index
        actions += extra
        rows |= new_rows
        items |= new_items
        pools |= new_pools
        counters |= new_counters
    return len(transitions)


def settle_transitions(
    key: SeatKey,
    transitions: Sequence[Transition],
    *,
    now: int,
    store: InventoryStore,
    clock: Clock,
    hints: InventoryHints,
    release_ttl_seconds: int,
    deadline: ConflictDeadline | None = None,
) -> TransitionResult:
    """Commits the transitions of one seat class, one transaction per 100 actions.

    A transition refused because its record changed meanwhile is reported in `superseded` with
    the record as it is now. A transient fault or persistent contention (or a
    `StoreInconsistency`: a guard that cannot fail on consistent data failed) stops the group:
    what was not committed yet is reported in `failed`, with the `error`. Transaction conflicts
    are retried in place until `deadline` (default: `ConflictDeadline.after(clock)`).
    """
    result = TransitionResult()
    pending = list(transitions)
    deadline = deadline or ConflictDeadline.after(clock)
    try:
        _commit_transitions(key, pending, result, now, store, clock, hints, release_ttl_seconds, deadline)
    except RetryableError as exc:
        done = set(result.superseded) | {t.record.reservation_id for t in result.committed}
        result.failed = [t for t in transitions if t.record.reservation_id not in done]
        result.error = exc
    return result


def _commit_transitions(
    key: SeatKey,
    pending: list[Transition],
    result: TransitionResult,
    now: int,
    store: InventoryStore,
    clock: Clock,
    hints: InventoryHints,
    release_ttl_seconds: int,
    deadline: ConflictDeadline,
) -> None:
    capacity: int | None = None
    # A mapped class's seats go back to its row items, each guarded on the seats' states: no
    # capacity to check (docs/guides/seat-maps.md).
    # An order's lines (docs/guides/orders.md) are guarded on held and sold alone: its first line's class
    # may be mapped, or sharded.
    if any(t.releases_seats and not t.record.seats and not t.record.answer.lines for t in pending):
        # Seats given back are guarded against the capacity; the condition checks the value
        # assumed here, so a stale hint costs one refused round, never a wrong write.
        item = hints.assumed(key) or deadline.patiently(
            clock,
            lambda: store.read_inventory(key),
            f"reading the inventory of {key.event_id} {key.seat_class}",
        )
        if item is None:
            raise StoreInconsistency(f"{key} has reservations but no inventory item")
        # A sharded class has no one item to check a capacity on: its guards on held and sold do.
        capacity = item.capacity if item.shard_items == 1 else None
    conflicts = 0
    rounds = 0
    while pending:
        if rounds >= MAX_SETTLE_ROUNDS:
            raise RetryableError(f"status changes of {key} did not settle after {MAX_SETTLE_ROUNDS} rounds")
        rounds += 1
        chunk = pending[: _prefix_that_fits(pending)]
        try:
            refused = store.change_status(
                key, chunk, now=now, capacity=capacity, release_expires_at=now + release_ttl_seconds
            )
        except (TransactionConflict, Throttled) as exc:
            conflicts += 1
            if not deadline.back_off(clock, conflicts):
                raise type(exc)(
                    f"status changes of {key}: {conflicts} transactions in a row refused by conflicts"
                    f" or throttling until the deadline (last: {exc})"
                ) from exc
            rounds -= 1  # a conflict or throttling teaches nothing; the deadline bounds them instead
            continue
        if refused is None:
            result.committed.extend(chunk)
            del pending[: len(chunk)]
            rounds = 0
            continue
        result.superseded.update(refused.records)
        pending[:] = [t for t in pending if t.record.reservation_id not in refused.records]
        if refused.inventory_refused:
            item = refused.inventory
            if item is None:
                raise StoreInconsistency(f"{key} has reservations but no inventory item")
            hints.observe(key, item)
            if capacity is not None and (item.shard_items != 1 or item.capacity != capacity):
                capacity = item.capacity if item.shard_items == 1 else None
                continue
            if not refused.records:
                raise StoreInconsistency(f"{key}: the inventory refused a consistent status change: {item}")
        if refused.pools_refused and not refused.records:
            raise StoreInconsistency(
                f"{key}: capacity pool(s) {sorted(refused.pools_refused)} refused a consistent status"
                " change (missing, or fewer held or sold seats than its records)"
            )
        if refused.counters_refused and not refused.records:
            raise StoreInconsistency(
                f"{key}: customer counter(s) {sorted(refused.counters_refused)} are lower than their seats"
            )
        if not (
            refused.records or refused.inventory_refused or refused.counters_refused or refused.pools_refused
        ):
            raise RetryableError(f"status changes of {key} refused without a reason the planner knows")


def _waves(requests: Sequence[ChangeRequest]) -> list[list[ChangeRequest]]:
    """Splits the changes so that each wave names a reservation at most once, in arrival order."""
    waves: list[list[ChangeRequest]] = []
    seen: dict[str, int] = {}
    for request in requests:
        index = seen.get(request.reservation_id, 0)
        seen[request.reservation_id] = index + 1
        if index == len(waves):
            waves.append([])
        waves[index].append(request)
    return waves


def apply_changes(
    requests: Sequence[ChangeRequest],
    *,
    store: InventoryStore,
    clock: Clock,
    hints: InventoryHints,
    rejection_ttl_seconds: int,
    in_flight: Collection[str] = (),
    deadline: ConflictDeadline | None = None,
) -> tuple[dict[str, ReservationOutcome], dict[str, str]]:
    """Answers every confirm and cancel of a batch; returns answers by message id, and the message
    ids to hand back to the queue with the reason for each.

    Changes of the same reservation in one batch apply in arrival order (the second sees the
    first's result). Changes of a reservation in `in_flight` (its own reserve or hold message is
    being retried) and changes after a failed one of the same reservation are handed back too.
    """
    answers: dict[str, ReservationOutcome] = {}
    failed: dict[str, str] = {}
    blocked = dict.fromkeys(in_flight, "its reserve or hold message is being retried")
    deadline = deadline or ConflictDeadline.after(clock)
    for wave in _waves(requests):
        live = [r for r in wave if r.reservation_id not in blocked]
        failed.update((r.message_id, blocked[r.reservation_id]) for r in wave if r.reservation_id in blocked)
        if not live:
            continue
        now = int(clock.now())
        try:
            ids = [r.reservation_id for r in live]
            records = deadline.patiently(
                clock, partial(store.read_reservations, ids), "reading the reservations"
            )
        except RetryableError as exc:
            reason = f"reading the reservations failed: {type(exc).__name__}: {exc}"
            failed.update((r.message_id, reason) for r in live)
            blocked.update((r.reservation_id, "an earlier change of it is being retried") for r in live)
            continue
        groups: dict[SeatKey, list[tuple[ChangeRequest, Transition]]] = {}
        for request in live:
            decision = decide_change(request, records.get(request.reservation_id), now)
            if isinstance(decision, ReservationOutcome):
                answers[request.message_id] = decision
                continue
            key = decision.record.seat_key
            if key is None:
                failed[request.message_id] = "its record names no seat class"
                blocked[request.reservation_id] = "an earlier change of it is being retried"
                continue
            groups.setdefault(key, []).append((request, decision))
        for key, items in groups.items():
            result = settle_transitions(
                key,
                [transition for _, transition in items],
                now=now,
                store=store,
                clock=clock,
                hints=hints,
                release_ttl_seconds=rejection_ttl_seconds,
                deadline=deadline,
            )
            failed_ids = {t.record.reservation_id for t in result.failed}
            for request, transition in items:
                reservation_id = request.reservation_id
                if reservation_id in failed_ids:
                    error = result.error
                    failed[request.message_id] = f"{type(error).__name__}: {error}"
                    blocked[reservation_id] = "an earlier change of it is being retried"
                elif reservation_id not in result.superseded:
                    answers[request.message_id] = transition_answer(request, transition)
                else:
                    current = decide_change(request, result.superseded[reservation_id], now)
                    if isinstance(current, ReservationOutcome):
                        answers[request.message_id] = current
                    else:  # changed back into a state this change applies to: try again later
                        failed[request.message_id] = "its reservation changed meanwhile; tried again later"
                        blocked[reservation_id] = "an earlier change of it is being retried"
    return answers, failed
