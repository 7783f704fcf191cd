"""Capacity pools and admission tokens on a mapped seat class (docs/pools.md, docs/admission.md).

A mapped class's pools and whether it requires admission tokens are copied on each of its row
items, like its sale rules; each take's row updates are guarded on them (the planner's
assumption), so a stale view is refused and learned. The take writes the class's pools in the
same transaction (a mapped class is one item: it routes to item 0 of a sharded pool, as a counted
class of one item does) and the token use, as a counted class's take does.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from seat_inventory.logic.admission_tokens import replay_refusal, use_expires_at
from seat_inventory.models import (
    AdmissionCheck,
    Outcome,
    PoolInventory,
    ReservationRequest,
    RetryableError,
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


def pool_refusal(
    key: SeatKey, request: ReservationRequest, refused: Mapping[str, PoolInventory | None]
) -> tuple[Outcome, str, int | None]:
    """The final answer to a take a pool refused: SALE_CLOSED for a closed pool, SOLD_OUT naming
    the pool from a whole view of it (a pool of one item, as the refusal handed it back).

    One item of a sharded pool never decides a SOLD_OUT (docs/pools.md): the request is handed
    back (`RetryableError`) and tried again when redelivered."""
    for name, pool in sorted(refused.items()):
        if pool is None:
            raise StoreInconsistency(f"{key}: capacity pool {name} of its row items does not exist")
        closed = pool.closed_reason()
        if closed is not None:
            return Outcome.SALE_CLOSED, closed, None
    for name, pool in sorted(refused.items()):
        assert pool is not None
        if pool.complete and pool.available < request.quantity:
            reason = f"requested {request.quantity} seat(s), {pool.available} left in pool {name}"
            return Outcome.SOLD_OUT, reason, pool.available
    raise RetryableError(f"{key}: an item of a sharded pool refused the take ({sorted(refused)})")
