"""The stack `seats onsale plan --rate R` recommends, as a simulation's configuration
(`seats simulate --plan-rate R`: "will my plan hold?").

The plan's settings replace the template's: its BatchSize, the event source in provisioned mode
with the plan's reservation queues and each one's event pollers (its minimum, and its maximum above it), its
provisioned and reserved concurrency, the reserve
function's and the issuer's memory, the seat class's shard items, the table's and the
TicketsToIssue index's warm throughput, the table quota (no maximum), the SNS publish quota, the
API's stage and account throttles, the ticket series, numbered all at once. The requests are
offered through the API at R. An option the command line gives keeps its value over the plan's.
`verdict` says whether the run met R (within 10%) and, if not, what held it and what the plan
itself says it cannot give.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection
from typing import Any

from seat_tools.event_source_scaling import INVOCATIONS_PER_EVENT_POLLER
from seat_tools.onsale.plan import SaleInputs, SalePlan, plan_sale
from seat_tools.simulation.api import ACCOUNT_BURST_LIMIT, ACCOUNT_RATE_LIMIT
from seat_tools.simulation.run import SimulationConfig

MET_WITHIN = 0.10  # the plan holds when the run confirms at least 90% of the rate


def sale_inputs(config: SimulationConfig, rate: float, *, batch_given: bool = True) -> SaleInputs:
    """What the plan is asked for the run's sale (the run's batch size when given, else the plan
    picks one)."""
    return SaleInputs(
        rate=rate,
        seats=config.seats if not config.seat_map else None,
        seats_per_request=config.seats_per_request,
        customer_limit=config.max_per_customer is not None,
        batch_size=config.batch_size if batch_given else None,
        mapped=config.seat_map is not None,
        api_kind=config.api.kind,
    )


def plan_config(
    config: SimulationConfig, rate: float, given: Collection[str] = ()
) -> tuple[SimulationConfig, SalePlan]:
    """`config` with the plan's settings for `rate`, except the fields in `given` (the command
    line's options, by SimulationConfig field or contention setting name)."""
    plan = plan_sale(sale_inputs(config, rate, batch_given="batch_size" in given))
    v = plan.values
    changes: dict[str, Any] = {}

    def put(name: str, value: Any) -> None:
        if name not in given:
            changes[name] = value

    put("batch_size", int(v["batch_size"]))
    put("batching_window_s", float(v["batching_window_s"]))

    if not {"event_pollers", "max_event_pollers", "containers", "containers_at_once"} & set(given):
        minimum, maximum = int(v["event_pollers"]), int(v["maximum_event_pollers"])
        most = max(minimum, maximum)
        put("queues", int(v["queues"]))
        queues = changes.get("queues", config.queues)
        changes.update(
            event_pollers=minimum,
            max_event_pollers=maximum if maximum > minimum else 0,
            containers=most * INVOCATIONS_PER_EVENT_POLLER,
        )
        put(
            "provisioned_concurrency",
            min(int(v["provisioned_concurrency"]), most * INVOCATIONS_PER_EVENT_POLLER * queues),
        )
    put("reserved_concurrency", int(v["reserved_concurrency"]))
    put("memory_mb", int(v["reserve_memory_mb"]))
    if not config.seat_map:
        put("shards", max(1, int(v["shards"])))
    put("sns_publish_per_s", float(v["sns_publish_quota"]))
    if not {"offered_rate", "arrival_rate"} & set(given):
        changes.update(offered_rate=rate, arrival_rate=0.0)
    api: dict[str, Any] = {}
    for name, value in (
        ("rate_limit", float(v["api_rate_limit"])),
        ("burst_limit", float(v["api_burst_limit"])),
        ("account_rate_limit", max(ACCOUNT_RATE_LIMIT, rate)),
        ("account_burst_limit", max(ACCOUNT_BURST_LIMIT, rate / 2)),
    ):
        if f"api_{name}" not in given:
            api[name] = value
    changes["api"] = dataclasses.replace(config.api, **api)
    contention: dict[str, Any] = {}
    planned: tuple[tuple[str, float | None], ...] = (
        ("warm_write_units_per_s", float(v["warm_write_units"])),
        ("warm_read_units_per_s", float(v["warm_read_units"])),
        ("index_warm_write_units_per_s", float(v["index_warm_write_units"])),
        ("index_warm_read_units_per_s", float(v["index_warm_read_units"])),
        ("table_quota_units_per_s", float(max(v["table_quota_write_units"], v["table_quota_read_units"]))),
        ("max_write_request_units", None),
        ("max_read_request_units", None),
    )
    for setting, planned_value in planned:
        if setting not in given:
            contention[setting] = planned_value
    changes["contention"] = dataclasses.replace(config.contention, **contention)
    tickets: dict[str, Any] = {}
    if "ticket_series" not in given:
        tickets["series"] = int(v["ticket_series"])
    if "issuer_series_at_once" not in given:
        tickets["series_at_once"] = int(v["issue_series_at_once"])
    if "issuer_lanes" not in given:
        tickets["lanes"] = int(v["issue_lanes"])
    if "issuer_memory_mb" not in given:
        tickets["memory_mb"] = int(v["issue_memory_mb"])
    changes["tickets"] = dataclasses.replace(config.tickets, **tickets)
    return dataclasses.replace(config, **changes), plan


def verdict(plan: SalePlan, figures: dict[str, Any]) -> dict[str, Any]:
    """Whether the run confirmed the plan's rate (within `MET_WITHIN`); if not, what held it (the
    run's binding limit) and what the plan said it cannot give."""
    rate = plan.inputs.rate
    reached = figures.get("confirmed_per_s", 0.0)
    met = reached >= (1 - MET_WITHIN) * rate
    return {
        "rate": rate,
        "confirmed_per_s": reached,
        "share": reached / rate if rate else 0.0,
        "met": met,
        "held_by": None if met else figures.get("binding_limit"),
        "plan_cannot": list(plan.problems),
        "plan_behind": list(plan.warnings),
    }


def plan_document(plan: SalePlan) -> dict[str, Any]:
    """The plan's settings the run used, for the JSON."""
    return {
        "rate": plan.inputs.rate,
        "values": dict(plan.values),
        "cannot": list(plan.problems),
        "behind": list(plan.warnings),
    }
