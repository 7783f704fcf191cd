"""`seats event pool ...`: an event's capacity pools (docs/guides/pools.md): seats several seat classes
share. Each change is one conditional write made exactly once (`seat_tools.pool_commands`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from seat_inventory.models import MAX_SHARDS, PoolInventory, RetryableError, SaleStatus
from seat_inventory.parsing import MAX_ID_LENGTH, MAX_SEAT_CLASS_LENGTH, id_problem
from seat_tools.cli.context import CliContext
from seat_tools.cli.errors import CommandError, ExitCode, explain
from seat_tools.cli.output import OutputFormat, output_option, print_json, print_text
from seat_tools.operator_commands import OperatorTable
from seat_tools.operator_errors import (
    EventAlreadyExists,
    InventoryChangeRefused,
    OperatorOutcomeUnknown,
    UnknownSeatClass,
)

pass_cli = click.make_pass_decorator(CliContext)


def _checked(name: str, value: str, max_length: int) -> str:
    problem = id_problem(name, value, max_length)
    if problem:
        raise click.BadParameter(problem, param_hint=name)
    return value


def pool_document(p: PoolInventory) -> dict[str, Any]:
    return {
        "pool": p.pool,
        "capacity": p.capacity,
        "available": p.available,
        "held": p.held,
        "sold": p.sold,
        "sale_status": p.sale_status.value,
        "shards": p.shard_count,
    }


def _print_pools(pools: list[PoolInventory], output: OutputFormat) -> None:
    if output is OutputFormat.JSON:
        print_json({"pools": [pool_document(p) for p in pools]})
    elif output is OutputFormat.TEXT:
        print_text(pool_document(p) for p in pools)
    else:
        for p in pools:
            items = f", {p.shard_count} items" if p.shard_count > 1 else ""
            click.echo(
                f"{p.event_id} pool {p.pool}: sale {p.sale_status.value}, capacity {p.capacity}"
                f" (available {p.available}, held {p.held}, sold {p.sold}{items})"
            )


def _run(
    obj: CliContext, event_id: str, name: str, change: Callable[[OperatorTable], PoolInventory]
) -> PoolInventory:
    _checked("event_id", event_id, MAX_ID_LENGTH)
    _checked("pool", name, MAX_SEAT_CLASS_LENGTH)
    try:
        return change(obj.inventory_table())
    except (UnknownSeatClass, EventAlreadyExists) as exc:
        raise click.ClickException(f"{exc}; nothing was changed") from exc
    except (InventoryChangeRefused, ValueError) as exc:
        raise click.ClickException(f"{exc}; pool {name} was not changed") from exc
    except RetryableError as exc:
        explained = explain(exc, doing=f"pool {name} was not changed")
        raise (explained or click.ClickException(str(exc))) from exc
    except OperatorOutcomeUnknown as exc:
        raise CommandError(str(exc), ExitCode.UNAVAILABLE) from exc


@click.group()
def pool() -> None:
    """Capacity pools: seats several seat classes of an event share (docs/guides/pools.md).

    A class joins pools when it is created (`seats event create ... --pools P1,P2`); each of its
    sales then takes seats from its own capacity and from every one of its pools, or none.
    """


@pool.command("create")
@click.argument("event_id")
@click.argument("pool_name", metavar="POOL")
@click.option("--capacity", type=click.IntRange(min=1), required=True, help="Seats in the pool.")
@click.option("--closed", is_flag=True, help="Create the pool closed; `seats event pool open` opens it.")
@click.option(
    "--shards",
    type=click.IntRange(1, MAX_SHARDS),
    default=1,
    show_default=True,
    help="Split the pool over N items (a pool its sharded classes sell from at once; docs/guides/pools.md).",
)
@output_option
@pass_cli
def create(
    obj: CliContext,
    event_id: str,
    pool_name: str,
    capacity: int,
    closed: bool,
    shards: int,
    output: OutputFormat,
) -> None:
    """Create capacity pool POOL of EVENT_ID. An existing pool is an error, never overwritten.

    With --shards N the seats are spread over N items: a take from shard s of a class writes
    item s mod N, so the containers that sell a sharded class each write a pool item of their own.
    """
    created = _run(
        obj,
        event_id,
        pool_name,
        lambda t: t.create_pool(event_id, pool_name, capacity, closed=closed, shards=shards),
    )
    _print_pools([created], output)


@pool.command("capacity")
@click.argument("event_id")
@click.argument("pool_name", metavar="POOL")
@click.option("--add", type=click.IntRange(min=1), help="Add N seats (capacity and available).")
@click.option(
    "--remove", type=click.IntRange(min=1), help="Remove N available seats; never below sold + held."
)
@output_option
@pass_cli
def capacity(
    obj: CliContext, event_id: str, pool_name: str, add: int | None, remove: int | None, output: OutputFormat
) -> None:
    """Change the capacity of pool POOL of EVENT_ID, exactly once, safely under concurrent sales."""
    if (add is None) == (remove is None):
        raise click.UsageError("give exactly one of --add N, --remove N")
    delta = add if add is not None else -(remove or 0)
    changed = _run(obj, event_id, pool_name, lambda t: t.change_pool_capacity(event_id, pool_name, delta))
    _print_pools([changed], output)


@pool.command("reshard")
@click.argument("event_id")
@click.argument("pool_name", metavar="POOL")
@click.option(
    "--shards",
    type=click.IntRange(1, MAX_SHARDS),
    required=True,
    help="Spread the pool over N items (never fewer than it has).",
)
@output_option
@pass_cli
def reshard(obj: CliContext, event_id: str, pool_name: str, shards: int, output: OutputFormat) -> None:
    """Spread pool POOL of EVENT_ID over more items, also during its sale, exactly once.

    Only available seats move, in one transaction that keeps the pool's capacity, available, held
    and sold the same; items are never removed (records give their seats back to their item).
    """
    changed = _run(obj, event_id, pool_name, lambda t: t.reshard_pool(event_id, pool_name, shards))
    _print_pools([changed], output)


def _status_command(name: str, status: SaleStatus, help_text: str) -> None:
    @pool.command(name, help=help_text)
    @click.argument("event_id")
    @click.argument("pool_name", metavar="POOL")
    @output_option
    @pass_cli
    def command(obj: CliContext, event_id: str, pool_name: str, output: OutputFormat) -> None:
        changed = _run(obj, event_id, pool_name, lambda t: t.set_pool_status(event_id, pool_name, status))
        _print_pools([changed], output)


_status_command(
    "close",
    SaleStatus.CLOSED,
    "Close pool POOL of EVENT_ID: none of its classes sells (confirm, cancel and expiry go on).",
)
_status_command("open", SaleStatus.OPEN, "Reopen pool POOL of EVENT_ID.")


@pool.command("show")
@click.argument("event_id")
@output_option
@pass_cli
def show(obj: CliContext, event_id: str, output: OutputFormat) -> None:
    """List the capacity pools of EVENT_ID with their counts (also in `seats event show`)."""
    _checked("event_id", event_id, MAX_ID_LENGTH)
    pools = obj.inventory_table().get_pools(event_id)
    if not pools and output is OutputFormat.TABLE:
        raise click.ClickException(f"event {event_id!r} has no pools")
    _print_pools(pools, output)
