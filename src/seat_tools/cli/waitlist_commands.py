"""`seats waitlist ...`: a seat class's waiting list (docs/guides/waiting-list.md): open it, close
it, and show what the lists of an event hold (`seat_tools.waitlist_admin`)."""

from __future__ import annotations

from typing import Any

import click

from seat_inventory.models import MAX_OFFER_SECONDS, MIN_OFFER_SECONDS, RetryableError, SeatKey, iso_utc
from seat_inventory.parsing import MAX_ID_LENGTH, MAX_SEAT_CLASS_LENGTH, id_problem
from seat_tools.cli.context import CliContext
from seat_tools.cli.errors import explain
from seat_tools.cli.event_commands import _epoch
from seat_tools.cli.output import OutputFormat, output_option, print_json, print_text
from seat_tools.operator_errors import InventoryChangeRefused, UnknownSeatClass
from seat_tools.waitlist_admin import WaitlistView
from seat_tools.waitlist_simulation import describe, simulate_waitlist

pass_cli = click.make_pass_decorator(CliContext)


def _key(event_id: str, seat_class: str) -> SeatKey:
    for name, value, length in (
        ("event_id", event_id, MAX_ID_LENGTH),
        ("seat_class", seat_class, MAX_SEAT_CLASS_LENGTH),
    ):
        problem = id_problem(name, value, length)
        if problem:
            raise click.BadParameter(problem, param_hint=name)
    return SeatKey(event_id, seat_class)


def view_document(view: WaitlistView) -> dict[str, Any]:
    waiting = view.waiting_list
    return {
        "event_id": waiting.key.event_id,
        "seat_class": waiting.key.seat_class,
        "open": waiting.open,
        "offer_seconds": waiting.offer_seconds,
        "until": iso_utc(waiting.until) if waiting.until is not None else None,
        "waiting": waiting.waiting,
        "seats_set_aside": view.seats_set_aside,
        "head": [
            {"reservation_id": p.reservation_id, "customer_id": p.customer_id, "quantity": p.quantity}
            for p in view.head
        ],
    }


def _print(views: list[WaitlistView], output: OutputFormat) -> None:
    documents = [view_document(v) for v in views]
    if output is OutputFormat.JSON:
        print_json({"waitlists": documents})
        return
    if output is OutputFormat.TEXT:
        print_text({k: v for k, v in d.items() if k != "head"} for d in documents)
        return
    for d in documents:
        state = "open" if d["open"] else "closed"
        until = f", offers until {d['until']}" if d["until"] else ""
        click.echo(
            f"{d['event_id']} {d['seat_class']}: waiting list {state}, {d['waiting']} waiting,"
            f" {d['seats_set_aside']} seat(s) set aside, offers held {d['offer_seconds']} s{until}"
        )
        for n, entry in enumerate(d["head"], start=1):
            click.echo(
                f"  {n}. {entry['reservation_id']} ({entry['customer_id']}): {entry['quantity']} seat(s)"
            )


def _refused(exc: Exception, doing: str) -> click.ClickException:
    if isinstance(exc, RetryableError):
        return explain(exc, doing=doing) or click.ClickException(str(exc))
    return click.ClickException(f"{exc}; {doing}")


@click.group()
def waitlist() -> None:
    """Waiting lists: seats given back after a sell-out offered in join order (docs/guides/waiting-list.md).

    A request joins its class's open list when it asks (`"waitlist": true`) and is refused for lack
    of seats; the sweeper offers the seats given back to the head of the list as holds (OFFERED).
    """


@waitlist.command("open")
@click.argument("event_id")
@click.argument("seat_class")
@click.option(
    "--offer-seconds",
    type=click.IntRange(MIN_OFFER_SECONDS, MAX_OFFER_SECONDS),
    default=900,
    show_default=True,
    help="How long an offer holds its seats for the entry's customer.",
)
@click.option(
    "--until", help="Offer no seats after this ISO-8601 time (with offset); never after the sale ends."
)
@output_option
@pass_cli
def open_(
    obj: CliContext,
    event_id: str,
    seat_class: str,
    offer_seconds: int,
    until: str | None,
    output: OutputFormat,
) -> None:
    """Open (or reopen with new settings) the waiting list of a class, counted or mapped; from now
    on seats given back to it (cancels, expired holds, unblocked seats of a mapped class) are set
    aside for the list."""
    key = _key(event_id, seat_class)
    table = obj.inventory_table()
    try:
        table.open_waitlist(key, offer_seconds=offer_seconds, until=_epoch(until, "--until"))
        view = table.waitlist_view(key)
    except (UnknownSeatClass, InventoryChangeRefused, ValueError, RetryableError) as exc:
        raise _refused(exc, "the list was not opened") from exc
    assert view is not None
    _print([view], output)


@waitlist.command("close")
@click.argument("event_id")
@click.argument("seat_class")
@output_option
@pass_cli
def close(obj: CliContext, event_id: str, seat_class: str, output: OutputFormat) -> None:
    """Close a class's waiting list: seats given back go on sale again, the seats it set aside go
    back on sale now, and it offers no more (offers out stay holds; entries stay for a reopening)."""
    key = _key(event_id, seat_class)
    table = obj.inventory_table()
    try:
        returned = table.close_waitlist(key)
        view = table.waitlist_view(key)
    except (UnknownSeatClass, InventoryChangeRefused, RetryableError) as exc:
        raise _refused(exc, "the list was not closed") from exc
    if output is OutputFormat.TABLE:
        click.echo(f"{returned} seat(s) back on sale")
    assert view is not None
    _print([view], output)


@waitlist.command("show")
@click.argument("event_id")
@click.option(
    "--head", type=click.IntRange(0, 1000), default=10, show_default=True, help="Entries to list per class."
)
@output_option
@pass_cli
def show(obj: CliContext, event_id: str, head: int, output: OutputFormat) -> None:
    """The waiting lists of EVENT_ID's classes: open or not, entries waiting, seats set aside, and
    the first entries in join order."""
    table = obj.inventory_table()
    try:
        keys = [c.key for c in table.get_event(_key(event_id, "GA").event_id)]
        seat_map = table.read_seat_map(event_id)
        keys += [SeatKey(event_id, name) for name in sorted(seat_map.classes)] if seat_map else []
        views = [v for k in keys if (v := table.waitlist_view(k, head=head)) is not None]
    except RetryableError as exc:
        raise _refused(exc, "nothing shown") from exc
    if not views and output is OutputFormat.TABLE:
        raise click.ClickException(f"event {event_id!r} has no waiting list")
    _print(views, output)


@waitlist.command("simulate")
@click.option(
    "--entries",
    type=click.IntRange(1, 1_000_000),
    default=100_000,
    show_default=True,
    help="Entries waiting (1 or 2 seats each).",
)
@click.option(
    "--released",
    type=click.IntRange(1, 100_000),
    default=5_000,
    show_default=True,
    help="Seats given back at once.",
)
@click.option(
    "--shards", type=click.IntRange(1, 64), default=1, show_default=True, help="Shard items of the class."
)
@click.option("--seed", type=int, default=1, show_default=True, help="Seed of the entries' quantities.")
@output_option
def simulate(entries: int, released: int, shards: int, seed: int, output: OutputFormat) -> None:
    """Serve a waiting list of ENTRIES after a release of RELEASED seats, in process: the service's
    own code on the in-memory store, the sweeper's DynamoDB calls metered. Prints the time to offer
    every seat and the cost per offer, both modelled (seat_tools/waitlist_simulation.py)."""
    run = simulate_waitlist(entries, released, shards=shards, seed=seed)
    if output is OutputFormat.JSON:
        click.echo(run.as_json())
    else:
        for line in describe(run):
            click.echo(line)


@waitlist.command("add-seats")
@click.argument("event_id")
@click.argument("seat_class")
@click.option("--seats", type=click.IntRange(1, 1_000_000), required=True, help="Seats to add.")
@output_option
@pass_cli
def add_seats(obj: CliContext, event_id: str, seat_class: str, seats: int, output: OutputFormat) -> None:
    """Add SEATS to a counted class with an open waiting list, set aside for the list: the
    sweeper's next run offers them to its head, and what nobody waits for goes on sale. Refused,
    never applied twice, when the class's capacity changed since it was read (a retry after a
    lost reply)."""
    key = _key(event_id, seat_class)
    table = obj.inventory_table()
    try:
        table.add_waitlist_seats(key, seats)
        view = table.waitlist_view(key)
    except (UnknownSeatClass, InventoryChangeRefused, ValueError, RetryableError) as exc:
        raise _refused(exc, "no seat was added") from exc
    assert view is not None
    _print([view], output)
