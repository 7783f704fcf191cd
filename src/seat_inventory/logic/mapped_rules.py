"""Capacity pools and admission tokens on a mapped seat class.

See docs/guides/pools.md and docs/guides/admission.md.

A mapped class's pools and whether it requires admission tokens are copied on each of its row
items, like its sale rules; each take's row updates are guarded on them (the planner's
assumption), so a stale view is refused and learned. The take writes the class's pools in the
same transaction (a mapped class is one item: it routes to item 0 of a sharded pool, as a counted
class of one item does, with seats moved into it from the pool's other items when a whole read
shows them) and the token use, as a counted class's take does.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from seat_inventory.logic.admission_tokens import replay_refusal, use_expires_at
from seat_inventory.logic.ports import InventoryStore
from seat_inventory.models import (
    AdmissionCheck,
    Outcome,
    PoolInventory,
    ReservationRequest,
    SeatKey,
    SeatRow,
    StoreInconsistency,
    TokenUse,
)


@dataclass(frozen=True, slots=True)
class MappedRules:
    """What a mapped class's row items say of its pools and admission (the first row's: every
    row carries the same, and each take is guarded on it)."""

    pools: tuple[str, ...] = ()
    admission_required: bool = False

    @classmethod
    def of(cls, rows: Mapping[str, SeatRow]) -> MappedRules:
        row = next(iter(rows.values()), None)
        return cls(row.pools, row.admission_required) if row is not None else cls()


def admission(request: ReservationRequest, rules: MappedRules) -> tuple[tuple[TokenUse, ...], str | None]:
    """The token use a take writes (none when the class requires no token), or why the request's
    token does not admit it (a final ADMISSION_REFUSED)."""
    if not rules.admission_required:
        return (), None
    check = request.admission or AdmissionCheck()  # as the counted classes' planner reads it
    if check.refusal is not None:
        return (), check.refusal
    if check.token_id is None:
        return (), "admission token not verified"
    return (TokenUse(check.token_id, request.reservation_id, use_expires_at(check)),), None


def token_refusal(request: ReservationRequest, tokens_used: Mapping[str, str]) -> str | None:
    """Why a take refused by a token's use is final: another reservation used the token first."""
    check = request.admission
    if check is None or check.token_id is None or check.token_id not in tokens_used:
        return None
    return replay_refusal(tokens_used[check.token_id])


@dataclass(frozen=True, slots=True)
class PoolRefusal:
    """A take a pool refused: a final answer (`outcome`, `reason`, the seats `left` in the pool),
    or, when the pool read whole has the seats but its item 0 had not, the seats to move into
    item 0 from the pool's other items for the next attempt (`moves`: pool -> donor -> seats)."""

    outcome: Outcome | None = None
    reason: str = ""
    left: int | None = None
    moves: Mapping[str, Mapping[int, int]] = field(default_factory=dict)


def pool_refusal(
    store: InventoryStore,
    key: SeatKey,
    request: ReservationRequest,
    refused: Mapping[str, PoolInventory | None],
) -> PoolRefusal:
    """What a pool's refusal of a take means: SALE_CLOSED for a closed pool, SOLD_OUT naming the
    pool only from a whole view of it (a pool of one item, as the refusal handed it back; a
    sharded one read whole first: one item never decides a SOLD_OUT, docs/guides/pools.md), otherwise
    moves into item 0, which a mapped class's take writes (as a counted class of one item)."""
    views: dict[str, PoolInventory] = {}
    for name, pool in sorted(refused.items()):
        if pool is None:
            raise StoreInconsistency(f"{key}: capacity pool {name} of its row items does not exist")
        closed = pool.closed_reason()
        if closed is not None:
            return PoolRefusal(Outcome.SALE_CLOSED, closed)
        views[name] = pool
    partial = [name for name, pool in views.items() if not pool.complete]
    if partial:
        whole = store.read_pools(key.event_id, partial)
        missing = sorted(set(partial) - set(whole))
        if missing:
            raise StoreInconsistency(f"{key}: capacity pool(s) {missing} of its row items do not exist")
        views.update(whole)
    moves: dict[str, dict[int, int]] = {}
    for name, pool in sorted(views.items()):
        if pool.closed_reason() is not None:
            return PoolRefusal(Outcome.SALE_CLOSED, pool.closed_reason() or "")
        if pool.available < request.quantity:
            reason = f"requested {request.quantity} seat(s), {pool.available} left in pool {name}"
            return PoolRefusal(Outcome.SOLD_OUT, reason, pool.available)
        if pool.shards:
            moves[name] = pool.moves_into(0, request.quantity)
    return PoolRefusal(moves={name: m for name, m in moves.items() if m})
