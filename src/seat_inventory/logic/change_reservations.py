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

from seat_inventory.logic import answers
from seat_inventory.logic.inventory_hints import InventoryHints
from seat_inventory.logic.limits import MAX_ACTIONS_PER_TRANSACTION, MAX_SETTLE_ROUNDS
from seat_inventory.logic.ports import Clock, InventoryStore
from seat_inventory.logic.retry_deadline import ConflictDeadline
from seat_inventory.logic.rounds import run_rounds, wait_or_raise
from seat_inventory.models import (
    ChangeRequest,
    LineTake,
    Outcome,
    RequestType,
    ReservationOutcome,
    ReservationRecord,
    RetryableError,
    SeatClassInventory,
    SeatKey,
    StoreInconsistency,
    Throttled,
    TransactionConflict,
    Transition,
    TransitionsRefused,
    iso_utc,
    lane_for,
    row_item_of,
)


def pending_releases(transitions: Sequence[Transition]) -> bool:
    """Whether any of the transitions gives seats back."""
    return any(t.releases_seats for t in transitions)


def decide_change(
    request: ChangeRequest, record: ReservationRecord | None, now: int
) -> Transition | ReservationOutcome:
    """What a confirm or cancel does to the reservation as read at `now`: a transition, or an answer.

    Only a live hold can be confirmed; a live hold or a confirmed reservation can be cancelled.
    Everything else is answered with where the reservation stands (duplicate when it already is
    in the state asked for), and nothing is written for it.
    """
    if record is None:
        return answers.change_without_record(
            request, Outcome.UNKNOWN_RESERVATION, f"no reservation {request.reservation_id!r} is recorded"
        )
    if request.customer_id is not None and request.customer_id != record.answer.customer_id:
        return answers.change_without_record(
            request,
            Outcome.INVALID,
            f"customer_id {request.customer_id!r} does not match the reservation's customer",
        )
    verb, status = request.request_type.value, record.status
    if record.hold_expired(now):
        assert record.hold_expires_at is not None
        return answers.change(
            request,
            record,
            Outcome.EXPIRED,
            f"the hold expired at {iso_utc(record.hold_expires_at)}; its seats are being released,"
            f" nothing to {verb}",
        )
    target = Outcome.CONFIRMED if request.request_type is RequestType.CONFIRM else Outcome.CANCELLED
    if status is target:
        done = "confirmed" if target is Outcome.CONFIRMED else "cancelled"
        return answers.change(request, record, target, f"already {done}", duplicate=True)
    cancel_sold = status is Outcome.CONFIRMED and target is Outcome.CANCELLED
    if status is Outcome.HELD or (cancel_sold and not record.tickets_passed_on):
        return Transition(record, target)
    return answers.change(request, record, status, _why_unchanged(record, verb))


def _why_unchanged(record: ReservationRecord, verb: str) -> str:
    """Why a reservation in its status cannot be confirmed or cancelled (`verb`)."""
    status = record.status
    if status is Outcome.CONFIRMED:  # a cancel of a sale whose tickets others hold
        passed_on = f"{record.tickets_passed_on} of its tickets are held by other customers (passed on)"
        return f"{passed_on}; nothing to {verb}"
    if status is Outcome.EXPIRED and record.hold_expires_at is not None:
        return f"the hold expired at {iso_utc(record.hold_expires_at)}; nothing to {verb}"
    if status is Outcome.CANCELLED:
        return f"the reservation was cancelled; nothing to {verb}"
    return f"the reservation was answered {status.value}; nothing to {verb}"


def transition_answer(request: ChangeRequest, transition: Transition) -> ReservationOutcome:
    """The answer to a confirm or cancel whose transition committed."""
    record = transition.record
    if transition.to is Outcome.CONFIRMED:
        reason = f"{record.quantity} held seat(s) confirmed"
    else:
        reason = f"{record.quantity} seat(s) released"
    return answers.change(request, record, transition.to, reason)


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
    """How many of the transitions go in the next transaction (`_Chunk`)."""
    chunk = _Chunk()
    for index, transition in enumerate(transitions):
        if not chunk.add(transition):
            return index
    return len(transitions)


@dataclass(slots=True)
class _Chunk:
    """One transaction's transitions: at most 100 actions, and no seat or record twice. Records
    read at different moments can both claim a seat (a hold read, then released by another run
    and its seat taken again before the next record was read): only one is current, and DynamoDB
    refuses a transaction naming a seat or an item twice as invalid rather than by a guard, so
    the later one waits for the next transaction, where its guard decides."""

    actions: int = 0
    records: set[str] = field(default_factory=set)
    seats: set[tuple[SeatKey, str]] = field(default_factory=set)
    # One update per shard item, row item, customer counter and capacity pool the seats came from.
    items: set[tuple[SeatKey, int]] = field(default_factory=set)
    rows: set[tuple[SeatKey, str]] = field(default_factory=set)
    counters: set[tuple[SeatKey, str]] = field(default_factory=set)
    pools: set[str] = field(default_factory=set)

    def add(self, transition: Transition) -> bool:
        """The transition taken in, with the actions it adds; False (nothing taken) if it does not fit."""
        # An order's record moves every line's class (docs/guides/orders.md): count each line's items.
        takes = transition.record.takes()
        seats = {(t.key, seat) for t in takes for seat in t.seats}
        if transition.record.reservation_id in self.records or seats & self.seats:
            return False
        pools, rows, items, counters = self._new_updates(transition, takes, seats)
        extra = 1 + len(pools) + len(rows) + len(items) + len(counters)
        if self.actions + extra > MAX_ACTIONS_PER_TRANSACTION:
            return False
        self.actions += extra
        self.records.add(transition.record.reservation_id)
        self.seats |= seats
        self.pools |= pools
        self.rows |= rows
        self.items |= items
        self.counters |= counters
        return True

    def _new_updates(
        self, transition: Transition, takes: Sequence[LineTake], seats: set[tuple[SeatKey, str]]
    ) -> tuple[set[str], set[tuple[SeatKey, str]], set[tuple[SeatKey, int]], set[tuple[SeatKey, str]]]:
        """The pools, row items (those of its `seats`), shard items and customer counters the
        transition updates that the chunk does not yet."""
        customer = transition.record.answer.customer_id or ""
        counted = transition.releases_seats
        return (
            {pool for take in takes for pool in take.pools} - self.pools,
            {(key, row_item_of(seat)[0]) for key, seat in seats} - self.rows,
            {(t.key, t.shard) for t in takes if not t.seats} - self.items,
            {(t.key, customer) for t in takes if counted and t.customer_counted} - self.counters,
        )


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
    changes = _StatusChanges(key, pending, result, now, store, clock, hints, release_ttl_seconds, deadline)
    try:
        changes.start()
        run_rounds(
            changes,
            bound=MAX_SETTLE_ROUNDS,
            exhausted=lambda: RetryableError(
                f"status changes of {key} did not settle after {MAX_SETTLE_ROUNDS} rounds"
            ),
            fresh_after_commit=True,
        )
    except RetryableError as exc:
        done = set(result.superseded) | {t.record.reservation_id for t in result.committed}
        result.failed = [t for t in transitions if t.record.reservation_id not in done]
        result.error = exc
    return result


class _StatusChanges:
    """One class's status changes in transactions of at most 100 actions (a `logic.rounds.Planner`):
    a record changed meanwhile is set aside (`superseded`) and the rest written again."""

    def __init__(
        self,
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
        self.key, self.queue, self.result, self.now = key, pending, result, now
        self.store, self.clock, self.hints, self.deadline = store, clock, hints, deadline
        self.release_expires_at = now + release_ttl_seconds
        self.capacity: int | None = None
        self.conflicts = 0
        # Classes whose seats given back go to their waiting list, and the lane they go to.
        self.lists: dict[SeatKey, int] = {}

    def start(self) -> None:
        """Seats given back to a class of one item are guarded against its capacity; the guard
        checks the capacity assumed here, so a stale hint costs one refused round, never a wrong
        write. A mapped class's seats go back to its row items, each guarded on the seats' states,
        an order's lines (docs/guides/orders.md) on held and sold alone, and a sharded class has no one
        item to check a capacity on: its guards on held and sold do."""
        key = self.key
        assumed = self.hints.assumed(key)
        if assumed is not None and assumed.waitlist and pending_releases(self.queue):
            self.lists[key] = lane_for(self.queue[0].record.reservation_id)
        if not any(t.releases_seats and not t.record.seats and not t.record.answer.lines for t in self.queue):
            return
        item = self.hints.assumed(key) or self.deadline.patiently(
            self.clock,
            lambda: self.store.read_inventory(key),
            f"reading the inventory of {key.event_id} {key.seat_class}",
        )
        if item is None:
            raise StoreInconsistency(f"{key} has reservations but no inventory item")
        self.capacity = item.capacity if item.shard_items == 1 else None

    def pending(self) -> bool:
        return bool(self.queue)

    def plan(self) -> list[Transition]:
        return self.queue[: _prefix_that_fits(self.queue)]

    def write(self, chunk: list[Transition]) -> TransitionsRefused | None:
        return self.store.change_status(
            self.key,
            chunk,
            now=self.now,
            capacity=self.capacity,
            release_expires_at=self.release_expires_at,
            lists=self.lists,
        )

    def contended(self, chunk: list[Transition], exc: TransactionConflict | Throttled) -> None:
        self.conflicts += 1
        message = (
            f"status changes of {self.key}: {self.conflicts} transactions in a row refused by conflicts"
            f" or throttling until the deadline (last: {exc})"
        )
        wait_or_raise(self.deadline, self.clock, self.conflicts, exc, message)

    def committed(self, chunk: list[Transition]) -> None:
        self.result.committed.extend(chunk)
        del self.queue[: len(chunk)]

    def learn(self, chunk: list[Transition], refused: TransitionsRefused) -> bool:
        """Records changed meanwhile are set aside; a class item handed back is observed (a
        capacity other than assumed: the changes are written again with it); any other refusal
        with every record as read breaks an invariant."""
        key = self.key
        self.result.superseded.update(refused.records)
        self.queue[:] = [t for t in self.queue if t.record.reservation_id not in refused.records]
        if refused.lists_changed:
            self._learn_lists(refused.lists_changed)
            return True
        if refused.inventory_refused and self._learn_item(refused.inventory):
            return True
        if refused.records:
            return True
        if refused.inventory_refused:
            raise StoreInconsistency(
                f"{key}: the inventory refused a consistent status change: {refused.inventory}"
            )
        if refused.pools_refused:
            raise StoreInconsistency(
                f"{key}: capacity pool(s) {sorted(refused.pools_refused)} refused a consistent status"
                " change (missing, or fewer held or sold seats than its records)"
            )
        if refused.counters_refused:
            raise StoreInconsistency(
                f"{key}: customer counter(s) {sorted(refused.counters_refused)} are lower than their seats"
            )
        raise RetryableError(f"status changes of {key} refused without a reason the planner knows")

    def _learn_lists(self, changed: Collection[SeatKey]) -> None:
        """A class whose waiting list rule was not the one assumed: its seats given back go the
        other way (to its list, or on sale) when written again."""
        lane = lane_for(self.queue[0].record.reservation_id) if self.queue else 0
        for key in changed:
            if self.lists.pop(key, None) is None:
                self.lists[key] = lane

    def _learn_item(self, item: SeatClassInventory | None) -> bool:
        """Whether the class item handed back shows a capacity other than the one assumed."""
        if item is None:
            raise StoreInconsistency(f"{self.key} has reservations but no inventory item")
        self.hints.observe(self.key, item)
        if self.capacity is not None and (item.shard_items != 1 or item.capacity != self.capacity):
            self.capacity = item.capacity if item.shard_items == 1 else None
            return True
        return False


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
    changes = _Changes(store, clock, hints, rejection_ttl_seconds, deadline or ConflictDeadline.after(clock))
    changes.blocked.update(dict.fromkeys(in_flight, "its reserve or hold message is being retried"))
    for wave in _waves(requests):
        changes.apply(wave)
    return changes.answers, changes.failed


_BLOCKED = "an earlier change of it is being retried"


@dataclass(slots=True)
class _Changes:
    """A batch's changes, wave by wave: the answers by message id, the messages handed back
    (with why), and the reservations whose later changes wait for an earlier one's retry."""

    store: InventoryStore
    clock: Clock
    hints: InventoryHints
    rejection_ttl_seconds: int
    deadline: ConflictDeadline
    answers: dict[str, ReservationOutcome] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)
    blocked: dict[str, str] = field(default_factory=dict)

    def apply(self, wave: Sequence[ChangeRequest]) -> None:
        """One wave (each reservation at most once): its records read, each change decided from
        its record, and the transitions committed per seat class."""
        live = [r for r in wave if r.reservation_id not in self.blocked]
        self.failed.update(
            (r.message_id, self.blocked[r.reservation_id]) for r in wave if r.reservation_id in self.blocked
        )
        if not live:
            return
        now = int(self.clock.now())
        try:
            ids = [r.reservation_id for r in live]
            records = self.deadline.patiently(
                self.clock, partial(self.store.read_reservations, ids), "reading the reservations"
            )
        except RetryableError as exc:
            self._hand_back(live, f"reading the reservations failed: {type(exc).__name__}: {exc}")
            return
        groups: dict[SeatKey, list[tuple[ChangeRequest, Transition]]] = {}
        for request in live:
            decision = decide_change(request, records.get(request.reservation_id), now)
            if isinstance(decision, ReservationOutcome):
                self.answers[request.message_id] = decision
            elif decision.record.seat_key is None:
                self._hand_back([request], "its record names no seat class")
            else:
                groups.setdefault(decision.record.seat_key, []).append((request, decision))
        for key, items in groups.items():
            self._settle(key, items, now)

    def _settle(self, key: SeatKey, items: Sequence[tuple[ChangeRequest, Transition]], now: int) -> None:
        """Commits one class's transitions; answers each change from what became of it."""
        result = settle_transitions(
            key,
            [transition for _, transition in items],
            now=now,
            store=self.store,
            clock=self.clock,
            hints=self.hints,
            release_ttl_seconds=self.rejection_ttl_seconds,
            deadline=self.deadline,
        )
        failed_ids = {t.record.reservation_id for t in result.failed}
        for request, transition in items:
            reservation_id = request.reservation_id
            if reservation_id in failed_ids:
                self._hand_back([request], f"{type(result.error).__name__}: {result.error}")
            elif reservation_id not in result.superseded:
                self.answers[request.message_id] = transition_answer(request, transition)
            elif isinstance(
                current := decide_change(request, result.superseded[reservation_id], now), ReservationOutcome
            ):
                self.answers[request.message_id] = current
            else:  # changed back into a state this change applies to: try again later
                self._hand_back([request], "its reservation changed meanwhile; tried again later")

    def _hand_back(self, requests: Sequence[ChangeRequest], reason: str) -> None:
        self.failed.update((r.message_id, reason) for r in requests)
        self.blocked.update((r.reservation_id, _BLOCKED) for r in requests)
