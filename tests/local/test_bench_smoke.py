"""A small run of `seats bench` on the session's local stack: it works and counts what it claims.

No timing is asserted (the benchmark prints figures; `make bench` runs it in full). What is
checked are counts that follow from each design: the baseline makes exactly one UpdateItem and
one Publish per message (and the idempotent baseline a record put and update around it), the
service answers every message with far fewer requests and never writes the hot item after the
sell-out, all leave every inventory item consistent, and the contention figures add up
(committed + cancelled = attempted transactions, every message deleted or dead-lettered, a time
to outcome for every outcome published). The hot workload also runs sharded over MAX_SHARDS items
(and 4 with `make test-deep`; bounded, tests/depth.py), the service only: every shard item is read
back and the class sold exactly its capacity.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from seat_inventory.models import MAX_SHARDS
from seat_tools.bench import report
from seat_tools.bench.counting import COMMITTED
from seat_tools.bench.run import BASELINE, IDEMPOTENT, SERVICE, Bench, DesignResult, workloads
from seat_tools.cli.main import cli
from seat_tools.local.stack import LocalStack
from tests.depth import is_deep

pytestmark = [pytest.mark.local_stack, pytest.mark.bounded]

SCALE = 0.02  # hot: 400 requests for 40 seats; many: 200 over 20 events of 10; tail: 100 after 10
WORKERS = 2
# The hot workload again over MAX_SHARDS items (and 4 when deep): 40 seats in all. Each K is one more
# design run (about 17 s on 2 cores).
SHARDS = (1, 4, MAX_SHARDS) if is_deep() else (1, MAX_SHARDS)


@pytest.fixture(scope="module")
def results(local_stack: LocalStack) -> list[DesignResult]:
    bench = Bench(local_stack, workers=WORKERS)
    return bench.run(workloads(SCALE, SHARDS))  # no warm-up: nothing here is timed


def _result(results: list[DesignResult], workload: str, design: str) -> DesignResult:
    return next(r for r in results if r.workload == workload and r.design == design)


def test_every_message_is_answered_and_every_item_stays_consistent(
    results: list[DesignResult], local_stack: LocalStack
) -> None:
    specs = {spec.name: spec for spec in workloads(SCALE, SHARDS)}
    designs = (SERVICE, BASELINE, IDEMPOTENT)
    assert {(r.workload, r.design) for r in results} == {
        (name, d) for name, spec in specs.items() for d in spec.designs or designs
    }
    assert {r.workload for r in results} == {"hot", "many", "tail"} | {f"hot K={k}" for k in SHARDS[1:]}
    for result in results:
        spec = specs[result.workload]
        assert result.invariant_problems == []
        assert result.sell_out_problems == [], result.workload
        assert result.published == spec.requests, result.workload
        expected = 0 if spec.warmup else min(spec.requests, spec.capacity * spec.events)
        assert result.confirmed == expected, (result.workload, result.design)
        assert result.runner["handler_errors"] == 0
        # every process's CPU was read: the engines (and the contention layer when it is on) and
        # the workers did work while it drained
        layer = {"contention proxy"} if local_stack.aws_contention is not None else set()
        assert set(result.cpu_seconds) == {"DynamoDB Local", "moto server", "workers"} | layer
        # (the layer's share of a workload this small can round to 0 in the kernel's 10 ms ticks)
        busy = {name: seconds for name, seconds in result.cpu_seconds.items() if name != "contention proxy"}
        assert all(seconds > 0 for seconds in busy.values()), result.cpu_seconds


def test_the_sharded_hot_workload_sells_exactly_its_capacity_over_every_shard(
    results: list[DesignResult],
) -> None:
    for k in SHARDS[1:]:
        sharded = _result(results, f"hot K={k}", SERVICE)
        assert sharded.shards == k and sharded.workers == WORKERS
        (view,) = sharded.final_classes
        # every shard item was read back: all of them sold, none has a seat left
        assert [s.shard for s in view.shard_seats()] == list(range(k))
        assert sum(s.sold for s in view.shard_seats()) == view.capacity == sharded.capacity == 40
        assert all(s.available == 0 and s.held == 0 for s in view.shard_seats())
        assert sharded.confirmed == 40
        assert sharded.outcomes == {"CONFIRMED": 40, "SOLD_OUT": 400 - 40}
        # the inventory writes went to shard items only, and the ceiling counts K of them
        written = sharded.counts["hot_item_writes_by_key"]
        assert written and all(key.startswith("EVENT#") for key in written)
        ceiling = sharded.ceiling
        assert ceiling is not None and ceiling.shards == k
        assert ceiling.shard_items_per_transaction is not None and ceiling.shard_items_per_transaction >= 1
    assert _result(results, "hot", SERVICE).shards == 1


def test_the_baseline_makes_one_update_and_one_publish_per_message(results: list[DesignResult]) -> None:
    for workload in ("hot", "many", "tail"):
        baseline = _result(results, workload, BASELINE)
        requests = baseline.counts["http_requests"]
        assert requests.get("dynamodb.UpdateItem") == baseline.requests
        assert requests.get("sns.Publish") == baseline.requests
        assert baseline.per_message(baseline.handler_requests) == 2.0
        assert baseline.counts["hot_item_write_requests"] == baseline.requests


def test_the_idempotent_baseline_records_each_message_around_the_same_update(
    results: list[DesignResult],
) -> None:
    for workload in ("hot", "many", "tail"):
        idempotent = _result(results, workload, IDEMPOTENT)
        requests = idempotent.counts["http_requests"]
        # an in-progress record put, the inventory update, the record's update to COMPLETED
        assert requests.get("dynamodb.PutItem") == idempotent.requests
        assert requests.get("dynamodb.UpdateItem") == 2 * idempotent.requests
        assert requests.get("sns.Publish") == idempotent.requests
        assert idempotent.counts["hot_item_write_requests"] == idempotent.requests
        assert idempotent.confirmed == _result(results, workload, BASELINE).confirmed


def test_the_contention_figures_add_up(results: list[DesignResult]) -> None:
    for r in results:
        label = (r.workload, r.design)
        # every TransactWriteItems sent was answered: committed or cancelled
        assert r.transactions_attempted == r.counts["http_requests"].get("dynamodb.TransactWriteItems", 0), (
            label
        )
        assert r.transactions_committed == r.counts.get("transactions", {}).get(COMMITTED, 0)
        assert (r.cancelled_write_units > 0) == bool(r.transactions_cancelled), label
        # each delivery was deleted or handed back; each message deleted once or dead-lettered
        assert r.handed_back == r.runner["messages"] - r.runner["deleted"] >= 0, label
        assert r.runner["deleted"] + r.dead_lettered == r.requests, label
        # a time to outcome for each outcome published (its message received by the same worker)
        measured = sum(r.counts["send_to_outcome"].values())
        assert measured + r.counts["outcomes_without_message"] == r.published, label
        assert measured == sum(r.counts["receive_to_outcome"].values()), label
        p50, p99 = r.latency_s(0.5), r.latency_s(0.99)
        assert p50 is not None and p99 is not None and 0 < p50 <= p99, label
        receive_p99 = r.latency_s(0.99, since="receive")
        assert receive_p99 is not None and receive_p99 <= p99, label
    for r in results:
        if r.design != SERVICE:
            assert r.transactions_attempted == 0, (r.workload, r.design)


def test_the_contention_layer_counted_what_the_workers_saw(
    results: list[DesignResult], local_stack: LocalStack
) -> None:
    if local_stack.aws_contention is None:
        pytest.skip("the contention layer is off (SEATS_AWS_CONTENTION=off)")
    for r in results:
        label = (r.workload, r.design)
        layer = r.layer_counters
        assert layer is not None, label
        # the layer's verdicts and the workers' botocore events are two separate counts
        cancelled = sum(layer["transactions_cancelled"].values())
        assert layer["transactions_committed"] == r.transactions_committed, label
        assert cancelled == sum(r.transactions_cancelled.values()), label
        assert layer["throttled_requests"] == r.throttled_requests, label
        assert layer["write_conflicts"] == r.single_write_conflicts, label
        assert r.aws == local_stack.aws_contention


def test_the_per_event_ceiling_is_derived_from_the_counts(results: list[DesignResult]) -> None:
    hot = _result(results, "hot", SERVICE)
    ceiling = hot.ceiling
    assert ceiling is not None and ceiling.serialization_bound is not None
    committed = hot.counts["hot_item_transactions"][COMMITTED]
    assert ceiling.reservations_per_transaction == hot.confirmed / committed
    assert ceiling.value == min(ceiling.write_units_bound, ceiling.serialization_bound)
    for design in (BASELINE, IDEMPOTENT):
        common = _result(results, "hot", design).ceiling
        assert common is not None and common.serialization_bound is None
        # one UpdateItem of the hot item per request: 10 requests per seat here
        assert common.value == pytest.approx(1000 / 10)
    assert _result(results, "tail", SERVICE).ceiling is None  # nothing confirmed
    assert _result(results, "many", SERVICE).ceiling is None  # spread over 20 events


def test_the_service_writes_the_hot_item_once_per_batch_and_never_after_the_sell_out(
    results: list[DesignResult],
) -> None:
    hot = _result(results, "hot", SERVICE)
    baseline = _result(results, "hot", BASELINE)
    assert hot.counts["http_requests"].get("dynamodb.UpdateItem", 0) == 0
    assert hot.counts["http_requests"].get("sns.Publish", 0) == 0
    # 40 seats fit in one transaction. Each worker reads the class first; in the race for the
    # last seats a write refused by a concurrent commit is planned again from the item it hands
    # back.
    assert hot.counts["hot_item_write_requests"] <= 4 * WORKERS
    assert hot.hot_item_units_per_reservation < baseline.hot_item_units_per_reservation / 10
    # Rejections decided without the inventory are one PutItem each (1 write unit instead of 2 in
    # a transaction, issue 13); everything else the function sends stays well under one request
    # per message.
    puts = hot.counts["http_requests"].get("dynamodb.PutItem", 0)
    assert 0 < puts <= hot.requests - hot.confirmed
    assert hot.per_message(hot.handler_requests - puts) < 0.2
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
        engine="the engine",
    )
    for needle in (
        "## Targets",
        "| hot | service |",
        "| tail | baseline |",
        "aws.amazon.com/dynamodb/pricing",
        "## Where the time goes",
        "| DynamoDB Local CPU-s |",
        "| workers CPU-s |",
        "| messages handed back | invocations past the timeout | dead-lettered |",
        "DynamoDB engine behind every figure: the engine",
        "## Contention, retries and time to answer",
        "## Per-event ceiling",
        "| hot | baseline + idempotency |",
        "## Sharded hot workload",
        f"| hot K={SHARDS[1]} | service |",
        "| sold exactly its capacity |",
    ):
        assert needle in text
    names = [t.name for t in report.targets(results, None)]
    assert any("after the sell-out" in name for name in names)


def test_bench_help_matches_its_options() -> None:
    result = CliRunner().invoke(cli, ["bench", "--help"])
    assert result.exit_code == 0
    assert "--output" not in result.output  # --output is the AWS CLI's format option elsewhere
    for option in (
        "--quick",
        "--scale",
        "--workers",
        "--report",
        "--chart",
        "--figures-json",
        "--note",
        "--cold-start-rounds",
        "--shards",
        "--sharded-workers",
    ):
        assert option in result.output
