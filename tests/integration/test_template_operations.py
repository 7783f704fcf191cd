"""template.yaml's operations: alarms and where they notify, the dashboard, Stage, logs, tags,
the IAM policies for producers and subscribers, and samconfig and docs/reference/configuration.md spelling out every parameter.

Tags and generated resources are checked on the template SAM's translator produces (what
CloudFormation receives), since SAM generates the roles, the event source mapping and the rule.
"""

from __future__ import annotations

import json
import re
import tomllib
from typing import Any

import pytest
from cfnlint.schema import PROVIDER_SCHEMA_MANAGER

from seat_inventory.observability import OUTCOME_METRICS
from tests.integration.conftest import REPO
from tests.template_support import Template, sam_translate

# The two lines every alarm carries (template.yaml, "alarms"): the stack's topic, and the
# operations topic when AlarmTopicArn is set.
ALARM_ACTIONS = [
    {"Ref": "AlarmTopic"},
    {"Fn::If": ["HasAlarmTopicArn", {"Ref": "AlarmTopicArn"}, {"Ref": "AWS::NoValue"}]},
]
STACK_TAGS = {"Service": "seat-inventory", "Stage": {"Ref": "Stage"}}
# SAM copies the functions' tags to the roles it generates, not to its schedule rules, and the
# queue's mapping is written without: they get the stack's tags, which `sam deploy` sets from
# samconfig.toml (`tags`) and CloudFormation propagates.
TAGGED_BY_THE_STACK = {"AWS::Lambda::EventSourceMapping", "AWS::Events::Rule"}


@pytest.fixture(scope="module")
def deployed(template: Template) -> dict[str, Any]:
    return sam_translate(template.document)


def resources_of(template: Template, kind: str) -> dict[str, dict[str, Any]]:
    return {lid: r for lid, r in template.document["Resources"].items() if r["Type"] == kind}


def alarms(template: Template) -> dict[str, dict[str, Any]]:
    return {lid: r["Properties"] for lid, r in resources_of(template, "AWS::CloudWatch::Alarm").items()}


def metrics_of(alarm: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    """(namespace, metric, dimensions) of a plain alarm or of each metric in a metric-math alarm."""
    if "MetricName" in alarm:
        return [
            (alarm["Namespace"], alarm["MetricName"], {d["Name"]: d["Value"] for d in alarm["Dimensions"]})
        ]
    found = []
    for query in alarm["Metrics"]:
        if "MetricStat" in query:
            metric = query["MetricStat"]["Metric"]
            dimensions = {d["Name"]: d["Value"] for d in metric["Dimensions"]}
            found.append((metric["Namespace"], metric["MetricName"], dimensions))
    return found


def samconfig() -> dict[str, Any]:
    return tomllib.loads((REPO / "samconfig.toml").read_text())


def dashboard_body(template: Template) -> dict[str, Any]:
    """The dashboard's JSON with the stack's names put in, as CloudFormation's !Sub would."""
    text = template.properties("Dashboard")["DashboardBody"]["Fn::Sub"]
    return json.loads(re.sub(r"\$\{([^}]+)\}", lambda m: f"<{m.group(1)}>", text))


# --- alarms --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("namespace", "metric", "dimension", "value"),
    [
        ("AWS/Lambda", "Errors", "FunctionName", {"Ref": "ReserveSeatsFunction"}),
        ("AWS/Lambda", "Throttles", "FunctionName", {"Ref": "ReserveSeatsFunction"}),
        ("AWS/Lambda", "Errors", "FunctionName", {"Ref": "SweepHoldsFunction"}),
        ("AWS/Lambda", "Throttles", "FunctionName", {"Ref": "SweepHoldsFunction"}),
        (
            "AWS/SQS",
            "ApproximateAgeOfOldestMessage",
            "QueueName",
            {"Fn::GetAtt": ["ReservationsQueue", "QueueName"]},
        ),
        (
            "AWS/SQS",
            "ApproximateNumberOfMessagesVisible",
            "QueueName",
            {"Fn::GetAtt": ["ReservationsDeadLetterQueue", "QueueName"]},
        ),
        ("AWS/DynamoDB", "ReadThrottleEvents", "TableName", {"Ref": "InventoryTable"}),
        ("AWS/DynamoDB", "WriteThrottleEvents", "TableName", {"Ref": "InventoryTable"}),
        ("AWS/DynamoDB", "TransactionConflict", "TableName", {"Ref": "InventoryTable"}),
    ],
)
def test_an_alarm_watches(
    template: Template, namespace: str, metric: str, dimension: str, value: Any
) -> None:
    watched = [
        (ns, name, dims.get(dimension))
        for alarm in alarms(template).values()
        for ns, name, dims in metrics_of(alarm)
    ]
    assert (namespace, metric, value) in watched


def test_every_alarm_notifies_the_stack_topic_and_the_operations_topic_on_alarm_and_ok(
    template: Template,
) -> None:
    found = alarms(template)
    assert len(found) >= 9
    for logical_id, alarm in found.items():
        assert alarm["AlarmActions"] == ALARM_ACTIONS, logical_id
        assert alarm["OKActions"] == ALARM_ACTIONS, logical_id
        assert alarm["TreatMissingData"] == "notBreaching", logical_id
        assert alarm["AlarmDescription"].strip(), logical_id


def test_the_alarm_topic_always_exists_and_email_and_ops_topic_are_optional(template: Template) -> None:
    assert "Condition" not in template.resource("AlarmTopic")
    assert template.resource("AlarmEmailSubscription")["Condition"] == "HasAlarmEmail"
    conditions = template.document["Conditions"]
    assert conditions["HasAlarmTopicArn"] == {"Fn::Not": [{"Fn::Equals": [{"Ref": "AlarmTopicArn"}, ""]}]}
    pattern = re.compile(template.document["Parameters"]["AlarmTopicArn"]["AllowedPattern"])
    assert pattern.match("") and pattern.match("arn:aws:sns:eu-west-1:123456789012:ops-pager")
    assert not pattern.match("ops-pager") and not pattern.match("arn:aws:sqs:eu-west-1:123456789012:q")


def test_the_checkout_api_alarm_and_widget_name_the_api_and_its_stage(template: Template) -> None:
    api = template.properties("CheckoutApi")
    alarm = template.properties("CheckoutApiServerErrorsAlarm")
    [(namespace, metric, dimensions)] = metrics_of(alarm)
    assert (namespace, metric) == ("AWS/ApiGateway", "5XXError")
    assert dimensions == {"ApiName": api["Name"], "Stage": api["StageName"]}
    shown = {(m[1], m[3], m[5]) for m in dashboard_metrics(template) if m[0] == "AWS/ApiGateway"}
    name = "<" + api["Name"]["Fn::Sub"].removeprefix("${").replace("}", ">", 1)
    assert ("5XXError", name, api["StageName"]) in shown and ("Count", name, api["StageName"]) in shown


def test_the_queue_age_alarm_watches_every_reservation_queue_against_the_parameter(
    template: Template,
) -> None:
    alarm = template.properties("QueueAgeAlarm")
    assert alarm["Threshold"] == {"Ref": "QueueAgeAlarmSeconds"}
    watched = [
        (q["MetricStat"]["Stat"], dimensions["QueueName"])
        for q, (_, metric, dimensions) in zip(
            [q for q in alarm["Metrics"] if "MetricStat" in q], metrics_of(alarm), strict=True
        )
        if metric == "ApproximateAgeOfOldestMessage"
    ]
    # the first queue by its resource, the others (ReservationQueues 2-4) by the names they get
    later = [template.properties(f"ReservationsQueue{i}")["QueueName"] for i in (1, 2, 3)]
    assert watched == [("Maximum", {"Fn::GetAtt": ["ReservationsQueue", "QueueName"]})] + [
        ("Maximum", name) for name in later
    ]
    shown = {m[3] for m in dashboard_metrics(template) if m[1] == "ApproximateAgeOfOldestMessage"}
    assert shown == {"<ReservationsQueue.QueueName>"} | {
        name["Fn::Sub"].replace("${AWS::StackName}", "<AWS::StackName>") for name in later
    }


def test_metric_math_alarms_return_exactly_one_series(template: Template) -> None:
    for logical_id, alarm in alarms(template).items():
        if "Metrics" in alarm:
            returned = [q["Id"] for q in alarm["Metrics"] if q.get("ReturnData", True)]
            assert len(returned) == 1, logical_id
            ids = {q["Id"] for q in alarm["Metrics"]}
            [expression] = [q["Expression"] for q in alarm["Metrics"] if q["Id"] == returned[0]]
            assert set(re.findall(r"\b[a-z][a-z_]*\b", expression)) - {"if", "fill"} <= ids, logical_id


# --- dashboard -----------------------------------------------------------------------------------


def dashboard_metrics(template: Template) -> list[list[Any]]:
    return [
        metric
        for widget in dashboard_body(template)["widgets"]
        if widget["type"] == "metric"
        for metric in widget["properties"]["metrics"]
    ]


def test_the_dashboard_shows_every_outcome_the_function_counts(template: Template) -> None:
    shown = {(m[0], m[1], m[2], m[3]) for m in dashboard_metrics(template)}
    for name in OUTCOME_METRICS.values():
        assert ("SeatInventory", name, "service", "seat-inventory") in shown, name
    namespace = template.document["Globals"]["Function"]["Environment"]["Variables"]
    assert namespace["POWERTOOLS_METRICS_NAMESPACE"] == "SeatInventory"
    assert namespace["POWERTOOLS_SERVICE_NAME"] == "seat-inventory"


@pytest.mark.parametrize(
    ("namespace", "metric"),
    [
        ("AWS/SQS", "ApproximateNumberOfMessagesVisible"),
        ("AWS/SQS", "ApproximateAgeOfOldestMessage"),
        ("AWS/DynamoDB", "TransactionConflict"),
        ("AWS/DynamoDB", "WriteThrottleEvents"),
        ("AWS/Lambda", "Errors"),
        ("AWS/Lambda", "Throttles"),
        ("AWS/Lambda", "Duration"),
    ],
)
def test_the_dashboard_shows(template: Template, namespace: str, metric: str) -> None:
    assert (namespace, metric) in {(m[0], m[1]) for m in dashboard_metrics(template)}


def test_the_dashboard_shows_every_queues_depth(template: Template) -> None:
    depth = {m[3] for m in dashboard_metrics(template) if m[1] == "ApproximateNumberOfMessagesVisible"}
    assert depth == {"<ReservationsQueue.QueueName>", "<ReservationsDeadLetterQueue.QueueName>"} | {
        f"<AWS::StackName>-reservations-{i}" for i in (1, 2, 3)
    }


def test_the_dashboard_shows_every_alarm(template: Template) -> None:
    [widget] = [w for w in dashboard_body(template)["widgets"] if w["type"] == "alarm"]
    assert sorted(widget["properties"]["alarms"]) == sorted(f"<{lid}.Arn>" for lid in alarms(template))


def test_every_dashboard_widget_names_its_region_and_fits_the_grid(template: Template) -> None:
    for widget in dashboard_body(template)["widgets"]:
        assert widget["x"] + widget["width"] <= 24
        if widget["type"] == "metric":
            assert widget["properties"]["region"] == "<AWS::Region>"
            for metric in widget["properties"]["metrics"]:
                assert isinstance(metric[-1], dict) and "label" in metric[-1], metric


# --- Stage, logs, tags ---------------------------------------------------------------------------


def test_a_production_stack_keeps_its_table(template: Template) -> None:
    assert "AWS::LanguageExtensions" in template.document["Transform"]  # Fn::If in DeletionPolicy
    table = template.resource("InventoryTable")
    assert table["DeletionPolicy"] == {"Fn::If": ["IsProduction", "Retain", "Delete"]}
    assert table["UpdateReplacePolicy"] == "Retain"
    assert table["Properties"]["DeletionProtectionEnabled"] == {"Fn::If": ["IsProduction", True, False]}
    assert template.document["Conditions"]["IsProduction"] == {"Fn::Equals": [{"Ref": "Stage"}, "production"]}
    assert "production" in template.document["Parameters"]["Stage"]["AllowedValues"]


def test_each_function_logs_to_its_own_group_kept_for_the_parameter_days(template: Template) -> None:
    groups = resources_of(template, "AWS::Logs::LogGroup")
    names = {group["Properties"]["LogGroupName"]["Fn::Sub"] for group in groups.values()}
    functions = {f"/aws/lambda/${{{lid}}}" for lid in resources_of(template, "AWS::Serverless::Function")}
    assert names == functions | {"API-Gateway-Access-Logs_${AWS::StackName}-checkout"}  # the checkout API's
    for group in groups.values():
        assert group["Properties"]["RetentionInDays"] == {"Ref": "LogRetentionInDays"}
    assert 30 in template.document["Parameters"]["LogRetentionInDays"]["AllowedValues"]


def takes_tags(kind: str) -> bool:
    schema = PROVIDER_SCHEMA_MANAGER.get_resource_schema("us-east-1", kind).schema
    return "Tags" in schema.get("properties", {})


def tags_of(resource: dict[str, Any]) -> dict[str, Any]:
    tags = resource["Properties"].get("Tags", [])
    return {t["Key"]: t["Value"] for t in tags} if isinstance(tags, list) else dict(tags)


def test_every_resource_that_takes_tags_is_tagged(deployed: dict[str, Any]) -> None:
    taggable = {lid: r for lid, r in deployed["Resources"].items() if takes_tags(r["Type"])}
    assert len(taggable) >= 20
    for logical_id, resource in taggable.items():
        if resource["Type"] in TAGGED_BY_THE_STACK:
            continue
        assert STACK_TAGS.items() <= tags_of(resource).items(), logical_id
    stack_tags = samconfig()["default"]["deploy"]["parameters"]["tags"]
    assert 'Service="seat-inventory"' in stack_tags


# --- IAM for producers and subscribers -------------------------------------------------------------


def policy(template: Template, logical_id: str) -> list[dict[str, Any]]:
    resource = template.resource(logical_id)
    assert resource["Type"] == "AWS::IAM::ManagedPolicy"
    return list(resource["Properties"]["PolicyDocument"]["Statement"])


def test_the_producer_policy_may_send_to_the_reservations_queue_only(template: Template) -> None:
    [statement] = policy(template, "ReservationsProducerPolicy")
    assert statement["Effect"] == "Allow"
    assert "sqs:SendMessage" in statement["Action"]
    assert not {"sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:PurgeQueue"} & set(statement["Action"])
    # the first reservation queue, and each further one (ReservationQueues) when the stack has it
    assert statement["Resource"] == [
        {"Fn::GetAtt": ["ReservationsQueue", "Arn"]},
        *(
            {
                "Fn::If": [
                    f"HasReservationQueue{n}",
                    {"Fn::GetAtt": [f"ReservationsQueue{n}", "Arn"]},
                    {"Ref": "AWS::NoValue"},
                ]
            }
            for n in (1, 2, 3)
        ),
    ]
    assert template.document["Outputs"]["ReservationsProducerPolicyArn"]["Value"] == {
        "Ref": "ReservationsProducerPolicy"
    }


def test_the_subscriber_policy_may_subscribe_to_the_outcomes_topic_only(template: Template) -> None:
    [statement] = policy(template, "OutcomesSubscriberPolicy")
    assert statement["Effect"] == "Allow"
    assert "sns:Subscribe" in statement["Action"]
    assert "sns:Publish" not in statement["Action"]
    assert statement["Resource"] == {"Ref": "OutcomesTopic"}
    assert template.document["Outputs"]["OutcomesSubscriberPolicyArn"]["Value"] == {
        "Ref": "OutcomesSubscriberPolicy"
    }


@pytest.mark.parametrize("output", ["AlarmTopicArn", "DashboardName", "DashboardUrl"])
def test_outputs_for_operators(template: Template, output: str) -> None:
    assert output in template.document["Outputs"]


# --- every parameter spelled out -----------------------------------------------------------------


def test_samconfig_spells_out_every_parameter_at_its_default(template: Template) -> None:
    overrides = samconfig()["default"]["deploy"]["parameters"]["parameter_overrides"]
    spelled = dict(item.split("=", 1) for item in overrides)
    parameters = template.document["Parameters"]
    assert sorted(spelled) == sorted(parameters)
    for name, value in spelled.items():
        assert value.strip('"') == str(parameters[name].get("Default", "")), name


def test_samconfig_names_the_region_for_every_command() -> None:
    config = samconfig()["default"]
    assert config["global"]["parameters"]["region"]
    assert "region" not in config["deploy"]["parameters"]  # one place only


def test_the_configuration_table_lists_every_parameter(template: Template) -> None:
    table = (REPO / "docs" / "reference" / "configuration.md").read_text()
    for name in template.document["Parameters"]:
        assert f"| `{name}` |" in table, name
