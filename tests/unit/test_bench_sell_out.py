"""The bench's sharded hot workloads and its check that a class sold exactly its capacity.

The check is fed states read back from a sale: a class that sold out on every shard passes, and
one with a seat stranded on a shard, one that under-sold or oversold, or an item off its
invariant fails; `seats bench` exits non-zero when it fails.
"""

from __future__ import annotations

from typing import Any

import pytest
from click.testing import CliRunner

from seat_inventory.models import MAX_SHARDS, SeatClassInventory, SeatKey, ShardSeats
from seat_tools.bench import run
from seat_tools.bench.run import HOT, SERVICE, BenchRun, DesignResult, sell_out_problems, workloads
from seat_tools.cli.main import cli

KEY = SeatKey("e-1", "GA")


def _class(*shards: tuple[int, int, int, int]) -> SeatClassInventory:
    """A class read back with these shard items: (capacity, available, held, sold) each."""
    items = tuple(ShardSeats(n, *seats) for n, seats in enumerate(shards))
    return SeatClassInventory(
        "e-1",
        "GA",
        capacity=sum(s.capacity for s in items),
        available=sum(s.available for s in items),
        held=sum(s.held for s in items),
        sold=sum(s.sold for s in items),
        shards=items,
        shard_count=len(items),
        shard_items=len(items),
    )


def test_a_class_sold_out_on_every_shard_passes() -> None:
    view = _class((10, 0, 0, 10), (10, 0, 0, 10), (5, 0, 0, 5))
    assert sell_out_problems(KEY, view, capacity=25, demand=250, sold_out_answers=225) == []


def test_a_seat_stranded_on_a_shard_while_requests_were_refused_fails() -> None:
    view = _class((10, 0, 0, 10), (10, 1, 0, 9), (5, 0, 0, 5))
    problems = sell_out_problems(KEY, view, capacity=25, demand=250, sold_out_answers=226)
    assert len(problems) == 2
    assert "sold 24 seats of 25" in problems[0] and "under-sold" in problems[0]
    assert "226 request(s) answered SOLD_OUT" in problems[1] and "shard 1: 1" in problems[1]


def test_seats_left_with_fewer_requests_than_seats_and_none_refused_pass() -> None:
    view = _class((10, 4, 0, 6), (10, 5, 0, 5))
    assert sell_out_problems(KEY, view, capacity=20, demand=11, sold_out_answers=0) == []
    # ...but one SOLD_OUT answer while seats were left is a stranded seat
    assert sell_out_problems(KEY, view, capacity=20, demand=12, sold_out_answers=1)


def test_an_oversold_class_or_an_item_off_its_invariant_fails() -> None:
    oversold = _class((10, 0, 0, 11))
    assert any(
        "oversold" in p for p in sell_out_problems(KEY, oversold, capacity=10, demand=20, sold_out_answers=9)
    )
    broken = _class((10, 0, 0, 10), (10, 1, 0, 10))
    problems = sell_out_problems(KEY, broken, capacity=20, demand=40, sold_out_answers=19)
    assert any("shard 1" in p for p in problems)
    assert sell_out_problems(KEY, None, capacity=20, demand=40, sold_out_answers=0) == [
        f"{KEY}: inventory item missing"
    ]


def test_the_hot_workload_gets_one_service_only_variant_per_k_after_it() -> None:
    specs = workloads(0.1, (1, 4, MAX_SHARDS))
    assert [s.name for s in specs] == [HOT, "hot K=4", f"hot K={MAX_SHARDS}", "many", "tail"]
    hot, four = specs[0], specs[1]
    assert (four.capacity, four.requests, four.events, four.shards) == (hot.capacity, hot.requests, 1, 4)
    assert four.designs == (SERVICE,) and four.variant_of == HOT and four.workers is None
    assert four.id_part == "hot-K-4"
    # with workers of their own, K = 1 runs again as a variant
    assert [s.name for s in workloads(0.1, (1, 4), sharded_workers=8)][:3] == [HOT, "hot K=1", "hot K=4"]
    assert [s.name for s in workloads(0.1)] == [HOT, "many", "tail"]
    # round-robin: each class's share of the requests, with the warm-up's
    tail = specs[-1]
    assert tail.demand(0) == tail.requests + tail.warmup
    many = specs[3]
    assert sum(many.demand(n) for n in range(many.events)) == many.requests


def _result(problems: list[str]) -> DesignResult:
    return DesignResult(
        workload="hot K=4",
        design=SERVICE,
        requests=10,
        confirmed=4,
        sold_seats=4,
        capacity=5,
        published=10,
        elapsed_s=1.0,
        runner={"messages": 10, "deleted": 10, "timeouts": 0, "invocations": 1, "invocation_s": 0.5},
        counts={},
        producer_counts={},
        inventory_item_bytes=200,
        memory_mb=512,
        shards=4,
        variant_of=HOT,
        workers=2,
        final_classes=[_class((2, 0, 0, 2), (1, 1, 0, 0), (1, 0, 0, 1), (1, 0, 0, 1))],
        sell_out_problems=problems,
    )


@pytest.mark.parametrize("stranded", [False, True])
def test_seats_bench_exits_non_zero_when_a_class_did_not_sell_its_capacity(
    monkeypatch, stranded: bool
) -> None:
    problems = [
        "e-1 GA: 6 request(s) answered SOLD_OUT while seats were left (stranded; available shard 1: 1)"
    ]
    seen: dict[str, Any] = {}

    def fake_run_bench(**kwargs: Any) -> BenchRun:
        seen.update(kwargs)
        return BenchRun([_result(problems if stranded else [])], "the engine")

    monkeypatch.setattr(run, "run_bench", fake_run_bench)
    args = ["bench", "--report", "-", "--chart", "-", "--cold-start-rounds", "0", "--shards", "4,1,4"]
    result = CliRunner().invoke(cli, args)
    assert seen["shards"] == (1, 4)
    # the sharded table's row: K, seats per shard, workers, shards busy at most, requests, confirmed
    assert "| 4 | 1-2 | 2 | 2 | 10 | 4 |" in result.output
    if stranded:
        assert result.exit_code == 1
        assert "did not sell exactly its capacity" in result.output and "stranded" in result.output
    else:
        assert result.exit_code == 0, result.output


@pytest.mark.parametrize("value", ["0", "x", "4,", f"{MAX_SHARDS + 1}"])
def test_bench_refuses_a_shard_count_out_of_range_in_one_line(value: str) -> None:
    result = CliRunner().invoke(cli, ["bench", "--shards", value])
    assert result.exit_code == 2
    assert "--shards" in result.output
