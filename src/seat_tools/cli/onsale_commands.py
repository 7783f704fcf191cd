"""`seats onsale plan` and `seats onsale check`: size an on-sale, and check a deployed stack for it.

The arithmetic is `seat_tools.onsale.plan` (pure, unit-tested); the AWS reads are
`seat_tools.onsale.stack_reader` (describe calls only). docs/guides/size-a-sale.md has the rules and
their sources.
"""

from __future__ import annotations

import math
from typing import Any

import click

from seat_inventory.logic.seat_map import load_file as load_seat_map
from seat_inventory.parsing import MAX_ID_LENGTH, MAX_SEAT_CLASS_LENGTH, id_problem
from seat_tools.cli.context import CliContext
from seat_tools.cli.errors import CommandError, ExitCode
from seat_tools.cli.output import OutputFormat, output_option, print_json, print_text
from seat_tools.onsale.plan import (
    Assessment,
    ClassShards,
    SaleInputs,
    SalePlan,
    assess_stack,
    plan_sale,
)
from seat_tools.onsale.stack_reader import StackReader, StackResources

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
@output_option
def plan(
    rate: float,
    seats: int | None,
    seats_per_request: int,
    seat_map: str | None,
    customer_limit: bool,
    output: OutputFormat,
) -> None:
    """Print what a sale at RATE reservations per second needs: shards, MaximumConcurrency, the
    event pollers, the provisioned concurrency, the table's warm throughput, quota and maximum,
    the API throttles, Lambda's concurrency, the scale-up time and the expected cost, one line
    each, the value then the rule behind it. With --seat-map, a seat map's best-available sale
    (docs/guides/size-a-sale.md).

    Exit status 1 when this design cannot reach the rate (more than 64 shards or 1,000 containers).
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
                "items": [
                    {"item": i.key, "label": i.label, "value": i.value, "rule": i.rule} for i in result.items
                ],
                "figures": result.values,
                "problems": list(result.problems),
            }
        )
        return
    if output is OutputFormat.TEXT:
        print_text({"item": i.key, "value": i.value, "rule": i.rule} for i in result.items)
        print_text({"item": "problem", "value": p, "rule": ""} for p in result.problems)
        return
    seats = f", {inputs.seats:,} seats" if inputs.seats is not None else ""
    click.echo(f"On-sale at {_figure(inputs.rate)} reservations/s{seats}:")
    label_width = max(len(i.label) for i in result.items)
    value_width = max(len(_figure(i.value)) for i in result.items)
    for item in result.items:
        click.echo(f"  {item.label:<{label_width}}  {_figure(item.value):>{value_width}}  {item.rule}")
    for problem in result.problems:
        click.echo(f"cannot: {problem}")


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
@output_option
@pass_cli
def check(
    obj: CliContext,
    check_stack: str | None,
    event_id: str,
    seat_classes: tuple[str, ...],
    rate: float | None,
    output: OutputFormat,
) -> None:
    """Read a deployed stack and say what would cap a sale of EVENT at RATE reservations per second.

    \b
    It reads the event source mapping (MaximumConcurrency, BatchSize, state), the function's
    reserved concurrency and the account's (GetAccountSettings), the table's WarmThroughput,
    OnDemandThroughput and quotas (DescribeTable, DescribeLimits), each seat class's shard items,
    and the checkout API's throttles (GetStage, usage plans, GetAccount). One line per finding.
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
