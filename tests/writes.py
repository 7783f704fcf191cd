"""The writes the store tests make, in one shape: `GroupWrite` (one class's answers and seats, and
what its guards assume), committed by `commit_outcomes` through the store's verbs: a write that
takes seats (or several, an order's lines) as one `take`, one of rejections alone as
`record_rejections`; `spy_writes` shows a test each write the store is asked for, in that shape."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from seat_inventory.models import (
    ClassRules,
    ClassTake,
    Outcome,
    ReservationOutcome,
    SeatKey,
    Take,
    TokenUse,
    WriteRefused,
)


@dataclass(frozen=True)
class GroupWrite:
    key: SeatKey
    outcomes: Sequence[ReservationOutcome]
    seats_taken: int
    rejection_expires_at: int
    max_per_customer: int | None = None
    customer_seats: Mapping[str, int] = field(default_factory=dict)
    now: int | None = None
    shard: int = 0
    moves: Mapping[int, int] = field(default_factory=dict)
    taken_at: float | None = None
    admission_required: bool = False
    token_uses: Sequence[TokenUse] = ()
    pools: Sequence[str] = ()
    pool_shards: Mapping[str, int] = field(default_factory=dict)
    pool_moves: Mapping[str, Mapping[int, int]] = field(default_factory=dict)
    rows: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    order_line_held: bool | None = None

    @classmethod
    def of(cls, part: ClassTake, take: Take) -> GroupWrite:
        """A part of a take the store was asked for, as the tests look at writes."""
        rules = part.rules
        return cls(
            part.key,
            tuple(part.outcomes),
            part.seats,
            take.rejection_expires_at,
            rules.max_per_customer,
            part.counters,
            take.now,
            part.shard,
            part.moves,
            part.taken_at,
            rules.admission_required,
            tuple(part.token_uses),
            rules.pools,
            part.pool_shards,
            part.pool_moves,
            part.rows,
            None if len(take.parts) == 1 else part.held > 0,
        )

    @classmethod
    def rejections(cls, outcomes: Sequence[ReservationOutcome], expires_at: int) -> GroupWrite:
        first = outcomes[0] if outcomes else None
        key = SeatKey(first.event_id or "", first.seat_class or "") if first else SeatKey("", "")
        return cls(key, tuple(outcomes), 0, expires_at)

    @property
    def counters(self) -> dict[str, int]:
        return dict(self.customer_seats) if self.max_per_customer is not None else {}

    @property
    def donors(self) -> dict[int, int]:
        return {donor: seats for donor, seats in self.moves.items() if seats > 0}

    def pool_donors(self, pool: str) -> dict[int, int]:
        return {donor: seats for donor, seats in self.pool_moves.get(pool, {}).items() if seats > 0}

    @property
    def records_only(self) -> bool:
        counters = self.customer_seats if self.max_per_customer is not None else {}
        return self.seats_taken == 0 and not counters and not self.token_uses

    def part(self) -> ClassTake:
        if self.order_line_held is not None:
            held = self.seats_taken if self.order_line_held else 0
        else:
            held = sum(o.quantity or 0 for o in self.outcomes if o.outcome is Outcome.HELD)
        return ClassTake(
            self.key,
            self.outcomes,
            seats=self.seats_taken,
            held=held,
            rules=ClassRules(self.max_per_customer, self.admission_required, tuple(self.pools)),
            counters=self.customer_seats,
            shard=self.shard,
            moves=self.moves,
            rows=self.rows,
            pool_shards=self.pool_shards,
            pool_moves=self.pool_moves,
            token_uses=self.token_uses,
            taken_at=self.taken_at,
        )


def commit_outcomes(store: Any, write: GroupWrite | Sequence[GroupWrite]) -> WriteRefused | None:
    """`write` (or several, committed together) through the store's verbs."""
    writes = [write] if isinstance(write, GroupWrite) else list(write)
    if not writes or (len(writes) == 1 and not writes[0].outcomes):
        return None
    if len(writes) == 1 and writes[0].records_only:
        return store.record_rejections(writes[0].outcomes, expires_at=writes[0].rejection_expires_at)  # type: ignore[no-any-return]
    take = Take([w.part() for w in writes], writes[0].rejection_expires_at, now=writes[0].now)
    return store.take(take)  # type: ignore[no-any-return]


def is_order(take: Take) -> bool:
    """Whether the take is a multi-line order's (its answer has lines), however many it has."""
    return any(o.lines is not None for part in take.parts for o in part.outcomes)


def spy_writes(store: Any, seen: Callable[[GroupWrite | list[GroupWrite], WriteRefused | None], Any]) -> None:
    """From now on, every write of `store` is shown to `seen` (a take of several parts as the
    list of its parts, as an order's always is) with what refused it; `seen` may return a refusal to answer instead (or
    raise), else the store's own answer stands."""
    take, record = store.take, store.record_rejections

    def taking(t: Take) -> WriteRefused | None:
        refused = take(t)
        parts = [GroupWrite.of(p, t) for p in t.parts]
        shown = seen(parts if is_order(t) else parts[0], refused)
        return refused if shown is None else shown

    def recording(outcomes: Sequence[ReservationOutcome], *, expires_at: int) -> WriteRefused | None:
        refused = record(outcomes, expires_at=expires_at)
        shown = seen(GroupWrite.rejections(outcomes, expires_at), refused)
        return refused if shown is None else shown

    store.take = taking
    store.record_rejections = recording
