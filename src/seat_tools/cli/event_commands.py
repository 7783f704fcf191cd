"""`seats event ...`: create and inspect the inventory of an event, and run its sale.

Every change is one conditional write on the inventory item (see `InventoryTable`): closing,
opening, scheduling and limiting a class set attributes the write that takes seats checks;
capacity changes are relative updates guarded so that capacity never drops below sold + held.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

import click

from seat_inventory.logic.seat_map import Row, SeatFlag, SeatMap, SeatMapError
from seat_inventory.models import (
    MAX_SHARDS,
    PoolInventory,
    RetryableError,
    SaleStatus,
    SeatClassInventory,
    SeatKey,
    SeatRow,
    SeatState,
    iso_utc,
    row_item_of,
)
from seat_inventory.parsing import MAX_ID_LENGTH, MAX_SEAT_CLASS_LENGTH, id_problem
from seat_inventory.settings import DEFAULT_SEAT_CLASS
from seat_tools.cli.context import CliContext
from seat_tools.cli.errors import CommandError, ExitCode, explain
from seat_tools.cli.output import OutputFormat, output_option, print_json, print_text
from seat_tools.cli.pool_commands import pool, pool_document
from seat_tools.operator_commands import OperatorTable
from seat_tools.operator_errors import (
    EventAlreadyExists,
    InventoryChangeRefused,
    OperatorOutcomeUnknown,
    UnknownSeatClass,
    WaitlistTakesNewSeats,
)
from seat_tools.seat_map_commands import SaleRules
from seat_tools.seat_map_files import load_file as load_seat_map

pass_cli = click.make_pass_decorator(CliContext)


def _checked_id(name: str, value: str, max_length: int) -> str:
    problem = id_problem(name, value, max_length)
    if problem:
        raise click.BadParameter(problem, param_hint=name.upper())
    return value


def _epoch(value: str | None, option: str) -> int | None:
    """An ISO-8601 time with a UTC offset (`2026-05-01T10:00:00Z`) as epoch seconds.

    A time without an offset is refused rather than guessed: a sale opening an hour early or
    late is worse than a retyped command.
    """
    if value is None:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError as exc:
        raise click.BadParameter(f"{value!r} is not an ISO-8601 time", param_hint=option) from exc
    if parsed.tzinfo is None:
        raise click.BadParameter(
            f"{value!r} has no UTC offset; write it like 2026-05-01T10:00:00Z or 2026-05-01T12:00:00+02:00",
            param_hint=option,
        )
    return int(parsed.timestamp())


def sale_state(item: SeatClassInventory, now: float) -> str:
    """OPEN, CLOSED (by the operator), SCHEDULED (before the window) or ENDED (after it)."""
    if item.sale_status is SaleStatus.CLOSED:
        return "CLOSED"
    if item.sale_starts_at is not None and now < item.sale_starts_at:
        return "SCHEDULED"
    if item.sale_ends_at is not None and now >= item.sale_ends_at:
        return "ENDED"
    return "OPEN"


def _window(item: SeatClassInventory) -> str | None:
    if item.sale_starts_at is None and item.sale_ends_at is None:
        return None
    starts = iso_utc(item.sale_starts_at) if item.sale_starts_at is not None else "now"
    ends = iso_utc(item.sale_ends_at) if item.sale_ends_at is not None else "open end"
    return f"{starts} .. {ends}"


def _classes(table: OperatorTable, event_id: str, seat_class: str | None) -> list[SeatKey]:
    """The seat class named, or every class of the event when none is."""
    _checked_id("event_id", event_id, MAX_ID_LENGTH)
    if seat_class is not None:
        return [SeatKey(event_id, _checked_id("seat_class", seat_class, MAX_SEAT_CLASS_LENGTH))]
    keys = [c.key for c in table.get_event(event_id)]
    if not keys:
        raise click.ClickException(f"event {event_id!r} not found")
    return keys


def _apply(
    obj: CliContext,
    event_id: str,
    seat_class: str | None,
    change: Callable[[OperatorTable, SeatKey], SeatClassInventory],
    output: OutputFormat = OutputFormat.TABLE,
) -> None:
    """Makes the change to the seat class named (or to every class of the event), then prints them."""
    table = obj.inventory_table()
    changed = []
    for key in _classes(table, event_id, seat_class):
        try:
            changed.append(change(table, key))
        except UnknownSeatClass as exc:
            raise click.ClickException(f"{exc}; nothing was changed") from exc
        except (InventoryChangeRefused, ValueError) as exc:
            raise click.ClickException(f"{exc}; {key.seat_class} was not changed") from exc
        except RetryableError as exc:
            # The data access checked: the change was not applied (see OperatorCommands).
            explained = explain(exc, doing=f"{key.seat_class} was not changed")
            raise (explained or click.ClickException(str(exc))) from exc
        except OperatorOutcomeUnknown as exc:
            raise CommandError(str(exc), ExitCode.UNAVAILABLE) from exc
    _print_classes(changed, output)


def _print_classes(classes: list[SeatClassInventory], output: OutputFormat) -> None:
    """Seat classes after a change: a sentence each, one JSON object, or one text line each."""
    now = time.time()
    if output is OutputFormat.JSON:
        print_json({"seat_classes": [_class_document(c, now) for c in classes]})
    elif output is OutputFormat.TEXT:
        print_text(_class_document(c, now) for c in classes)
    else:
        for item in classes:
            click.echo(_describe(item))


def _describe(item: SeatClassInventory) -> str:
    limit = item.max_per_customer if item.max_per_customer is not None else "none"
    window = _window(item) or "none"
    shards = f", {item.shard_count} shards" if item.shard_items > 1 else ""
    admission = ", admission token required" if item.admission_required else ""
    return (
        f"{item.event_id} {item.seat_class}: sale {sale_state(item, time.time())}, window {window},"
        f" limit per customer {limit}, capacity {item.capacity} (available {item.available},"
        f" held {item.held}, sold {item.sold}){shards}{admission}"
    )


@click.group()
def event() -> None:
    """Create and inspect events (one inventory item per seat class), and run their sale."""


_MAX_PER_CUSTOMER_OPTION = click.option(
    "--max-per-customer", type=click.IntRange(min=1), help="Most seats one customer may take."
)


@event.command("create")
@click.argument("event_id")
@click.option("--capacity", type=click.IntRange(min=1), help="Seats in this (counted) seat class.")
@click.option(
    "--seat-map",
    "seat_map_path",
    type=click.Path(exists=True, dir_okay=False),
    help="Create the mapped seat classes of this JSON or CSV seat map instead (docs/guides/seat-maps.md).",
)
@click.option(
    "--seat-class",
    default=DEFAULT_SEAT_CLASS,
    show_default=True,
    help="Seat class to create; run again with another class to add one to the same event.",
)
@_MAX_PER_CUSTOMER_OPTION
@click.option("--starts-at", help="Sale opens at this ISO-8601 time (with offset, e.g. ...Z).")
@click.option("--ends-at", help="Sale ends at this ISO-8601 time (with offset).")
@click.option("--closed", is_flag=True, help="Create the class closed; `seats event open` opens it.")
@click.option(
    "--require-admission",
    is_flag=True,
    help="Reserve and hold need an admission token (docs/guides/admission.md);"
    " `seats event admission` toggles it.",
)
@output_option
@click.option(
    "--shards",
    type=click.IntRange(min=1, max=MAX_SHARDS),
    default=1,
    show_default=True,
    help="Split the class's seats over K items, each its own partition key (docs/explanation/sharding.md).",
)
@click.option(
    "--pools",
    default="",
    help="Capacity pools (comma-separated, created first with `seats event pool create`) the class"
    " takes its seats from as well (docs/guides/pools.md).",
)
@pass_cli
def create(
    obj: CliContext,
    event_id: str,
    capacity: int,
    seat_class: str,
    max_per_customer: int | None,
    starts_at: str | None,
    ends_at: str | None,
    closed: bool,
    require_admission: bool,
    output: OutputFormat,
    shards: int,
    pools: str,
    seat_map_path: str | None,
) -> None:
    """Create the inventory of EVENT_ID's seat class. An existing seat class is an error, never overwritten.

    The sale rules can be given now or later (`seats event limit/schedule/close`). With
    --seat-map, every mapped class of the map is created instead (an event has one map; counted
    classes are added beside it with --capacity); its sale rules are given now, copied on each of
    its row items.
    """
    if seat_map_path is not None:
        rules = SaleRules(
            max_per_customer,
            _epoch(starts_at, "--starts-at"),
            _epoch(ends_at, "--ends-at"),
            closed,
            pools=tuple(sorted(p for p in pools.split(",") if p)) if pools else (),
            admission_required=require_admission,
        )
        _create_mapped(obj, event_id, seat_map_path, capacity, seat_class, shards, rules)
        return
    if capacity is None:
        raise click.UsageError("give --capacity (a counted class) or --seat-map (mapped classes)")
    key = SeatKey(
        _checked_id("event_id", event_id, MAX_ID_LENGTH),
        _checked_id("seat_class", seat_class, MAX_SEAT_CLASS_LENGTH),
    )
    seat_map = obj.inventory_table().read_seat_map(key.event_id)
    if seat_map is not None and key.seat_class in seat_map.classes:
        raise click.ClickException(
            f"event {key.event_id!r} has mapped seat class {key.seat_class!r}; nothing was changed"
        )
    try:
        created = obj.inventory_table().create_seat_class(
            key,
            capacity,
            max_per_customer=max_per_customer,
            sale_starts_at=_epoch(starts_at, "--starts-at"),
            sale_ends_at=_epoch(ends_at, "--ends-at"),
            closed=closed,
            shards=shards,
            admission_required=require_admission,
            pools=[p for p in pools.split(",") if p] if pools else (),
        )
    except EventAlreadyExists as exc:
        raise click.ClickException(f"{exc}; nothing was changed") from exc
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from exc
    except RetryableError as exc:  # checked by the data access: not created
        explained = explain(exc, doing=f"{key.seat_class} was not created")
        raise (explained or click.ClickException(str(exc))) from exc
    except OperatorOutcomeUnknown as exc:
        raise CommandError(str(exc), ExitCode.UNAVAILABLE) from exc
    if output is OutputFormat.TABLE:
        spread = f" over {created.shard_items} shards" if created.shard_items > 1 else ""
        click.echo(f"created {created.event_id} {created.seat_class}: capacity {created.capacity}{spread}")
    else:
        _print_classes([created], output)


def _create_mapped(
    obj: CliContext,
    event_id: str,
    path: str,
    capacity: int | None,
    seat_class: str,
    shards: int,
    rules: SaleRules,
) -> None:
    """`seats event create EVENT --seat-map FILE`: the map's classes, their row items, the map;
    the sale rules, pools (which must exist) and admission rule copied on each row item."""
    if capacity is not None or shards != 1 or seat_class != DEFAULT_SEAT_CLASS:
        raise click.UsageError(
            "--seat-map takes its classes and seats from the map: no --capacity, --seat-class or --shards"
        )
    event_id = _checked_id("event_id", event_id, MAX_ID_LENGTH)
    try:
        seat_map = load_seat_map(path)
    except SeatMapError as exc:
        raise click.BadParameter(f"{path}: {exc}", param_hint="--seat-map") from exc
    table = obj.inventory_table()
    counted = {c.seat_class for c in table.get_event(event_id)} & set(seat_map.classes)
    if counted:
        raise click.ClickException(
            f"event {event_id!r} already has counted seat class(es) {sorted(counted)}; nothing was changed"
        )
    try:
        table.check_pools_exist(event_id, rules.pools)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--pools") from exc
    try:
        table.create_seat_map(event_id, seat_map, rules)
    except EventAlreadyExists as exc:
        raise click.ClickException(f"{exc}; nothing was changed") from exc
    except RetryableError as exc:
        explained = explain(exc, doing="the seat map was not created (run the command again)")
        raise (explained or click.ClickException(str(exc))) from exc
    classes = ", ".join(f"{name} {c.capacity} seats" for name, c in seat_map.classes.items())
    click.echo(f"created {event_id} seat map: {classes}")


SEAT_CHARS = {SeatState.HELD: "h", SeatState.SOLD: "s", SeatState.BLOCKED: "#", SeatState.LISTED: "l"}


def _row_picture(row: Row, rows: dict[str, SeatRow]) -> str:
    """One row, a character per seat: `.` free (`w` wheelchair, `c` companion), `h` held, `s` sold,
    `#` blocked, `l` set aside for the waiting list."""
    chars = []
    for seat in row.seats:
        row_id, position = row_item_of(seat.seat_id)
        item = rows.get(row_id)
        state = item.states.get(position) if item is not None else None
        if state is not None:
            chars.append(SEAT_CHARS[state])
        elif SeatFlag.WHEELCHAIR in seat.flags:
            chars.append("w")
        elif SeatFlag.COMPANION in seat.flags:
            chars.append("c")
        else:
            chars.append(".")
    return "".join(chars)


def _show_mapped(
    table: OperatorTable, event_id: str, seat_map: SeatMap, seats: bool, output: OutputFormat
) -> list[dict[str, Any]]:
    """The mapped classes' totals (the sums of their row items), and with `seats` each section row by row."""
    documents = []
    for name, class_map in seat_map.classes.items():
        rows = table.read_seat_rows(SeatKey(event_id, name))
        document: dict[str, Any] = {
            "seat_class": name,
            "seats": len(class_map.seats),
            "available": sum(r.available for r in rows.values()),
            "held": sum(r.held for r in rows.values()),
            "sold": sum(r.sold for r in rows.values()),
            "orphans": class_map.orphans.value,
            # The rows' copies of the sale status (CLOSED/OPEN while `seats event close/open` runs).
            "sale_status": "/".join(sorted({r.sale_status.value for r in rows.values()})) or "-",
        }
        # Its pools and admission rule, on each row item (docs/guides/pools.md,
        # docs/guides/admission.md): shown only when set, so other events print as before.
        pools = sorted({p for r in rows.values() for p in r.pools})
        if pools:
            document["pools"] = pools
        required = {r.admission_required for r in rows.values()}
        if True in required:
            document["admission_required"] = True if required == {True} else "partly (run the switch again)"
        if seats:
            document["rows"] = {f"{r.section}-{r.name}": _row_picture(r, rows) for r in class_map.rows}
        documents.append(document)
    if output is OutputFormat.TABLE:
        header = f"{'MAPPED CLASS':<16}{'SEATS':>10}{'AVAILABLE':>11}{'HELD':>10}{'SOLD':>10}"
        click.echo(f"{header}  ORPHANS  SALE")
        for d in documents:
            counts = f"{d['seats']:>10}{d['available']:>11}{d['held']:>10}{d['sold']:>10}"
            click.echo(f"{d['seat_class']:<16}{counts}  {d['orphans']:<7}  {d['sale_status']}")
        for d in documents if seats else []:
            click.echo(
                f"{d['seat_class']}  (. free, w wheelchair, c companion, h held, s sold, # blocked,"
                " l waiting list)"
            )
            for row, picture in d["rows"].items():
                click.echo(f"  {row:<12}{picture}")
    return documents


@event.command("reshard")
@click.argument("event_id")
@click.option("--seat-class", required=True, help="The seat class to reshard.")
@click.option(
    "--shards",
    type=click.IntRange(min=1, max=MAX_SHARDS),
    required=True,
    help="Route sales over K shard items from now on (docs/explanation/sharding.md).",
)
@pass_cli
def reshard(obj: CliContext, event_id: str, seat_class: str, shards: int) -> None:
    """Split a seat class of EVENT_ID over K shard items, also during its sale.

    Only available seats move, in one transaction that keeps the class's capacity, available,
    held and sold the same; shards beyond K are kept (their held and sold seats stay) and drained.
    """
    key = SeatKey(
        _checked_id("event_id", event_id, MAX_ID_LENGTH),
        _checked_id("seat_class", seat_class, MAX_SEAT_CLASS_LENGTH),
    )
    _apply(obj, event_id, key.seat_class, lambda t, k: t.reshard(k, shards))


def _class_document(c: SeatClassInventory, now: float) -> dict[str, Any]:
    return {
        "event_id": c.event_id,
        "seat_class": c.seat_class,
        "capacity": c.capacity,
        "available": c.available,
        "held": c.held,
        "sold": c.sold,
        "sale": sale_state(c, now),
        "sale_status": c.sale_status.value,
        "sale_starts_at": iso_utc(c.sale_starts_at) if c.sale_starts_at is not None else None,
        "sale_ends_at": iso_utc(c.sale_ends_at) if c.sale_ends_at is not None else None,
        "max_per_customer": c.max_per_customer,
        "shard_count": c.shard_count,
        "admission_required": c.admission_required,
        **({"pools": list(c.pools)} if c.pools else {}),
    }


def _shard_documents(c: SeatClassInventory) -> list[dict[str, Any]]:
    return [
        {
            "shard": s.shard,
            "routed": s.shard < c.shard_count,
            "capacity": s.capacity,
            "available": s.available,
            "held": s.held,
            "sold": s.sold,
        }
        for s in c.shard_seats()
    ]


@event.command("show")
@click.argument("event_id")
@output_option
@click.option("--shards", "per_shard", is_flag=True, help="Also show each shard item of every class.")
@click.option("--seats", "per_seat", is_flag=True, help="Also show each mapped class's sections row by row.")
@pass_cli
def show(obj: CliContext, event_id: str, output: OutputFormat, per_shard: bool, per_seat: bool) -> None:
    """Show capacity, available, held and sold seats, sale state and limit per seat class of EVENT_ID.

    SALE is OPEN, CLOSED (by `seats event close`), SCHEDULED (before its window) or ENDED. The
    totals of a sharded class come from one consistent read of all its shard items; --shards
    lists them (a shard not routed to any more was retired by `seats event reshard`).
    """
    table = obj.inventory_table()
    classes = table.get_event(event_id)
    seat_map = table.read_seat_map(event_id)
    if not classes and seat_map is None:
        raise click.ClickException(f"event {event_id!r} not found")
    if seat_map is not None and output is not OutputFormat.TABLE:
        mapped = _show_mapped(table, event_id, seat_map, per_seat, output)
        documents = [_class_document(c, time.time()) for c in classes]
        if output is OutputFormat.JSON:
            print_json({"event_id": event_id, "seat_classes": documents, "mapped_classes": mapped})
        else:
            print_text([*documents, *mapped])
        return
    if seat_map is not None:
        _show_mapped(table, event_id, seat_map, per_seat, output)
        if not classes:
            _show_pools(table.get_pools(event_id), _pool_members(table, event_id, classes, seat_map))
            return
    now = time.time()
    documents = [
        {**_class_document(c, now), **({"shards": _shard_documents(c)} if per_shard else {})} for c in classes
    ]
    if output is OutputFormat.JSON:
        # Pools only for an event that has some (other events print as before; docs/guides/pools.md).
        pools = [pool_document(p) for p in obj.inventory_table().get_pools(event_id)]
        print_json({"event_id": event_id, "seat_classes": documents, **({"pools": pools} if pools else {})})
        return
    if output is OutputFormat.TEXT:
        print_text(documents)
        return
    header = f"{'SEAT CLASS':<16}{'CAPACITY':>10}{'AVAILABLE':>11}{'HELD':>10}{'SOLD':>10}"
    # The ADMISSION column only for an event with a class that requires a token (docs/guides/admission.md).
    gated = any(c.admission_required for c in classes)
    click.echo(f"{header}  {'SALE':<10}{'LIMIT':>6}" + ("  ADMISSION" if gated else ""))
    for c in classes:
        limit = str(c.max_per_customer) if c.max_per_customer is not None else "-"
        admission = ("  token" if c.admission_required else "  -") if gated else ""
        click.echo(
            f"{c.seat_class:<16}{c.capacity:>10}{c.available:>11}{c.held:>10}{c.sold:>10}"
            f"  {sale_state(c, now):<10}{limit:>6}{admission}"
        )
    if len(classes) > 1:
        click.echo(
            f"{'TOTAL':<16}{sum(c.capacity for c in classes):>10}{sum(c.available for c in classes):>11}"
            f"{sum(c.held for c in classes):>10}{sum(c.sold for c in classes):>10}"
        )
    if per_shard:
        click.echo(f"{'SEAT CLASS':<16}{'SHARD':>6}{'CAPACITY':>10}{'AVAILABLE':>11}{'HELD':>10}{'SOLD':>10}")
        for c in classes:
            for s in c.shard_seats():
                retired = "" if s.shard < c.shard_count else "  retired"
                click.echo(
                    f"{c.seat_class:<16}{s.shard:>6}{s.capacity:>10}{s.available:>11}{s.held:>10}"
                    f"{s.sold:>10}{retired}"
                )
    for c in classes:
        window = _window(c)
        if window:
            click.echo(f"sale window {c.seat_class}: {window}")
    _show_pools(obj.inventory_table().get_pools(event_id), _pool_members(table, event_id, classes, seat_map))


def _pool_members(
    table: OperatorTable, event_id: str, classes: list[SeatClassInventory], seat_map: SeatMap | None
) -> dict[str, tuple[str, ...]]:
    """Each class's pools: a counted class's from its item, a mapped class's from its row items
    (each carries them; docs/guides/pools.md)."""
    members = {c.seat_class: c.pools for c in classes}
    for name in seat_map.classes if seat_map is not None else {}:
        row = next(iter(table.read_seat_rows(SeatKey(event_id, name)).values()), None)
        members[name] = row.pools if row is not None else ()
    return members


def _show_pools(pools: list[PoolInventory], members_of: dict[str, tuple[str, ...]]) -> None:
    """The event's capacity pools, and the classes that take from each (docs/guides/pools.md)."""
    if not pools:
        return
    click.echo(f"{'POOL':<16}{'CAPACITY':>10}{'AVAILABLE':>11}{'HELD':>10}{'SOLD':>10}  {'SALE':<10}CLASSES")
    for p in pools:
        members = ",".join(sorted(c for c, pools in members_of.items() if p.pool in pools)) or "-"
        click.echo(
            f"{p.pool:<16}{p.capacity:>10}{p.available:>11}{p.held:>10}{p.sold:>10}"
            f"  {p.sale_status.value:<10}{members}"
        )


@event.command("list")
@output_option
@pass_cli
def list_(obj: CliContext, output: OutputFormat) -> None:
    """List every event and seat class with its seats and sale state.

    It scans the whole table (reservation records included), billed by the data read: for an
    operator's look, not for a hot path.
    """
    classes = obj.inventory_table().list_seat_classes()
    now = time.time()
    if output is OutputFormat.JSON:
        events: dict[str, list[dict[str, Any]]] = {}
        for c in classes:
            events.setdefault(c.event_id, []).append(_class_document(c, now))
        print_json({"events": [{"event_id": e, "seat_classes": cs} for e, cs in events.items()]})
        return
    if output is OutputFormat.TEXT:
        print_text(_class_document(c, now) for c in classes)
        return
    if not classes:
        click.echo("no events: create one with `seats event create EVENT_ID --capacity N`")
        return
    width = max(len("EVENT"), *(len(c.event_id) for c in classes)) + 2
    click.echo(
        f"{'EVENT':<{width}}{'SEAT CLASS':<16}{'CAPACITY':>10}{'AVAILABLE':>11}{'HELD':>10}{'SOLD':>10}  SALE"
    )
    for c in classes:
        click.echo(
            f"{c.event_id:<{width}}{c.seat_class:<16}{c.capacity:>10}{c.available:>11}{c.held:>10}"
            f"{c.sold:>10}  {sale_state(c, now)}"
        )
    click.echo(f"{len({c.event_id for c in classes})} event(s), {len(classes)} seat class(es)")


def _class_command(name: str) -> Callable[[Callable[..., None]], click.Command]:
    """`seats event NAME EVENT_ID [--seat-class C] ...`: a change made to one or every seat class.

    The command's own options go below this decorator; they are listed after --seat-class and
    --output, and the function takes `output` (an OutputFormat) after them.
    """

    def register(function: Callable[..., None]) -> click.Command:
        seat_class = click.option(
            "--seat-class", help="Only this seat class (default: every seat class of the event)."
        )
        return event.command(name)(click.argument("event_id")(seat_class(output_option(pass_cli(function)))))

    return register


def _set_status(
    obj: CliContext, event_id: str, seat_class: str | None, status: SaleStatus, output: OutputFormat
) -> None:
    """Close or open counted classes (one write each) and mapped ones (a write per row item,
    docs/guides/seat-maps.md); the mapped classes are reported on stderr."""
    table = obj.inventory_table()
    seat_map = table.read_seat_map(_checked_id("event_id", event_id, MAX_ID_LENGTH))
    mapped = [name for name in (seat_map.classes if seat_map else {}) if seat_class in (None, name)]
    for name in mapped:
        try:
            rows = table.set_rows_sale_status(SeatKey(event_id, name), status)
        except RetryableError as exc:
            explained = explain(exc, doing=f"{name} may be {status.value} on only some rows (run it again)")
            raise (explained or click.ClickException(str(exc))) from exc
        click.echo(f"{event_id} {name}: sale {status.value} on its {rows} row item(s)", err=True)
    if mapped and (seat_class is not None or not table.get_event(event_id)):
        return
    _apply(obj, event_id, seat_class, lambda t, k: t.set_sale_status(k, status), output)


@_class_command("close")
def close(obj: CliContext, event_id: str, seat_class: str | None, output: OutputFormat) -> None:
    """Stop selling EVENT_ID: reserve and hold are answered SALE_CLOSED. Confirm and cancel go on."""
    _set_status(obj, event_id, seat_class, SaleStatus.CLOSED, output)


@_class_command("open")
def open_(obj: CliContext, event_id: str, seat_class: str | None, output: OutputFormat) -> None:
    """Sell EVENT_ID again after `close` (its sale window, if any, still applies)."""
    _set_status(obj, event_id, seat_class, SaleStatus.OPEN, output)


@_class_command("schedule")
@click.option(
    "--starts-at", help="Sale opens at this ISO-8601 time (with offset, e.g. 2026-05-01T10:00:00Z)."
)
@click.option(
    "--ends-at", help="Sale ends at this ISO-8601 time (with offset); seats sell until just before."
)
@click.option("--clear", is_flag=True, help="Remove the window: the class sells whenever it is open.")
def schedule(
    obj: CliContext,
    event_id: str,
    seat_class: str | None,
    starts_at: str | None,
    ends_at: str | None,
    clear: bool,
    output: OutputFormat,
) -> None:
    """Set the sale window of EVENT_ID. The window is replaced: a side not given is left open."""
    if clear == bool(starts_at or ends_at):
        raise click.UsageError("give --starts-at and/or --ends-at, or --clear")
    start, end = _epoch(starts_at, "--starts-at"), _epoch(ends_at, "--ends-at")
    if start is not None and end is not None and end <= start:
        raise click.BadParameter("the sale must end after it starts", param_hint="--ends-at")
    _apply(obj, event_id, seat_class, lambda t, k: t.set_sale_window(k, start, end), output)


@_class_command("limit")
@_MAX_PER_CUSTOMER_OPTION
@click.option("--none", "no_limit", is_flag=True, help="Remove the limit.")
def limit(
    obj: CliContext,
    event_id: str,
    seat_class: str | None,
    max_per_customer: int | None,
    no_limit: bool,
    output: OutputFormat,
) -> None:
    """Set the per-customer limit of EVENT_ID (reserve and hold count, cancel and expiry give back).

    Only seats taken while a limit is set count: set it before the sale opens.
    """
    if no_limit == (max_per_customer is not None):
        raise click.UsageError("give --max-per-customer N or --none")
    _apply(obj, event_id, seat_class, lambda t, k: t.set_max_per_customer(k, max_per_customer), output)


@_class_command("admission")
@click.option("--required/--not-required", default=None, help="Need an admission token, or no longer.")
def admission(
    obj: CliContext, event_id: str, seat_class: str | None, required: bool | None, output: OutputFormat
) -> None:
    """Make reserve and hold of EVENT_ID need an admission token (docs/guides/admission.md), or no longer.

    Messages without a valid, unused token for the event and customer are answered
    ADMISSION_REFUSED. Confirm and cancel need none. A mapped class's rule is set on each of its
    row items (run the command again to finish one that failed half-way).
    """
    if required is None:
        raise click.UsageError("give --required or --not-required")
    table = obj.inventory_table()
    seat_map = table.read_seat_map(_checked_id("event_id", event_id, MAX_ID_LENGTH))
    mapped = sorted(name for name in (seat_map.classes if seat_map else {}) if seat_class in (None, name))
    for name in mapped:
        # A mapped class's rule is on each of its row items (docs/guides/admission.md).
        try:
            count = table.set_rows_admission(SeatKey(event_id, name), required)
        except RetryableError as exc:
            explained = explain(exc, doing=f"{name} was not changed (run the command again)")
            raise (explained or click.ClickException(str(exc))) from exc
        needs = "needs" if required else "no longer needs"
        click.echo(f"{event_id} {name}: {needs} an admission token ({count} row items)")
    if seat_class is not None and mapped:
        return
    counted = [c.seat_class for c in table.get_event(event_id)]
    if mapped and not counted:
        return
    _apply(obj, event_id, seat_class, lambda t, k: t.set_admission_required(k, required), output)


@event.command("capacity")
@click.argument("event_id")
@click.option("--seat-class", help="The seat class to change; needed when the event has more than one.")
@click.option("--add", type=click.IntRange(min=1), help="Add N seats (capacity and available).")
@click.option(
    "--remove", type=click.IntRange(min=1), help="Remove N available seats; never below sold + held."
)
@click.option(
    "--set", "set_to", type=click.IntRange(min=0), help="Set the capacity to N (not below sold + held)."
)
@output_option
@pass_cli
def capacity(
    obj: CliContext,
    event_id: str,
    seat_class: str | None,
    add: int | None,
    remove: int | None,
    set_to: int | None,
    output: OutputFormat,
) -> None:
    """Change the capacity of one seat class of EVENT_ID, safely under concurrent sales and changes.

    On a class with an open waiting list (not in capacity pools), --add sets the new seats aside
    for the list, as `seats waitlist add-seats` does, so that the people waiting are offered them
    before they go on sale; --set cannot raise such a class's capacity."""
    if sum(v is not None for v in (add, remove, set_to)) != 1:
        raise click.UsageError("give exactly one of --add N, --remove N, --set N")
    table = obj.inventory_table()
    keys = _classes(table, event_id, seat_class)
    if len(keys) > 1:
        raise click.UsageError(
            f"event {event_id!r} has seat classes {', '.join(k.seat_class for k in keys)};"
            " name one with --seat-class"
        )
    [key] = keys

    def change(t: OperatorTable, k: SeatKey) -> SeatClassInventory:
        if set_to is not None:
            return t.set_capacity(k, set_to)
        try:
            return t.change_capacity(k, add if add is not None else -(remove or 0))
        except WaitlistTakesNewSeats:
            assert add is not None
            t.add_waitlist_seats(k, add)  # the list's, as `seats waitlist add-seats` adds them
            added = t.read_inventory(k)
            assert added is not None
            return added

    _apply(obj, event_id, key.seat_class, change, output)


event.add_command(pool)
