"""`seats simulate`: each limit AWS documents binds when it should, and the run says which one held it.

(The event pollers' receive calls: tests/unit/test_simulation.py,
`test_seven_event_pollers_deliver_no_more_than_their_receive_calls_allow`.)
"""

from __future__ import annotations

import pytest

from seat_inventory.models import Outcome, ReservationOutcome
from seat_inventory.settings import Settings
from seat_tools.contention.model import ContentionSettings
from seat_tools.simulation.api import ApiSettings
from seat_tools.simulation.binding import Activities, BindingMonitor, binding_limit
from seat_tools.simulation.event_source import FunctionTiming, SnsQuota
from seat_tools.simulation.measured_cpu import RESERVE_CPU
from seat_tools.simulation.run import SimulationConfig, run_simulation

SETTINGS = Settings(table_name="t", outcomes_topic_arn="arn:aws:sns:us-east-1:123456789012:t")
# A table that never throttles these sales, so that what is tested is what binds.
WARM = ContentionSettings(warm_write_units_per_s=40_000)


def simulate(**changes: object) -> dict:
    return run_simulation(SimulationConfig(**changes), SETTINGS).figures  # type: ignore[arg-type]


def test_sns_throttling_delays_answers_but_loses_none_and_dead_letters_nothing() -> None:
    # Given a sale whose answers SNS takes at 500 messages a second (the region's publish quota),
    # and the same sale with no quota
    quota = simulate(
        containers=10,
        shards=10,
        requests=5_000,
        containers_at_once=True,
        contention=WARM,
        sns_publish_per_s=500,
    )
    free = simulate(
        containers=10,
        shards=10,
        requests=5_000,
        containers_at_once=True,
        contention=WARM,
        sns_publish_per_s=None,
    )

    # Then calls are refused for the quota, and the service waits them out in place: every
    # request is answered once, nothing is handed back or dead-lettered ...
    assert quota["sns_throttled_calls"] > 0 and free["sns_throttled_calls"] == 0
    assert quota["requests_answered"] == 5_000 and quota["outcomes"] == {"CONFIRMED": 5_000}
    assert quota["messages_handed_back"] == 0 and quota["messages_dead_lettered"] == 0
    assert quota["sns_outcomes_handed_back"] == 0
    # ... the answers come later, at the quota's pace, and the run says SNS held it
    assert quota["answer_latency_p99_s"] > 2 * free["answer_latency_p99_s"]
    assert quota["answered_per_s"] <= 500 * 1.1
    assert quota["binding_limit"] == "sns" and free["bound_by"].get("sns", 0) == 0


def test_the_sns_quota_counts_every_message_of_a_publish_batch() -> None:
    quota = SnsQuota(30.0)  # a second's worth in the bucket

    assert quota.take(10, now=0.0) and quota.take(10, now=0.0) and quota.take(10, now=0.0)
    assert not quota.take(10, now=0.0)  # the fourth call of 10 is refused
    assert quota.take(10, now=0.34)  # a third of a second later there are 10 again
    assert SnsQuota(None).take(1_000_000, now=0.0)


def test_api_429s_are_answered_to_the_client_and_counted() -> None:
    # Given 12,000 requests offered at 2,000 a second to a stage throttled at 1,000 (burst 2,000),
    # and a client that does not retry
    figures = simulate(
        containers=20,
        shards=20,
        requests=12_000,
        offered_rate=2_000,
        containers_at_once=True,
        contention=WARM,
    )

    api = figures["api"]
    # Then API Gateway took the burst and then 1,000 a second, answering the rest 429 ...
    assert api["offered"] == 12_000 and api["attempts"] == 12_000
    assert api["accepted"] + api["responses_429"] == 12_000
    assert 2_000 + 1_000 * 5 <= api["accepted"] <= 2_000 + 1_000 * 6 + 1
    assert api["refused"] == api["responses_429"] > 0
    # ... every accepted request is answered, and each is one SendMessage, priced with the REST
    # API's $3.50 a million (the 429s are billed too)
    assert figures["requests_answered"] == api["accepted"]
    cost = figures["cost_per_million_requests"]
    assert cost["api_gateway"] == pytest.approx(3.50 * api["attempts"] / 12_000)
    # ... and what the same run would cost through an HTTP API ($1.00 a million), the rest alike
    other = figures["cost_per_million_requests_other_api"]
    assert other["kind"] == "http" and other["api_gateway"] == pytest.approx(1.00 * api["attempts"] / 12_000)
    assert other["total"] == pytest.approx(cost["total"] - cost["api_gateway"] + other["api_gateway"])
    assert figures["rate_kind"] == "offered through the API at 2,000 requests/s"
    # ... and the run says the API held it
    assert figures["binding_limit"] == "api"


def test_a_client_that_retries_429s_gets_every_request_through_later() -> None:
    figures = simulate(
        containers=20,
        shards=20,
        requests=6_000,
        offered_rate=2_000,
        containers_at_once=True,
        contention=WARM,
        api=ApiSettings(kind="http", client_retries=8),
    )

    api = figures["api"]
    assert api["responses_429"] > 0 and api["refused"] == 0
    assert api["accepted"] == 6_000 and figures["requests_answered"] == 6_000
    assert api["attempts"] == 6_000 + api["responses_429"]
    assert figures["cost_per_million_requests"]["api_gateway"] == pytest.approx(
        1.00 * api["attempts"] / 6_000
    )
    assert figures["cost_per_million_requests_other_api"]["kind"] == "rest"


def test_cpu_grows_with_the_batch_and_shrinks_with_memory() -> None:
    def timing(memory_mb: int) -> FunctionTiming:
        return FunctionTiming(
            timeout_s=30, memory_mb=memory_mb, cold_start_s=0.48, cpu=RESERVE_CPU["reserve"]
        )

    # The measured reserve batch (measured_cpu.py): its fixed and per-message CPU of one core;
    # 512 MB is 0.29 vCPU
    reserve, sold_out_cpu = RESERVE_CPU["reserve"], RESERVE_CPU["sold-out"]
    batch_ms = reserve.invocation_ms + reserve.per_message_ms * 99
    assert timing(512).cpu_s(99) > timing(512).cpu_s(10) > timing(512).cpu_s(1)
    assert timing(512).cpu_s(99) == pytest.approx(batch_ms / 1000 / (512 / 1769))
    assert timing(1769).cpu_s(99) == pytest.approx(batch_ms / 1000)
    assert timing(3538).cpu_s(99) == timing(1769).cpu_s(99)  # one thread: nothing past one vCPU
    # A batch of rejections after the sell-out costs more (the measured sold-out batch)
    sold_out = FunctionTiming(
        timeout_s=30,
        memory_mb=1769,
        cold_start_s=0.48,
        cpu=RESERVE_CPU["reserve"],
        sold_out_cpu=RESERVE_CPU["sold-out"],
    )
    rejected = [
        ReservationOutcome(f"r-{n}", Outcome.SOLD_OUT, "0 left", "e", "GA", 1, "c") for n in range(99)
    ]
    extra_ms = (sold_out_cpu.invocation_ms - reserve.invocation_ms) + (
        sold_out_cpu.per_message_ms - reserve.per_message_ms
    ) * 99
    assert extra_ms > 0
    assert sold_out.answers_cpu_s(rejected) == pytest.approx(extra_ms / 1000)

    # In a sale: at 128 MB the containers' CPU holds it; at 1,769 MB the same sale goes faster and
    # spends less of the function's time a message in CPU (by the memory's share)
    small = simulate(
        containers=10, shards=10, requests=4_000, containers_at_once=True, contention=WARM, memory_mb=128
    )
    large = simulate(
        containers=10, shards=10, requests=4_000, containers_at_once=True, contention=WARM, memory_mb=1769
    )
    assert small["binding_limit"] == "cpu" and large["bound_by"]["cpu"] < small["bound_by"]["cpu"]
    assert small["function"]["cpu_per_message_ms"] == pytest.approx(
        large["function"]["cpu_per_message_ms"] * 1769 / 128, rel=0.01
    )
    # (not 14 times: a batch also waits on its transaction and its PublishBatch calls)
    assert large["confirmed_per_s"] > 1.5 * small["confirmed_per_s"]


def test_the_reserved_concurrency_not_the_pollers_slots_is_what_a_busy_function_may_run() -> None:
    # 8 event pollers could run 80 invocations and read 800 messages a second; the function may
    # run 4: its 4 containers' CPU (128 MB) holds the sale, not the pollers' reading of the queue
    capped = simulate(
        event_pollers=8,
        containers=80,
        shards=4,
        requests=4_000,
        contention=WARM,
        memory_mb=128,
        reserved_concurrency=4,
    )
    assert capped["binding_limit"] == "cpu", capped["bound_by"]
    assert capped["bound_by"].get("intake", 0) < 0.2


def test_a_new_tables_partitions_hold_a_sale_that_needs_more() -> None:
    # 32 containers of a full vCPU on a new table (4 partitions of 1,000 write units a second)
    figures = simulate(containers=32, shards=32, requests=12_000, containers_at_once=True, memory_mb=1769)

    assert figures["throttled_by"].get("KeyRangeThroughputExceeded", 0) > 0
    assert figures["binding_limit"] == "partitions"


def test_the_binding_report_shares_each_moment_among_the_invocation_slots() -> None:
    monitor = BindingMonitor(api_refused_at=[5.0])
    activities = Activities()
    activities.move(None, "cpu")
    activities.move(None, "partitions")
    activities.move(None, "partitions")
    # 4 slots, 3 busy, messages waiting: the free one is the intake's
    monitor.sample(
        1.0,
        visible=10,
        gathering=False,
        slots=4,
        activities=activities,
        arrivals_pending=False,
        returning=False,
    )
    # nothing visible, requests still to come, a 429 just answered: the free one is the API's
    monitor.sample(
        5.0,
        visible=0,
        gathering=False,
        slots=4,
        activities=activities,
        arrivals_pending=True,
        returning=False,
    )
    # the sale's tail: only the busy ones count
    monitor.sample(
        6.0,
        visible=0,
        gathering=False,
        slots=4,
        activities=activities,
        arrivals_pending=False,
        returning=False,
    )

    shares = monitor.shares(0.0, 10.0)
    assert shares == pytest.approx(
        {
            "partitions": (0.5 + 0.5 + 2 / 3) / 3,
            "cpu": (0.25 + 0.25 + 1 / 3) / 3,
            "intake": 0.25 / 3,
            "api": 0.25 / 3,
        }
    )
    assert binding_limit(shares) == "partitions"


def test_a_cold_index_throttles_the_tables_writes_and_a_pre_warmed_one_does_not() -> None:
    # Given a table pre-warmed far past the sale, and its TicketsToIssue index as new (4,000 write
    # units a second over 4 partitions: every sold record writes one entry) or pre-warmed
    def sale(index_warm: float) -> dict:
        return simulate(
            containers=64,
            shards=64,
            requests=16_000,
            containers_at_once=True,
            memory_mb=1769,
            contention=ContentionSettings(
                warm_write_units_per_s=100_000,
                table_quota_units_per_s=100_000,
                index_warm_write_units_per_s=index_warm,
            ),
        )

    cold, warm = sale(4_000), sale(40_000)

    # Then the cold index refuses the table's transactions (ThrottlingError, the index's reason),
    # which the service waits out in place: every seat sold once, nothing handed back
    assert cold["throttled_by"].get("IndexWriteKeyRangeThroughputExceeded", 0) > 0
    assert cold["transactions_cancelled"].get("ThrottlingError", 0) > 0
    assert cold["invariants"] == "ok" and cold["messages_handed_back"] == 0
    assert cold["binding_limit"] == "index" and cold["index_partitions"] == 4
    # ... and the pre-warmed one does not: the sale goes faster (seed 1: 4,756 against 2,657 a second)
    assert warm["throttled_by"] == {} and warm["index_partitions"] == 40
    assert "index" not in warm["bound_by"]
    assert warm["confirmed_per_s"] > cold["confirmed_per_s"]
