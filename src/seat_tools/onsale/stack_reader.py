"""Reads what `seats onsale check` weighs from a deployed stack: describe calls only, no writes.

- DynamoDB: `DescribeTable` (the table's and the TicketsToIssue index's `WarmThroughput`, the
  table's `OnDemandThroughput`) and `DescribeLimits` (the table-level quotas);
- Lambda: the reservations queue's event source mapping (`State`, `BatchSize`,
  `ScalingConfig.MaximumConcurrency`, or `ProvisionedPollerConfig`'s minimum and maximum pollers
  in provisioned mode), the reserve function's memory (`GetFunctionConfiguration`) and reserved
  concurrency (`GetFunctionConcurrency`), the ticket issuer's memory and lanes (its ISSUE_LANES)
  when the stack names it, and the account's concurrency (`GetAccountSettings`);
- API Gateway: the checkout API's stage (`GetStage`: its method settings' throttles), the usage
  plans on that stage, and the account's throttle (`GetAccount`).

The seat classes' shard counts come from the data access (`InventoryTable.get_event`), which the
command passes in. Errors are left to the command's error handling (one line, an exit code).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from seat_tools.onsale.plan import ClassShards, StackSettings

TICKETS_INDEX = "TicketsToIssue"

# Outputs of template.yaml that name what the check reads.
REQUIRED_OUTPUTS = (
    "InventoryTableName",
    "ReserveSeatsFunctionName",
    "ReservationsQueueArn",
    "CheckoutApiId",
    "CheckoutApiUrl",
)
# Outputs read when the stack has them (a stack deployed from an older template may not).
ISSUER_OUTPUT = "IssueTicketsFunctionName"
QUEUES_OUTPUT = "ReservationQueues"  # each queue's mapping is set as the first's (template.yaml)
RESERVE_METHOD_SETTING = "reservations/POST"  # GetStage's methodSettings key of POST /reservations
STAGE_METHOD_SETTING = "*/*"  # the stage-wide default the template sets
ENABLED_MAPPING_STATES = frozenset({"Enabled", "Enabling", "Updating", "Creating"})


@dataclass(frozen=True)
class StackResources:
    table_name: str
    function_name: str
    queue_arn: str
    api_id: str
    api_stage: str
    issuer_function_name: str = ""
    reservation_queues: int = 1

    @classmethod
    def from_outputs(cls, outputs: Mapping[str, str]) -> StackResources:
        """The resources named by the stack's outputs; ValueError names any output missing."""
        missing = [name for name in REQUIRED_OUTPUTS if not outputs.get(name)]
        if missing:
            raise ValueError("the stack has no output " + ", ".join(missing))
        # CheckoutApiUrl is https://<api>.execute-api.<region>.<suffix>/<stage>
        stage = outputs["CheckoutApiUrl"].rstrip("/").rsplit("/", 1)[-1]
        return cls(
            table_name=outputs["InventoryTableName"],
            function_name=outputs["ReserveSeatsFunctionName"],
            queue_arn=outputs["ReservationsQueueArn"],
            api_id=outputs["CheckoutApiId"],
            api_stage=stage,
            issuer_function_name=outputs.get(ISSUER_OUTPUT, ""),
            reservation_queues=int(outputs.get(QUEUES_OUTPUT) or 1),
        )


def function_of(function_arn: str) -> str:
    """The function's name in a function, version or alias ARN
    (arn:aws:lambda:<region>:<account>:function:<name>[:<qualifier>])."""
    parts = function_arn.split(":")
    return parts[6] if len(parts) > 6 else ""


def _error_code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", ""))


class StackReader:
    """Reads a stack's capacity settings with clients from `client(service_name)`."""

    def __init__(self, client: Callable[[str], Any]) -> None:
        self._client = client

    def read(self, resources: StackResources, classes: Sequence[ClassShards]) -> StackSettings:
        dynamodb, lambda_, apigateway = (
            self._client("dynamodb"),
            self._client("lambda"),
            self._client("apigateway"),
        )
        table = dynamodb.describe_table(TableName=resources.table_name)["Table"]
        warm = table.get("WarmThroughput") or {}
        index: dict[str, Any] = next(
            (i for i in table.get("GlobalSecondaryIndexes", []) if i.get("IndexName") == TICKETS_INDEX), {}
        )
        index_warm = index.get("WarmThroughput") or {}
        maximum = table.get("OnDemandThroughput") or {}
        limits = dynamodb.describe_limits()
        mapping = self._mapping(lambda_, resources)
        reserved = lambda_.get_function_concurrency(FunctionName=resources.function_name).get(
            "ReservedConcurrentExecutions"
        )
        account = lambda_.get_account_settings()["AccountLimit"]
        memory = lambda_.get_function_configuration(FunctionName=resources.function_name)["MemorySize"]
        issuer = (
            lambda_.get_function_configuration(FunctionName=resources.issuer_function_name)
            if resources.issuer_function_name
            else {}
        )
        issuer_memory = issuer.get("MemorySize")
        issuer_lanes = ((issuer.get("Environment") or {}).get("Variables") or {}).get("ISSUE_LANES") or 1
        pollers = mapping.get("ProvisionedPollerConfig") or {}
        api_rate, api_burst = self._stage_throttle(apigateway, resources)
        plan_rate, plan_burst = self._usage_plan_throttle(apigateway, resources)
        api_account = apigateway.get_account().get("throttleSettings", {})
        return StackSettings(
            mapping_enabled=mapping.get("State") in ENABLED_MAPPING_STATES,
            maximum_concurrency=(mapping.get("ScalingConfig") or {}).get("MaximumConcurrency"),
            batch_size=int(mapping["BatchSize"]),
            reserved_concurrency=None if reserved is None else int(reserved),
            account_concurrency=int(account["ConcurrentExecutions"]),
            unreserved_concurrency=int(account["UnreservedConcurrentExecutions"]),
            warm_write_units=warm.get("WriteUnitsPerSecond"),
            warm_read_units=warm.get("ReadUnitsPerSecond"),
            max_write_units=maximum.get("MaxWriteRequestUnits"),
            max_read_units=maximum.get("MaxReadRequestUnits"),
            quota_write_units=int(limits["TableMaxWriteCapacityUnits"]),
            quota_read_units=int(limits["TableMaxReadCapacityUnits"]),
            api_rate_limit=api_rate,
            api_burst_limit=api_burst,
            api_account_rate_limit=float(api_account.get("rateLimit", math.inf)),
            api_account_burst_limit=float(api_account.get("burstLimit", math.inf)),
            classes=tuple(classes),
            api_stage=resources.api_stage,
            usage_plan_rate_limit=plan_rate,
            usage_plan_burst_limit=plan_burst,
            event_pollers=pollers.get("MinimumPollers"),
            maximum_pollers=pollers.get("MaximumPollers"),
            reserve_memory_mb=int(memory),
            issuer_memory_mb=None if issuer_memory is None else int(issuer_memory),
            issuer_lanes=int(issuer_lanes),
            index_warm_write_units=index_warm.get("WriteUnitsPerSecond"),
            index_warm_read_units=index_warm.get("ReadUnitsPerSecond"),
            reservation_queues=resources.reservation_queues,
        )

    @staticmethod
    def _mapping(lambda_: Any, resources: StackResources) -> dict[str, Any]:
        """The function's event source mapping on the reservations queue: listed by the queue,
        since while ProvisionedConcurrency is set it invokes the function's alias "live", whose
        ARN is not the function's."""
        paginator = lambda_.get_paginator("list_event_source_mappings")
        for page in paginator.paginate(EventSourceArn=resources.queue_arn):
            for mapping in page.get("EventSourceMappings", []):
                if function_of(mapping.get("FunctionArn", "")) == resources.function_name:
                    return dict(mapping)
        raise LookupError(
            f"function {resources.function_name} has no event source mapping on {resources.queue_arn}"
        )

    @staticmethod
    def _stage_throttle(apigateway: Any, resources: StackResources) -> tuple[float | None, float | None]:
        """The throttle POST /reservations gets on the stage: its own method setting, else the
        stage-wide one, else none (infinite: only the account's applies). (None, None): no stage."""
        try:
            stage = apigateway.get_stage(restApiId=resources.api_id, stageName=resources.api_stage)
        except ClientError as exc:
            if _error_code(exc) == "NotFoundException":
                return None, None
            raise
        settings = stage.get("methodSettings") or {}
        chosen = settings.get(RESERVE_METHOD_SETTING) or settings.get(STAGE_METHOD_SETTING) or {}
        rate = chosen.get("throttlingRateLimit")
        burst = chosen.get("throttlingBurstLimit")
        return (
            math.inf if rate is None or rate < 0 else float(rate),
            math.inf if burst is None or burst < 0 else float(burst),
        )

    @staticmethod
    def _usage_plan_throttle(apigateway: Any, resources: StackResources) -> tuple[float | None, float | None]:
        """The tightest throttle of the usage plans on the stage (with ApiAuth API_KEY), or none."""
        rates: list[tuple[float, float]] = []
        paginator = apigateway.get_paginator("get_usage_plans")
        for page in paginator.paginate():
            for plan in page.get("items", []):
                stages = plan.get("apiStages", [])
                if not any(
                    s.get("apiId") == resources.api_id and s.get("stage") == resources.api_stage
                    for s in stages
                ):
                    continue
                throttle = plan.get("throttle") or {}
                if "rateLimit" in throttle:
                    rate = float(throttle["rateLimit"])
                    rates.append((rate, float(throttle.get("burstLimit", rate))))
        if not rates:
            return None, None
        return min(rates)
