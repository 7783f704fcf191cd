"""The audit of an event's ticket numbers (`seats tickets audit`, the demo and the tests): every
defect of its gapless series, one line each."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from seat_inventory.models import Outcome, ReservationRecord, TicketBatch


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
