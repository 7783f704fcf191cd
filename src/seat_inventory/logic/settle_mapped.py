"""Reserve and hold on a mapped seat class (docs/guides/seat-maps.md).

Each request is placed on the container's view of the class's row items (`mapped_placement`;
best available in the container's slice of the rows, `seat_slices`), judged by the rule book and
taken by a transaction: an update per row item guarded on exactly the seats taken being free (and
the sale open, the limit, pools and admission rule the ones assumed), the record (guarded: it
must not exist, so a redelivery takes nothing), the customer's counter, the token's use and the
class's pools. A batch's best-available requests of one kind (reserves, or holds) in a class
without a limit, pools or admission are taken together: placed one after the other in one slice,
read and claimed just before (`_claim`), their row updates merged per row item and their records
in one transaction of at most 100 actions (`_TakeTogether`); the others one transaction per
request (`_TakeOne`). The view may be stale: a refused row comes back as it is, the view learns
it, and the request is placed again. Both run the planners' one round loop (`logic.rounds`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from seat_inventory.logic import answers
from seat_inventory.logic.admission_tokens import use_expires_at
from seat_inventory.logic.mapped_placement import fill, place
from seat_inventory.logic.ports import InventoryStore
from seat_inventory.logic.rounds import run_rounds
from seat_inventory.logic.rules import ClassFacts, Judgement, LineAsk, admission_refusal, judge, placement
from seat_inventory.logic.seat_map import ClassMap
from seat_inventory.logic.seat_placement import Refusal, Refused
from seat_inventory.logic.seat_views import (
    CLAIM_SECONDS,
    MappedContext,
    MappedRules,
    SeatMaps,
)
from seat_inventory.models import (
    ClassRules,
    ClassTake,
    Outcome,
    PoolInventory,
    ReservationOutcome,
    ReservationRequest,
    RetryableError,
    SeatKey,
    SeatRow,
    SeatState,
    StoreInconsistency,
    Take,
    Throttled,
    TokenUse,
    TransactionConflict,
    WriteRefused,
    row_item_of,
    seats_by_row,
)

# Placements refused by stale rows before a request settled alone is handed back (each refusal
# refreshes the rows it touched, so this is rare); requests taken together are placed again past
# it, with a back-off between tries, until the deadline (`_TakeTogether`).
MAX_PLACEMENTS = 8
# A slice read showing seats taken that the view did not show means the view is behind the sale:
# it is read again once older than this.
BEHIND_VIEW_SECONDS = 0.25


def settle_mapped(
    key: SeatKey,
    class_map: ClassMap,
    requests: Sequence[ReservationRequest],
    *,
    context: MappedContext,
) -> tuple[dict[str, ReservationOutcome], dict[str, str]]:
    """Answers each request (by reservation id); returns the answers and the message ids to hand
    back (a transient fault or persistent contention) with why."""
    settled: dict[str, ReservationOutcome] = {}
    failed: dict[str, str] = {}
    for group, together in _runs(requests):
        alone = group
        if together:
            planner = _TakeTogether(key, class_map, group, context)
            run_rounds(planner, bound=None, exhausted=lambda: AssertionError("no bound"))  # type: ignore[misc]
            settled.update(planner.answers)
            failed.update(planner.failed)
            alone = planner.alone
        for request in alone:
            try:
                settled[request.reservation_id] = _settle_one(key, class_map, request, context)
            except RetryableError as exc:
                failed[request.message_id] = f"{key.event_id} {key.seat_class}: {type(exc).__name__}: {exc}"
    return settled, failed


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


# ---------------------------------------------------------------------------- one request alone


def _settle_one(
    key: SeatKey, class_map: ClassMap, request: ReservationRequest, context: MappedContext
) -> ReservationOutcome:
    planner = _TakeOne(key, class_map, request, context)
    run_rounds(
        planner,
        bound=MAX_PLACEMENTS,
        exhausted=lambda: TransactionConflict(
            f"{key}: {MAX_PLACEMENTS} placements in a row refused by seats taken meanwhile"
        ),
    )
    assert planner.answer is not None
    return planner.answer


@dataclass(frozen=True, slots=True)
class _OneAttempt:
    take: Take
    part: ClassTake
    answer: ReservationOutcome


class _TakeOne:
    """One mapped request's settlement (a `logic.rounds.Planner`): judged and placed on the view,
    then taken; a refused row is learned and the request placed again, a refusal by a token, a
    pool or the customer's counter answered."""

    def __init__(
        self, key: SeatKey, class_map: ClassMap, request: ReservationRequest, context: MappedContext
    ) -> None:
        self.key, self.class_map, self.request, self.context = key, class_map, request, context
        self.now = context.clock.now()
        self.rows = self._first_view()
        self.limit = next((row.max_per_customer for row in self.rows.values()), None)
        self.rules = MappedRules.of(self.rows)  # its pools and admission rule
        self.moves: Mapping[str, Mapping[int, int]] = {}
        self.answer: ReservationOutcome | None = None

    def _first_view(self) -> dict[str, SeatRow]:
        store, maps, key = self.context.store, self.context.maps, self.key
        if self.request.seats is not None:
            # Chosen seats: their rows read consistently (the orphan rule looks at their neighbours).
            wanted = [row_item_of(s)[0] for s in self.request.seats if s in self.class_map.seats]
            maps.learn(key, store.read_seat_rows(key, wanted))
            return maps.views[key]
        return maps.view(store, key, self.now)

    def pending(self) -> bool:
        return self.answer is None

    def plan(self) -> _OneAttempt | bool:
        request, rules = self.request, self.rules
        refusal = (
            admission_refusal(request.admission, request.reservation_id) if rules.admission_required else None
        )
        facts = ClassFacts(limit=self.limit, admission_required=rules.admission_required)
        judgement = judge(LineAsk(request.quantity, None, refusal), facts)
        if not judgement.takes:
            self._reject(judgement)
            return True
        found = place(self.key, self.class_map, request, self.rows, self.context)
        if isinstance(found, Refusal):
            left = sum(row.available for row in self.rows.values())
            self._reject(placement(found, request.quantity, left, split=request.split))
            return True
        answer = answers.taken(request, int(self.now), seats=found.seats)
        part = ClassTake(
            self.key,
            [answer],
            seats=request.quantity,
            held=request.quantity if request.is_hold else 0,
            rules=ClassRules(self.limit, rules.admission_required, rules.pools),
            counters={request.customer_id: request.quantity},
            rows=seats_by_row(found.seats),
            pool_moves=self.moves,
            token_uses=self._token_uses(),
        )
        take = Take([part], int(self.now) + self.context.rejection_ttl_seconds, now=int(self.now))
        return _OneAttempt(take, part, answer)

    def _token_uses(self) -> tuple[TokenUse, ...]:
        check = self.request.admission
        if not self.rules.admission_required or check is None or check.token_id is None:
            return ()
        return (TokenUse(check.token_id, self.request.reservation_id, use_expires_at(check)),)

    def write(self, attempt: _OneAttempt) -> WriteRefused | None:
        return _commit(self.context.store, attempt.take, self.context)

    def contended(self, attempt: _OneAttempt, exc: TransactionConflict | Throttled) -> None:
        raise exc  # `_commit` waited for a turn until the deadline already

    def committed(self, attempt: _OneAttempt) -> None:
        _mark_taken(self.context.maps, self.key, attempt.part, attempt.answer)
        self.answer = attempt.answer

    def learn(self, attempt: _OneAttempt, refused: WriteRefused) -> bool:
        request = self.request
        if refused.already_recorded:
            self.answer = refused.already_recorded[request.reservation_id].as_duplicate(request.message_id)
        elif refused.rows:
            self._learn_rows(refused.rows)
        elif refused.tokens_used and (replayed := self._replayed(refused.tokens_used)) is not None:
            self._reject(replayed)
        elif refused.pools_refused:
            judgement, self.moves = _pools_judgement(
                self.context.store, self.key, request.quantity, refused.pools_refused
            )
            if not judgement.takes:
                self._reject(judgement)
        elif refused.customer_seats:
            counted = refused.customer_seats[request.customer_id]
            self._reject(judge(LineAsk(request.quantity, counted), ClassFacts(limit=self.limit)))
        else:
            raise RetryableError(f"{self.key}: a take refused without a reason the planner knows")
        return True

    def _learn_rows(self, rows: Mapping[str, SeatRow | None]) -> None:
        """Refused rows, as they are: another container sells here too (the container moves to
        another slice), and may have sold elsewhere (the view is read again soon)."""
        maps, clock = self.context.maps, self.context.clock
        learned = _present_rows(self.key, rows)
        maps.learn(self.key, learned)
        maps.leave(self.key, None, clock.now())
        maps.stale_soon(self.key)
        self.rows = maps.view(self.context.store, self.key, clock.now())
        closed = next((reason for r in learned.values() if (reason := r.sale_closed_reason(self.now))), None)
        if closed:
            self._reject(judge(LineAsk(self.request.quantity), ClassFacts(closed=closed)))
            return
        self.limit = next(iter(learned.values())).max_per_customer
        self.rules = MappedRules.of(learned)

    def _replayed(self, tokens_used: Mapping[str, str]) -> Judgement | None:
        """ADMISSION_REFUSED when another reservation used the request's token first."""
        check = self.request.admission
        holder = tokens_used.get(check.token_id) if check is not None and check.token_id else None
        refusal = admission_refusal(check, self.request.reservation_id, holder)
        if holder is None or refusal is None:
            return None
        return judge(LineAsk(self.request.quantity, admission=refusal), ClassFacts(admission_required=True))

    def _reject(self, judgement: Judgement) -> None:
        """The request's final refusal: recorded (INVALID is not: the map decides it the same way
        every time)."""
        answer = answers.refused(self.request, judgement)
        if judgement.outcome is not Outcome.INVALID:
            answer = _record(self.request, answer, self.context, self.now)
        self.answer = answer


def _pools_judgement(
    store: InventoryStore, key: SeatKey, quantity: int, refused: Mapping[str, PoolInventory | None]
) -> tuple[Judgement, dict[str, dict[int, int]]]:
    """What a pool's refusal of a take means, by the rule book: SALE_CLOSED for a closed pool,
    SOLD_OUT naming the pool only from a whole view of it (a pool of one item as the refusal
    handed it back; a sharded one read whole first: one item never decides a SOLD_OUT,
    docs/guides/pools.md); otherwise the take goes ahead, with the seats to move into item 0 of each
    sharded pool (a mapped class's take writes item 0, as a counted class of one item does)."""
    for name, pool in sorted(refused.items()):
        if pool is None:
            raise StoreInconsistency(f"{key}: capacity pool {name} of its row items does not exist")
        if (closed := pool.closed_reason()) is not None:
            return judge(LineAsk(quantity), ClassFacts(closed=closed)), {}
    views = sorted(_whole_pools(store, key, refused).items())
    facts = ClassFacts(
        closed=next((reason for _, p in views if (reason := p.closed_reason())), None),
        pools_left={name: pool.available for name, pool in views},
    )
    judgement = judge(LineAsk(quantity), facts)
    if not judgement.takes:
        return judgement, {}
    moves = {name: pool.moves_into(0, quantity) for name, pool in views if pool.shards}
    return judgement, {name: m for name, m in moves.items() if m}


def _whole_pools(
    store: InventoryStore, key: SeatKey, refused: Mapping[str, PoolInventory | None]
) -> dict[str, PoolInventory]:
    """The refused pools as a whole: one of one item as handed back, a sharded one read whole."""
    views = {name: pool for name, pool in refused.items() if pool is not None}
    partial = [name for name, pool in sorted(views.items()) if not pool.complete]
    if partial:
        whole = store.read_pools(key.event_id, partial)
        missing = sorted(set(partial) - set(whole))
        if missing:
            raise StoreInconsistency(f"{key}: capacity pool(s) {missing} of its row items do not exist")
        views.update(whole)
    return views


def _present_rows(key: SeatKey, rows: Mapping[str, SeatRow | None]) -> dict[str, SeatRow]:
    missing = [row_id for row_id, row in rows.items() if row is None]
    if missing:
        raise StoreInconsistency(f"{key}: the map's row item(s) {missing} do not exist")
    return {row_id: row for row_id, row in rows.items() if row is not None}


def _record(
    request: ReservationRequest, answer: ReservationOutcome, context: MappedContext, now: float
) -> ReservationOutcome:
    """A rejection, recorded exactly once (a record that exists is the answer given before)."""
    refused = context.store.record_rejections([answer], expires_at=int(now) + context.rejection_ttl_seconds)
    if refused is None:
        return answer
    if request.reservation_id in refused.already_recorded:
        return refused.already_recorded[request.reservation_id].as_duplicate(request.message_id)
    if request.reservation_id in refused.written:
        return answer
    raise RetryableError(f"the record of {request.reservation_id!r} was not written")


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
            states = {**row.states, **dict.fromkeys(positions, state)}
            view[row_id] = dataclasses.replace(row, states=states, available=row.available - len(positions))


# ---------------------------------------------------------------------------- requests together


@dataclass(frozen=True, slots=True)
class _TogetherAttempt:
    take: Take
    part: ClassTake
    outcomes: list[ReservationOutcome]
    home: int | None
    now: float


@dataclass(frozen=True, slots=True)
class _Fault:
    """A take that met a transient fault (its requests are handed back)."""

    error: RetryableError


class _TakeTogether:
    """A batch's best-available requests of one kind taken together (a `logic.rounds.Planner`):
    as many as fit in one transaction, placed in order on the view, in one slice (each seeing the
    seats of those before it; `mapped_placement.fill`); a request no block fits on the view (with
    none before it in the transaction) is SOLD_OUT, and so is every other one asking at least as
    many seats. A refused row is learned and the requests placed again; a conflict (another
    container's take holds the rows) is not retried in place: the slice is left (in use for a
    while) and the requests placed again elsewhere; past MAX_PLACEMENTS refusals in a row a
    jittered back-off comes between tries, until the deadline (then they are handed back). A
    record that exists answers its request as a duplicate. `alone` are the requests left to settle
    one by one (a class with a per-customer limit, pools or admission tokens)."""

    def __init__(
        self, key: SeatKey, class_map: ClassMap, requests: list[ReservationRequest], context: MappedContext
    ) -> None:
        self.key, self.class_map, self.context = key, class_map, context
        self.queue = list(requests)
        self.answers: dict[str, ReservationOutcome] = {}
        self.failed: dict[str, str] = {}
        self.alone: list[ReservationRequest] = []
        self.refusals = 0

    def pending(self) -> bool:
        return bool(self.queue)

    def plan(self) -> _TogetherAttempt | bool:
        key, context = self.key, self.context
        now = context.clock.now()
        try:
            rows = _read_view(key, context, now)
        except RetryableError as exc:
            self._fail(self.queue, f"{key.event_id} {key.seat_class}: {type(exc).__name__}: {exc}")
            return False
        if any(_has_rules(row) for row in rows.values()):
            # The counters', pools' and tokens' guards and answers are the one-by-one path's.
            self.alone, self.queue = self.queue, []
            return False
        outcomes, merged, home = fill(key, self.class_map, self.queue, rows, context, now)
        if outcomes and home is not None and not self._may_take_in(home):
            return False
        if not outcomes:
            self._sold_out(rows, now)
            return False
        held = sum(o.quantity or 0 for o in outcomes if o.outcome is Outcome.HELD)
        taken = {row_id: tuple(positions) for row_id, positions in merged.items()}
        part = ClassTake(key, outcomes, seats=sum(o.quantity or 0 for o in outcomes), held=held, rows=taken)
        take = Take([part], int(now) + context.rejection_ttl_seconds, now=int(now))
        return _TogetherAttempt(take, part, outcomes, home, now)

    def _may_take_in(self, home: int) -> bool:
        """Before a take in a slice this container holds no claim on: the slice read, unless read
        just now (changed: the requests are placed again, on the slice as it is now), and claimed
        (another container claimed it: they are placed again elsewhere)."""
        key, context, maps = self.key, self.context, self.context.maps
        if maps.holds(key, home, context.clock.now()):
            return True
        if not maps.read_lately(key, home, context.clock.now()) and _read_slice(
            key, self.class_map, home, context
        ):
            return False
        return _claim(key, home, context)

    def _sold_out(self, rows: dict[str, SeatRow], now: float) -> None:
        """No block fits the first request on the view: it is SOLD_OUT, and so is every other one
        asking at least as many seats (this container remembers none fits)."""
        first = self.queue[0].quantity
        self.context.maps.no_fit[self.key] = first
        sold_out = [r for r in self.queue if r.quantity >= first]
        try:
            done, not_written = _sold_out_together(sold_out, rows, self.context, now)
        except RetryableError as exc:  # no record written (one being written by a duplicate): retried
            self._fail(sold_out, f"{self.key.event_id} {self.key.seat_class}: {type(exc).__name__}: {exc}")
            return
        self.answers.update(done)
        self.failed.update(not_written)
        self.queue = [r for r in self.queue if r.quantity < first]

    def write(self, attempt: _TogetherAttempt) -> WriteRefused | TransactionConflict | _Fault | None:
        try:
            return _take(self.context.store, attempt.take, self.context)
        except RetryableError as exc:
            return _Fault(exc)

    def contended(self, attempt: _TogetherAttempt, exc: TransactionConflict | Throttled) -> None:
        raise exc  # `_take` returns a conflict and waits throttling out itself

    def committed(self, attempt: _TogetherAttempt) -> None:
        _mark_taken(self.context.maps, self.key, attempt.part, attempt.outcomes[0])
        self.answers.update((o.reservation_id, o) for o in attempt.outcomes)
        taking = {o.reservation_id for o in attempt.outcomes}
        self.queue = [r for r in self.queue if r.reservation_id not in taking]
        self.refusals = 0

    def learn(self, attempt: _TogetherAttempt, refused: WriteRefused | TransactionConflict | _Fault) -> bool:
        key, context = self.key, self.context
        taking = {o.reservation_id for o in attempt.outcomes}
        if isinstance(refused, _Fault):
            error = refused.error
            self._fail(
                [r for r in self.queue if r.reservation_id in taking],
                f"{key.event_id} {key.seat_class}: {type(error).__name__}: {error}",
            )
            return False
        self.refusals += 1
        context.maps.claimed.pop(key, None)  # a slice refusing a take is read again before a take there
        if isinstance(refused, TransactionConflict):
            context.maps.leave(key, attempt.home, context.clock.now())  # another container's take is there
        else:
            self.queue = _learn_refusal(key, refused, self.queue, self.answers, context, attempt.now)
        if (
            self.queue
            and self.refusals > MAX_PLACEMENTS
            and not context.deadline.back_off(context.clock, self.refusals - MAX_PLACEMENTS)
        ):
            self._fail(
                self.queue,
                f"{key.event_id} {key.seat_class}: {self.refusals} takes refused in a row until the deadline",
            )
        return False

    def _fail(self, requests: Sequence[ReservationRequest], reason: str) -> None:
        """Hands the requests back (their messages are retried) with why."""
        self.failed.update((r.message_id, reason) for r in requests)
        failed = {r.reservation_id for r in requests}
        self.queue = [r for r in self.queue if r.reservation_id not in failed]


def _has_rules(row: SeatRow) -> bool:
    """Whether the class has a per-customer limit, pools or an admission rule."""
    return row.max_per_customer is not None or bool(row.pools) or row.admission_required


def _learn_refusal(
    key: SeatKey,
    refused: WriteRefused,
    pending: list[ReservationRequest],
    settled: dict[str, ReservationOutcome],
    context: MappedContext,
    now: float,
) -> list[ReservationRequest]:
    """What a refused take taught: duplicates answered, rows learned (the container moves to
    another slice), a closed sale answered SALE_CLOSED. Returns the requests still to place."""
    for request in pending:
        if request.reservation_id in refused.already_recorded:
            recorded = refused.already_recorded[request.reservation_id]
            settled[request.reservation_id] = recorded.as_duplicate(request.message_id)
    pending = [r for r in pending if r.reservation_id not in settled]
    if not refused.rows:
        if not refused.already_recorded:
            raise RetryableError(f"{key}: a take refused without a reason the planner knows")
        return pending
    learned = _present_rows(key, refused.rows)
    context.maps.learn(key, learned)
    context.maps.leave(key, None, context.clock.now())
    context.maps.stale_soon(key)
    closed = next((reason for r in learned.values() if (reason := r.sale_closed_reason(now))), None)
    if not closed:
        return pending
    for request in pending:
        judgement = judge(LineAsk(request.quantity), ClassFacts(closed=closed))
        settled[request.reservation_id] = _record(request, answers.refused(request, judgement), context, now)
    return []


def _sold_out_together(
    requests: list[ReservationRequest], rows: dict[str, SeatRow], context: MappedContext, now: float
) -> tuple[dict[str, ReservationOutcome], dict[str, str]]:
    """SOLD_OUT for requests no block fits, their records written as the counted path writes
    rejections (each its own conditional write); a record that exists is the answer given before."""
    left = sum(row.available for row in rows.values())
    refusals = {
        r.reservation_id: answers.refused(r, placement(Refusal(Refused.NO_BLOCK), r.quantity, left))
        for r in requests
    }
    expires_at = int(now) + context.rejection_ttl_seconds
    refused = context.store.record_rejections(list(refusals.values()), expires_at=expires_at)
    if refused is None:
        return refusals, {}
    done: dict[str, ReservationOutcome] = {}
    failed: dict[str, str] = {}
    for request in requests:
        rid = request.reservation_id
        if rid in refused.already_recorded:
            done[rid] = refused.already_recorded[rid].as_duplicate(request.message_id)
        elif rid in refused.written:
            done[rid] = refusals[rid]
        else:
            failed[request.message_id] = f"the record of {rid!r} was not written"
    return done, failed


def _take(
    store: InventoryStore, take: Take, context: MappedContext
) -> WriteRefused | TransactionConflict | None:
    """A batch's take, retried in place while throttled until the deadline; a conflict is returned,
    not retried: another container's take holds the same row items, so the requests are placed
    again away from its slice (`_TakeTogether`)."""
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
