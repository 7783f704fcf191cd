"""The ticket issuer's handler and data access on moto (behaviour only: moto's transactions are
not atomic under concurrency, tests/local judges races): resources from template.yaml, sales
through the real reservation handler, numbers through the real issuer handler, audit clean.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from click.testing import CliRunner

from seat_inventory.dal.items import TICKETS_INDEX
from seat_inventory.handlers import issue_tickets as issuer_module
from seat_inventory.issuer_lanes import lane_event
from seat_inventory.logic.issue_tickets import plan_batch
from seat_inventory.models import (
    ISSUER_LANE_COUNTS,
    NumbersRefused,
    TicketAssignment,
    TicketBatch,
    TicketFormat,
    TicketSeries,
)
from seat_inventory.wiring import build_adapters
from seat_tools.cli.main import cli
from seat_tools.operator_commands import OperatorTable
from seat_tools.ticket_reports import audit_event, list_tickets
from tests.integration.conftest import LambdaContext, SimulatedCrash, Stack, load_event, sqs_event

EVENT = "concert-2026"


def reserve(rid: str, quantity: int = 1, **extra: Any) -> dict[str, Any]:
    return {
        "reservation_id": rid,
        "event_id": EVENT,
        "seat_class": "GA",
        "quantity": quantity,
        "customer_id": "c-1",
        **extra,
    }


class Issuer:
    def __init__(self, stack: Stack, monkeypatch: pytest.MonkeyPatch) -> None:
        self.stack = stack
        monkeypatch.setenv("ISSUE_SECONDS", "1")
        monkeypatch.setattr(
            issuer_module,
            "build_adapters",
            lambda settings, **pools: build_adapters(settings, stack.faults.session, **pools),
        )
        issuer_module.reset_container()
        self.table = OperatorTable(stack.dynamodb, stack.table_name)

    def run(self) -> dict[str, Any]:
        return issuer_module.lambda_handler(load_event("issue_schedule.json"), LambdaContext())

    def ticketed(self) -> dict[str, list[str]]:
        return {
            o["reservation_id"]: o["tickets"] for o in self.stack.outcomes() if o["outcome"] == "TICKETED"
        }


@pytest.fixture
def issuer(stack: Stack, monkeypatch: pytest.MonkeyPatch) -> Iterator[Issuer]:
    stack.create_event(EVENT, 50, "GA")
    yield Issuer(stack, monkeypatch)
    issuer_module.reset_container()


def test_the_table_has_the_issuers_sparse_index_and_the_function_its_schedule(template: Any) -> None:
    props = template.properties("InventoryTable")
    [index] = [i for i in props["GlobalSecondaryIndexes"] if i["IndexName"] == TICKETS_INDEX]
    assert [k["AttributeName"] for k in index["KeySchema"]] == ["gsi2pk", "gsi2sk"]
    assert set(index["Projection"]["NonKeyAttributes"]) == {"reservation_id", "event_id", "quantity"}
    function = template.properties("IssueTicketsFunction")
    assert function["Handler"] == "seat_inventory.handlers.issue_tickets.lambda_handler"
    [event] = function["Events"].values()
    assert event["Type"] == "Schedule" and event["Properties"]["Schedule"] == {"Ref": "IssueSchedule"}
    queries = [
        s["Resource"]
        for p in function["Policies"]
        if isinstance(p, dict) and "Statement" in p
        for s in p["Statement"]
        if "dynamodb:Query" in s["Action"]
    ]
    assert queries == [{"Fn::Sub": "${InventoryTable.Arn}/index/TicketsToIssue"}]


def test_sales_and_confirmed_holds_are_numbered_and_announced_and_the_audit_is_clean(
    stack: Stack, issuer: Issuer
) -> None:
    # Given two sales, a confirmed hold, a hold cancelled and a sale cancelled
    stack.invoke(sqs_event(reserve("r-1", 2), reserve("r-2", 1)))
    stack.invoke(sqs_event(reserve("h-1", 2, type="hold", hold_seconds=300), reserve("h-2", 1, type="hold")))
    stack.invoke(
        sqs_event({"type": "confirm", "reservation_id": "h-1"}, {"type": "cancel", "reservation_id": "h-2"})
    )
    stack.invoke(sqs_event({"type": "cancel", "reservation_id": "r-2"}))
    stack.outcomes()
    assert audit_event(issuer.table, EVENT) != []  # sold, not yet numbered
    # When the issuer's function runs
    summary = issuer.run()
    # Then five tickets were numbered, every sale announced with its numbers, and the audit is clean
    assert summary["numbered"] == 3 and summary["tickets"] == 5
    announced = issuer.ticketed()
    assert sorted(n for ns in announced.values() for n in ns) == ["1", "2", "3", "4", "5"]
    assert set(announced) == {"r-1", "r-2", "h-1"}
    assert audit_event(issuer.table, EVENT) == []
    record = issuer.table.get_reservation_record("r-2")
    assert record is not None and record.ticket_first is not None and record.status.value == "CANCELLED"
    rows = list_tickets(issuer.table, EVENT, from_serial=2, limit=10)
    assert [r["serial"] for r in rows] == [2, 3, 4, 5]
    assert {r["reservation_id"]: r["status"] for r in rows}["r-2"] == "void"
    # And a second run has nothing to do
    assert issuer.run()["numbered"] == 0


def test_the_published_document_carries_the_numbers_and_filterable_attributes(
    stack: Stack, issuer: Issuer
) -> None:
    issuer.table.write_ticket_format(EVENT, TicketFormat(prefix="C26-", width=5))
    stack.invoke(sqs_event(reserve("r-1", 2)))
    stack.outcomes()
    issuer.run()
    [document] = [o for o in stack.outcomes() if o["outcome"] == "TICKETED"]
    assert document["tickets"] == ["C26-00001", "C26-00002"]
    assert document["type"] == "ticket" and document["event_id"] == EVENT


def test_a_crash_after_the_numbering_committed_loses_no_announcement_and_numbers_nothing_twice(
    stack: Stack, issuer: Issuer
) -> None:
    stack.invoke(sqs_event(reserve("r-1", 2), reserve("r-2", 1)))
    stack.outcomes()
    stack.faults.crash_after("dynamodb.TransactWriteItems")
    issuer_module.reset_container()
    with pytest.raises(SimulatedCrash):
        issuer.run()
    assert issuer.ticketed() == {}
    assert audit_event(issuer.table, EVENT) == []  # numbered, not announced yet
    issuer_module.reset_container()
    issuer.run()
    announced = issuer.ticketed()
    assert sorted(announced) == ["r-1", "r-2"]
    assert sorted(announced.values()) == [["1", "2"], ["3"]] or sorted(announced.values()) == [
        ["1"],
        ["2", "3"],
    ]
    assert audit_event(issuer.table, EVENT) == []


def test_commit_numbers_refuses_a_moved_counter_and_a_numbered_reservation(
    stack: Stack, issuer: Issuer
) -> None:
    # Given a sale numbered 1..2
    stack.invoke(sqs_event(reserve("r-1", 2), reserve("r-2", 1)))
    series = TicketSeries(EVENT, 0)
    [first, second] = sorted(issuer.table.find_unnumbered(10), key=lambda s: s.reservation_id)

    assert issuer.table.commit_numbers(plan_batch(series, 1, [first])) is None
    assert issuer.table.read_next_number(series) == 3
    # When another issuer, which read the counter before, tries to number from 1 again
    refused = issuer.table.commit_numbers(plan_batch(series, 1, [first, second]))
    # Then the counter's value and the numbered reservation come back, and nothing was written
    assert refused == NumbersRefused(counter_next=3, not_waiting=frozenset({"r-1"}))
    assert issuer.table.read_next_number(series) == 3
    # And with the right counter and only the waiting sale it commits
    assert issuer.table.commit_numbers(plan_batch(series, 3, [second])) is None
    assert [b.first for b in issuer.table.read_ledger(series)] == [1, 3]
    assert [b.first for b in issuer.table.find_unpublished_batches(10)] == [1, 3]
    published = issuer.table.find_unpublished_batches(10)
    assert issuer.table.mark_batches_published(published) == 2  # two at once (the DAL's pool)
    assert issuer.table.find_unpublished_batches(10) == []
    # Again (a batch already out of the outbox: its condition fails), and a batch never committed
    never = TicketBatch(series, 99, (TicketAssignment("r-x", 99, 1),))
    assert issuer.table.mark_batches_published([*published, never]) == 0
    assert [b.first for b in issuer.table.read_ledger(series)] == [1, 3]  # nothing created
    assert issuer.table.find_unnumbered(10) == []
    # A batch of nothing writes nothing
    assert issuer.table.commit_numbers(TicketBatch(series, 4, ())) is None


def test_the_series_count_cannot_change_once_numbered(stack: Stack, issuer: Issuer) -> None:
    assert issuer.table.read_ticket_format(EVENT) == TicketFormat()
    assert issuer.table.write_ticket_format(EVENT, TicketFormat(series=2))
    stack.invoke(sqs_event(reserve("r-1")))
    issuer.run()
    assert not issuer.table.write_ticket_format(EVENT, TicketFormat(series=3))
    assert issuer.table.write_ticket_format(EVENT, TicketFormat(series=2, prefix="X-", width=3))
    assert issuer.table.read_ticket_format(EVENT) == TicketFormat(series=2, prefix="X-", width=3)


def test_the_template_lets_the_issuer_start_its_lanes_and_never_retries_one(template: Any) -> None:
    parameter = template.document["Parameters"]["IssueLanes"]
    assert parameter["Default"] == 1 and tuple(parameter["AllowedValues"]) == ISSUER_LANE_COUNTS
    function = template.properties("IssueTicketsFunction")
    assert function["Environment"]["Variables"]["ISSUE_LANES"] == {"Ref": "IssueLanes"}
    # a lane not started waits for the next scheduled run, never a retry overlapping it
    assert function["EventInvokeConfig"] == {"MaximumRetryAttempts": 0, "MaximumEventAgeInSeconds": 60}
    policy = template.properties("IssueLanesInvokePolicy")
    assert policy["Roles"] == [{"Ref": "IssueTicketsFunctionRole"}]
    [statement] = policy["PolicyDocument"]["Statement"]
    assert statement["Action"] == "lambda:InvokeFunction"
    assert statement["Resource"] == [
        {"Fn::GetAtt": ["IssueTicketsFunction", "Arn"]},
        {"Fn::Sub": "${IssueTicketsFunction.Arn}:*"},  # an alias or version, if one is invoked
    ]


class StartedLanes:
    """Lambda's asynchronous Invoke as the lane starter: each event kept, run after the scheduled run."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self.functions: list[str] = []

    def __call__(self, function_arn: str) -> StartedLanes:
        self.functions.append(function_arn)
        return self

    def start_lanes(self, lanes: list[int], count: int, until: float) -> list[int]:
        self.events.extend(lane_event(i, count, until) for i in lanes)
        return []


def test_with_lanes_the_scheduled_run_starts_the_others_and_each_lane_numbers_its_own_series(
    stack: Stack, issuer: Issuer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given 4 lanes, the event numbered in 4 series, and 24 sales
    monkeypatch.setenv("ISSUE_LANES", "4")
    issuer_module.reset_container()
    started = StartedLanes()
    monkeypatch.setattr(issuer_module, "lane_starter", started)
    assert issuer.table.write_ticket_format(EVENT, TicketFormat(series=4))
    for batch in range(3):
        stack.invoke(sqs_event(*(reserve(f"r-{batch}-{n}") for n in range(8))))
    stack.outcomes()
    # When the scheduled run runs
    first = issuer.run()
    # Then it started lanes 1-3 (its own function, until its end) and numbered series 0 only
    assert started.functions == [LambdaContext.invoked_function_arn]
    assert [(e["lane"], e["lanes"]) for e in started.events] == [(1, 4), (2, 4), (3, 4)]
    assert 0 < first["numbered"] < 24
    announced = issuer.ticketed()  # (the outcomes are read off their queue once)
    assert all(t.startswith("0-") for ts in announced.values() for t in ts)  # "<series>-<serial>"
    # And when each lane's invocation runs, together they number every sale once, gapless
    lanes = [issuer_module.lambda_handler(event, LambdaContext()) for event in started.events]
    assert first["numbered"] + sum(r["numbered"] for r in lanes) == 24
    assert all(r["numbered"] > 0 for r in lanes)
    assert audit_event(issuer.table, EVENT) == []
    announced.update(issuer.ticketed())
    assert len(announced) == 24


def test_the_cli_audits_lists_and_shows_numbers(stack: Stack, issuer: Issuer) -> None:
    # The CLI finds the table through TABLE_NAME, which the stack fixture set.
    stack.invoke(sqs_event(reserve("r-1", 2)))
    runner = CliRunner()
    pending = runner.invoke(cli, ["tickets", "audit", EVENT])
    assert pending.exit_code == 1 and "r-1: sold, waiting for the issuer" in pending.output
    assert runner.invoke(cli, ["tickets", "audit", EVENT, "--allow-pending"]).exit_code == 0
    issuer.run()
    clean = runner.invoke(cli, ["tickets", "audit", EVENT])
    assert clean.exit_code == 0, clean.output
    listed = runner.invoke(cli, ["tickets", "list", EVENT, "--from", "2"])
    assert listed.output.split() == ["2", "r-1", "live"]
    shown = runner.invoke(cli, ["reservation", "show", "r-1", "--output", "json"])
    assert json.loads(shown.output)["tickets"] == ["1", "2"]
    # A defect makes the audit fail, one line each
    stack.dynamodb.update_item(
        TableName=stack.table_name,
        Key={"pk": {"S": f"TICKETS#{EVENT}#0"}, "sk": {"S": "COUNTER"}},
        UpdateExpression="SET next_number = :n",
        ExpressionAttributeValues={":n": {"N": "5"}},
    )
    broken = runner.invoke(cli, ["tickets", "audit", EVENT])
    assert broken.exit_code == 1
    assert "series 0: 3..4 on no ticket (gap)" in broken.output.splitlines()
