"""`seats event create --seat-map` and `seats event show --seats` against moto."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from seat_tools.cli.main import cli
from tests.integration.conftest import Stack, sqs_event

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "seat_maps"


@pytest.fixture
def run(stack: Stack, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("TABLE_NAME", stack.table_name)
    runner = CliRunner()

    def invoke(*args: str):
        return runner.invoke(cli, list(args), catch_exceptions=False)

    return invoke


def test_create_from_a_map_beside_a_counted_class_then_show_the_seats(run, stack: Stack) -> None:
    created = run(
        "event", "create", "club-1", "--seat-map", str(EXAMPLES / "club.csv"), "--max-per-customer", "4"
    )
    assert created.exit_code == 0, created.output
    assert created.output.strip() == "created club-1 seat map: TABLES 15 seats"
    assert run("event", "create", "club-1", "--capacity", "50").exit_code == 0
    # A mapped class cannot also be a counted one, nor a second map be created.
    clash = run("event", "create", "club-1", "--capacity", "5", "--seat-class", "TABLES")
    assert clash.exit_code != 0 and "has mapped seat class 'TABLES'" in clash.output
    again = run("event", "create", "club-1", "--seat-map", str(EXAMPLES / "club.csv"))
    assert again.exit_code != 0 and "already has a seat map" in again.output

    body = {"event_id": "club-1", "seat_class": "TABLES", "customer_id": "c"}
    stack.invoke(
        sqs_event(
            {**body, "reservation_id": "r-1", "seats": ["A-R2-3", "A-R2-4"]},
            {**body, "reservation_id": "r-2", "type": "hold", "quantity": 2},
        )
    )
    shown = run("event", "show", "club-1", "--seats")
    assert shown.exit_code == 0, shown.output
    lines = shown.output.splitlines()
    assert lines[0].startswith("MAPPED CLASS")
    assert lines[1].split() == ["TABLES", "16", "11", "2", "2", "refuse", "OPEN"]
    pictures = {line.split()[0]: line.split()[1] for line in lines if line.startswith("  ")}
    assert pictures["A-R2"] == "..ss.."
    assert pictures["A-R1"].startswith("wc") and pictures["A-R1"].count("h") == 2
    assert pictures["B-R1"] == "..#."
    assert any(line.startswith("GA ") for line in lines)  # the counted class's table follows

    shown_record = json.loads(run("reservation", "show", "r-1", "--output", "json").output)
    assert shown_record["seats"] == ["A-R2-3", "A-R2-4"] and shown_record["status"] == "CONFIRMED"

    document = json.loads(run("event", "show", "club-1", "--seats", "--output", "json").output)
    [tables] = document["mapped_classes"]
    assert tables["rows"]["A-R2"] == "..ss.." and tables["sold"] == 2
    assert [c["seat_class"] for c in document["seat_classes"]] == ["GA"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("class,section,section_rank,row,position,flags\nT,A,0,R1,1,\nT,A,0,R1,3,\n", "gap in row R1"),
        ("class,section,section_rank,row,position,flags\nT,A,0,R1,1,vip\n", "unknown flag 'vip'"),
    ],
)
def test_a_bad_map_is_a_one_line_error_and_creates_nothing(
    run, tmp_path: Path, text: str, message: str
) -> None:
    path = tmp_path / "map.csv"
    path.write_text(text)
    result = run("event", "create", "bad-1", "--seat-map", str(path))
    assert result.exit_code == 2 and message in result.output
    assert run("event", "show", "bad-1").exit_code != 0


def test_create_needs_capacity_or_a_map(run) -> None:
    result = run("event", "create", "e-1")
    assert result.exit_code == 2 and "give --capacity (a counted class) or --seat-map" in result.output
    mixed = run("event", "create", "e-1", "--capacity", "3", "--seat-map", str(EXAMPLES / "club.csv"))
    assert mixed.exit_code == 2 and "no --capacity" in mixed.output


def test_close_and_open_reach_mapped_and_counted_classes(run, stack: Stack) -> None:
    run("event", "create", "club-2", "--seat-map", str(EXAMPLES / "club.csv"))
    run("event", "create", "club-2", "--capacity", "5")
    closed = run("event", "close", "club-2")
    assert closed.exit_code == 0 and "club-2 TABLES: sale CLOSED on its 3 row item(s)" in closed.output
    body = {"event_id": "club-2", "customer_id": "c", "quantity": 1}
    stack.invoke(
        sqs_event(
            {**body, "reservation_id": "r-1", "seat_class": "TABLES"}, {**body, "reservation_id": "g-1"}
        )
    )
    assert {o["reservation_id"]: o["outcome"] for o in stack.outcomes()} == {
        "r-1": "SALE_CLOSED",
        "g-1": "SALE_CLOSED",
    }
    opened = run("event", "open", "club-2", "--seat-class", "TABLES")
    assert opened.exit_code == 0 and "sale OPEN" in opened.output
    stack.invoke(
        sqs_event(
            {**body, "reservation_id": "r-2", "seat_class": "TABLES"}, {**body, "reservation_id": "g-2"}
        )
    )
    assert {o["reservation_id"]: o["outcome"] for o in stack.outcomes()} == {
        "r-2": "CONFIRMED",
        "g-2": "SALE_CLOSED",
    }


def test_admission_is_set_on_mapped_classes_and_on_the_counted_ones(run) -> None:
    # Mapped classes check admission tokens (docs/guides/admission.md): the rule is on each row item.
    gated_map = run(
        "event", "create", "club-3", "--seat-map", str(EXAMPLES / "club.csv"), "--require-admission"
    )
    assert gated_map.exit_code == 0, gated_map.output
    assert run("event", "create", "club-3", "--capacity", "50").exit_code == 0
    named = run("event", "admission", "club-3", "--seat-class", "TABLES", "--not-required")
    assert named.exit_code == 0 and "club-3 TABLES: no longer needs an admission token" in named.output
    whole = run("event", "admission", "club-3", "--required")
    assert whole.exit_code == 0, whole.output
    assert "club-3 TABLES: needs an admission token (3 row items)" in whole.output
    shown = json.loads(run("event", "show", "club-3", "--output", "json").output)
    assert [(c["seat_class"], c["admission_required"]) for c in shown["seat_classes"]] == [("GA", True)]
    assert [(c["seat_class"], c["admission_required"]) for c in shown["mapped_classes"]] == [("TABLES", True)]


def test_block_and_unblock_seats_from_the_command_line(run, stack: Stack) -> None:
    assert run("event", "create", "club-2", "--seat-map", str(EXAMPLES / "club.csv")).exit_code == 0
    blocked = run(
        "event", "block", "club-2", "--seat-class", "TABLES", "--seat", "A-R2-3", "--seat", "A-R2-4"
    )
    assert blocked.exit_code == 0, blocked.output
    assert blocked.output.splitlines() == [
        "club-2 TABLES: blocked A-R2-3, A-R2-4",
        "  row item A-R2#0: available 4, held 0, sold 0",
    ]
    shown = run("event", "show", "club-2", "--seats")
    pictures = {
        line.split()[0]: line.split()[1] for line in shown.output.splitlines() if line.startswith("  ")
    }
    assert pictures["A-R2"] == "..##.."
    # Refusals are one line, exit code 1, and change nothing
    again = run("event", "block", "club-2", "--seat-class", "TABLES", "--seat", "A-R2-4", "--seat", "A-R2-5")
    assert again.exit_code == 1
    assert again.output.strip() == (
        "Error: seats must be free to be blocked: A-R2-4 is blocked; nothing was changed"
    )
    unknown = run("event", "unblock", "club-2", "--seat-class", "TABLES", "--seat", "Z-R1-1")
    assert unknown.exit_code == 1 and "'Z-R1-1' is not a seat of TABLES" in unknown.output
    free = run("event", "unblock", "club-2", "--seat-class", "TABLES", "--seat", "A-R2-5")
    assert free.exit_code == 1 and "A-R2-5 is free; nothing was changed" in free.output
    # Unblocked, as JSON
    unblocked = run(
        "event", "unblock", "club-2", "--seat-class", "TABLES", "--seat", "A-R2-3", "--output", "json"
    )
    assert unblocked.exit_code == 0, unblocked.output
    assert json.loads(unblocked.output) == {
        "event_id": "club-2",
        "seat_class": "TABLES",
        "unblocked": ["A-R2-3"],
        "rows": [{"row_id": "A-R2#0", "available": 5, "held": 0, "sold": 0}],
    }


def test_a_mapped_class_s_waiting_list_through_the_cli(run, stack: Stack) -> None:
    assert run("event", "create", "club-1", "--seat-map", str(EXAMPLES / "club.csv")).exit_code == 0
    opened = run("waitlist", "open", "club-1", "TABLES", "--offer-seconds", "600")
    assert opened.exit_code == 0, opened.output
    body = {"event_id": "club-1", "seat_class": "TABLES", "customer_id": "c"}
    stack.invoke(sqs_event({**body, "reservation_id": "r-1", "seats": ["A-R2-3", "A-R2-4"]}))
    stack.invoke(sqs_event({"type": "cancel", "reservation_id": "r-1"}))
    # The seats given back are the list's: shown as such, counted as set aside.
    shown = run("event", "show", "club-1", "--seats")
    assert shown.exit_code == 0, shown.output
    pictures = {
        line.split()[0]: line.split()[1] for line in shown.output.splitlines() if line.startswith("  ")
    }
    assert pictures["A-R2"] == "..ll.."
    [waitlist] = json.loads(run("waitlist", "show", "club-1", "--output", "json").output)["waitlists"]
    assert (waitlist["seat_class"], waitlist["seats_set_aside"], waitlist["open"]) == ("TABLES", 2, True)
    closed = run("waitlist", "close", "club-1", "TABLES")
    assert closed.exit_code == 0, closed.output
    shown = run("event", "show", "club-1", "--seats")
    pictures = {
        line.split()[0]: line.split()[1] for line in shown.output.splitlines() if line.startswith("  ")
    }
    assert pictures["A-R2"] == "......"
