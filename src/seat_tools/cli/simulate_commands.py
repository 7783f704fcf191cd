"""`seats simulate`: the service's logic at AWS scale on a virtual clock (docs/simulation.md)."""

from __future__ import annotations

import time

import click

from seat_inventory.models import MAX_SHARDS
from seat_inventory.settings import Settings
from seat_tools.cli.output import OutputFormat, output_option, print_json, print_text
from seat_tools.contention.model import ContentionSettings
from seat_tools.local.engines import LocalStackError
from seat_tools.local.template import load_template
from seat_tools.simulation.report import format_table
from seat_tools.simulation.run import (
    DEFAULT_COLD_START_MS,
    DEFAULT_PUBLISH_MS,
    SimulationConfig,
    run_simulation,
)

# The function's environment refers to resources a simulation does not have.
_PLACEHOLDERS = {"TABLE_NAME": "simulated-table", "OUTCOMES_TOPIC_ARN": "arn:aws:sns:simulated"}


def _template_defaults() -> tuple[SimulationConfig, Settings]:
    """The function, queue and event-source settings as template.yaml's defaults set them."""
    template = load_template()
    function = template.function
    environment: dict[str, str] = {}
    for name, value in function.environment.items():
        environment[name] = _PLACEHOLDERS.get(name) or str(template.resolver.resolve(value))
    source = function.event_source
    config = SimulationConfig(
        containers=source.maximum_concurrency or 1000,
        batch_size=source.batch_size,
        batching_window_s=source.maximum_batching_window_s,
        visibility_timeout_s=template.queue.visibility_timeout_s,
        max_receive_count=template.queue.max_receive_count or 5,
        timeout_s=function.timeout_s,
        memory_mb=function.memory_mb,
    )
    return config, Settings.from_env(environment)


@click.command()
@click.option(
    "--containers",
    type=click.IntRange(1, 1000),
    help="Concurrent containers (MaximumConcurrency) [default: the template's].",
)
@click.option(
    "--requests",
    type=click.IntRange(1, 1_000_000),
    default=10_000,
    show_default=True,
    help="Reservation requests for the event.",
)
@click.option(
    "--capacity", type=click.IntRange(min=0), help="Seats of the event [default: enough for every request]."
)
@click.option(
    "--seats-per-request",
    type=click.IntRange(1, 10),
    default=1,
    show_default=True,
    help="Seats each request asks for.",
)
@click.option(
    "--duplicates",
    type=click.FloatRange(0.0, 1.0),
    default=0.0,
    show_default=True,
    help="Share of requests the producer sends twice (same reservation id).",
)
@click.option(
    "--arrival-rate",
    type=click.FloatRange(min=0.0),
    default=0.0,
    show_default=True,
    help="Requests sent per second; 0 sends them all at once (an on-sale's opening burst).",
)
@click.option("--batch-size", type=click.IntRange(1, 10_000), help="[default: the template's BatchSize]")
@click.option(
    "--batching-window",
    type=click.FloatRange(0.0, 300.0),
    help="Seconds [default: the template's MaximumBatchingWindowInSeconds].",
)
@click.option(
    "--visibility-timeout", type=click.FloatRange(min=0.0), help="Seconds [default: the template's]."
)
@click.option("--max-receive-count", type=click.IntRange(1, 1000), help="[default: the template's]")
@click.option("--function-timeout", type=click.FloatRange(min=1.0), help="Seconds [default: the template's].")
@click.option("--max-per-customer", type=click.IntRange(min=1), help="Per-customer limit of the seat class.")
@click.option(
    "--customers", type=click.IntRange(min=1), help="Distinct customers [default: one per request]."
)
@click.option(
    "--shards",
    type=click.IntRange(1, MAX_SHARDS),
    default=1,
    show_default=True,
    help="Shard items of the seat class (docs/sharding.md).",
)
@click.option(
    "--seed",
    type=int,
    default=1,
    show_default=True,
    help="Every figure is the same for the same seed and options.",
)
@click.option(
    "--cold-start-ms",
    type=click.FloatRange(min=0.0),
    default=DEFAULT_COLD_START_MS,
    show_default=True,
    help="A new container's start before its first invocation.",
)
@click.option(
    "--publish-ms",
    type=(click.FloatRange(min=0.1), click.FloatRange(min=0.1)),
    default=DEFAULT_PUBLISH_MS,
    show_default=True,
    help="SNS PublishBatch latency p50 and p90 (assumed).",
)
@click.option(
    "--write-units-per-s",
    type=click.FloatRange(min=1.0),
    default=1000.0,
    show_default=True,
    help="Per partition key.",
)
@click.option(
    "--read-units-per-s",
    type=click.FloatRange(min=1.0),
    default=3000.0,
    show_default=True,
    help="Per partition key.",
)
@click.option(
    "--table-write-units-per-s",
    type=click.FloatRange(min=1.0),
    help="Table-wide on-demand quota (AWS default 40,000) [default: not modelled].",
)
@click.option(
    "--local-stack-scale",
    type=click.FloatRange(min=0.001),
    help="Model the local stack with its contention layer at this time scale instead of AWS"
    " (only DynamoDB's time stretched; docs/simulation.md, validation).",
)
@output_option
def simulate(
    containers: int | None,
    requests: int,
    capacity: int | None,
    seats_per_request: int,
    duplicates: float,
    arrival_rate: float,
    batch_size: int | None,
    batching_window: float | None,
    visibility_timeout: float | None,
    max_receive_count: int | None,
    function_timeout: float | None,
    max_per_customer: int | None,
    customers: int | None,
    shards: int,
    seed: int,
    cold_start_ms: float,
    publish_ms: tuple[float, float],
    write_units_per_s: float,
    read_units_per_s: float,
    table_write_units_per_s: float | None,
    local_stack_scale: float | None,
    output: OutputFormat,
) -> None:
    """Simulate one event's on-sale on AWS: the service's own logic in 1-1,000 containers against
    an in-memory DynamoDB with AWS's conflicts, throttling and latency, fed by SQS, on a virtual
    clock. Deterministic for a seed; options not given take template.yaml's defaults."""
    try:
        defaults, settings = _template_defaults()
        config = SimulationConfig(
            containers=containers or defaults.containers,
            requests=requests,
            capacity=capacity,
            seats_per_request=seats_per_request,
            duplicates=duplicates,
            arrival_rate=arrival_rate,
            seed=seed,
            batch_size=batch_size or defaults.batch_size,
            batching_window_s=defaults.batching_window_s if batching_window is None else batching_window,
            visibility_timeout_s=(
                defaults.visibility_timeout_s if visibility_timeout is None else visibility_timeout
            ),
            max_receive_count=max_receive_count or defaults.max_receive_count,
            timeout_s=function_timeout or defaults.timeout_s,
            memory_mb=defaults.memory_mb,
            cold_start_ms=cold_start_ms,
            publish_ms=publish_ms,
            max_per_customer=max_per_customer,
            customers=customers,
            shards=shards,
            contention=ContentionSettings(
                write_units_per_s=write_units_per_s,
                read_units_per_s=read_units_per_s,
                table_write_units_per_s=table_write_units_per_s,
            ),
            local_stack_time_scale=local_stack_scale,
        )
    except (LocalStackError, ValueError) as exc:
        raise click.UsageError(str(exc)) from exc
    started = time.monotonic()
    result = run_simulation(config, settings)
    if output is OutputFormat.JSON:
        print_json(result.as_dict())
    elif output is OutputFormat.TEXT:
        print_text({"figure": name, "value": value} for name, value in result.as_dict().items())
    else:
        click.echo(format_table(result))
        click.echo(f"(simulated in {time.monotonic() - started:.1f} s of wall time)", err=True)
