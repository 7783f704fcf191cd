"""`seats event ...`: create and inspect the inventory of an event."""

from __future__ import annotations

import json

import click

from seat_inventory.cli.context import CliContext
from seat_inventory.models import EventAlreadyExists, SeatKey
from seat_inventory.parsing import MAX_ID_LENGTH, MAX_SEAT_CLASS_LENGTH, id_problem
from seat_inventory.settings import DEFAULT_SEAT_CLASS

pass_cli = click.make_pass_decorator(CliContext)


def _checked_id(name: str, value: str, max_length: int) -> str:
    problem = id_problem(name, value, max_length)
    if problem:
        raise click.BadParameter(problem, param_hint=name.upper())
    return value


@click.group()
def event() -> None:
    """Create and inspect events (one inventory item per seat class)."""


@event.command("create")
@click.argument("event_id")
@click.option("--capacity", type=click.IntRange(min=1), required=True, help="Seats in this seat class.")
@click.option(
    "--seat-class",
    default=DEFAULT_SEAT_CLASS,
    show_default=True,
    help="Seat class to create; run again with another class to add one to the same event.",
)
@pass_cli
def create(obj: CliContext, event_id: str, capacity: int, seat_class: str) -> None:
    """Create the seats of one class of EVENT_ID; an existing class is an error, never overwritten."""
    key = SeatKey(
        _checked_id("event_id", event_id, MAX_ID_LENGTH),
        _checked_id("seat_class", seat_class, MAX_SEAT_CLASS_LENGTH),
    )
    try:
        created = obj.inventory_table().create_seat_class(key, capacity)
    except EventAlreadyExists as exc:
        raise click.ClickException(f"{exc}; nothing was changed") from exc
    click.echo(f"created {created.event_id} {created.seat_class}: capacity {created.capacity}")


@event.command("show")
@click.argument("event_id")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of a table.")
@pass_cli
def show(obj: CliContext, event_id: str, as_json: bool) -> None:
    """Show capacity, available and sold seats per seat class of EVENT_ID."""
    classes = obj.inventory_table().get_event(event_id)
    if not classes:
        raise click.ClickException(f"event {event_id!r} not found")
    if as_json:
        click.echo(
            json.dumps(
                {
                    "event_id": event_id,
                    "seat_classes": [
                        {
                            "seat_class": c.seat_class,
                            "capacity": c.capacity,
                            "available": c.available,
                            "sold": c.sold,
                        }
                        for c in classes
                    ],
                }
            )
        )
        return
    click.echo(f"{'SEAT CLASS':<16}{'CAPACITY':>10}{'AVAILABLE':>11}{'SOLD':>10}")
    for c in classes:
        click.echo(f"{c.seat_class:<16}{c.capacity:>10}{c.available:>11}{c.sold:>10}")
    if len(classes) > 1:
        click.echo(
            f"{'TOTAL':<16}{sum(c.capacity for c in classes):>10}"
            f"{sum(c.available for c in classes):>11}{sum(c.sold for c in classes):>10}"
        )
