"""`seats tokens keygen|issue`: admission key rings and test tokens (docs/admission.md).

A waiting room issues the real tokens with the same key ring; these commands are for tests, the
local stack and rotation drills.
"""

from __future__ import annotations

import secrets
import time
from pathlib import Path

import click

from seat_inventory.logic.admission_tokens import (
    KeyRing,
    KeyRingError,
    issue_token,
    new_key_ring_text,
    parse_key_ring,
)
from seat_inventory.parsing import MAX_ID_LENGTH, id_problem
from seat_tools.cli.context import CliContext
from seat_tools.cli.output import OutputFormat, output_option, print_json, print_text

pass_cli = click.make_pass_decorator(CliContext)
# Issued test tokens live at most a day (a waiting room's admission window is minutes).
MAX_TTL_SECONDS = 86_400


@click.group()
def tokens() -> None:
    """Admission tokens: make a key ring, issue test tokens (docs/admission.md)."""


@tokens.command("keygen")
@click.option("--key-id", required=True, help="Id of the new key (1-32 of A-Z a-z 0-9 _ -), e.g. 2026-11.")
@click.option(
    "--previous-file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="A ring whose keys stay accepted (rotation: the new key signs, the old ones still verify).",
)
def keygen(key_id: str, previous_file: Path | None) -> None:
    """Print a key ring (JSON) whose current key is a new random 32-byte KEY_ID.

    Store it as the SecureString parameter AdmissionKeyParameterName names
    (`aws ssm put-parameter --type SecureString --overwrite ...`); never commit it.
    """
    previous = _ring_from_file(previous_file) if previous_file is not None else None
    try:
        click.echo(new_key_ring_text(key_id, secrets.token_bytes(32), previous))
    except KeyRingError as exc:
        raise click.BadParameter(str(exc), param_hint="--key-id") from exc


@tokens.command("issue")
@click.option("--event", "event_id", required=True, help="The event the token admits to.")
@click.option("--customer", required=True, help="The customer the token admits.")
@click.option(
    "--ttl",
    type=click.IntRange(min=1, max=MAX_TTL_SECONDS),
    default=600,
    show_default=True,
    help="Seconds until the token expires.",
)
@click.option(
    "--key-file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="A key ring file (`seats tokens keygen`).",
)
@click.option("--parameter", help="The SSM parameter holding the key ring (read with decryption).")
@click.option("--token-id", help="The token's id (default: 32 random hex digits).")
@output_option
@pass_cli
def issue(
    obj: CliContext,
    event_id: str,
    customer: str,
    ttl: int,
    key_file: Path | None,
    parameter: str | None,
    token_id: str | None,
    output: OutputFormat,
) -> None:
    """Print an admission token for CUSTOMER at EVENT, signed with the ring's current key.

    Send it with `seats reserve|hold ... --admission-token TOKEN` (or as `admission_token`).
    """
    if (key_file is None) == (parameter is None):
        raise click.UsageError("give --key-file F or --parameter NAME")
    for name, value in (("--event", event_id), ("--customer", customer)):
        problem = id_problem(name.lstrip("-"), value, MAX_ID_LENGTH)
        if problem:
            raise click.BadParameter(problem, param_hint=name)
    ring = _ring_from_file(key_file) if key_file is not None else _ring_from_parameter(obj, str(parameter))
    expires_at = int(time.time()) + ttl
    try:
        token = issue_token(
            ring, event_id=event_id, customer_id=customer, expires_at=expires_at, token_id=token_id
        )
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--token-id") from exc
    if output is OutputFormat.TABLE:
        click.echo(token)
        return
    document = {
        "token": token,
        "event_id": event_id,
        "customer_id": customer,
        "expires_at": expires_at,
        "key_id": ring.current,
    }
    if output is OutputFormat.JSON:
        print_json(document)
    else:
        print_text([document])


def _ring_from_file(path: Path) -> KeyRing:
    try:
        return parse_key_ring(path.read_text())
    except KeyRingError as exc:
        raise click.ClickException(f"{path}: {exc}") from exc


def _ring_from_parameter(obj: CliContext, name: str) -> KeyRing:
    response = obj.client("ssm").get_parameter(Name=name, WithDecryption=True)
    try:
        return parse_key_ring(response["Parameter"]["Value"])
    except KeyRingError as exc:
        raise click.ClickException(f"SSM parameter {name}: {exc}") from exc
