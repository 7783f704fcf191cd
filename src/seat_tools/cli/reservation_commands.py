"""`seats reservation show ID`: the answer a reservation got and where it stands now."""

from __future__ import annotations

from typing import Any

import click

from seat_inventory.models import ReservationRecord, TicketFormat, iso_utc
from seat_inventory.parsing import MAX_ID_LENGTH, id_problem
from seat_tools.cli.context import CliContext
from seat_tools.cli.output import OutputFormat, output_option, print_json, print_text

pass_cli = click.make_pass_decorator(CliContext)


def record_document(record: ReservationRecord, fmt: TicketFormat | None = None) -> dict[str, Any]:
    """The record as `reservation show --output json` prints it (`tickets` printed with `fmt`)."""
    answer = record.answer
    document: dict[str, Any] = {
        "reservation_id": answer.reservation_id,
        "status": record.status.value,
        "type": answer.request_type.value if answer.request_type else None,
        "outcome": answer.outcome.value,
        "reason": answer.reason,
        "event_id": answer.event_id,
        "seat_class": answer.seat_class,
        "quantity": answer.quantity,
        "customer_id": answer.customer_id,
        "hold_expires_at": iso_utc(record.hold_expires_at) if record.hold_expires_at is not None else None,
        "customer_counted": record.customer_counted,
        "expiry_unpublished": record.awaiting_publication,
        "status_changed_at": record.status_changed_at,
        "message_id": answer.message_id,
        # Ticket numbers (docs/guides/tickets.md): serials in the event's series; `seats tickets list`
        # prints them with the event's prefix and width.
        "tickets": [
            (fmt or TicketFormat()).label(record.ticket_series or 0, n) for n in record.ticket_numbers
        ]
        if record.ticket_first is not None
        else None,
        "ticket_series": record.ticket_series,
        "awaiting_tickets": record.awaiting_tickets,
    }
    if record.seats:  # a mapped class (docs/guides/seat-maps.md)
        document["seats"] = list(record.seats)
    if record.answer.lines is not None:  # an order (docs/guides/orders.md): each line and where it took from
        document["lines"] = [
            {
                "seat_class": line.seat_class,
                "quantity": line.quantity,
                "shard": line.shard,
                "pools": list(line.pools),
                "customer_counted": line.customer_counted,
            }
            for line in record.answer.lines
        ]
    return document


@click.group()
def reservation() -> None:
    """Inspect reservations."""


@reservation.command("show")
@click.argument("reservation_id")
@output_option
@pass_cli
def show(obj: CliContext, reservation_id: str, output: OutputFormat) -> None:
    """Show RESERVATION_ID: its current status and the answer its reserve or hold message got."""
    problem = id_problem("reservation_id", reservation_id, MAX_ID_LENGTH)
    if problem:
        raise click.BadParameter(problem, param_hint="RESERVATION_ID")
    table = obj.inventory_table()
    record = table.get_reservation_record(reservation_id)
    if record is None:
        raise click.ClickException(
            f"no reservation {reservation_id!r} is recorded: it was never sent or not processed yet,"
            " its record expired (TTL), or it was answered INVALID or UNKNOWN_RESERVATION, answers"
            " that are never recorded (`seats watch` shows them as they are published)"
        )
    fmt = None
    if record.ticket_first is not None and record.answer.event_id:
        fmt = table.read_ticket_format(record.answer.event_id)
    document = record_document(record, fmt)
    if output is OutputFormat.JSON:
        print_json(document)
        return
    if output is OutputFormat.TEXT:
        print_text([document])
        return
    width = max(len(name) for name in document)
    for name, value in document.items():
        if value is not None:
            click.echo(f"{name:<{width}}  {value}")
