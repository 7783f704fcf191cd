"""The operator's reads of an event's ticket numbers (docs/guides/tickets.md): the audit and the list,
used by `seats tickets audit|list` and by `seats demo`."""

from __future__ import annotations

from typing import Any

from seat_inventory.models import Outcome, TicketSeries
from seat_tools.operator_commands import OperatorTable
from seat_tools.ticket_audit import audit_tickets

# How often the audit reads again when the issuer numbered while it read.
AUDIT_READS = 10


def audit_event(table: OperatorTable, event_id: str, *, allow_pending: bool = False) -> list[str]:
    """The defects of an event's ticket numbers (`ticket_audit.audit_tickets`), read from
    the table: its counters, its ledger and every record of it that was sold (a Scan).

    The three reads are not one snapshot: a batch the issuer commits between them would show as
    numbers past the counter. Every batch moves its series' counter in the same transaction, so
    the counters are read again after the rest; if they moved, everything is read again (at most
    `AUDIT_READS` times; then the last reading is audited, and a defect it shows may be such a
    race: run the audit again when the issuer is idle)."""
    fmt = table.read_ticket_format(event_id)
    counters = table.read_ticket_counters(event_id, fmt.series)
    for _ in range(AUDIT_READS):
        ledger = [b for s in range(fmt.series) for b in table.read_ledger(TicketSeries(event_id, s))]
        records = table.read_event_sales(event_id)
        counters_after = table.read_ticket_counters(event_id, fmt.series)
        if counters_after == counters:
            break
        counters = counters_after
    return audit_tickets(counters, records, ledger, allow_pending=allow_pending)


def list_tickets(
    table: OperatorTable, event_id: str, *, from_serial: int = 1, limit: int
) -> list[dict[str, Any]]:
    """The event's tickets in order (series by series) from serial `from_serial`, with their status."""
    fmt = table.read_ticket_format(event_id)
    rows: list[dict[str, Any]] = []
    for series in range(fmt.series):
        for batch in table.read_ledger(TicketSeries(event_id, series), from_serial=from_serial):
            for a in batch.assignments:
                for serial in a.numbers:
                    if serial >= from_serial and len(rows) < limit:
                        rows.append(
                            {
                                "ticket": fmt.label(series, serial),
                                "series": series,
                                "serial": serial,
                                "reservation_id": a.reservation_id,
                            }
                        )
            if len(rows) >= limit:
                break
    records = table.read_reservations(list(dict.fromkeys(r["reservation_id"] for r in rows)))
    for row in rows:
        record = records.get(row["reservation_id"])
        status = record.status if record is not None else None
        row["status"] = (
            "live" if status is Outcome.CONFIRMED else "void" if status is Outcome.CANCELLED else "?"
        )
    return rows
