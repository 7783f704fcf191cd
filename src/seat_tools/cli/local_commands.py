"""`seats local up` and `seats demo`: the whole service on this machine, no AWS account needed.

Both start DynamoDB Local and the moto server themselves (see `seat_tools.local`); they ignore
--stack-name / --endpoint-url, which select a remote stack. The local modules are imported when a
command runs, so the other commands work without the dev extras (moto, PyYAML).
"""

from __future__ import annotations

import shlex
import signal
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from types import FrameType
from typing import Any

import click

from seat_inventory.logic.shards import SHARD_IN_USE_SECONDS
from seat_inventory.models import MAX_SHARDS
from seat_tools.cli.output import OutputFormat, output_option, print_json, print_text
from seat_tools.contention.model import ContentionSettings

# The ports events/env.local.json names, so that `sam local invoke --env-vars` finds this stack.
DEFAULT_DYNAMODB_PORT = 8000
DEFAULT_MOTO_PORT = 5000

PARAMETER_HELP = "Template parameter override NAME=VALUE (repeatable), e.g. -p MaxReceiveCount=3."


def aws_contention_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """Adds `--no-aws-contention` and `--aws-contention-time-scale` (arguments `no_aws_contention`,
    `contention_time_scale`; see `aws_contention_settings`)."""
    command = click.option(
        "--aws-contention-time-scale",
        "contention_time_scale",
        type=click.FloatRange(min=0.001, max=10_000),
        default=1.0,
        show_default=True,
        help="Wall seconds per modelled second of the contention layer: latencies x it, unit rates / it.",
    )(command)
    return click.option(
        "--no-aws-contention",
        is_flag=True,
        help="Run on DynamoDB Local alone: no transaction conflicts, throttling or AWS latencies"
        " (the layer is on by default; docs/explanation/contention.md).",
    )(command)


def aws_contention_settings(no_aws_contention: bool, time_scale: float) -> ContentionSettings | None:
    """The contention layer's settings from the options, or None when it is switched off."""
    return None if no_aws_contention else ContentionSettings(time_scale=time_scale)


def _parameter_overrides(values: tuple[str, ...]) -> dict[str, str]:
    overrides: dict[str, str] = {}
    for value in values:
        name, sep, setting = value.partition("=")
        if not sep or not name:
            raise click.BadParameter(f"{value!r} is not NAME=VALUE", param_hint="--parameter")
        overrides[name] = setting
    return overrides


@contextmanager
def _local_errors() -> Iterator[None]:
    """LocalStackError (missing Java or npm, an engine that will not start) -> one clear message."""
    try:
        from seat_tools.local.engines import LocalStackError
    except ImportError as exc:
        raise click.ClickException(
            f"the local stack needs the dev extras ({exc.name} is missing): pip install -e '.[dev]'"
        ) from exc
    try:
        yield
    except LocalStackError as exc:
        raise click.ClickException(str(exc)) from exc


@contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM and SIGINT stop the stack as Ctrl-C does (engines and workers are stopped, not orphaned).

    SIGINT is set explicitly too: a shell starting us in the background ignores it otherwise.
    Only the first signal interrupts: a second one (a supervisor sending SIGTERM after SIGINT)
    would otherwise break off the stopping half-way.
    """

    def interrupt(signum: int, frame: FrameType | None) -> None:
        for number in (signal.SIGTERM, signal.SIGINT):
            signal.signal(number, signal.SIG_IGN)
        raise KeyboardInterrupt

    previous = {number: signal.signal(number, interrupt) for number in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def _say(message: str) -> None:
    click.echo(message, err=True)


@click.group()
def local() -> None:
    """Run the whole service on this machine: DynamoDB Local + moto (SQS, SNS), built from template.yaml."""


@local.command("up")
@click.option("--no-runner", is_flag=True, help="Only the engines and resources; do not consume the queue.")
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    help="Concurrent function instances (default: the template's MaximumConcurrency).",
)
@click.option(
    "--visibility-timeout",
    type=click.IntRange(min=0, max=43200),
    help="Reservations queue visibility timeout in seconds (default: the function timeout, 30 s;"
    " the template's 180 s would make retries slow).",
)
@click.option(
    "--sweep-interval",
    type=click.FloatRange(min=1),
    help="Seconds between runs of the hold sweeper (default: the template's SweepSchedule, 1 minute).",
)
@click.option("--parameter", "-p", "parameters", multiple=True, help=PARAMETER_HELP)
@click.option(
    "--dynamodb-port",
    type=click.IntRange(0, 65535),
    default=DEFAULT_DYNAMODB_PORT,
    show_default=True,
    help="The DynamoDB endpoint's port (the AWS contention layer's; DynamoDB Local's with"
    " --no-aws-contention), fixed so that the exports stay valid across restarts (the one"
    " events/env.local.json names); 0: any free port.",
)
@click.option(
    "--moto-port",
    type=click.IntRange(0, 65535),
    default=DEFAULT_MOTO_PORT,
    show_default=True,
    help="The moto server's port (SQS, SNS), as events/env.local.json names it; 0: any free port.",
)
@click.option(
    "--moto-host",
    default="127.0.0.1",
    show_default=True,
    help="Where moto (and the AWS contention layer) listen; 0.0.0.0 lets a `sam local invoke`"
    " container reach them on Linux.",
)
@aws_contention_options
def up(
    no_runner: bool,
    workers: int | None,
    visibility_timeout: int | None,
    sweep_interval: float | None,
    parameters: tuple[str, ...],
    dynamodb_port: int,
    moto_port: int,
    moto_host: str,
    no_aws_contention: bool,
    contention_time_scale: float,
) -> None:
    """Start the local stack in the foreground; Ctrl-C stops it (everything is in memory).

    Prints `export` lines on standard output: paste them into another shell and every `seats`
    command (reserve, load, watch, dlq, event) works against this stack.
    """
    overrides = _parameter_overrides(parameters)
    with _local_errors(), _sigterm_as_interrupt():
        from seat_tools.local.runner import LocalRunner, runner_config
        from seat_tools.local.stack import LocalStack

        _say("starting DynamoDB Local and the moto server ...")
        try:
            with LocalStack(
                parameter_overrides=overrides,
                visibility_timeout_s=visibility_timeout,
                dynamodb_port=dynamodb_port,
                moto_port=moto_port,
                moto_host=moto_host,
                aws_contention=aws_contention_settings(no_aws_contention, contention_time_scale),
            ) as stack:
                _print_exports(stack.cli_environment())
                _say(stack.contention_description())
                _say(
                    f"table {stack.table_name}; queue {stack.queue_url} (visibility timeout "
                    f"{stack.visibility_timeout_s} s); dead-letter queue {stack.dead_letter_queue_url}; "
                    f"topic {stack.topic_arn}"
                )
                layer = "all interfaces" if no_aws_contention else f"{moto_host} (the contention layer)"
                _say(
                    f"DynamoDB listens on {layer}; DynamoDB Local itself listens on all interfaces"
                    f" (it has no bind option); moto on {moto_host}."
                )
                if stack.api_url:
                    page = stack.checkout_page_url
                    _say(
                        f"checkout API {stack.api_url} (no auth locally; docs/reference/http-api.md)"
                        + (f"; example checkout page {page}" if page else "")
                    )
                if no_runner:
                    _say("no runner: messages stay in the queue. Ctrl-C to stop.")
                    _wait_forever()
                    return
                config = runner_config(stack, workers=workers, sweep_interval_s=sweep_interval, issuer=True)
                with LocalRunner(config) as runner:
                    _say(
                        f"{config.workers} worker(s) running {config.handler}; their logs: {stack.log_dir}."
                        " Ctrl-C to stop."
                    )
                    if config.sweep_handler:
                        _say(f"sweeper: {config.sweep_handler} every {config.sweep_interval_s:g} s")
                    if config.issue_handler:
                        _say(
                            f"ticket issuer: {config.issue_handler} every {config.issue_interval_s:g} s,"
                            f" {config.issue_seconds} s a run (on AWS: every minute, 60 s a run)"
                        )
                    _wait_forever(lambda: runner.stats.as_dict())
        except KeyboardInterrupt:
            pass
        _say("stopped: DynamoDB Local, the moto server and the workers have exited.")


def _print_exports(variables: Mapping[str, str]) -> None:
    # A profile or stack name in the other shell would send `seats` to AWS instead.
    click.echo("unset AWS_PROFILE AWS_DEFAULT_PROFILE AWS_SESSION_TOKEN AWS_ENDPOINT_URL SEATS_STACK_NAME")
    for name, value in variables.items():
        click.echo(f"export {name}={shlex.quote(value)}")
    sys.stdout.flush()


def _wait_forever(stats: Any = None) -> None:
    """Sleeps until Ctrl-C; every 10 s prints the runner's counters when they changed."""
    last: Any = None
    while True:
        time.sleep(10)
        if stats is not None:
            current = stats()
            if current != last:
                _say("runner: " + ", ".join(f"{k} {v}" for k, v in current.items()))
                last = current


@click.command()
@click.option(
    "--capacity", type=click.IntRange(min=0), default=1000, show_default=True, help="Seats on sale."
)
@click.option(
    "--requests",
    type=click.IntRange(min=1),
    default=5000,
    show_default=True,
    help="Reservation messages sent.",
)
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    help="Concurrent function instances (default: the template's MaximumConcurrency, at most 8).",
)
@click.option(
    "--duplicates",
    type=click.FloatRange(min=0, max=100),
    default=10.0,
    show_default=True,
    help="Percentage of messages that are re-sends of an earlier one.",
)
@click.option(
    "--shards",
    type=click.IntRange(min=1, max=MAX_SHARDS),
    help="Items the seat class is kept in (default: one per worker, the recommended configuration,"
    " but no more than the capacity fills with a full batch each, as `seats onsale plan` sizes"
    " them; docs/explanation/sharding.md).",
)
@click.option(
    "--single-item",
    is_flag=True,
    help="Keep the seat class in one item that every worker shares (= --shards 1): the comparison"
    " that shows what conflicts cost.",
)
@click.option("--seed", type=int, help="Seed for quantities, customers and duplicate positions.")
@output_option
@aws_contention_options
def demo(
    capacity: int,
    requests: int,
    workers: int | None,
    duplicates: float,
    shards: int | None,
    single_item: bool,
    seed: int | None,
    output: OutputFormat,
    no_aws_contention: bool,
    contention_time_scale: float,
) -> None:
    """Run an on-sale end to end on a fresh local stack and check the result.

    Creates an event with CAPACITY seats kept in one item per worker (the recommended
    configuration, with at least a full batch of seats on each item; --single-item for one shared
    item), sends REQUESTS reservations at once (some
    duplicated, some for several seats), lets the function's workers take them, collects every
    outcome from the topic, then checks the table against the answers. Exits with status 1 if
    anything was oversold, left unanswered, answered inconsistently or dead-lettered.
    """
    if single_item and shards not in (None, 1):
        raise click.UsageError("--single-item keeps the class in one item: leave out --shards")
    with _local_errors(), _sigterm_as_interrupt():
        from seat_tools.local.demo import DemoOptions, checks_passed, run_demo

        options = DemoOptions(
            capacity=capacity,
            requests=requests,
            duplicates_pct=duplicates,
            workers=workers,
            shards=1 if single_item else shards,
            seed=seed,
            aws_contention=aws_contention_settings(no_aws_contention, contention_time_scale),
        )
        summary = run_demo(options, progress=_say)
    if output is OutputFormat.JSON:
        print_json(summary)
    elif output is OutputFormat.TEXT:
        print_text([summary])
    else:
        _print_summary(summary)
    if not checks_passed(summary):
        raise click.ClickException(f"the on-sale checks failed; worker logs: {summary.get('log_dir')}")


SUMMARY_ROWS = (
    ("capacity", "seats on sale"),
    ("requests", "reservation messages sent"),
    ("distinct_reservations", "distinct reservation ids among them"),
    ("confirmed", "reservations answered CONFIRMED"),
    ("confirmed_seats", "seats in those reservations"),
    ("sold_out", "reservations answered SOLD_OUT"),
    ("invalid", "reservations answered INVALID"),
    ("unknown_event", "reservations answered UNKNOWN_EVENT"),
    ("duplicates", "re-sent messages answered again with the recorded outcome"),
    ("sold", "table: seats sold"),
    ("available", "table: seats available"),
    ("oversold", "seats on which the table and the answers disagree (must be 0)"),
    ("outcomes_missing", "reservation ids sent that got no answer (must be 0)"),
    ("inconsistent", "reservation ids answered two different ways (must be 0)"),
    ("dlq_depth", "messages in the dead-letter queue (must be 0)"),
    ("tickets_defects", "defects of the event's ticket numbers, seats tickets audit (must be 0)"),
    ("reservations_numbered", "reservations the ticket issuer numbered"),
    ("workers", "function instances"),
    ("shards", "items the seat class is kept in (recommended: one per worker, a full batch each)"),
    ("invocations", "function invocations"),
    ("elapsed_s", "seconds from the first message sent to the last answer"),
    ("reservations_per_s", "reservation messages answered per second"),
)


def _print_summary(summary: Mapping[str, Any]) -> None:
    """`key: value  meaning` lines; the keys are those of --output json."""
    from seat_tools.local.demo import checks_passed

    click.echo(f"on-sale of event {summary.get('event_id', '')} on the local stack")
    width = max(len(key) for key, _ in SUMMARY_ROWS) + 1
    for key, meaning in SUMMARY_ROWS:
        if key in summary:
            click.echo(f"  {key + ':':<{width}} {summary[key]!s:<8} {meaning}")
    contention = summary.get("aws_contention")
    if contention:
        click.echo(
            "  AWS contention layer: {transactions_committed} transactions committed, cancelled by"
            " reason {transactions_cancelled}, {write_conflicts} single-item write conflicts,"
            " {throttled_requests} throttled requests, {write_units_cancelled:g} write units spent on"
            " cancelled transactions".format(**contention)
        )
    audit = summary.get("tickets_audit")
    if audit is not None:
        click.echo("  tickets audit: " + ("ticket numbers sound" if audit == "ok" else "DEFECTS"))
        for defect in [] if audit == "ok" else audit:
            click.echo(f"    {defect}")
    for line in explain(summary):
        click.echo(line)
    verdict = "all checks passed" if checks_passed(summary) else "CHECKS FAILED"
    click.echo(f"{verdict}; worker logs in {summary.get('log_dir')}")


def explain(summary: Mapping[str, Any]) -> list[str]:
    """The lines under the summary that say what its numbers mean, and where its conflicts come from."""
    workers, shards = summary.get("workers") or 0, summary.get("shards") or 1
    items = f"{shards} item{'s' if shards != 1 else ''}"
    if workers <= 1:
        layout = f"1 worker on {items}: nothing to conflict with"
    elif shards >= workers:
        layout = (
            f"{workers} workers on {items}, one each at least (recommended): fewer conflicts than"
            " with `--single-item`, all on one item"
        )
    elif shards == summary.get("recommended_shards"):
        layout = (
            f"{workers} workers share {items}: {summary.get('capacity') or 0:,} seats fill no more items"
            f" with a full batch each (about {summary.get('seats_per_batch') or 0:.0f} seats), so workers"
            " meet on items and conflict; a bigger capacity gets one item per worker"
        )
    else:
        layout = f"{workers} workers share {items}: more conflicts than the default, one item per worker"
    lines = [
        "  meaning: rows marked (must be 0) are the guarantees: no seat sold twice or lost, every"
        " reservation answered once; reservations_per_s measures this machine running every engine,"
        " not AWS",
        "  meaning: the contention line is what AWS would do; cancelled transactions' write units are"
        f" paid for and sell nothing. {layout}",
    ]
    return lines + conflicts_explained(summary)


def conflicts_explained(summary: Mapping[str, Any]) -> list[str]:
    """Where the run's transaction conflicts came from, with its own figures: none when the run has
    no contention figures or no conflict, or when workers share items (the layout says why)."""
    contention = summary.get("aws_contention") or {}
    cancelled: Mapping[str, int] = contention.get("transactions_cancelled") or {}
    conflicts = int(cancelled.get("TransactionConflict", 0))
    transactions = int(contention.get("transactions_committed", 0)) + sum(cancelled.values())
    workers, shards = summary.get("workers") or 0, summary.get("shards") or 1
    if not conflicts or not transactions or workers <= 1 or shards < workers:
        return []
    capacity, per_batch = summary.get("capacity") or 0, summary.get("seats_per_batch") or 0
    per_item = round(capacity / shards / per_batch) if per_batch else 0
    plural = "es" if per_item != 1 else ""
    batches = f", about {per_item} batch{plural} of {per_batch:.0f}" if per_batch else ""
    batch_s = (summary.get("mean_invocation_ms") or 0) / 1000
    command = (
        f"seats simulate --containers {workers} --shards {shards} --capacity {capacity}"
        f" --requests {summary.get('requests')} --duplicates {(summary.get('duplicates_pct') or 0) / 100:g}"
    )
    return [
        f"  conflicts: {conflicts} of {transactions} transactions ({100 * conflicts / transactions:.0f}%)."
        f" Each container keeps an item of its own ({capacity / shards:,.0f} seats{batches}); containers"
        " meet only where they look for an item at the same moment: at the start (each draws one at"
        " random, unseen by the others) and as items run dry (seats move between items, the class is"
        " read whole).",
        f"  conflicts: an item nobody took from for {SHARD_IN_USE_SECONDS:g} s counts as free, and a"
        f" batch takes {batch_s:.1f} s here (every engine on this machine; 0.1-0.2 s in the model of"
        " AWS): a container looking for an item also lands on one whose container is still busy. A"
        f" sale of this size modelled on AWS (one seat a request): `{command}`.",
    ]
