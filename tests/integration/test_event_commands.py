"""`seats event create/show` against moto, with resource names from the environment."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from seat_tools.cli.main import cli
from tests.integration.conftest import Stack, sqs_event


@pytest.fixture
def run(stack: Stack, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("TABLE_NAME", stack.table_name)
    runner = CliRunner()

    def invoke(*args: str):
        return runner.invoke(cli, list(args), catch_exceptions=False)

    return invoke


def test_create_then_show(run, stack: Stack) -> None:
    created = run("event", "create", "gig-1", "--capacity", "500")
    vip = run("event", "create", "gig-1", "--capacity", "20", "--seat-class", "VIP")
    shown = run("event", "show", "gig-1")

    assert created.exit_code == 0 and "created gig-1 GA: capacity 500" in created.output
    assert vip.exit_code == 0
    assert shown.output.splitlines() == [
        "SEAT CLASS        CAPACITY  AVAILABLE      HELD      SOLD  SALE       LIMIT",
        "GA                     500        500         0         0  OPEN           -",
        "VIP                     20         20         0         0  OPEN           -",
        "TOTAL                  520        520         0         0",
    ]


def test_show_json(run) -> None:
    run("event", "create", "gig-1", "--capacity", "5")
    shown = run("event", "show", "gig-1", "--output", "json")
    # the hidden --json of earlier scripts says the same
    assert run("event", "show", "gig-1", "--json").output == shown.output
    assert json.loads(shown.output) == {
        "event_id": "gig-1",
        "seat_classes": [
            {
                "event_id": "gig-1",
                "seat_class": "GA",
                "capacity": 5,
                "available": 5,
                "held": 0,
                "sold": 0,
                "sale": "OPEN",
                "sale_status": "OPEN",
                "sale_starts_at": None,
                "sale_ends_at": None,
                "max_per_customer": None,
                "shard_count": 1,
                "admission_required": False,
            }
        ],
    }


def test_creating_an_existing_event_is_an_error_and_keeps_the_original(run, stack: Stack) -> None:
    run("event", "create", "gig-1", "--capacity", "500")

    again = run("event", "create", "gig-1", "--capacity", "5")

    assert again.exit_code == 1
    assert (
        "event 'gig-1' already has seat class 'GA' (capacity 500, available 500); nothing was changed"
        in again.output
    )
    assert stack.inventory("gig-1")["capacity"] == 500


def test_show_of_an_unknown_event_is_an_error(run) -> None:
    result = run("event", "show", "nope")
    assert result.exit_code == 1
    assert "event 'nope' not found" in result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--capacity", "0"], "0 is not in the range x>=1"),
        (["--seat-class", "a b", "--capacity", "3"], "may only contain"),
    ],
)
def test_bad_arguments_are_refused_before_any_write(run, args, message) -> None:
    result = run("event", "create", "gig-1", *args)
    assert result.exit_code == 2
    assert message in result.output


def test_missing_table_name_says_how_to_provide_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TABLE_NAME", raising=False)
    monkeypatch.delenv("SEATS_STACK_NAME", raising=False)
    result = CliRunner().invoke(cli, ["event", "show", "x"])
    assert result.exit_code == 2
    assert (
        "pass --stack-name (or set SEATS_STACK_NAME) for a deployed stack, or set TABLE_NAME" in result.output
    )


def test_stack_outputs_are_read_from_cloudformation(stack: Stack, monkeypatch: pytest.MonkeyPatch) -> None:
    import boto3

    cfn = boto3.client("cloudformation", region_name="us-east-1")
    cfn.create_stack(
        StackName="onsale",
        TemplateBody=json.dumps(
            {
                "Resources": {"Topic": {"Type": "AWS::SNS::Topic"}},
                "Outputs": {"InventoryTableName": {"Value": stack.table_name}},
            }
        ),
    )
    monkeypatch.delenv("TABLE_NAME", raising=False)
    runner = CliRunner()
    runner.invoke(
        cli, ["--stack-name", "onsale", "event", "create", "gig-9", "--capacity", "7"], catch_exceptions=False
    )
    assert stack.inventory("gig-9")["capacity"] == 7


def test_show_text_is_one_tab_separated_line_per_seat_class(run) -> None:
    run("event", "create", "gig-1", "--capacity", "5")
    run("event", "create", "gig-1", "--capacity", "2", "--seat-class", "VIP", "--max-per-customer", "1")

    shown = run("event", "show", "gig-1", "--output", "text")

    assert shown.exit_code == 0, shown.output
    assert [line.split("\t") for line in shown.output.splitlines()] == [
        ["gig-1", "GA", "5", "5", "0", "0", "OPEN", "OPEN", "None", "None", "None", "1", "False"],
        ["gig-1", "VIP", "2", "2", "0", "0", "OPEN", "OPEN", "None", "None", "1", "1", "False"],
    ]


def test_event_list_shows_every_event_and_class(run, stack: Stack) -> None:
    # Given no event, the list says how to create one
    empty = run("event", "list")
    assert empty.exit_code == 0 and "no events" in empty.output
    assert json.loads(run("event", "list", "--output", "json").output) == {"events": []}

    # Given two events, one with two classes, and a reservation record in the same table
    run("event", "create", "gig-2", "--capacity", "7")
    run("event", "create", "gig-1", "--capacity", "5")
    run("event", "create", "gig-1", "--capacity", "2", "--seat-class", "VIP", "--closed")
    body = {"reservation_id": "r-1", "event_id": "gig-1", "quantity": 1, "customer_id": "c-1"}
    stack.invoke(sqs_event(json.dumps(body)))

    listed = run("event", "list")
    as_json = json.loads(run("event", "list", "--output", "json").output)
    as_text = run("event", "list", "--output", "text").output

    # Then every class is listed once, sorted by event and class
    assert listed.exit_code == 0, listed.output
    assert listed.output.splitlines()[1:] == [
        "gig-1  GA                       5          4         0         1  OPEN",
        "gig-1  VIP                      2          2         0         0  CLOSED",
        "gig-2  GA                       7          7         0         0  OPEN",
        "2 event(s), 3 seat class(es)",
    ]
    assert [(e["event_id"], [c["seat_class"] for c in e["seat_classes"]]) for e in as_json["events"]] == [
        ("gig-1", ["GA", "VIP"]),
        ("gig-2", ["GA"]),
    ]
    assert [line.split("\t")[:2] for line in as_text.splitlines()] == [
        ["gig-1", "GA"],
        ["gig-1", "VIP"],
        ["gig-2", "GA"],
    ]


def test_capacity_added_to_a_class_with_an_open_waiting_list_is_set_aside_for_it(run) -> None:
    def show() -> tuple[dict, dict]:
        [seat_class] = json.loads(run("event", "show", "gig-1", "--output", "json").output)["seat_classes"]
        [waitlist] = json.loads(run("waitlist", "show", "gig-1", "--output", "json").output)["waitlists"]
        return seat_class, waitlist

    run("event", "create", "gig-1", "--capacity", "2")
    assert run("waitlist", "open", "gig-1", "GA", "--offer-seconds", "600").exit_code == 0

    added = run("event", "capacity", "gig-1", "--add", "3")
    assert added.exit_code == 0, added.output
    seat_class, waitlist = show()
    # the 3 new seats are the list's (offered by the sweeper's next run), not on sale
    assert (seat_class["capacity"], seat_class["available"], seat_class["held"]) == (5, 2, 3)
    assert waitlist["seats_set_aside"] == 3

    raised = run("event", "capacity", "gig-1", "--set", "9")
    assert raised.exit_code == 1
    assert "has an open waiting list: its new seats are offered to the list first" in raised.output
    assert show()[0]["capacity"] == 5  # nothing changed
    assert run("event", "capacity", "gig-1", "--set", "4").exit_code == 0  # lowering is as always

    # closed, the list's seats go back on sale and new ones with them
    assert run("waitlist", "close", "gig-1", "GA").exit_code == 0
    assert run("event", "capacity", "gig-1", "--add", "1").exit_code == 0
    seat_class, waitlist = show()
    assert (seat_class["capacity"], seat_class["available"], seat_class["held"]) == (5, 5, 0)
    assert waitlist["seats_set_aside"] == 0
