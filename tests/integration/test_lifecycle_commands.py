"""`seats event close/open/schedule/limit/capacity`, `seats reservation show` and `seats holds sweep` on moto."""

from __future__ import annotations

import json
import time

import pytest
from click.testing import CliRunner, Result

from seat_inventory.models import Outcome, RequestType, ReservationOutcome, SaleStatus, SeatKey
from seat_tools.cli.main import cli
from seat_tools.operator_commands import OperatorTable
from tests.integration.conftest import Stack, sqs_event
from tests.writes import GroupWrite, commit_outcomes

GA = SeatKey("gig-1", "GA")
VIP = SeatKey("gig-1", "VIP")


@pytest.fixture
def run(stack: Stack, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("TABLE_NAME", stack.table_name)
    monkeypatch.setenv("OUTCOMES_TOPIC_ARN", stack.topic_arn)
    runner = CliRunner()

    def invoke(*args: str) -> Result:
        return runner.invoke(cli, list(args), catch_exceptions=False)

    return invoke


@pytest.fixture
def table(stack: Stack) -> OperatorTable:
    table = OperatorTable(stack.dynamodb, stack.table_name)
    table.create_seat_class(GA, 100)
    table.create_seat_class(VIP, 10)
    return table


def item(table: OperatorTable, key: SeatKey = GA):
    found = table.read_inventory(key)
    assert found is not None
    return found


def take(
    table: OperatorTable, key: SeatKey, rid: str, quantity: int, *, hold_until: int | None = None
) -> None:
    outcome = ReservationOutcome(
        reservation_id=rid,
        outcome=Outcome.HELD if hold_until else Outcome.CONFIRMED,
        reason="test",
        event_id=key.event_id,
        seat_class=key.seat_class,
        quantity=quantity,
        customer_id="c-1",
        request_type=RequestType.HOLD if hold_until else RequestType.RESERVE,
        hold_expires_at=hold_until,
    )
    assert (
        commit_outcomes(table, GroupWrite(key, [outcome], seats_taken=quantity, rejection_expires_at=0))
        is None
    )


# --- close / open -----------------------------------------------------------------------------------


def test_close_and_open_every_class_or_one(run, table: OperatorTable) -> None:
    closed = run("event", "close", "gig-1")
    assert closed.exit_code == 0
    assert (
        item(table, GA).sale_status is SaleStatus.CLOSED and item(table, VIP).sale_status is SaleStatus.CLOSED
    )
    assert "gig-1 GA: sale CLOSED" in closed.output and "gig-1 VIP: sale CLOSED" in closed.output

    opened = run("event", "open", "gig-1", "--seat-class", "VIP")
    assert opened.exit_code == 0
    assert (
        item(table, GA).sale_status is SaleStatus.CLOSED and item(table, VIP).sale_status is SaleStatus.OPEN
    )


def test_closing_an_unknown_event_or_class_is_an_error(run, table: OperatorTable) -> None:
    unknown_event = run("event", "close", "nope")
    unknown_class = run("event", "close", "gig-1", "--seat-class", "BALCONY")

    assert unknown_event.exit_code == 1 and "event 'nope' not found" in unknown_event.output
    assert unknown_class.exit_code == 1
    assert "event 'gig-1' has no seat class 'BALCONY'; nothing was changed" in unknown_class.output
    assert table.read_inventory(SeatKey("gig-1", "BALCONY")) is None


# --- schedule ---------------------------------------------------------------------------------------


def test_schedule_sets_and_clears_the_window(run, table: OperatorTable) -> None:
    # When the GA sale is scheduled from 10:00 UTC to 14:00 in UTC+2 (12:00 UTC)
    result = run(
        "event", "schedule", "gig-1", "--seat-class", "GA",
        "--starts-at", "2030-05-01T10:00:00Z", "--ends-at", "2030-05-01T14:00:00+02:00",
    )  # fmt: skip

    # Then both ends are stored as instants, and show says it is not open yet
    assert result.exit_code == 0, result.output
    assert (item(table).sale_starts_at, item(table).sale_ends_at) == (1903860000, 1903867200)
    assert "sale SCHEDULED, window 2030-05-01T10:00:00Z .. 2030-05-01T12:00:00Z" in result.output
    assert item(table, VIP).sale_starts_at is None
    shown = run("event", "show", "gig-1")
    assert "GA                     100        100         0         0  SCHEDULED      -" in shown.output
    assert "sale window GA: 2030-05-01T10:00:00Z .. 2030-05-01T12:00:00Z" in shown.output

    # When the window is cleared for every class
    cleared = run("event", "schedule", "gig-1", "--clear")

    # Then nothing limits the sale any more
    assert cleared.exit_code == 0
    assert (item(table).sale_starts_at, item(table).sale_ends_at) == (None, None)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "give --starts-at and/or --ends-at, or --clear"),
        (["--clear", "--starts-at", "2030-05-01T10:00:00Z"], "give --starts-at and/or --ends-at, or --clear"),
        (["--starts-at", "2030-05-01T10:00:00"], "has no UTC offset"),
        (["--starts-at", "tomorrow"], "'tomorrow' is not an ISO-8601 time"),
        (
            ["--starts-at", "2030-05-01T10:00:00Z", "--ends-at", "2030-05-01T10:00:00Z"],
            "the sale must end after it starts",
        ),
    ],
)
def test_a_bad_schedule_is_refused_before_any_write(run, table: OperatorTable, args, message) -> None:
    result = run("event", "schedule", "gig-1", *args)
    assert result.exit_code == 2
    assert message in result.output
    assert item(table).version == 0


def test_only_an_end_leaves_the_start_open(run, table: OperatorTable) -> None:
    result = run("event", "schedule", "gig-1", "--seat-class", "VIP", "--ends-at", "2000-01-01T00:00:00Z")
    assert result.exit_code == 0
    assert "gig-1 VIP: sale ENDED, window now .. 2000-01-01T00:00:00Z" in result.output


# --- limit ------------------------------------------------------------------------------------------


def test_limit_sets_and_removes_the_per_customer_limit(run, table: OperatorTable) -> None:
    set_ = run("event", "limit", "gig-1", "--seat-class", "GA", "--max-per-customer", "4")
    assert set_.exit_code == 0 and "limit per customer 4" in set_.output
    assert (item(table).max_per_customer, item(table, VIP).max_per_customer) == (4, None)
    assert (
        "GA                     100        100         0         0  OPEN           4"
        in run("event", "show", "gig-1").output
    )

    removed = run("event", "limit", "gig-1", "--none")
    assert removed.exit_code == 0
    assert item(table).max_per_customer is None


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "give --max-per-customer N or --none"),
        (["--none", "--max-per-customer", "2"], "give --max-per-customer N or --none"),
        (["--max-per-customer", "0"], "0 is not in the range x>=1"),
    ],
)
def test_a_bad_limit_is_refused(run, table: OperatorTable, args, message) -> None:
    result = run("event", "limit", "gig-1", *args)
    assert result.exit_code == 2 and message in result.output


# --- capacity ---------------------------------------------------------------------------------------


def test_capacity_can_be_added_and_removed_but_never_below_sold_plus_held(run, table: OperatorTable) -> None:
    take(table, GA, "r-1", 30)
    take(table, GA, "h-1", 20, hold_until=int(time.time()) + 600)

    added = run("event", "capacity", "gig-1", "--seat-class", "GA", "--add", "10")
    assert added.exit_code == 0, added.output
    assert (item(table).capacity, item(table).available) == (110, 60)

    removed = run("event", "capacity", "gig-1", "--seat-class", "GA", "--remove", "60")
    assert removed.exit_code == 0
    assert (item(table).capacity, item(table).available, item(table).held, item(table).sold) == (
        50,
        0,
        20,
        30,
    )

    refused = run("event", "capacity", "gig-1", "--seat-class", "GA", "--remove", "1")
    assert refused.exit_code == 1
    assert (
        "cannot remove 1 seat(s) from gig-1 GA: only 0 available (30 sold, 20 held, capacity 50)"
        in refused.output
    )
    assert item(table).capacity == 50

    too_low = run("event", "capacity", "gig-1", "--seat-class", "GA", "--set", "49")
    assert too_low.exit_code == 1 and "30 sold and 20 held" in too_low.output

    set_ = run("event", "capacity", "gig-1", "--seat-class", "GA", "--set", "80")
    assert set_.exit_code == 0
    assert (item(table).capacity, item(table).available) == (80, 30)


def test_capacity_needs_one_class_and_one_change(run, table: OperatorTable) -> None:
    ambiguous = run("event", "capacity", "gig-1", "--add", "1")
    assert (
        ambiguous.exit_code == 2
        and "has seat classes GA, VIP; name one with --seat-class" in ambiguous.output
    )
    both = run("event", "capacity", "gig-1", "--seat-class", "GA", "--add", "1", "--remove", "1")
    assert both.exit_code == 2 and "give exactly one of --add N, --remove N, --set N" in both.output
    assert item(table).capacity == 100


def test_capacity_of_a_single_class_event_needs_no_seat_class(run, stack: Stack) -> None:
    OperatorTable(stack.dynamodb, stack.table_name).create_seat_class(SeatKey("solo", "GA"), 5)
    assert run("event", "capacity", "solo", "--add", "5").exit_code == 0
    assert run("event", "show", "solo", "--json").output.count('"capacity": 10') == 1


def test_create_takes_the_sale_rules(run, stack: Stack) -> None:
    result = run(
        "event", "create", "gig-2", "--capacity", "50", "--max-per-customer", "2",
        "--starts-at", "2030-05-01T10:00:00Z", "--closed",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    [shown] = json.loads(run("event", "show", "gig-2", "--json").output)["seat_classes"]
    assert (shown["max_per_customer"], shown["sale_status"], shown["sale"], shown["sale_starts_at"]) == (
        2,
        "CLOSED",
        "CLOSED",
        "2030-05-01T10:00:00Z",
    )


def test_show_has_a_held_column(run, table: OperatorTable) -> None:
    take(table, GA, "h-1", 3, hold_until=int(time.time()) + 600)
    take(table, GA, "r-1", 2)
    lines = run("event", "show", "gig-1").output.splitlines()
    assert lines[1] == "GA                     100         95         3         2  OPEN           -"
    assert lines[3] == "TOTAL                  110        105         3         2"


# --- reservation show -----------------------------------------------------------------------------


def test_reservation_show_prints_status_and_original_answer(run, table: OperatorTable) -> None:
    until = int(time.time()) + 600
    take(table, GA, "h-1", 3, hold_until=until)

    text = run("reservation", "show", "h-1")
    document = json.loads(run("reservation", "show", "h-1", "--json").output)

    assert text.exit_code == 0
    assert "status              HELD" in text.output.splitlines()
    assert (document["status"], document["outcome"], document["type"], document["quantity"]) == (
        "HELD",
        "HELD",
        "hold",
        3,
    )
    assert document["hold_expires_at"].endswith("Z")
    assert document["customer_counted"] is False


def test_reservation_show_of_an_unknown_id_is_an_error(run, table: OperatorTable) -> None:
    result = run("reservation", "show", "r-404")
    assert result.exit_code == 1
    assert "no reservation 'r-404' is recorded" in result.output
    assert run("reservation", "show", "bad#id").exit_code == 2


def test_reservation_show_says_invalid_answers_are_not_recorded(run, stack: Stack) -> None:
    # Given a message answered INVALID (its quantity is not a whole number)
    body = json.dumps({"reservation_id": "r-bad", "event_id": "gig-1", "quantity": 1.5, "customer_id": "c"})
    stack.invoke(sqs_event(body))
    assert [o["outcome"] for o in stack.outcomes()] == ["INVALID"]

    # When it is looked up, the answer says why nothing is found
    result = run("reservation", "show", "r-bad")
    assert result.exit_code == 1
    assert "answered INVALID or UNKNOWN_RESERVATION, answers that are never recorded" in result.output


# --- holds sweep --------------------------------------------------------------------------------------


def test_holds_sweep_releases_expired_holds_once(run, stack: Stack, table: OperatorTable) -> None:
    take(table, GA, "h-1", 3, hold_until=int(time.time()) - 1)
    take(table, GA, "h-2", 2, hold_until=int(time.time()) + 600)

    first = run("holds", "sweep", "--json")
    second = run("holds", "sweep")

    assert first.exit_code == 0, first.output
    assert json.loads(first.output) == {
        "released": 1,
        "seats_released": 3,
        "republished": 0,
        "unpublished": 0,
        "skipped": 0,
        "failed_groups": [],
    }
    assert second.exit_code == 0 and second.output.startswith("released 0 hold(s), 0 seat(s)")
    assert (item(table).available, item(table).held) == (98, 2)
    assert [(o["reservation_id"], o["outcome"]) for o in stack.outcomes()] == [("h-1", "EXPIRED")]


def test_holds_sweep_needs_the_topic(run, monkeypatch: pytest.MonkeyPatch, table: OperatorTable) -> None:
    monkeypatch.delenv("OUTCOMES_TOPIC_ARN")
    result = run("holds", "sweep")
    assert result.exit_code == 2 and "OUTCOMES_TOPIC_ARN" in result.output
