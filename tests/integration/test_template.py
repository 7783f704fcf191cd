"""template.yaml: it lints, and it says what the service's guarantees rely on."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from cfnlint.api import lint, lint_file

from seat_inventory.logic.limits import MAX_RESERVATIONS_PER_TRANSACTION
from seat_inventory.logic.reserve_seats import QueueMessage, reserve_seats
from seat_inventory.settings import Settings
from seat_tools.local.template import Resolver, include_locations, load_template, read_template_document
from tests.fakes import FakeClock, InMemoryInventoryStore, RecordingPublisher
from tests.integration.conftest import REPO
from tests.template_support import Template, sam_translate

# What template.yaml brings in from its own files with AWS::Include (`sam deploy` uploads them): the
# API's definition, the alarms (resources of their own, in the Resources section) and the dashboard's body.
INCLUDED = {
    ("CheckoutApi", "DefinitionBody"): "api/openapi.yaml",
    ("Resources",): "monitoring/alarms.yaml",
    ("Dashboard", "DashboardBody"): "monitoring/dashboard.yaml",
}


def test_cfn_lint_finds_nothing() -> None:
    matches = lint_file(REPO / "template.yaml")
    assert [str(m) for m in matches] == []


def lint_as_processed(document: dict[str, Any]) -> list[str]:
    """cfn-lint over the template as CloudFormation processes it (included files in place), with
    every check: template.yaml's own cfn-lint metadata skips W8001, for conditions only the
    included files use."""
    document = copy.deepcopy(document)
    del document["Metadata"]["cfn-lint"]
    return [str(m) for m in lint(json.dumps(document))]


def test_cfn_lint_finds_nothing_in_the_template_with_its_included_files(template: Template) -> None:
    # cfn-lint does not read the files AWS::Include brings in: without this, a misspelt resource
    # or a short-form tag in api/openapi.yaml would lint clean and fail at deploy time.
    assert lint_as_processed(template.document) == []


def test_linting_with_the_included_files_finds_a_misspelt_resource_in_them(template: Template) -> None:
    document = copy.deepcopy(template.document)
    paths = document["Resources"]["CheckoutApi"]["Properties"]["DefinitionBody"]["paths"]
    integration = paths["/holds"]["post"]["x-amazon-apigateway-integration"]
    queue = integration["requestParameters"]["integration.request.path.queue"]
    queue["Fn::Sub"] = queue["Fn::Sub"].replace("ReservationsQueue.", "ReservationsQ.")
    assert any(
        match.startswith("[E1019") and "ReservationsQ" in match for match in lint_as_processed(document)
    )


def test_the_api_definition_the_alarms_and_the_dashboard_are_brought_in_from_their_own_files(
    template: Template,
) -> None:
    written = read_template_document(REPO / "template.yaml", includes=False)
    assert sorted(include_locations(written)) == sorted(INCLUDED.values())
    for place, location in INCLUDED.items():
        transform = {"Name": "AWS::Include", "Parameters": {"Location": location}}
        # safe_load knows no short-form tag (!Sub), which CloudFormation refuses in an included file
        snippet = yaml.safe_load((REPO / location).read_text())
        if place == ("Resources",):
            assert written["Resources"]["Fn::Transform"] == transform
            assert {lid: template.resource(lid) for lid in snippet} == snippet
        else:
            logical_id, name = place
            assert written["Resources"][logical_id]["Properties"][name] == {"Fn::Transform": transform}
            assert template.properties(logical_id)[name] == snippet


def test_the_table_is_on_demand_encrypted_recoverable_with_ttl(template: Template) -> None:
    props = template.properties("InventoryTable")
    assert props["BillingMode"] == "PAY_PER_REQUEST"
    assert props["SSESpecification"]["SSEEnabled"] is True
    assert props["PointInTimeRecoverySpecification"]["PointInTimeRecoveryEnabled"] is True
    assert props["TimeToLiveSpecification"] == {"AttributeName": "expires_at", "Enabled": True}
    assert [k["AttributeName"] for k in props["KeySchema"]] == ["pk", "sk"]


def _condition(template: Template, name: str, overrides: dict[str, str]) -> bool:
    """A template condition's value for parameters at their defaults, with `overrides`."""
    parameters = {n: str(p.get("Default", "")) for n, p in template.document["Parameters"].items()}
    return bool(
        Resolver(
            parameters=parameters | overrides,
            conditions=template.document["Conditions"],
            stack_name="test",
        ).condition(name)
    )


def test_the_table_is_pre_warmed_only_when_the_parameters_ask_for_more_than_a_new_tables(
    template: Template,
) -> None:
    params = template.document["Parameters"]
    # a new on-demand table's warm throughput; lower would be refused (it cannot be decreased)
    assert (
        params["TableWarmWriteUnitsPerSecond"]["Default"]
        == params["TableWarmWriteUnitsPerSecond"]["MinValue"]
        == 4000
    )
    assert (
        params["TableWarmReadUnitsPerSecond"]["Default"]
        == params["TableWarmReadUnitsPerSecond"]["MinValue"]
        == 12000
    )
    warm = template.properties("InventoryTable")["WarmThroughput"]
    assert warm == {
        "Fn::If": [
            "TableIsPrewarmed",
            {
                "WriteUnitsPerSecond": {"Ref": "TableWarmWriteUnitsPerSecond"},
                "ReadUnitsPerSecond": {"Ref": "TableWarmReadUnitsPerSecond"},
            },
            {"Ref": "AWS::NoValue"},
        ]
    }
    assert not _condition(template, "TableIsPrewarmed", {})  # the default stack pays for no pre-warming
    assert _condition(template, "TableIsPrewarmed", {"TableWarmWriteUnitsPerSecond": "100000"})
    assert _condition(template, "TableIsPrewarmed", {"TableWarmReadUnitsPerSecond": "30000"})


def test_the_event_source_runs_in_provisioned_mode_only_when_event_pollers_are_set(
    template: Template,
) -> None:
    # SQS refuses ScalingConfig.MaximumConcurrency and ProvisionedPollerConfig together: one or the other
    event = template.properties("ReserveSeatsFunctionReservationsQueueEvent")
    assert event["ScalingConfig"] == {
        "Fn::If": [
            "HasEventPollers",
            {"Ref": "AWS::NoValue"},
            {"MaximumConcurrency": {"Ref": "MaximumConcurrency"}},
        ]
    }
    assert event["ProvisionedPollerConfig"] == {
        "Fn::If": [
            "HasEventPollers",
            {
                "MinimumPollers": {"Ref": "EventPollers"},
                "MaximumPollers": {
                    "Fn::If": [
                        "HasMaximumEventPollers",
                        {"Ref": "MaximumEventPollers"},
                        {"Ref": "EventPollers"},
                    ]
                },
            },
            {"Ref": "AWS::NoValue"},
        ]
    }
    assert template.document["Parameters"]["EventPollers"]["Default"] == 0  # pollers are billed by the hour
    assert not _condition(template, "HasEventPollers", {})
    assert _condition(template, "HasEventPollers", {"EventPollers": "7"})
    # what the local stack and the simulation read: MaximumConcurrency, or 10 per poller
    standard = load_template(REPO / "template.yaml").function.event_source
    provisioned = load_template(REPO / "template.yaml", parameter_overrides={"EventPollers": "7"})
    assert (standard.maximum_concurrency, standard.event_pollers, standard.concurrency) == (10, None, 10)
    source = provisioned.function.event_source
    assert (source.maximum_concurrency, source.event_pollers, source.concurrency) == (None, 7, 70)
    assert source.maximum_pollers == 7  # no scaling above the pollers ready: the maximum is the minimum
    # with a maximum above them, the pollers ready stay EventPollers and the event source may add more
    assert not _condition(template, "HasMaximumEventPollers", {"EventPollers": "7"})
    scaling = load_template(
        REPO / "template.yaml", parameter_overrides={"EventPollers": "200", "MaximumEventPollers": "400"}
    ).function.event_source
    assert (scaling.event_pollers, scaling.maximum_pollers, scaling.concurrency) == (200, 400, 2000)


def test_provisioned_concurrency_is_on_the_alias_the_event_source_invokes_only_when_set(
    template: Template,
) -> None:
    translated = sam_translate(template.document)["Resources"]
    alias = translated["ReserveSeatsLiveAlias"]
    assert (alias["Type"], alias["Condition"]) == ("AWS::Lambda::Alias", "HasProvisionedConcurrency")
    assert alias["Properties"]["ProvisionedConcurrencyConfig"] == {
        "ProvisionedConcurrentExecutions": {"Ref": "ProvisionedConcurrency"}
    }
    assert alias["Properties"]["FunctionVersion"] == {"Fn::GetAtt": ["ReserveSeatsLiveVersion", "Version"]}
    assert translated["ReserveSeatsLiveVersion"]["Condition"] == "HasProvisionedConcurrency"
    # the queue's mapping invokes the alias while it is set, the function itself otherwise
    mapping = translated["ReserveSeatsFunctionReservationsQueueEvent"]["Properties"]
    assert mapping["FunctionName"] == {
        "Fn::If": [
            "HasProvisionedConcurrency",
            {"Ref": "ReserveSeatsLiveAlias"},
            {"Ref": "ReserveSeatsFunction"},
        ]
    }
    assert template.document["Parameters"]["ProvisionedConcurrency"]["Default"] == 0  # billed while set
    assert not _condition(template, "HasProvisionedConcurrency", {})  # Lambda refuses 0: no alias
    assert _condition(template, "HasProvisionedConcurrency", {"ProvisionedConcurrency": "70"})


def _references(value: Any, conditions: dict[str, Any]) -> set[str]:
    """The parameters and resources `value` refers to (`Ref`, `Fn::GetAtt`, `${...}` in `Fn::Sub`),
    with those of the conditions its `Fn::If`s choose by."""
    found: set[str] = set()
    if isinstance(value, dict):
        for key, inner in value.items():
            if key == "Ref":
                found.add(str(inner))
            elif key == "Fn::GetAtt":
                found.add(str(inner[0]))
            elif key == "Fn::Sub":
                text = inner if isinstance(inner, str) else inner[0]
                found |= {name.split(".")[0] for name in re.findall(r"\$\{([^}!]+)\}", text)}
                found |= _references(inner[1:] if isinstance(inner, list) else [], conditions)
            elif key == "Fn::If":
                found |= _references(conditions[inner[0]], conditions) | _references(inner[1:], conditions)
            elif key == "Condition" and isinstance(inner, str):
                found |= _references(conditions[inner], conditions)
            else:
                found |= _references(inner, conditions)
    elif isinstance(value, list):
        for inner in value:
            found |= _references(inner, conditions)
    return found


def test_the_live_version_is_published_again_when_the_code_or_a_setting_the_function_reads_changes(
    template: Template,
) -> None:
    translated = sam_translate(template.document)
    resources, conditions = translated["Resources"], translated["Conditions"]
    function = resources["ReserveSeatsFunction"]["Properties"]
    live = resources["ReserveSeatsLiveVersion"]
    assert live["Type"] == "AWS::CloudFormation::CustomResource"
    assert live["Properties"]["ServiceToken"] == {"Fn::GetAtt": ["ReserveSeatsVersionPublisher", "Arn"]}
    # Every parameter and resource the function's configuration names is among the custom
    # resource's properties: a new value changes them, and CloudFormation sends the publisher an
    # update (its code, tests/unit/test_version_publisher.py, publishes the function as it is).
    # Left out: the code (SAM's version below), the role (replaced only if its name or path
    # changed, which nothing sets), the tags and the reserved concurrency (the function's, not a
    # version's).
    unversioned = {"Code", "Role", "Tags", "ReservedConcurrentExecutions"}
    named = _references({k: v for k, v in function.items() if k not in unversioned}, conditions)
    named -= {name for name in named if name.startswith("AWS::")}
    assert {"MaxSeatsPerReservation", "LogLevel", "Tracing", "InventoryTable", "OutcomesTopic"} <= named
    assert named <= _references(live["Properties"], conditions)
    # The function's properties written as values, not names, that SAM's version does not see (it
    # sees the code, the environment as written and the memory size) are copied there as they are:
    # a new one (Layers, EphemeralStorage, ...) or an edit fails here until it is copied too.
    # The description and tags change nothing the function runs.
    seen_by_sam = {"Code", "Environment", "MemorySize"}
    written = {
        key: value
        for key, value in function.items()
        if key not in seen_by_sam | {"Role", "Tags", "Description"} and not _references(value, conditions)
    }
    assert set(written) >= {"Handler", "Runtime", "Timeout"}
    assert live["Properties"]["FunctionProperties"] == written
    # ... and SAM's version, published whenever the code or the environment as written changes
    [sam_version] = [
        lid for lid, r in resources.items() if r["Type"] == "AWS::Lambda::Version" and "Condition" not in r
    ]
    assert live["Properties"]["PublishedBySam"] == {"Ref": sam_version}
    with_other_code = sam_translate(template.document, code_uri="s3://seat-inventory-code/other.zip")
    edited = copy.deepcopy(template.document)
    edited["Resources"]["ReserveSeatsFunction"]["Properties"]["Environment"]["Variables"]["NEW_SETTING"] = "1"
    for changed in (with_other_code, sam_translate(edited)):
        assert sam_version not in changed["Resources"]
    # SAM's version alone would not do: it is named by the properties as written, so a parameter
    # value the function reads, or its memory size is set by, changes nothing there (SAM issues
    # #1640, #3820): the custom resource names both
    for name, value in (("MaxSeatsPerReservation", "4"), ("ReserveFunctionMemorySize", "1769")):
        other_value = sam_translate(template.document, parameter_values={name: value})
        assert sam_version in other_value["Resources"]
    assert "ReserveFunctionMemorySize" in named


def test_one_event_poller_is_refused_before_deployment(template: Template) -> None:
    minimum, maximum = template.document["Rules"]["EventPollersAreTwoOrMore"]["Assertions"]
    assert minimum["Assert"] == {"Fn::Not": [{"Fn::Equals": [{"Ref": "EventPollers"}, "1"]}]}
    assert maximum["Assert"] == {"Fn::Not": [{"Fn::Equals": [{"Ref": "MaximumEventPollers"}, "1"]}]}
    params = template.document["Parameters"]
    assert params["EventPollers"]["MaxValue"] == 200  # MinimumPollers' maximum
    assert params["MaximumEventPollers"]["MaxValue"] == 2000  # MaximumPollers' (CloudFormation's schema)
    # a maximum without the minimum (standard mode) is refused, not ignored
    rule = template.document["Rules"]["MaximumEventPollersNeedEventPollers"]
    assert rule["RuleCondition"] == {"Fn::Equals": [{"Ref": "EventPollers"}, "0"]}
    assert rule["Assertions"][0]["Assert"] == {"Fn::Equals": [{"Ref": "MaximumEventPollers"}, "0"]}


def test_the_tickets_index_is_pre_warmed_only_when_the_parameters_ask_for_more_than_a_new_indexs(
    template: Template,
) -> None:
    params = template.document["Parameters"]
    assert params["TicketsIndexWarmWriteUnitsPerSecond"]["Default"] == 4000
    assert params["TicketsIndexWarmReadUnitsPerSecond"]["Default"] == 12000
    [index] = [
        i
        for i in template.properties("InventoryTable")["GlobalSecondaryIndexes"]
        if i["IndexName"] == "TicketsToIssue"
    ]
    assert index["WarmThroughput"] == {
        "Fn::If": [
            "TicketsIndexIsPrewarmed",
            {
                "WriteUnitsPerSecond": {"Ref": "TicketsIndexWarmWriteUnitsPerSecond"},
                "ReadUnitsPerSecond": {"Ref": "TicketsIndexWarmReadUnitsPerSecond"},
            },
            {"Ref": "AWS::NoValue"},
        ]
    }
    assert not _condition(template, "TicketsIndexIsPrewarmed", {})
    assert _condition(template, "TicketsIndexIsPrewarmed", {"TicketsIndexWarmWriteUnitsPerSecond": "90000"})


def test_the_functions_memory_is_a_parameter_each(template: Template) -> None:
    for function, parameter in (
        ("ReserveSeatsFunction", "ReserveFunctionMemorySize"),
        ("IssueTicketsFunction", "IssueFunctionMemorySize"),
    ):
        assert template.properties(function)["MemorySize"] == {"Ref": parameter}
        assert template.document["Parameters"][parameter]["Default"] == 512
    assert load_template(REPO / "template.yaml").function.memory_mb == 512
    larger = load_template(REPO / "template.yaml", parameter_overrides={"ReserveFunctionMemorySize": "1769"})
    assert larger.function.memory_mb == 1769


def test_the_on_demand_maximum_is_set_only_for_the_sides_given(template: Template) -> None:
    params = template.document["Parameters"]
    for name in ("TableMaxWriteRequestUnits", "TableMaxReadRequestUnits"):
        assert params[name]["Default"] == params[name]["MinValue"] == -1  # -1: no maximum
    maximum = template.properties("InventoryTable")["OnDemandThroughput"]
    condition, given, absent = maximum["Fn::If"]
    assert condition == "HasTableMax" and absent == {"Ref": "AWS::NoValue"}
    assert given == {
        "MaxWriteRequestUnits": {
            "Fn::If": ["HasTableMaxWrite", {"Ref": "TableMaxWriteRequestUnits"}, {"Ref": "AWS::NoValue"}]
        },
        "MaxReadRequestUnits": {
            "Fn::If": ["HasTableMaxRead", {"Ref": "TableMaxReadRequestUnits"}, {"Ref": "AWS::NoValue"}]
        },
    }
    assert not _condition(template, "HasTableMax", {})
    only_writes = {"TableMaxWriteRequestUnits": "20000"}
    assert _condition(template, "HasTableMax", only_writes)
    assert _condition(template, "HasTableMaxWrite", only_writes)
    assert not _condition(template, "HasTableMaxRead", only_writes)
    # 0 is neither a maximum nor "none": a rule refuses it
    rule = template.document["Rules"]["TableMaximumIsNotZero"]["Assertions"]
    assert [a["Assert"] for a in rule] == [
        {"Fn::Not": [{"Fn::Equals": [{"Ref": "TableMaxWriteRequestUnits"}, "0"]}]},
        {"Fn::Not": [{"Fn::Equals": [{"Ref": "TableMaxReadRequestUnits"}, "0"]}]},
    ]


def test_the_queue_outlives_six_function_timeouts_and_redrives_to_the_dlq(template: Template) -> None:
    timeout = (
        template.properties("ReserveSeatsFunction").get("Timeout")
        or template.document["Globals"]["Function"]["Timeout"]
    )
    queue = template.properties("ReservationsQueue")
    assert queue["VisibilityTimeout"] >= 6 * timeout
    assert queue["RedrivePolicy"]["deadLetterTargetArn"] == {
        "Fn::GetAtt": ["ReservationsDeadLetterQueue", "Arn"]
    }
    assert template.resolve(queue["RedrivePolicy"]["maxReceiveCount"]) >= 1
    assert queue["SqsManagedSseEnabled"] is True
    assert template.properties("ReservationsDeadLetterQueue")["SqsManagedSseEnabled"] is True


def test_the_event_source_reports_partial_failures_and_caps_concurrency(template: Template) -> None:
    assert template.document["Resources"]["ReserveSeatsFunctionReservationsQueueEvent"]["Type"] == (
        "AWS::Lambda::EventSourceMapping"
    )
    props = template.properties("ReserveSeatsFunctionReservationsQueueEvent")
    assert props["EventSourceArn"] == {"Fn::GetAtt": ["ReservationsQueue", "Arn"]}
    assert props["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    # standard mode's cap (provisioned mode's: test_the_event_source_runs_in_provisioned_mode_...)
    assert props["ScalingConfig"]["Fn::If"][2] == {"MaximumConcurrency": {"Ref": "MaximumConcurrency"}}
    assert template.resolve(props["BatchSize"]) > 10
    assert template.resolve(props["MaximumBatchingWindowInSeconds"]) >= 1  # required above 10 per batch


def test_the_topic_is_encrypted(template: Template) -> None:
    assert template.properties("OutcomesTopic")["KmsMasterKeyId"]


def test_dlq_depth_raises_an_alarm(template: Template) -> None:
    alarm = template.properties("DeadLetterQueueAlarm")
    assert alarm["MetricName"] == "ApproximateNumberOfMessagesVisible"
    assert alarm["Dimensions"][0]["Value"] == {"Fn::GetAtt": ["ReservationsDeadLetterQueue", "QueueName"]}


def _statements(template: Template) -> list[dict[str, Any]]:
    statements: list[dict[str, Any]] = []
    for policy in template.properties("ReserveSeatsFunction").get("Policies", []):
        if isinstance(policy, dict) and "Statement" in policy:
            for statement in policy["Statement"]:
                # A conditional statement (the admission key's, `Fn::If`) counts as granted.
                granted = statement["Fn::If"][1:] if "Fn::If" in statement else [statement]
                statements.extend(g for g in granted if isinstance(g, dict) and "Action" in g)
    return statements


def test_the_function_policy_names_its_actions_and_the_table(template: Template) -> None:
    statements = _statements(template)
    actions = [
        a for s in statements for a in (s["Action"] if isinstance(s["Action"], list) else [s["Action"]])
    ]
    assert actions, "expected an explicit DynamoDB statement"
    assert not any("*" in action for action in actions)
    assert {"dynamodb:PutItem", "dynamodb:UpdateItem"} <= set(actions)
    assert not any(s.get("Resource") == "*" for s in statements)


def test_the_function_gets_every_variable_its_settings_read(template: Template) -> None:
    env = template.function_environment(overrides={"TABLE_NAME": "t", "OUTCOMES_TOPIC_ARN": "arn"})
    settings = Settings.from_env(env)
    assert settings.default_seat_class == template.parameter_default("DefaultSeatClass")
    assert settings.max_seats_per_reservation == template.parameter_default("MaxSeatsPerReservation")
    assert settings.rejection_record_ttl_days == template.parameter_default("RejectionRecordTtlDays")
    assert {"POWERTOOLS_SERVICE_NAME", "POWERTOOLS_METRICS_NAMESPACE", "LOG_LEVEL"} <= set(env)


def test_the_handler_path_imports(template: Template) -> None:
    handler = template.properties("ReserveSeatsFunction")["Handler"]
    module, _, function = handler.rpartition(".")
    imported = __import__(module, fromlist=[function])
    assert callable(getattr(imported, function))
    assert template.properties("ReserveSeatsFunction")["CodeUri"].rstrip("/") == "src"
    assert (REPO / "src" / "requirements.txt").exists()


@pytest.mark.parametrize(
    "output",
    [
        "InventoryTableName",
        "ReservationsQueueUrl",
        "DeadLetterQueueUrl",
        "OutcomesTopicArn",
        "ReserveSeatsFunctionArn",
        "DeadLetterQueueAlarmName",
    ],
)
def test_outputs_that_the_cli_and_users_need(template: Template, output: str) -> None:
    assert output in template.document["Outputs"]


def test_samconfig_points_local_invoke_at_the_shipped_env_file() -> None:
    text = (REPO / "samconfig.toml").read_text()
    assert 'env_vars = "events/env.local.json"' in text
    env_file = json.loads(Path(REPO / "events" / "env.local.json").read_text())
    assert {"TABLE_NAME", "OUTCOMES_TOPIC_ARN"} <= set(env_file["ReserveSeatsFunction"])


def test_a_full_batch_for_one_seat_class_is_one_transaction(template: Template) -> None:
    # One transaction holds the inventory update and at most 99 reservation records: a batch of
    # 100 became two transactions (99 + 1) on the hot item, each holding it in turn.
    batch_size = template.resolve(
        template.properties("ReserveSeatsFunctionReservationsQueueEvent")["BatchSize"]
    )
    store = InMemoryInventoryStore()
    store.add_event("e-1", capacity=10 * batch_size)
    messages = [
        QueueMessage(
            f"m-{n}",
            json.dumps(
                {"reservation_id": f"r-{n}", "event_id": "e-1", "quantity": 1, "customer_id": f"c-{n}"}
            ),
        )
        for n in range(batch_size)
    ]
    settings = Settings(table_name="t", outcomes_topic_arn="arn:aws:sns:us-east-1:1:t")

    result = reserve_seats(
        messages, store=store, publisher=RecordingPublisher(), settings=settings, clock=FakeClock()
    )

    assert result.seats_confirmed == batch_size
    assert store.transactions == 1
    assert batch_size <= MAX_RESERVATIONS_PER_TRANSACTION


@pytest.mark.parametrize("queues", [1, 2, 3, 4])
def test_reservation_queues_each_have_a_mapping_of_their_own_set_as_the_first(
    template: Template, queues: int
) -> None:
    # Given ReservationQueues N: the queues after the first (ReservationsQueue1 to 3) exist for N > index
    assert template.document["Parameters"]["ReservationQueues"]["Default"] == 1
    overrides = {"ReservationQueues": str(queues)}
    for index in (1, 2, 3):
        assert _condition(template, f"HasReservationQueue{index}", overrides) == (index < queues)
    first_queue = template.properties("ReservationsQueue")
    first_mapping = template.properties("ReserveSeatsFunctionReservationsQueueEvent")
    for index in (1, 2, 3):
        queue = template.resource(f"ReservationsQueue{index}")
        mapping = template.resource(f"ReserveSeatsFunctionReservationsQueue{index}Event")
        assert queue["Condition"] == mapping["Condition"] == f"HasReservationQueue{index}"
        # each queue is the first one's but for its name (-1, -2, -3: what producers compute)
        assert queue["Properties"]["QueueName"] == {"Fn::Sub": f"${{AWS::StackName}}-reservations-{index}"}
        assert {k: v for k, v in queue["Properties"].items() if k != "QueueName"} == {
            k: v for k, v in first_queue.items() if k != "QueueName"
        }
        # each mapping is the first one's (pollers, batch, concurrency) but for its queue
        assert mapping["Properties"]["EventSourceArn"] == {"Fn::Sub": f"${{ReservationsQueue{index}.Arn}}"}
        assert {k: v for k, v in mapping["Properties"].items() if k != "EventSourceArn"} == {
            k: v for k, v in first_mapping.items() if k != "EventSourceArn"
        }
    # the function may take from each, producers and the API may send to each, the dead-letter
    # queue takes each one's failures
    text = json.dumps(template.document["Resources"])
    for index in (1, 2, 3):
        arn = {
            "Fn::If": [
                f"HasReservationQueue{index}",
                {"Fn::GetAtt": [f"ReservationsQueue{index}", "Arn"]},
                {"Ref": "AWS::NoValue"},
            ]
        }
        for holder in ("ReservationsProducerPolicy", "CheckoutApiQueueRole", "ReservationsQueuePolicy"):
            assert json.dumps(arn) in json.dumps(template.resource(holder)), (holder, index)
        assert f"${{AWS::StackName}}-reservations-{index}" in json.dumps(
            template.properties("ReservationsDeadLetterQueue")["RedriveAllowPolicy"]
        )
    assert "ReservationQueuesPoll" in text


def test_the_reserve_functions_reserved_concurrency_is_set_only_when_the_parameter_asks(
    template: Template,
) -> None:
    assert template.document["Parameters"]["ReserveFunctionConcurrency"]["Default"] == 0
    assert template.properties("ReserveSeatsFunction")["ReservedConcurrentExecutions"] == {
        "Fn::If": [
            "HasReserveFunctionConcurrency",
            {"Ref": "ReserveFunctionConcurrency"},
            {"Ref": "AWS::NoValue"},
        ]
    }
    assert not _condition(template, "HasReserveFunctionConcurrency", {})
    assert _condition(template, "HasReserveFunctionConcurrency", {"ReserveFunctionConcurrency": "44"})
