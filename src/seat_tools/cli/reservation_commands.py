"""`seats reservation show ID`: the answer a reservation got and where it stands now."""

from __future__ import annotations

from typing import Any

import click

from seat_inventory.models import ReservationRecord, iso_utc
from seat_inventory.parsing import MAX_ID_LENGTH, id_problem
from seat_tools.cli.context import CliContext
from seat_tools.cli.output import OutputFormat, output_option, print_json, print_text

pass_cli = click.make_pass_decorator(CliContext)


def record_document(record: ReservationRecord) -> dict[str, Any]:
    """The record as `reservation show --output json` prints it."""
    answer = record.answer
    return {
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
    }


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
    record = obj.inventory_table().get_reservation_record(reservation_id)
    if record is None:
        raise click.ClickException(
            f"no reservation {reservation_id!r} is recorded: it was never sent or not processed yet,"
            " its record expired (TTL), or it was answered INVALID or UNKNOWN_RESERVATION, answers"
            " that are never recorded (`seats watch` shows them as they are published)"
        )
    document = record_document(record)
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
