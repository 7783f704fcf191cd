"""`seats demo`: the recommended configuration by default, and two lines saying what its numbers mean."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from click.testing import CliRunner

from seat_inventory.models import MAX_SHARDS, SeatClassInventory
from seat_tools.cli.local_commands import _print_summary, conflicts_explained, explain
from seat_tools.cli.main import cli
from seat_tools.local.demo import (
    _AnsweredTracker,
    checks_passed,
    recommended_shards,
    seats_a_batch_takes,
    summarize,
)
from seat_tools.traffic import reservation_body


def summary(workers: int, shards: int) -> dict[str, Any]:
    return {
        "event_id": "onsale-1",
        "capacity": 5000,
        "requests": 6000,
        "duplicates_pct": 10.0,
        "seats_per_batch": 126.3,
        "mean_invocation_ms": 1800.0,
        "confirmed_seats": 1000,
        "oversold": 0,
        "outcomes_missing": 0,
        "inconsistent": 0,
        "dlq_depth": 0,
        "workers": workers,
        "shards": shards,
        "aws_contention": {
            "transactions_committed": 60,
            "transactions_cancelled": {"TransactionConflict": 3},
            "write_conflicts": 0,
            "throttled_requests": 0,
            "write_units_cancelled": 412.0,
        },
        "log_dir": "logs",
    }


@pytest.mark.parametrize(("workers", "shards"), [(1, 1), (8, 8), (10, 10), (MAX_SHARDS + 1, MAX_SHARDS)])
def test_the_class_is_kept_in_one_item_per_worker(workers: int, shards: int) -> None:
    assert recommended_shards(workers) == shards
    assert recommended_shards(workers, capacity=10**6, seats_per_batch=130.0) == shards


@pytest.mark.parametrize(("capacity", "shards"), [(5000, 8), (1000, 7), (260, 2), (100, 1)])
def test_no_more_items_than_the_capacity_fills_with_a_full_batch_each(capacity: int, shards: int) -> None:
    # An item holding less than a batch takes is drained by its first transaction, and its
    # container then takes from the others' items: `seats onsale plan` keeps each a full batch
    assert recommended_shards(8, capacity=capacity, seats_per_batch=130.0) == shards


def test_a_batch_takes_its_messages_mean_quantity_and_re_sends_take_nothing() -> None:
    bodies = [
        reservation_body("r-1", "e", 1, "c"),
        reservation_body("r-2", "e", 3, "c"),
        reservation_body("r-1", "e", 1, "c"),  # a re-send, answered from its record
        reservation_body("r-3", "e", 2, "c"),
    ]
    # 99 messages: three in four are distinct, of 2 seats on average
    assert seats_a_batch_takes(bodies, 99) == pytest.approx(99 * 0.75 * 2)
    assert seats_a_batch_takes([], 99) == 0.0


def test_the_summary_says_what_its_numbers_mean_and_where_its_conflicts_come_from(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Given the summary of an on-sale in the recommended configuration, with 3 conflicts
    # When it is printed
    _print_summary(summary(workers=8, shards=8))

    # Then the shard count is shown, and two lines under the figures say what they mean
    lines = capsys.readouterr().out.splitlines()
    assert any(line.split()[:2] == ["shards:", "8"] for line in lines)
    meaning = [line for line in lines if line.startswith("  meaning: ")]
    assert len(meaning) == 2
    assert "rows marked (must be 0) are the guarantees" in meaning[0]
    assert "8 workers on 8 items, one each at least (recommended)" in meaning[1]
    assert "fewer conflicts than with `--single-item`, all on one item" in meaning[1]
    # And two more say where the conflicts come from, with the run's own figures
    conflicts = [line for line in lines if line.startswith("  conflicts: ")]
    assert conflicts[0].startswith("  conflicts: 3 of 63 transactions (5%).")
    assert "an item of its own (625 seats, about 5 batches of 126)" in conflicts[0]
    assert "a batch takes 1.8 s here" in conflicts[1]
    assert conflicts[1].endswith(
        "`seats simulate --containers 8 --shards 8 --capacity 5000 --requests 6000 --duplicates 0.1`."
    )
    assert lines[-1] == "all checks passed; worker logs in logs"


def test_conflicts_are_explained_only_when_there_are_some_on_items_of_ones_own() -> None:
    calm = summary(workers=8, shards=8)
    calm["aws_contention"] = {**calm["aws_contention"], "transactions_cancelled": {}}
    assert conflicts_explained(calm) == []
    assert conflicts_explained(summary(workers=8, shards=4)) == []  # the layout line says why
    assert conflicts_explained({**summary(workers=8, shards=8), "aws_contention": None}) == []
    # an item of one batch: the containers' items run dry at their first take
    small = conflicts_explained({**summary(workers=8, shards=8), "capacity": 1000})
    assert "an item of its own (125 seats, about 1 batch of 126)" in small[0]


def test_items_the_capacity_limits_are_explained_as_the_recommended_layout() -> None:
    # 8 workers, 5,000 seats of which batches of 126 fill 8 items; 300 seats fill 2
    small = {**summary(workers=8, shards=2), "capacity": 300, "recommended_shards": 2}
    assert explain(small)[1].endswith(
        "8 workers share 2 items: 300 seats fill no more items with a full batch each (about 126"
        " seats), so workers meet on items and conflict; a bigger capacity gets one item per worker"
    )
    # asked for fewer items than the rule gives: the comparison
    fewer = {**summary(workers=8, shards=2), "recommended_shards": 8}
    assert explain(fewer)[1].endswith(
        "8 workers share 2 items: more conflicts than the default, one item per worker"
    )


def test_a_shared_item_is_explained_as_the_comparison() -> None:
    lines = explain(summary(workers=8, shards=1))
    assert lines[1].endswith("8 workers share 1 item: more conflicts than the default, one item per worker")
    assert "8 workers share 4 items:" in explain(summary(workers=8, shards=4))[1]
    assert explain(summary(workers=1, shards=1))[1].endswith("1 worker on 1 item: nothing to conflict with")


def test_single_item_and_other_shards_are_refused_in_one_line() -> None:
    result = CliRunner().invoke(cli, ["demo", "--single-item", "--shards", "4"])
    assert result.exit_code == 2
    assert result.output.splitlines()[-1] == (
        "Error: --single-item keeps the class in one item: leave out --shards"
    )


def test_the_demo_help_names_the_default_and_the_comparison() -> None:
    result = CliRunner().invoke(cli, ["demo", "--help"])
    assert result.exit_code == 0
    text = " ".join(result.output.split())
    assert "one per worker, the recommended configuration" in text
    assert "--single-item" in text


def test_ticketed_outcomes_are_not_answers_and_a_tickets_defect_fails_the_checks(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Given a sale of one seat, answered CONFIRMED, then numbered by the issuer (TICKETED)
    bodies = [{"reservation_id": "r-1", "quantity": 1}]
    outcomes = [
        {"reservation_id": "r-1", "outcome": "CONFIRMED"},
        {"reservation_id": "r-1", "outcome": "TICKETED", "tickets": ["1"]},
    ]
    inventory = SeatClassInventory("e", "GA", capacity=1, available=0, sold=1)
    got = summarize(capacity=1, bodies=bodies, outcomes=outcomes, inventory=inventory, elapsed_s=1.0)
    # Then the TICKETED outcome is counted apart, not as a second, different answer
    assert got["inconsistent"] == 0 and got["confirmed"] == 1 and got["ticketed_outcomes"] == 1
    assert checks_passed({**got, "tickets_defects": 0})
    # And a defect of the tickets audit fails the checks and is printed under the summary
    failed = {
        **summary(workers=2, shards=2),
        "tickets_defects": 1,
        "tickets_audit": ["series 0: 2 on no ticket (gap)"],
    }
    assert not checks_passed(failed)
    _print_summary(failed)
    out = capsys.readouterr().out
    assert "tickets audit: DEFECTS" in out and "    series 0: 2 on no ticket (gap)" in out
    assert out.splitlines()[-1].startswith("CHECKS FAILED")
    _print_summary({**summary(workers=2, shards=2), "tickets_defects": 0, "tickets_audit": "ok"})
    assert "tickets audit: ticket numbers sound" in capsys.readouterr().out


def test_the_wait_for_answers_does_not_count_the_issuers_ticketed_news() -> None:
    # Given two messages for one reservation (a re-send) and a collector's growing list
    bodies = [reservation_body("r-1", "e", 1, "c"), reservation_body("r-1", "e", 1, "c")]
    done = _AnsweredTracker(bodies, threading.Event())
    first = {"reservation_id": "r-1", "outcome": "CONFIRMED", "duplicate": False}
    ticketed = {"reservation_id": "r-1", "outcome": "TICKETED"}

    # When the first answer and the issuer's news have arrived, the re-send's answer has not
    documents = [first, ticketed]

    # Then the wait goes on, and ends once the re-send is answered
    assert not done(documents)
    documents.append({**first, "duplicate": True})
    assert done(documents)
