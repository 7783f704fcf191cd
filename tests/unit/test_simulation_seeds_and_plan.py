"""`seats simulate --seeds N --jobs J` (every figure's mean, min and max over seeds) and
`seats simulate --plan-rate R` (the stack `seats onsale plan --rate R` recommends)."""

from __future__ import annotations

import json
import statistics

import pytest
from click.testing import CliRunner

from seat_inventory.settings import Settings
from seat_tools.cli.main import cli
from seat_tools.onsale.plan import SaleInputs, plan_sale
from seat_tools.simulation.planned import plan_config, verdict
from seat_tools.simulation.run import SimulationConfig
from seat_tools.simulation.seeds import run_seeds, summarise

SETTINGS = Settings(table_name="t", outcomes_topic_arn="arn:aws:sns:us-east-1:123456789012:t")


def test_several_seeds_give_each_figure_its_mean_min_and_max_in_processes_or_not() -> None:
    config = SimulationConfig(containers=4, requests=600, capacity=400, seed=7)

    alone = run_seeds(config, SETTINGS, 3)
    parallel = run_seeds(config, SETTINGS, 3, jobs=2)

    assert [r.config.seed for r in alone] == [7, 8, 9]
    assert [r.figures for r in alone] == [r.figures for r in parallel]  # deterministic per seed
    summary = summarise(alone)
    rates = [r.figures["confirmed_per_s"] for r in alone]
    assert summary["confirmed_per_s"] == {
        "mean": statistics.fmean(rates),
        "min": min(rates),
        "max": max(rates),
    }
    assert (
        summary["cost_per_million_requests.total"]["min"] <= summary["cost_per_million_requests.total"]["max"]
    )
    assert summary["outcomes.CONFIRMED"] == {"mean": 400, "min": 400, "max": 400}
    assert sum(summary["binding_limit"].values()) == 3  # the values, counted
    assert summary["invariants"] == {"ok": 3}


def test_the_cli_prints_the_summary_in_text_and_json() -> None:
    runner = CliRunner()
    args = ["simulate", "--requests", "300", "--containers", "3", "--seeds", "2"]

    table = runner.invoke(cli, args)
    document = json.loads(runner.invoke(cli, [*args, "--jobs", "2", "--output", "json"]).output)

    assert table.exit_code == 0, table.output
    assert "2 seeds (1-2); drain: every request on the queue at the start" in table.output
    assert "confirmed_per_s" in table.output and "mean" in table.output
    assert document["seeds"] == [1, 2] and len(document["runs"]) == 2
    assert set(document["summary"]["requests_answered"]) == {"mean", "min", "max"}


def test_the_plans_stack_replaces_the_templates_and_given_options_keep_theirs() -> None:
    base = SimulationConfig(requests=20_000)
    plan = plan_sale(SaleInputs(rate=10_000, seats=20_000, batch_size=None))  # the plan picks the batch
    v = plan.values

    planned, _ = plan_config(base, 10_000)
    kept, _ = plan_config(base, 10_000, given={"memory_mb", "warm_write_units_per_s", "batch_size"})

    assert planned.batch_size == v["batch_size"] == 30 and kept.batch_size == base.batch_size == 99

    assert planned.event_pollers == v["event_pollers"] and planned.containers == 10 * max(
        v["event_pollers"], v["maximum_event_pollers"]
    )
    assert planned.memory_mb == v["reserve_memory_mb"] and planned.shards == v["shards"]
    assert planned.contention.warm_write_units_per_s == v["warm_write_units"]
    assert planned.contention.index_warm_write_units_per_s == v["index_warm_write_units"]
    assert planned.sns_publish_per_s == v["sns_publish_quota"]
    assert (
        planned.tickets.series == v["ticket_series"] == 24 and planned.tickets.lanes == v["issue_lanes"] == 8
    )
    assert planned.tickets.series_at_once == v["issue_series_at_once"] == 3
    assert planned.offered_rate == 10_000 and planned.api.rate_limit == v["api_rate_limit"]
    assert planned.api.account_rate_limit == 10_000
    assert kept.memory_mb == base.memory_mb and kept.contention.warm_write_units_per_s == 4_000
    assert kept.contention.index_warm_write_units_per_s == v["index_warm_write_units"]


def test_the_verdict_says_whether_the_rate_was_met_and_else_what_held_it() -> None:
    plan = plan_sale(SaleInputs(rate=1_000))
    met = verdict(plan, {"confirmed_per_s": 950.0, "binding_limit": "arrivals"})
    short = verdict(plan, {"confirmed_per_s": 700.0, "binding_limit": "intake"})

    assert met["met"] and met["held_by"] is None and met["share"] == pytest.approx(0.95)
    assert not short["met"] and short["held_by"] == "intake"


def test_simulate_plan_rate_runs_the_plans_stack_and_says_if_it_holds() -> None:
    result = CliRunner().invoke(
        cli, ["simulate", "--plan-rate", "500", "--requests", "2000", "--output", "json"]
    )

    assert result.exit_code == 0, result.output
    document = json.loads(result.output)
    assert document["config"]["offered_rate"] == 500 and document["config"]["event_pollers"] >= 2
    assert document["plan"]["rate"] == 500
    assert document["plan_verdict"]["rate"] == 500
    assert document["plan_verdict"]["met"] == (document["confirmed_per_s"] >= 450)
    assert document["requests_answered"] == 2000
