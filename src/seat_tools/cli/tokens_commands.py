"""`seats tokens keygen|retire|issue`: admission key rings and test tokens (docs/guides/admission.md).

A waiting room issues the real tokens with the same key ring; these commands are for tests, the
local stack and rotation drills.
"""

from __future__ import annotations

import secrets
import time
from pathlib import Path

import click

from seat_inventory.logic.admission_tokens import KeyRing, KeyRingError, parse_key_ring
from seat_inventory.parsing import MAX_ID_LENGTH, id_problem
from seat_tools.admission_keys import issue_token, new_key_ring_text, ring_text
from seat_tools.cli.context import CliContext
from seat_tools.cli.output import OutputFormat, output_option, print_json, print_text

pass_cli = click.make_pass_decorator(CliContext)
# Issued test tokens live at most a day (a waiting room's admission window is minutes).
MAX_TTL_SECONDS = 86_400


@click.group()
def tokens() -> None:
    """Admission tokens: make a key ring, issue test tokens (docs/guides/admission.md)."""


@tokens.command("keygen")
@click.option("--key-id", required=True, help="Id of the new key (1-32 of A-Z a-z 0-9 _ -), e.g. 2026-11.")
@click.option(
    "--previous-file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="A ring whose keys stay accepted (rotation: the new key signs, the old ones still verify).",
)
@click.option(
    "--put-parameter",
    "parameter",
    help="Write the ring to this SSM SecureString parameter instead of printing it.",
)
@click.option(
    "--keep-previous",
    is_flag=True,
    help="With --put-parameter: keep the parameter's keys accepted (a rotation's first step).",
)
@pass_cli
def keygen(
    obj: CliContext, key_id: str, previous_file: Path | None, parameter: str | None, keep_previous: bool
) -> None:
    """A key ring (JSON) whose current key is a new random 32-byte KEY_ID: printed, or written to
    the SecureString parameter AdmissionKeyParameterName names. Never commit a ring.
    """
    if keep_previous and (parameter is None or previous_file is not None):
        raise click.UsageError("--keep-previous needs --put-parameter and no --previous-file")
    previous = _ring_from_file(previous_file) if previous_file is not None else None
    if keep_previous:
        previous = _ring_from_parameter(obj, str(parameter))
    try:
        text = new_key_ring_text(key_id, secrets.token_bytes(32), previous)
    except KeyRingError as exc:
        raise click.BadParameter(str(exc), param_hint="--key-id") from exc
    if parameter is None:
        click.echo(text)
        return
    _put_ring(obj, parameter, text)
    kept = f"; still accepted: {', '.join(sorted(set(previous.keys) - {key_id}))}" if previous else ""
    click.echo(f"{parameter}: current key {key_id}{kept}")


@tokens.command("retire")
@click.argument("key_id")
@click.option("--parameter", required=True, help="The SSM parameter holding the key ring.")
@pass_cli
def retire(obj: CliContext, key_id: str, parameter: str) -> None:
    """Stop accepting KEY_ID (a rotation's last step, once its tokens have expired). The current
    key cannot be retired."""
    ring = _ring_from_parameter(obj, parameter)
    if key_id not in ring.keys:
        raise click.ClickException(f"{parameter} has no key {key_id!r}; nothing was changed")
    if key_id == ring.current:
        raise click.ClickException(f"{key_id!r} is the current key; rotate first (`seats tokens keygen`)")
    kept = KeyRing(ring.current, {k: v for k, v in ring.keys.items() if k != key_id})
    _put_ring(obj, parameter, ring_text(kept))
    click.echo(f"{parameter}: current key {ring.current}; retired {key_id}")


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


def _put_ring(obj: CliContext, name: str, text: str) -> None:
    obj.client("ssm").put_parameter(Name=name, Value=text, Type="SecureString", Overwrite=True)


def _ring_from_parameter(obj: CliContext, name: str) -> KeyRing:
    response = obj.client("ssm").get_parameter(Name=name, WithDecryption=True)
    try:
        return parse_key_ring(response["Parameter"]["Value"])
    except KeyRingError as exc:
        raise click.ClickException(f"SSM parameter {name}: {exc}") from exc
