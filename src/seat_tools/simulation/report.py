"""The printed form of a simulation's figures (the JSON form is `SimulationResult.as_dict`)."""

from __future__ import annotations

from typing import Any

from seat_tools.simulation.binding import ROW_MEANING
from seat_tools.simulation.run import SimulationResult
from seat_tools.traffic import ORDER_CLASSES


def _n(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:,.2f}"


def _cancelled(figures: dict[str, Any]) -> str:
    reasons = figures["transactions_cancelled"]
    if not reasons:
        return "0"
    total = sum(reasons.values())
    parts = ", ".join(f"{reason} {count:,}" for reason, count in reasons.items())
    return f"{total:,} ({figures['cancelled_share']:.0%} of transactions: {parts})"


def _refused_reads(figures: dict[str, Any]) -> str:
    reasons = figures["transactional_reads_refused"]
    total = sum(reasons.values())
    parts = "".join(f", {reason} {count:,}" for reason, count in reasons.items())
    return f"{total:,} of {figures['transactional_reads']:,} TransactGetItems (sharded class reads){parts}"


def _contention(result: SimulationResult) -> str:
    settings = result.config.contention
    where = (
        f"the local stack's layer at time scale x{result.config.local_stack_time_scale:g}"
        if result.config.local_stack_time_scale
        else "AWS"
    )
    return (
        f"{where}: {settings.describe_table()}; conflicts;"
        f" {'published latencies' if settings.latency else 'no latency'}"
    )


def _scale_up(result: SimulationResult) -> str:
    c, f = result.config, result.figures
    intake = f["intake"]
    if c.local_stack_time_scale:
        how = "every reader at once (the local runner)"
    elif c.event_pollers:
        most = (
            f" (up to {c.most_pollers}: +1 every 0.6 s while messages wait)"
            if c.most_pollers > c.event_pollers
            else ""
        )
        how = (
            f"provisioned mode: {c.event_pollers} event pollers from the start{most}, each at most 10"
            f" receive calls a second and 10 invocations at once; {intake['pollers']} at the end"
        )
    elif c.containers_at_once:
        how = "standard mode, every reader at once (--containers-at-once)"
    else:
        how = (
            "standard mode: 5 readers at once, then up to 300 more a minute, each gathering its batch"
            " and then invoking"
        )
    if c.queues > 1:
        how = f"{c.queues} queues, each with its own mapping: " + how
    if c.provisioned_concurrency:
        how += f"; {c.provisioned_concurrency} initialised before the sale (provisioned concurrency)"
    if c.reserved_concurrency:
        how += (
            f"; at most {c.reserved_concurrency} at once (reserved concurrency:"
            f" {intake['throttled_invokes']:,} invokes throttled and retried)"
        )
    peak, after = f["peak_concurrency"], _n(f["peak_concurrency_after_s"])
    return (
        f"{how}; {intake['receive_calls']:,} receive calls ({intake['messages_per_receive']:.1f} messages"
        f" each), batches of {intake['mean_batch']:.1f}; at most {peak:,} running, first after {after} s"
    )


def _bound_by(figures: dict[str, Any]) -> str:
    shares = figures["bound_by"]
    if not shares:
        return "-"
    parts = ", ".join(f"{row} {share:.0%}" for row, share in shares.items() if share >= 0.005)
    limit = figures["binding_limit"]
    return f"{limit} ({ROW_MEANING[limit]}); {parts} of the sale's time"


def _api(figures: dict[str, Any]) -> str:
    api = figures["api"]
    return (
        f"{api['offered']:,} requests offered, {api['accepted']:,} accepted,"
        f" {api['responses_429']:,} answered 429 ({api['refused']:,} refused for good;"
        f" {api['attempts']:,} attempts)"
    )


def _throttled(figures: dict[str, Any]) -> str:
    by = figures["throttled_by"]
    parts = "".join(f", {limit} {count:,}" for limit, count in by.items())
    return f"{figures['throttled_requests']:,}{parts}"


def _partitions(result: SimulationResult) -> str:
    f = result.figures
    if result.config.contention.per_key:
        return f"one per partition key ({f['partitions_at_end']:,} keys)"
    return (
        f"{result.config.contention.initial_partitions():,} at the start, {f['partitions_at_end']:,} at the"
        f" end ({f['partition_splits']:,} splits)"
    )


def ticket_rows(result: SimulationResult) -> list[tuple[str, str]]:
    """The issuer's figures (docs/guides/tickets.md): its delay, rate, units and cost."""
    t = result.figures["tickets"]
    units = t["write_units"]
    cost = t["cost_per_million_reservations"]
    cancelled = sum(t["transactions_cancelled"].values())
    return [
        (
            "ticket issuer",
            f"{t['memory_mb']:,} MB ({t['cpu_seconds']:,.1f} s of its CPU);"
            f" {t['series']} series; {t['lanes']} lane(s), each {t['series_at_once']} series,"
            f" {t['publish_at_once']} PublishBatch and {t['clear_at_once']} outbox updates at once,"
            f" rounds of up to {t['limit']:,} for {t['issue_seconds']:g} s a run;"
            f" the sale starts {t['phase_s']:g} s into a scheduled run; index lag {t['index_lag_s']:g} s",
        ),
        (
            "numbering delay",
            f"p50 {t['numbering_delay_p50_s']:.1f} s, p99 {t['numbering_delay_p99_s']:.1f} s,"
            f" max {t['numbering_delay_max_s']:.1f} s (sold to numbered)",
        ),
        (
            "delay p99 by tenth",
            ", ".join(f"{v:.1f}" for v in t.get("numbering_delay_p99_by_tenth_s", []))
            + " s (the sales of each tenth of the sale's time, first to last)",
        ),
        (
            "numbered",
            f"{t['reservations_numbered']:,} of {t['reservations_sold']:,} sold,"
            f" {_n(t['numbered_per_s'])} / s (first sale to last numbered); {t['transactions']:,}"
            f" transactions ({cancelled:,} cancelled, {t['throttled_requests']:,} throttled requests),"
            f" {t['rounds']:,} rounds,"
            f" {t['invocations']:,} invocations",
        ),
        (
            "ticket write units",
            f"{units['per_reservation']:.2f} per reservation (sale's index entries"
            f" {units['sale_index_entries']:,.0f}, issuer's table writes {units['issuer_table']:,.0f},"
            f" its index writes {units['issuer_index']:,.0f})",
        ),
        (
            "tickets / million",
            f"${cost['total']:.2f} per million numbered (DynamoDB ${cost['dynamodb']:.2f},"
            f" SNS ${cost['sns']:.2f}, Lambda ${cost['lambda']:.2f})",
        ),
    ]


def _asked(c: Any) -> str:
    if c.order_lines:
        low, high = c.order_lines
        return (
            f"each an order of {low}-{high} line(s) of {c.seats_per_request} seat(s), each line its own"
            f" class of {len(ORDER_CLASSES)} (each class {c.seats:,} seats"
            + (f", all in one pool over {c.pool_shards} item(s))" if c.pool_shards else ")")
        )
    if c.seat_map:
        return f"1-{c.seats_per_request} seats best available each on {c.seat_map}"
    return f"{c.seats_per_request} seat(s) each"


def seat_map_rows(result: SimulationResult) -> list[tuple[str, str]]:
    """A seat-map run's own figures (docs/guides/seat-maps.md, "At scale"); none for a counted class."""
    f = result.figures
    if result.config.seat_map is None:
        return []
    singles = f["singles_left"]
    deciles = "; ".join(
        f"{name} " + " ".join(f"{r:,.0f}" for r in ranks)
        for name, ranks in f["mean_rank_by_arrival_decile"].items()
    )
    return [
        (
            "seats confirmed / s",
            f"{_n(f['seats_confirmed_per_s'])} ({f['seats_confirmed']:,} seats; {f['seats_sold']:,} sold on"
            f" the rows, of {f['seats_on_map']:,} on the map)",
        ),
        (
            "singles left",
            f"{singles['orphans_left']:,} (takes created {singles['created_unavoidable']:,} where no"
            f" placement avoided one, {singles['created_where_avoidable']:,} where one did)",
        ),
        ("mean rank by arrival decile", deciles),
    ]


def order_rows(result: SimulationResult) -> list[tuple[str, str]]:
    """An orders run's own figures (docs/guides/orders.md, "Scale"); none for single-line requests."""
    f = result.figures
    if result.config.order_lines is None:
        return []
    o = f["orders"]
    cost = f["cost_per_million_requests"]["total"]
    return [
        (
            "orders confirmed / s",
            f"{_n(f['confirmed_per_s'])} ({f['confirmed_reservations']:,} orders; cost / million orders"
            f" ${cost:.2f})",
        ),
        (
            "lines confirmed / s",
            f"{_n(o['lines_confirmed_per_s'])} ({o['lines_confirmed']:,} lines of {o['lines_asked']:,} asked,"
            f" {o['lines_per_order']:.2f} per order)",
        ),
        ("seats confirmed / s", f"{_n(f['seats_confirmed_per_s'])} ({f['seats_confirmed']:,} seats)"),
        ("orders recorded", ", ".join(f"{k} {v:,}" for k, v in o["recorded"].items()) or "-"),
    ]


def _cost(figures: dict[str, Any]) -> str:
    cost = figures["cost_per_million_requests"]
    parts = ", ".join(
        f"{name.replace('_', ' ')} ${value:.4f}" if value < 0.01 else f"{name.replace('_', ' ')} ${value:.2f}"
        for name, value in cost.items()
        if name != "total" and value > 0
    )
    prewarm = f"; pre-warming ${figures['pre_warming_usd']:,.2f} once" if figures["pre_warming_usd"] else ""
    other = figures.get("cost_per_million_requests_other_api")
    kind = {"rest": "a REST API", "http": "an HTTP API"}
    through = (
        f"; through {kind[other['kind']]} ${other['total']:.2f} (API Gateway ${other['api_gateway']:.2f})"
        if other
        else ""
    )
    return f"${cost['total']:.2f} all in ({parts}){prewarm}{through}"


def _aligned(rows: list[tuple[str, str]]) -> str:
    width = max(len(name) for name, _ in rows)
    return "\n".join(f"{name:<{width}}  {value}".rstrip() for name, value in rows)


def format_table(result: SimulationResult) -> str:
    """The figures as aligned lines, grouped like docs/explanation/simulation.md describes them."""
    c, f = result.config, result.figures
    if c.sold_per_s > 0:
        workload = (
            f"no sale simulated: {c.requests:,} sales of {c.seats_per_request} seat(s)"
            f" at {c.sold_per_s:,.0f} / s; seed {c.seed}"
        )
        return _aligned(
            [("workload", workload), ("DynamoDB model", _contention(result)), *ticket_rows(result)]
        )
    rows: list[tuple[str, str]] = [
        (
            "workload",
            f"{c.requests:,} requests"
            + ("" if c.order_lines else f" for {f['seats']:,} seats")
            + " of one event, "
            + _asked(c)
            + f", {c.duplicates:.0%} sent twice, "
            + c.rate_kind
            + f"; seed {c.seed}",
        ),
        (
            "function",
            f"{c.containers} containers"
            f" ({'10 per event poller' if c.event_pollers else 'MaximumConcurrency'}),"
            f" BatchSize {c.batch_size}, window"
            f" {c.batching_window_s:g} s, timeout {c.timeout_s:g} s, {c.memory_mb} MB"
            f" ({f['function']['vcpu_share']:.2f} vCPU: {f['function']['cpu_per_message_ms']:.2f} ms of CPU a"
            f" message); visibility {c.visibility_timeout_s:g} s, maxReceiveCount {c.max_receive_count}",
        ),
        ("scale-up", _scale_up(result)),
        ("DynamoDB model", _contention(result)),
        ("", ""),
        ("bound by", _bound_by(f)),
        *([("API", _api(f))] if f["api"] else []),
        ("confirmed reservations", f"{f['confirmed_reservations']:,}"),
        (
            "confirmed / s",
            f"{_n(f['confirmed_per_s'])} (first send to last confirmation, {_n(f['sale_seconds'])} s)",
        ),
        (
            "confirmed / busy s",
            f"{_n(f['confirmed_per_busy_s'])} (while a container was working, {_n(f['busy_seconds'])} s)",
        ),
        (
            "requests answered / s",
            f"{_n(f['answered_per_s'])} ({f['requests_answered']:,} in {_n(f['answer_seconds'])} s)",
        ),
        ("outcomes", ", ".join(f"{k} {v:,}" for k, v in f["outcomes"].items()) or "-"),
        ("transactions committed", f"{f['transactions_committed']:,}"),
        ("transactions cancelled", _cancelled(f)),
        ("transactional reads refused", _refused_reads(f)),
        ("throttled requests", _throttled(f)),
        ("table partitions", _partitions(result)),
        (
            "wasted write units",
            f"{f['wasted_write_units']:,.0f}"
            f" ({f['wasted_write_units_per_confirmed']:.2f} per confirmed reservation)",
        ),
        (
            "messages handed back",
            f"{f['messages_handed_back']:,} ({_n(f['messages_handed_back_per_busy_s'])} per busy second;"
            " they return after the visibility timeout)",
        ),
        ("messages dead-lettered", f"{f['messages_dead_lettered']:,}"),
        (
            "SNS",
            f"{f['sns_requests']:,} PublishBatch calls, {f['sns_throttled_calls']:,} refused for the quota"
            f" ({c.sns_publish_per_s:,.0f} messages/s)"
            if c.sns_publish_per_s
            else f"{f['sns_requests']:,} PublishBatch calls, no quota",
        ),
        (
            "answer latency",
            f"p50 {f['answer_latency_p50_s']:.3f} s, p99 {f['answer_latency_p99_s']:.3f} s"
            " (send to outcome published)",
        ),
        (
            "invocations",
            f"{f['invocations']:,} ({f['cold_starts']:,} cold, {f['timeouts']:,} timed out)",
        ),
        ("cost / million requests", _cost(f)),
        ("invariants", f["invariants"] if isinstance(f["invariants"], str) else "; ".join(f["invariants"])),
        *seat_map_rows(result),
        *order_rows(result),
        ("", ""),
        *ticket_rows(result),
    ]
    return _aligned(rows)
