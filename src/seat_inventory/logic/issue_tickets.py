"""Gives every sold seat a ticket number: 1, 2, 3, ... per series, no gap, no duplicate.

See docs/guides/tickets.md.

Numbers are not given in the reservation's transaction (that would add one counter item to every
sale and bring back the one-item ceiling the inventory's shards removed). A sale enters a sparse
index when it is sold (its CONFIRMED record, or the confirm of a hold, in the sale's own write);
the issuer, after the fact:

1. publishes the TICKETED outcomes of ledger batches an earlier run committed but did not announce;
2. finds sold reservations waiting for numbers (`TicketStore.find_unnumbered`), groups them by
   event and series (`series_of`: a CRC-32 of the reservation id modulo the event's series);
3. per series (the series at once, each series one task): reads the counter, then numbers the
   oldest sales in batches of `BATCH_SIZE`, each ONE transaction (`commit_numbers`) that moves the
   counter from the value read (guarded) to that value plus the batch's seats, writes every
   reservation's numbers (each guarded: it must still wait for them) and keeps the batch in the
   ledger; all or nothing. A guard that failed (another issuer numbered first) leaves nothing
   written: the counter is taken as it is now, the reservations numbered meanwhile are left out,
   and the batch is formed again. A transient fault (the transaction may or may not have
   committed) is the same after a fresh read;
4. as soon as a batch commits, its series' task publishes the batch's TICKETED outcomes and takes
   it out of the ledger's outbox, then numbers its next batch (pipelined: the round does not wait
   for every series before announcing anything, and the publications of all series overlap).

So a crash between any two steps leaves either a whole batch (numbers, counter, ledger) or
nothing, a redelivery or a second issuer can never number a reservation twice (its guard), and
no number is skipped (the counter moves only with the numbers it hands out). Cancelled tickets
keep their numbers (void); holds get numbers only when confirmed (only sales enter the index).
"""

from __future__ import annotations

import random
import zlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, field

from seat_inventory.logic.ports import Clock, OutcomePublisher, TicketStore
from seat_inventory.models import (
    Outcome,
    RequestType,
    ReservationOutcome,
    ReservationRecord,
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
    had waited when the round started (the numbering delay).
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
    oldest_wait_ms: int = 0


def plan_batch(series: TicketSeries, first: int, sales: Sequence[UnnumberedSale]) -> TicketBatch:
    """The sales numbered in order from `first`, each getting as many serials as it has seats."""
    assignments: list[TicketAssignment] = []
    serial = first
    for sale in sales:
        assignments.append(TicketAssignment(sale.reservation_id, serial, sale.quantity))
        serial += sale.quantity
    return TicketBatch(series, first, tuple(assignments))


def ticketed_outcomes(batch: TicketBatch, fmt: TicketFormat) -> list[ReservationOutcome]:
    """The TICKETED outcomes of a batch (one per reservation, its numbers formatted)."""
    return [
        ReservationOutcome(
            reservation_id=a.reservation_id,
            outcome=Outcome.TICKETED,
            reason=f"{a.quantity} ticket(s) numbered in series {batch.series.series}",
            event_id=batch.series.event_id,
            seat_class=None,
            quantity=a.quantity,
            customer_id=None,
            request_type=RequestType.TICKET,
            tickets=tuple(fmt.label(batch.series.series, n) for n in a.numbers),
        )
        for a in batch.assignments
    ]


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
    run = _SeriesRun()
    queue = sorted(sales, key=lambda s: (s.sold_at_ms, s.reservation_id))
    try:
        next_serial = store.read_next_number(series)
    except RetryableError as exc:
        run.faults += 1
        run.error = f"{series.event_id} series {series.series}: {exc!r}"
        return run
    attempts = 0
    while queue and (deadline is None or not run.committed or clock.now() < deadline):
        batch = plan_batch(series, next_serial, queue[:batch_size])
        try:
            refused = store.commit_numbers(batch)
        except RetryableError as exc:
            # It may or may not have committed: read the counter again; if it did, the guards of
            # its reservations refuse them now and they are left out (their TICKETED outcomes
            # are published from the ledger's outbox).
            run.faults += 1
            attempts += 1
            if attempts >= COMMIT_ATTEMPTS or isinstance(exc, StoreInconsistency):
                run.error = f"{series.event_id} series {series.series}: {exc!r}"
                return run
            clock.sleep(random.uniform(0, BACKOFF_SECONDS * 2**attempts))
            try:
                next_serial = store.read_next_number(series)
            except RetryableError as again:
                run.error = f"{series.event_id} series {series.series}: {again!r}"
                return run
            continue
        if refused is None:
            run.committed.append(batch)
            if on_commit is not None:
                on_commit(batch, run)
            next_serial = batch.next_after
            queue = queue[len(batch.assignments) :]
            attempts = 0
            continue
        run.lost_races += 1
        attempts += 1
        if refused.counter_next is None and not refused.not_waiting:
            run.error = f"{series.event_id} series {series.series}: refused without a reason"
            return run
        if refused.counter_next is not None:
            next_serial = refused.counter_next
        queue = [s for s in queue if s.reservation_id not in refused.not_waiting]
        if attempts >= 4 * COMMIT_ATTEMPTS:
            run.error = f"{series.event_id} series {series.series}: kept losing races"
            return run
    return run


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
    outcomes = {b: ticketed_outcomes(b, formats[b.series.event_id]) for b in batches}
    refused = {o.reservation_id for o in publisher.publish([o for os in outcomes.values() for o in os])}
    done = [b for b in batches if not any(a.reservation_id in refused for a in b.assignments)]
    result.unpublished += sum(len(os) for b, os in outcomes.items() if b not in done)
    result.published += sum(len(outcomes[b]) for b in done)
    store.mark_batches_published(done)


def issue_tickets(
    store: TicketStore,
    publisher: OutcomePublisher,
    clock: Clock,
    *,
    limit: int,
    batch_size: int = BATCH_SIZE,
    executor: Executor | None = None,
    deadline: float | None = None,
) -> IssueResult:
    """One round of the issuer: the outbox, then at most `limit` waiting sales, each batch's
    outcomes published as soon as it committed.

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

    outbox = store.find_unpublished_batches(limit)
    for batch in outbox:
        format_of(batch.series.event_id)
    _publish(store, publisher, outbox, formats, result)

    now_ms = int(clock.now() * 1000)
    waiting = store.find_unnumbered(limit)
    result.found = len(waiting)
    result.oldest_wait_ms = max((now_ms - s.sold_at_ms for s in waiting), default=0)
    groups: dict[TicketSeries, list[UnnumberedSale]] = {}
    for sale in waiting:
        fmt = format_of(sale.event_id)
        key = TicketSeries(sale.event_id, series_of(sale.reservation_id, fmt.series))
        groups.setdefault(key, []).append(sale)

    def announce(batch: TicketBatch, series_run: _SeriesRun) -> None:
        # Each task counts into its own _SeriesRun (the tasks may be threads); `formats` is only read.
        _publish(store, publisher, [batch], formats, series_run)

    def run(item: tuple[TicketSeries, list[UnnumberedSale]]) -> _SeriesRun:
        return number_series(
            store, clock, item[0], item[1], batch_size=batch_size, on_commit=announce, deadline=deadline
        )

    mapper: Callable[..., Iterable[_SeriesRun]] = executor.map if executor is not None else map
    for series_run in mapper(run, list(groups.items())):
        result.batches.extend(series_run.committed)
        result.lost_races += series_run.lost_races
        result.faults += series_run.faults
        result.published += series_run.published
        result.unpublished += series_run.unpublished
        if series_run.error is not None:
            result.failed_series.append(series_run.error)
    result.numbered = sum(len(b.assignments) for b in result.batches)
    result.tickets = sum(b.next_after - b.first for b in result.batches)
    return result


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
) -> list[IssueResult]:
    """Rounds of `issue_tickets` until the clock reaches `until` (the scheduled function runs for
    the minute between two schedules, so a sale waits about `idle_seconds` plus a round, not a
    minute). A round that found fewer than `limit` waits `idle_seconds`; one that found `limit`
    or more goes on at once. No batch starts after `until`, so the run ends about when the next
    scheduled run starts (a backlog's long round does not overlap it: two runs on one series
    only lose races to each other)."""
    rounds: list[IssueResult] = []
    while True:
        result = issue_tickets(
            store, publisher, clock, limit=limit, batch_size=batch_size, executor=executor, deadline=until
        )
        rounds.append(result)
        if clock.now() + idle_seconds >= until:
            return rounds
        if result.found < limit:
            clock.sleep(idle_seconds)


# ---------------------------------------------------------------------------- audit


def _ranges(numbers: Sequence[int]) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    for n in sorted(numbers):
        if spans and spans[-1][1] == n - 1:
            spans[-1] = (spans[-1][0], n)
        else:
            spans.append((n, n))
    return spans


def _span(first: int, last: int) -> str:
    return f"{first}" if first == last else f"{first}..{last}"


def audit_tickets(
    counters: Mapping[int, int],
    records: Sequence[ReservationRecord],
    ledger: Sequence[TicketBatch],
    *,
    allow_pending: bool = False,
) -> list[str]:
    """Every defect of an event's ticket numbers, one line each (empty: the sequence is sound).

    `counters` maps each series to its next serial (N + 1); `records` are the event's sold,
    numbered or waiting reservations; `ledger` its committed batches. Checks: each of 1..N of each
    series is on exactly one ticket; nothing past N; every ticket numbered is live (CONFIRMED) or
    void (CANCELLED); every sale is numbered (or, with `allow_pending`, waits for the issuer);
    the ledger's batches follow one another from 1 to N and agree with the records.
    """
    owners: dict[tuple[int, int], list[str]] = {}
    numbered: dict[str, ReservationRecord] = {}
    defects = _record_defects(records, owners, numbered, allow_pending=allow_pending)
    defects.extend(_sequence_defects(counters, owners))
    defects.extend(_ledger_defects(counters, ledger, numbered))
    return defects


def _record_defects(
    records: Sequence[ReservationRecord],
    owners: dict[tuple[int, int], list[str]],
    numbered: dict[str, ReservationRecord],
    *,
    allow_pending: bool,
) -> list[str]:
    """Each record's own defects; fills `owners` ((series, number) -> reservation ids) and `numbered`."""
    defects: list[str] = []
    for record in records:
        rid = record.reservation_id
        if record.ticket_first is not None:
            series = record.ticket_series or 0
            numbered[rid] = record
            if record.status not in (Outcome.CONFIRMED, Outcome.CANCELLED):
                defects.append(
                    f"{rid}: numbered {_span(record.ticket_numbers[0], record.ticket_numbers[-1])}"
                    f" in series {series} but its status is {record.status.value}"
                )
            if record.awaiting_tickets:
                defects.append(f"{rid}: numbered and still waiting for numbers")
            for n in record.ticket_numbers:
                owners.setdefault((series, n), []).append(rid)
        elif record.awaiting_tickets:
            if not allow_pending:
                defects.append(f"{rid}: sold, waiting for the issuer (not numbered yet)")
        elif record.status is Outcome.CONFIRMED:
            defects.append(f"{rid}: sold ({record.status.value}) but not numbered nor waiting for numbers")
        elif record.status is Outcome.CANCELLED and record.answer.outcome is Outcome.CONFIRMED:
            defects.append(f"{rid}: a cancelled sale without a (void) number")
    return defects


def _sequence_defects(counters: Mapping[int, int], owners: Mapping[tuple[int, int], list[str]]) -> list[str]:
    """Gaps, numbers on several tickets and numbers past each series' counter."""
    defects: list[str] = []
    for series in sorted(set(counters) | {s for s, _ in owners}):
        top = counters.get(series, 1) - 1
        missing = [n for n in range(1, top + 1) if (series, n) not in owners]
        defects.extend(f"series {series}: {_span(a, b)} on no ticket (gap)" for a, b in _ranges(missing))
        for (s, n), rids in sorted(owners.items()):
            if s != series:
                continue
            if len(rids) > 1:
                defects.append(f"series {series}: {n} on {len(rids)} tickets ({', '.join(sorted(rids))})")
            if n > top:
                defects.append(f"series {series}: {n} on {rids[0]} is past the counter's last number {top}")
    return defects


def _ledger_defects(
    counters: Mapping[int, int],
    ledger: Sequence[TicketBatch],
    numbered: Mapping[str, ReservationRecord],
) -> list[str]:
    """The ledger's batches must follow one another from 1 to the counter and agree with the records."""
    defects: list[str] = []
    by_series: dict[int, list[TicketBatch]] = {}
    for batch in ledger:
        by_series.setdefault(batch.series.series, []).append(batch)
    for series in sorted(set(by_series) | set(counters)):
        expected = 1
        for batch in sorted(by_series.get(series, []), key=lambda b: b.first):
            if batch.first != expected:
                defects.append(
                    f"series {series}: ledger batch at {batch.first} follows one ending at {expected - 1}"
                )
            expected = batch.next_after
            for a in batch.assignments:
                owner = numbered.get(a.reservation_id)
                if owner is None or owner.ticket_series != series or owner.ticket_first != a.first:
                    defects.append(
                        f"series {series}: ledger gives {_span(a.first, a.numbers[-1])}"
                        f" to {a.reservation_id},"
                        " its record does not say so"
                    )
        if expected != counters.get(series, 1):
            defects.append(
                f"series {series}: ledger ends at {expected - 1}, counter at {counters.get(series, 1) - 1}"
            )
    return defects
