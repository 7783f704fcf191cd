"""`seats`: create and inspect inventory, send reservations, watch outcomes, run the local stack."""

from __future__ import annotations

import traceback
from typing import Any

import click

import seat_tools.cli.seat_block_commands  # noqa: F401 - registers `event block` and `event unblock`
from seat_tools.cli.context import CliContext
from seat_tools.cli.errors import ExitCode, explain
from seat_tools.cli.event_commands import event


class SeatsGroup(click.Group):
    """The `seats` group: every failure of every command ends as one line and a documented exit code.

    Exceptions `explain` knows (AWS configuration, unreachable endpoints, refused calls) become a
    CommandError; Ctrl-C exits 130 without a traceback; `--debug` prints the traceback too. An
    exception nothing explains is a bug and keeps its traceback.
    """

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            if ctx.params.get("debug"):
                traceback.print_exc()
            raise
        except KeyboardInterrupt:
            if ctx.params.get("debug"):
                traceback.print_exc()
            click.echo("interrupted", err=True)
            ctx.exit(ExitCode.INTERRUPTED)
        except Exception as exc:
            explained = explain(exc)
            if explained is None:
                raise
            if ctx.params.get("debug"):
                traceback.print_exc()
            raise explained from exc


@click.group(
    cls=SeatsGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100}
)
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
@click.option("--debug", is_flag=True, help="Print the traceback of a failure besides its one-line message.")
@click.version_option(package_name="seat-inventory")
@click.pass_context
def cli(
    ctx: click.Context,
    stack_name: str | None,
    region: str | None,
    profile: str | None,
    endpoint_url: str | None,
    debug: bool,
) -> None:
    """Ticket and seat inventory: SQS -> Lambda -> DynamoDB -> SNS.

    \b
    Exit codes: 0 done; 1 the command reports a failure; 2 usage (bad option, no resource names);
    3 AWS configuration (profile, region, credentials, endpoint URL); 4 AWS unreachable or busy,
    try again; 5 AWS refused the call (missing table/queue/topic/stack, access denied);
    130 interrupted.
    """
    ctx.obj = CliContext(stack_name=stack_name, region=region, profile=profile, endpoint_url=endpoint_url)


cli.add_command(event)
# Commands of the local stack and of traffic are registered below by their modules' authors.
from seat_tools.cli.request_commands import cancel, confirm, hold, reserve  # noqa: E402
from seat_tools.cli.traffic_commands import dlq, invoke, load, watch  # noqa: E402

cli.add_command(reserve)
cli.add_command(hold)
cli.add_command(confirm)
cli.add_command(cancel)
cli.add_command(load)
cli.add_command(watch)
cli.add_command(dlq)
cli.add_command(invoke)
from seat_tools.cli.local_commands import demo, local  # noqa: E402

cli.add_command(local)
cli.add_command(demo)
from seat_tools.cli.holds_commands import holds  # noqa: E402
from seat_tools.cli.reservation_commands import reservation  # noqa: E402

cli.add_command(reservation)
cli.add_command(holds)
from seat_tools.cli.bench_commands import bench  # noqa: E402

cli.add_command(bench)
from seat_tools.cli.simulate_commands import simulate  # noqa: E402

cli.add_command(simulate)
from seat_tools.cli.onsale_commands import onsale  # noqa: E402

cli.add_command(onsale)
from seat_tools.cli.tickets_commands import tickets  # noqa: E402

cli.add_command(tickets)
from seat_tools.cli.checkin_commands import checkin  # noqa: E402  (also adds the gate's `tickets` commands)
from seat_tools.cli.tokens_commands import tokens  # noqa: E402

cli.add_command(tokens)
cli.add_command(checkin)
from seat_tools.cli.waitlist_commands import waitlist  # noqa: E402

cli.add_command(waitlist)
