"""Settles one multi-line order (docs/guides/orders.md): every line taken in ONE transaction, or none.

An order names 1-4 lines of distinct seat classes of one event. Its write is one `Take` of a
part per line (that line's shard item and moves into it, or its row items; the customer's counter
of that class), which the store commits atomically together with the pools the lines share (each
taken once, guarded on the seats of all its lines), the admission token and the order's one
record. The order gets one answer: every line (CONFIRMED or HELD), or the first failing line's
refusal, its reason prefixed with the line (`line 2 (CHILD): requested 3 seat(s), 1 left`).

Like a group (`settle_group`), each round (`logic.rounds`) judges every line by the rule book
from what is known (the hints' view of each class, reads, what refused writes handed back),
routes the lines (`logic.order_routing`), writes, and learns from a refusal; a rejection is
decided only on a class read in this settlement or handed back by a refusal, never on a hint.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from seat_inventory.logic import answers
from seat_inventory.logic.admission_tokens import use_expires_at
from seat_inventory.logic.inventory_hints import InventoryHints
from seat_inventory.logic.limits import MAX_ACTIONS_PER_TRANSACTION, MAX_SETTLE_ROUNDS
from seat_inventory.logic.order_routing import LineRoute, OrderRouter, pools_taken
from seat_inventory.logic.ports import Clock, InventoryStore
from seat_inventory.logic.retry_deadline import ConflictDeadline
from seat_inventory.logic.rounds import run_rounds, wait_or_raise
from seat_inventory.logic.rules import ClassFacts, Judgement, LineAsk, admission_refusal, judge, placement
from seat_inventory.logic.seat_map import ClassMap
from seat_inventory.logic.seat_placement import Placement, place_best, place_chosen
from seat_inventory.logic.seat_views import MappedRules, taken_seats
from seat_inventory.logic.write_window import back_off_step
from seat_inventory.models import (
    ClassRules,
    ClassTake,
    OrderLine,
    Outcome,
    PoolInventory,
    ReservationOutcome,
    ReservationRequest,
    RetryableError,
    SeatClassInventory,
    SeatKey,
    SeatRow,
    StoreInconsistency,
    Take,
    Throttled,
    TokenUse,
    TransactionConflict,
    WriteRefused,
    pool_ref,
    row_item_of,
    seats_by_row,
)
from seat_inventory.transaction import take_actions


@dataclass(frozen=True, slots=True)
class OrderContext:
    """What settling an order needs: the store, the clock, the container's hints, the rejection
    records' TTL and the deadline for waiting out conflicts."""

    store: InventoryStore
    clock: Clock
    hints: InventoryHints
    rejection_ttl_seconds: int
    deadline: ConflictDeadline


@dataclass(frozen=True, slots=True)
class _OrderAttempt:
    takes: list[LineRoute]
    take: Take


def settle_order(request: ReservationRequest, context: OrderContext) -> ReservationOutcome:
    """The order's one final answer, recorded (or the answer recorded before, as a duplicate).

    Raises `RetryableError` on a transient fault or when it did not settle within
    `MAX_SETTLE_ROUNDS` (the message is handed back and retried; nothing was taken).
    """
    settlement = OrderSettlement(request, context)
    settlement.start()
    run_rounds(
        settlement,
        bound=MAX_SETTLE_ROUNDS,
        exhausted=lambda: RetryableError(
            f"order {request.reservation_id} did not settle after {MAX_SETTLE_ROUNDS} rounds"
        ),
    )
    assert settlement.answer is not None
    return settlement.answer


class OrderSettlement:
    """One order's settlement in progress (a `logic.rounds.Planner`)."""

    def __init__(self, request: ReservationRequest, context: OrderContext) -> None:
        assert request.lines is not None
        self.request = request
        self.lines: tuple[OrderLine, ...] = request.lines
        self.keys = [SeatKey(request.event_id, line.seat_class) for line in self.lines]
        self.context = context
        self.now = int(context.clock.now())
        # Views verified in this settlement (a read, or a refused write's ALL_OLD of a class of
        # one item): only these decide a rejection. None: no such class.
        self.verified: dict[SeatKey, SeatClassInventory | None] = {}
        self.pools_seen: dict[str, PoolInventory] = {}
        self.counted: dict[SeatKey, int] = {}  # the customer's counter per class, as refusals told
        self.token_holder: str | None = None  # the reservation that used the token first
        self.conflicts = 0
        # Mapped classes' lines (docs/guides/seat-maps.md): the class's map, the view of its rows the line
        # is placed on, and the seats placed.
        self.class_maps: dict[SeatKey, ClassMap] = {}
        self.rows: dict[SeatKey, dict[str, SeatRow]] = {}
        self.placed: dict[SeatKey, tuple[str, ...]] = {}
        self.answer: ReservationOutcome | None = None

    def start(self) -> None:
        """Finds the mapped lines and reads what the hints do not know of each line's class."""
        hints = self.context.hints
        self._find_maps()
        if self.answer is not None:
            return
        for key, line in zip(self.keys, self.lines, strict=True):
            if key in self.class_maps:
                self._read_rows(key, line)
            elif hints.assumed(key) is None:
                # A class never seen: its item alone, or a sharded class's shard 0 (its rules,
                # items and each pool's first item, to route by), as a single line's first group
                # reads it; not every item while others write to them.
                self.read(key, whole=False)
            elif hints.should_read_first(key, line.quantity, self.now):
                self.read(key)

    # ------------------------------------------------------------------ the rounds (`Planner`)

    def pending(self) -> bool:
        return self.answer is None

    def plan(self) -> _OrderAttempt | bool:
        refusal = _OrderLines(self).first_refused()
        if refusal is not None:
            self._reject(*refusal)
            return True
        takes = OrderRouter(self).route()
        if takes is None:
            return True
        return _OrderAttempt(takes, self._take(takes))

    def write(self, attempt: _OrderAttempt) -> WriteRefused | None:
        return self.context.store.take(attempt.take)

    def contended(self, attempt: _OrderAttempt, exc: TransactionConflict | Throttled) -> None:
        hints = self.context.hints
        for key in self.keys:
            hints.leave_shard(key)
        hints.leave_pool_items(self.request.event_id or "", pools_taken(attempt.takes))
        self.conflicts += 1
        message = (
            f"order {self.request.reservation_id}: {self.conflicts} transactions in a row refused by"
            f" conflicts or throttling (last: {exc})"
        )
        wait_or_raise(
            self.context.deadline, self.context.clock, back_off_step(exc, self.conflicts), exc, message
        )

    def committed(self, attempt: _OrderAttempt) -> None:
        """The order committed: the hints learn what each line left, and the answer stands."""
        hints = self.context.hints
        for key, line, take in zip(self.keys, self.lines, attempt.takes, strict=True):
            view = self.view(key)
            if view is not None and view.shard_items > 1:
                own = hints.own_shard(key)
                left = own.left if own is not None and own.shard == take.shard else None
                hints.settle_on(key, take.shard, None if left is None else left - line.quantity)
            elif key in self.verified and view is not None:
                hints.learn(key, view.seats_to_sell - line.quantity)
        for key, take in zip(self.keys, attempt.takes, strict=True):
            if key not in self.class_maps:  # a counted line: on the order's item of each pool
                for pool, item in take.pool_shards.items():
                    hints.settle_on_pool_item(self.request.event_id or "", pool, item)
        self.answer = attempt.take.parts[0].outcomes[0]

    def learn(self, attempt: _OrderAttempt, refused: WriteRefused) -> bool:
        """Takes in what a refused write handed back: the classes, counters, token and pools."""
        stored = refused.already_recorded.get(self.request.reservation_id)
        if stored is not None:
            self.answer = stored.as_duplicate(self.request.message_id)
            return True
        if refused.tokens_used:
            self.token_holder = next(iter(refused.tokens_used.values()))
        for pool, item in refused.pools_refused.items():
            if item is None:
                raise StoreInconsistency(f"capacity pool {pool} of {self.request.event_id} does not exist")
            self.pools_seen[pool] = item
        for key, part in zip(self.keys, refused.parts, strict=False):
            if part is not None:
                self._learn_part(key, part)
        for pool in refused.pools_refused:
            if not self.pools_seen[pool].complete:
                # One item of a sharded pool refused: a view of that item alone. The pool is read
                # whole (with a class of the order in it) before anything is decided on it.
                self._read_pool_whole(pool)
        if not (refused.tokens_used or refused.pools_refused or any(p is not None for p in refused.parts)):
            raise RetryableError(
                f"order {self.request.reservation_id} refused without a reason the planner knows"
            )
        return True

    def _learn_part(self, key: SeatKey, part: WriteRefused) -> None:
        """A line's part of a refusal: the customer's counter, a mapped line's rows, the class."""
        if part.customer_seats:
            self.counted[key] = max(part.customer_seats.values())
        if part.rows:
            missing = [row_id for row_id, row in part.rows.items() if row is None]
            if missing:
                raise StoreInconsistency(f"{key}: the map's row item(s) {missing} do not exist")
            learned = {row_id: row for row_id, row in part.rows.items() if row is not None}
            self.context.hints.seat_maps.learn(key, learned)
            self.rows[key].update(learned)
        elif part.inventory_refused:
            self.context.hints.leave_shard(key)
            seen = part.inventory
            if seen is not None and seen.complete:
                self.verified[key] = seen
                self.context.hints.observe(key, seen)
            else:
                self.read(key)

    def class_rules(self, key: SeatKey, view: SeatClassInventory | None) -> ClassRules:
        """A line's class's rules: a mapped class's as its rows carry them, a counted class's as
        its view shows them."""
        if key in self.class_maps:
            rows = self.rows[key]
            rules = MappedRules.of(rows)
            limit = next((row.max_per_customer for row in rows.values()), None)
            return ClassRules(limit, rules.admission_required, rules.pools)
        if view is None:
            return ClassRules()
        return ClassRules(view.max_per_customer, view.admission_required, view.pools)

    # ------------------------------------------------------------------ writing and answering

    def _take(self, takes: Sequence[LineRoute]) -> Take:
        """A part per line, the order's record (its lines and where they take from) on the first,
        and its token use on the first part whose class requires one."""
        views = [self.view(key) for key in self.keys]
        rules = [self.class_rules(key, view) for key, view in zip(self.keys, views, strict=True)]
        lines = tuple(
            _taken_line(self.placed.get(key), line, take, rule)
            for key, line, take, rule in zip(self.keys, self.lines, takes, rules, strict=True)
        )
        answer = answers.taken(self.request, self.now, lines=lines)
        check = self.request.admission
        needs = [rule.admission_required for rule in rules]
        spender = needs.index(True) if any(needs) and check is not None else -1
        uses: list[TokenUse] = []
        if spender >= 0 and check is not None and check.token_id is not None:
            uses.append(TokenUse(check.token_id, self.request.reservation_id, use_expires_at(check)))
        taken_at = self.context.clock.now()
        parts = [
            _part(
                self.request,
                self.placed.get(key),
                index,
                key,
                line,
                take,
                rule,
                answer,
                uses if index == spender else [],
                taken_at,
            )
            for index, (key, line, take, rule) in enumerate(
                zip(self.keys, self.lines, takes, rules, strict=True)
            )
        ]
        order = Take(parts, self.now + self.context.rejection_ttl_seconds, now=self.now)
        actions = len(take_actions(order))
        if actions > MAX_ACTIONS_PER_TRANSACTION:
            raise RetryableError(
                f"order {self.request.reservation_id} needs {actions} actions in one transaction"
            )
        return order

    def _reject(self, index: int, judgement: Judgement) -> None:
        """Records the order's refusal (its failing line named), or takes the answer recorded
        before (a redelivery); INVALID is decided by the map, the same way every time: not
        recorded."""
        answer = answers.line_refused(self.request, index, judgement)
        if judgement.outcome is Outcome.INVALID:
            self.answer = answer
            return
        context = self.context
        expires_at = self.now + context.rejection_ttl_seconds
        refused = context.deadline.patiently(
            context.clock,
            lambda: context.store.record_rejections([answer], expires_at=expires_at),
            "recording the order's refusal",
        )
        stored = refused.already_recorded.get(answer.reservation_id) if refused is not None else None
        self.answer = stored.as_duplicate(self.request.message_id) if stored is not None else answer

    # ------------------------------------------------------------------ reading

    def _find_maps(self) -> None:
        """Finds the lines of mapped classes (their maps); INVALID (not recorded, as for a single
        request) when a line chooses seats of a counted class."""
        context = self.context
        for index, (key, line) in enumerate(zip(self.keys, self.lines, strict=True)):
            if context.hints.assumed(key) is None:  # seen as counted: a counted class stays counted
                class_map = context.deadline.patiently(
                    context.clock,
                    lambda key=key: context.hints.seat_maps.class_map(context.store, key),  # type: ignore[misc]
                    "reading the seat map",
                )
                if class_map is not None:
                    self.class_maps[key] = class_map
                    continue
            if line.seats is not None:
                judgement = Judgement(Outcome.INVALID, "not a mapped seat class; seats do not apply")
                self.answer = answers.line_refused(self.request, index, judgement)
                return

    def _read_rows(self, key: SeatKey, line: OrderLine) -> None:
        """A mapped line's view: its chosen seats' row items read consistently, or the class's
        view for best available (`SeatMaps.view`, as a single best-available request)."""
        context, maps = self.context, self.context.hints.seat_maps
        if line.seats is not None:
            class_map = self.class_maps[key]
            wanted = sorted({row_item_of(seat)[0] for seat in line.seats if seat in class_map.seats})
            rows = context.deadline.patiently(
                context.clock, lambda: context.store.read_seat_rows(key, wanted), f"reading rows of {key}"
            )
            maps.learn(key, rows)
            self.rows[key] = dict(rows)
        else:
            now = context.clock.now()
            view = context.deadline.patiently(
                context.clock, lambda: maps.view(context.store, key, now), f"reading rows of {key}"
            )
            self.rows[key] = dict(view)

    def view(self, key: SeatKey) -> SeatClassInventory | None:
        """The class as best known: verified in this settlement, else the container's hint."""
        if key in self.verified:
            return self.verified[key]
        return self.context.hints.assumed(key)

    def read(self, key: SeatKey, *, whole: bool = True) -> SeatClassInventory | None:
        """A consistent read of the whole class (and its pools), waited out on conflicts; with
        `whole` False, a sharded class's shard 0 alone, which the hints take in: a view to route
        by that decides nothing (a refusal on it reads the class whole first)."""
        context = self.context
        view = context.deadline.patiently(
            context.clock,
            lambda: context.store.read_inventory(key, whole=whole),
            f"reading {key.event_id} {key.seat_class}",
        )
        if view is not None and not view.complete:
            context.hints.learn_item(key, view)
            return view
        self.verified[key] = view
        context.hints.observe(key, view)
        for pool in (view.pool_items or ()) if view is not None else ():
            self.pools_seen[pool.pool] = pool
        return view

    def _read_pool_whole(self, pool: str) -> None:
        """Reads whole the first counted line's class that takes from `pool`, and with it the pool
        (`InventoryStore.read_inventory` reads each sharded pool of a class read whole)."""
        for key in self.keys:
            view = self.view(key)
            if key not in self.class_maps and view is not None and pool in view.pools:
                self.read(key)
                return
        # Only mapped lines take from it (no class item to bring it along): the pool alone.
        context = self.context
        found = context.deadline.patiently(
            context.clock,
            lambda: context.store.read_pools(self.request.event_id or "", [pool]),
            f"reading pool {pool}",
        )
        if pool not in found:
            raise StoreInconsistency(f"capacity pool {pool} of {self.request.event_id} does not exist")
        self.pools_seen[pool] = found[pool]


class _OrderLines:
    """Judges an order's lines by the rule book from what its settlement knows, and places its
    mapped lines on their views."""

    def __init__(self, settlement: OrderSettlement) -> None:
        self.s = settlement

    def first_refused(self) -> tuple[int, Judgement] | None:
        """The first line that cannot be taken (its index and judgement), judged on verified views
        only (a line refused on a hint is read first, then judged again); None when every line
        looks takeable. `wanted`: the seats earlier lines take from each pool. A line refused for
        a pool after earlier lines passed on hints reads their classes first and judges again, so
        the refusal names the first line that cannot be taken, not the line the pool ran short
        at."""
        wanted: dict[str, int] = {}
        for index, (key, line) in enumerate(zip(self.s.keys, self.s.lines, strict=True)):
            judgement = self._judge(key, line, wanted)
            if not judgement.takes and not self._verified(key):
                self.s.read(key)
                judgement = self._judge(key, line, dict(wanted))
            if not judgement.takes:
                on_hints = [k for k in self.s.keys[:index] if not self._verified(k)]
                if judgement.pool is None or not on_hints:
                    return index, judgement
                for earlier in on_hints:
                    self.s.read(earlier)
                return self.first_refused()
            for pool in self.s.class_rules(key, self.s.view(key)).pools:
                wanted[pool] = wanted.get(pool, 0) + line.quantity
        return None

    def _verified(self, key: SeatKey) -> bool:
        """Whether a line's class is known from this settlement (a read, its rows), not a hint."""
        return key in self.s.class_maps or key in self.s.verified

    def _judge(self, key: SeatKey, line: OrderLine, wanted: Mapping[str, int]) -> Judgement:
        """A line by the rule book: a counted class's view, or a mapped class's rows (then placed
        on them: `_place`); the pools seen whole, less what earlier lines take from them."""
        mapped = key in self.s.class_maps
        view = None if mapped else self.s.view(key)
        if not mapped and view is None:
            return judge(LineAsk(line.quantity), ClassFacts(missing=True))
        rules = self.s.class_rules(key, view)
        admission = self._admission() if rules.admission_required else None
        ask = LineAsk(line.quantity, self.s.counted.get(key, 0), admission)
        judgement = judge(ask, self._facts(key, view, rules, wanted))
        return self._place(key, line) if judgement.takes and mapped else judgement

    def _facts(
        self, key: SeatKey, view: SeatClassInventory | None, rules: ClassRules, wanted: Mapping[str, int]
    ) -> ClassFacts:
        """What the settlement observed of a line's class (its view, or a mapped class's rows)
        and of its pools seen whole, less what the lines before take from them."""
        pools = {pool: seen for pool in rules.pools if (seen := self._whole_pool(pool)) is not None}
        closed = self._rows_closed(key) if view is None else view.sale_closed_reason(self.s.now)
        pool_closed = next((r for p in pools.values() if (r := p.closed_reason()) is not None), None)
        return ClassFacts(
            closed=closed or pool_closed,
            limit=rules.max_per_customer,
            admission_required=rules.admission_required,
            seats_left=view.available if view is not None and view.complete else None,
            pools_left={pool: seen.available - wanted.get(pool, 0) for pool, seen in pools.items()},
        )

    def _rows_closed(self, key: SeatKey) -> str | None:
        return next(
            (r for row in self.s.rows[key].values() if (r := row.sale_closed_reason(self.s.now))), None
        )

    def _place(self, key: SeatKey, line: OrderLine) -> Judgement:
        """A mapped line's seats on its view: chosen ones as asked, or the best block; what no
        placement fits is judged as a single mapped request's is."""
        class_map, rows = self.s.class_maps[key], self.s.rows[key]
        taken = taken_seats(dict(rows))
        if line.seats is not None:
            found = place_chosen(class_map, taken, line.seats)
        else:
            found = place_best(class_map, taken, line.quantity)
        if isinstance(found, Placement):
            self.s.placed[key] = found.seats
            return judge(LineAsk(line.quantity), ClassFacts())
        return placement(found, line.quantity, sum(row.available for row in rows.values()))

    def _whole_pool(self, pool: str) -> PoolInventory | None:
        """The pool as seen in this settlement, if the view is the whole pool's (one item, or every
        item read at once): one item of a sharded pool never decides a refusal (docs/guides/pools.md)."""
        seen = self.s.pools_seen.get(pool)
        return seen if seen is not None and seen.complete else None

    def _admission(self) -> str | None:
        return admission_refusal(self.s.request.admission, self.s.request.reservation_id, self.s.token_holder)


def _part(
    request: ReservationRequest,
    placed: tuple[str, ...] | None,
    index: int,
    key: SeatKey,
    line: OrderLine,
    take: LineRoute,
    rules: ClassRules,
    answer: ReservationOutcome,
    token_uses: list[TokenUse],
    taken_at: float,
) -> ClassTake:
    """A line's part of the take: its seats off its shard item (or its row items) and its
    pool items, the customer's counter of its class; the order's record on the first."""
    mapped = placed is not None
    return ClassTake(
        key,
        [answer] if index == 0 else [],
        seats=line.quantity,
        held=line.quantity if request.is_hold else 0,
        rules=rules,
        counters={request.customer_id: line.quantity},
        shard=take.shard,
        moves=take.moves,
        rows=seats_by_row(placed) if placed is not None else {},
        pool_shards=take.pool_shards,
        pool_moves=take.pool_moves,
        token_uses=token_uses,
        taken_at=None if mapped else taken_at,
    )


def _taken_line(
    placed: tuple[str, ...] | None, line: OrderLine, take: LineRoute, rules: ClassRules
) -> OrderLine:
    """A line as its record keeps it: where its seats come from, to go back there."""
    pools = tuple(sorted(pool_ref(p, take.pool_shards.get(p, 0)) for p in rules.pools))
    counted = rules.max_per_customer is not None
    if placed is not None:
        return dataclasses.replace(line, seats=placed, pools=pools, customer_counted=counted)
    return dataclasses.replace(line, shard=take.shard, pools=pools, customer_counted=counted)
