"""The simulation against the local stack's contention layer: one small workload, both ways.

The local stack runs the real handler in worker processes (the local runner), botocore, the
contention layer's proxy and DynamoDB Local, moto's SQS and SNS, at the layer's time scale
SCALE. The simulation runs the same workload in its local-stack mode
(`local_stack_time_scale=SCALE`: DynamoDB's modelled time stretched, everything else at wall
speed). The tolerance (docs/explanation/simulation.md, "Validation"):

- seats sold and messages dead-lettered: equal;
- transactions committed, and the time the workers were busy (first invocation's start to the
  last one's end, in the model's time): within 35% of the simulation's mean over SEEDS;
- share of transactions cancelled: within 0.20 of the simulation's mean;
- messages handed back: within the simulation's range over SEEDS, widened by one batch.

A busy machine can only lengthen the local stack's busy time (its CPU time is not scaled), never
shorten it: when the first run's busy time is above the tolerance, the local stack runs the
workload once more and the shorter busy time is compared; every other check holds on each run.

What differs and is not modelled by the simulation: the local stack's CPU time (handler,
botocore, proxy, DynamoDB Local, moto on two shared cores), which the time scale shrinks but does
not remove, and the OS's scheduling of the workers.

`pytest tests/local/test_simulation_validation.py -s` prints both sides' figures.
"""

from __future__ import annotations

import os
import statistics
import uuid
from dataclasses import replace
from pathlib import Path
from typing import Any

from seat_inventory.models import SeatKey
from seat_inventory.settings import Settings
from seat_tools.contention.model import ContentionSettings
from seat_tools.local.runner import LocalRunner, runner_config
from seat_tools.local.stack import LocalStack
from seat_tools.local.template import load_template
from seat_tools.operator_commands import OperatorTable
from seat_tools.simulation.run import SimulationConfig, run_simulation
from seat_tools.traffic import send_messages

SCALE = 20.0
# A larger run: SEATS_VALIDATION_WORKERS=6 SEATS_VALIDATION_REQUESTS=1800 (docs/explanation/simulation.md).
WORKERS = int(os.environ.get("SEATS_VALIDATION_WORKERS", "3"))
REQUESTS = int(os.environ.get("SEATS_VALIDATION_REQUESTS", "600"))
VISIBILITY_S = 40  # wall seconds on the local stack
SEEDS = range(1, 9)
DRAIN_TIMEOUT_S = 600.0

RELATIVE_TOLERANCE = 0.35
CANCELLED_SHARE_TOLERANCE = 0.20


def _run_local(tmp_path: Path) -> dict[str, Any]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    with LocalStack(
        aws_contention=ContentionSettings(time_scale=SCALE),
        visibility_timeout_s=VISIBILITY_S,
        log_dir=tmp_path,
    ) as stack:
        store = OperatorTable(stack.client("dynamodb"), stack.table_name)
        key = SeatKey(f"validate-{uuid.uuid4().hex[:8]}", "GA")
        store.create_seat_class(key, REQUESTS)
        bodies = [
            {
                "reservation_id": f"r-{key.event_id}-{n}",
                "event_id": key.event_id,
                "seat_class": key.seat_class,
                "quantity": 1,
                "customer_id": f"c-{n}",
            }
            for n in range(REQUESTS)
        ]
        report = send_messages(stack.client("sqs"), stack.queue_url, bodies, concurrency=8)
        assert not report.failed, report.first_error
        before = stack.contention_status()
        assert before is not None, "the contention layer is off"
        runner = LocalRunner(replace(runner_config(stack, workers=WORKERS), sweep_handler=None))
        runner.start()
        try:
            drained = runner.drain(stack.queue_depth, timeout_s=DRAIN_TIMEOUT_S, deleted=len(bodies))
            assert drained, "the queue did not drain"
        finally:
            runner.stop()
        after = stack.contention_status()
        assert after is not None
        visible, in_flight = stack.queue_depth(stack.dead_letter_queue_url)
        inventory = store.read_inventory(key)
        assert inventory is not None
    counters, counted_before = after["counters"], before["counters"]
    cancelled = {
        reason: count - counted_before["transactions_cancelled"].get(reason, 0)
        for reason, count in counters["transactions_cancelled"].items()
    }
    committed = counters["transactions_committed"] - counted_before["transactions_committed"]
    cancelled_total = sum(cancelled.values())
    stats = runner.stats
    busy_wall_s = (stats.last_invocation_end_at or 0.0) - (stats.first_invocation_at or 0.0)
    return {
        # From the first invocation's start to the last one's end, in the model's time.
        "busy_model_seconds": busy_wall_s / SCALE,
        "sold": inventory.sold,
        "transactions_committed": committed,
        "transactions_cancelled": cancelled,
        "cancelled_share": cancelled_total / (committed + cancelled_total),
        "messages_handed_back": runner.stats.messages - runner.stats.deleted,
        "messages_dead_lettered": visible + in_flight,
    }


def _simulate(seed: int) -> dict[str, Any]:
    settings = Settings(table_name="t", outcomes_topic_arn="arn:aws:sns:us-east-1:123456789012:t")
    config = SimulationConfig(
        containers=WORKERS,
        requests=REQUESTS,
        seed=seed,
        visibility_timeout_s=VISIBILITY_S,
        local_stack_time_scale=SCALE,
    )
    figures = run_simulation(config, settings).figures
    figures["sold"] = figures["final_inventory"]["sold"]
    return figures


def test_the_simulation_and_the_contention_layer_agree_on_a_small_workload(tmp_path: Path) -> None:
    simulated = [_simulate(seed) for seed in SEEDS]
    busy = statistics.mean(f["busy_seconds"] for f in simulated)
    runs = [_run_local(tmp_path / "run-1")]
    if runs[0]["busy_model_seconds"] > (1 + RELATIVE_TOLERANCE) * busy:
        runs.append(_run_local(tmp_path / "run-2"))
    for local in runs:
        _assert_agrees(local, simulated)
    shortest = min(run["busy_model_seconds"] for run in runs)
    assert abs(shortest - busy) <= RELATIVE_TOLERANCE * busy, (
        f"busy {[run['busy_model_seconds'] for run in runs]} model seconds on the local stack,"
        f" {busy:.2f} simulated"
    )


def _assert_agrees(local: dict[str, Any], simulated: list[dict[str, Any]]) -> None:
    committed = statistics.mean(f["transactions_committed"] for f in simulated)
    share = statistics.mean(f["cancelled_share"] for f in simulated)
    handed_back = [f["messages_handed_back"] for f in simulated]
    print(
        f"\nlocal stack (layer x{SCALE:g}, {WORKERS} workers, {REQUESTS} requests): {local}"
        f"\nsimulation, seeds {SEEDS.start}-{SEEDS.stop - 1}: committed mean {committed:.1f}"
        f" ({[f['transactions_committed'] for f in simulated]}), cancelled share mean {share:.2f}"
        f" ({[round(f['cancelled_share'], 2) for f in simulated]}), handed back {handed_back},"
        f" dead-lettered {[f['messages_dead_lettered'] for f in simulated]},"
        f" busy seconds {[round(f['busy_seconds'], 2) for f in simulated]}"
    )

    assert local["sold"] == REQUESTS
    assert all(f["sold"] == REQUESTS for f in simulated)
    assert local["messages_dead_lettered"] == 0
    assert all(f["messages_dead_lettered"] == 0 for f in simulated)
    assert abs(local["transactions_committed"] - committed) <= RELATIVE_TOLERANCE * committed
    assert abs(local["cancelled_share"] - share) <= CANCELLED_SHARE_TOLERANCE
    batch = load_template().function.event_source.batch_size
    assert min(handed_back) - batch <= local["messages_handed_back"] <= max(handed_back) + batch
