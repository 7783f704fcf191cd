"""Reserve and hold on a mapped seat class (docs/guides/seat-maps.md).

Each request is placed on a view of the class's row items (`seat_placement`; best available in
the container's slice of the rows, `seat_slices`), then taken by a transaction: an update per row
item guarded on exactly the seats taken being free (and the sale open, the limit the one assumed),
the record (guarded: it must not exist, so a redelivery takes nothing) and the customer's counter.
A batch's best-available requests of one kind (reserves, or holds) in a class without a
per-customer limit are taken together: placed one after the other, their row updates merged per
row item and their records in one transaction of at most 100 actions (`_settle_together`), in
one slice, read and claimed just before (`_read_slice`, `_claim`); the others one transaction per
request. The view may be stale: a refused row comes back as it is,
the view learns it, and the request is placed again. A chosen seat not free is a final
SEATS_TAKEN answer; no block fitting is SOLD_OUT; both are recorded like the counted classes'
rejections. Outside the counted classes' batch planner (`settle_group`) on purpose.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

from seat_inventory.logic.mapped_rules import MappedRules, admission, pool_refusal, token_refusal
from seat_inventory.logic.ports import Clock, InventoryStore
from seat_inventory.logic.retry_deadline import ConflictDeadline
from seat_inventory.logic.seat_map import ClassMap, SeatMap
from seat_inventory.logic.seat_placement import (
    Placement,
    Refusal,
    Refused,
    place_best,
    place_chosen,
    stranded_by,
)
from seat_inventory.logic.seat_slices import Slice, deal
from seat_inventory.logic.shards import Draws
from seat_inventory.models import (
    ClassRules,
    ClassTake,
    Outcome,
    ReservationOutcome,
    ReservationRequest,
    RetryableError,
    SeatKey,
    SeatRow,
    SeatState,
    StoreInconsistency,
    Take,
    Throttled,
    TransactionConflict,
    WriteRefused,
    iso_utc,
    row_item_of,
    seats_by_row,
)

# A view of a whole class older than this is read again before placing best available.
VIEW_SECONDS = 2.0
# After a refused take, the view is read again once this old.
REFUSED_VIEW_SECONDS = 0.5
# Placements refused by stale rows before a request settled alone is handed back (each refusal
# refreshes the rows it touched, so this is rare); requests taken together are placed again past
# it, with a back-off between tries, until the deadline (`_settle_together`).
MAX_PLACEMENTS = 8
# TransactWriteItems' limit: a batch's row items and records together.
MAX_ACTIONS = 100
# A slice where this container saw another take (a refused take, a conflict, seats taken that its
# view did not show) within this many seconds is taken to be in use: tried only after every
# other slice with the seats (as `logic.shards.SHARD_IN_USE_SECONDS` does for shard items).
SLICE_IN_USE_SECONDS = 0.5
# Before a take in a slice, a container reads the slice and claims it for this long (`_claim`),
# unless it holds a claim on it for at least half of that still (then it is the only one taking
# there: its view of the slice is as it is): a slice another container claimed is left (in use)
# rather than both taking there. (0.15 s until 2026-11-26. On 20,000 stadium requests with
# `--event-pollers 7`, seats a second: 0.15 s 17,315; 0.08 s 18,580, 1% of the takes cancelled;
# 0.05 s 19,610, 6%; 0.3 s 12,277. docs/guides/seat-maps.md, "Shorter claims".)
CLAIM_SECONDS = 0.08
# A slice read this recently is placed on as read (its rows are as they were then) and claimed
# without reading it again.
SLICE_READ_SECONDS = 0.05
# A slice read showing seats taken that the view did not show means the view is behind the sale:
# it is read again once older than this.
BEHIND_VIEW_SECONDS = 0.25


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
    return {
        f"{row_id.split('#', 1)[0]}-{position}" for row_id, row in rows.items() for position in row.states
    }


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


def settle_mapped(
    key: SeatKey,
    class_map: ClassMap,
    requests: Sequence[ReservationRequest],
    *,
    context: MappedContext,
) -> tuple[dict[str, ReservationOutcome], dict[str, str]]:
    """Answers each request (by reservation id); returns the answers and the message ids to hand
    back (a transient fault or persistent contention) with why."""
    answers: dict[str, ReservationOutcome] = {}
    failed: dict[str, str] = {}
    for group, together in _runs(requests):
        alone = group
        if together:
            settled, group_failed, alone = _settle_together(key, class_map, group, context)
            answers.update(settled)
            failed.update(group_failed)
        for request in alone:
            try:
                answers[request.reservation_id] = _settle_one(key, class_map, request, context)
            except RetryableError as exc:
                failed[request.message_id] = f"{key.event_id} {key.seat_class}: {type(exc).__name__}: {exc}"
    return answers, failed


def _runs(requests: Sequence[ReservationRequest]) -> list[tuple[list[ReservationRequest], bool]]:
    """The requests in arrival order, cut into runs: consecutive plain ones of one kind (best
    available, not split, not accessible, reserves or holds, the first message of each
    reservation) are taken together; each other request is settled alone, in its place."""
    runs: list[tuple[list[ReservationRequest], bool]] = []
    seen: set[str] = set()
    for request in requests:
        plain = request.seats is None and not request.split and not request.accessible
        if plain and request.reservation_id not in seen:
            seen.add(request.reservation_id)
            last = runs[-1] if runs else None
            if last is not None and last[1] and last[0][0].is_hold == request.is_hold:
                last[0].append(request)
            else:
                runs.append(([request], True))
        else:
            runs.append(([request], False))
    return runs


def _place(
    key: SeatKey,
    class_map: ClassMap,
    request: ReservationRequest,
    rows: dict[str, SeatRow],
    context: MappedContext,
) -> Placement | Refusal:
    if request.seats is not None:
        return place_chosen(class_map, taken_seats(rows), request.seats, request.accessible)
    if request.split or request.accessible:
        return place_best(class_map, taken_seats(rows), request.quantity, request.split, request.accessible)
    return _place_spread(key, class_map, request.quantity, rows, context)


def _slice_order(
    slices: tuple[Slice, ...],
    available: dict[int, int],
    quantity: int,
    own: int | None,
    rng: Draws,
    in_use: Collection[int] = (),
) -> list[int]:
    """The slices to try: the container's own, then those the view shows with `quantity` seats,
    those at least as full as the median first (as `logic.shards.pick_shard` picks a shard item:
    away from where others sold), each group in ring order from the slice after the container's
    own (from a slice drawn at random when it has none); slices `in_use` by other containers come
    only after all the others. Containers that start apart and go round the ring at about the
    same pace stay apart, so two rarely aim at the same slice; trying every slice before the
    whole class spreads the last seats' buyers instead of sending every container to the same
    best block left."""
    fits = [index for index, seats in available.items() if seats >= quantity and index != own]
    median = sorted(available[i] for i in fits)[len(fits) // 2] if fits else 0
    start = own + 1 if own is not None else rng.randrange(len(slices))
    ring = sorted(fits, key=lambda index: (index - start) % len(slices))
    fuller = [i for i in ring if available[i] >= median]
    rest = [i for i in ring if available[i] < median]
    order = fuller + rest
    if in_use:
        order = [i for i in order if i not in in_use] + [i for i in order if i in in_use]
    return ([own] if own is not None else []) + order


def _place_spread(
    key: SeatKey,
    class_map: ClassMap,
    quantity: int,
    rows: dict[str, SeatRow],
    context: MappedContext,
    available: dict[int, int] | None = None,
) -> Placement | Refusal:
    """Best available in the container's slice (`seat_slices`), then in the others its view shows
    with enough seats, then on the whole class; NO_BLOCK only when no block fits the view.
    `available`: each slice's free seats on `rows`, when the caller keeps them (`_fill`).

    A block that would strand a seat is taken only when every block does (the whole class's
    rule: fewest orphans, then best ranked); then too it is looked for slice by slice in the
    same order, among the blocks stranding as few seats as the class's best: at the sale's end
    every container would otherwise aim at that one best block."""
    maps = context.maps
    if maps.no_fit.get(key, quantity + 1) <= quantity:
        return Refusal(Refused.NO_BLOCK)
    slices = maps.slices_of(key, class_map)
    if len(slices) == 1:
        return place_best(class_map, taken_seats(rows), quantity)
    if available is None:
        available = {s.index: s.available(rows) for s in slices}
    in_use = maps.in_use(key, context.clock.now())
    order = _slice_order(slices, available, quantity, maps.own_slice.get(key), context.rng, in_use)
    found = _in_slices(slices, order, rows, quantity, 0)
    if found is None:
        taken = taken_seats(rows)
        whole = place_best(class_map, taken, quantity)
        if not isinstance(whole, Placement) or not (least := len(stranded_by(class_map, taken, whole.seats))):
            return whole
        found = _in_slices(slices, order, rows, quantity, least) or (None, whole)
    index, placement = found
    if index is not None:
        maps.own_slice[key] = index
    return placement


def _in_slices(
    slices: tuple[Slice, ...], order: list[int], rows: dict[str, SeatRow], quantity: int, strands: int
) -> tuple[int | None, Placement] | None:
    """The first slice in `order` whose best block strands exactly `strands` seats, and the block."""
    for index in order:
        piece = slices[index]
        taken = taken_seats(piece.rows_of(rows))
        placement = place_best(piece.class_map, taken, quantity)
        if (
            isinstance(placement, Placement)
            and len(stranded_by(piece.class_map, taken, placement.seats)) == strands
        ):
            return index, placement
    return None


def _settle_one(
    key: SeatKey, class_map: ClassMap, request: ReservationRequest, context: MappedContext
) -> ReservationOutcome:
    store, maps = context.store, context.maps
    now = context.clock.now()
    if request.seats is not None:
        # Chosen seats: their rows read consistently (the orphan rule looks at their neighbours).
        wanted = [row_item_of(s)[0] for s in request.seats if s in class_map.seats]
        maps.learn(key, store.read_seat_rows(key, wanted))
        rows = maps.views[key]
    else:
        rows = maps.view(store, key, now)
    limit = next((row.max_per_customer for row in rows.values()), None)
    rules = MappedRules.of(rows)  # pools and admission (docs/guides/pools.md, docs/guides/admission.md)
    moves: Mapping[str, Mapping[int, int]] = {}
    for _ in range(MAX_PLACEMENTS):
        if limit is not None and request.quantity > limit:
            # More than any customer may take: no counter can hold it (the DAL refuses to write it).
            reason = (
                f"customer {request.customer_id!r} may take at most {limit} seat(s) of"
                f" {key.event_id} {key.seat_class}; {request.quantity} requested"
            )
            return _reject(request, Outcome.LIMIT_EXCEEDED, reason, None, context, now)
        token_uses, token_refused = admission(request, rules)  # before placing, as counted classes
        if token_refused is not None:
            return _reject(request, Outcome.ADMISSION_REFUSED, token_refused, None, context, now)
        placement = _place(key, class_map, request, rows, context)
        if isinstance(placement, Refusal):
            return _refused(request, placement, rows, context, now)
        answer = _taken_answer(request, placement.seats, now)
        part = ClassTake(
            key,
            [answer],
            seats=request.quantity,
            held=request.quantity if request.is_hold else 0,
            rules=ClassRules(limit, rules.admission_required, rules.pools),
            counters={request.customer_id: request.quantity},
            rows=seats_by_row(placement.seats),
            pool_moves=moves,
            token_uses=token_uses,
        )
        refused = _commit(
            store, Take([part], int(now) + context.rejection_ttl_seconds, now=int(now)), context
        )
        if refused is None:
            _mark_taken(maps, key, part, answer)
            return answer
        if refused.already_recorded:
            return refused.already_recorded[request.reservation_id].as_duplicate(request.message_id)
        if refused.rows:
            missing = [row_id for row_id, row in refused.rows.items() if row is None]
            if missing:
                raise StoreInconsistency(f"{key}: the map's row item(s) {missing} do not exist")
            learned = {row_id: row for row_id, row in refused.rows.items() if row is not None}
            maps.learn(key, learned)
            maps.leave(key, None, context.clock.now())  # another container sells here too: move
            maps.stale_soon(key)  # others may have sold elsewhere too
            rows = maps.view(store, key, context.clock.now())
            closed = [r.sale_closed_reason(now) for r in learned.values() if r.sale_closed_reason(now)]
            if closed and closed[0]:
                return _reject(request, Outcome.SALE_CLOSED, closed[0], None, context, now)
            limit = next(iter(learned.values())).max_per_customer
            rules = MappedRules.of(learned)
            continue
        if refused.tokens_used and (replayed := token_refusal(request, refused.tokens_used)):
            return _reject(request, Outcome.ADMISSION_REFUSED, replayed, None, context, now)
        if refused.pools_refused:
            decided = pool_refusal(store, key, request, refused.pools_refused)
            if decided.outcome is not None:
                left = decided.left
                return _reject(request, decided.outcome, decided.reason, None, context, now, remaining=left)
            moves = decided.moves  # a sharded pool with the seats elsewhere: moved into item 0
            continue
        if refused.customer_seats:
            counted = refused.customer_seats[request.customer_id]
            reason = (
                f"customer {request.customer_id!r} may take at most {limit} seat(s) of"
                f" {key.event_id} {key.seat_class}; {counted} already taken, {request.quantity} requested"
            )
            return _reject(request, Outcome.LIMIT_EXCEEDED, reason, None, context, now)
        raise RetryableError(f"{key}: a take refused without a reason the planner knows")
    raise TransactionConflict(f"{key}: {MAX_PLACEMENTS} placements in a row refused by seats taken meanwhile")


def _settle_together(
    key: SeatKey, class_map: ClassMap, requests: list[ReservationRequest], context: MappedContext
) -> tuple[dict[str, ReservationOutcome], dict[str, str], list[ReservationRequest]]:
    """Takes requests of one kind together: as many as fit in one transaction, placed in order on the
    view, in one slice (each seeing the seats of those before it; `_fill`); a request no block fits
    on the view (with none before it in the transaction) is SOLD_OUT, and so is every other one
    asking at least as many seats. A refused row is learned and the requests placed again; a
    conflict (another container's take holds the rows) is not retried in place: the slice is left
    (in use for a while) and the requests placed again elsewhere; past MAX_PLACEMENTS refusals in a
    row a jittered back-off comes between tries, until the deadline (then they are handed back). A
    record that exists answers its request as a duplicate. Returns the answers, the failed message
    ids, and the requests left to settle one by one (a class with a per-customer limit, pools or
    admission tokens)."""
    answers: dict[str, ReservationOutcome] = {}
    failed: dict[str, str] = {}
    pending = list(requests)
    refusals = 0
    while pending:
        now = context.clock.now()
        try:
            rows = _read_view(key, context, now)
        except RetryableError as exc:
            reason = f"{key.event_id} {key.seat_class}: {type(exc).__name__}: {exc}"
            failed.update((r.message_id, reason) for r in pending)
            return answers, failed, []
        if any(r.max_per_customer is not None or r.pools or r.admission_required for r in rows.values()):
            break  # the counters', pools' and tokens' guards and answers are the one-by-one path's
        outcomes, merged, home = _fill(key, class_map, pending, rows, context, now)
        if outcomes and home is not None and not context.maps.holds(key, home, context.clock.now()):
            if not context.maps.read_lately(key, home, context.clock.now()) and _read_slice(
                key, class_map, home, context
            ):
                continue  # placed again on the slice as it is now
            if not _claim(key, home, context):
                continue  # another container claimed the slice: placed again elsewhere
        if not outcomes:
            context.maps.no_fit[key] = pending[0].quantity
            sold_out = [r for r in pending if r.quantity >= pending[0].quantity]
            done, not_written = _sold_out_together(sold_out, rows, context, now)
            answers.update(done)
            failed.update(not_written)
            pending = [r for r in pending if r.quantity < pending[0].quantity]
            continue
        held = sum(o.quantity or 0 for o in outcomes if o.outcome is Outcome.HELD)
        taken = {row_id: tuple(positions) for row_id, positions in merged.items()}
        part = ClassTake(key, outcomes, seats=sum(o.quantity or 0 for o in outcomes), held=held, rows=taken)
        take = Take([part], int(now) + context.rejection_ttl_seconds, now=int(now))
        taking = {o.reservation_id for o in outcomes}
        try:
            refused = _take(context.store, take, context)
        except RetryableError as exc:
            reason = f"{key.event_id} {key.seat_class}: {type(exc).__name__}: {exc}"
            failed.update((r.message_id, reason) for r in pending if r.reservation_id in taking)
            pending = [r for r in pending if r.reservation_id not in taking]
            continue
        if refused is None:
            _mark_taken(context.maps, key, part, outcomes[0])
            answers.update((o.reservation_id, o) for o in outcomes)
            pending = [r for r in pending if r.reservation_id not in taking]
            refusals = 0
            continue
        refusals += 1
        context.maps.claimed.pop(key, None)  # a slice refusing a take is read again before a take there
        if isinstance(refused, TransactionConflict):
            context.maps.leave(key, home, context.clock.now())  # another container's take is there
        else:
            pending = _learn_refusal(key, refused, pending, answers, context, now)
        if (
            pending
            and refusals > MAX_PLACEMENTS
            and not context.deadline.back_off(context.clock, refusals - MAX_PLACEMENTS)
        ):
            reason = f"{key.event_id} {key.seat_class}: {refusals} takes refused in a row until the deadline"
            failed.update((r.message_id, reason) for r in pending)
            return answers, failed, []
    return answers, failed, pending


def _claim(key: SeatKey, index: int, context: MappedContext) -> bool:
    """Whether this container may take in slice `index`, just read: it claims the slice
    (`InventoryStore.claim`). A claim refused means another container read it too and is about to
    take there: the slice is left (in use) and False returned; when the slice was in use already
    (every other slice with the seats is too: the sale's end), after a jittered pause, so that
    containers wait their turn on the few slices left rather than all take there at once. Past the
    pauses' budget, and when the claim is not answered (a transient fault), the take goes ahead
    unclaimed: claims only steer placement, every take is guarded on its seats."""
    maps, now = context.maps, context.clock.now()  # not the batch's `now`: a view read may be long
    if maps.owner is None:
        maps.owner = f"{context.rng.randrange(1 << 62):016x}"
    try:
        granted = context.store.claim(key, str(index), maps.owner, now=now, until=now + CLAIM_SECONDS)
    except RetryableError:
        return True
    if granted:
        maps.claimed[key] = (index, now + CLAIM_SECONDS)
        return True
    busy = index in maps.in_use(key, now)
    maps.leave(key, index, context.clock.now())
    return busy and not context.deadline.back_off(context.clock, 1)


def _read_slice(key: SeatKey, class_map: ClassMap, index: int, context: MappedContext) -> bool:
    """Before a take in a slice the container does not hold a claim on: its row items read
    consistently (one BatchGetItem of a few items; the view of the whole class may be 2 s old).
    Whether they differ from the view (learned: the requests are placed again, on the slice as
    read, which is then claimed without reading it again: `SeatMaps.read_lately`). Seats taken
    there that the view did not show need not mean another container takes there now: its claim
    says so (`_claim`). A read refused (throttled) changes nothing: the take goes ahead on the
    view, guarded as always."""
    maps = context.maps
    piece = maps.slices_of(key, class_map)[index]
    try:
        rows = context.store.read_seat_rows(key, list(piece.items))
    except RetryableError:
        return False
    maps.slice_read[key] = (index, context.clock.now())
    view = maps.views.get(key, {})
    changed = {
        row_id: row
        for row_id, row in rows.items()
        if row_id not in view or view[row_id].states != row.states or view[row_id].available != row.available
    }
    if not changed:
        return False
    if any(
        row.states.keys() - view[row_id].states.keys() for row_id, row in changed.items() if row_id in view
    ):
        maps.read_again_if_older(key, context.clock.now(), BEHIND_VIEW_SECONDS)
    maps.learn(key, changed)
    return True


def _read_view(key: SeatKey, context: MappedContext, now: float) -> dict[str, SeatRow]:
    """The container's view of the class, read again when old, retried in place while throttled."""
    return context.deadline.patiently(
        context.clock, lambda: context.maps.view(context.store, key, now), "reading the seat rows"
    )


def _fill(
    key: SeatKey,
    class_map: ClassMap,
    pending: list[ReservationRequest],
    rows: dict[str, SeatRow],
    context: MappedContext,
    now: float,
) -> tuple[list[ReservationOutcome], dict[str, list[int]], int | None]:
    """The answers of the requests that fit in one transaction, in order, their seats merged per
    row item, and the slice they are in (None: placed on the whole class). The first request is
    placed as `_place_spread` places (none fitting: no answers); the slice it lands in is the
    transaction's, and each later request goes in only with a block in that slice stranding no
    seat (the others are placed again after the commit, first the earliest): a transaction stays
    in one slice, so a container that meets another in a slice loses only that slice's takes, and
    at the sale's end one take fills a slice's gaps with the batch's requests that fit them.
    Placed on the whole class, it stops at the first request placed in another slice."""
    local = dict(rows)
    outcomes: list[ReservationOutcome] = []
    merged: dict[str, list[int]] = {}
    home = context.maps.own_slice.get(key)
    slices = context.maps.slices_of(key, class_map)
    available = {s.index: s.available(local) for s in slices}
    for request in pending:
        if outcomes and home is not None:
            found = _in_slices(slices, [home], local, request.quantity, 0)
            if found is None:
                continue  # no block without a single in the slice: the next transaction places it
            placement = found[1]
        else:
            placed = _place_spread(key, class_map, request.quantity, local, context, available)
            if isinstance(placed, Refusal):
                break
            placement = placed
            where = context.maps.own_slice.get(key)
            if outcomes and where != home:
                break
            home = where
        by_row = seats_by_row(placement.seats)
        if len(merged.keys() | by_row.keys()) + len(outcomes) + 1 > MAX_ACTIONS:
            break
        outcomes.append(_taken_answer(request, placement.seats, now))
        for row_id, positions in by_row.items():
            merged.setdefault(row_id, []).extend(positions)
            row = local[row_id]
            states = {**row.states, **dict.fromkeys(positions, SeatState.SOLD)}
            local[row_id] = dataclasses.replace(row, states=states, available=row.available - len(positions))
        _count_taken(slices, available, by_row, home)
    return outcomes, merged, home


def _count_taken(
    slices: tuple[Slice, ...], available: dict[int, int], by_row: dict[str, tuple[int, ...]], home: int | None
) -> None:
    """Each slice's free seats after a placement: in `home` (its slice), or where its rows are (a
    placement on the whole class)."""
    for row_id, positions in by_row.items():
        if home is not None and row_id in slices[home].items:
            available[home] -= len(positions)
            continue
        for piece in slices:
            if row_id in piece.items:
                available[piece.index] -= len(positions)
                break


def _learn_refusal(
    key: SeatKey,
    refused: WriteRefused,
    pending: list[ReservationRequest],
    answers: dict[str, ReservationOutcome],
    context: MappedContext,
    now: float,
) -> list[ReservationRequest]:
    """What a refused transaction taught: duplicates answered, rows learned (the container moves
    to another slice), a closed sale answered SALE_CLOSED. Returns the requests still to place."""
    for request in pending:
        if request.reservation_id in refused.already_recorded:
            recorded = refused.already_recorded[request.reservation_id]
            answers[request.reservation_id] = recorded.as_duplicate(request.message_id)
    pending = [r for r in pending if r.reservation_id not in answers]
    if refused.rows:
        missing = [row_id for row_id, row in refused.rows.items() if row is None]
        if missing:
            raise StoreInconsistency(f"{key}: the map's row item(s) {missing} do not exist")
        learned = {row_id: row for row_id, row in refused.rows.items() if row is not None}
        context.maps.learn(key, learned)
        context.maps.leave(key, None, context.clock.now())
        context.maps.stale_soon(key)
        closed = [reason for r in learned.values() if (reason := r.sale_closed_reason(now))]
        if closed:
            for request in pending:
                answer = _reject(request, Outcome.SALE_CLOSED, closed[0], None, context, now)
                answers[request.reservation_id] = answer
            return []
    elif not refused.already_recorded:
        raise RetryableError(f"{key}: a take refused without a reason the planner knows")
    return pending


def _sold_out_together(
    requests: list[ReservationRequest], rows: dict[str, SeatRow], context: MappedContext, now: float
) -> tuple[dict[str, ReservationOutcome], dict[str, str]]:
    """SOLD_OUT for requests no block fits, their records written as the counted path writes
    rejections (each its own conditional write); a record that exists is the answer given before."""
    left = sum(row.available for row in rows.values())
    answers = {
        r.reservation_id: _answer(
            r,
            Outcome.SOLD_OUT,
            f"requested {r.quantity} seat(s) together; no placement fits ({left} left)",
            None,
            remaining=left,
        )
        for r in requests
    }
    expires_at = int(now) + context.rejection_ttl_seconds
    refused = context.store.record_rejections(list(answers.values()), expires_at=expires_at)
    if refused is None:
        return answers, {}
    done: dict[str, ReservationOutcome] = {}
    failed: dict[str, str] = {}
    for request in requests:
        rid = request.reservation_id
        if rid in refused.already_recorded:
            done[rid] = refused.already_recorded[rid].as_duplicate(request.message_id)
        elif rid in refused.written:
            done[rid] = answers[rid]
        else:
            failed[request.message_id] = f"the record of {rid!r} was not written"
    return done, failed


def _take(
    store: InventoryStore, take: Take, context: MappedContext
) -> WriteRefused | TransactionConflict | None:
    """A batch's take, retried in place while throttled until the deadline; a conflict is returned,
    not retried: another container's take holds the same row items, so the requests are placed
    again away from its slice (`_settle_together`)."""
    throttled = 0
    while True:
        try:
            return store.take(take)
        except TransactionConflict as exc:
            return exc
        except Throttled:
            throttled += 1
            if not context.deadline.back_off(context.clock, throttled):
                raise


def _commit(store: InventoryStore, take: Take, context: MappedContext) -> WriteRefused | None:
    """The take, retried in place on a conflict or throttling until the deadline."""
    conflicts = 0
    while True:
        try:
            return store.take(take)
        except (TransactionConflict, Throttled):
            conflicts += 1
            if not context.deadline.back_off(context.clock, conflicts):
                raise


def _mark_taken(maps: SeatMaps, key: SeatKey, part: ClassTake, answer: ReservationOutcome) -> None:
    """The view learns the seats it just took (so the next request in the batch does not try them)."""
    state = SeatState.HELD if answer.outcome is Outcome.HELD else SeatState.SOLD
    view = maps.views.setdefault(key, {})
    for row_id, positions in part.rows.items():
        row = view.get(row_id)
        if row is not None:
            states = dict(row.states)
            states.update(dict.fromkeys(positions, state))
            view[row_id] = dataclasses.replace(row, states=states, available=row.available - len(positions))


def _taken_answer(request: ReservationRequest, seats: tuple[str, ...], now: float) -> ReservationOutcome:
    names = ", ".join(seats)
    if not request.is_hold:
        return _answer(request, Outcome.CONFIRMED, f"{request.quantity} seat(s) confirmed: {names}", seats)
    expires_at = int(now) + (request.hold_seconds or 0)
    reason = f"{request.quantity} seat(s) held until {iso_utc(expires_at)}: {names}"
    return _answer(request, Outcome.HELD, reason, seats, hold_expires_at=expires_at)


def _answer(
    request: ReservationRequest,
    outcome: Outcome,
    reason: str,
    seats: tuple[str, ...] | None,
    *,
    remaining: int | None = None,
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
        seats=seats,
    )


def _refused(
    request: ReservationRequest,
    refusal: Refusal,
    rows: dict[str, SeatRow],
    context: MappedContext,
    now: float,
) -> ReservationOutcome:
    """The answer to a request no placement fits: INVALID (not recorded: the map decides it the
    same way every time), or a recorded rejection."""
    if refusal.why in (Refused.NOT_IN_CLASS, Refused.NOT_ACCESSIBLE):
        return _answer(request, Outcome.INVALID, refusal.reason, refusal.seats)
    if refusal.why is Refused.SEATS_TAKEN:
        return _reject(request, Outcome.SEATS_TAKEN, refusal.reason, refusal.seats, context, now)
    if refusal.why is Refused.ORPHAN_SEAT:
        return _reject(request, Outcome.ORPHAN_SEAT, refusal.reason, refusal.seats, context, now)
    left = sum(row.available for row in rows.values())
    together = "" if request.split else " together"
    reason = f"requested {request.quantity} seat(s){together}; no placement fits ({left} left)"
    return _reject(request, Outcome.SOLD_OUT, reason, None, context, now, remaining=left)


def _reject(
    request: ReservationRequest,
    outcome: Outcome,
    reason: str,
    seats: tuple[str, ...] | None,
    context: MappedContext,
    now: float,
    *,
    remaining: int | None = None,
) -> ReservationOutcome:
    """A rejection, recorded exactly once (a record that exists is the answer given before)."""
    answer = _answer(request, outcome, reason, seats, remaining=remaining)
    expires_at = int(now) + context.rejection_ttl_seconds
    refused = context.store.record_rejections([answer], expires_at=expires_at)
    if refused is None:
        return answer
    if request.reservation_id in refused.already_recorded:
        return refused.already_recorded[request.reservation_id].as_duplicate(request.message_id)
    if request.reservation_id in refused.written:
        return answer
    raise RetryableError(f"the record of {request.reservation_id!r} was not written")
