"""`seats holds sweep`: run the hold sweeper once against the configured table and topic."""

from __future__ import annotations

import click

from seat_inventory.logic.sweep_holds import release_expired_holds
from seat_inventory.publishing.sns_publisher import SnsOutcomePublisher
from seat_inventory.settings import DEFAULT_SWEEP_LIMIT
from seat_inventory.wiring import SystemClock
from seat_tools.cli.context import CliContext
from seat_tools.cli.output import OutputFormat, output_option, print_json, print_text

pass_cli = click.make_pass_decorator(CliContext)


@click.group()
def holds() -> None:
    """Holds: release the ones that expired."""


@holds.command("sweep")
@click.option(
    "--limit",
    type=click.IntRange(min=1),
    default=DEFAULT_SWEEP_LIMIT,
    show_default=True,
    help="Most expired holds to release in this run.",
)
@output_option
@pass_cli
def sweep(obj: CliContext, limit: int, output: OutputFormat) -> None:
    """Release expired holds now (what the scheduled SweepHoldsFunction does every run).

    Safe to run while the scheduled sweeper runs: each hold is released once.
    """
    resources = obj.resources()
    resources.require("table_name", "outcomes_topic_arn")
    assert resources.outcomes_topic_arn is not None
    publisher = SnsOutcomePublisher(obj.client("sns"), resources.outcomes_topic_arn)
    result = release_expired_holds(obj.inventory_table(), publisher, SystemClock(), limit=limit)
    summary = {
        "released": len(result.released),
        "seats_released": result.seats_released,
        "republished": result.republished,
        "unpublished": result.unpublished,
        "skipped": result.skipped,
        "failed_groups": result.failed_groups,
    }
    if output is OutputFormat.JSON:
        print_json(summary)
    elif output is OutputFormat.TEXT:
        print_text([summary])
    else:
        click.echo(
            f"released {summary['released']} hold(s), {summary['seats_released']} seat(s);"
            f" republished {summary['republished']} earlier expiry(ies);"
            f" {summary['unpublished']} left to publish; {summary['skipped']} skipped"
        )
        for group in result.failed_groups:
            click.echo(f"left for the next run: {group}", err=True)
    if result.failed_groups or result.unpublished:
        raise SystemExit(1)
