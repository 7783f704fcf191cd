"""`seats event create/show` against moto, with resource names from the environment."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from seat_inventory.cli.main import cli
from tests.integration.conftest import Stack


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
    shown = run("event", "show", "gig-1", "--json")
    assert json.loads(shown.output) == {
        "event_id": "gig-1",
        "seat_classes": [
            {
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
