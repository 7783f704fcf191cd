"""`seats onsale plan` arithmetic and `onsale check`'s judgement, against figures worked out by hand.

The rules (docs/guides/size-a-sale.md): containers = ceil(rate / 800); shards = containers, at most 64; write
units per confirmed reservation 2 + 2/99 (+ 2 with a per-customer limit); read units per refused
request (1 + 2K) / 99 for K > 1 items; the table at most 80% busy; the API's burst twice its rate.
"""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from seat_inventory.models import MAX_SHARDS
from seat_inventory.publishing.sns_publisher import PUBLISH_BATCH_LIMIT
from seat_tools.cli.main import cli
from seat_tools.event_source_scaling import event_pollers_for
from seat_tools.onsale.plan import (
    ClassShards,
    SaleInputs,
    StackSettings,
    assess_stack,
    containers_needed,
    cost_per_million_confirmed,
    cost_per_million_refused,
    plan_sale,
    read_units_per_refusal,
    scale_up_seconds,
    write_units_per_reservation,
)
from seat_tools.simulation import event_source
from tests.template_support import load_template

REPO = Path(__file__).resolve().parents[2]


def values(rate: float, **inputs: Any) -> dict[str, Any]:
    return {i.key: i.value for i in plan_sale(SaleInputs(rate, **inputs)).items}


def test_40000_per_second_needs_50_containers_50_shards_and_a_table_warmed_past_the_default_quota() -> None:
    plan = plan_sale(SaleInputs(40_000))
    got = {i.key: i.value for i in plan.items}
    # 40,000 / 800 = 50 containers, each on its own shard item
    assert got["maximum_concurrency"] == 50
    assert got["shards"] == 50
    # 40,000 x (2 + 2/99 + 2 + 17/98) / 0.8 = 209,683.6 write units -> 210,000 (the sale's
    # 2.02 and the ticket issuer's 2.17 per reservation)
    assert plan.values["write_units_per_s"] == pytest.approx(209_683.57, abs=0.01)
    assert got["warm_write_units"] == 210_000
    # after the sell-out: 40,000 x (1 + 2 x 50) / 99 / 0.8 = 51,010.1 read units -> 52,000
    assert plan.values["read_units_per_s"] == pytest.approx(51_010.10, abs=0.01)
    assert got["warm_read_units"] == 52_000
    assert got["table_quota"] == "210,000 / 52,000"
    assert "raise it first" in plan.item("table_quota").rule
    assert got["table_maximum"] == "-1 or >= 210,000 / 52,000"
    assert got["api_throttle"] == "40,000 / 80,000"
    assert got["api_account_throttle"] == 40_000  # above the default 10,000
    assert got["lambda_concurrency"] == 50
    # 5 at once, then 300 a minute: 45 more take 9 s
    assert got["scale_up_seconds"] == 9.0
    # or none in provisioned mode: 50 / 10 invocations per poller = 5 pollers, $0.00925 an hour each
    assert got["event_pollers"] == 5
    assert plan.values["event_pollers_usd_per_hour"] == pytest.approx(5 * 0.00925)
    # and the 50 containers initialised before the sale: 50 x 0.5 GB x 3,600 s at the Arm rate
    assert got["provisioned_concurrency"] == 50
    assert plan.values["provisioned_concurrency_usd_per_hour"] == pytest.approx(
        50 * 0.5 * 3600 * 0.0000033334
    )
    assert plan.problems == ()


def test_the_cost_per_million_is_the_list_prices_times_the_units_and_requests() -> None:
    # DynamoDB (2.0202 sale + 2.1735 numbering + 2.0204 TicketsToIssue index) = 6.2141 x $0.625
    # = 3.88380; SQS 0.3 x $0.40 = 0.12; SNS 0.2 x $0.50 = 0.10 (CONFIRMED and TICKETED);
    # Lambda 10,101 invocations x $0.20/M = 0.00202 and 1e6 x 0.5 GB / 800 = 625 GB-s x
    # $0.0000133334 = 0.00833: 4.11415 in all
    confirmed = cost_per_million_confirmed()
    assert confirmed.dynamodb == pytest.approx(3.88380, abs=1e-5)
    assert confirmed.sqs == pytest.approx(0.12)
    assert confirmed.sns == pytest.approx(0.10)
    assert confirmed.lambda_ == pytest.approx(0.00202 + 0.00833, abs=1e-5)
    assert confirmed.total == pytest.approx(4.11415, abs=1e-5)
    # refused on 50 items: 1 x $0.625 + 101/99 x $0.125 = 0.75253, plus the same 0.18035
    refused = cost_per_million_refused(50)
    assert refused.dynamodb == pytest.approx(0.75253, abs=1e-5)
    assert refused.total == pytest.approx(0.93288, abs=1e-5)
    assert values(40_000)["cost_per_million_confirmed"] == 4.11
    assert values(40_000)["cost_per_million_refused"] == 0.93


def test_a_per_customer_limit_adds_the_counters_two_write_units() -> None:
    assert write_units_per_reservation(customer_limit=True) == pytest.approx(4 + 2 / 99 + 2 + 17 / 98)
    # 1,000 x 6.1937 / 0.8 = 7,742.1 -> 8,000 (without a limit: 5,242.1 -> 6,000)
    assert values(1_000, customer_limit=True)["warm_write_units"] == 8_000
    assert values(1_000)["warm_write_units"] == 6_000


def test_a_small_sale_needs_the_minimums_and_a_single_item_class_reads_one_unit_per_batch() -> None:
    got = values(800)
    assert got["maximum_concurrency"] == 2  # one container, but a mapping takes at least 2
    assert got["shards"] == 1
    assert read_units_per_refusal(1) == pytest.approx(1 / 99)
    # 800 x 4.1937 / 0.8 = 4,193.7 write units -> 5,000 (the numbering's units take it past a
    # new table's 4,000)
    assert (got["warm_write_units"], got["warm_read_units"]) == (5_000, 12_000)
    assert got["table_quota"] == "40,000 / 40,000"
    assert got["api_account_throttle"] == 10_000
    assert got["scale_up_seconds"] == 0.0


def test_beyond_64_containers_one_class_cannot_keep_up() -> None:
    plan = plan_sale(SaleInputs(60_000))
    # 60,000 / 800 = 75 containers, but a class has at most 64 items
    assert plan.item("maximum_concurrency").value == 75
    assert plan.item("shards").value == MAX_SHARDS
    assert "75 containers on one seat class" in plan.problems[0]
    assert "51,200/s" in plan.problems[0]
    assert len(plan.problems) == 2 and "the ticket issuer numbers at most 64" in plan.problems[1]


def test_beyond_1000_containers_one_event_source_mapping_cannot_keep_up() -> None:
    plan = plan_sale(SaleInputs(1_000_000))
    assert plan.item("maximum_concurrency").value == 1_250
    assert any("one event source mapping runs at most 1,000" in p for p in plan.problems)


def test_seats_give_the_sales_length_and_cost_and_keep_a_full_batch_per_shard() -> None:
    # 50,000 seats, 2 per reservation: 25,000 reservations at 5,000/s last 5 s and cost
    # 25,000 x $4.11415 / 1e6 = $0.103
    plan = plan_sale(SaleInputs(5_000, seats=50_000, seats_per_request=2))
    assert plan.values["sale_seconds"] == pytest.approx(5.0)
    assert plan.values["sale_usd"] == pytest.approx(0.102854, abs=1e-6)
    assert plan.item("sale").value == "5 / 0.10"
    assert plan.item("shards").value == 7  # 5,000 / 800 = 6.25 -> 7; 50,000 // (99 x 2) = 252
    # 300 seats hold 3 full batches of 99: 3 items, fewer than the 4 containers of 3,000/s
    small = plan_sale(SaleInputs(3_000, seats=300))
    assert small.item("shards").value == 3
    assert any("fewer than the 4 containers" in p and "2,400/s" in p for p in small.problems)
    # 40,000/s over 60,000 seats: the sale (1.5 s) ends before Lambda has 50 containers (9 s)
    assert (
        "the rate is reached only with EventPollers"
        in plan_sale(SaleInputs(40_000, seats=60_000)).item("sale").rule
    )


def test_every_plan_line_has_a_rule() -> None:
    for item in plan_sale(SaleInputs(12_345, seats=100_000, customer_limit=True)).items:
        assert item.rule and item.label, item


@pytest.mark.parametrize(
    "inputs", [{"rate": 0}, {"rate": 100, "seats": 0}, {"rate": 100, "seats_per_request": 0}]
)
def test_bad_inputs_are_refused(inputs: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="must be"):
        SaleInputs(**inputs)


def test_the_plans_constants_are_the_services_and_the_templates() -> None:
    template = load_template(REPO / "template.yaml").document
    assert template["Parameters"]["BatchSize"]["Default"] == 99
    assert template["Globals"]["Function"]["MemorySize"] == 512
    assert (
        template["Parameters"]["ApiThrottlingBurstLimit"]["Default"]
        == 2 * (template["Parameters"]["ApiThrottlingRateLimit"]["Default"])
    )
    assert PUBLISH_BATCH_LIMIT == 10 and event_source.SQS_RECEIVE_LIMIT == 10
    assert [scale_up_seconds(c) for c in (1, 5, 6, 50, 1000)] == pytest.approx([0, 0, 0.2, 9, 199])
    assert containers_needed(800) == 1 and containers_needed(800.5) == 2


# ------------------------------------------------------------------ the check

READY_AT_3000 = StackSettings(
    mapping_enabled=True,
    maximum_concurrency=10,
    batch_size=99,
    reserved_concurrency=None,
    account_concurrency=1_000,
    unreserved_concurrency=1_000,
    warm_write_units=16_000,
    warm_read_units=12_000,
    max_write_units=None,
    max_read_units=None,
    quota_write_units=40_000,
    quota_read_units=40_000,
    api_rate_limit=3_000.0,
    api_burst_limit=6_000.0,
    api_account_rate_limit=10_000.0,
    api_account_burst_limit=5_000.0,
    classes=(ClassShards("GA", 4, 4), ClassShards("VIP", 4, 4)),
    api_stage="v1",
)


def short(settings: StackSettings, rate: float | None = 3_000) -> set[str]:
    return {f.key for f in assess_stack(settings, rate).findings if not f.ok}


def test_a_stack_with_what_the_plan_says_is_ready_and_supports_what_its_tightest_item_allows() -> None:
    assessment = assess_stack(READY_AT_3000, 3_000)
    assert assessment.ready
    # containers 8,000; shards 4 x 800 = 3,200; warm write 16,000 x 0.8 / 4.1937 = 3,052.2;
    # API min(3,000, 6,000 / 2) = 3,000
    supports = {f.key: f.supports for f in assessment.findings}
    assert supports["maximum_concurrency"] == 8_000
    assert supports["shards:GA"] == 3_200
    assert supports["warm_write_units"] == pytest.approx(3_052.21, abs=0.01)
    assert supports["table_maximum"] == math.inf
    assert assessment.supported_rate == 3_000
    assert assessment.capped_by == "checkout API throttle for POST /reservations, rate / burst"


@pytest.mark.parametrize(
    ("change", "item"),
    [
        ({"maximum_concurrency": 3}, "maximum_concurrency"),
        ({"mapping_enabled": False}, "maximum_concurrency"),
        ({"reserved_concurrency": 3}, "lambda_concurrency"),
        ({"unreserved_concurrency": 3}, "lambda_concurrency"),
        ({"classes": (ClassShards("GA", 4, 4), ClassShards("VIP", 3, 3))}, "shards:VIP"),
        ({"warm_write_units": 7_000}, "warm_write_units"),
        # 3,000 x (1 + 2 x 64) / 99 / 0.8 = 4,886.4 read units after the sell-out on 64 items
        ({"classes": (ClassShards("GA", 64, 64),), "warm_read_units": 4_800}, "warm_read_units"),
        ({"max_write_units": 7_000}, "table_maximum"),
        ({"max_read_units": 300}, "table_maximum"),  # 3,000 x 9/99 / 0.8 = 341 on 4 items
        ({"quota_write_units": 7_500}, "table_quota"),
        ({"api_rate_limit": 2_999.0}, "api_throttle"),
        ({"api_burst_limit": 5_999.0}, "api_throttle"),
        ({"api_rate_limit": None, "api_burst_limit": None}, "api_throttle"),
        ({"usage_plan_rate_limit": 2_000.0, "usage_plan_burst_limit": 4_000.0}, "api_usage_plan"),
        ({"api_account_rate_limit": 2_500.0}, "api_account_throttle"),
    ],
)
def test_each_shortfall_is_found_alone(change: dict[str, Any], item: str) -> None:
    assert short(replace(READY_AT_3000, **change)) == {item}


def test_a_maximum_of_minus_one_is_no_maximum_as_aws_reports_it() -> None:
    assert short(replace(READY_AT_3000, max_write_units=-1, max_read_units=-1)) == set()


def test_a_per_customer_limit_on_one_class_doubles_the_write_units_the_table_needs() -> None:
    limited = replace(READY_AT_3000, classes=(ClassShards("GA", 4, 4, max_per_customer=4),))
    # 3,000 x 6.1937 / 0.8 = 23,226.3 > 16,000
    assert short(limited) == {"warm_write_units"}
    finding = next(f for f in assess_stack(limited, 3_000).findings if f.key == "warm_write_units")
    assert finding.need == ">= 23,226"
    assert finding.supports == pytest.approx(16_000 * 0.8 / (4 + 2 / 99 + 2 + 17 / 98))


def test_a_table_that_reports_no_warm_throughput_counts_as_a_new_ones() -> None:
    unreported = replace(READY_AT_3000, warm_write_units=None, warm_read_units=None)
    finding = next(f for f in assess_stack(unreported, 3_000).findings if f.key == "warm_write_units")
    assert finding.have == "4,000 (not reported: a new table's)" and not finding.ok


def test_without_a_rate_it_is_ready_at_what_it_supports_unless_something_stops_every_sale() -> None:
    assessment = assess_stack(READY_AT_3000)
    assert assessment.ready and not assessment.rate_given and assessment.rate == 3_000
    assert short(replace(READY_AT_3000, mapping_enabled=False), None) == {"maximum_concurrency"}
    assert short(replace(READY_AT_3000, reserved_concurrency=0), None) == {"lambda_concurrency"}
    assert short(replace(READY_AT_3000, api_rate_limit=None, api_burst_limit=None), None) == {"api_throttle"}


def test_a_shortfall_says_what_the_stack_has_and_what_the_rate_needs() -> None:
    findings = {f.key: f for f in assess_stack(replace(READY_AT_3000, maximum_concurrency=3), 3_000).findings}
    assert (findings["maximum_concurrency"].have, findings["maximum_concurrency"].need) == ("3", ">= 4")
    assert findings["maximum_concurrency"].supports == 2_400
    assert "containers >= rate / 800" in findings["maximum_concurrency"].rule


# ------------------------------------------------------------------ the command


def test_plan_prints_one_line_per_item_value_then_rule_and_exits_1_past_what_the_design_reaches() -> None:
    ok = CliRunner().invoke(cli, ["onsale", "plan", "--rate", "40000"])
    assert ok.exit_code == 0, ok.output
    lines = ok.output.splitlines()
    assert lines[0] == "On-sale at 40,000 reservations/s:"
    assert len(lines) == 1 + len(plan_sale(SaleInputs(40_000)).items)
    assert lines[1].split()[:2] == ["MaximumConcurrency", "50"]
    assert "containers >= rate / 800" in lines[1]
    too_fast = CliRunner().invoke(cli, ["onsale", "plan", "--rate", "60000", "--output", "json"])
    assert too_fast.exit_code == 1
    assert "75 containers on one seat class" in json.loads(too_fast.output)["problems"][0]
    refused = CliRunner().invoke(cli, ["onsale", "plan", "--rate", "0"])
    assert refused.exit_code == 2 and "--rate" in refused.output


def test_a_seat_map_plans_row_item_takes_at_the_mapped_containers_rate() -> None:
    # Given 5,000 best-available requests a second of 4 seats on a 10,000-seat map
    plan = plan_sale(SaleInputs(5_000, seats=10_000, seats_per_request=4, mapped=True))
    got = {i.key: i.value for i in plan.items}

    # Then 5,000 / 160 = 31.25 -> 32 containers and no shard items
    assert got["maximum_concurrency"] == 32 and "on a seat map" in plan.item("maximum_concurrency").rule
    assert got["shards"] == "none"
    # 4 write units a take (row item + record) + the issuer's 2 + 17/98: 6.17 x 5,000 / 0.8 = 38,584
    assert plan.values["write_units_per_reservation"] == pytest.approx(4 + 2 + 17 / 98)
    assert got["warm_write_units"] == 39_000
    # 0.25 read units per refusal x 5,000 / 0.8 = 1,562.5: a new table's 12,000 is enough
    assert plan.values["read_units_per_s"] == pytest.approx(1_562.5)
    assert got["warm_read_units"] == 12_000
    # 2,500 reservations: half a second
    assert plan.values["sale_seconds"] == pytest.approx(0.5)
    assert plan.problems == ()


def test_plan_reads_a_seat_maps_sellable_seats(tmp_path: Path) -> None:
    # Given a map of one row of 6 seats, one blocked
    path = tmp_path / "hall.json"
    path.write_text(
        json.dumps(
            {
                "classes": {"GA": {"orphans": "allow"}},
                "sections": [
                    {
                        "id": "A",
                        "class": "GA",
                        "rank": 0,
                        "rows": [{"id": "R1", "seats": 6, "flags": {"blocked": [6]}}],
                    }
                ],
            }
        )
    )
    result = CliRunner().invoke(
        cli, ["onsale", "plan", "--rate", "100", "--seat-map", str(path), "--output", "json"]
    )
    assert result.exit_code == 0, result.output
    document = json.loads(result.output)
    assert (document["seats"], document["seat_map"]) == (5, True)
    both = CliRunner().invoke(
        cli, ["onsale", "plan", "--rate", "100", "--seat-map", str(path), "--seats", "5"]
    )
    assert both.exit_code == 2 and "give --seats or --seat-map, not both" in both.output
    missing = CliRunner().invoke(
        cli, ["onsale", "plan", "--rate", "100", "--seat-map", str(tmp_path / "no.json")]
    )
    assert missing.exit_code == 2 and "no.json: No such file or directory" in missing.output


def test_in_provisioned_mode_the_event_pollers_cap_the_containers_at_10_each() -> None:
    # Given the stack in provisioned mode with 2 event pollers (no MaximumConcurrency: exclusive)
    provisioned = replace(READY_AT_3000, maximum_concurrency=None, event_pollers=2)

    # Then its 20 invocations support 16,000 a second: ready at 3,000, short at 20,000 (25 containers)
    findings = {f.key: f for f in assess_stack(provisioned, 3_000).findings}
    assert "maximum_concurrency" not in findings
    assert findings["event_pollers"].ok and findings["event_pollers"].supports == 16_000
    assert "event_pollers" in short(provisioned, 20_000)
    # and at least 2 pollers whatever the containers
    assert [event_pollers_for(c) for c in (1, 20, 21, 1000)] == [2, 2, 3, 100]


def test_check_needs_a_stack(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SEATS_STACK_NAME", raising=False)
    result = CliRunner().invoke(cli, ["onsale", "check", "--event", "concert"])
    assert result.exit_code == 2
    assert "no stack: pass --stack-name (or set SEATS_STACK_NAME)" in result.output


def test_the_plan_numbers_tickets_in_a_series_per_600_a_second_up_to_what_the_issuer_runs_at_once() -> None:
    assert plan_sale(SaleInputs(300)).item("ticket_series").value == "1 / 1"
    assert plan_sale(SaleInputs(6_001)).item("ticket_series").value == "11 / 11"  # 10.002 -> 11
    assert plan_sale(SaleInputs(40_000)).item("ticket_series").value == "64 / 64"  # 66.7, capped
    assert not any("ticket issuer" in p for p in plan_sale(SaleInputs(40_000)).problems)
    # 64 series x 820 a second = 52,480: past that, numbers fall behind the sale
    late = plan_sale(SaleInputs(52_481)).problems
    assert any("ticket issuer numbers at most 64 series at once, about 52,480/s" in p for p in late)
