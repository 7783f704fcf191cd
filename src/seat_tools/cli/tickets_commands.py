"""`seats tickets configure|issue|list|audit`: ticket numbers per event (docs/guides/tickets.md)."""

from __future__ import annotations

import click

from seat_inventory.logic.issue_tickets import issue_tickets
from seat_inventory.models import (
    MAX_TICKET_PREFIX,
    MAX_TICKET_SERIES,
    MAX_TICKET_WIDTH,
    TicketFormat,
)
from seat_inventory.parsing import MAX_ID_LENGTH, id_problem
from seat_inventory.publishing.sns_publisher import SnsOutcomePublisher
from seat_inventory.settings import DEFAULT_ISSUE_LIMIT
from seat_inventory.wiring import SystemClock
from seat_tools.cli.context import CliContext
from seat_tools.cli.output import OutputFormat, output_option, print_json, print_text
from seat_tools.ticket_reports import audit_event, list_tickets

pass_cli = click.make_pass_decorator(CliContext)


def _check_event(event_id: str) -> None:
    problem = id_problem("event_id", event_id, MAX_ID_LENGTH)
    if problem:
        raise click.BadParameter(problem, param_hint="EVENT_ID")


@click.group()
def tickets() -> None:
    """Ticket numbers: every sold seat gets 1, 2, 3, ... per series, no gap, no duplicate."""


@tickets.command("configure")
@click.argument("event_id")
@click.option(
    "--series",
    type=click.IntRange(1, MAX_TICKET_SERIES),
    default=1,
    show_default=True,
    help="Number of series (each its own 1..N); more series number faster (docs/guides/tickets.md).",
)
@click.option(
    "--ticket-prefix", "prefix", default="", help=f"Printed before each number (at most {MAX_TICKET_PREFIX})."
)
@click.option(
    "--width",
    type=click.IntRange(0, MAX_TICKET_WIDTH),
    default=0,
    show_default=True,
    help="Zero-pad serials.",
)
@pass_cli
def configure(obj: CliContext, event_id: str, series: int, prefix: str, width: int) -> None:
    """Set how EVENT_ID numbers its tickets: `PREFIX` + (`SERIES-` when several) + serial.

    The series count cannot change once a ticket was numbered; prefix and width can.
    """
    _check_event(event_id)
    if len(prefix) > MAX_TICKET_PREFIX or not all(c.isascii() and c.isprintable() for c in prefix):
        raise click.BadParameter(
            f"at most {MAX_TICKET_PREFIX} printable ASCII characters, got {prefix!r}",
            param_hint="--ticket-prefix",
        )
    fmt = TicketFormat(series=series, prefix=prefix, width=width)
    if not obj.inventory_table().write_ticket_format(event_id, fmt):
        raise click.ClickException(
            f"{event_id} already numbered tickets with another series count; a sale's series cannot change"
        )
    click.echo(f"{event_id}: {series} series, numbers like {fmt.label(series - 1, 1)}")


@tickets.command("issue")
@click.option("--limit", type=click.IntRange(min=1), default=DEFAULT_ISSUE_LIMIT, show_default=True)
@pass_cli
def issue(obj: CliContext, limit: int) -> None:
    """Number waiting sales now (one round of what the scheduled IssueTicketsFunction does).

    Safe while the function runs: each sale is numbered once.
    """
    resources = obj.resources()
    resources.require("table_name", "outcomes_topic_arn")
    assert resources.outcomes_topic_arn is not None
    publisher = SnsOutcomePublisher(obj.client("sns"), resources.outcomes_topic_arn)
    result = issue_tickets(obj.inventory_table(), publisher, SystemClock(), limit=limit)
    click.echo(
        f"numbered {result.numbered} reservation(s), {result.tickets} ticket(s) in {len(result.batches)}"
        f" transaction(s); {result.lost_races} race(s) lost; {result.unpublished} outcome(s) left to publish"
    )
    for failed in result.failed_series:
        click.echo(f"left for the next run: {failed}", err=True)
    if result.failed_series or result.unpublished:
        raise SystemExit(1)


@tickets.command("list")
@click.argument("event_id")
@click.option(
    "--from", "from_serial", type=click.IntRange(min=1), default=1, show_default=True, help="First serial."
)
@click.option("--limit", type=click.IntRange(min=1), default=1000, show_default=True)
@output_option
@pass_cli
def list_command(obj: CliContext, event_id: str, from_serial: int, limit: int, output: OutputFormat) -> None:
    """Print EVENT_ID's tickets from serial K on (each series in turn): number, reservation, live or void."""
    _check_event(event_id)
    rows = list_tickets(obj.inventory_table(), event_id, from_serial=from_serial, limit=limit)
    if output is OutputFormat.JSON:
        print_json(rows)
    elif output is OutputFormat.TEXT:
        print_text(rows)
    else:
        for row in rows:
            click.echo(f"{row['ticket']}  {row['reservation_id']}  {row['status']}")


@tickets.command("audit")
@click.argument("event_id")
@click.option(
    "--allow-pending",
    is_flag=True,
    help="Sales still waiting for the issuer are not defects (during a sale).",
)
@pass_cli
def audit(obj: CliContext, event_id: str, allow_pending: bool) -> None:
    """Check EVENT_ID's numbers: each series 1..N once each, every sale numbered, every number on
    a live or void ticket, nothing past N, the ledger in agreement. One line per defect; exit 1 on any.

    Reads the whole table (a Scan): an operator's check, not for the on-sale's peak.
    """
    _check_event(event_id)
    defects = audit_event(obj.inventory_table(), event_id, allow_pending=allow_pending)
    for defect in defects:
        click.echo(defect)
    if defects:
        raise SystemExit(1)
    click.echo(f"{event_id}: ticket numbers sound")
