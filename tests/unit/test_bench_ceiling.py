"""The per-event ceiling the benchmark derives from its counts and AWS's figures."""

from __future__ import annotations

import math

import pytest

from seat_tools.bench.ceiling import Ceiling, ceiling_per_event, mean_transaction_latency_s
from seat_tools.contention.model import ContentionSettings, latency_quantiles_ms


def test_the_mean_latency_lies_above_the_median_and_grows_with_the_transaction() -> None:
    for actions in (5, 25, 100):
        p50, p90 = latency_quantiles_ms("TransactWriteItems", actions)
        assert p50 / 1000 < mean_transaction_latency_s(actions) < p90 / 1000
    assert mean_transaction_latency_s(25) < mean_transaction_latency_s(100)


def test_without_transactions_only_the_partition_write_units_bound_it() -> None:
    ceiling = ceiling_per_event(write_units_per_reservation=2.0, settings=ContentionSettings(), confirmed=10)
    assert ceiling.serialization_bound is None
    assert ceiling.value == ceiling.write_units_bound == 500
    assert ceiling.limited_by == "the partition's write units"


def test_a_transaction_at_a_time_bounds_a_design_that_writes_few_units_per_reservation() -> None:
    # 2,000 reservations in 21 committed transactions of 96 actions on average
    ceiling = ceiling_per_event(
        write_units_per_reservation=0.04,
        settings=ContentionSettings(),
        confirmed=2000,
        committed_transactions=21,
        transaction_actions=2016,
    )
    assert ceiling.write_units_bound == pytest.approx(25_000)
    assert ceiling.actions_per_transaction == 96
    assert ceiling.reservations_per_transaction == pytest.approx(2000 / 21)
    assert ceiling.serialization_bound == pytest.approx((2000 / 21) / mean_transaction_latency_s(96))
    assert 1_000 < ceiling.value == ceiling.serialization_bound < 2_000
    assert ceiling.limited_by == "one transaction at a time on the item"


def test_the_write_unit_bound_follows_the_settings() -> None:
    settings = ContentionSettings(write_units_per_s=3000)
    ceiling = ceiling_per_event(write_units_per_reservation=1.0, settings=settings)
    assert ceiling.value == 3000
    assert math.isinf(ceiling_per_event(write_units_per_reservation=0.0, settings=settings).value)


def _hot(shards: int = 1, busiest_shard_share: float = 1.0, transaction_items: int | None = None) -> Ceiling:
    """2,000 reservations in 20 committed transactions of 100 actions."""
    return ceiling_per_event(
        write_units_per_reservation=0.04,
        settings=ContentionSettings(),
        confirmed=2000,
        committed_transactions=20,
        transaction_actions=2000,
        shards=shards,
        busiest_shard_share=busiest_shard_share,
        transaction_items=transaction_items,
    )


def test_k_shards_commit_k_transactions_at_a_time_less_those_that_hold_several_items() -> None:
    one, four = _hot(), _hot(4, 0.25, 20)
    assert one.serialization_bound is not None and four.serialization_bound is not None
    assert four.serialization_bound == pytest.approx(4 * one.serialization_bound)
    assert four.write_units_bound == pytest.approx(4 * one.write_units_bound)
    assert four.limited_by == "one transaction at a time on the item (each)"
    # half the transactions moved seats from a second shard: each of those held two items
    moving = _hot(4, 0.25, 30)
    assert moving.shard_items_per_transaction == 1.5
    assert moving.serialization_bound == pytest.approx(four.serialization_bound / 1.5)
    # one busy shard takes all the writes: the partition bound is that of one item
    assert _hot(4, 1.0, 20).write_units_bound == pytest.approx(one.write_units_bound)
    with pytest.raises(ValueError):
        _hot(0)
