"""Gives every sold seat a ticket number: 1, 2, 3, ... per series, no gap, no duplicate.

See docs/guides/tickets.md.

A sale enters a sparse index in its own write (not a counter: that would bring back the one-item
ceiling the shards removed); the issuer, after the fact, publishes what the ledger's outbox holds,
finds the waiting sales, and numbers each series' oldest in batches, each ONE transaction: the
counter moved from the value read (guarded), every reservation's numbers (each guarded: it still
waits) and the batch in the ledger. A refusal (another issuer first) or a transient fault leaves
nothing written: the batch is formed again from the counter read again. Each batch's TICKETED
outcomes are published as soon as it commits. Cancelled tickets keep their numbers (void).
"""

from __future__ import annotations

import random
import zlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, field

from seat_inventory.logic import answers
from seat_inventory.logic.ports import Clock, LaneStarter, OutcomePublisher, TicketStore
from seat_inventory.models import (
    WHOLE_INDEX,
    IssuerLane,
    NumbersRefused,
    RetryableError,
    StoreInconsistency,
    TicketAssignment,
    TicketBatch,
    TicketFormat,
    TicketSeries,
    UnnumberedSale,
)

# A transaction holds at most 100 actions: the counter, the ledger entry and 98 reservations.
MAX_BATCH_SIZE = 98
BATCH_SIZE = MAX_BATCH_SIZE
# Attempts at one batch (lost races and transient faults) before the series waits for the next
# round; each transient fault waits a full-jitter back-off of up to BACKOFF_SECONDS * 2**attempt.
COMMIT_ATTEMPTS = 6
# After a round that found nothing, a round of the whole index queries one share of it in turn.
PROBE_SHARES = 8
# A sale another lane should have numbered that waited this long: the scheduled run numbers it
# (its lane did not run, or fell behind).
LANE_OVERDUE_MS = 30_000
# A started lane ends after this many rounds in a row found nothing of its own (its sale is over;
# the next scheduled run starts it again when one of its sales waits).
LANE_IDLE_ROUNDS = 10
BACKOFF_SECONDS = 0.05


def series_of(reservation_id: str, series_count: int) -> int:
    """The series a reservation is numbered in: stable across processes (CRC-32)."""
    return zlib.crc32(reservation_id.encode()) % series_count if series_count > 1 else 0


@dataclass(slots=True)
class IssueResult:
    """What one round of the issuer did.

    `numbered`/`tickets`: reservations and serials this round committed, in `batches`;
    `lost_races`: transactions a guard refused (another issuer was first); `faults`: transient
    faults met; `published`/`unpublished`: TICKETED outcomes SNS took or refused (refused ones
    stay in the outbox); `failed_series` names the series this round gave up on (they wait for
    the next round, nothing half-done); `oldest_wait_ms`: how long the oldest waiting sale found
    had waited when the round started (the numbering delay); `taken`: the sales found that this
    run numbers (a lane leaves the others').
    """

    numbered: int = 0
    tickets: int = 0
    batches: list[TicketBatch] = field(default_factory=list)
    lost_races: int = 0
    faults: int = 0
    published: int = 0
    unpublished: int = 0
    failed_series: list[str] = field(default_factory=list)
    found: int = 0
    taken: int = 0
    oldest_wait_ms: int = 0

    def add(self, series_run: _SeriesRun) -> None:
        """What one series' numbering did, counted into the round's."""
        self.batches.extend(series_run.committed)
        self.lost_races += series_run.lost_races
        self.faults += series_run.faults
        self.published += series_run.published
        self.unpublished += series_run.unpublished
        if series_run.error is not None:
            self.failed_series.append(series_run.error)
        self.numbered = sum(len(b.assignments) for b in self.batches)
        self.tickets = sum(b.next_after - b.first for b in self.batches)


def plan_batch(series: TicketSeries, first: int, sales: Sequence[UnnumberedSale]) -> TicketBatch:
    """The sales numbered in order from `first`, each getting as many serials as it has seats."""
    assignments: list[TicketAssignment] = []
    serial = first
    for sale in sales:
        assignments.append(TicketAssignment(sale.reservation_id, serial, sale.quantity))
        serial += sale.quantity
    return TicketBatch(series, first, tuple(assignments))


@dataclass(slots=True)
class _SeriesRun:
    committed: list[TicketBatch] = field(default_factory=list)
    lost_races: int = 0
    faults: int = 0
    published: int = 0
    unpublished: int = 0
    error: str | None = None


def number_series(
    store: TicketStore,
    clock: Clock,
    series: TicketSeries,
    sales: Sequence[UnnumberedSale],
    *,
    batch_size: int = BATCH_SIZE,
    on_commit: Callable[[TicketBatch, _SeriesRun], None] | None = None,
    deadline: float | None = None,
) -> _SeriesRun:
    """Numbers `sales` (oldest first) in `series`, one guarded transaction per batch; `on_commit`
    is called with each batch as soon as it committed (the issuer publishes it there). Once the
    clock reaches `deadline` no further batch starts (the series' first always does, so a round
    that started late still makes progress): the sales left wait, untouched, for the next run."""
    if not 1 <= batch_size <= MAX_BATCH_SIZE:
        raise ValueError(f"batch_size must be 1..{MAX_BATCH_SIZE}, got {batch_size}")
    numbering = _Numbering(
        store, clock, series, sorted(sales, key=lambda s: (s.sold_at_ms, s.reservation_id))
    )
    try:
        numbering.next_serial = store.read_next_number(series)
    except RetryableError as exc:
        numbering.run.faults += 1
        return numbering.fail(repr(exc))
    while numbering.queue and (deadline is None or not numbering.run.committed or clock.now() < deadline):
        batch = plan_batch(series, numbering.next_serial, numbering.queue[:batch_size])
        try:
            refused = store.commit_numbers(batch)
        except RetryableError as exc:
            if not numbering.faulted(exc):
                return numbering.run
            continue
        if refused is None:
            numbering.committed(batch, on_commit)
        elif not numbering.refused(refused):
            return numbering.run
    return numbering.run


@dataclass(slots=True)
class _Numbering:
    """One series' numbering in progress: the sales left, the next serial, the attempts in a row."""

    store: TicketStore
    clock: Clock
    series: TicketSeries
    queue: list[UnnumberedSale]
    next_serial: int = 1
    attempts: int = 0
    run: _SeriesRun = field(default_factory=_SeriesRun)

    def fail(self, why: str) -> _SeriesRun:
        self.run.error = f"{self.series.event_id} series {self.series.series}: {why}"
        return self.run

    def committed(
        self, batch: TicketBatch, on_commit: Callable[[TicketBatch, _SeriesRun], None] | None
    ) -> None:
        self.run.committed.append(batch)
        if on_commit is not None:
            on_commit(batch, self.run)
        self.next_serial = batch.next_after
        self.queue = self.queue[len(batch.assignments) :]
        self.attempts = 0

    def faulted(self, exc: RetryableError) -> bool:
        """A transient fault: the batch may or may not have committed. The counter is read again;
        if it did, the guards of its reservations refuse them now and they are left out (their
        TICKETED outcomes are published from the ledger's outbox). False once given up."""
        self.run.faults += 1
        self.attempts += 1
        if self.attempts >= COMMIT_ATTEMPTS or isinstance(exc, StoreInconsistency):
            self.fail(repr(exc))
            return False
        self.clock.sleep(random.uniform(0, BACKOFF_SECONDS * 2**self.attempts))
        try:
            self.next_serial = self.store.read_next_number(self.series)
        except RetryableError as again:
            self.fail(repr(again))
            return False
        return True

    def refused(self, refused: NumbersRefused) -> bool:
        """Another issuer was first: numbered from its counter, without the sales it numbered.
        False once given up."""
        self.run.lost_races += 1
        self.attempts += 1
        if refused.counter_next is None and not refused.not_waiting:
            self.fail("refused without a reason")
            return False
        if refused.counter_next is not None:
            self.next_serial = refused.counter_next
        self.queue = [s for s in self.queue if s.reservation_id not in refused.not_waiting]
        if self.attempts >= 4 * COMMIT_ATTEMPTS:
            self.fail("kept losing races")
            return False
        return True


def _publish(
    store: TicketStore,
    publisher: OutcomePublisher,
    batches: Sequence[TicketBatch],
    formats: Mapping[str, TicketFormat],
    result: IssueResult | _SeriesRun,
) -> None:
    """Publishes the batches' TICKETED outcomes and takes those SNS took whole out of the outbox
    (a batch with a refused outcome stays there: a later round publishes it again)."""
    if not batches:
        return
    outcomes = {b: answers.ticketed(b, formats[b.series.event_id]) for b in batches}
    refused = {o.reservation_id for o in publisher.publish([o for os in outcomes.values() for o in os])}
    done = [b for b in batches if not any(a.reservation_id in refused for a in b.assignments)]
    result.unpublished += sum(len(os) for b, os in outcomes.items() if b not in done)
    result.published += sum(len(outcomes[b]) for b in done)
    store.mark_batches_published(done)


@dataclass(slots=True)
class LaneFanOut:
    """The scheduled run of an issuer with `count` lanes (docs/guides/tickets.md, "Lanes"): it is
    lane 0, and starts the others (each to number until `until`) as soon as it finds a sale of
    theirs waiting. Until every one of them started it takes the whole index (a lane that did
    start only races it, which the counters' guards make safe), then its own lane's share."""

    starter: LaneStarter
    count: int
    until: float
    pending: list[int] = field(init=False)
    own: IssuerLane = field(init=False)

    def __post_init__(self) -> None:
        self.own = IssuerLane(0, self.count)
        self.pending = list(range(1, self.count))

    @property
    def lane(self) -> IssuerLane:
        """The lane whose sales and outbox this round reads."""
        return WHOLE_INDEX if self.pending else self.own

    def start_for(self, found: Sequence[tuple[UnnumberedSale, int]]) -> None:
        """Starts the other lanes once a sale one of them numbers waits (a sale and its series;
        those not started stay pending)."""
        if self.pending and any(self._anothers(sale, series) for sale, series in found):
            self.pending = self.starter.start_lanes(self.pending, self.count, self.until)

    def _anothers(self, sale: UnnumberedSale, series: int) -> bool:
        """Whether another lane numbers the sale: its buckets' lane, if the series is that lane's."""
        finder = IssuerLane.of_sale(sale.reservation_id, self.count)
        return finder != self.own and finder.takes_series(series)

    def takes(self, sale: UnnumberedSale, series: int, now_ms: int) -> bool:
        """Whether this run numbers `sale` (of series `series`): every sale until every lane
        started; then its own lane's, and those no started lane numbers: a sale whose series is
        not the lane's its bucket is (its event's series are not a multiple of the lanes), or one
        that waited past LANE_OVERDUE_MS (its lane did not run)."""
        if self.pending or not self._anothers(sale, series):
            return True
        return now_ms - sale.sold_at_ms > LANE_OVERDUE_MS


def _reads(lane: IssuerLane | LaneFanOut) -> IssuerLane:
    """The lane whose sales and outbox a round of `lane` reads."""
    return lane.lane if isinstance(lane, LaneFanOut) else lane


def _takes(lane: IssuerLane | LaneFanOut, sale: UnnumberedSale, series: int, now_ms: int) -> bool:
    """Whether a run of `lane` numbers `sale`: a started lane its own series only (the rest of
    its buckets' sales are the scheduled run's); the whole index every sale."""
    if isinstance(lane, LaneFanOut):
        return lane.takes(sale, series, now_ms)
    return lane.takes_series(series)


def _taken_by_series(
    lane: IssuerLane | LaneFanOut, found: Sequence[tuple[UnnumberedSale, int]], now_ms: int
) -> dict[TicketSeries, list[UnnumberedSale]]:
    """The sales found (each with its series) that a run of `lane` numbers, by series (a fan-out
    first starts the other lanes if one of theirs waits)."""
    if isinstance(lane, LaneFanOut):
        lane.start_for(found)
    groups: dict[TicketSeries, list[UnnumberedSale]] = {}
    for sale, series in found:
        if _takes(lane, sale, series, now_ms):
            groups.setdefault(TicketSeries(sale.event_id, series), []).append(sale)
    return groups


def _find_waiting(
    store: TicketStore, now_ms: int, limit: int, lane: IssuerLane, result: IssueResult
) -> list[UnnumberedSale]:
    """The round's waiting sales of `lane`, counted into `result`."""
    waiting = store.find_unnumbered(limit, lane)
    result.found = len(waiting)
    result.oldest_wait_ms = max((now_ms - s.sold_at_ms for s in waiting), default=0)
    return waiting


def issue_tickets(
    store: TicketStore,
    publisher: OutcomePublisher,
    clock: Clock,
    *,
    limit: int,
    batch_size: int = BATCH_SIZE,
    executor: Executor | None = None,
    deadline: float | None = None,
    lane: IssuerLane | LaneFanOut = WHOLE_INDEX,
    probe: IssuerLane | None = None,
) -> IssueResult:
    """One round of the issuer: the outbox, then at most `limit` waiting sales, each batch's
    outcomes published as soon as it committed; of `lane`'s sales and series only (a
    `LaneFanOut`: the lane it takes this round, and it starts the other lanes when they have work),
    or of the index's share `probe` only.

    With an `executor`, the series are numbered concurrently (each series by one task: a series
    is a sequence, its batches follow one another; the task publishes each batch it committed
    before numbering the next). A series whose transactions still fail after its attempts is
    named in `failed_series`; its sales wait for the next round, untouched. Past `deadline` no
    series starts another batch after its first (the run ends on time; the next run takes the
    rest).
    """
    if not 1 <= batch_size <= MAX_BATCH_SIZE:
        raise ValueError(f"batch_size must be 1..{MAX_BATCH_SIZE}, got {batch_size}")
    result = IssueResult()
    formats: dict[str, TicketFormat] = {}

    def format_of(event_id: str) -> TicketFormat:
        if event_id not in formats:
            formats[event_id] = store.read_ticket_format(event_id)
        return formats[event_id]

    outbox = store.find_unpublished_batches(limit, _reads(lane))
    for batch in outbox:
        format_of(batch.series.event_id)
    _publish(store, publisher, outbox, formats, result)

    now_ms = int(clock.now() * 1000)
    found = [
        (sale, series_of(sale.reservation_id, format_of(sale.event_id).series))
        for sale in _find_waiting(store, now_ms, limit, probe or _reads(lane), result)
    ]
    groups = _taken_by_series(lane, found, now_ms)
    result.taken = sum(len(sales) for sales in groups.values())

    def announce(batch: TicketBatch, series_run: _SeriesRun) -> None:
        # Each task counts into its own _SeriesRun (the tasks may be threads); `formats` is only read.
        _publish(store, publisher, [batch], formats, series_run)

    def run(item: tuple[TicketSeries, list[UnnumberedSale]]) -> _SeriesRun:
        return number_series(
            store, clock, item[0], item[1], batch_size=batch_size, on_commit=announce, deadline=deadline
        )

    mapper: Callable[..., Iterable[_SeriesRun]] = executor.map if executor is not None else map
    for series_run in mapper(run, list(groups.items())):
        result.add(series_run)
    return result


def _probe(lane: IssuerLane | LaneFanOut, quiet: int) -> IssuerLane | None:
    """What a round of the whole index queries after `quiet` rounds that found nothing: one of
    PROBE_SHARES shares of its buckets in turn (a sale of more than a few sales shows in each share
    at once; a smaller one waits at most PROBE_SHARES rounds); None: the whole, or a lane's own."""
    if quiet == 0 or _reads(lane) != WHOLE_INDEX:
        return None
    return IssuerLane(quiet % PROBE_SHARES, PROBE_SHARES)


def run_issuer(
    store: TicketStore,
    publisher: OutcomePublisher,
    clock: Clock,
    *,
    limit: int,
    until: float,
    idle_seconds: float = 1.0,
    batch_size: int = BATCH_SIZE,
    executor: Executor | None = None,
    lane: IssuerLane | LaneFanOut = WHOLE_INDEX,
) -> list[IssueResult]:
    """Rounds of `issue_tickets` of `lane` until the clock reaches `until` (the scheduled function
    runs for the minute between two schedules, so a sale waits about `idle_seconds` plus a round,
    not a minute). A round that found fewer than `limit` waits `idle_seconds`; one that found
    `limit` or more goes on at once. No batch starts after `until`, so the run ends about when the
    next scheduled run starts (a backlog's long round does not overlap it: two runs on one series
    only lose races to each other)."""
    rounds: list[IssueResult] = []
    quiet = idle = 0  # rounds in a row that found nothing, that numbered nothing
    while True:
        result = issue_tickets(
            store,
            publisher,
            clock,
            limit=limit,
            batch_size=batch_size,
            executor=executor,
            deadline=until,
            lane=lane,
            probe=_probe(lane, quiet),
        )
        rounds.append(result)
        quiet = 0 if result.found else quiet + 1
        idle = 0 if result.taken else idle + 1
        if isinstance(lane, IssuerLane) and lane.count > 1 and idle >= LANE_IDLE_ROUNDS:
            return rounds
        if clock.now() + idle_seconds >= until:
            return rounds
        if result.found < limit:
            clock.sleep(idle_seconds)


# ---------------------------------------------------------------------------- audit
