"""`seats load | watch | dlq | invoke`: send traffic, watch the answers, handle dead letters.

The work is done by `seat_tools.traffic` (shared with the local demo); these commands only
resolve resources, parse options and print.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
import time
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from botocore.exceptions import BotoCoreError, ClientError

from seat_inventory.models import Outcome
from seat_inventory.parsing import MAX_ID_LENGTH, MAX_SEAT_CLASS_LENGTH, id_problem
from seat_tools.cli.context import CliContext, check_endpoint_url
from seat_tools.cli.errors import explain
from seat_tools.cli.output import OutputFormat, output_option, print_json, print_text, text_line
from seat_tools.traffic import (
    REDRIVE_HOLD_S,
    OutcomeCollector,
    RedriveIncomplete,
    peek_dead_letters,
    plan_burst,
    redrive_dead_letters,
    reservation_queue_urls,
    send_messages,
)

if TYPE_CHECKING:
    from click._termui_impl import ProgressBar

    from seat_tools.local.template import FunctionDefinition

pass_cli = click.make_pass_decorator(CliContext)

OUTCOME_CHOICES = [outcome.value for outcome in Outcome]
DOCKER_HOST_MARKER = "host.docker.internal"
BODY_PREVIEW_CHARS = 60


def _checked_id(name: str, value: str, max_length: int) -> str:
    problem = id_problem(name, value, max_length)
    if problem:
        raise click.BadParameter(
            problem, param_hint=name.upper() if name == "event_id" else f"--{name.replace('_', '-')}"
        )
    return value


def _aws_call_failed(action: str, exc: Exception) -> click.ClickException:
    """The failure explained in one line with its exit code (cli/errors.py), prefixed by the action."""
    explained = explain(exc, doing=f"{action} failed")
    if explained is not None:
        return explained
    return click.ClickException(f"{action} failed: {type(exc).__name__}: {exc}")


# --------------------------------------------------------------------------- reserve and load


@click.command()
@click.argument("event_id")
@click.option("--requests", type=click.IntRange(min=1), required=True, help="Messages to send in all.")
@click.option(
    "--concurrency", type=click.IntRange(min=1, max=64), default=8, show_default=True, help="Sending threads."
)
@click.option(
    "--duplicates",
    type=click.FloatRange(min=0, max=100),
    default=0.0,
    show_default=True,
    help="Percentage of the messages that are exact re-sends of an earlier one (same reservation id).",
)
@click.option("--seat-class", help="Seat class; the service's default class when omitted.")
@click.option(
    "--max-quantity",
    type=click.IntRange(min=1),
    default=4,
    show_default=True,
    help="Most seats one request asks for.",
)
@click.option("--seed", type=int, help="Make quantities, customers and duplicate positions repeatable.")
@output_option
@pass_cli
def load(
    obj: CliContext,
    event_id: str,
    requests: int,
    concurrency: int,
    duplicates: float,
    seat_class: str | None,
    max_quantity: int,
    seed: int | None,
    output: OutputFormat,
) -> None:
    """Send a burst of reservation requests for EVENT_ID, with some duplicates, and report the rate.

    Reservation ids get a fresh random prefix on every run, so runs never collide. A stack with
    several reservation queues (ReservationQueues) gets each request on the queue its reservation
    id picks, as the checkout API sends it. Exits with status 1 if any message could not be sent.
    """
    resources = obj.resources()
    resources.require("reservations_queue_url")
    assert resources.reservations_queue_url is not None
    _checked_id("event_id", event_id, MAX_ID_LENGTH)
    if seat_class is not None:
        _checked_id("seat_class", seat_class, MAX_SEAT_CLASS_LENGTH)
    bodies = plan_burst(
        event_id,
        requests,
        duplicates_pct=duplicates,
        seat_class=seat_class,
        max_quantity=max_quantity,
        seed=seed,
    )
    distinct = len({body["reservation_id"] for body in bodies})
    sqs = obj.client("sqs")
    try:
        # One call first, so that a missing queue or an unreachable endpoint is one line, not N failures.
        sqs.get_queue_attributes(QueueUrl=resources.reservations_queue_url, AttributeNames=["QueueArn"])
    except (ClientError, BotoCoreError) as exc:
        raise _aws_call_failed("reading the reservations queue", exc) from exc
    try:
        queue_urls = reservation_queue_urls(sqs, resources.reservations_queue_url)
    except (ClientError, BotoCoreError) as exc:
        raise _aws_call_failed("finding the reservation queues", exc) from exc
    bar: ProgressBar[int]
    with click.progressbar(length=len(bodies), label="sending", file=sys.stderr) as bar:
        report = send_messages(
            sqs,
            queue_urls,
            bodies,
            concurrency=concurrency,
            on_sent=bar.update,
        )
    summary = {
        "sent": report.sent,
        "failed": report.failed,
        "distinct_reservations": distinct,
        "duplicates": len(bodies) - distinct,
        "elapsed_s": round(report.elapsed_s, 3),
        "messages_per_s": round(report.per_second, 1),
    }
    if output is OutputFormat.JSON:
        print_json(summary)
    elif output is OutputFormat.TEXT:
        print_text([summary])
    else:
        click.echo(
            f"sent {report.sent}, failed {report.failed}; {distinct} distinct reservations, "
            f"{len(bodies) - distinct} duplicates; {report.elapsed_s:.2f} s, {report.per_second:.1f} msgs/s"
        )
    if report.failed:
        click.echo(f"error: {report.failed} message(s) could not be sent: {report.first_error}", err=True)
        raise click.exceptions.Exit(1)


# --------------------------------------------------------------------------- watch


def _outcome_line(document: Mapping[str, Any]) -> str:
    """One readable line per outcome: what happened, to which request, and why if not confirmed."""
    if "raw_body" in document:
        return f"{'?':<13} {document['raw_body']}"
    outcome = str(document.get("outcome", "?"))
    parts = [
        f"{outcome:<13}",
        str(document.get("reservation_id", "?")),
        f"{document.get('event_id') or '?'}/{document.get('seat_class') or '?'}",
        f"x{document.get('quantity') if document.get('quantity') is not None else '?'}",
        f"customer {document.get('customer_id') or '?'}",
    ]
    if document.get("remaining") is not None:
        parts.append(f"remaining {document['remaining']}")
    if document.get("duplicate"):
        parts.append("(duplicate)")
    if outcome != Outcome.CONFIRMED.value and document.get("reason"):
        parts.append(f"- {document['reason']}")
    return "  ".join(parts)


def _print_outcome(document: Mapping[str, Any], output: OutputFormat) -> None:
    """One outcome: a readable line, one JSON line, or its fields tab-separated."""
    if output is OutputFormat.JSON:
        click.echo(json.dumps(document))
    elif output is OutputFormat.TEXT:
        click.echo(text_line(document))
    else:
        click.echo(_outcome_line(document))


@click.command()
@click.option(
    "--outcome",
    type=click.Choice(OUTCOME_CHOICES, case_sensitive=False),
    help="Only this outcome (an SNS filter policy on the `outcome` attribute).",
)
@click.option("--event", "event_id", help="Only outcomes of this event (filter on the `event_id` attribute).")
@click.option("--count", type=click.IntRange(min=1), help="Stop after this many outcomes.")
@click.option("--timeout", type=click.FloatRange(min=0), help="Stop after this many seconds.")
@output_option
@pass_cli
def watch(
    obj: CliContext,
    outcome: str | None,
    event_id: str | None,
    count: int | None,
    timeout: float | None,
    output: OutputFormat,
) -> None:
    """Print outcomes as they are published, until Ctrl-C, --count or --timeout.

    Subscribes a temporary SQS queue to the outcomes topic (raw delivery, filtered by SNS) and
    removes the subscription and the queue on exit. Outcomes published before the subscription
    existed are not shown. `--output json` prints one JSON object per line.
    """
    resources = obj.resources()
    resources.require("outcomes_topic_arn")
    assert resources.outcomes_topic_arn is not None
    seen = 0
    started = time.monotonic()
    collector = OutcomeCollector(
        obj.client("sns"),
        obj.client("sqs"),
        resources.outcomes_topic_arn,
        outcome=outcome.upper() if outcome else None,
        event_id=event_id,
    )
    try:
        with collector:
            filters = json.dumps(collector.filter_policy) if collector.filter_policy else "none"
            click.echo(
                f"watching {resources.outcomes_topic_arn} (filter: {filters}); Ctrl-C to stop", err=True
            )
            while count is None or seen < count:
                left = None if timeout is None else timeout - (time.monotonic() - started)
                if left is not None and left <= 0:
                    break
                documents = collector.poll(wait_seconds=1 if left is None or left >= 1 else 0)
                for document in documents[: None if count is None else count - seen]:
                    _print_outcome(document, output)
                    seen += 1
                if not documents and left is not None and left < 1:
                    time.sleep(min(0.1, left))
    except KeyboardInterrupt:
        # The `with` block has already removed the subscription and the queue.
        click.echo("", err=True)
    except (ClientError, BotoCoreError) as exc:
        raise _aws_call_failed("watching outcomes", exc) from exc
    click.echo(f"{seen} outcome(s)", err=True)


# --------------------------------------------------------------------------- dead letters


@click.group()
def dlq() -> None:
    """Inspect and redrive the dead-letter queue (messages that failed MaxReceiveCount times)."""


def _preview(body: str) -> str:
    text = " ".join(body.split())
    return text if len(text) <= BODY_PREVIEW_CHARS else text[: BODY_PREVIEW_CHARS - 3] + "..."


@dlq.command("show")
@click.option(
    "--max", "max_messages", type=click.IntRange(min=1), default=100, show_default=True, help="Most messages."
)
@output_option
@pass_cli
def dlq_show(obj: CliContext, max_messages: int, output: OutputFormat) -> None:
    """List dead letters without consuming them (each stays in the queue).

    `--output json` prints one JSON array, with the bodies that are JSON parsed.
    """
    resources = obj.resources()
    resources.require("dead_letter_queue_url")
    assert resources.dead_letter_queue_url is not None
    try:
        letters = peek_dead_letters(
            obj.client("sqs"), resources.dead_letter_queue_url, max_messages=max_messages
        )
    except (ClientError, BotoCoreError) as exc:
        raise _aws_call_failed("reading the dead-letter queue", exc) from exc
    if output is OutputFormat.TEXT:
        print_text(letters)
        return
    if output is OutputFormat.JSON:
        documents = []
        for letter in letters:
            document = dict(letter)
            with contextlib.suppress(ValueError):
                document["body"] = json.loads(letter["body"])
            documents.append(document)
        click.echo(json.dumps(documents))
        return
    if not letters:
        click.echo("the dead-letter queue is empty")
        return
    click.echo(f"{'MESSAGE ID':<38}{'RECEIVES':>9}  {'SENT AT':<27}BODY")
    for letter in letters:
        click.echo(
            f"{letter['message_id']:<38}{letter['receive_count']:>9}  {letter['sent_at'] or '?':<27}"
            f"{_preview(letter['body'])}"
        )
    click.echo(f"{len(letters)} message(s)")


@dlq.command("redrive")
@click.option(
    "--max", "max_messages", type=click.IntRange(min=1), help="Move at most this many (all by default)."
)
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@output_option
@pass_cli
def dlq_redrive(obj: CliContext, max_messages: int | None, yes: bool, output: OutputFormat) -> None:
    """Move dead letters back to the reservations queue to be processed again.

    Each message is sent before it is deleted, so none is lost; one caught between the two
    steps is processed twice, which the service answers once (it dedupes by reservation id).
    """
    resources = obj.resources()
    resources.require("dead_letter_queue_url", "reservations_queue_url")
    assert resources.dead_letter_queue_url is not None and resources.reservations_queue_url is not None
    sqs = obj.client("sqs")
    try:
        waiting = sqs.get_queue_attributes(
            QueueUrl=resources.dead_letter_queue_url, AttributeNames=["ApproximateNumberOfMessages"]
        )["Attributes"]["ApproximateNumberOfMessages"]
    except (ClientError, BotoCoreError) as exc:
        raise _aws_call_failed("reading the dead-letter queue", exc) from exc
    if int(waiting) == 0:
        _print_moved(0, resources.reservations_queue_url, output, empty=resources.dead_letter_queue_url)
        return
    limit = "all" if max_messages is None else f"up to {max_messages}"
    if not yes:
        click.confirm(
            f"Move {limit} of about {waiting} message(s) from {resources.dead_letter_queue_url} "
            f"to {resources.reservations_queue_url}?",
            abort=True,
        )
    try:
        moved = redrive_dead_letters(
            sqs, resources.dead_letter_queue_url, resources.reservations_queue_url, max_messages=max_messages
        )
    except RedriveIncomplete as exc:
        raise click.ClickException(str(exc)) from exc
    except (ClientError, BotoCoreError) as exc:
        raise _aws_call_failed("redriving", exc) from exc
    _print_moved(moved, resources.reservations_queue_url, output)
    # "moved N" alone would hide messages a receive held without answering (SQS returns them
    # after the hold): say what the DLQ still has (on stderr, so that --output json stays one object).
    try:
        left = sqs.get_queue_attributes(
            QueueUrl=resources.dead_letter_queue_url,
            AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
        )["Attributes"]
    except (ClientError, BotoCoreError) as exc:
        raise _aws_call_failed("reading what the dead-letter queue still holds", exc) from exc
    visible, held = (
        int(left["ApproximateNumberOfMessages"]),
        int(left["ApproximateNumberOfMessagesNotVisible"]),
    )
    if visible or held:
        click.echo(
            f"the DLQ still holds about {visible + held} message(s) ({held} held by a receive, visible"
            f" again within {REDRIVE_HOLD_S} s): run `seats dlq redrive` again then",
            err=True,
        )


def _print_moved(moved: int, queue_url: str, output: OutputFormat, *, empty: str | None = None) -> None:
    if output is OutputFormat.JSON:
        print_json({"moved": moved, "queue_url": queue_url})
    elif output is OutputFormat.TEXT:
        print_text([{"moved": moved, "queue_url": queue_url}])
    elif empty is not None:
        click.echo(f"nothing to redrive: {empty} is empty")
    else:
        click.echo(f"moved {moved} message(s) to {queue_url}")


# --------------------------------------------------------------------------- invoke


@dataclass
class LocalLambdaContext:
    """The attributes of a Lambda context object that the handler and Powertools read."""

    function_name: str
    invoked_function_arn: str
    memory_limit_in_mb: int
    log_group_name: str
    timeout_s: float
    function_version: str = "$LATEST"
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    log_stream_name: str = field(
        default_factory=lambda: time.strftime("%Y/%m/%d") + f"/[$LATEST]{uuid.uuid4().hex}"
    )
    started: float = field(default_factory=time.monotonic)

    @classmethod
    def of(cls, function: FunctionDefinition, region: str) -> LocalLambdaContext:
        """The context Lambda would hand the function as the template defines it (memory, timeout)."""
        from seat_tools.local.template import LOCAL_ACCOUNT_ID

        arn = f"arn:aws:lambda:{region}:{LOCAL_ACCOUNT_ID}:function:{function.logical_id}"
        return cls(
            function_name=function.logical_id,
            invoked_function_arn=arn,
            memory_limit_in_mb=function.memory_mb,
            log_group_name=f"/aws/lambda/{function.logical_id}",
            timeout_s=function.timeout_s,
        )

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self.timeout_s - (time.monotonic() - self.started)) * 1000))


def _template_function(*, api: bool = False) -> FunctionDefinition:
    """The reservation function as template.yaml defines it: handler settings and environment; with
    `api`, the function behind the checkout API's Lambda proxy routes (the gate's) instead."""
    from seat_tools.local.template import (
        TEMPLATE_ENV,
        TemplateError,
        default_template_path,
        load_template,
    )

    path = default_template_path()
    try:
        template = load_template(path)
        if api:
            if not template.api_functions:
                raise TemplateError("it has no function behind a Lambda proxy route")
            return template.api_functions[0]  # type: ignore[return-value]  # the same fields
        return template.function
    except TemplateError as exc:
        raise click.ClickException(
            f"invoke runs the function as template.yaml defines it, but the template cannot be read: {exc}"
            f" (run from the checkout, or set {TEMPLATE_ENV} to the template's path)"
        ) from exc


def _template_defaults(function: FunctionDefinition) -> dict[str, str]:
    """The function's variables that the template sets on its own (parameters at their defaults).

    Left out: those naming a resource (the table, the topic), which come from the stack or the
    environment, and the empty ones (placeholders that `sam local invoke --env-vars` may fill).
    """
    return {
        name: str(value)
        for name, value in function.environment.items()
        if isinstance(value, (str, int, float)) and str(value) != ""
    }


def _env_vars_from_file(path: str, function_id: str) -> tuple[dict[str, str], list[str]]:
    """The function's variables from a sam-style env-vars file, and the names skipped.

    `Parameters` applies first and the function's block (`ReserveSeatsFunction`) overrides it, as
    in `sam local invoke --env-vars`. Values naming host.docker.internal only work from inside a
    container, so they are skipped.
    """
    try:
        document = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise click.BadParameter(f"cannot read {path}: {exc}", param_hint="--env-vars") from exc
    if not isinstance(document, dict):
        raise click.BadParameter(f"{path} must hold a JSON object", param_hint="--env-vars")
    applied: dict[str, str] = {}
    skipped: list[str] = []
    for block_name in ("Parameters", function_id):
        block = document.get(block_name) or {}
        if not isinstance(block, dict):
            raise click.BadParameter(f"{block_name} in {path} must be a JSON object", param_hint="--env-vars")
        for name, value in block.items():
            if value is None:
                continue
            text = str(value).lower() if isinstance(value, bool) else str(value)
            if DOCKER_HOST_MARKER in text:
                skipped.append(name)
                applied.pop(name, None)
                continue
            applied[name] = text
    return applied, skipped


@contextlib.contextmanager
def _patched_environ(values: Mapping[str, str]) -> Iterator[None]:
    """Sets variables for the in-process handler and restores the previous environment afterwards."""
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, previous in saved.items():
            if previous is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = previous


@contextlib.contextmanager
def _function_output_to_stderr() -> Iterator[None]:
    """Sends the handler's logs and metrics to stderr, as `sam local invoke` does.

    So stdout carries only the response. Powertools' logger keeps the stream it was created
    with (hence setStream), and the metrics are print()ed (hence redirect_stdout).
    """
    from seat_inventory.observability import logger

    handler = logger.registered_handler
    previous = handler.setStream(sys.stderr) if isinstance(handler, logging.StreamHandler) else None
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        if previous is not None and isinstance(handler, logging.StreamHandler):
            handler.setStream(previous)


@click.command()
@click.option(
    "-e",
    "--event",
    "event_file",
    type=click.Path(exists=True, dir_okay=False),
    required=True,
    help="SQS or API Gateway proxy event JSON (e.g. events/FILE.json), as for `sam local invoke -e`.",
)
@click.option(
    "--env-vars",
    type=click.Path(exists=True, dir_okay=False),
    help=(
        "sam-style env-vars JSON (e.g. events/env.local.json): its Parameters and ReserveSeatsFunction "
        "blocks are applied, except values pointing at host.docker.internal, which only work inside "
        "Docker (use --endpoint-url instead)."
    ),
)
@pass_cli
def invoke(obj: CliContext, event_file: str, env_vars: str | None) -> None:
    """Run an SQS event file through the real handler in this process (no Docker needed); an API
    Gateway proxy event (events/gate_*.json) runs through the gate's function instead.

    The function's memory, timeout and variables are read from template.yaml ($SEATS_TEMPLATE
    names another), parameters at their defaults; variables already set here are kept.
    TABLE_NAME and OUTCOMES_TOPIC_ARN come from --stack-name outputs or the environment;
    --env-vars overrides them; --endpoint-url is passed on as AWS_ENDPOINT_URL. Prints the
    handler's response (the batchItemFailures) on stdout and its logs on stderr.
    """
    try:
        event = json.loads(Path(event_file).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise click.BadParameter(f"cannot read {event_file}: {exc}", param_hint="--event") from exc
    api = isinstance(event, dict) and isinstance(event.get("httpMethod"), str)
    if not isinstance(event, dict) or not (api or isinstance(event.get("Records"), list)):
        raise click.BadParameter(
            f"{event_file} is not an SQS event (no Records list) nor an API Gateway proxy event"
            " (no httpMethod)",
            param_hint="--event",
        )

    function = _template_function(api=api)
    # Lowest to highest precedence: the template's defaults, what this CLI resolved (stack
    # outputs or environment, region, profile), the --env-vars file, then --endpoint-url.
    environment = {
        name: value for name, value in _template_defaults(function).items() if name not in os.environ
    }
    region = obj.session.region_name
    if region:
        environment["AWS_REGION"] = environment["AWS_DEFAULT_REGION"] = region
    if obj.session.profile_name and obj.session.profile_name != "default":
        environment["AWS_PROFILE"] = obj.session.profile_name
    resources = obj.resources()
    if resources.table_name:
        environment["TABLE_NAME"] = resources.table_name
    if resources.outcomes_topic_arn:
        environment["OUTCOMES_TOPIC_ARN"] = resources.outcomes_topic_arn
    if env_vars:
        from_file, skipped = _env_vars_from_file(env_vars, function.logical_id)
        environment.update(from_file)
        if skipped:
            click.echo(
                f"not applied from {env_vars} (host.docker.internal is only reachable from a container;"
                " use --endpoint-url): " + ", ".join(sorted(skipped)),
                err=True,
            )
    if obj.endpoint_url:
        environment["AWS_ENDPOINT_URL"] = obj.endpoint_url
    missing = [
        name
        for name in ("TABLE_NAME", "OUTCOMES_TOPIC_ARN")
        if not (environment.get(name) or os.environ.get(name))
    ]
    if missing:
        raise click.UsageError(
            "cannot find " + ", ".join(missing) + ": pass --stack-name (or set SEATS_STACK_NAME) for a "
            "deployed stack, set the variable(s), or give them in --env-vars"
        )
    for name, value in {**os.environ, **environment}.items():
        if name.startswith("AWS_ENDPOINT_URL") and value:
            check_endpoint_url(name, value)
    region = environment.get("AWS_REGION") or environment.get("AWS_DEFAULT_REGION") or region
    context = LocalLambdaContext.of(function, region or "us-east-1")

    with _patched_environ(environment):
        # Imported here: Powertools reads its settings (service name, log level) when first imported.
        from seat_inventory.handlers import gate_api, reserve_seats

        handler = gate_api if api else reserve_seats
        handler.reset_container()
        try:
            with _function_output_to_stderr():
                response = handler.lambda_handler(event, context)
        finally:
            # The clients were built for this environment; the next invocation builds its own.
            handler.reset_container()
    click.echo(json.dumps(response, indent=2))
