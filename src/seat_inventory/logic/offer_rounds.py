"""The waiting list's offer rounds, run by the sweeper after it releases the holds that ran out
(docs/guides/waiting-list.md).

A round of an open list fences its lanes (no join can take a place before the fence any more),
reads the places at the head of each lane, and merges them into join order. `offer_plan` decides
the offers: the first entries the list's seats fit. A counted class's list seats are counted in its
lanes; each offer takes its seats from one shard item, and the seats are moved where the offers
need them first (`rebalance`). A mapped class's list seats are its row items' seats in state L;
each offer is the best block among them for the entry's quantity. Then each lane's offers are
written (`write_lanes`): each entry's record, still WAITLISTED, becomes a hold of its seats with
the OFFERED answer, its place is dropped, the lane's seats (a mapped class: each seat, from L to
held) and count go down, in one transaction per lane. An offer is published from the offers' outbox
(at least once); taking it is a `confirm`, and an offer that runs out is released by the sweeper
like any hold, its seats going back to the list for the next entry. A list with no entry waiting
puts its seats back on sale (guarded on every lane still being empty); so does a list that no
longer offers (closed, or past its `until`).
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from seat_inventory.logic import answers
from seat_inventory.logic.offer_plan import lane_changes, offer_expiry, plan_counted, plan_mapped
from seat_inventory.logic.ports import Clock, ListStore, OutcomePublisher
from seat_inventory.logic.seat_map import ClassMap
from seat_inventory.models import (
    EntryEnd,
    EntryOffer,
    LaneWrite,
    ListedReturn,
    ListRefused,
    Outcome,
    Place,
    Rebalance,
    RetryableError,
    SeatClassInventory,
    SeatKey,
    SeatRow,
    SeatState,
    Throttled,
    TransactionConflict,
    WaitingList,
    fence_key,
)

# Places a round reads from each lane's head, and offers one lane's transaction writes (2 actions
# each and the lane, under DynamoDB's 100).
PLACES_PER_LANE = 250
OFFERS_PER_TRANSACTION = 45
# Rounds of one list started again after a transaction conflict or throttling, and the back-off's
# base (full jitter, doubling).
CONFLICT_RETRIES = 6
CONFLICT_BACKOFF_SECONDS = 0.05
# How long the record of an entry that ended LIMIT_EXCEEDED is kept (as a refusal's).
OVER_LIMIT_RECORD_SECONDS = 15 * 86_400
# Rounds of one list a sweeper run makes while they offer seats (a release of thousands of seats
# is served in one run), and the time after which a run starts no more rounds: well inside the
# sweeper's 30 s timeout with its releases before and the publication after.
ROUNDS_PER_RUN = 20
ROUNDS_BUDGET_SECONDS = 12.0


@dataclass(slots=True)
class RoundResult:
    """What one round of one list did: the entries offered seats, the seats put back on sale, and
    why it stopped short when it did (`stalled`: tried again by the next run)."""

    offered: list[EntryOffer] = field(default_factory=list)
    seats_returned: int = 0
    stalled: str | None = None
    ended: int = 0  # entries that ended without an offer (LIMIT_EXCEEDED)

    @property
    def seats_offered(self) -> int:
        return sum(o.place.quantity for o in self.offered)


@dataclass(slots=True)
class RoundsResult:
    """What the sweeper's rounds did over every open list: offers made, seats put back on sale,
    OFFERED outcomes published (and left unpublished in the outbox), lists that failed."""

    offered: int = 0
    seats_offered: int = 0
    seats_returned: int = 0
    published: int = 0
    unpublished: int = 0
    failed: list[str] = field(default_factory=list)


def run_offer_rounds(
    store: ListStore,
    publisher: OutcomePublisher,
    clock: Clock,
    *,
    limit: int,
    budget_seconds: float = ROUNDS_BUDGET_SECONDS,
) -> RoundsResult:
    """Rounds of each open list, then the offers' outbox published (pages of `limit`). No round
    starts `budget_seconds` after the first (the next run goes on where this one stopped). A list
    whose round met a transient fault is reported in `failed`; the others go on."""
    result = RoundsResult()
    until = clock.now() + budget_seconds
    for key in store.find_open_lists():
        try:
            _serve(key, store, clock, result, until)
        except RetryableError as exc:
            result.failed.append(f"{key.event_id} {key.seat_class}: {type(exc).__name__}: {exc}")
    for _ in range(ROUNDS_PER_RUN):  # pages of `limit` while the outbox fills them
        published, unpublished = publish_offers(store, publisher, limit=limit)
        result.published += published
        result.unpublished += unpublished
        if published + unpublished < limit or unpublished:
            break
    return result


def _serve(key: SeatKey, store: ListStore, clock: Clock, result: RoundsResult, until: float) -> None:
    """Rounds of one list while they offer seats (a round reads a bounded head of the list),
    `ROUNDS_PER_RUN` at most, none started after `until`."""
    conflicts = 0
    for _ in range(ROUNDS_PER_RUN):
        if clock.now() >= until:
            return
        try:
            done = offer_round(key, store=store, clock=clock)
        except (TransactionConflict, Throttled):
            # Another sweeper's round, a join or a release wrote the same item: the round, whose
            # writes are each guarded, starts again from fresh reads after a back-off.
            conflicts += 1
            if conflicts > CONFLICT_RETRIES:
                raise
            clock.sleep(random.uniform(0, CONFLICT_BACKOFF_SECONDS * 2**conflicts))
            continue
        result.offered += len(done.offered)
        result.seats_offered += done.seats_offered
        result.seats_returned += done.seats_returned
        if not (done.offered or done.ended) or done.stalled:
            return


def publish_offers(store: ListStore, publisher: OutcomePublisher, *, limit: int) -> tuple[int, int]:
    """Publishes the OFFERED outcomes of the outbox and takes the published ones out; returns how
    many were published and how many SNS did not take (they stay for the next run)."""
    records = store.find_unpublished_offers(limit)
    if not records:
        return 0, 0
    outcomes = [answers.offer_announced(record) for record in records]
    not_published = {o.reservation_id for o in publisher.publish(outcomes)}
    store.mark_offers_published([r for r in records if r.reservation_id not in not_published])
    return len(records) - len(not_published), len(not_published)


def offer_round(
    key: SeatKey, *, store: ListStore, clock: Clock, places_per_lane: int = PLACES_PER_LANE
) -> RoundResult:
    """One round of `key`'s list: its seats offered to the head of the list in join order, or
    put back on sale when no entry waits or the list no longer offers."""
    now = int(clock.now())
    waiting = store.read_waitlist(key)
    if waiting is None:
        return RoundResult()
    seats = _ListSeats.read(store, waiting)
    if not seats.held:
        return RoundResult()
    if not waiting.offers_at(now) or not waiting.waiting:
        return _return_seats(store, waiting, seats, empty=waiting.offers_at(now))
    rules = seats.rules(store, key)
    if rules is None or rules.sale_closed_reason(now) is not None:
        return RoundResult(stalled=f"the sale of {key.event_id} {key.seat_class} is not open")
    fence = fence_key(int(clock.now() * 1000) + 1)  # every join up to now is before it
    store.fence_lanes(key, [lane.lane for lane in waiting.lanes], fence)
    fenced = store.read_waitlist(key)
    if fenced is None:
        return RoundResult(stalled="the list is gone")
    head = _head(store, fenced, fence, places_per_lane)
    return _offer(store, seats, fenced, head, rules, now)


def _offer(
    store: ListStore,
    seats: _ListSeats,
    fenced: WaitingList,
    head: Sequence[Place],
    rules: SeatClassInventory | SeatRow,
    now: int,
) -> RoundResult:
    """The round's offers to the head of the list; then the seats left back on sale when nobody
    waits any more."""
    key = fenced.key
    expires_at = offer_expiry(now, fenced.offer_seconds, fenced.until, rules.sale_ends_at)
    offers = seats.plan(store, fenced, head, expires_at, counted=rules.max_per_customer is not None)
    if offers is None:
        return RoundResult(stalled="the list's seats changed while the round moved them")
    if not offers:
        return RoundResult()
    pools = rules.pools if seats.class_map is not None else ()
    writing = _Writing(store, key, now, rules.max_per_customer, pools)
    offered = [replace(o, answer=answers.offered(o.place, o.expires_at, o.seats)) for o in offers]
    result = RoundResult(offered=writing.run(offered), ended=writing.ended)
    after = store.read_waitlist(key)
    if after is not None and not after.waiting:
        left = _ListSeats.read(store, after)
        if left.held:
            result.seats_returned = _return_seats(store, after, left, empty=True).seats_returned
    return result


@dataclass(frozen=True, slots=True)
class _ListSeats:
    """The seats set aside for a list: a counted class's counted in its lanes' ledgers, a mapped
    class's in state L on its row items (read with the class's map)."""

    held: int
    class_map: ClassMap | None = None
    rows: Mapping[str, SeatRow] = field(default_factory=dict)

    @classmethod
    def read(cls, store: ListStore, waiting: WaitingList) -> _ListSeats:
        if not waiting.mapped:
            return cls(waiting.seats_held)
        key = waiting.key
        seat_map = store.read_seat_map(key.event_id)
        class_map = seat_map.classes.get(key.seat_class) if seat_map is not None else None
        rows = store.read_seat_rows(key) if class_map is not None else {}
        listed = sum(state is SeatState.LISTED for row in rows.values() for state in row.states.values())
        return cls(listed, class_map, rows)

    def plan(
        self, store: ListStore, fenced: WaitingList, head: Sequence[Place], expires_at: int, *, counted: bool
    ) -> tuple[EntryOffer, ...] | None:
        """The offers to the head of the list: a mapped class's, each the best block among the
        list's seats; a counted class's, their seats moved where they go first (None: the seats
        changed meanwhile and nothing was offered)."""
        if self.class_map is not None:
            return plan_mapped(head, self.class_map, self.rows, expires_at=expires_at, counted=counted)
        plan = plan_counted(head, fenced.lanes, expires_at=expires_at, counted=counted)
        if not plan.offers:
            return ()
        rebalance = Rebalance(fenced.key, lane_changes(plan.ledger_moves), plan.shard_moves)
        if rebalance and store.rebalance(rebalance) is not None:
            return None
        return plan.offers

    def rules(self, store: ListStore, key: SeatKey) -> SeatClassInventory | SeatRow | None:
        """The class's sale rules: copied on every row item of a mapped class, on a counted class's
        inventory item."""
        if self.class_map is not None:
            return next(iter(self.rows.values()), None)
        return store.read_inventory(key)

    def listed_return(self, waiting: WaitingList, *, empty: bool) -> ListedReturn:
        """These seats back on sale (guarded, when `empty`, on no entry waiting)."""
        lanes = len(waiting.lanes)
        if self.class_map is None:
            ledgers = {lane.lane: dict(lane.seats) for lane in waiting.lanes if lane.seats_held}
            return ListedReturn(waiting.key, ledgers=ledgers, empty=empty, lanes=lanes)
        rows = {
            row_id: positions
            for row_id, row in self.rows.items()
            if (positions := tuple(sorted(p for p, state in row.states.items() if state is SeatState.LISTED)))
        }
        pools = next(iter(self.rows.values())).pools if self.rows else ()
        return ListedReturn(waiting.key, rows=rows, pools=pools, empty=empty, lanes=lanes)


def _head(store: ListStore, waiting: WaitingList, fence: str, per_lane: int) -> list[Place]:
    """The places before `fence` in join order, as far as every lane's read covers: a lane read
    in full up to `per_lane` bounds the merge at its last key."""
    merged: list[Place] = []
    bound: str | None = None
    for lane in waiting.lanes:
        if not lane.waiting:
            continue
        places = store.read_places(waiting.key, lane.lane, after="", before=fence, limit=per_lane)
        merged.extend(places)
        if len(places) == per_lane and (bound is None or places[-1].order < bound):
            bound = places[-1].order
    merged.sort(key=lambda p: p.order)
    return [p for p in merged if bound is None or p.order <= bound]


@dataclass(slots=True)
class _Writing:
    """A round's offers written lane by lane, `OFFERS_PER_TRANSACTION` to a transaction, each
    counted against the class's per-customer `limit` (when it has one). A write refused for entries
    that changed meanwhile (left, or offered by another round) is written again without them; an
    entry whose customer the offer would take past the limit ends LIMIT_EXCEEDED instead, and its
    seats stay with the list for the next entry."""

    store: ListStore
    key: SeatKey
    now: int
    limit: int | None
    pools: tuple[str, ...] = ()  # a mapped class's: its offers hold seats of them too
    made: list[EntryOffer] = field(default_factory=list)
    ended: int = 0

    def run(self, offers: Sequence[EntryOffer]) -> list[EntryOffer]:
        by_lane: dict[int, list[EntryOffer]] = {}
        for offer in offers:
            by_lane.setdefault(offer.place.lane, []).append(offer)
        writes = [
            LaneWrite(
                self.key,
                lane,
                self.now,
                offers=tuple(mine[i : i + OFFERS_PER_TRANSACTION]),
                limit=self.limit,
                pools=self.pools,
            )
            for lane, mine in sorted(by_lane.items())
            for i in range(0, len(mine), OFFERS_PER_TRANSACTION)
        ]
        for _ in range(3):
            refused = self.store.write_lanes(writes)
            writes = [again for w, r in zip(writes, refused, strict=True) if (again := self._again(w, r))]
            if not writes:
                break
        return self.made

    def _again(self, write: LaneWrite, refusal: ListRefused | None) -> LaneWrite | None:
        """What of a lane's write is to be written again (None: nothing)."""
        if refusal is None:
            self.made.extend(write.offers)
            self.ended += len(write.ends)
            return None
        changed = set(refusal.records) | set(refusal.places_gone)
        kept = tuple(o for o in write.offers if not {o.place.reservation_id, o.place.order} & changed)
        over = tuple(o for o in kept if o.place.customer_id in refusal.counters)
        if not over and len(kept) == len(write.offers):
            return None  # refused for the lane itself: the next round reads it again
        ends = tuple(self._over_limit(o, refusal.counters[o.place.customer_id]) for o in over)
        again = replace(write, offers=tuple(o for o in kept if o not in over), ends=write.ends + ends)
        return again if again.offers or again.ends else None

    def _over_limit(self, offer: EntryOffer, counted: int | None) -> EntryEnd:
        assert self.limit is not None
        answer = answers.offer_over_limit(offer.place, self.limit, counted)
        return EntryEnd(offer.place, Outcome.LIMIT_EXCEEDED, self.now + OVER_LIMIT_RECORD_SECONDS, answer)


def _return_seats(store: ListStore, waiting: WaitingList, seats: _ListSeats, *, empty: bool) -> RoundResult:
    """The list's seats back on public sale (guarded, when `empty`, on no entry waiting)."""
    back = seats.listed_return(waiting, empty=empty)
    if store.return_listed(back) is not None:
        return RoundResult(stalled="an entry joined while the seats went back on sale")
    return RoundResult(seats_returned=back.seats)
