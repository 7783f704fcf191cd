"""The rule book: whether a line may take its seats, judged against what the container knows.

A line is a request's seats of one class, or one line of an order; counted or mapped, its class
has a sale status and window, a per-customer limit, an admission rule and capacity pools. The
planners gather what they have observed of the class (`ClassFacts`) and of the line (`LineAsk`)
and `judge` says, in one order for every kind of request: the class does not exist, its sale
(or a pool's) is closed, the line's admission token does not admit it, the customer's limit
would be passed, too few seats are left in the class or in a pool; else it takes. Only what was
observed refuses: what is not known is left to the guards of the take, which check every
assumption it was planned on. Where a mapped line's seats are is `seat_placement`'s to say;
`placement` turns a placement's refusal into a judgement the same way. `logic.answers` turns a
judgement into the outcome and its reason.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from seat_inventory.logic.admission_tokens import replay_refusal
from seat_inventory.logic.seat_placement import Refusal, Refused
from seat_inventory.models import AdmissionCheck, Outcome


@dataclass(frozen=True, slots=True)
class ClassFacts:
    """What the container has observed of a line's class: `missing` (it does not exist), why its
    sale or a pool's is `closed`, its per-customer `limit`, whether it requires an admission
    token, the seats left in it (None: not observed) and in each pool observed whole."""

    missing: bool = False
    closed: str | None = None
    limit: int | None = None
    admission_required: bool = False
    seats_left: int | None = None
    pools_left: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class LineAsk:
    """What a line asks: `quantity` seats for a customer who holds `counted` of the class already
    (None: not known), and why its admission token does not admit it (None: it does)."""

    quantity: int
    counted: int | None = None
    admission: str | None = None


@dataclass(frozen=True, slots=True)
class Judgement:
    """The rule a line fails (`outcome`), or None when it may take, and what the refusal rests on:
    the reason given by the class, pool, token or placement; the limit and the seats counted;
    the seats left, in `pool` when a pool has too few; the seats a placement names, or that no
    placement fits."""

    outcome: Outcome | None = None
    reason: str = ""
    quantity: int = 0
    limit: int | None = None
    counted: int | None = None
    left: int | None = None
    pool: str | None = None
    seats: tuple[str, ...] | None = None
    placement: bool = False  # SOLD_OUT for no block on the map (`split`: not even in pieces)
    split: bool = False

    @property
    def takes(self) -> bool:
        return self.outcome is None


TAKES = Judgement()


def judge(line: LineAsk, facts: ClassFacts) -> Judgement:
    """The first rule the line fails, in the rule book's order, or `TAKES`."""
    if facts.missing:
        return Judgement(Outcome.UNKNOWN_EVENT)
    if facts.closed is not None:
        return Judgement(Outcome.SALE_CLOSED, facts.closed)
    if facts.admission_required and line.admission is not None:
        return Judgement(Outcome.ADMISSION_REFUSED, line.admission)
    if facts.limit is not None and (line.counted or 0) + line.quantity > facts.limit:
        return Judgement(
            Outcome.LIMIT_EXCEEDED, quantity=line.quantity, limit=facts.limit, counted=line.counted
        )
    if facts.seats_left is not None and line.quantity > facts.seats_left:
        return Judgement(Outcome.SOLD_OUT, quantity=line.quantity, left=facts.seats_left)
    for pool, left in facts.pools_left.items():
        if line.quantity > left:
            return Judgement(Outcome.SOLD_OUT, quantity=line.quantity, left=max(0, left), pool=pool)
    return TAKES


def admission_refusal(
    check: AdmissionCheck | None, reservation_id: str, holder: str | None = None
) -> str | None:
    """Why a token does not admit a reservation (for a class that requires one), or None: the
    edge's check refused it, it was not verified, or another reservation (`holder`) spent it."""
    check = check or AdmissionCheck()
    if check.refusal is not None:
        return check.refusal
    if check.token_id is None:
        return "admission token not verified"
    if holder is not None and holder != reservation_id:
        return replay_refusal(holder)
    return None


def placement(refusal: Refusal, quantity: int, left: int, *, split: bool = False) -> Judgement:
    """A mapped line no placement fits: a seat not of the class, or an accessible one asked
    without `accessible` (INVALID: the map decides it the same way every time), chosen seats not
    free or stranding a single one, or no block left (SOLD_OUT, `left` seats on the view)."""
    kinds = {
        Refused.NOT_IN_CLASS: Outcome.INVALID,
        Refused.NOT_ACCESSIBLE: Outcome.INVALID,
        Refused.SEATS_TAKEN: Outcome.SEATS_TAKEN,
        Refused.ORPHAN_SEAT: Outcome.ORPHAN_SEAT,
    }
    if refusal.why in kinds:
        return Judgement(kinds[refusal.why], refusal.reason, seats=refusal.seats)
    return Judgement(Outcome.SOLD_OUT, quantity=quantity, left=left, placement=True, split=split)
