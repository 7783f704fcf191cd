"""The whole service's infrastructure on this machine, built from template.yaml.

`LocalStack` starts DynamoDB Local and the moto server, then creates what the template defines:
the table (same keys, attributes, indexes and billing mode; TTL enabled on the same attribute),
the dead-letter queue, the reservations queue with its RedrivePolicy and the topic. It exposes
the endpoints, the physical names, the function's environment (`environment()`) and the variables
the `seats` commands read (`cli_environment()`).

One deliberate difference from the template: the reservations queue's visibility timeout is, by
default, the function's timeout (30 s) instead of the template's 6 x that (180 s), so a message
the handler reports in `batchItemFailures` is retried within half a minute rather than three.
It is not shorter because a batch must not reappear while an invocation may still be working on
it (on a busy 2-core machine an invocation of 100 messages took up to 17 s). Pass
`visibility_timeout_s` for another value: the poison-message tests use 2 s so that a message
reaches the dead-letter queue within seconds; pass the template's own to be exact.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import shutil
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

import boto3
from botocore.config import Config

from seat_tools.contention.model import ContentionSettings
from seat_tools.local.engines import (
    FAKE_ACCESS_KEY_ID,
    FAKE_SECRET_ACCESS_KEY,
    ContentionProxy,
    DynamoDBLocal,
    LocalStackError,
    MotoServer,
    local_dir,
    local_session,
    repository_root,
    stop_all,
)
from seat_tools.local.function_host import FunctionHost, HostedFunction
from seat_tools.local.template import (
    DEFAULT_STACK_NAME,
    PhysicalResource,
    QueueDefinition,
    StackTemplate,
    load_template,
)
from seat_tools.stack_outputs import OUTPUT_ENV_VARS

if TYPE_CHECKING:
    from seat_tools.local.gateway import LocalApiServer

KEPT_LOG_DIRS = 10
API_URL_ENV = "SEATS_API_URL"  # the checkout API's base URL among the exports of `seats local up`
CHECKOUT_PAGE_DIR = "examples/checkout"  # the example checkout page the local API serves
# The ticket key ring the local stack makes in moto's SSM when the template's TicketKeyParameterName
# is empty (docs/guides/checkin.md): the gate's function signs and verifies with it.
LOCAL_TICKET_KEY_PARAMETER = "/seats/local/ticket-keys"
LOCAL_TICKET_KEY_ID = "local-1"
# Same spirit as the function's client config; the pool is large because the demo sends in threads.
CLIENT_CONFIG = Config(retries={"mode": "standard", "max_attempts": 5}, max_pool_connections=64)

# The AWS contention layer is on unless a caller passes aws_contention=None (docs/explanation/contention.md);
# the template's table throughput is applied on top (`table_contention`).
DEFAULT_CONTENTION = ContentionSettings()


def table_contention(template: StackTemplate, base: ContentionSettings | None = None) -> ContentionSettings:
    """`base` (default: AWS's new on-demand table) with what the template declares for its table:
    its `WarmThroughput` (which decides the partitions) and its `OnDemandThroughput` maximum.
    What the template leaves out keeps `base`'s value."""
    declared = template.table.throughput
    changes = {
        "warm_write_units_per_s": declared.warm_write_units_per_s,
        "warm_read_units_per_s": declared.warm_read_units_per_s,
        "max_write_request_units": declared.max_write_request_units,
        "max_read_request_units": declared.max_read_request_units,
    }
    given: dict[str, Any] = {name: float(value) for name, value in changes.items() if value is not None}
    return dataclasses.replace(base or ContentionSettings(), **given)


# A log folder older than this is not in use by another run and may be pruned.
PRUNE_AFTER_S = 3600


def new_log_dir(base: Path | None = None) -> Path:
    """A fresh folder for one run's engine and worker logs; older runs beyond the newest KEPT_LOG_DIRS
    are pruned once they are an hour old (a concurrent run may still be writing a newer one)."""
    root = (base or local_dir()) / "logs"
    root.mkdir(parents=True, exist_ok=True)
    for old in sorted(root.iterdir())[: -(KEPT_LOG_DIRS - 1) or None]:
        if time.time() - old.stat().st_mtime > PRUNE_AFTER_S:
            shutil.rmtree(old, ignore_errors=True)
    path = root / f"{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"
    path.mkdir(parents=True, exist_ok=True)
    return path


class LocalStack:
    """DynamoDB Local + moto (SQS, SNS) with the template's resources; a context manager that always
    stops both engines."""

    def __init__(
        self,
        *,
        template: StackTemplate | None = None,
        template_path: Path | None = None,
        parameter_overrides: Mapping[str, str] | None = None,
        stack_name: str = DEFAULT_STACK_NAME,
        visibility_timeout_s: int | None = None,
        log_dir: Path | None = None,
        dynamodb_port: int | None = None,
        moto_port: int | None = None,
        moto_host: str = "127.0.0.1",
        aws_contention: ContentionSettings | None = DEFAULT_CONTENTION,
    ) -> None:
        """`dynamodb_port`, `moto_port`: fixed ports (None or 0: free ones); `moto_host`: moto's address.
        `aws_contention`: the contention layer's settings (None: off), with the template's table
        throughput applied (`table_contention`); when it is on, the DynamoDB endpoint (and
        `dynamodb_port`) is the layer's, and DynamoDB Local behind it takes a free port."""
        self._ports = {"dynamodb": dynamodb_port, "moto": moto_port}
        self._moto_host = moto_host
        self.template = template or load_template(
            template_path, parameter_overrides=parameter_overrides, stack_name=stack_name
        )
        self.stack_name = self.template.resolver.stack_name
        self.region = self.template.resolver.region
        self.visibility_timeout_s = (
            visibility_timeout_s
            if visibility_timeout_s is not None
            else min(self.template.queue.visibility_timeout_s, self.template.function.timeout_s)
        )
        self._log_dir = log_dir
        self._dynamodb = DynamoDBLocal()
        self._moto = MotoServer()
        self.aws_contention = (
            None if aws_contention is None else table_contention(self.template, aws_contention)
        )
        self._proxy: ContentionProxy | None = None
        self._functions: FunctionHost | None = None
        self._resources: dict[str, PhysicalResource] = {}
        self._session: boto3.session.Session | None = None
        self._api: LocalApiServer | None = None

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> LocalStack:
        if self._resources:
            return self
        log_dir = self.log_dir
        layered = self.aws_contention is not None
        self._dynamodb = DynamoDBLocal(
            log_path=log_dir / "dynamodb-local.log", port=None if layered else self._ports["dynamodb"]
        )
        self._moto = MotoServer(
            log_path=log_dir / "moto-server.log", port=self._ports["moto"], host=self._moto_host
        )
        try:
            # Both take a few seconds to boot: launch both, then wait for each.
            self._dynamodb.launch()
            self._moto.launch()
            self._dynamodb.wait_until_ready()
            if self.aws_contention is not None:
                self._proxy = ContentionProxy(
                    self.aws_contention,
                    self._dynamodb.endpoint_url,
                    log_path=log_dir / "contention-proxy.log",
                    port=self._ports["dynamodb"],
                    host=self._moto_host,  # where the local services listen (containers: 0.0.0.0)
                )
                self._proxy.launch()
                self._proxy.wait_until_ready()
            self._moto.wait_until_ready()
            self._create_resources()
            self._api = self._start_api()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Stops the API, both engines and the contention layer (everything is gone: they run in memory)."""
        if self._api is not None:
            self._api.stop()
            self._api = None
        if self._functions is not None:
            self._functions.stop()
            self._functions = None
        stop_all([e for e in (self._dynamodb, self._moto, self._proxy) if e is not None])
        self._resources = {}
        self._session = None

    def engine_pids(self) -> dict[str, int]:
        """The running engines' process ids, by name (for the benchmark's CPU accounting)."""
        engines = (self._dynamodb, self._moto, self._proxy)
        return {e.name: e.pid for e in engines if e is not None and e.pid is not None}

    def contention_description(self) -> str:
        """One line saying whether the AWS contention layer is on, and its settings."""
        if self.aws_contention is None:
            return "AWS contention layer: off (DynamoDB Local alone: no conflicts, throttling or latency)"
        return self.aws_contention.describe()

    def contention_status(self) -> dict[str, Any] | None:
        """The contention layer's settings and counters, or None when it is off."""
        return self._proxy.status() if self._proxy is not None and self._proxy.pid is not None else None

    def __enter__(self) -> LocalStack:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    @property
    def log_dir(self) -> Path:
        if self._log_dir is None:
            self._log_dir = new_log_dir()
        return self._log_dir

    # ------------------------------------------------------------------ resources
    def _create_resources(self) -> None:
        template = self.template
        table_name = f"{self.stack_name}-{template.table.logical_id}"
        dynamodb = self.client("dynamodb")
        table = dynamodb.create_table(**template.table.create_table_request(table_name))["TableDescription"]
        dynamodb.get_waiter("table_exists").wait(
            TableName=table_name, WaiterConfig={"Delay": 1, "MaxAttempts": 30}
        )
        if template.table.ttl_attribute:
            dynamodb.update_time_to_live(
                TableName=table_name,
                TimeToLiveSpecification={"Enabled": True, "AttributeName": template.table.ttl_attribute},
            )
        self._resources[template.table.logical_id] = PhysicalResource(
            ref=table_name,
            attributes={
                "Arn": table["TableArn"],
                **({"StreamArn": s} if (s := table.get("LatestStreamArn")) else {}),
            },
        )
        self._create_queue(template.dead_letter_queue, visibility_timeout_s=None)
        self._create_queue(template.queue, visibility_timeout_s=self.visibility_timeout_s)

        topic = template.topic
        topic_name = topic.topic_name or f"{self.stack_name}-{topic.logical_id}" + (
            ".fifo" if topic.fifo else ""
        )
        attributes = {"FifoTopic": "true"} if topic.fifo else {}
        topic_arn = self.client("sns").create_topic(Name=topic_name, Attributes=attributes)["TopicArn"]
        self._resources[topic.logical_id] = PhysicalResource(
            ref=topic_arn, attributes={"TopicArn": topic_arn, "TopicName": topic_name}
        )
        function_name = f"{self.stack_name}-{template.function.logical_id}"
        self._resources[template.function.logical_id] = PhysicalResource(
            ref=function_name, attributes={"Arn": self.function_arn(function_name)}
        )
        for api_function in template.api_functions:
            name = f"{self.stack_name}-{api_function.logical_id}"
            self._resources[api_function.logical_id] = PhysicalResource(
                ref=name, attributes={"Arn": self.function_arn(name)}
            )
        if template.api_functions:
            self._create_ticket_keys()

    @property
    def ticket_key_parameter(self) -> str:
        """The SSM parameter of the ticket key ring: the template's, or the local stack's own."""
        return self.template.parameters.get("TicketKeyParameterName") or LOCAL_TICKET_KEY_PARAMETER

    def _create_ticket_keys(self) -> None:
        """A ticket key ring in moto's SSM unless the parameter holds one (docs/guides/checkin.md)."""
        from seat_inventory.logic.ticket_credentials import new_secret, ring_text, with_key

        ssm = self.client("ssm")
        try:
            ssm.get_parameter(Name=self.ticket_key_parameter)
        except ssm.exceptions.ParameterNotFound:
            ring = with_key(None, LOCAL_TICKET_KEY_ID, new_secret(), make_current=True)
            ssm.put_parameter(Name=self.ticket_key_parameter, Value=ring_text(ring), Type="SecureString")

    def api_function_environment(self, logical_id: str) -> dict[str, str]:
        """An API function's environment (the gate's): the template's variables resolved locally,
        the ticket key parameter, endpoints, fake credentials and region; X-Ray off."""
        function = next(f for f in self.template.api_functions if f.logical_id == logical_id)
        environment = self.template.api_function_environment(function, self._resources)
        environment.update(self._endpoint_and_credentials())
        environment["POWERTOOLS_TRACE_DISABLED"] = "true"
        environment["TICKET_KEY_PARAMETER"] = self.ticket_key_parameter
        return environment

    def _function_host(self) -> FunctionHost:
        functions = {}
        for api_function in self.template.api_functions:
            resource = self._resources[api_function.logical_id]
            functions[resource.attributes["Arn"]] = HostedFunction(
                arn=resource.attributes["Arn"],
                name=resource.ref,
                handler=api_function.handler,
                environment=self.api_function_environment(api_function.logical_id),
                timeout_s=api_function.timeout_s,
                memory_mb=api_function.memory_mb,
                log_path=self.log_dir / f"{api_function.logical_id}.log",
            )
        return FunctionHost(functions)

    def _start_api(self) -> LocalApiServer | None:
        """The template's checkout API on 127.0.0.1 (none when the template defines no CheckoutApi)."""
        from seat_tools.local.gateway import (
            ApiDefinition,
            ApiDefinitionError,
            LocalApiGateway,
            LocalApiServer,
            ServiceBackends,
        )

        resolver = self.template.resolver.with_resources(self._resources)
        try:
            api = ApiDefinition.from_template(self.template.path, resolver)
        except ApiDefinitionError:
            return None
        self._functions = self._function_host()
        gateway = LocalApiGateway(
            api,
            ServiceBackends(self.endpoints(), self.region),
            account_id=resolver.account_id,
            functions=self._functions.invoke,
        )
        page = repository_root() / CHECKOUT_PAGE_DIR
        return LocalApiServer(gateway, static_dir=page if page.is_dir() else None).start()

    @property
    def api_url(self) -> str | None:
        """The local checkout API's base URL (like the stack output CheckoutApiUrl), or None."""
        return self._api.api_url if self._api is not None else None

    @property
    def checkout_page_url(self) -> str | None:
        """The example checkout page served next to the local API, or None."""
        return (
            f"{self._api.base_url}/checkout/" if self._api is not None and self._api.serves_static else None
        )

    def _create_queue(self, queue: QueueDefinition, *, visibility_timeout_s: int | None) -> None:
        name = queue.queue_name or f"{self.stack_name}-{queue.logical_id}" + (".fifo" if queue.fifo else "")
        attributes: dict[str, str] = {
            "VisibilityTimeout": str(
                queue.visibility_timeout_s if visibility_timeout_s is None else visibility_timeout_s
            ),
        }
        optional = {
            "MessageRetentionPeriod": queue.message_retention_period_s,
            "DelaySeconds": queue.delay_seconds,
            "ReceiveMessageWaitTimeSeconds": queue.receive_wait_time_s,
        }
        attributes.update({key: str(value) for key, value in optional.items() if value is not None})
        if queue.fifo:
            attributes["FifoQueue"] = "true"
        if queue.dead_letter_queue_id is not None:
            dead_letter = self._resources[queue.dead_letter_queue_id]
            attributes["RedrivePolicy"] = json.dumps(
                {
                    "deadLetterTargetArn": dead_letter.attributes["Arn"],
                    "maxReceiveCount": queue.max_receive_count,
                }
            )
        sqs = self.client("sqs")
        url = sqs.create_queue(QueueName=name, Attributes=attributes)["QueueUrl"]
        arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        self._resources[queue.logical_id] = PhysicalResource(
            ref=url, attributes={"Arn": arn, "QueueName": name, "QueueUrl": url}
        )

    def _physical(self, logical_id: str) -> PhysicalResource:
        resource = self._resources.get(logical_id)
        if resource is None:
            raise LocalStackError("the local stack is not running")
        return resource

    def function_arn(self, function_name: str | None = None) -> str:
        name = function_name or self.function_name
        return f"arn:aws:lambda:{self.region}:{self.template.resolver.account_id}:function:{name}"

    @property
    def table_name(self) -> str:
        return self._physical(self.template.table.logical_id).ref

    @property
    def queue_url(self) -> str:
        return self._physical(self.template.queue.logical_id).ref

    @property
    def queue_arn(self) -> str:
        return self._physical(self.template.queue.logical_id).attributes["Arn"]

    @property
    def dead_letter_queue_url(self) -> str:
        return self._physical(self.template.dead_letter_queue.logical_id).ref

    @property
    def topic_arn(self) -> str:
        return self._physical(self.template.topic.logical_id).ref

    @property
    def function_name(self) -> str:
        return self._physical(self.template.function.logical_id).ref

    # ------------------------------------------------------------------ endpoints and clients
    @property
    def dynamodb_endpoint(self) -> str:
        """The contention layer's endpoint when it is on, else DynamoDB Local's."""
        return (self._proxy or self._dynamodb).endpoint_url

    @property
    def dynamodb_local_endpoint(self) -> str:
        """DynamoDB Local's own endpoint, behind the contention layer (tests put their own layer there)."""
        return self._dynamodb.endpoint_url

    @property
    def sqs_endpoint(self) -> str:
        return self._moto.endpoint_url

    @property
    def sns_endpoint(self) -> str:
        return self._moto.endpoint_url

    def endpoints(self) -> dict[str, str]:
        # The moto server stands in for SSM too (the admission and ticket key parameters).
        return {
            "dynamodb": self.dynamodb_endpoint,
            "sqs": self.sqs_endpoint,
            "sns": self.sns_endpoint,
            "ssm": self.sns_endpoint,
        }

    def session(self) -> boto3.session.Session:
        if self._session is None:
            self._session = local_session(self.region)
        return self._session

    def client(self, service: str) -> Any:
        """A boto3 client of this stack (dynamodb, sqs or sns) pointed at its local engine."""
        endpoint = self.endpoints()[service]
        return self.session().client(service, endpoint_url=endpoint, config=CLIENT_CONFIG)  # type: ignore[call-overload]

    @contextlib.contextmanager
    def visibility_timeout(self, seconds: int) -> Iterator[LocalStack]:
        """The reservations queue with another visibility timeout for the block; restored after."""
        sqs = self.client("sqs")
        sqs.set_queue_attributes(QueueUrl=self.queue_url, Attributes={"VisibilityTimeout": str(seconds)})
        try:
            yield self
        finally:
            sqs.set_queue_attributes(
                QueueUrl=self.queue_url, Attributes={"VisibilityTimeout": str(self.visibility_timeout_s)}
            )

    def queue_depth(self, queue_url: str | None = None) -> tuple[int, int]:
        """(visible, in flight) messages of a queue (the reservations queue by default)."""
        attributes = self.client("sqs").get_queue_attributes(
            QueueUrl=queue_url or self.queue_url,
            AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
        )["Attributes"]
        return int(attributes["ApproximateNumberOfMessages"]), int(
            attributes["ApproximateNumberOfMessagesNotVisible"]
        )

    # ------------------------------------------------------------------ environments
    def _endpoint_and_credentials(self) -> dict[str, str]:
        return {
            "AWS_ENDPOINT_URL_DYNAMODB": self.dynamodb_endpoint,
            "AWS_ENDPOINT_URL_SQS": self.sqs_endpoint,
            "AWS_ENDPOINT_URL_SNS": self.sns_endpoint,
            # The moto server holds the admission key parameter, if any (docs/guides/admission.md).
            "AWS_ENDPOINT_URL_SSM": self.sns_endpoint,
            "AWS_ACCESS_KEY_ID": FAKE_ACCESS_KEY_ID,
            "AWS_SECRET_ACCESS_KEY": FAKE_SECRET_ACCESS_KEY,
            "AWS_REGION": self.region,
            "AWS_DEFAULT_REGION": self.region,
        }

    def environment(self) -> dict[str, str]:
        """The function's environment: the template's variables (Globals merged, references resolved
        to the local resources) plus endpoints, fake credentials and region; X-Ray off."""
        environment = self.template.function_environment(self._resources)
        environment.update(self._endpoint_and_credentials())
        environment["POWERTOOLS_TRACE_DISABLED"] = "true"
        return environment

    def cli_environment(self) -> dict[str, str]:
        """The variables that point `seats` commands (in any shell) at this stack: endpoints,
        credentials, region and the resource names they read instead of a stack's outputs."""
        outputs = self.template.output_values(list(OUTPUT_ENV_VARS), self._resources)
        missing = sorted(set(OUTPUT_ENV_VARS) - set(outputs))
        if missing:
            raise LocalStackError("template.yaml has no Outputs " + ", ".join(missing))
        return {
            **self._endpoint_and_credentials(),
            **{variable: outputs[output] for output, variable in OUTPUT_ENV_VARS.items()},
            **({API_URL_ENV: self.api_url} if self.api_url else {}),
        }
