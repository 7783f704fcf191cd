"""The deploy path without AWS: template.yaml -> SAM's translator -> a CloudFormation stack on moto
-> the e2e tier (tests/e2e) run against that stack through its outputs, as against a real one.

moto's CloudFormation does not run the AWS::Include transform: the template is translated with its
included files (api/openapi.yaml, monitoring/dashboard.yaml) already in place, read from this
checkout as `sam package` uploads them and CloudFormation puts them in before SAM's transform
(`seat_tools.local.template.resolve_includes`, through `tests.template_support.load_template`).

What moto's CloudFormation cannot show is checked on the translated template instead: it skips
queue and topic policies, API stages and the issuer's asynchronous-invoke configuration
(tests/integration/test_security.py, the API's and the issuer's tests check those), it has no alarms (a small model below creates them in moto's CloudWatch, checked by
test_template_operations.py too), and it cannot run a Lambda function. The function is
run here, in this process, by a poller that plays the stack's SQS event source mapping: it reads
the mapping and the function's configuration from the stack (batch size, queue, handler, the
environment CloudFormation resolved) and invokes the handler the template names.
"""

from __future__ import annotations

import copy
import io
import json
import os
import socket
import subprocess
import sys
import threading
import urllib.request
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import boto3
import pytest
import yaml
from moto.apigateway.models import RestAPI, apigateway_backends
from moto.awslambda.models import lambda_backends
from moto.cloudformation import parsing as moto_cloudformation
from moto.cloudformation.exceptions import UnformattedGetAttTemplateException
from moto.cloudwatch.models import Metric, MetricDataQuery, MetricStat, cloudwatch_backends
from moto.core.common_models import CloudFormationModel
from moto.server import ThreadedMotoServer

from seat_inventory.handlers import publish_live_version
from seat_tools.local.runner import failed_message_ids, import_handler, sqs_record
from seat_tools.onsale.stack_reader import StackReader, StackResources
from seat_tools.reservation_queues import queue_name
from tests.integration.conftest import REPO, LambdaContext
from tests.template_support import Template, sam_translate

STACK = "seat-inventory-ci"
REGION = "us-east-1"
CODE_BUCKET = "seat-inventory-ci-code"
CODE_KEY = "function.zip"
# Skipped by moto's CloudFormation (it warns and creates nothing): the policies are checked on
# the translated template by the tests named in the module docstring; the API's stage settings
# and account (its logging role) by the API's own tests.
NOT_EMULATED = {
    "AWS::SQS::QueuePolicy",
    "AWS::SNS::TopicPolicy",
    "AWS::ApiGateway::Stage",
    "AWS::ApiGateway::Account",
    "AWS::Lambda::EventInvokeConfig",
}


class CloudWatchAlarmResource(CloudFormationModel):
    """AWS::CloudWatch::Alarm for moto's CloudFormation, which has none: the alarm is created in
    moto's CloudWatch with PutMetricAlarm's parameters, so the dashboard's `${Alarm.Arn}` resolves
    and the test can read the alarms back as deployed."""

    def __init__(self, name: str, arn: str) -> None:
        self.name = name
        self.arn = arn

    @staticmethod
    def cloudformation_type() -> str:
        return "AWS::CloudWatch::Alarm"

    @staticmethod
    def cloudformation_name_type() -> str:
        return "AlarmName"

    @property
    def physical_resource_id(self) -> str:
        return self.name

    @classmethod
    def has_cfn_attr(cls, attr: str) -> bool:
        return attr == "Arn"

    def get_cfn_attribute(self, attribute_name: str) -> str:
        if attribute_name != "Arn":
            raise UnformattedGetAttTemplateException()
        return self.arn

    @classmethod
    def create_from_cloudformation_json(  # type: ignore[override]
        cls, resource_name: str, cloudformation_json: Any, account_id: str, region_name: str, **kwargs: Any
    ) -> CloudWatchAlarmResource:
        props = cloudformation_json["Properties"]
        queries = [
            MetricDataQuery(
                query_id=query["Id"],
                label=query.get("Label", ""),
                period=query["MetricStat"]["Period"] if "MetricStat" in query else None,  # type: ignore[arg-type]
                return_data=str(query.get("ReturnData", True)).lower(),
                expression=query.get("Expression"),
                metric_stat=MetricStat(
                    Metric(
                        query["MetricStat"]["Metric"]["MetricName"],
                        query["MetricStat"]["Metric"]["Namespace"],
                        query["MetricStat"]["Metric"]["Dimensions"],
                    ),
                    query["MetricStat"]["Period"],
                    query["MetricStat"]["Stat"],
                    query["MetricStat"].get("Unit", ""),
                )
                if "MetricStat" in query
                else None,
            )
            for query in props.get("Metrics", [])
        ]
        alarm = cloudwatch_backends[account_id][region_name].put_metric_alarm(
            name=props.get("AlarmName") or resource_name,
            namespace=props.get("Namespace", ""),
            metric_name=props.get("MetricName", ""),
            comparison_operator=props["ComparisonOperator"],
            evaluation_periods=int(props["EvaluationPeriods"]),
            period=int(props["Period"]) if "Period" in props else None,  # type: ignore[arg-type]
            threshold=float(props["Threshold"]),
            statistic=props.get("Statistic", ""),
            description=props.get("AlarmDescription", ""),
            dimensions=props.get("Dimensions", []),
            alarm_actions=present(props.get("AlarmActions", [])),
            ok_actions=present(props.get("OKActions", [])),
            metric_data_queries=queries or None,
            datapoints_to_alarm=int(props["DatapointsToAlarm"]) if "DatapointsToAlarm" in props else None,
            treat_missing_data=props.get("TreatMissingData"),
            tags=props.get("Tags", []),
        )
        return cls(alarm.name, alarm.alarm_arn)


def present(values: list[Any]) -> list[Any]:
    """moto resolves `!Ref AWS::NoValue` in a list to None, where CloudFormation drops the item."""
    return [value for value in values if value is not None]


def rest_api_with_its_body(
    resource_name: str, cloudformation_json: dict[str, Any], account_id: str, region_name: str, **kwargs: Any
) -> RestAPI:
    """moto's AWS::ApiGateway::RestApi ignores `Body` (the OpenAPI definition SAM puts there), so
    its deployment finds no methods; import the body as CloudFormation does."""
    properties = cloudformation_json["Properties"]
    backend = apigateway_backends[account_id][region_name]
    api = backend.create_rest_api(
        name=properties.get("Name", resource_name),
        description=properties.get("Description", ""),
        endpoint_configuration=properties.get("EndpointConfiguration"),
    )
    if "Body" in properties:
        body = copy.deepcopy(properties["Body"])
        for methods in body.get("paths", {}).values():
            for method in methods.values():
                integration = method.get("x-amazon-apigateway-integration", {})
                # moto's importer requires both, which a MOCK integration (CORS preflight) lacks
                integration.setdefault("uri", "")
                integration.setdefault("httpMethod", "POST")
        backend.put_rest_api(api.id, body, fail_on_warnings=False, mode="overwrite")
    return api


class LambdaVersionResource(CloudFormationModel):
    """AWS::Lambda::Version as moto's (it publishes a version), with the `Version` attribute an
    alias gets it by (`!GetAtt <version>.Version`), which moto's lacks. Both SAM's version
    (`AutoPublishAlias`) and, with ProvisionedConcurrency set, the template's live version."""

    def __init__(self, arn: str, version: str) -> None:
        self.arn = arn
        self.version = version

    @staticmethod
    def cloudformation_type() -> str:
        return "AWS::Lambda::Version"

    @property
    def physical_resource_id(self) -> str:
        return self.arn

    @classmethod
    def has_cfn_attr(cls, attr: str) -> bool:
        return attr == "Version"

    def get_cfn_attribute(self, attribute_name: str) -> str:
        if attribute_name != "Version":
            raise UnformattedGetAttTemplateException()
        return self.version

    @classmethod
    def create_from_cloudformation_json(  # type: ignore[override]
        cls, resource_name: str, cloudformation_json: Any, account_id: str, region_name: str, **kwargs: Any
    ) -> LambdaVersionResource:
        props = cloudformation_json["Properties"]
        published = lambda_backends[account_id][region_name].publish_version(
            props["FunctionName"], description=props.get("Description", "")
        )
        assert published is not None, f"no function {props['FunctionName']} to publish"
        return cls(published.function_arn, str(published.version))


class LambdaAliasResource(CloudFormationModel):
    """AWS::Lambda::Alias for moto's CloudFormation, which has none: SAM's `AutoPublishAlias`, and
    the alias "live" the queue's mapping invokes while ProvisionedConcurrency is set. Created in
    moto's Lambda (Ref: the alias's ARN); moto has no provisioned concurrency, so the alias's
    `ProvisionedConcurrencyConfig` is checked on the translated template (test_template.py)."""

    def __init__(self, arn: str) -> None:
        self.arn = arn

    @staticmethod
    def cloudformation_type() -> str:
        return "AWS::Lambda::Alias"

    @property
    def physical_resource_id(self) -> str:
        return self.arn

    @classmethod
    def create_from_cloudformation_json(  # type: ignore[override]
        cls, resource_name: str, cloudformation_json: Any, account_id: str, region_name: str, **kwargs: Any
    ) -> LambdaAliasResource:
        props = cloudformation_json["Properties"]
        alias = lambda_backends[account_id][region_name].create_alias(
            name=props["Name"],
            function_name=props["FunctionName"],
            function_version=str(props["FunctionVersion"]),
            description=props.get("Description", ""),
            routing_config=None,  # type: ignore[arg-type]
        )
        return cls(alias.arn)


class VersionPublisherResource(CloudFormationModel):
    """AWS::CloudFormation::CustomResource for moto's CloudFormation, which cannot run the Lambda
    function behind one: the template's ReserveSeatsLiveVersion is answered here by the publisher's
    own code (ReserveSeatsVersionPublisher's handler, `publish_live_version.answer`) with a Lambda
    client on this moto server, and takes the version it answers (`!GetAtt <it>.Version`)."""

    def __init__(self, physical_id: str, data: dict[str, str]) -> None:
        self.physical_id = physical_id
        self.data = data

    @staticmethod
    def cloudformation_type() -> str:
        return "AWS::CloudFormation::CustomResource"

    @property
    def physical_resource_id(self) -> str:
        return self.physical_id

    @classmethod
    def has_cfn_attr(cls, attr: str) -> bool:
        return attr == "Version"

    def get_cfn_attribute(self, attribute_name: str) -> str:
        if attribute_name not in self.data:
            raise UnformattedGetAttTemplateException()
        return self.data[attribute_name]

    @classmethod
    def create_from_cloudformation_json(  # type: ignore[override]
        cls, resource_name: str, cloudformation_json: Any, account_id: str, region_name: str, **kwargs: Any
    ) -> VersionPublisherResource:
        event = {"RequestType": "Create", "ResourceProperties": dict(cloudformation_json["Properties"])}
        sent = publish_live_version.answer(event, boto3.client("lambda", region_name=region_name))
        assert sent["Status"] == "SUCCESS", sent["Reason"]
        return cls(sent["PhysicalResourceId"], sent["Data"])


# moto lists the CloudFormation models once (cached): make it see the ones above (the last model
# of a type wins: the version above replaces moto's).
moto_cloudformation.get_model_list.cache_clear()
moto_cloudformation.get_model_map.cache_clear()
moto_cloudformation.get_name_type_map.cache_clear()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class DeployedStack:
    endpoint: str
    outputs: dict[str, str]
    resources: dict[str, dict[str, str]]
    cloudformation: Any


def function_package() -> bytes:
    """A zip of the function's sources: CloudFormation needs an object to point the function at
    (moto does not run it; the poller below runs the handler from this checkout)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path in sorted((REPO / "src" / "seat_inventory").rglob("*.py")):
            archive.write(path, path.relative_to(REPO / "src"))
    return buffer.getvalue()


@pytest.fixture(scope="module")
def deployed(template: Template) -> Iterator[DeployedStack]:
    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    with pytest.MonkeyPatch.context() as env:
        env.setattr(RestAPI, "create_from_cloudformation_json", rest_api_with_its_body)
        for name in (
            "AWS_PROFILE",
            "AWS_ENDPOINT_URL_DYNAMODB",
            "AWS_ENDPOINT_URL_SNS",
            "AWS_ENDPOINT_URL_SQS",
        ):
            env.delenv(name, raising=False)
        env.setenv("AWS_ACCESS_KEY_ID", "testing")
        env.setenv("AWS_SECRET_ACCESS_KEY", "testing")
        env.setenv("AWS_DEFAULT_REGION", REGION)
        env.setenv("AWS_REGION", REGION)
        env.setenv("AWS_ENDPOINT_URL", endpoint)
        try:
            session = boto3.session.Session(region_name=REGION)
            s3 = session.client("s3")
            s3.create_bucket(Bucket=CODE_BUCKET)
            s3.put_object(Bucket=CODE_BUCKET, Key=CODE_KEY, Body=function_package())
            cloudformation = session.client("cloudformation")
            body = compared_as_strings(
                sam_translate(template.document, code_uri=f"s3://{CODE_BUCKET}/{CODE_KEY}")
            )
            cloudformation.create_stack(
                StackName=STACK, TemplateBody=json.dumps(body), Capabilities=["CAPABILITY_IAM"]
            )
            [stack] = cloudformation.describe_stacks(StackName=STACK)["Stacks"]
            resources = {
                r["LogicalResourceId"]: {"type": r["ResourceType"], "id": r["PhysicalResourceId"]}
                for r in cloudformation.list_stack_resources(StackName=STACK)["StackResourceSummaries"]
            }
            yield DeployedStack(
                endpoint=endpoint,
                outputs={o["OutputKey"]: o["OutputValue"] for o in stack.get("Outputs", [])},
                resources=resources | {"_status": {"type": "", "id": stack["StackStatus"]}},
                cloudformation=cloudformation,
            )
        finally:
            # moto's backends are the process's, whatever the server's port: reset them as
            # mock_aws does on exit, or the next module deploying the same stack name finds it
            # (running this module and test_onsale_check.py alone failed: "already exists")
            urllib.request.urlopen(urllib.request.Request(f"{endpoint}/moto-api/reset", method="POST"))
            server.stop()


class EventSourcePoller:
    """Plays the stack's SQS event source mapping in this process: long-polls the queue, invokes
    the handler with Lambda's SQS event, and deletes what succeeded (ReportBatchItemFailures)."""

    def __init__(self, session: boto3.session.Session, function_name: str) -> None:
        lambda_client = session.client("lambda")
        [mapping] = lambda_client.list_event_source_mappings(FunctionName=function_name)[
            "EventSourceMappings"
        ]
        # moto would try to run the function itself (in Docker) on each SendMessage: this poller
        # takes the mapping's place, as the disabled mapping's configuration says.
        lambda_client.update_event_source_mapping(UUID=mapping["UUID"], Enabled=False)
        configuration = lambda_client.get_function_configuration(FunctionName=function_name)
        self.environment: dict[str, str] = configuration["Environment"]["Variables"]
        self.handler_path: str = configuration["Handler"]
        self.queue_arn: str = mapping["EventSourceArn"]
        self.batch_size = min(10, int(mapping["BatchSize"]))  # one ReceiveMessage per batch
        self.reports_failures = "ReportBatchItemFailures" in mapping.get("FunctionResponseTypes", [])
        self.sqs = session.client("sqs")
        self.queue_url = self.sqs.get_queue_url(QueueName=self.queue_arn.rsplit(":", 1)[1])["QueueUrl"]
        self.stop = threading.Event()
        self.invocations = 0
        self.errors: list[BaseException] = []
        self.thread = threading.Thread(target=self._run, name="event-source-poller", daemon=True)

    def start(self) -> EventSourcePoller:
        self.handler = import_handler(self.handler_path)
        self.thread.start()
        return self

    def _run(self) -> None:
        while not self.stop.is_set():
            messages = self.sqs.receive_message(
                QueueUrl=self.queue_url,
                MaxNumberOfMessages=self.batch_size,
                WaitTimeSeconds=1,
                MessageSystemAttributeNames=["All"],
                MessageAttributeNames=["All"],
            ).get("Messages", [])
            if not messages:
                continue
            event = {"Records": [sqs_record(m, queue_arn=self.queue_arn, region=REGION) for m in messages]}
            ids = {m["MessageId"] for m in messages}
            try:
                response = self.handler(event, LambdaContext())
            except Exception as exc:  # noqa: BLE001 Lambda's contract: the whole batch comes back; the test fails on it
                self.errors.append(exc)
                continue
            self.invocations += 1
            failed = failed_message_ids(response, ids) if self.reports_failures else set()
            done = [m for m in messages if m["MessageId"] not in failed]
            if done:
                self.sqs.delete_message_batch(
                    QueueUrl=self.queue_url,
                    Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(done)],
                )


def test_the_stack_reaches_create_complete_with_every_emulated_resource(
    deployed: DeployedStack, template: Template
) -> None:
    assert deployed.resources["_status"]["id"] == "CREATE_COMPLETE"
    # with the deployed code's location: SAM names its version by it
    translated = sam_translate(template.document, code_uri=f"s3://{CODE_BUCKET}/{CODE_KEY}")
    expected = {
        logical_id
        for logical_id, resource in translated["Resources"].items()
        if resource["Type"] not in NOT_EMULATED and "Condition" not in resource
    }
    assert expected <= set(deployed.resources)


def test_the_rest_api_has_every_route_of_the_included_openapi_file(deployed: DeployedStack) -> None:
    apigateway = boto3.session.Session(region_name=REGION).client(
        "apigateway", endpoint_url=deployed.endpoint
    )
    resources = apigateway.get_resources(restApiId=deployed.resources["CheckoutApi"]["id"], limit=500)[
        "items"
    ]
    routes = {r["path"]: set(r.get("resourceMethods", {})) for r in resources if r.get("resourceMethods")}
    definition = yaml.safe_load((REPO / "api" / "openapi.yaml").read_text())
    assert routes == {
        path: {method.upper() for method in methods} for path, methods in definition["paths"].items()
    }


def test_every_alarm_is_created_and_notifies_the_stack_alarm_topic(
    deployed: DeployedStack, template: Template
) -> None:
    cloudwatch = boto3.session.Session(region_name=REGION).client(
        "cloudwatch", endpoint_url=deployed.endpoint
    )
    created = {a["AlarmName"]: a for a in cloudwatch.describe_alarms()["MetricAlarms"]}
    expected = {
        deployed.resources[lid]["id"]
        for lid, r in template.document["Resources"].items()
        if r["Type"] == "AWS::CloudWatch::Alarm"
    }
    assert expected == set(created)
    for alarm in created.values():
        # AlarmTopicArn is empty by default: the stack's topic only
        assert alarm["AlarmActions"] == [deployed.outputs["AlarmTopicArn"]], alarm["AlarmName"]
        assert alarm["OKActions"] == [deployed.outputs["AlarmTopicArn"]], alarm["AlarmName"]


def test_every_output_resolves(deployed: DeployedStack, template: Template) -> None:
    unconditional = {
        name for name, output in template.document["Outputs"].items() if "Condition" not in output
    }
    assert unconditional <= set(deployed.outputs)
    assert all(value and "${" not in value for value in deployed.outputs.values())
    assert deployed.outputs["ReservationsQueueName"] == f"{STACK}-reservations"


def test_the_e2e_tier_passes_against_the_stack(
    deployed: DeployedStack, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = boto3.session.Session(region_name=REGION)
    for name in ("AWS_ENDPOINT_URL_DYNAMODB", "AWS_ENDPOINT_URL_SNS", "AWS_ENDPOINT_URL_SQS", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ENDPOINT_URL", deployed.endpoint)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    poller = EventSourcePoller(session, deployed.outputs["ReserveSeatsFunctionName"])
    for name, value in poller.environment.items():
        if value:  # the empty AWS_ENDPOINT_URL_* of the template: AWS_ENDPOINT_URL applies
            monkeypatch.setenv(name, str(value))
    from seat_inventory.handlers import reserve_seats

    reserve_seats.reset_container()
    poller.start()
    try:
        result = subprocess.run(
            [sys.executable, "-m", "pytest", "tests/e2e", "-p", "no:cacheprovider", "-q", "-rA"],
            cwd=REPO,
            env={
                **os.environ,
                "SEATS_STACK_NAME": STACK,
                "AWS_REGION": REGION,
                "AWS_ENDPOINT_URL": deployed.endpoint,
            },
            capture_output=True,
            text=True,
            timeout=480,
        )
    finally:
        poller.stop.set()
        poller.thread.join(timeout=10)
        reserve_seats.reset_container()
    report = result.stdout + result.stderr
    assert result.returncode == 0, report[-4000:]
    assert "skipped" not in report.splitlines()[-1], report[-2000:]
    e2e_tests = report.count("PASSED tests/e2e/")
    assert e2e_tests >= 2 and f"{e2e_tests} passed" in report.splitlines()[-1], report[-2000:]
    assert poller.invocations > 0 and not poller.errors, poller.errors


def compared_as_strings(body: dict[str, Any]) -> dict[str, Any]:
    """`body` with its conditions comparing Number parameters as CloudFormation does, as strings:
    moto turns a Number parameter into an int, so `!Equals [!Ref N, "0"]` was never true there
    (a stack at the defaults got the alias of ProvisionedConcurrency, which is 0)."""
    numbers = {name for name, p in body["Parameters"].items() if p.get("Type") == "Number"}

    def wrapped(value: Any) -> Any:
        if isinstance(value, dict):
            if set(value) == {"Ref"} and value["Ref"] in numbers:
                return {"Fn::Join": ["", [value]]}
            return {key: wrapped(inner) for key, inner in value.items()}
        if isinstance(value, list):
            return [wrapped(inner) for inner in value]
        return value

    return body | {"Conditions": wrapped(body["Conditions"])}


def evaluate(value: Any, conditions: dict[str, Any], parameters: dict[str, str]) -> Any:
    """A condition's value: the few intrinsics conditions use."""
    if isinstance(value, dict):
        ((name, argument),) = value.items()
        if name == "Ref":
            return parameters[argument]
        if name == "Condition":
            return evaluate(conditions[argument], conditions, parameters)
        operands = [evaluate(item, conditions, parameters) for item in argument]
        return {
            "Fn::Equals": lambda: operands[0] == operands[1],
            "Fn::Not": lambda: not operands[0],
            "Fn::And": lambda: all(operands),
            "Fn::Or": lambda: any(operands),
        }[name]()
    return value


def with_language_extensions(body: dict[str, Any], overrides: dict[str, str]) -> dict[str, Any]:
    """What the AWS::LanguageExtensions transform does for this template before the stack is
    created (moto has no such transform): `Fn::If` in DeletionPolicy and UpdateReplacePolicy
    resolved with the stack's parameters."""
    parameters = {name: str(p.get("Default", "")) for name, p in body["Parameters"].items()} | overrides
    resolved = copy.deepcopy(body)
    for resource in resolved["Resources"].values():
        for policy in ("DeletionPolicy", "UpdateReplacePolicy"):
            value = resource.get(policy)
            if isinstance(value, dict):
                condition, when_true, when_false = value["Fn::If"]
                chosen = evaluate({"Condition": condition}, body["Conditions"], parameters)
                resource[policy] = when_true if chosen else when_false
    return resolved


def create_stack_with(
    deployed: DeployedStack, template: Template, name: str, overrides: dict[str, str]
) -> dict[str, str]:
    """Creates stack `name` from the translated template with these parameters; its outputs."""
    body = with_language_extensions(
        compared_as_strings(sam_translate(template.document, code_uri=f"s3://{CODE_BUCKET}/{CODE_KEY}")),
        overrides,
    )
    deployed.cloudformation.create_stack(
        StackName=name,
        TemplateBody=json.dumps(body),
        Parameters=[{"ParameterKey": k, "ParameterValue": v} for k, v in overrides.items()],
        Capabilities=["CAPABILITY_IAM"],
    )
    [stack] = deployed.cloudformation.describe_stacks(StackName=name)["Stacks"]
    assert stack["StackStatus"] == "CREATE_COMPLETE"
    return {o["OutputKey"]: o["OutputValue"] for o in stack["Outputs"]}


@pytest.mark.parametrize("stage", ["production", "dev"])
def test_deleting_the_stack_keeps_the_table_in_production_only(
    deployed: DeployedStack, template: Template, stage: str
) -> None:
    session = boto3.session.Session(region_name=REGION)
    ops_topic = session.client("sns").create_topic(Name=f"ops-pager-{stage}")["TopicArn"]
    name = f"seat-inventory-{stage}"
    outputs = create_stack_with(deployed, template, name, {"Stage": stage, "AlarmTopicArn": ops_topic})
    dynamodb = session.client("dynamodb")
    table = dynamodb.describe_table(TableName=outputs["InventoryTableName"])["Table"]
    assert table.get("DeletionProtectionEnabled", False) is (stage == "production")
    alarms = session.client("cloudwatch").describe_alarms(AlarmNamePrefix=name)["MetricAlarms"]
    assert alarms and all(a["AlarmActions"] == [outputs["AlarmTopicArn"], ops_topic] for a in alarms)

    deployed.cloudformation.delete_stack(StackName=name)

    assert (outputs["InventoryTableName"] in dynamodb.list_tables()["TableNames"]) is (stage == "production")


@pytest.mark.parametrize(
    ("label", "overrides", "expected"),
    [
        ("default", {}, {"WriteUnitsPerSecond": 4000, "ReadUnitsPerSecond": 12000}),  # a new table's, unset
        (
            "prewarmed",
            {
                "TableWarmWriteUnitsPerSecond": "100000",
                "TableWarmReadUnitsPerSecond": "30000",
                "TicketsIndexWarmWriteUnitsPerSecond": "90000",
            },
            {"WriteUnitsPerSecond": 100000, "ReadUnitsPerSecond": 30000},
        ),
        (
            "capped",
            {"TableWarmWriteUnitsPerSecond": "8000", "TableMaxWriteRequestUnits": "20000"},
            {"WriteUnitsPerSecond": 8000, "ReadUnitsPerSecond": 12000},
        ),
    ],
)
def test_the_tables_warm_throughput_is_what_the_parameters_ask_for(
    deployed: DeployedStack,
    template: Template,
    label: str,
    overrides: dict[str, str],
    expected: dict[str, int],
) -> None:
    """moto stores WarmThroughput as CloudFormation passes it (and 4,000 / 12,000 when it is left
    out); it ignores OnDemandThroughput, so the maximum only has to let the stack be created. The
    TicketsToIssue index's own WarmThroughput is passed on only when its parameters ask for it."""
    session = boto3.session.Session(region_name=REGION)
    name = f"seat-inventory-{label}"
    outputs = create_stack_with(deployed, template, name, overrides)
    table = session.client("dynamodb").describe_table(TableName=outputs["InventoryTableName"])["Table"]
    warm = {k: v for k, v in table["WarmThroughput"].items() if k != "Status"}
    assert warm == expected
    [index] = [i for i in table["GlobalSecondaryIndexes"] if i["IndexName"] == "TicketsToIssue"]
    index_warm = {k: v for k, v in index.get("WarmThroughput", {}).items() if k != "Status"}
    if "TicketsIndexWarmWriteUnitsPerSecond" in overrides:
        assert index_warm == {"WriteUnitsPerSecond": 90000, "ReadUnitsPerSecond": 12000}
    else:
        assert index_warm.get("WriteUnitsPerSecond", 4000) == 4000
    deployed.cloudformation.delete_stack(StackName=name)


def test_with_event_pollers_the_mapping_is_created_in_provisioned_mode(
    deployed: DeployedStack, template: Template
) -> None:
    """The mapping CloudFormation creates from the translated template with EventPollers=7 and
    MaximumEventPollers=20: its event pollers, and no MaximumConcurrency (AWS refuses both
    together); at the defaults, standard mode (the conditions compared as strings:
    `compared_as_strings`). The function's memory is its parameter's."""
    session = boto3.session.Session(region_name=REGION)
    [default] = session.client("lambda").list_event_source_mappings(
        EventSourceArn=deployed.outputs["ReservationsQueueArn"]
    )["EventSourceMappings"]
    assert default["ScalingConfig"] == {"MaximumConcurrency": 10}
    assert default.get("ProvisionedPollerConfig") is None
    lambda_ = session.client("lambda")
    function = lambda_.get_function_configuration(FunctionName=deployed.outputs["ReserveSeatsFunctionName"])
    assert function["MemorySize"] == 512
    name = "seat-inventory-provisioned-mapping"
    outputs = create_stack_with(
        deployed,
        template,
        name,
        {"EventPollers": "7", "MaximumEventPollers": "20", "ReserveFunctionMemorySize": "1769"},
    )
    [mapping] = lambda_.list_event_source_mappings(FunctionName=outputs["ReserveSeatsFunctionName"])[
        "EventSourceMappings"
    ]
    assert mapping.get("ScalingConfig") is None
    assert mapping["ProvisionedPollerConfig"] == {"MinimumPollers": 7, "MaximumPollers": 20}
    function = lambda_.get_function_configuration(FunctionName=outputs["ReserveSeatsFunctionName"])
    assert function["MemorySize"] == 1769
    deployed.cloudformation.delete_stack(StackName=name)


def test_with_three_reservation_queues_each_gets_a_mapping_in_provisioned_mode(
    deployed: DeployedStack, template: Template
) -> None:
    """ReservationQueues=3 with EventPollers=167 (what `seats onsale plan --rate 40000` says):
    CloudFormation creates the queues `-reservations`, `-reservations-1` and `-reservations-2`,
    each redriving to the one dead-letter queue, and a mapping of 167 pollers on each."""
    session = boto3.session.Session(region_name=REGION)
    name = "seat-inventory-three-queues"
    outputs = create_stack_with(deployed, template, name, {"ReservationQueues": "3", "EventPollers": "167"})
    assert outputs["ReservationQueues"] == "3"
    sqs, lambda_ = session.client("sqs"), session.client("lambda")
    mappings = lambda_.list_event_source_mappings(FunctionName=outputs["ReserveSeatsFunctionName"])[
        "EventSourceMappings"
    ]
    by_queue = {m["EventSourceArn"].rsplit(":", 1)[1]: m for m in mappings}
    assert set(by_queue) == {queue_name(outputs["ReservationsQueueName"], index) for index in range(3)}
    for queue, mapping in by_queue.items():
        assert mapping["ProvisionedPollerConfig"] == {"MinimumPollers": 167, "MaximumPollers": 167}, queue
        url = sqs.get_queue_url(QueueName=queue)["QueueUrl"]
        redrive = json.loads(
            sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["RedrivePolicy"])["Attributes"][
                "RedrivePolicy"
            ]
        )
        assert redrive["deadLetterTargetArn"] == outputs["DeadLetterQueueArn"], queue
    deployed.cloudformation.delete_stack(StackName=name)


def test_with_provisioned_concurrency_the_queue_feeds_the_alias_live_on_a_version_of_the_settings(
    deployed: DeployedStack, template: Template
) -> None:
    """With ProvisionedConcurrency set, the mapping invokes the alias "live", whose version the
    template's publisher (its code, run here by `VersionPublisherResource`) published from the
    function as deployed, with the parameters' values. moto's publish_version gives the last
    version back when nothing changed, as the publisher does on AWS (tests/unit/
    test_version_publisher.py); moto has no provisioned concurrency: the alias's
    ProvisionedConcurrencyConfig is checked in test_template.py. At the defaults, the mapping
    invokes the function itself and there is no alias "live"."""
    lambda_ = boto3.session.Session(region_name=REGION).client("lambda")
    default = StackResources.from_outputs(deployed.outputs)
    assert StackReader._mapping(lambda_, default)["FunctionArn"].endswith(
        f":function:{default.function_name}"
    )
    assert "ReserveSeatsLiveAlias" not in deployed.resources
    name = "seat-inventory-provisioned-concurrency"
    outputs = create_stack_with(
        deployed, template, name, {"ProvisionedConcurrency": "3", "MaxSeatsPerReservation": "4"}
    )
    resources = StackResources.from_outputs(outputs)
    # the onsale check's reader finds the mapping by its queue
    mapping = StackReader._mapping(lambda_, resources)
    alias = lambda_.get_alias(FunctionName=resources.function_name, Name="live")
    # AWS reports the alias's ARN; moto the ARN of the version the alias points at
    version_arn = f"{alias['AliasArn'].rsplit(':', 1)[0]}:{alias['FunctionVersion']}"
    assert mapping["FunctionArn"] in {alias["AliasArn"], version_arn}
    live = lambda_.get_function_configuration(
        FunctionName=resources.function_name, Qualifier=alias["FunctionVersion"]
    )
    assert str(live["Environment"]["Variables"]["MAX_SEATS_PER_RESERVATION"]) == "4"  # moto: an int
    stack = deployed.cloudformation.list_stack_resources(StackName=name)["StackResourceSummaries"]
    physical = {r["LogicalResourceId"]: r["PhysicalResourceId"] for r in stack}
    assert physical["ReserveSeatsLiveVersion"] == f"{resources.function_name}:{alias['FunctionVersion']}"
    deployed.cloudformation.delete_stack(StackName=name)
