"""The contention model's semantics, on a virtual clock (no I/O, no sleeping)."""

from __future__ import annotations

import bisect
import hashlib
import math
import random
import statistics

import pytest

from seat_tools.contention.model import (
    CONDITIONAL_CHECK_FAILED,
    KEY_SPACE,
    PER_KEY,
    THROTTLED_ACCOUNT_LIMIT,
    THROTTLED_KEY_RANGE,
    THROTTLED_MAX_ON_DEMAND,
    THROTTLING_ERROR,
    TRANSACTION_CONFLICT,
    ContentionModel,
    ContentionSettings,
    ItemRead,
    ItemWrite,
    Verdict,
    key_hash,
    latency_quantiles_ms,
    latency_table_ms,
    mean_latency_ms,
    partitions_for,
    read_units,
    sample_latency_s,
    write_units,
)


class VirtualClock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def hot(units: float = 2) -> ItemWrite:
    return ItemWrite("EVENT#e", "EVENT#e|CLASS#GA", units)


def record(n: int, units: float = 2) -> ItemWrite:
    return ItemWrite(f"RESERVATION#r-{n}", f"RESERVATION#r-{n}|RESERVATION", units)


def model(clock: VirtualClock, **settings: object) -> ContentionModel:
    return ContentionModel(ContentionSettings(**settings), clock=clock, rng=random.Random(1))  # type: ignore[arg-type]


def test_a_transaction_on_a_held_item_is_cancelled_with_the_conflict_at_its_position() -> None:
    clock = VirtualClock()
    engine = model(clock)
    first = engine.transact_write([hot(), record(1)])
    assert first.verdict is Verdict.ADMITTED
    assert first.hold_until == pytest.approx(first.latency_s)

    second = engine.transact_write([record(2), record(3), hot()])

    assert second.verdict is Verdict.CONFLICT
    assert second.reasons == (None, None, TRANSACTION_CONFLICT)
    counters = engine.counters()
    assert counters.transactions_committed == 1
    assert counters.transactions_cancelled == {TRANSACTION_CONFLICT: 1}
    assert counters.write_units_cancelled == 6


def test_the_hold_ends_at_commit_and_a_cancelled_transaction_holds_nothing() -> None:
    clock = VirtualClock()
    engine = model(clock)
    first = engine.transact_write([hot()])
    assert engine.transact_write([hot(), record(9)]).verdict is Verdict.CONFLICT
    assert first.hold_until is not None
    clock.t = first.hold_until

    # record 9 was in the cancelled transaction: it is free; the hot item is free at commit time.
    assert engine.write_item(record(9)).verdict is Verdict.ADMITTED
    assert engine.transact_write([hot()]).verdict is Verdict.ADMITTED


def test_a_single_item_write_on_a_held_item_gets_a_conflict() -> None:
    clock = VirtualClock()
    engine = model(clock)
    engine.transact_write([hot()])

    refused = engine.write_item(hot(1), operation="UpdateItem")

    assert refused.verdict is Verdict.CONFLICT
    assert refused.reasons == (TRANSACTION_CONFLICT,)
    assert engine.counters().write_conflicts == 1
    # Single-item writes hold nothing: a transaction right after one is admitted.
    assert engine.write_item(record(1), operation="PutItem").verdict is Verdict.ADMITTED
    assert engine.transact_write([record(1)]).verdict is Verdict.ADMITTED


def test_a_single_item_write_that_writes_nothing_is_counted_as_wasted() -> None:
    clock = VirtualClock()
    engine = model(clock)
    engine.transact_write([hot()])

    engine.write_item(hot(1), operation="UpdateItem")  # refused by the conflict: charged, wasted
    duplicate = engine.write_item(record(1, 1))  # admitted, then its condition fails on the engine
    engine.finish(duplicate, cancelled_by=CONDITIONAL_CHECK_FAILED)
    engine.write_item(record(2, 1))  # written

    counters = engine.counters()
    assert (counters.write_units_consumed, counters.write_units_cancelled) == (2 + 1 + 1 + 1, 1 + 1)
    assert counters.transactions_cancelled == {}


def test_reads_are_never_blocked_by_holds() -> None:
    clock = VirtualClock()
    engine = model(clock)
    engine.transact_write([hot()])
    read = engine.read_items([ItemRead("EVENT#e", "EVENT#e|CLASS#GA", 1)])
    assert read.verdict is Verdict.ADMITTED
    assert engine.counters().read_units_consumed == 1


def shard(n: int, units: float = 2) -> ItemRead:
    return ItemRead(f"EVENT#e#SHARD#{n}", f"EVENT#e#SHARD#{n}|CLASS#GA", units)


def shard_write(n: int) -> ItemWrite:
    return ItemWrite(f"EVENT#e#SHARD#{n}", f"EVENT#e#SHARD#{n}|CLASS#GA", 2)


def test_a_transactional_read_of_a_held_item_is_cancelled_at_its_position_until_the_hold_ends() -> None:
    clock = VirtualClock()
    engine = model(clock)
    writer = engine.transact_write([shard_write(2), record(1)])
    assert writer.hold_until is not None

    refused = engine.transact_read([shard(0), shard(1), shard(2), shard(3)])

    assert refused.verdict is Verdict.CONFLICT
    assert refused.reasons == (None, None, TRANSACTION_CONFLICT, None)
    assert latency_quantiles_ms(refused.operation, 4) == latency_quantiles_ms("TransactWriteItems", 4)
    # The plain reads of the same item at the same moment are never refused.
    assert engine.read_items([shard(2, 1)], operation="GetItem").verdict is Verdict.ADMITTED
    assert engine.read_items([shard(2, 1), shard(3, 1)], operation="BatchGetItem").admitted
    # A refused read holds nothing: the writer's items still take writes once it commits.
    clock.t = writer.hold_until
    admitted = engine.transact_read([shard(0), shard(1), shard(2), shard(3)])
    assert admitted.verdict is Verdict.ADMITTED
    assert engine.finish_read(admitted, now=clock.t + admitted.latency_s) == admitted
    counters = engine.counters()
    assert counters.read_transactions_cancelled == {TRANSACTION_CONFLICT: 1}
    assert counters.read_transactions_refused == 1
    assert counters.read_transactions_committed == 1
    assert counters.as_dict()["read_transactions_cancelled"] == {TRANSACTION_CONFLICT: 1}
    assert counters.transactions_cancelled == {}  # write transactions are counted apart
    assert counters.read_units_consumed == 2 * 8 + 1 + 2  # charged when cancelled too (assumed)


def test_a_write_that_starts_while_a_transactional_read_is_in_flight_cancels_the_read() -> None:
    clock = VirtualClock()
    engine = model(clock)
    read = engine.transact_read([shard(0), shard(1)])
    assert read.admitted
    clock.t = read.latency_s / 2
    # The write is not refused by the read (a read holds nothing) ...
    assert engine.transact_write([shard_write(1)]).admitted

    # ... and the read, answering after it started, is cancelled at that item's position.
    final = engine.finish_read(read, now=read.latency_s)

    assert final.verdict is Verdict.CONFLICT
    assert final.reasons == (None, TRANSACTION_CONFLICT)
    assert engine.finish_read(read) == read  # a second call changes nothing
    counters = engine.counters()
    assert counters.read_transactions_committed == 0
    assert counters.read_transactions_cancelled == {TRANSACTION_CONFLICT: 1}
    assert counters.transactions_committed == 1


def test_a_single_item_write_in_flight_cancels_a_transactional_read_but_not_a_get() -> None:
    clock = VirtualClock()
    engine = model(clock)
    write = engine.write_item(shard_write(0), operation="UpdateItem")
    assert write.admitted and write.latency_s > 0

    assert engine.transact_read([shard(0), shard(1)]).reasons == (TRANSACTION_CONFLICT, None)
    assert engine.read_items([shard(0, 1)], operation="GetItem").admitted
    clock.t = write.latency_s
    assert engine.transact_read([shard(0), shard(1)]).admitted


def test_a_throttled_transactional_read_is_cancelled_with_the_reason_at_its_position() -> None:
    clock = VirtualClock()
    engine = model(clock, read_units_per_s=3, burst_s=1)
    assert engine.transact_read([shard(0)]).admitted  # 2 of the partition's 3 units

    throttled = engine.transact_read([shard(1), shard(0)])

    assert throttled.verdict is Verdict.THROTTLED
    assert throttled.reasons == (None, THROTTLING_ERROR)
    counters = engine.counters()
    assert counters.read_transactions_cancelled == {THROTTLING_ERROR: 1}
    assert counters.throttled_requests == 1


def test_an_open_ended_hold_lasts_until_finish() -> None:
    clock = VirtualClock()
    engine = model(clock)
    first = engine.transact_write([hot()], until_finished=True)
    clock.t = 10.0  # far past its modelled latency: the engine has not answered yet
    assert engine.transact_write([hot()]).verdict is Verdict.CONFLICT
    assert engine.counters().in_flight_transactions == 1

    engine.finish(first)
    engine.finish(first)  # a second call changes nothing

    assert engine.transact_write([hot()]).verdict is Verdict.ADMITTED
    assert engine.counters().transactions_committed == 2


def test_finish_recounts_a_transaction_the_engine_cancelled_and_frees_its_items() -> None:
    clock = VirtualClock()
    engine = model(clock)
    sold_out = engine.transact_write([hot(), record(1)])

    engine.finish(sold_out, cancelled_by=CONDITIONAL_CHECK_FAILED)

    counters = engine.counters()
    assert counters.transactions_committed == 0
    assert counters.transactions_cancelled == {CONDITIONAL_CHECK_FAILED: 1}
    assert counters.write_units_cancelled == 4
    assert engine.transact_write([hot()]).verdict is Verdict.ADMITTED


def test_a_partition_key_takes_its_write_units_per_second_and_then_throttles() -> None:
    clock = VirtualClock()
    # no holds: only throughput limits the writes; every key on a partition of its own
    engine = model(clock, latency=False, partitions=PER_KEY)
    admitted = sum(engine.write_item(hot(1)).admitted for _ in range(1500))
    assert admitted == 1000  # burst 1 s of 1,000 units, all at t=0

    throttled = engine.write_item(hot(1))
    assert throttled.verdict is Verdict.THROTTLED
    assert throttled.reasons == (THROTTLING_ERROR,)
    assert throttled.throttled_by == THROTTLED_KEY_RANGE
    assert engine.counters().throttled_requests == 501
    assert engine.counters().throttled_by == {THROTTLED_KEY_RANGE: 501}
    assert engine.counters().write_units_consumed == 1000  # throttled requests consume nothing

    # Another partition key has its own budget; the hot one refills at 1,000 units per second.
    assert engine.write_item(record(1)).admitted
    clock.t = 0.25
    assert sum(engine.write_item(hot(1)).admitted for _ in range(400)) == 250


def test_a_throttled_transaction_is_cancelled_with_the_reason_at_the_hot_items_position() -> None:
    clock = VirtualClock()
    engine = model(clock, latency=False, write_units_per_s=10, partitions=PER_KEY)
    assert engine.transact_write([record(1), hot(10)]).admitted

    throttled = engine.transact_write([record(2), hot(2), record(3)])

    assert throttled.verdict is Verdict.THROTTLED
    assert throttled.reasons == (None, THROTTLING_ERROR, None)
    # all or nothing: record 2's partition was not charged either
    clock.t = 0.0
    assert engine.counters().write_units_consumed == 12
    assert engine.counters().transactions_cancelled == {THROTTLING_ERROR: 1}


def test_the_burst_allowance_keeps_at_most_burst_seconds_of_unused_units() -> None:
    clock = VirtualClock()
    engine = model(clock, latency=False, write_units_per_s=100, burst_s=3, partitions=PER_KEY)
    engine.write_item(hot(1))
    clock.t = 1000.0  # long idle: the bucket holds 3 s of units, no more
    assert sum(engine.write_item(hot(1)).admitted for _ in range(400)) == 300


# --- the table: warm throughput, partitions, the quota, the maximum, growth ---------------------


def partition_of(key: str, partitions: int) -> int:
    """The partition `key` hashes onto, in a table of equal key ranges (as the model lays them out)."""
    return bisect.bisect_right([i * KEY_SPACE // partitions for i in range(partitions)], key_hash(key)) - 1


def keys_on(partition: int, partitions: int, count: int, prefix: str = "RESERVATION#r-") -> list[str]:
    """`count` partition keys that hash onto `partition`."""
    found = [f"{prefix}{n}" for n in range(10_000) if partition_of(f"{prefix}{n}", partitions) == partition]
    return found[:count]


def test_a_tables_partitions_come_from_its_warm_throughput() -> None:
    assert partitions_for(4000, 12000) == 4  # a new on-demand table
    assert partitions_for(4001, 12000) == 5
    assert partitions_for(4000, 30000) == 10  # reads decide
    assert partitions_for(100_000, 30000) == 100
    assert partitions_for(1, 1) == 1
    assert ContentionSettings().initial_partitions() == 4
    assert ContentionSettings(warm_write_units_per_s=40_000).initial_partitions() == 40
    assert ContentionSettings(partitions=7).initial_partitions() == 7
    assert ContentionSettings(partitions=PER_KEY).per_key
    described = ContentionSettings().describe()
    assert "4 partitions (from warm throughput 4,000 WCU/s and 12,000 RCU/s)" in described
    assert "table write quota 40,000/s" in described and "30 min" in described
    with pytest.raises(ValueError, match="partitions must be"):
        ContentionSettings(partitions=-1)
    with pytest.raises(ValueError, match="max_write_request_units must be positive or None"):
        ContentionSettings(max_write_request_units=0)


def test_partition_keys_hash_stably_and_evenly_onto_the_partitions() -> None:
    assert key_hash("EVENT#e") == int.from_bytes(
        hashlib.blake2b(b"EVENT#e", digest_size=8).digest(), "big"
    )  # not Python's hash(), which changes from run to run
    counts = [0] * 4
    for n in range(40_000):
        counts[partition_of(f"RESERVATION#r-{n}", 4)] += 1
    assert all(9_500 < count < 10_500 for count in counts), counts


def test_keys_on_one_partition_share_its_units_and_other_partitions_have_their_own() -> None:
    clock = VirtualClock()
    engine = model(clock, latency=False)  # a new table: 4 partitions of 1,000 WCU/s
    first, second = keys_on(0, 4, 2)
    [elsewhere] = keys_on(1, 4, 1)
    assert engine.write_item(ItemWrite(first, first, 600)).admitted
    crowded = engine.write_item(ItemWrite(second, second, 600))  # a different key, the same partition
    assert crowded.verdict is Verdict.THROTTLED and crowded.throttled_by == THROTTLED_KEY_RANGE
    assert engine.write_item(ItemWrite(second, second, 400)).admitted  # what is left of the 1,000
    assert engine.write_item(ItemWrite(elsewhere, elsewhere, 1000)).admitted
    assert engine.counters().partitions == {"": 4}
    # Each table has its own partitions.
    assert engine.write_item(ItemWrite(first, first, 1000, table="other")).admitted


def test_a_new_table_takes_its_warm_write_units_per_second_over_all_its_partitions() -> None:
    clock = VirtualClock()
    engine = model(clock, latency=False)
    admitted = 0.0
    for n in range(6000):  # 2-unit records over every partition: more than the table has
        decision = engine.write_item(record(n, 2))
        admitted += decision.units
    assert 3_900 <= admitted <= 4_000  # 4 x 1,000, less what the unevenly filled partitions leave
    clock.t = 1.0
    again = sum(engine.write_item(record(10_000 + n, 2)).units for n in range(6000))
    assert 3_900 <= again <= 4_000


def test_the_table_quota_throttles_across_partitions_with_its_own_reason() -> None:
    clock = VirtualClock()
    engine = model(clock, latency=False, partitions=PER_KEY)  # 40,000 by default
    assert all(engine.write_item(record(n, 1000)).admitted for n in range(40))
    over = engine.write_item(record(40, 1000))
    assert over.verdict is Verdict.THROTTLED and over.throttled_by == THROTTLED_ACCOUNT_LIMIT
    transaction = engine.transact_write([record(41, 2), record(42, 2)])
    assert transaction.reasons == (THROTTLING_ERROR, None)  # at the table's first item
    # Reads have their own 40,000.
    assert engine.read_items([ItemRead("EVENT#e", "EVENT#e|CLASS#GA", 1)]).admitted
    assert engine.counters().throttled_by == {THROTTLED_ACCOUNT_LIMIT: 2}
    # No quota at all: only the partitions limit.
    unlimited = model(clock, latency=False, partitions=PER_KEY, table_quota_units_per_s=None)
    assert all(unlimited.write_item(record(n, 1000)).admitted for n in range(100))


def test_the_on_demand_maximum_throttles_below_the_quota_with_its_reason() -> None:
    clock = VirtualClock()
    engine = model(clock, latency=False, partitions=PER_KEY, max_write_request_units=5)
    assert [engine.write_item(record(n, 1)).admitted for n in range(7)] == [True] * 5 + [False] * 2
    assert engine.counters().throttled_by == {THROTTLED_MAX_ON_DEMAND: 2}
    reads = model(clock, latency=False, max_read_request_units=3)
    outcomes = [reads.read_items([ItemRead(f"K#{n}", f"K#{n}", 1)]) for n in range(4)]
    assert [o.admitted for o in outcomes] == [True, True, True, False]
    assert outcomes[-1].throttled_by == THROTTLED_MAX_ON_DEMAND
    # A maximum above the quota: the quota throttles first.
    assert ContentionSettings(max_write_request_units=80_000).table_limit(write=True) == (
        40_000,
        THROTTLED_ACCOUNT_LIMIT,
    )


def test_a_partition_hot_for_the_growth_window_splits_in_two_and_doubles_its_units() -> None:
    clock = VirtualClock()
    # One partition of 1,000 WCU/s; growth after 10 s of traffic at half its units or more.
    engine = model(
        clock, latency=False, warm_write_units_per_s=1000, warm_read_units_per_s=3000, growth_window_s=10
    )
    [left] = keys_on(0, 2, 1, "K#")  # the halves it will split into
    [right] = keys_on(1, 2, 1, "K#")
    for second in range(10):
        clock.t = float(second)
        assert engine.write_item(ItemWrite(left, left, 500)).admitted  # half its units: hot
        assert engine.write_item(ItemWrite(right, right, 500)).admitted
        assert not engine.write_item(ItemWrite(right, right, 1)).admitted  # the partition is full
    assert engine.counters().partition_splits == 0
    clock.t = 10.0
    assert engine.write_item(ItemWrite(left, left, 500)).admitted  # 10 s hot: it splits
    assert engine.counters().partitions == {"": 2} and engine.counters().partition_splits == 1
    clock.t = 11.0  # each half has 1,000 of its own: twice the peak
    assert engine.write_item(ItemWrite(left, left, 1000)).admitted
    assert engine.write_item(ItemWrite(right, right, 1000)).admitted


def test_a_cold_second_restarts_the_growth_window_and_per_key_or_no_growth_never_splits() -> None:
    clock = VirtualClock()
    settings = {"latency": False, "warm_write_units_per_s": 1000, "warm_read_units_per_s": 3000}
    engine = model(clock, growth_window_s=10, **settings)
    for second in [*range(6), *range(7, 17)]:  # second 6 is idle: the streak starts again at 7
        clock.t = float(second)
        engine.write_item(record(second, 600))
    assert engine.counters().partition_splits == 0
    clock.t = 17.0
    engine.write_item(record(17, 600))
    assert engine.counters().partition_splits == 1
    for no_growth in (model(clock, growth_window_s=None, **settings), model(clock, partitions=PER_KEY)):
        for second in range(40):
            clock.t = 100.0 + second
            no_growth.write_item(hot(600))
        assert no_growth.counters().partition_splits == 0


def test_units_follow_aws_rules() -> None:
    assert write_units(100, transactional=False) == 1
    assert write_units(1025, transactional=False) == 2
    assert write_units(100, transactional=True) == 2
    assert write_units(3000, transactional=True) == 6
    assert read_units(4096) == 1
    assert read_units(4097) == 2
    assert read_units(100, consistent=False) == 0.5
    assert read_units(100, transactional=True) == 2


def test_latencies_match_the_published_percentiles() -> None:
    assert latency_quantiles_ms("PutItem") == (7.55, 11.3)
    assert latency_quantiles_ms("TransactWriteItems", 5) == pytest.approx((25.3, 30.7))
    assert latency_quantiles_ms("TransactWriteItems", 25) == pytest.approx((32.1, 40.5))
    p50, p90 = latency_quantiles_ms("TransactWriteItems", 100)
    assert p50 == pytest.approx(57.6) and p90 == pytest.approx(77.25)

    rng = random.Random(3)
    draws = sorted(sample_latency_s("TransactWriteItems", 25, rng) for _ in range(40000))
    assert statistics.median(draws) == pytest.approx(0.0321, rel=0.03)
    assert draws[int(0.9 * len(draws))] == pytest.approx(0.0405, rel=0.03)
    # ... and the published tail, which a log-normal through p50 and p90 would put near 50 ms
    assert draws[int(0.95 * len(draws))] == pytest.approx(0.0472, rel=0.05)
    assert draws[int(0.99 * len(draws))] == pytest.approx(0.0975, rel=0.05)
    assert draws[0] >= 0.0235 and draws[-1] <= 0.258
    assert latency_table_ms("PutItem")[-2:] == (16.2, 29.0)
    assert latency_table_ms("TransactWriteItems", 100) == pytest.approx(
        (38.875, 57.6, 77.25, 87.7, 116.25, 408.0)
    )
    # its mean, which a serialised item's commits per second follow, is above the median
    assert 57.6 < mean_latency_ms("TransactWriteItems", 100) < 77.25


def test_the_time_scale_stretches_the_wall_clock() -> None:
    settings = ContentionSettings(time_scale=20)
    assert settings.wall_seconds(0.05) == pytest.approx(1.0)
    assert "time scale x20" in settings.describe()
    with pytest.raises(ValueError, match="time_scale must be positive"):
        ContentionSettings(time_scale=0)


def test_hot_item_contention_from_concurrent_containers() -> None:
    """Ten containers each sending a 100-action transaction on the hot item as soon as their last
    one answered: only one transaction at a time holds the item, so most are cancelled."""
    clock = VirtualClock()
    engine = model(clock, partitions=PER_KEY, table_quota_units_per_s=None)  # conflicts only, no throttling
    next_send = [i * 0.001 for i in range(10)]
    answers = 0
    while answers < 2000:
        container = min(range(10), key=next_send.__getitem__)
        clock.t = next_send[container]
        decision = engine.transact_write([hot(), *(record(answers * 100 + i) for i in range(99))])
        next_send[container] = clock.t + decision.latency_s
        answers += 1
    counters = engine.counters(now=math.inf)
    cancelled = counters.transactions_cancelled.get(TRANSACTION_CONFLICT, 0)
    assert counters.transactions_committed + cancelled == 2000
    assert cancelled > counters.transactions_committed * 3  # about 1 in 10 commits
    # Commits are serial on the hot item: they fit in the elapsed time one after the other.
    assert counters.transactions_committed * 0.04 <= clock.t * 1.05
