"""`seats event block` and `seats event unblock`: take seats of a mapped class out of sale, and give
them back (docs/guides/seat-maps.md, docs/reference/cli.md). The writes are `seat_tools.seat_blocks`'."""

from __future__ import annotations

import click

from seat_inventory.models import RetryableError, SeatKey, SeatRow
from seat_inventory.parsing import MAX_ID_LENGTH, MAX_SEAT_CLASS_LENGTH
from seat_tools.cli.context import CliContext
from seat_tools.cli.errors import CommandError, ExitCode, explain
from seat_tools.cli.event_commands import _checked_id, event, pass_cli
from seat_tools.cli.output import OutputFormat, output_option, print_json, print_text
from seat_tools.operator_errors import InventoryChangeRefused, OperatorOutcomeUnknown, UnknownSeatClass


def _seat_command(name: str, verb: str, help_text: str) -> None:
    @event.command(name, help=help_text)
    @click.argument("event_id")
    @click.option("--seat-class", required=True, help="The mapped seat class the seats are in.")
    @click.option(
        "--seat",
        "seats",
        multiple=True,
        required=True,
        help="A seat id <section>-<row>-<position>, e.g. STC-R1-7; repeat for more (all or none).",
    )
    @output_option
    @pass_cli
    def command(
        obj: CliContext, event_id: str, seat_class: str, seats: tuple[str, ...], output: OutputFormat
    ) -> None:
        key = SeatKey(
            _checked_id("event_id", event_id, MAX_ID_LENGTH),
            _checked_id("seat_class", seat_class, MAX_SEAT_CLASS_LENGTH),
        )
        table = obj.inventory_table()
        change = table.block_seats if name == "block" else table.unblock_seats
        try:
            rows = change(key, seats)
        except (UnknownSeatClass, InventoryChangeRefused, ValueError) as exc:
            raise click.ClickException(f"{exc}; nothing was changed") from exc
        except RetryableError as exc:
            # The write was checked: it was not applied (seat_tools.seat_blocks).
            explained = explain(exc, doing="no seat was changed")
            raise (explained or click.ClickException(str(exc))) from exc
        except OperatorOutcomeUnknown as exc:
            raise CommandError(str(exc), ExitCode.UNAVAILABLE) from exc
        _print(key, verb, list(dict.fromkeys(seats)), rows, output)


def _print(key: SeatKey, verb: str, seats: list[str], rows: dict[str, SeatRow], output: OutputFormat) -> None:
    documents = [
        {"row_id": r.row_id, "available": r.available, "held": r.held, "sold": r.sold}
        for r in sorted(rows.values(), key=lambda r: r.row_id)
    ]
    if output is OutputFormat.JSON:
        print_json({"event_id": key.event_id, "seat_class": key.seat_class, verb: seats, "rows": documents})
        return
    if output is OutputFormat.TEXT:
        print_text({"event_id": key.event_id, "seat_class": key.seat_class, **d} for d in documents)
        return
    click.echo(f"{key.event_id} {key.seat_class}: {verb} {', '.join(seats)}")
    for d in documents:
        click.echo(
            f"  row item {d['row_id']}: available {d['available']}, held {d['held']}, sold {d['sold']}"
        )


_seat_command(
    "block",
    "blocked",
    "Take free seats of a mapped class of EVENT_ID out of sale (all or none; held, sold or blocked"
    " seats refuse the command). Exactly once, even if DynamoDB's reply is lost.",
)
_seat_command(
    "unblock",
    "unblocked",
    "Give back seats an operator blocked (all or none; a seat not blocked, or blocked by the seat"
    " map itself, refuses the command): on sale, or to the class's open waiting list (a class"
    " without capacity pools). Exactly once, even if DynamoDB's reply is lost.",
)
