"""A small run of `seats bench` on the session's local stack: it works and counts what it claims.

No timing is asserted (the benchmark prints figures; `make bench` runs it in full). What is
checked are counts that follow from each design: the baseline makes exactly one UpdateItem and
one Publish per message, the service answers every message with far fewer requests and never
writes the hot item after the sell-out, and both leave every inventory item consistent.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from seat_inventory.bench import report
from seat_inventory.bench.run import BASELINE, SERVICE, Bench, DesignResult, workloads
from seat_inventory.cli.main import cli
from seat_inventory.local.stack import LocalStack

pytestmark = pytest.mark.local_stack

SCALE = 0.02  # hot: 400 requests for 40 seats; many: 200 over 20 events of 10; tail: 100 after 10
WORKERS = 2


@pytest.fixture(scope="module")
def results(local_stack: LocalStack) -> list[DesignResult]:
    bench = Bench(local_stack, workers=WORKERS)
    return bench.run(workloads(SCALE))  # no warm-up: nothing here is timed


def _result(results: list[DesignResult], workload: str, design: str) -> DesignResult:
    return next(r for r in results if r.workload == workload and r.design == design)


def test_every_message_is_answered_and_every_item_stays_consistent(results: list[DesignResult]) -> None:
    specs = {spec.name: spec for spec in workloads(SCALE)}
    assert {(r.workload, r.design) for r in results} == {(w, d) for w in specs for d in (SERVICE, BASELINE)}
    for result in results:
        spec = specs[result.workload]
        assert result.invariant_problems == []
        assert result.published == spec.requests, result.workload
        expected = 0 if spec.warmup else min(spec.requests, spec.capacity * spec.events)
        assert result.confirmed == expected, (result.workload, result.design)
        assert result.runner["handler_errors"] == 0
        # every process's CPU was read: both engines and the workers did work while it drained
        assert set(result.cpu_seconds) == {"DynamoDB Local", "moto server", "workers"}
        assert all(seconds > 0 for seconds in result.cpu_seconds.values()), result.cpu_seconds


def test_the_baseline_makes_one_update_and_one_publish_per_message(results: list[DesignResult]) -> None:
    for workload in ("hot", "many", "tail"):
        baseline = _result(results, workload, BASELINE)
        requests = baseline.counts["http_requests"]
        assert requests.get("dynamodb.UpdateItem") == baseline.requests
        assert requests.get("sns.Publish") == baseline.requests
        assert baseline.per_message(baseline.handler_requests) == 2.0
        assert baseline.counts["hot_item_write_requests"] == baseline.requests


def test_the_service_writes_the_hot_item_once_per_batch_and_never_after_the_sell_out(
    results: list[DesignResult],
) -> None:
    hot = _result(results, "hot", SERVICE)
    baseline = _result(results, "hot", BASELINE)
    assert hot.counts["http_requests"].get("dynamodb.UpdateItem", 0) == 0
    assert hot.counts["http_requests"].get("sns.Publish", 0) == 0
    # 40 seats fit in one transaction. Each worker reads the class first; in the race for the
    # last seats a worker commits its share, then another after a new read (a share may be
    # refused when a concurrent commit made its read stale, and it is planned again).
    assert hot.counts["hot_item_write_requests"] <= 4 * WORKERS
    assert hot.hot_item_units_per_reservation < baseline.hot_item_units_per_reservation / 10
    assert hot.per_message(hot.handler_requests) < 0.2
    tail = _result(results, "tail", SERVICE)
    # Every worker starts after the sell-out: it reads the class first and never writes its item.
    assert tail.counts["hot_item_write_requests"] == 0
    baseline_tail = _result(results, "tail", BASELINE)
    assert baseline_tail.counts["hot_item_write_requests"] == baseline_tail.requests


def test_the_report_tables_and_chart_are_written(results: list[DesignResult], tmp_path: Path) -> None:
    chart = tmp_path / "chart.png"
    report.draw_chart(results, chart)
    assert chart.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    text = report.markdown(
        results,
        None,
        command="seats bench",
        started="now",
        duration_s=1.0,
        scale=SCALE,
        workers=2,
        chart="chart.png",
    )
    for needle in (
        "## Targets",
        "| hot | service |",
        "| tail | baseline |",
        "aws.amazon.com/dynamodb/pricing",
        "## Where the time goes",
        "| DynamoDB Local CPU-s | moto server CPU-s | workers CPU-s |",
    ):
        assert needle in text
    names = [t.name for t in report.targets(results, None)]
    assert any("after the sell-out" in name for name in names)


def test_bench_help_matches_its_options() -> None:
    result = CliRunner().invoke(cli, ["bench", "--help"])
    assert result.exit_code == 0
    for option in ("--quick", "--scale", "--workers", "--output", "--chart", "--json", "--cold-start-rounds"):
        assert option in result.output
