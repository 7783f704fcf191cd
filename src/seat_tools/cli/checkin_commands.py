"""`seats checkin ...` and the gate's `seats tickets ...` commands (docs/guides/checkin.md).

- `seats tickets keygen|keys`: the ticket key ring in SSM (make, rotate, retire);
- `seats tickets show|transfer`: a reservation's tickets with their secrets; pass one on;
- `seats checkin list|lists|scan|export|offline-scan|upload|conflicts`: check-in lists, a scan as a
  gate makes it, what offline scanners take with them, a reference offline scanner, its upload,
  and the conflicts found.

They run the service's own logic (`logic.checkin`, `logic.transfer_tickets`) against the table, as
the gate's function does.
"""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from typing import Any

import click

from seat_inventory.dal.gate_table import GateTable
from seat_inventory.gate_models import GATE_ID, CheckinList, Direction, ScanAnswer
from seat_inventory.logic.checkin import Gate, ScanRequest, check_in, export_for_scanners, upload_scans
from seat_inventory.logic.ticket_credentials import (
    TicketKeyError,
    TicketKeyRing,
    new_secret,
    parse_key_ring,
    promote,
    retire,
    ring_text,
    with_key,
)
from seat_inventory.logic.transfer_tickets import TransferRequest, reservation_tickets, transfer_ticket
from seat_inventory.publishing.sns_publisher import SnsOutcomePublisher
from seat_inventory.wiring import SystemClock
from seat_tools.cli.context import CliContext
from seat_tools.cli.output import OutputFormat, output_option, print_json, print_text
from seat_tools.cli.tickets_commands import tickets
from seat_tools.gate_scanner import ExportError, OfflineScanner

pass_cli = click.make_pass_decorator(CliContext)
PARAMETER_HELP = "The SSM parameter holding the ticket key ring (TicketKeyParameterName)."


# ------------------------------------------------------------------------------ keys


def _read_ring(obj: CliContext, name: str) -> TicketKeyRing:
    # A missing parameter is reported by the CLI's error mapping, as any AWS refusal.
    value = obj.client("ssm").get_parameter(Name=name, WithDecryption=True)["Parameter"]["Value"]
    try:
        return parse_key_ring(value)
    except TicketKeyError as exc:
        raise click.ClickException(f"SSM parameter {name}: {exc}") from exc


def _put_ring(obj: CliContext, name: str, ring: TicketKeyRing) -> None:
    obj.client("ssm").put_parameter(Name=name, Value=ring_text(ring), Type="SecureString", Overwrite=True)


@tickets.command("keygen")
@click.option("--key-id", required=True, help="Id of the new key (1-16 of A-Z a-z 0-9 _ -), e.g. 2027-01.")
@click.option("--put-parameter", "parameter", help="Write the ring to this SSM SecureString parameter.")
@click.option(
    "--keep-previous", is_flag=True, help="With --put-parameter: keep the parameter's keys (rotation)."
)
@click.option(
    "--no-promote",
    is_flag=True,
    help="With --keep-previous: add the key verifying only (export it to scanners, then promote it).",
)
@pass_cli
def keygen(
    obj: CliContext, key_id: str, parameter: str | None, keep_previous: bool, no_promote: bool
) -> None:
    """A ticket key ring whose key KEY_ID is 32 random bytes: printed, or written to the SecureString
    parameter TicketKeyParameterName names. Never commit a ring."""
    if (keep_previous or no_promote) and parameter is None:
        raise click.UsageError("--keep-previous and --no-promote need --put-parameter")
    if no_promote and not keep_previous:
        raise click.UsageError("--no-promote needs --keep-previous (a ring needs a current key)")
    previous = _read_ring(obj, str(parameter)) if keep_previous else None
    try:
        ring = with_key(previous, key_id, new_secret(), make_current=not no_promote)
    except TicketKeyError as exc:
        raise click.BadParameter(str(exc), param_hint="--key-id") from exc
    if parameter is None:
        click.echo(ring_text(ring))
        return
    _put_ring(obj, parameter, ring)
    click.echo(f"{parameter}: current key {ring.current}; keys {', '.join(sorted(ring.keys))}")


@tickets.group("keys")
def keys() -> None:
    """The ticket key ring: show its key ids, promote a key, retire one."""


@keys.command("show")
@click.option("--parameter", required=True, help=PARAMETER_HELP)
@pass_cli
def keys_show(obj: CliContext, parameter: str) -> None:
    """The ring's key ids and which one signs (no secret is printed)."""
    ring = _read_ring(obj, parameter)
    for key_id in sorted(ring.keys):
        click.echo(f"{key_id}{'  current' if key_id == ring.current else '  verifying only'}")


@keys.command("promote")
@click.argument("key_id")
@click.option("--parameter", required=True, help=PARAMETER_HELP)
@pass_cli
def keys_promote(obj: CliContext, key_id: str, parameter: str) -> None:
    """Sign with KEY_ID from now on (export it to offline scanners first)."""
    try:
        ring = promote(_read_ring(obj, parameter), key_id)
    except TicketKeyError as exc:
        raise click.ClickException(str(exc)) from exc
    _put_ring(obj, parameter, ring)
    click.echo(f"{parameter}: current key {key_id}")


@keys.command("retire")
@click.argument("key_id")
@click.option("--parameter", required=True, help=PARAMETER_HELP)
@pass_cli
def keys_retire(obj: CliContext, key_id: str, parameter: str) -> None:
    """Stop accepting KEY_ID: its secrets are refused as forged from the next refresh on."""
    try:
        ring = retire(_read_ring(obj, parameter), key_id)
    except TicketKeyError as exc:
        raise click.ClickException(str(exc)) from exc
    _put_ring(obj, parameter, ring)
    click.echo(f"{parameter}: retired {key_id}; current key {ring.current}")


# ------------------------------------------------------------------------------ the gate


def cli_gate(obj: CliContext, parameter: str | None) -> Gate:
    """The gate's logic on the table, its keys from `parameter`, its outcomes on the topic."""
    resources = obj.resources()
    resources.require("table_name", "outcomes_topic_arn")
    assert resources.table_name is not None and resources.outcomes_topic_arn is not None
    ring = _read_ring(obj, parameter) if parameter else None
    return Gate(
        store=GateTable(obj.client("dynamodb"), resources.table_name),
        keys=lambda: ring,
        clock=SystemClock(),
        publisher=SnsOutcomePublisher(obj.client("sns"), resources.outcomes_topic_arn),
    )


def _checked(name: str, value: str) -> str:
    if not GATE_ID.fullmatch(value):
        raise click.BadParameter(
            "1-64 of A-Z a-z 0-9 . _ : @ - starting with a letter or digit", param_hint=name
        )
    return value


def _answer_line(answer: ScanAnswer) -> str:
    ticket = f"{answer.ticket}: " if answer.ticket else ""
    return f"{answer.result.value}  {ticket}{answer.reason}" + ("  (replay)" if answer.replay else "")


@tickets.command("show")
@click.argument("reservation_id")
@click.option("--parameter", required=True, help=PARAMETER_HELP)
@output_option
@pass_cli
def show(obj: CliContext, reservation_id: str, parameter: str, output: OutputFormat) -> None:
    """RESERVATION_ID's tickets: number, seat, live / void / passed on, and each live one's secret
    (what `GET /reservations/{id}/tickets` answers)."""
    view = reservation_tickets(cli_gate(obj, parameter), reservation_id)
    if view is None:
        raise click.ClickException(f"no reservation {reservation_id} is recorded")
    rows = view["tickets"]
    if output is OutputFormat.JSON:
        print_json(view)
    elif output is OutputFormat.TEXT:
        print_text(rows)
    else:
        for row in rows:
            seat = row["seat_class"] + (f" {row['seat']}" if row["seat"] else "")
            click.echo(f"{row['ticket']}  {seat}  {row['status']}  {row['secret'] or '-'}")


@tickets.command("transfer")
@click.argument("secret")
@click.option("--from", "giver", required=True, help="The customer who holds the ticket.")
@click.option("--to", "receiver", required=True, help="The customer who receives it.")
@click.option(
    "--transfer-id", help="The transfer's id (default: a random one); the same id again is a retry."
)
@click.option("--parameter", required=True, help=PARAMETER_HELP)
@pass_cli
def transfer(
    obj: CliContext, secret: str, giver: str, receiver: str, transfer_id: str | None, parameter: str
) -> None:
    """Pass the ticket SECRET names on: its secret is revoked and the receiver's printed."""
    request = TransferRequest(transfer_id or uuid.uuid4().hex, secret, giver, receiver)
    answer = transfer_ticket(cli_gate(obj, parameter), request)
    click.echo(f"{answer.result.value}  {answer.reason}")
    if answer.secret:
        click.echo(answer.secret)
    if answer.result.value != "TRANSFERRED":
        raise SystemExit(1)


@click.group()
def checkin() -> None:
    """Check-in at the gate: lists, scans, offline scanners' export and uploads, conflicts."""


@checkin.command("list")
@click.argument("event_id")
@click.argument("name")
@click.option(
    "--allow-reentry/--no-reentry",
    default=False,
    show_default=True,
    help="Let a ticket in again after an exit.",
)
@pass_cli
def create_list(obj: CliContext, event_id: str, name: str, allow_reentry: bool) -> None:
    """Create (or change) EVENT_ID's check-in list NAME: a ticket enters it once, or again after an
    exit scan with --allow-reentry."""
    resources = obj.resources()
    resources.require("table_name")
    assert resources.table_name is not None
    table = GateTable(obj.client("dynamodb"), resources.table_name)
    table.write_checkin_list(
        CheckinList(_checked("EVENT_ID", event_id), _checked("NAME", name), allow_reentry)
    )
    click.echo(
        f"{event_id}: check-in list {name}, {'re-entry after an exit' if allow_reentry else 'one entry'}"
    )


@checkin.command("lists")
@click.argument("event_id")
@pass_cli
def show_lists(obj: CliContext, event_id: str) -> None:
    """EVENT_ID's check-in lists and their rule."""
    resources = obj.resources()
    resources.require("table_name")
    assert resources.table_name is not None
    for found in GateTable(obj.client("dynamodb"), resources.table_name).read_checkin_lists(event_id):
        click.echo(f"{found.name}  {'re-entry' if found.allow_reentry else 'one entry'}")


@checkin.command("scan")
@click.argument("event_id")
@click.argument("secret")
@click.option("--list", "list_name", required=True, help="The check-in list.")
@click.option("--gate", required=True, help="The gate (where the scan is made).")
@click.option("--nonce", help="The scan's id (default: a random one); the same nonce again is a replay.")
@click.option("--out", "leaving", is_flag=True, help="An exit scan (a list with re-entry).")
@click.option("--parameter", required=True, help=PARAMETER_HELP)
@pass_cli
def scan(
    obj: CliContext,
    event_id: str,
    secret: str,
    list_name: str,
    gate: str,
    nonce: str | None,
    leaving: bool,
    parameter: str,
) -> None:
    """One online scan of SECRET at EVENT_ID, as `POST /checkins` makes it; exit 1 unless it let
    someone in or out."""
    request = ScanRequest(
        _checked("EVENT_ID", event_id),
        _checked("--list", list_name),
        _checked("--gate", gate),
        _checked("--nonce", nonce or uuid.uuid4().hex),
        secret,
        Direction.OUT if leaving else Direction.IN,
    )
    answer = check_in(cli_gate(obj, parameter), request)
    click.echo(_answer_line(answer))
    if answer.result.value not in ("ADMITTED", "EXITED"):
        raise SystemExit(1)


@checkin.command("export")
@click.argument("event_id")
@click.option("--parameter", required=True, help=PARAMETER_HELP)
@click.option("--output-file", "-o", type=click.Path(dir_okay=False, path_type=Path), help="Write it here.")
@pass_cli
def export(obj: CliContext, event_id: str, parameter: str, output_file: Path | None) -> None:
    """What a scanner needs to check EVENT_ID's tickets offline: the event's public keys, the lists,
    void tickets and revoked generations (a Scan of the table: run it before the doors open, and
    again after transfers or cancellations)."""
    gate = cli_gate(obj, parameter)
    table = gate.store
    assert isinstance(table, GateTable)
    document = export_for_scanners(gate, _checked("EVENT_ID", event_id), table.read_checkin_lists(event_id))
    text = json.dumps(document, indent=2, sort_keys=True)
    if output_file is None:
        click.echo(text)
    else:
        output_file.write_text(text + "\n")
        click.echo(
            f"{output_file}: {len(document['public_keys'])} key(s), {len(document['lists'])} list(s),"
            f" {len(document['void'])} void, {len(document['min_generation'])} passed on"
        )


@checkin.command("offline-scan")
@click.argument("export_file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.argument("secrets", nargs=-1, required=True)
@click.option("--list", "list_name", required=True, help="The check-in list.")
@click.option("--gate", required=True, help="The gate.")
@click.option(
    "--journal",
    type=click.Path(dir_okay=False, path_type=Path),
    required=True,
    help="Scans to upload, appended.",
)
def offline_scan(
    export_file: Path, secrets: tuple[str, ...], list_name: str, gate: str, journal: Path
) -> None:
    """Scan SECRETS as an offline scanner would, from EXPORT_FILE alone; what it let in is appended
    to the JOURNAL for `seats checkin upload`."""
    try:
        scanner = OfflineScanner.from_file(export_file, gate=_checked("--gate", gate), list_name=list_name)
    except ExportError as exc:
        raise click.ClickException(str(exc)) from exc
    kept: list[dict[str, Any]] = json.loads(journal.read_text()) if journal.exists() else []
    for entry in kept:
        if entry["list"] == list_name and entry["gate"] == gate:
            scanner.scan(entry["secret"], at_ms=entry["scanned_at"], direction=Direction(entry["direction"]))
    scanner.journal.clear()
    for secret in secrets:
        result, reason = scanner.scan(secret, at_ms=int(time.time() * 1000))
        click.echo(f"{result.value}  {reason}")
    journal.write_text(json.dumps(kept + scanner.journal, indent=1) + "\n")


@checkin.command("upload")
@click.argument("journal", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--parameter", required=True, help=PARAMETER_HELP)
@pass_cli
def upload(obj: CliContext, journal: Path, parameter: str) -> None:
    """Upload an offline scanner's JOURNAL, as `POST /checkins/uploads` does: each scan recorded
    once; a ticket let in twice is a CONFLICT naming both scans. Exit 1 on any conflict."""
    gate = cli_gate(obj, parameter)
    try:
        scans = json.loads(journal.read_text())
    except (OSError, ValueError) as exc:
        raise click.BadParameter(f"cannot read {journal}: {exc}", param_hint="JOURNAL") from exc
    if not isinstance(scans, list):
        raise click.BadParameter(f"{journal} is not a journal (a JSON list of scans)", param_hint="JOURNAL")
    answers = upload_scans(gate, scans)
    for answer in answers:
        click.echo(f"{answer.nonce}  {_answer_line(answer)}")
    if any(a.conflicts for a in answers):
        raise SystemExit(1)


@checkin.command("conflicts")
@click.argument("event_id")
@click.option("--list", "list_name", help="Only this check-in list.")
@pass_cli
def conflicts(obj: CliContext, event_id: str, list_name: str | None) -> None:
    """Every ticket of EVENT_ID let in twice (or with a revoked secret) while scanners were offline,
    with both scans. Exit 1 when there is any. A Scan of the table: an operator's report."""
    resources = obj.resources()
    resources.require("table_name")
    assert resources.table_name is not None
    found = GateTable(obj.client("dynamodb"), resources.table_name).read_conflicts(event_id, list_name)
    for conflict in found:
        ticket = conflict.ticket
        click.echo(f"{conflict.list_name}  {ticket.series}:{ticket.serial}  {conflict.reason}")
    if found:
        raise SystemExit(1)
    click.echo(f"{event_id}: no conflict")


@checkin.command("demo")
@click.option(
    "--reservations", type=click.IntRange(1, 500), default=40, show_default=True, help="Sales of 1-4 seats."
)
@click.option(
    "--gates", type=click.IntRange(1, 50), default=10, show_default=True, help="Gates scanning at once."
)
@click.option("--seed", type=int, help="Seed of the sales' sizes and the second scans.")
@click.option(
    "--no-aws-contention", is_flag=True, help="DynamoDB Local alone, without the AWS contention layer."
)
@output_option
def demo(
    reservations: int, gates: int, seed: int | None, no_aws_contention: bool, output: OutputFormat
) -> None:
    """A gate on a fresh local stack, through the checkout API: a sale numbered by the issuer, every
    ticket scanned at once at GATES gates, second scans, a replay, a transfer, two offline scanners
    letting one ticket in and their uploads. Exit 1 unless every check holds."""
    from seat_tools.cli.local_commands import aws_contention_settings
    from seat_tools.gate_demo import GateDemoOptions, gate_checks_passed, run_gate_demo
    from seat_tools.local.stack import LocalStack

    click.echo("starting DynamoDB Local and the moto server ...", err=True)
    with LocalStack(aws_contention=aws_contention_settings(no_aws_contention, 1.0)) as stack:
        click.echo(stack.contention_description(), err=True)
        summary = run_gate_demo(
            GateDemoOptions(reservations=reservations, gates=gates, seed=seed),
            stack,
            progress=lambda line: click.echo(line, err=True),
        )
    if output is OutputFormat.JSON:
        print_json(summary)
    else:
        for name, value in summary.items():
            if name != "checks":
                click.echo(f"{name:28} {value}")
        for name, held in summary["checks"].items():
            click.echo(f"{'ok  ' if held else 'FAIL'} {name}")
    if not gate_checks_passed(summary):
        raise SystemExit(1)
