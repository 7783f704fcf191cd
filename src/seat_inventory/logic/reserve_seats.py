"""Answers one SQS batch of messages: reservations, holds, orders, confirmations and cancellations.

Each reservation id's first message is parsed once; reserves and holds are grouped by seat class
and settled by its planner (counted `settle_group`, mapped `settle_mapped`), then each order
alone (`settle_order`), then the changes (`change_reservations`: a hold and its confirmation can
share a batch). An answer is published only after its write committed; a message whose write or
publication met a transient fault is handed back, and its retry publishes the stored answer
without taking seats again (docs/explanation/guarantees.md); a publication refused for the topic's
rate is first retried in place until the invocation's deadline, as conflicts are.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from seat_inventory.logic.admission_tokens import TokenVerifier
from seat_inventory.logic.answers import invalid, not_waitlisted
from seat_inventory.logic.change_reservations import apply_changes
from seat_inventory.logic.inventory_hints import InventoryHints
from seat_inventory.logic.limits import MAX_RESERVATIONS_PER_TRANSACTION
from seat_inventory.logic.ports import (
    BatchPublisher,
    Clock,
    InventoryStore,
    PendingPublication,
    WaitlistStore,
)
from seat_inventory.logic.retry_deadline import ConflictDeadline
from seat_inventory.logic.seat_views import MappedContext
from seat_inventory.logic.settle_group import settle_group
from seat_inventory.logic.settle_mapped import settle_mapped
from seat_inventory.logic.settle_order import OrderContext, settle_order
from seat_inventory.logic.waitlist_entries import join_waitlist, joins_wanted, leave_waitlist
from seat_inventory.models import (
    BatchResult,
    ChangeRequest,
    InvalidMessage,
    Outcome,
    RequestType,
    ReservationOutcome,
    ReservationRequest,
    RetryableError,
    SeatKey,
)
from seat_inventory.parsing import parse_reservation
from seat_inventory.settings import Settings


@dataclass(frozen=True, slots=True)
class QueueMessage:
    """The two parts of an SQS record the service reads."""

    message_id: str
    body: str


def reserve_seats(
    messages: Sequence[QueueMessage],
    *,
    store: InventoryStore,
    publisher: BatchPublisher,
    settings: Settings,
    clock: Clock,
    hints: InventoryHints | None = None,
    deadline: float | None = None,
    admission: TokenVerifier | None = None,
    waitlist: WaitlistStore | None = None,
) -> BatchResult:
    """Answers every message of one SQS batch; returns what was published and what to retry.

    `hints` lives as long as the container, so that what one batch learns about a class (sold
    out, closed, its limit) spares the next batches a doomed write (see `InventoryHints`).
    Transaction conflicts are retried in place until `deadline` (clock time; the handler gives
    `retry_deadline.conflict_deadline(...)` of the invocation; default
    `DEFAULT_CONFLICT_PATIENCE_SECONDS` from now): a conflict is not a failure, and a message
    handed back for one would count towards the dead-letter queue.
    `admission` verifies the messages' admission tokens (docs/guides/admission.md); without it no key is
    known and every token is refused as forged.
    `waitlist` holds the waiting lists (docs/guides/waiting-list.md): joined and left by messages.

    A batch of more than `MAX_RESERVATIONS_PER_TRANSACTION` messages is answered in parts of that
    many, in order, each as a batch of its own would be (as if the event source had delivered
    them one after the other); each part's answers are published while the next part is written
    (`BatchPublisher.publish_soon`), so a batch of 198 takes two transactions and about one
    `PublishBatch` wait instead of two (docs/guides/size-a-sale.md).
    """
    hints = hints if hints is not None else InventoryHints()
    conflicts_until = (
        ConflictDeadline.until(clock, deadline) if deadline is not None else ConflictDeadline.after(clock)
    )
    context = _Context(store, clock, settings, hints, conflicts_until, admission, waitlist)
    if len(messages) <= MAX_RESERVATIONS_PER_TRANSACTION:
        answers, failed = _answer_part(messages, context)
        ordered = _in_message_order(messages, answers)
        result = BatchResult()
        _record(
            result, messages, ordered, failed, publisher.publish(ordered, retry_throttled=context.back_off)
        )
        return result
    return _answer_in_parts(messages, context, publisher)


def _answer_in_parts(
    messages: Sequence[QueueMessage], context: _Context, publisher: BatchPublisher
) -> BatchResult:
    """A batch of more than one transaction's messages (each message id once), in parts of that
    many: each part answered as a batch of its own, its answers published while the next part is
    written. A change in a later part of a reservation an earlier part handed back is handed back
    too (`_Context.retried`). Should a part raise, the publications under way are waited for first
    (the whole batch is then retried, and the stored answers published again)."""
    unique = list({m.message_id: m for m in messages}.values())
    parts = [
        unique[start : start + MAX_RESERVATIONS_PER_TRANSACTION]
        for start in range(0, len(unique), MAX_RESERVATIONS_PER_TRANSACTION)
    ]
    under_way: list[
        tuple[Sequence[QueueMessage], list[ReservationOutcome], dict[str, str], PendingPublication]
    ] = []
    try:
        for part in parts[:-1]:
            answers, failed = _answer_part(part, context)
            ordered = _in_message_order(part, answers)
            under_way.append(
                (part, ordered, failed, publisher.publish_soon(ordered, retry_throttled=context.back_off))
            )
        answers, failed = _answer_part(parts[-1], context)
        ordered = _in_message_order(parts[-1], answers)
        not_published = publisher.publish(ordered, retry_throttled=context.back_off)
    except BaseException:
        for *_, publication in under_way:
            with contextlib.suppress(Exception):  # the part's own exception is the one to raise
                publication.wait()
        raise
    result = BatchResult()
    for done, done_ordered, done_failed, publication in under_way:
        _record(result, done, done_ordered, done_failed, publication.wait())
    _record(result, parts[-1], ordered, failed, not_published)
    return result


@dataclass(frozen=True, slots=True)
class _Context:
    """What every part of one batch shares: the adapters, the container's hints, the invocation's
    deadline for conflicts and throttled publications."""

    store: InventoryStore
    clock: Clock
    settings: Settings
    hints: InventoryHints
    conflicts_until: ConflictDeadline
    admission: TokenVerifier | None
    waitlist: WaitlistStore | None
    # reservation ids whose messages an earlier part of the batch handed back
    retried: set[str] = field(default_factory=set)

    def back_off(self, refusals: int) -> bool:
        return self.conflicts_until.back_off(self.clock, refusals)


def _answer_part(
    messages: Sequence[QueueMessage], context: _Context
) -> tuple[dict[str, ReservationOutcome], dict[str, str]]:
    """Every message's answer by message id, and the messages to hand back with why."""
    store, clock, settings, hints = context.store, context.clock, context.settings, context.hints
    conflicts_until, waitlist = context.conflicts_until, context.waitlist
    batch = _sort_batch(messages, settings)
    batch.check_tokens(context.admission or TokenVerifier(lambda: None), now=clock.now())
    group_answers, failed = _settle_groups(
        batch.groups, store=store, clock=clock, settings=settings, hints=hints, deadline=conflicts_until
    )
    if batch.orders:
        # Multi-line orders (docs/guides/orders.md): each in its own transaction, after the groups.
        orders = OrderContext(store, clock, hints, settings.rejection_record_ttl_seconds, conflicts_until)
        _settle_orders(batch.orders, orders, group_answers, failed)
    failed.update(batch.keys_unavailable)
    _join_waitlists(batch, group_answers, failed, waitlist, clock)
    answers = batch.answer_requests(group_answers, failed)
    if batch.changes:
        # A confirmation or cancellation of a reservation whose own message must be retried
        # waits for it: answering UNKNOWN_RESERVATION now would be wrong a moment later.
        in_flight = {r.reservation_id for r in batch.first_request.values() if r.message_id in failed}
        change_answers, change_failed = apply_changes(
            batch.changes,
            store=store,
            clock=clock,
            hints=hints,
            rejection_ttl_seconds=settings.rejection_record_ttl_seconds,
            in_flight=in_flight | context.retried,
            deadline=conflicts_until,
        )
        answers.update(change_answers)
        failed.update(change_failed)
    if batch.leaves:
        _leave_waitlists(batch.leaves, answers, failed, waitlist, store, clock, settings)
    requests: list[ReservationRequest | ChangeRequest] = [*batch.first_request.values(), *batch.changes]
    context.retried.update(r.reservation_id for r in requests if r.message_id in failed)
    return answers, failed


@dataclass(slots=True)
class _Batch:
    """A batch's messages sorted by what they ask; each message id once, in arrival order."""

    answers: dict[str, ReservationOutcome] = field(default_factory=dict)  # message id -> answer
    # reservation id -> the first message carrying it; later ones are repeats
    first_request: dict[str, ReservationRequest] = field(default_factory=dict)
    repeats: list[ReservationRequest] = field(default_factory=list)
    groups: dict[SeatKey, list[ReservationRequest]] = field(default_factory=dict)
    orders: list[ReservationRequest] = field(default_factory=list)  # multi-line (docs/guides/orders.md)
    changes: list[ChangeRequest] = field(default_factory=list)
    leaves: list[ChangeRequest] = field(default_factory=list)  # docs/guides/waiting-list.md
    keys_unavailable: dict[str, str] = field(default_factory=dict)  # message id -> why retried

    def check_tokens(self, verifier: TokenVerifier, *, now: float) -> None:
        """Verifies each request's admission token (once per reservation id; repeats share it). A
        request whose token could not be checked (the keys could not be read) is left out and
        retried; one without a token is checked only if its class requires one (the planner)."""
        for key, requests in [*self.groups.items(), (None, self.orders)]:
            kept: list[ReservationRequest] = []
            for request in requests:
                try:
                    check = verifier.check(
                        request.admission_token,
                        event_id=request.event_id,
                        customer_id=request.customer_id,
                        now=now,
                    )
                except RetryableError as exc:
                    self.keys_unavailable[request.message_id] = f"admission keys unavailable: {exc}"
                    continue
                checked = dataclasses.replace(request, admission=check)
                self.first_request[request.reservation_id] = checked
                kept.append(checked)
            if key is None:
                self.orders = kept
            else:
                self.groups[key] = kept

    def answer_requests(
        self, group_answers: Mapping[str, ReservationOutcome], failed: dict[str, str]
    ) -> dict[str, ReservationOutcome]:
        """The answers by message id: invalid messages, each reservation's first message, and its
        repeats in the batch (as duplicates, or retried with their first message)."""
        for request in self.first_request.values():
            if request.reservation_id in group_answers:
                self.answers[request.message_id] = group_answers[request.reservation_id]
        for repeat in self.repeats:
            original = group_answers.get(repeat.reservation_id)
            if original is None:
                failed[repeat.message_id] = "the first delivery of its reservation in this batch is retried"
            else:
                self.answers[repeat.message_id] = original.as_duplicate(repeat.message_id)
        return self.answers


def _sort_batch(messages: Sequence[QueueMessage], settings: Settings) -> _Batch:
    """Parses each message once: invalid ones are answered, reservations and holds grouped by seat
    class, a reservation id already seen kept as a repeat, and changes kept for after the groups."""
    batch = _Batch()
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
            batch.answers[message.message_id] = invalid(parsed)
        elif isinstance(parsed, ChangeRequest):
            (batch.leaves if parsed.request_type is RequestType.LEAVE else batch.changes).append(parsed)
        elif parsed.reservation_id in batch.first_request:
            batch.repeats.append(parsed)
        elif parsed.lines is not None:
            batch.first_request[parsed.reservation_id] = parsed
            batch.orders.append(parsed)
        else:
            batch.first_request[parsed.reservation_id] = parsed
            batch.groups.setdefault(parsed.seat_key, []).append(parsed)
    return batch


def _join_waitlists(
    batch: _Batch,
    group_answers: dict[str, ReservationOutcome],
    failed: dict[str, str],
    waitlist: WaitlistStore | None,
    clock: Clock,
) -> None:
    """Requests refused SOLD_OUT that asked to join their class's waiting list join it; a class
    whose join met a transient fault hands its messages back (their records stay the refusal, and
    a retry joins them)."""
    wanted = joins_wanted(list(batch.first_request.values()), group_answers)
    for key, refused in wanted.items():
        if waitlist is None:
            why = "the service runs without waiting lists"
            group_answers.update((o.reservation_id, not_waitlisted(o, why)) for _, o in refused)
            continue
        joined, not_joined = join_waitlist(key, refused, store=waitlist, clock=clock)
        group_answers.update(joined)
        for request, _ in refused:
            if request.reservation_id in not_joined:
                group_answers.pop(request.reservation_id, None)
                why = not_joined[request.reservation_id]
                failed[request.message_id] = (
                    f"joining the waiting list of {key.event_id} {key.seat_class}: {why}"
                )


def _leave_waitlists(
    leaves: Sequence[ChangeRequest],
    answers: dict[str, ReservationOutcome],
    failed: dict[str, str],
    waitlist: WaitlistStore | None,
    store: InventoryStore,
    clock: Clock,
    settings: Settings,
) -> None:
    """`leave` messages, after the batch's other changes: their records read, each waiting entry
    taken off its list; a transient fault hands them back."""
    try:
        records = store.read_reservations([r.reservation_id for r in leaves])
        answers.update(
            leave_waitlist(
                leaves,
                store=waitlist,
                records=records,
                clock=clock,
                record_ttl_seconds=settings.rejection_record_ttl_seconds,
            )
        )
    except RetryableError as exc:
        failed.update(
            (r.message_id, f"leaving the waiting list: {type(exc).__name__}: {exc}") for r in leaves
        )


def _settle_orders(
    orders: Sequence[ReservationRequest],
    context: OrderContext,
    answers: dict[str, ReservationOutcome],
    failed: dict[str, str],
) -> None:
    """Settles each order alone (`settle_order`); one whose settlement hit a transient fault is
    handed back (nothing of it was taken)."""
    for order in orders:
        try:
            answers[order.reservation_id] = settle_order(order, context)
        except RetryableError as exc:
            failed[order.message_id] = f"order {order.reservation_id}: {type(exc).__name__}: {exc}"


def _in_message_order(
    messages: Sequence[QueueMessage], answers: Mapping[str, ReservationOutcome]
) -> list[ReservationOutcome]:
    """The answers to publish, in message order (a message delivered twice in a batch once)."""
    return [
        answers[message_id]
        for message_id in dict.fromkeys(m.message_id for m in messages)
        if message_id in answers
    ]


def _record(
    result: BatchResult,
    messages: Sequence[QueueMessage],
    ordered: Sequence[ReservationOutcome],
    failed: dict[str, str],
    not_published: Sequence[ReservationOutcome],
) -> None:
    """Adds one part's published answers and handed-back messages to `result`; a message whose
    answer was not published is handed back (its retry publishes the stored answer)."""
    unpublished = {o.message_id for o in not_published}
    for outcome in ordered:
        if outcome.message_id in unpublished:
            failed[outcome.message_id or ""] = "its outcome was not published"
        else:
            result.published.append(outcome)
            _count_seats(result, outcome)
    handed_back = [m.message_id for m in messages if m.message_id in failed]
    result.failed_message_ids += handed_back
    result.handed_back.update((message_id, failed[message_id]) for message_id in handed_back)


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
        counted = _settle_if_mapped(key, requests, answers, failed, store, clock, settings, hints, deadline)
        remaining = list(counted)
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


def _settle_if_mapped(
    key: SeatKey,
    requests: list[ReservationRequest],
    answers: dict[str, ReservationOutcome],
    failed: dict[str, str],
    store: InventoryStore,
    clock: Clock,
    settings: Settings,
    hints: InventoryHints,
    deadline: ConflictDeadline,
) -> list[ReservationRequest]:
    """Settles a mapped class's group (docs/guides/seat-maps.md, `settle_mapped`) and returns nothing
    left to do; for a counted class, answers the requests that name seats or seat options INVALID
    and returns the others for the counted planner."""
    class_map = None
    # A class seen as counted (its item read or handed back, as the planner does before its first
    # write to a class) is counted for good: no map to look for.
    if hints.assumed(key) is None:
        try:
            class_map = deadline.patiently(
                clock, lambda: hints.seat_maps.class_map(store, key), "reading the seat map"
            )
        except RetryableError as exc:
            reason = f"{key.event_id} {key.seat_class}: reading the seat map: {type(exc).__name__}: {exc}"
            failed.update((r.message_id, reason) for r in requests)
            return []
    if class_map is not None:
        ttl = settings.rejection_record_ttl_seconds
        context = MappedContext(store, clock, hints.seat_maps, ttl, deadline, hints.rng)
        settled, mapped_failed = settle_mapped(key, class_map, requests, context=context)
        answers.update(settled)
        failed.update(mapped_failed)
        return []
    counted = []
    for request in requests:
        if request.seats is not None or request.split or request.accessible:
            reason = f"{key.event_id} {key.seat_class} is not a mapped seat class: seats, split and"
            answers[request.reservation_id] = invalid(
                InvalidMessage(
                    request.message_id,
                    reason + " accessible do not apply",
                    request.reservation_id,
                    request.event_id,
                    request.seat_class,
                    request.quantity,
                    request.customer_id,
                    request.request_type,
                )
            )
        else:
            counted.append(request)
    return counted


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
