"""Settles one multi-line order (docs/guides/orders.md): every line taken in ONE transaction, or none.

An order names 1-4 lines of distinct seat classes of one event. Its write is one `Take` of a
part per line (that line's shard item and moves into it, or its row items; the customer's counter
of that class), which the store commits atomically together with the pools the lines share (each
taken once, guarded on the seats of all its lines), the admission token and the order's one
record. The order gets one answer: every line (CONFIRMED or HELD), or the first failing line's
refusal, its reason prefixed with the line (`line 2 (CHILD): requested 3 seat(s), 1 left`).

Like `settle_group`, each round plans from what is known (the hints' view of each class, reads,
what refused writes handed back), writes, and learns from a refusal; a rejection is decided
only on a class read in this settlement or handed back by a refusal, never on a hint. Single-line
messages never come here: their path is unchanged.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from seat_inventory.logic.admission_tokens import replay_refusal, use_expires_at
from seat_inventory.logic.inventory_hints import InventoryHints
from seat_inventory.logic.limits import MAX_ACTIONS_PER_TRANSACTION, MAX_SETTLE_ROUNDS
from seat_inventory.logic.mapped_rules import MappedRules
from seat_inventory.logic.order_mapped import LineRefusal, chosen_rows, place_line, row_limit
from seat_inventory.logic.ports import Clock, InventoryStore
from seat_inventory.logic.retry_deadline import ConflictDeadline
from seat_inventory.logic.seat_map import ClassMap
from seat_inventory.logic.shards import pick_shard, route
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
    iso_utc,
    pool_ref,
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
class _Refusal:
    """Why the order is refused: the line (index) that fails, the answer and its reason."""

    line: int
    outcome: Outcome
    reason: str
    remaining: int | None = None
    seats: tuple[str, ...] | None = None  # a mapped line's seats not free, or stranded


@dataclass(frozen=True, slots=True)
class _LineTake:
    """Where one line takes its seats: shard item `shard`, after `moves` from other items; and
    off each sharded pool of its class, item `pool_shards[pool]` (class shard mod K), after
    `pool_moves[pool]` (donor item -> seats) moved into it (docs/guides/pools.md)."""

    shard: int
    moves: dict[int, int] = field(default_factory=dict)
    pool_shards: dict[str, int] = field(default_factory=dict)
    pool_moves: dict[str, dict[int, int]] = field(default_factory=dict)


def settle_order(request: ReservationRequest, context: OrderContext) -> ReservationOutcome:
    """The order's one final answer, recorded (or the answer recorded before, as a duplicate).

    Raises `RetryableError` on a transient fault or when it did not settle within
    `MAX_SETTLE_ROUNDS` (the message is handed back and retried; nothing was taken).
    """
    return _OrderSettler(request, context).run()


class _OrderSettler:
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

    # ------------------------------------------------------------------ the rounds

    def run(self) -> ReservationOutcome:
        hints = self.context.hints
        invalid = self._find_maps()
        if invalid is not None:
            return invalid
        for key, line in zip(self.keys, self.lines, strict=True):
            if key in self.class_maps:
                self._read_rows(key, line)
            elif hints.assumed(key) is None:
                # A class never seen: its item alone, or a sharded class's shard 0 (its rules,
                # items and each pool's first item, to route by), as a single line's first group
                # reads it; not every item while others write to them.
                self._read(key, whole=False)
            elif hints.should_read_first(key, line.quantity, self.now):
                self._read(key)
        rounds = 0
        while rounds < MAX_SETTLE_ROUNDS:
            refusal = self._decide()
            if refusal is not None:
                return self._reject(refusal)
            takes = self._route()
            if takes is None:
                rounds += 1
                continue
            takes = self._route_pools(takes)
            try:
                refused = self.context.store.take(self._take(takes))
            except (TransactionConflict, Throttled) as exc:
                for key in self.keys:
                    hints.leave_shard(key)
                hints.leave_pool_items(self.request.event_id or "", self._pools_taken(takes))
                self._back_off_or_raise(exc)
                continue
            if refused is None:
                return self._committed(takes)
            stored = refused.already_recorded.get(self.request.reservation_id)
            if stored is not None:
                return stored.as_duplicate(self.request.message_id)
            self._learn_from(refused)
            rounds += 1
        raise RetryableError(
            f"order {self.request.reservation_id} did not settle after {MAX_SETTLE_ROUNDS} rounds"
        )

    def _find_maps(self) -> ReservationOutcome | None:
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
                reason = f"line {index + 1} ({key.seat_class}): not a mapped seat class; seats do not apply"
                return self._outcome(Outcome.INVALID, reason, key.seat_class, lines=self.lines)
        return None

    def _read_rows(self, key: SeatKey, line: OrderLine) -> None:
        """A mapped line's view: its chosen seats' row items read consistently, or the class's
        view for best available (`SeatMaps.view`, as a single best-available request)."""
        context, maps = self.context, self.context.hints.seat_maps
        if line.seats is not None:
            wanted = chosen_rows(self.class_maps[key], line.seats)
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

    def _view(self, key: SeatKey) -> SeatClassInventory | None:
        """The class as best known: verified in this settlement, else the container's hint."""
        if key in self.verified:
            return self.verified[key]
        return self.context.hints.assumed(key)

    def _read(self, key: SeatKey, *, whole: bool = True) -> SeatClassInventory | None:
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

    # ------------------------------------------------------------------ deciding

    def _decide(self) -> _Refusal | None:
        """The first line that cannot be taken, decided on verified views only (a line refused
        on a hint is read first, then decided again); None when every line looks takeable."""
        wanted: dict[str, int] = {}
        for index, (key, line) in enumerate(zip(self.keys, self.lines, strict=True)):
            if key in self.class_maps:
                mapped = self._mapped_refusal(index, key, line, wanted) or self._place(index, key, line)
                if mapped is not None:
                    return mapped
                for pool in self._rules(key).pools:
                    wanted[pool] = wanted.get(pool, 0) + line.quantity
                continue
            refusal = self._line_refusal(index, key, line, wanted)
            if refusal is not None and key not in self.verified:
                self._read(key)
                refusal = self._line_refusal(index, key, line, dict(wanted))
            if refusal is not None:
                return refusal
            view = self._view(key)
            for pool in view.pools if view is not None else ():
                wanted[pool] = wanted.get(pool, 0) + line.quantity
        return None

    def _line_refusal(
        self, index: int, key: SeatKey, line: OrderLine, wanted: dict[str, int]
    ) -> _Refusal | None:
        """Why line `index` cannot be taken (its class, sale, admission, limit, seats, or a pool
        that the lines before it already fill), or None. `wanted`: the seats earlier lines take
        from each pool."""
        view = self._view(key)
        if view is None:
            return _Refusal(index, Outcome.UNKNOWN_EVENT, f"no inventory for {key.event_id} {key.seat_class}")
        closed = view.sale_closed_reason(self.now) or self._pool_closed(view)
        if closed is not None:
            return _Refusal(index, Outcome.SALE_CLOSED, closed)
        if view.admission_required:
            refused = self._admission_refusal()
            if refused is not None:
                return _Refusal(index, Outcome.ADMISSION_REFUSED, refused)
        limit = view.max_per_customer
        taken = self.counted.get(key, 0)
        if limit is not None and taken + line.quantity > limit:
            reason = (
                f"customer {self.request.customer_id!r} may take at most {limit} seat(s) of"
                f" {key.event_id} {key.seat_class}; {taken} already taken, {line.quantity} requested"
            )
            return _Refusal(index, Outcome.LIMIT_EXCEEDED, reason)
        if view.complete and view.available < line.quantity:
            return _Refusal(
                index,
                Outcome.SOLD_OUT,
                f"requested {line.quantity} seat(s), {view.available} left",
                view.available,
            )
        for pool in view.pools:
            seen = self._whole_pool(pool)
            if seen is not None and seen.available < wanted.get(pool, 0) + line.quantity:
                left = max(0, seen.available - wanted.get(pool, 0))
                reason = f"requested {line.quantity} seat(s), {left} left in pool {pool}"
                return _Refusal(index, Outcome.SOLD_OUT, reason, left)
        return None

    def _place(self, index: int, key: SeatKey, line: OrderLine) -> _Refusal | None:
        """Places a mapped line on its view (`order_mapped.place_line`); its refusal, or None."""
        placed = place_line(
            key,
            self.class_maps[key],
            line,
            self.rows[key],
            customer_id=self.request.customer_id,
            counted=self.counted.get(key, 0),
            now=self.now,
        )
        if isinstance(placed, LineRefusal):
            return _Refusal(index, placed.outcome, placed.reason, placed.remaining, placed.seats)
        self.placed[key] = placed
        return None

    def _rules(self, key: SeatKey) -> MappedRules:
        """A mapped line's pools and admission rule, as its rows say (`logic.mapped_rules`)."""
        return MappedRules.of(self.rows[key])

    def _mapped_refusal(
        self, index: int, key: SeatKey, line: OrderLine, wanted: dict[str, int]
    ) -> _Refusal | None:
        """Why a mapped line cannot be taken for its admission rule or pools (a closed one, or
        one the lines before it fill, seen whole), or None; its seats are `_place`'s."""
        rules = self._rules(key)
        if rules.admission_required:
            refused = self._admission_refusal()
            if refused is not None:
                return _Refusal(index, Outcome.ADMISSION_REFUSED, refused)
        for pool in rules.pools:
            seen = self._whole_pool(pool)
            if seen is None:
                continue
            closed = seen.closed_reason()
            if closed is not None:
                return _Refusal(index, Outcome.SALE_CLOSED, closed)
            if seen.available < wanted.get(pool, 0) + line.quantity:
                left = max(0, seen.available - wanted.get(pool, 0))
                reason = f"requested {line.quantity} seat(s), {left} left in pool {pool}"
                return _Refusal(index, Outcome.SOLD_OUT, reason, left)
        return None

    def _pool_closed(self, view: SeatClassInventory) -> str | None:
        for pool in view.pools:
            seen = self._whole_pool(pool)
            if seen is not None and seen.closed_reason() is not None:
                return seen.closed_reason()
        return None

    def _whole_pool(self, pool: str) -> PoolInventory | None:
        """The pool as seen in this settlement, if the view is the whole pool's (one item, or every
        item read at once): one item of a sharded pool never decides a refusal (docs/guides/pools.md)."""
        seen = self.pools_seen.get(pool)
        return seen if seen is not None and seen.complete else None

    def _admission_refusal(self) -> str | None:
        check = self.request.admission
        if check is None:
            return "admission token not verified"
        if check.refusal is not None:
            return check.refusal
        if check.token_id is None:
            return "admission token not verified"
        if self.token_holder is not None and self.token_holder != self.request.reservation_id:
            return replay_refusal(self.token_holder)
        return None

    # ------------------------------------------------------------------ routing and writing

    def _route(self) -> list[_LineTake] | None:
        """Each line's shard item (the container's own, as single lines route: `logic.shards`);
        None when a line's class was read again instead (no item alone had its seats)."""
        takes: list[_LineTake] = []
        for key, line in zip(self.keys, self.lines, strict=True):
            take = self._line_route(key, line.quantity)
            if take is None:
                return None
            takes.append(take)
        return takes

    def _line_route(self, key: SeatKey, seats: int) -> _LineTake | None:
        view = self._view(key)
        hints = self.context.hints
        if view is None or view.shard_items == 1:  # a class of one item, or a mapped class
            return _LineTake(0)
        own = hints.own_shard(key)
        if own is not None and (own.left is None or own.left >= seats):
            return _LineTake(own.shard)
        if view.complete and key in self.verified:
            shard, moves = route(view, seats, own.shard if own else 0, hints.rng, read_whole=True)
            return _LineTake(shard, moves)
        context = self.context
        survey = context.deadline.patiently(
            context.clock, lambda: context.store.survey_shards(key, view.shard_items), f"survey of {key}"
        )
        picked = pick_shard(survey, seats, context.clock.now(), hints.rng, share=True)
        if picked is not None:
            hints.settle_on(key, picked.shard, picked.available)
            return _LineTake(picked.shard)
        self._read(key)  # no item alone has the seats: the whole class says whether seats move
        return None

    def _route_pools(self, takes: Sequence[_LineTake]) -> list[_LineTake]:
        """Each counted line's item of each sharded pool of its class: the one item the
        container's orders take from (`InventoryHints.own_pool_item`, else the first counted
        line's class shard mod K), the same for every counted line, and, where this settlement
        read the pool whole, the seats moved into it (`order_pool_routes`). A mapped line takes
        from item 0, as a single mapped take."""
        demands = [
            PoolDemand(
                self._rules(key).pools
                if key in self.class_maps
                else (view.pools if view is not None else ()),
                take.shard,
                line.quantity,
                routed=key not in self.class_maps,
            )
            for key, line, take, view in zip(
                self.keys, self.lines, takes, (self._view(key) for key in self.keys), strict=True
            )
        ]
        event_id = self.request.event_id or ""
        own = {
            pool: item
            for pool in {p for d in demands for p in d.pools}
            if (item := self.context.hints.own_pool_item(event_id, pool)) is not None
        }
        routes = order_pool_routes(demands, self._pool_views(), own)
        return [
            dataclasses.replace(take, pool_shards=shards, pool_moves=moves)
            for take, (shards, moves) in zip(takes, routes, strict=True)
        ]

    @staticmethod
    def _pools_taken(takes: Sequence[_LineTake]) -> set[str]:
        """The sharded pools the takes route to an item of."""
        return {pool for take in takes for pool in take.pool_shards}

    def _pool_views(self) -> dict[str, PoolInventory]:
        """What is known of each pool to route by: its items as seen in this settlement, else
        how many items it has as the hints last saw it (not their seats now)."""
        views: dict[str, PoolInventory] = {}
        for key in self.keys:
            assumed = self.context.hints.assumed(key)
            for pool in (assumed.pool_items or ()) if assumed is not None else ():
                views.setdefault(pool.pool, dataclasses.replace(pool, shards=()))
        views.update(self.pools_seen)
        return views

    def _take(self, takes: Sequence[_LineTake]) -> Take:
        """A part per line, the order's record (its lines and where they take from) and its token
        use on the first part whose class requires one; committed together (`InventoryStore.take`)."""
        views = [self._view(key) for key in self.keys]
        answer = self._answer_taken(takes, views)
        token_uses: list[TokenUse] = []
        check = self.request.admission
        needs = [
            self._rules(key).admission_required
            if key in self.class_maps
            else view is not None and view.admission_required
            for key, view in zip(self.keys, views, strict=True)
        ]
        if any(needs) and check is not None:
            assert check.token_id is not None
            token_uses.append(TokenUse(check.token_id, self.request.reservation_id, use_expires_at(check)))
        # The token is spent by the first line's write whose class requires it.
        spender = needs.index(True) if token_uses else -1
        parts: list[ClassTake] = []
        taken_at = self.context.clock.now()
        for index, (key, line, take, view) in enumerate(
            zip(self.keys, self.lines, takes, views, strict=True)
        ):
            mapped = key in self.class_maps
            parts.append(
                ClassTake(
                    key,
                    [answer] if index == 0 else [],
                    seats=line.quantity,
                    held=line.quantity if self.request.is_hold else 0,
                    rules=self._class_rules(key, view),
                    counters={self.request.customer_id: line.quantity},
                    shard=take.shard,
                    moves=take.moves,
                    rows=seats_by_row(self.placed[key]) if mapped else {},
                    pool_shards=take.pool_shards,
                    pool_moves=take.pool_moves,
                    token_uses=token_uses if index == spender else (),
                    taken_at=None if mapped else taken_at,
                )
            )
        order = Take(parts, self.now + self.context.rejection_ttl_seconds, now=self.now)
        actions = len(take_actions(order))
        if actions > MAX_ACTIONS_PER_TRANSACTION:
            raise RetryableError(
                f"order {self.request.reservation_id} needs {actions} actions in one transaction"
            )
        return order

    def _class_rules(self, key: SeatKey, view: SeatClassInventory | None) -> ClassRules:
        """The rules a line's take assumes: a mapped class's as its rows carry them, a counted
        class's as its view shows them."""
        if key in self.class_maps:
            rules = self._rules(key)
            return ClassRules(row_limit(self.rows[key]), rules.admission_required, rules.pools)
        if view is None:
            return ClassRules()
        return ClassRules(view.max_per_customer, view.admission_required, view.pools)

    def _answer_taken(
        self, takes: Sequence[_LineTake], views: Sequence[SeatClassInventory | None]
    ) -> ReservationOutcome:
        """The answer of an order that takes its lines: HELD or CONFIRMED, each line with the
        shard, pools and counting its seats go back to."""
        request = self.request
        lines = tuple(
            dataclasses.replace(
                line,
                seats=self.placed[key],
                pools=tuple(sorted(pool_ref(p, take.pool_shards.get(p, 0)) for p in self._rules(key).pools)),
                customer_counted=row_limit(self.rows[key]) is not None,
            )
            if key in self.class_maps
            else dataclasses.replace(
                line,
                shard=take.shard,
                # Each pool item its seats come off (`pool#n` for item n of a sharded pool).
                pools=tuple(sorted(pool_ref(p, take.pool_shards.get(p, 0)) for p in view.pools))
                if view is not None
                else (),
                customer_counted=view is not None and view.max_per_customer is not None,
            )
            for key, line, take, view in zip(self.keys, self.lines, takes, views, strict=True)
        )
        seats = sum(line.quantity for line in lines)
        if request.is_hold:
            expires_at: int | None = self.now + (request.hold_seconds or 0)
            outcome, reason = (
                Outcome.HELD,
                f"{seats} seat(s) in {len(lines)} line(s) held until {iso_utc(expires_at or 0)}",
            )
        else:
            expires_at = None
            outcome, reason = Outcome.CONFIRMED, f"{seats} seat(s) in {len(lines)} line(s) confirmed"
        return self._outcome(outcome, reason, None, lines=lines, hold_expires_at=expires_at)

    def _outcome(
        self,
        outcome: Outcome,
        reason: str,
        seat_class: str | None,
        *,
        lines: tuple[OrderLine, ...],
        remaining: int | None = None,
        hold_expires_at: int | None = None,
        seats: tuple[str, ...] | None = None,
    ) -> ReservationOutcome:
        request = self.request
        return ReservationOutcome(
            reservation_id=request.reservation_id,
            outcome=outcome,
            reason=reason,
            event_id=request.event_id,
            seat_class=seat_class,
            quantity=request.quantity,
            customer_id=request.customer_id,
            remaining=remaining,
            message_id=request.message_id,
            request_type=request.request_type,
            hold_expires_at=hold_expires_at,
            lines=lines,
            seats=seats,
        )

    # ------------------------------------------------------------------ outcomes

    def _committed(self, takes: Sequence[_LineTake]) -> ReservationOutcome:
        """The order committed: the hints learn what each line left, and the answer stands."""
        hints = self.context.hints
        for key, line, take in zip(self.keys, self.lines, takes, strict=True):
            view = self._view(key)
            if view is not None and view.shard_items > 1:
                own = hints.own_shard(key)
                left = own.left if own is not None and own.shard == take.shard else None
                hints.settle_on(key, take.shard, None if left is None else left - line.quantity)
            elif key in self.verified and view is not None:
                hints.learn(key, view.seats_to_sell - line.quantity)
        for key, take in zip(self.keys, takes, strict=True):
            if key not in self.class_maps:  # a counted line: on the order's item of each pool
                for pool, item in take.pool_shards.items():
                    hints.settle_on_pool_item(self.request.event_id or "", pool, item)
        return self._answer_taken(takes, [self._view(key) for key in self.keys])

    def _reject(self, refusal: _Refusal) -> ReservationOutcome:
        """Records the order's refusal (its failing line named) and returns it, or the answer
        recorded before (a redelivery)."""
        line = self.lines[refusal.line]
        answer = self._outcome(
            refusal.outcome,
            f"line {refusal.line + 1} ({line.seat_class}): {refusal.reason}",
            line.seat_class,
            lines=self.lines,
            remaining=refusal.remaining,
            seats=refusal.seats,
        )
        if refusal.outcome is Outcome.INVALID:
            return answer  # decided by the map, the same way every time: not recorded
        context = self.context
        expires_at = self.now + context.rejection_ttl_seconds
        refused = context.deadline.patiently(
            context.clock,
            lambda: context.store.record_rejections([answer], expires_at=expires_at),
            "recording the order's refusal",
        )
        stored = refused.already_recorded.get(answer.reservation_id) if refused is not None else None
        return stored.as_duplicate(self.request.message_id) if stored is not None else answer

    def _learn_from(self, refused: WriteRefused) -> None:
        """Takes in what a refused write handed back: the classes, counters, token and pools."""
        if refused.tokens_used:
            self.token_holder = next(iter(refused.tokens_used.values()))
        for pool, item in refused.pools_refused.items():
            if item is None:
                raise StoreInconsistency(f"capacity pool {pool} of {self.request.event_id} does not exist")
            self.pools_seen[pool] = item
        for key, part in zip(self.keys, refused.parts, strict=False):
            if part is None:
                continue
            if part.customer_seats:
                self.counted[key] = max(part.customer_seats.values())
            if part.rows:
                self._learn_rows(key, part.rows)
            elif part.inventory_refused:
                self.context.hints.leave_shard(key)
                seen = part.inventory
                if seen is not None and seen.complete:
                    self.verified[key] = seen
                    self.context.hints.observe(key, seen)
                else:
                    self._read(key)
        for pool in refused.pools_refused:
            if not self.pools_seen[pool].complete:
                # One item of a sharded pool refused: a view of that item alone. The pool is read
                # whole (with a class of the order in it) before anything is decided on it.
                self._read_pool_whole(pool)
        if not (refused.tokens_used or refused.pools_refused or any(p is not None for p in refused.parts)):
            raise RetryableError(
                f"order {self.request.reservation_id} refused without a reason the planner knows"
            )

    def _read_pool_whole(self, pool: str) -> None:
        """Reads whole the first counted line's class that takes from `pool`, and with it the pool
        (`InventoryStore.read_inventory` reads each sharded pool of a class read whole)."""
        for key in self.keys:
            view = self._view(key)
            if key not in self.class_maps and view is not None and pool in view.pools:
                self._read(key)
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

    def _learn_rows(self, key: SeatKey, rows: Mapping[str, SeatRow | None]) -> None:
        """A mapped line's row items refused, as they are: the next round places on them."""
        missing = [row_id for row_id, row in rows.items() if row is None]
        if missing:
            raise StoreInconsistency(f"{key}: the map's row item(s) {missing} do not exist")
        learned = {row_id: row for row_id, row in rows.items() if row is not None}
        self.context.hints.seat_maps.learn(key, learned)
        self.rows[key].update(learned)

    def _back_off_or_raise(self, exc: TransactionConflict | Throttled) -> None:
        self.conflicts += 1
        context = self.context
        if not context.deadline.back_off(context.clock, back_off_step(exc, self.conflicts)):
            raise type(exc)(
                f"order {self.request.reservation_id}: {self.conflicts} transactions in a row refused by"
                f" conflicts or throttling (last: {exc})"
            ) from exc


@dataclass(frozen=True, slots=True)
class PoolDemand:
    """One line as its pools see it: the pools of its class, its class shard, its seats."""

    pools: tuple[str, ...]
    shard: int
    seats: int
    routed: bool = True  # a counted line, routed to the order's item; False: a mapped line (item 0)


def order_pool_routes(
    demands: Sequence[PoolDemand], views: Mapping[str, PoolInventory], own: Mapping[str, int] | None = None
) -> list[tuple[dict[str, int], dict[str, dict[int, int]]]]:
    """Per line, where its seats come off each sharded pool, and the seats moved into that item
    from others.

    Every counted (`routed`) line of the order takes from **one** item of the pool: `own[pool]`,
    the item the container's orders take from, when it is one of the pool's items; else the
    first counted line's class shard mod K (as a single line's, `settle_group._PoolRoute`). So an
    order writes one item of each pool, and one its container keeps using, not one item per
    line that the other classes' containers write too (docs/guides/orders.md, "Scale"). Two containers
    may still meet on an item: the conflict makes both route afresh.
    A mapped line (not `routed`, shard 0) takes from item 0, as a single mapped take.

    Moves need a whole view of the pool (`shards`): lines on one item are summed, and each item
    the lines need more of than it has gets the difference from the items with seats to spare,
    most spare first (an item another line takes from gives only what that line leaves). The
    moves into an item are the first lines' on it, each at most its seats. With a view of one
    item only (K known, not the seats), the lines go to their items and the guards decide.
    """
    own = own or {}
    shards: list[dict[str, int]] = [{} for _ in demands]
    moves: list[dict[str, dict[int, int]]] = [{} for _ in demands]
    for name, view in views.items():
        on_pool = [(index, d) for index, d in enumerate(demands) if name in d.pools]
        if view.shard_count <= 1 or not on_pool:
            continue
        routed = [d for _, d in on_pool if d.routed]
        order_item = own.get(name)
        if routed and (order_item is None or not 0 <= order_item < view.shard_count):
            order_item = view.shard_for(routed[0].shard)
        takers = [
            (index, order_item if d.routed and order_item is not None else view.shard_for(d.shard), d.seats)
            for index, d in on_pool
        ]
        for index, item, _ in takers:
            shards[index][name] = item
        if not view.shards:
            continue
        wanted: dict[int, int] = {}
        for _, item, seats in takers:
            wanted[item] = wanted.get(item, 0) + seats
        spare = {s.shard: s.available - wanted.get(s.shard, 0) for s in view.shards}
        short = {item: max(0, -spare.get(item, -seats)) for item, seats in wanted.items()}
        for index, item, seats in takers:
            need = min(seats, short[item])
            short[item] -= need
            for donor in sorted(spare, key=lambda n: (-spare[n], n)):
                if need <= 0 or spare[donor] <= 0:
                    break
                given = min(need, spare[donor])
                moves[index].setdefault(name, {})[donor] = given
                spare[donor] -= given
                need -= given
    return list(zip(shards, moves, strict=True))
