"""`seats onsale plan` and `seats onsale check`: size an on-sale, and check a deployed stack for it.

The arithmetic is `seat_tools.onsale.plan` (pure, unit-tested); the AWS reads are
`seat_tools.onsale.stack_reader` (describe calls only). docs/guides/size-a-sale.md has the rules and
their sources.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import click

from seat_inventory.parsing import MAX_ID_LENGTH, MAX_SEAT_CLASS_LENGTH, id_problem
from seat_tools.cli.context import CliContext
from seat_tools.cli.errors import CommandError, ExitCode
from seat_tools.cli.output import OutputFormat, output_option, print_json, print_text
from seat_tools.onsale.plan import (
    PLANNED_MEMORY_MB,
    SNS_PUBLISH_QUOTA_DEFAULT,
    Assessment,
    ClassShards,
    SaleInputs,
    SalePlan,
    assess_stack,
    plan_sale,
)
from seat_tools.onsale.stack_reader import StackReader, StackResources
from seat_tools.seat_map_files import load_file as load_seat_map

pass_cli = click.make_pass_decorator(CliContext)

RATE_OPTION_HELP = "Reservations per second at the sale's peak (each confirmed: the most write units)."


def _figure(value: float | int | str) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, float) and value == math.inf:
        return "unlimited"
    if isinstance(value, float) and value != int(value):
        return f"{value:,.2f}"
    return f"{int(value):,}"


def _finite(value: float) -> float | None:
    """JSON has no infinity: an unlimited figure is null."""
    return None if value == math.inf else value


@click.group()
def onsale() -> None:
    """Size an on-sale (plan) and check a deployed stack against it (check).

    See docs/guides/size-a-sale.md.
    """


@onsale.command("plan")
@click.option("--rate", type=click.FloatRange(min=1), required=True, help=RATE_OPTION_HELP)
@click.option(
    "--seats",
    type=click.IntRange(min=1),
    help="Seats on sale: the sale's length and cost, and at most one shard item per full batch of seats.",
)
@click.option(
    "--seats-per-request",
    type=click.IntRange(1, 100),
    default=1,
    show_default=True,
    help="Seats each reservation takes (with --seats).",
)
@click.option(
    "--seat-map",
    "seat_map",
    type=click.Path(dir_okay=False),
    help="A seat map file (JSON or CSV, docs/guides/seat-maps.md) instead of --seats: its sellable seats"
    " (blocked ones left out), sold best available on row items, no shard items.",
)
@click.option(
    "--customer-limit",
    is_flag=True,
    help="The class has a per-customer limit: each reservation also updates its customer's counter.",
)
@click.option(
    "--duration",
    type=click.FloatRange(min=0, min_open=True),
    help="Seconds the sale lasts at RATE, instead of --seats: its cost, with what it sets while it lasts.",
)
@click.option(
    "--batch-size",
    type=click.IntRange(1, 10_000),
    help="The mapping's BatchSize [default: the plan picks it: 30 when the class's 64 shard items"
    " can take the rate in batches of 30 (gathered sooner, answered sooner), else 99].",
)
@click.option(
    "--memory",
    "memory_mb",
    type=click.IntRange(128, 10_240),
    default=PLANNED_MEMORY_MB,
    show_default=True,
    help="The reserve function's memory, MB (ReserveFunctionMemorySize): its share of a vCPU.",
)
@click.option(
    "--issuer-memory",
    "issuer_memory_mb",
    type=click.IntRange(128, 10_240),
    default=PLANNED_MEMORY_MB,
    show_default=True,
    help="The ticket issuer's memory, MB (IssueFunctionMemorySize).",
)
@click.option(
    "--sns-publish-quota",
    type=click.IntRange(min=1),
    default=SNS_PUBLISH_QUOTA_DEFAULT,
    show_default=True,
    help="The account's SNS publish quota in the stack's region, messages a second (us-east-1's"
    " default; most regions have less).",
)
@click.option(
    "--front-door",
    type=click.Choice(["api", "http-api", "queue"]),
    default="api",
    show_default=True,
    help="How requests arrive: through the checkout API (the template's REST API: a request and a"
    " SendMessage each), priced as an HTTP API with its SQS-SendMessage integration instead"
    " (http-api), or sent to the queue by a producer, 10 a call.",
)
@output_option
def plan(
    rate: float,
    seats: int | None,
    seats_per_request: int,
    seat_map: str | None,
    customer_limit: bool,
    duration: float | None,
    batch_size: int | None,
    memory_mb: int,
    issuer_memory_mb: int,
    sns_publish_quota: int,
    front_door: str,
    output: OutputFormat,
) -> None:
    """Print what a sale at RATE reservations per second needs, one line each, the value then the
    rule behind it: the mapping's BatchSize, the reserve function's memory, MaximumConcurrency,
    shard items, the event pollers (reservation queues, each one's minimum and maximum), the
    provisioned and reserved
    concurrency, the table's and the TicketsToIssue index's warm throughput, the table's quota
    and maximum, the SNS publish quota, the API throttles, Lambda's concurrency, the scale-up
    time, the ticket issuer's memory and series, and the cost per million (through a REST and an
    HTTP API) and (with --seats or --duration) of the sale, pre-warming, pollers and provisioned
    concurrency included. With --seat-map, a seat map's best-available sale
    (docs/guides/size-a-sale.md).

    Then each problem (what stops the design reaching RATE, with the arithmetic) and each warning
    (what falls behind the sale without stopping it, such as ticket numbering).

    Exit status 1 when this design cannot reach the rate (more than 64 shard items, event pollers
    past what 4 reservation queues' mappings have from the first message, an index whose busiest
    partition cannot keep up, more than 1,000 containers).
    """
    try:
        if seat_map is not None:
            if seats is not None:
                raise ValueError("give --seats or --seat-map, not both")
            seats = sellable_seats(seat_map)
        result = plan_sale(
            SaleInputs(
                rate,
                seats=seats,
                seats_per_request=seats_per_request,
                customer_limit=customer_limit,
                mapped=seat_map is not None,
                duration_s=duration,
                batch_size=batch_size,
                memory_mb=memory_mb,
                issuer_memory_mb=issuer_memory_mb,
                sns_publish_quota=sns_publish_quota,
                api=front_door != "queue",
                api_kind="http" if front_door == "http-api" else "rest",
            )
        )
    except (ValueError, OSError) as exc:
        raise click.BadParameter(str(exc)) from exc
    _print_plan(result, output)
    if result.problems:
        raise click.exceptions.Exit(ExitCode.FAILED)


def sellable_seats(path: str) -> int:
    """The seats a seat map puts on sale: every class's, blocked seats left out."""
    try:
        seat_map = load_seat_map(path)
    except OSError as exc:
        raise ValueError(f"{path}: {exc.strerror or exc}") from exc
    return sum(c.capacity for c in seat_map.classes.values())


def _print_plan(result: SalePlan, output: OutputFormat) -> None:
    inputs = result.inputs
    if output is OutputFormat.JSON:
        print_json(
            {
                "rate": inputs.rate,
                "seats": inputs.seats,
                "seats_per_request": inputs.seats_per_request,
                "customer_limit": inputs.customer_limit,
                "seat_map": inputs.mapped,
                "duration_s": inputs.duration_s,
                "memory_mb": inputs.memory_mb,
                "issuer_memory_mb": inputs.issuer_memory_mb,
                "sns_publish_quota": inputs.sns_publish_quota,
                "front_door": ("http-api" if inputs.api_kind == "http" else "api") if inputs.api else "queue",
                "items": [
                    {"item": i.key, "label": i.label, "value": i.value, "rule": i.rule} for i in result.items
                ],
                "figures": result.values,
                "problems": list(result.problems),
                "warnings": list(result.warnings),
            }
        )
        return
    if output is OutputFormat.TEXT:
        print_text({"item": i.key, "value": i.value, "rule": i.rule} for i in result.items)
        print_text({"item": "problem", "value": p, "rule": ""} for p in result.problems)
        print_text({"item": "warning", "value": w, "rule": ""} for w in result.warnings)
        return
    seats = f", {inputs.seats:,} seats" if inputs.seats is not None else ""
    click.echo(f"On-sale at {_figure(inputs.rate)} reservations/s{seats}:")
    label_width = max(len(i.label) for i in result.items)
    value_width = max(len(_figure(i.value)) for i in result.items)
    for item in result.items:
        click.echo(f"  {item.label:<{label_width}}  {_figure(item.value):>{value_width}}  {item.rule}")
    for problem in result.problems:
        click.echo(f"cannot: {problem}")
    for warning in result.warnings:
        click.echo(f"behind: {warning}")


@onsale.command("check")
@click.option(
    "--stack-name",
    "check_stack",
    help="The deployed stack to read [default: seats --stack-name, or SEATS_STACK_NAME].",
)
@click.option("--event", "event_id", required=True, help="The event whose seat classes go on sale.")
@click.option(
    "--seat-class",
    "seat_classes",
    multiple=True,
    help="Only this seat class (repeat for several) [default: every class of the event].",
)
@click.option(
    "--rate", type=click.FloatRange(min=1), help=RATE_OPTION_HELP + " [default: the rate the stack supports]."
)
@click.option(
    "--sns-publish-quota",
    type=click.IntRange(min=1),
    default=SNS_PUBLISH_QUOTA_DEFAULT,
    show_default=True,
    help="The account's SNS publish quota in the stack's region, messages a second (not read from"
    " AWS: us-east-1's default unless given).",
)
@output_option
@pass_cli
def check(
    obj: CliContext,
    check_stack: str | None,
    event_id: str,
    seat_classes: tuple[str, ...],
    rate: float | None,
    sns_publish_quota: int,
    output: OutputFormat,
) -> None:
    """Read a deployed stack and say what would cap a sale of EVENT at RATE reservations per second.

    \b
    It reads the event source mapping (MaximumConcurrency or its event pollers, BatchSize, state),
    the functions' memory, the reserve function's reserved concurrency and the account's
    (GetAccountSettings), the table's and the TicketsToIssue index's WarmThroughput, the table's
    OnDemandThroughput and quotas (DescribeTable, DescribeLimits), each seat class's shard items,
    and the checkout API's throttles (GetStage, usage plans, GetAccount); the SNS publish quota is
    --sns-publish-quota. One line per finding.
    Without --rate it prints the rate the stack supports and what caps it.
    Exit status 0 when ready for the rate, 1 when not.
    """
    if check_stack:
        obj.stack_name = check_stack
    checks = [("--event", "event_id", event_id, MAX_ID_LENGTH)]
    checks += [("--seat-class", "seat_class", c, MAX_SEAT_CLASS_LENGTH) for c in seat_classes]
    for option, name, value, length in checks:
        problem = id_problem(name, value, length)
        if problem:
            raise click.BadParameter(problem, param_hint=option)
    try:
        resources = StackResources.from_outputs(obj.stack_outputs())
    except ValueError as exc:
        raise CommandError(f"stack {obj.stack_name!r}: {exc}: is it this project's stack?") from exc
    classes = obj.inventory_table().get_event(event_id)
    if not classes:
        raise CommandError(f"event {event_id!r} not found in {resources.table_name}")
    if seat_classes:
        unknown = sorted(set(seat_classes) - {c.seat_class for c in classes})
        if unknown:
            raise CommandError(f"event {event_id!r} has no seat class {', '.join(unknown)}")
        classes = [c for c in classes if c.seat_class in seat_classes]
    shards = [ClassShards(c.seat_class, c.shard_count, c.shard_items, c.max_per_customer) for c in classes]
    try:
        settings = StackReader(obj.client).read(resources, shards)
    except LookupError as exc:
        raise CommandError(f"stack {obj.stack_name!r}: {exc}") from exc
    series = obj.inventory_table().read_ticket_format(event_id).series
    settings = replace(settings, sns_publish_quota=sns_publish_quota, ticket_series=series)
    assessment = assess_stack(settings, rate)
    _print_check(obj.stack_name or "", event_id, assessment, output)
    if not assessment.ready:
        raise click.exceptions.Exit(ExitCode.FAILED)


def _print_check(stack: str, event_id: str, assessment: Assessment, output: OutputFormat) -> None:
    documents: list[dict[str, Any]] = [
        {
            "item": f.key,
            "ok": f.ok,
            "label": f.label,
            "have": f.have,
            "need": f.need,
            "supports": _finite(f.supports),
            "rule": f.rule,
        }
        for f in assessment.findings
    ]
    if output is OutputFormat.JSON:
        print_json(
            {
                "stack": stack,
                "event_id": event_id,
                "rate": assessment.rate,
                "rate_given": assessment.rate_given,
                "ready": assessment.ready,
                "supported_rate": _finite(assessment.supported_rate),
                "capped_by": assessment.capped_by,
                "findings": documents,
            }
        )
        return
    if output is OutputFormat.TEXT:
        print_text(documents)
        return
    target = (
        f"at {_figure(assessment.rate)} reservations/s"
        if assessment.rate_given
        else "at the rate it supports"
    )
    click.echo(f"onsale check {stack}, event {event_id}, {target}:")
    for f in assessment.findings:
        supports = "unlimited" if f.supports == math.inf else f"{f.supports:,.0f}/s"
        need = f"needs {f.need}; " if f.need else ""
        click.echo(
            f"{'ok' if f.ok else 'SHORT':<6}{f.label}: {f.have} ({need}supports {supports}) - {f.rule}"
        )
    short = [f for f in assessment.findings if not f.ok]
    supported = (
        f"the stack supports about {assessment.supported_rate:,.0f} reservations/s,"
        f" capped by {assessment.capped_by}"
    )
    if short:
        click.echo(f"NOT READY: {len(short)} of {len(assessment.findings)} findings short; {supported}")
    else:
        click.echo(f"READY: {supported}")
