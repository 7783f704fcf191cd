"""`seats bench`: the service against the common design on the local stack, counted and priced."""

from __future__ import annotations

import json
import shlex
import sys
import time
from pathlib import Path, PurePath
from typing import TYPE_CHECKING

import click

from seat_inventory.models import MAX_SHARDS
from seat_tools.cli.local_commands import aws_contention_options, aws_contention_settings
from seat_tools.contention.model import ContentionSettings
from seat_tools.local.engines import LocalStackError

if TYPE_CHECKING:
    from seat_tools.bench.seat_map_bench import SeatMapWorkload

QUICK_SCALE = 0.1
DEFAULT_WORKERS = 4
DEFAULT_SHARDS = "1,4,16"


def _shard_counts(_ctx: click.Context, _param: click.Parameter, value: str) -> tuple[int, ...]:
    """`--shards 1,4,16`: distinct shard counts, each from 1 to MAX_SHARDS, in order."""
    counts = set()
    for part in value.split(","):
        try:
            k = int(part.strip())
        except ValueError:
            raise click.BadParameter(f"{part.strip()!r} is not a whole number (e.g. 1,4,16)") from None
        if not 1 <= k <= MAX_SHARDS:
            raise click.BadParameter(f"{k} is not from 1 to {MAX_SHARDS}")
        counts.add(k)
    return tuple(sorted(counts))


def shown_path(argument: str) -> str:
    """An argument as the published report shows it: an absolute path by its name alone.

    A path on the machine that ran the bench means nothing to a reader (and docs name no path
    outside the repository); a path relative to the checkout stays as it is.
    """
    option, equals, value = argument.partition("=") if argument.startswith("--") else ("", "", argument)
    if value.startswith("/"):
        value = PurePath(value).name
    return f"{option}{equals}{value}"


@click.command()
@click.option(
    "--quick", is_flag=True, help=f"Run every workload at {QUICK_SCALE:g} of its full size (a minute or two)."
)
@click.option(
    "--scale",
    type=click.FloatRange(min=0.001, max=10.0),
    help="Size of the workloads relative to the full ones (1: 20,000 requests for the hot event);"
    " overrides --quick.",
)
@click.option(
    "--workers",
    type=click.IntRange(min=1, max=32),
    default=DEFAULT_WORKERS,
    show_default=True,
    help="Worker processes (Lambda instances) per design.",
)
@click.option(
    "--shards",
    default=DEFAULT_SHARDS,
    metavar="K[,K...]",
    show_default=True,
    callback=_shard_counts,
    help="Shard counts K for the hot workload, comma-separated (each 1 to"
    f" {MAX_SHARDS}): each K other than 1 adds a 'hot K=<K>' workload whose seat class is split"
    " over K items (as `seats event create --shards K`), run by the service only (the common"
    " designs have no shards); K = 1 is the hot workload itself. '--shards 1' runs no sharded"
    " workload.",
)
@click.option(
    "--sharded-workers",
    type=click.IntRange(min=1, max=32),
    help="Worker processes for the sharded hot workloads (default: --workers); when it differs"
    " from --workers, K = 1 of --shards also runs as 'hot K=1' with these workers.",
)
@click.option(
    "--report",
    "report_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=Path("docs/reference/benchmarks.md"),
    show_default=True,
    help="Where to write the Markdown report; '-' writes none.",
)
@click.option(
    "--chart",
    type=click.Path(dir_okay=False, path_type=Path),
    default=Path("docs/reference/benchmarks.png"),
    show_default=True,
    help="Where to draw the PNG chart; '-' draws none.",
)
@click.option(
    "--figures-json",
    "json_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Also write every counted figure as JSON here.",
)
@click.option(
    "--note",
    default="",
    help="A note on the run's conditions for the report (e.g. 'the machine was shared').",
)
@click.option(
    "--cold-start-rounds",
    type=click.IntRange(min=0, max=50),
    default=7,
    show_default=True,
    help="Fresh interpreters per import measured for the cold start; 0 skips it.",
)
@click.option(
    "--profile-handler",
    "profile_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Instead of benchmarking, profile the handler on a hot on-sale (pyinstrument) and write the"
    " profile here as text.",
)
@click.option(
    "--no-redis",
    is_flag=True,
    help="Leave out the Redis peer (run by default when redis-server is on PATH, skipped with a"
    " message when it is not).",
)
@click.option(
    "--orders",
    type=click.IntRange(1, 100_000),
    help="Instead of the benchmark: N multi-line orders (docs/guides/orders.md) of 1-4 lines of one seat"
    " over 4 classes in one pool, through the service with --workers; prints orders, lines and"
    " seats per second, answers and records by outcome, transactions, and checks every class and"
    " pool item against the records (exit status 1 if not); writes no report.",
)
@click.option(
    "--order-capacity",
    type=click.IntRange(min=1),
    help="With --orders: seats of each class [default: one per order, nothing sells out].",
)
@click.option(
    "--order-shards",
    type=click.IntRange(1, MAX_SHARDS),
    default=1,
    show_default=True,
    help="With --orders: shard items of each class.",
)
@click.option(
    "--order-pool-shards",
    type=click.IntRange(1, MAX_SHARDS),
    default=1,
    show_default=True,
    help="With --orders: items of the classes' pool.",
)
@click.option(
    "--seat-map",
    "seat_map_path",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Instead of the three workloads, run a seat map's on-sale through the service on the local"
    " stack (e.g. examples/seat_maps/theatre.json): best-available requests of 1 to 8 seats and"
    " chosen-seat requests, then check every seat sold at most once and the rows' states and counts"
    " against the records; prints its figures (writes no report).",
)
@click.option(
    "--seat-map-requests",
    type=click.IntRange(min=1, max=1_000_000),
    default=2000,
    show_default=True,
    help="Requests sent on --seat-map.",
)
@click.option(
    "--chosen-share",
    type=click.FloatRange(min=0.0, max=1.0),
    default=0.2,
    show_default=True,
    help="Share of the --seat-map requests that choose their seats (a run of 1 to 4 in a row).",
)
@aws_contention_options
def bench(
    quick: bool,
    scale: float | None,
    workers: int,
    shards: tuple[int, ...],
    sharded_workers: int | None,
    report_path: Path,
    chart: Path,
    json_path: Path | None,
    note: str,
    cold_start_rounds: int,
    profile_path: Path | None,
    no_redis: bool,
    orders: int | None,
    order_capacity: int | None,
    order_shards: int,
    order_pool_shards: int,
    seat_map_path: Path | None,
    seat_map_requests: int,
    chosen_share: float,
    no_aws_contention: bool,
    contention_time_scale: float,
) -> None:
    """Benchmark the service against the common design, with and without Powertools idempotency,
    and against a Redis counter.

    Starts a local stack (DynamoDB Local + moto), runs three workloads (a hot event, many events,
    a sold-out tail) through three designs side by side (the service; one UpdateItem + one
    Publish per message; the same inside Powertools' idempotency utility) and the Redis peer (a
    Lua-guarded DECRBY on a redis-server the bench starts, with Debian's persistence defaults;
    then killed mid-sale and restarted once per persistence setting to count the confirmed seats
    it lost; skipped with a message where redis-server is absent), and the hot event with
    its seat class split over each K of --shards through the service, checks that every class
    sold exactly its capacity and left no seat on any shard (exit status 1 if not), counts every AWS
    request and each DynamoDB attempt's answer from botocore's events (transactions committed and
    cancelled by reason, throttling, messages handed back and dead-lettered, time from send to
    outcome), derives cost per million requests and the per-event ceiling on AWS, measures the
    handler's import time, prints the tables and writes docs/reference/benchmarks.md and its chart.
    """
    from seat_tools.bench import report
    from seat_tools.bench.cold_start import measure_cold_start
    from seat_tools.bench.run import run_bench

    if profile_path:
        _profile(profile_path)
        return
    if orders:
        _orders(
            orders,
            capacity=order_capacity,
            shards=order_shards,
            pool_shards=order_pool_shards,
            workers=workers,
            aws_contention=aws_contention_settings(no_aws_contention, contention_time_scale),
        )
        return
    if seat_map_path is not None:
        from seat_tools.bench.seat_map_bench import SeatMapWorkload

        workload = SeatMapWorkload(seat_map_path, seat_map_requests, chosen_share)
        contention = aws_contention_settings(no_aws_contention, contention_time_scale)
        _seat_map(workload, workers, contention, json_path)
        return
    size = scale if scale is not None else (QUICK_SCALE if quick else 1.0)
    started_at = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    started = time.monotonic()
    try:
        run = run_bench(
            scale=size,
            workers=workers,
            shards=shards,
            sharded_workers=sharded_workers,
            progress=lambda line: click.echo(line, err=True),
            aws_contention=aws_contention_settings(no_aws_contention, contention_time_scale),
            redis=not no_redis,
        )
    except LocalStackError as exc:
        raise click.ClickException(str(exc)) from exc
    cold = None
    if cold_start_rounds:
        click.echo(f"cold start: {cold_start_rounds} fresh interpreters per import", err=True)
        cold = measure_cold_start(cold_start_rounds)
    duration = time.monotonic() - started
    results = run.results
    click.echo(
        report.printed_report(
            results, cold, engine=run.engine, redis=run.redis, redis_skipped=run.redis_skipped
        )
    )
    problems = [p for r in results for p in r.invariant_problems]
    chart_name = None
    if str(chart) != "-":
        chart.parent.mkdir(parents=True, exist_ok=True)
        report.draw_chart(results, chart)
        chart_name = (
            chart.name
            if str(report_path) != "-" and chart.parent == report_path.parent
            else shown_path(str(chart))
        )
        click.echo(f"chart: {chart}", err=True)
    if str(report_path) != "-":
        report_path.parent.mkdir(parents=True, exist_ok=True)
        report_path.write_text(
            report.markdown(
                results,
                cold,
                command=shlex.join(["seats", "bench", *(shown_path(arg) for arg in sys.argv[2:])]),
                started=started_at,
                duration_s=duration,
                scale=size,
                workers=workers,
                chart=chart_name,
                engine=run.engine,
                note=note,
                redis=run.redis,
                redis_skipped=run.redis_skipped,
            )
        )
        click.echo(f"report: {report_path}", err=True)
    if json_path:
        json_path.write_text(json.dumps([r.as_dict() for r in results], indent=2, default=str))
    if problems:
        raise click.ClickException("inventory invariants broken: " + "; ".join(problems))
    sell_out = [p for r in results for p in r.sell_out_problems]
    if sell_out:
        raise click.ClickException("a seat class did not sell exactly its capacity: " + "; ".join(sell_out))


def _orders(
    orders: int,
    *,
    capacity: int | None,
    shards: int,
    pool_shards: int,
    workers: int,
    aws_contention: ContentionSettings | None,
) -> None:
    """`--orders`: the orders workload alone on a local stack of its own (seat_tools.bench.orders)."""
    from seat_tools.bench.orders import run_orders_bench
    from seat_tools.local.stack import LocalStack

    stack = LocalStack(aws_contention=aws_contention)
    try:
        click.echo("starting the local stack (DynamoDB Local + moto)", err=True)
        stack.start()
        result = run_orders_bench(
            stack,
            orders=orders,
            capacity=capacity,
            shards=shards,
            pool_shards=pool_shards,
            workers=workers,
            progress=lambda line: click.echo(line, err=True),
        )
    except LocalStackError as exc:
        raise click.ClickException(str(exc)) from exc
    finally:
        stack.stop()
    width = max(len(name) for name, _ in result.rows())
    for name, value in result.rows():
        click.echo(f"{name:<{width}}  {value}")
    if result.problems:
        raise click.ClickException("order counts do not match the records: " + "; ".join(result.problems))


def _seat_map(
    workload: SeatMapWorkload, workers: int, contention: ContentionSettings | None, json_path: Path | None
) -> None:
    """`--seat-map`: the seat-map workload alone on a fresh local stack; exit status 1 when a seat
    was sold twice or a row's states or counts are not its records'."""
    from seat_tools.bench.run import Bench
    from seat_tools.bench.seat_map_bench import printed, run_seat_map_bench
    from seat_tools.local.stack import LocalStack

    click.echo("starting the local stack (DynamoDB Local + moto)", err=True)
    try:
        with LocalStack(aws_contention=contention) as stack:
            bench = Bench(stack, workers=workers)
            run = run_seat_map_bench(bench, workload, progress=lambda line: click.echo(line, err=True))
    except LocalStackError as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo(printed(run))
    if json_path:
        json_path.write_text(json.dumps(run.as_dict(), indent=2, default=str))
    if run.problems:
        raise click.ClickException("the seat map's sale is not consistent: " + "; ".join(run.problems[:10]))


def _profile(path: Path) -> None:
    from seat_tools.bench.profiling import profile_handler
    from seat_tools.local.stack import LocalStack

    click.echo("starting the local stack (DynamoDB Local + moto)", err=True)
    try:
        with LocalStack() as stack:
            text = profile_handler(stack)
    except LocalStackError as exc:
        raise click.ClickException(str(exc)) from exc
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    click.echo(text)
    click.echo(f"profile: {path}", err=True)
