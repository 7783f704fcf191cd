"""Joining and leaving a class's waiting list (docs/guides/waiting-list.md).

A request that asked for it (`waitlist: true`) and was refused SOLD_OUT joins the list of its
class when the class has one open: in one transaction its record (still that refusal) becomes
WAITLISTED with its place, its customer's entry is written (one per customer and class, for
good), its place is put on a lane in join order, and the lane counts it. The answer says the
entry's position: the entries waiting when it joined, plus one. A `leave` message takes a waiting
entry off the list (LEFT). Both are idempotent: the record's status is the guard, and a
redelivery is answered from the record.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from seat_inventory.logic import answers
from seat_inventory.logic.ports import Clock, WaitlistStore
from seat_inventory.models import (
    ChangeRequest,
    EntryEnd,
    Join,
    LaneWrite,
    ListRefused,
    Outcome,
    Place,
    ReservationOutcome,
    ReservationRecord,
    ReservationRequest,
    RetryableError,
    SeatKey,
    Throttled,
    TransactionConflict,
    WaitingList,
    key_ms,
    lane_for,
    order_key,
)

# Entries one join or leave transaction writes (a join: 3 actions each and its lane; a leave:
# 2 each and its lane), under DynamoDB's 100 actions.
JOINS_PER_TRANSACTION = 33
LEAVES_PER_TRANSACTION = 49
# Attempts of one join or leave (a round fenced the lane meanwhile, an entry changed, or a
# transaction conflict).
ENTRY_ATTEMPTS = 8


def joins_wanted(
    requests: Sequence[ReservationRequest], outcomes: Mapping[str, ReservationOutcome]
) -> dict[SeatKey, list[tuple[ReservationRequest, ReservationOutcome]]]:
    """Per class, the requests that asked to join the waiting list and were refused SOLD_OUT."""
    wanted: dict[SeatKey, list[tuple[ReservationRequest, ReservationOutcome]]] = {}
    for request in requests:
        outcome = outcomes.get(request.reservation_id)
        if request.waitlist and outcome is not None and outcome.outcome is Outcome.SOLD_OUT:
            wanted.setdefault(request.seat_key, []).append((request, outcome))
    return wanted


def join_waitlist(
    key: SeatKey,
    refused: Sequence[tuple[ReservationRequest, ReservationOutcome]],
    *,
    store: WaitlistStore,
    clock: Clock,
) -> tuple[dict[str, ReservationOutcome], dict[str, str]]:
    """The answers of requests refused SOLD_OUT that join `key`'s list, by reservation id: WAITLISTED
    with a position, or the refusal saying why it is not on the list; and those whose join met a
    transient fault, with why (to be retried: their records are still the refusal)."""
    result: dict[str, ReservationOutcome] = {}
    failed: dict[str, str] = {}
    try:
        why = _closed(store.read_waitlist(key), clock.now())
    except RetryableError as exc:
        return {}, {o.reservation_id: f"{type(exc).__name__}: {exc}" for _, o in refused}
    if why is not None:
        return {o.reservation_id: answers.not_waitlisted(o, why) for _, o in refused}, {}
    for start in range(0, len(refused), JOINS_PER_TRANSACTION):
        chunk = [o for _, o in refused[start : start + JOINS_PER_TRANSACTION]]
        wants = {
            r.reservation_id: (r.split, r.accessible)
            for r, _ in refused[start : start + JOINS_PER_TRANSACTION]
        }
        try:
            result.update(_Joining(key, store, clock, chunk, wants).run())
        except RetryableError as exc:
            failed.update((o.reservation_id, f"{type(exc).__name__}: {exc}") for o in chunk)
    return result, failed


def _closed(waiting: WaitingList | None, now: float) -> str | None:
    if waiting is None:
        return "the class has no waiting list"
    if not waiting.offers_at(now):
        return "the class's waiting list is closed"
    return None


@dataclass(slots=True)
class _Joining:
    """One transaction's joins, tried again with later order keys when a round fenced the lane,
    without the requests whose record or customer's entry refused."""

    key: SeatKey
    store: WaitlistStore
    clock: Clock
    pending: list[ReservationOutcome]
    # A mapped class's best-available requests: (split, accessible) by reservation id.
    wants: Mapping[str, tuple[bool, bool]] = field(default_factory=dict)
    answered: dict[str, ReservationOutcome] = field(default_factory=dict)
    floor_ms: int = 0

    def run(self) -> dict[str, ReservationOutcome]:
        for attempt in range(ENTRY_ATTEMPTS):
            if not self.pending:
                break
            waiting = self.store.read_waitlist(self.key)
            why = _closed(waiting, self.clock.now())
            if waiting is None or why is not None:
                self._give_up(why or "")
                break
            join = self._join(waiting.waiting)
            try:
                refused = self.store.join_waitlist(join)
            except (TransactionConflict, Throttled):  # a round or another join wrote the lane
                self.clock.sleep(random.uniform(0, 0.05 * 2**attempt))
                continue
            if refused is None:
                self.answered.update((o.reservation_id, o) for o, _ in join.entries)
                self.pending = []
            else:
                self._learn(join, refused)
        if self.pending:  # handed back: the records are still the refusal, and a retry joins them
            raise RetryableError(f"joining the waiting list of {self.key}: the lane kept changing")
        return self.answered

    def _join(self, waiting: int) -> Join:
        ms = max(int(self.clock.now() * 1000), self.floor_ms)
        lane = lane_for(self.pending[0].reservation_id)
        entries = []
        for index, refusal in enumerate(self.pending):
            rid = refusal.reservation_id
            split, accessible = self.wants.get(rid, (False, False))
            place = Place(
                self.key,
                lane,
                order_key(ms, index, rid),
                rid,
                refusal.customer_id or "",
                refusal.quantity or 0,
                split=split,
                accessible=accessible,
            )
            entries.append((answers.waitlisted(refusal, waiting + index + 1), place))
        return Join(self.key, lane, tuple(entries))

    def _learn(self, join: Join, refused: ListRefused) -> None:
        """Drops the requests whose record is no longer the refusal (answered from it: joined by a
        delivery before, or changed) and those whose customer has an entry already; a lane fenced
        past the keys moves them later."""
        for refusal in list(self.pending):
            rid = refusal.reservation_id
            if rid in refused.records:
                record = refused.records[rid]
                stored = record.answer if isinstance(record, ReservationRecord) else None
                self.answered[rid] = stored.as_duplicate(refusal.message_id or "") if stored else refusal
            elif (customer := refusal.customer_id or "") in refused.entries:
                entry = refused.entries[customer]
                why = f"customer {refusal.customer_id!r} has an entry on it already (reservation {entry!r})"
                self.answered[rid] = answers.not_waitlisted(refusal, why)
        self.pending = [o for o in self.pending if o.reservation_id not in self.answered]
        for lane in refused.lanes.values():
            if lane is not None:
                self.floor_ms = max(self.floor_ms, key_ms(lane.frontier) + 1)

    def _give_up(self, why: str) -> None:
        self.answered.update((o.reservation_id, answers.not_waitlisted(o, why)) for o in self.pending)
        self.pending = []


def leave_waitlist(
    requests: Sequence[ChangeRequest],
    *,
    store: WaitlistStore | None,
    records: Mapping[str, ReservationRecord],
    clock: Clock,
    record_ttl_seconds: int,
) -> dict[str, ReservationOutcome]:
    """The answers of `leave` messages by message id, given their records as read: each waiting
    entry taken off its lane (LEFT, its record expiring after `record_ttl_seconds`), any other
    reservation answered with where it stands. `RetryableError` propagates."""
    result: dict[str, ReservationOutcome] = {}
    now = int(clock.now())
    ends: dict[tuple[SeatKey, int], list[tuple[ChangeRequest, EntryEnd]]] = {}
    for request in requests:
        decided = _decide_leave(request, records.get(request.reservation_id), now + record_ttl_seconds)
        if isinstance(decided, ReservationOutcome):
            result[request.message_id] = decided
        elif store is None:  # no store of lists: nothing can be waiting on one
            result[request.message_id] = answers.not_waiting(request, records[request.reservation_id])
        else:
            ends.setdefault((decided.place.key, decided.place.lane), []).append((request, decided))
    for (key, lane), items in ends.items():
        assert store is not None
        for start in range(0, len(items), LEAVES_PER_TRANSACTION):
            chunk = items[start : start + LEAVES_PER_TRANSACTION]
            result.update(_write_leaves(key, lane, now, chunk, store))
    return result


def _decide_leave(
    request: ChangeRequest, record: ReservationRecord | None, expires_at: int
) -> EntryEnd | ReservationOutcome:
    if record is None:
        why = f"no reservation {request.reservation_id!r} is recorded"
        return answers.change_without_record(request, Outcome.UNKNOWN_RESERVATION, why)
    if request.customer_id is not None and request.customer_id != record.answer.customer_id:
        why = f"customer_id {request.customer_id!r} does not match the reservation's customer"
        return answers.change_without_record(request, Outcome.INVALID, why)
    if record.status is not Outcome.WAITLISTED or record.waitlist_place is None or record.seat_key is None:
        return answers.not_waiting(request, record)
    lane, order = record.waitlist_place
    a = record.answer
    place = Place(record.seat_key, lane, order, a.reservation_id, a.customer_id or "", a.quantity or 0)
    return EntryEnd(place, Outcome.LEFT, expires_at, answers.left(request, record))


def _write_leaves(
    key: SeatKey, lane: int, now: int, items: Sequence[tuple[ChangeRequest, EntryEnd]], store: WaitlistStore
) -> dict[str, ReservationOutcome]:
    """One lane's leaves in one transaction; an entry changed meanwhile (offered, or left by a
    delivery before) is answered from its record as it is now, and the others written again."""
    answered: dict[str, ReservationOutcome] = {}
    pending = list(items)
    for _ in range(ENTRY_ATTEMPTS):
        if not pending:
            break
        (refused,) = store.write_lanes([LaneWrite(key, lane, now, ends=tuple(end for _, end in pending))])
        if refused is None:
            answered.update((r.message_id, end.answer) for r, end in pending if end.answer is not None)
            return answered
        for request, end in pending:
            now_stored = refused.records.get(end.place.reservation_id, end)
            if isinstance(now_stored, ReservationRecord):
                answered[request.message_id] = answers.not_waiting(request, now_stored)
        pending = [(r, e) for r, e in pending if r.message_id not in answered]
    if pending:
        raise RetryableError(f"leaving the waiting list of {key}: lane {lane} kept refusing")
    return answered
