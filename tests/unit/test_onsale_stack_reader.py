"""`onsale.stack_reader` on AWS's answers as botocore's Stubber gives them (no network): the parts
moto cannot answer (OnDemandThroughput, GetAccountSettings, a method-level throttle, usage plans)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from seat_tools.onsale.plan import ClassShards, assess_stack
from seat_tools.onsale.stack_reader import StackReader, StackResources

OUTPUTS = {
    "InventoryTableName": "seats-table",
    "ReserveSeatsFunctionName": "seats-reserve",
    "ReservationsQueueArn": "arn:aws:sqs:us-east-1:123456789012:seats-reservations",
    "CheckoutApiId": "abc123",
    "CheckoutApiUrl": "https://abc123.execute-api.us-east-1.amazonaws.com/v1",
    "IssueTicketsFunctionName": "seats-issue",
}


@pytest.fixture
def clients() -> Iterator[dict[str, tuple[Any, Stubber]]]:
    session = boto3.session.Session(
        aws_access_key_id="testing", aws_secret_access_key="testing", region_name="us-east-1"
    )
    made = {}
    for service in ("dynamodb", "lambda", "apigateway"):
        client = session.client(service)
        made[service] = (client, Stubber(client))
    for _, stubber in made.values():
        stubber.activate()
    yield made
    for _, stubber in made.values():
        stubber.assert_no_pending_responses()
        stubber.deactivate()


def stub_stack(
    clients: dict[str, tuple[Any, Stubber]],
    *,
    table: dict[str, Any],
    mapping_state: str = "Enabled",
    reserved: int | None = None,
    stage: dict[str, Any] | None = None,
    usage_plans: list[dict[str, Any]] | None = None,
    pollers: dict[str, int] | None = None,
    issuer: bool = True,
) -> None:
    dynamodb, lambda_, apigateway = (clients[s][1] for s in ("dynamodb", "lambda", "apigateway"))
    dynamodb.add_response(
        "describe_table",
        {"Table": {"TableName": "seats-table", **table}},
        {"TableName": "seats-table"},
    )
    dynamodb.add_response(
        "describe_limits",
        {
            "AccountMaxReadCapacityUnits": 80_000,
            "AccountMaxWriteCapacityUnits": 80_000,
            "TableMaxReadCapacityUnits": 40_000,
            "TableMaxWriteCapacityUnits": 40_000,
        },
        {},
    )
    lambda_.add_response(
        "list_event_source_mappings",
        {
            "EventSourceMappings": [
                {
                    "UUID": "00000000-0000-0000-0000-000000000001",
                    "EventSourceArn": OUTPUTS["ReservationsQueueArn"],
                    "FunctionArn": "arn:aws:lambda:us-east-1:123456789012:function:another-function",
                    "BatchSize": 10,
                    "State": "Enabled",
                },
                {
                    "UUID": "00000000-0000-0000-0000-000000000002",
                    "EventSourceArn": OUTPUTS["ReservationsQueueArn"],
                    # the alias "live" while ProvisionedConcurrency is set
                    "FunctionArn": "arn:aws:lambda:us-east-1:123456789012:function:seats-reserve:live",
                    "BatchSize": 99,
                    "State": mapping_state,
                    **(
                        {"ProvisionedPollerConfig": pollers}
                        if pollers
                        else {"ScalingConfig": {"MaximumConcurrency": 50}}
                    ),
                },
            ]
        },
        {"EventSourceArn": OUTPUTS["ReservationsQueueArn"]},
    )
    lambda_.add_response(
        "get_function_concurrency",
        {"ReservedConcurrentExecutions": reserved} if reserved is not None else {},
        {"FunctionName": "seats-reserve"},
    )
    lambda_.add_response(
        "get_account_settings",
        {"AccountLimit": {"ConcurrentExecutions": 1_000, "UnreservedConcurrentExecutions": 900}},
        {},
    )
    lambda_.add_response(
        "get_function_configuration", {"MemorySize": 1769}, {"FunctionName": "seats-reserve"}
    )
    if issuer:
        lambda_.add_response(
            "get_function_configuration",
            {"MemorySize": 512, "Environment": {"Variables": {"ISSUE_LANES": "16"}}},
            {"FunctionName": "seats-issue"},
        )
    if stage is None:
        apigateway.add_client_error(
            "get_stage", "NotFoundException", "Invalid stage identifier specified", 404
        )
    else:
        apigateway.add_response("get_stage", stage, {"restApiId": "abc123", "stageName": "v1"})
    apigateway.add_response("get_usage_plans", {"items": usage_plans or []}, {})
    apigateway.add_response(
        "get_account", {"throttleSettings": {"burstLimit": 5_000, "rateLimit": 10_000.0}}, {}
    )


def read(clients: dict[str, tuple[Any, Stubber]], outputs: dict[str, str] = OUTPUTS) -> Any:
    reader = StackReader(lambda service: clients[service][0])
    return reader.read(StackResources.from_outputs(outputs), [ClassShards("GA", 50, 50)])


def test_the_reader_takes_each_setting_from_its_describe_call(
    clients: dict[str, tuple[Any, Stubber]],
) -> None:
    stub_stack(
        clients,
        table={
            "WarmThroughput": {
                "ReadUnitsPerSecond": 52_000,
                "WriteUnitsPerSecond": 210_000,
                "Status": "ACTIVE",
            },
            "OnDemandThroughput": {"MaxReadRequestUnits": -1, "MaxWriteRequestUnits": 90_000},
            "GlobalSecondaryIndexes": [
                {"IndexName": "HoldsByExpiry", "WarmThroughput": {"WriteUnitsPerSecond": 7}},
                {
                    "IndexName": "TicketsToIssue",
                    "WarmThroughput": {"ReadUnitsPerSecond": 12_000, "WriteUnitsPerSecond": 60_000},
                },
            ],
        },
        reserved=60,
        stage={
            "stageName": "v1",
            "methodSettings": {
                "*/*": {"throttlingRateLimit": 1_000.0, "throttlingBurstLimit": 2_000},
                "reservations/POST": {"throttlingRateLimit": 40_000.0, "throttlingBurstLimit": 80_000},
            },
        },
        usage_plans=[
            {
                "id": "elsewhere",
                "apiStages": [{"apiId": "other", "stage": "v1"}],
                "throttle": {"rateLimit": 1.0},
            },
            {
                "id": "ours",
                "apiStages": [{"apiId": "abc123", "stage": "v1"}],
                "throttle": {"rateLimit": 45_000.0, "burstLimit": 90_000},
            },
        ],
    )

    settings = read(clients)

    assert (settings.mapping_enabled, settings.maximum_concurrency, settings.batch_size) == (True, 50, 99)
    assert (settings.reserved_concurrency, settings.account_concurrency, settings.unreserved_concurrency) == (
        60,
        1_000,
        900,
    )
    assert (settings.warm_write_units, settings.warm_read_units) == (210_000, 52_000)
    assert (settings.max_write_units, settings.max_read_units) == (90_000, -1)
    assert (settings.quota_write_units, settings.quota_read_units) == (40_000, 40_000)
    # POST /reservations' own setting overrides the stage-wide one
    assert (settings.api_rate_limit, settings.api_burst_limit) == (40_000.0, 80_000.0)
    assert (settings.usage_plan_rate_limit, settings.usage_plan_burst_limit) == (45_000.0, 90_000.0)
    assert (settings.api_account_rate_limit, settings.api_account_burst_limit) == (10_000.0, 5_000.0)
    # each function's memory, and the TicketsToIssue index's own warm throughput
    assert (settings.reserve_memory_mb, settings.issuer_memory_mb, settings.issuer_lanes) == (1769, 512, 16)
    assert (settings.index_warm_write_units, settings.index_warm_read_units) == (60_000, 12_000)
    assert settings.event_pollers is None  # standard mode
    # at 20,000/s (35 containers at 1,769 MB, within 50): the maximum of 90,000 write units holds,
    # the quota of 40,000 does not (the table needs (20,000 x 2.02 + numbered/s x 2.17) / 0.8),
    # nor the account's API throttle, nor the issuer at 512 MB (its 16 lanes would keep up at one
    # vCPU), nor SNS's 30,000 for the sale's answers and the 16 lanes' TICKETED outcomes, nor the
    # index's 60,000 (its busiest partition, with the 16 lanes numbering about 12,000 a second)
    short = {f.key for f in assess_stack(settings, 20_000).findings if not f.ok}
    assert short == {
        "table_quota",
        "api_account_throttle",
        "issue_memory",
        "sns_quota",
        "index_warm_write_units",
    }


def test_provisioned_mode_is_read_as_its_minimum_and_maximum_pollers(
    clients: dict[str, tuple[Any, Stubber]],
) -> None:
    stub_stack(clients, table={}, pollers={"MinimumPollers": 200, "MaximumPollers": 400}, issuer=False)

    settings = read(clients, {k: v for k, v in OUTPUTS.items() if k != "IssueTicketsFunctionName"})

    assert (settings.event_pollers, settings.maximum_pollers, settings.maximum_concurrency) == (
        200,
        400,
        None,
    )
    # a stack without the issuer's output: its memory is not read, and not judged
    assert settings.issuer_memory_mb is None
    assert "issue_memory" not in {f.key for f in assess_stack(settings, 1_000).findings}
    assert settings.index_warm_write_units is None


def test_a_missing_stage_a_disabled_mapping_and_no_throttle_settings(
    clients: dict[str, tuple[Any, Stubber]],
) -> None:
    stub_stack(clients, table={}, mapping_state="Disabled")

    settings = read(clients)

    assert settings.mapping_enabled is False
    assert settings.reserved_concurrency is None
    assert (settings.api_rate_limit, settings.api_burst_limit) == (None, None)
    assert (settings.warm_write_units, settings.max_write_units) == (None, None)
    assert settings.usage_plan_rate_limit is None
    assessment = assess_stack(settings)
    assert not assessment.ready
    # nothing sells: the disabled mapping and the missing stage (the issuer's memory is not a rate)
    assert {f.key for f in assessment.findings if not f.ok} == {"maximum_concurrency", "api_throttle"}


def test_a_stage_without_throttle_settings_is_limited_by_the_account_only(
    clients: dict[str, tuple[Any, Stubber]],
) -> None:
    stub_stack(clients, table={}, stage={"stageName": "v1", "methodSettings": {}})

    settings = read(clients)

    assert settings.api_rate_limit == float("inf") and settings.api_burst_limit == float("inf")


def test_outputs_missing_from_the_stack_are_named() -> None:
    with pytest.raises(ValueError, match="no output CheckoutApiId, CheckoutApiUrl"):
        StackResources.from_outputs({k: v for k, v in OUTPUTS.items() if not k.startswith("Checkout")})
    assert StackResources.from_outputs(OUTPUTS).api_stage == "v1"
