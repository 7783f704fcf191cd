"""template.yaml: the hold index, the sweeper function, its schedule, permissions and outputs."""

from __future__ import annotations

import json
from typing import Any

import pytest

from seat_inventory.dal.items import HOLDS_INDEX
from seat_inventory.settings import Settings
from tests.integration.conftest import REPO
from tests.template_support import Template


def _actions(statement: dict[str, Any]) -> list[str]:
    action = statement["Action"]
    return action if isinstance(action, list) else [action]


def _statements(template: Template, function: str) -> list[dict[str, Any]]:
    statements: list[dict[str, Any]] = []
    for policy in template.properties(function).get("Policies", []):
        if isinstance(policy, dict) and "Statement" in policy:
            for statement in policy["Statement"]:
                # A conditional statement (the admission key's, `Fn::If`): both branches, leaving
                # out AWS::NoValue.
                branches = statement["Fn::If"][1:] if "Fn::If" in statement else [statement]
                statements.extend(b for b in branches if isinstance(b, dict) and "Action" in b)
    return statements


def test_the_table_has_the_sparse_holds_index(template: Template) -> None:
    props = template.properties("InventoryTable")
    [index] = [i for i in props["GlobalSecondaryIndexes"] if i["IndexName"] == HOLDS_INDEX]
    assert index["KeySchema"] == [
        {"AttributeName": "gsi1pk", "KeyType": "HASH"},
        {"AttributeName": "gsi1sk", "KeyType": "RANGE"},
    ]
    assert index["Projection"] == {"ProjectionType": "ALL"}
    types = {a["AttributeName"]: a["AttributeType"] for a in props["AttributeDefinitions"]}
    assert (types["gsi1pk"], types["gsi1sk"]) == ("S", "N")


def test_the_sweeper_runs_on_the_schedule_parameter(template: Template) -> None:
    props = template.properties("SweepHoldsFunction")
    [event] = props["Events"].values()
    assert event["Type"] == "Schedule"
    assert event["Properties"]["Schedule"] == {"Ref": "SweepSchedule"}
    assert template.parameter_default("SweepSchedule") == "rate(1 minute)"
    module, _, function = props["Handler"].rpartition(".")
    assert callable(getattr(__import__(module, fromlist=[function]), function))
    assert props["CodeUri"].rstrip("/") == "src"


def test_the_sweeper_may_query_only_its_indexes_and_the_table_and_write_only_the_table(
    template: Template,
) -> None:
    """Holds by expiry, the offers outbox (TicketsToIssue) and the waiting lists' lanes (the table)."""
    statements = _statements(template, "SweepHoldsFunction")
    query = [s for s in statements if "dynamodb:Query" in _actions(s)]
    assert [s["Resource"] for s in query] == [
        {"Fn::Sub": "${InventoryTable.Arn}/index/HoldsByExpiry"},
        {"Fn::Sub": "${InventoryTable.Arn}/index/TicketsToIssue"},
        {"Fn::GetAtt": ["InventoryTable", "Arn"]},
    ]
    writes = {
        a
        for s in statements
        for a in _actions(s)
        if s["Resource"] == {"Fn::GetAtt": ["InventoryTable", "Arn"]}
    }
    assert {"dynamodb:UpdateItem", "dynamodb:GetItem"} <= writes
    assert not any("*" in a for s in statements for a in _actions(s))
    assert any(
        "SNSPublishMessagePolicy" in p
        for p in template.properties("SweepHoldsFunction")["Policies"]
        if isinstance(p, dict)
    )


def test_the_topic_lets_the_sweeper_publish(template: Template) -> None:
    statements = template.properties("OutcomesTopicPolicy")["PolicyDocument"]["Statement"]
    principals = [
        principal
        for s in statements
        if s["Effect"] == "Allow" and s["Action"] == "sns:Publish"
        for principal in (
            s["Principal"]["AWS"] if isinstance(s["Principal"]["AWS"], list) else [s["Principal"]["AWS"]]
        )
    ]
    assert {"Fn::GetAtt": ["SweepHoldsFunctionRole", "Arn"]} in principals


def test_the_reservation_function_may_batch_read_records(template: Template) -> None:
    actions = {a for s in _statements(template, "ReserveSeatsFunction") for a in _actions(s)}
    assert "dynamodb:BatchGetItem" in actions


def _environment(template: Template, function: str) -> dict[str, str]:
    env: dict[str, Any] = dict(template.document["Globals"]["Function"]["Environment"]["Variables"])
    env.update(template.properties(function)["Environment"]["Variables"])
    env.update({"TABLE_NAME": "t", "OUTCOMES_TOPIC_ARN": "arn"})
    return {name: str(template.resolve(value)) for name, value in env.items()}


def test_both_functions_get_the_variables_their_settings_read(template: Template) -> None:
    reserve = Settings.from_env(_environment(template, "ReserveSeatsFunction"))
    sweep = Settings.from_env(_environment(template, "SweepHoldsFunction"))
    assert reserve.max_hold_seconds == template.parameter_default("MaxHoldSeconds") == 3600
    assert sweep.rejection_record_ttl_days == template.parameter_default("RejectionRecordTtlDays")
    assert sweep.sweep_limit == 1000


@pytest.mark.parametrize(
    "output", ["SweepHoldsFunctionName", "SweepHoldsFunctionArn", "SweepHoldsErrorsAlarmName"]
)
def test_outputs_name_the_sweeper(template: Template, output: str) -> None:
    assert output in template.document["Outputs"]


def test_the_sweeper_has_its_log_group_and_error_alarm(template: Template) -> None:
    assert template.resolve(template.properties("SweepHoldsFunctionLogGroup")["RetentionInDays"]) > 0
    alarm = template.properties("SweepHoldsErrorsAlarm")
    assert (alarm["Namespace"], alarm["MetricName"]) == ("AWS/Lambda", "Errors")
    assert alarm["Dimensions"][0]["Value"] == {"Ref": "SweepHoldsFunction"}


def test_local_invoke_can_run_the_sweeper_with_the_shipped_files() -> None:
    env_file = json.loads((REPO / "events" / "env.local.json").read_text())
    assert {"TABLE_NAME", "OUTCOMES_TOPIC_ARN"} <= set(env_file["SweepHoldsFunction"])
    event = json.loads((REPO / "events" / "sweep_schedule.json").read_text())
    assert (event["source"], event["detail-type"]) == ("aws.events", "Scheduled Event")
