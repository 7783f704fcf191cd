"""`seats`: create and inspect inventory, send reservations, watch outcomes, run the local stack."""

from __future__ import annotations

import click

from seat_inventory.cli.context import CliContext
from seat_inventory.cli.event_commands import event


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.option(
    "--stack-name", envvar="SEATS_STACK_NAME", help="Read resource names from this deployed stack's outputs."
)
@click.option("--region", envvar="AWS_REGION", help="AWS region (as the AWS CLI takes it).")
@click.option("--profile", envvar="AWS_PROFILE", help="AWS named profile (as the AWS CLI takes it).")
@click.option(
    "--endpoint-url",
    envvar="AWS_ENDPOINT_URL",
    help="Send every AWS call to this endpoint (a local emulator); defaults to AWS_ENDPOINT_URL.",
)
@click.version_option(package_name="seat-inventory")
@click.pass_context
def cli(
    ctx: click.Context,
    stack_name: str | None,
    region: str | None,
    profile: str | None,
    endpoint_url: str | None,
) -> None:
    """Ticket and seat inventory: SQS -> Lambda -> DynamoDB -> SNS."""
    ctx.obj = CliContext(stack_name=stack_name, region=region, profile=profile, endpoint_url=endpoint_url)


cli.add_command(event)
# Commands of the local stack and of traffic are registered below by their modules' authors.
from seat_inventory.cli.traffic_commands import dlq, invoke, load, reserve, watch  # noqa: E402

cli.add_command(reserve)
cli.add_command(load)
cli.add_command(watch)
cli.add_command(dlq)
cli.add_command(invoke)
from seat_inventory.cli.local_commands import demo, local  # noqa: E402

cli.add_command(local)
cli.add_command(demo)
from seat_inventory.cli.holds_commands import holds  # noqa: E402
from seat_inventory.cli.reservation_commands import reservation  # noqa: E402

cli.add_command(reservation)
cli.add_command(holds)
from seat_inventory.cli.bench_commands import bench  # noqa: E402

cli.add_command(bench)
