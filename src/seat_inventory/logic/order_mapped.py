"""A mapped class's line of a multi-line order: where its seats are, and why a line cannot have them.

See docs/guides/orders.md and docs/guides/seat-maps.md.

Chosen seats are checked on a consistent read of their row items (the orphan rule looks at their
neighbours); best available is placed on the class's view, as a single best-available request
is. The take itself is the line's `ClassTake.rows`, guarded on exactly those seats in the
order's one transaction: a view only plans it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from seat_inventory.logic.seat_map import ClassMap
from seat_inventory.logic.seat_placement import Placement, Refused, place_best, place_chosen
from seat_inventory.logic.settle_mapped import taken_seats
from seat_inventory.models import OrderLine, Outcome, SeatKey, SeatRow, row_item_of


@dataclass(frozen=True, slots=True)
class LineRefusal:
    """Why a mapped line cannot be taken: the answer, its reason, the seats it names (taken or
    stranded), and the seats left for SOLD_OUT. INVALID is decided by the map (not recorded)."""

    outcome: Outcome
    reason: str
    seats: tuple[str, ...] | None = None
    remaining: int | None = None


def chosen_rows(class_map: ClassMap, seats: Sequence[str]) -> list[str]:
    """The row items to read for chosen seats (those of the class's seats only)."""
    return sorted({row_item_of(seat)[0] for seat in seats if seat in class_map.seats})


def place_line(
    key: SeatKey,
    class_map: ClassMap,
    line: OrderLine,
    rows: Mapping[str, SeatRow],
    *,
    customer_id: str,
    counted: int,
    now: float,
) -> tuple[str, ...] | LineRefusal:
    """The seats the line takes on this view of its rows, or why it cannot: the sale closed, the
    customer's limit (with `counted` seats already taken, as a refused write told), seats not of
    the class or accessible ones (INVALID), not free (SEATS_TAKEN), stranding one (ORPHAN_SEAT),
    or no block left for best available (SOLD_OUT)."""
    closed = next((r.sale_closed_reason(now) for r in rows.values() if r.sale_closed_reason(now)), None)
    if closed is not None:
        return LineRefusal(Outcome.SALE_CLOSED, closed)
    limit = next((row.max_per_customer for row in rows.values()), None)
    if limit is not None and counted + line.quantity > limit:
        reason = (
            f"customer {customer_id!r} may take at most {limit} seat(s) of {key.event_id}"
            f" {key.seat_class}; {counted} already taken, {line.quantity} requested"
        )
        return LineRefusal(Outcome.LIMIT_EXCEEDED, reason)
    taken = taken_seats(dict(rows))
    if line.seats is not None:
        placement = place_chosen(class_map, taken, line.seats)
    else:
        placement = place_best(class_map, taken, line.quantity)
    if isinstance(placement, Placement):
        return placement.seats
    if placement.why in (Refused.NOT_IN_CLASS, Refused.NOT_ACCESSIBLE):
        return LineRefusal(Outcome.INVALID, placement.reason, placement.seats)
    if placement.why is Refused.SEATS_TAKEN:
        return LineRefusal(Outcome.SEATS_TAKEN, placement.reason, placement.seats)
    if placement.why is Refused.ORPHAN_SEAT:
        return LineRefusal(Outcome.ORPHAN_SEAT, placement.reason, placement.seats)
    left = sum(row.available for row in rows.values())
    reason = f"requested {line.quantity} seat(s) together; no placement fits ({left} left)"
    return LineRefusal(Outcome.SOLD_OUT, reason, None, left)


def row_limit(rows: Mapping[str, SeatRow]) -> int | None:
    """The class's per-customer limit as its row items carry it."""
    return next((row.max_per_customer for row in rows.values()), None)
