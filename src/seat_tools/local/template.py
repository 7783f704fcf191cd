"""Reads template.yaml, the single source of truth, into a typed description of what the local stack builds.

The table's keys and TTL, the queues' visibility timeout and redrive policy, the function's handler,
timeout and environment, and the SQS event source's batch size, batching window and maximum
concurrency are all read from the template; nothing here repeats them.

`!Ref Parameter` resolves to the parameter's Default unless overridden. References to resources
(`!Ref InventoryTable`, `!GetAtt ReservationsDeadLetterQueue.Arn`) stay symbolic until the local
stack knows the physical names, and are resolved by `Resolver.with_resources`.

Parts of the template live in their own files, brought in with CloudFormation's `AWS::Include`
transform (the checkout API's OpenAPI definition in api/openapi.yaml, the dashboard's body in
monitoring/dashboard.yaml). `read_template_document` puts them in place as CloudFormation does
(`resolve_includes`), so the local stack, the tests and the deployed stack read the same files.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from seat_tools.event_source_scaling import INVOCATIONS_PER_EVENT_POLLER
from seat_tools.local.engines import LOCAL_REGION, LocalStackError, repository_root

TEMPLATE_ENV = "SEATS_TEMPLATE"
LOCAL_ACCOUNT_ID = "123456789012"  # moto's default account; ARNs it makes carry this id
DEFAULT_STACK_NAME = "seats-local"

TABLE_ID = "InventoryTable"
QUEUE_ID = "ReservationsQueue"
DEAD_LETTER_QUEUE_ID = "ReservationsDeadLetterQueue"
TOPIC_ID = "OutcomesTopic"
FUNCTION_ID = "ReserveSeatsFunction"
# The queue's event source mapping (written out in the template: docs/guides/size-a-sale.md).
MAPPING_ID = "ReserveSeatsFunctionReservationsQueueEvent"

# Lambda's own defaults when neither the function nor Globals sets a value.
LAMBDA_DEFAULT_TIMEOUT_S = 3
LAMBDA_DEFAULT_MEMORY_MB = 128
SQS_DEFAULT_VISIBILITY_TIMEOUT_S = 30
SQS_EVENT_DEFAULT_BATCH_SIZE = 10

_INTRINSICS = (
    "And",
    "Base64",
    "Cidr",
    "Equals",
    "FindInMap",
    "GetAZs",
    "If",
    "ImportValue",
    "Join",
    "Not",
    "Or",
    "Select",
    "Split",
    "Sub",
    "Transform",
)
_SUB_VARIABLE = re.compile(r"\$\{([^}!][^}]*)\}")


class TemplateError(LocalStackError):
    """template.yaml is missing, unreadable, or lacks what the local stack needs."""


def default_template_path() -> Path:
    """$SEATS_TEMPLATE, or template.yaml at the repository root."""
    configured = os.environ.get(TEMPLATE_ENV)
    return Path(configured) if configured else repository_root() / "template.yaml"


def _safe_loader() -> type:
    """PyYAML's SafeLoader, parsed by libyaml when PyYAML was built with it (ten times faster on the
    template; the same documents and the same constructors)."""
    import yaml

    return getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _yaml_loader() -> type:
    """A SafeLoader that reads CloudFormation's short-form tags (`!Ref`, `!GetAtt`, `!Sub`, ...)
    into their long JSON form ({"Ref": ...}, {"Fn::GetAtt": [...]}, ...)."""
    try:
        import yaml
    except ImportError as exc:  # PyYAML comes with cfn-lint and the SAM CLI (dev extras)
        raise TemplateError("reading template.yaml needs PyYAML: pip install pyyaml") from exc

    class CloudFormationLoader(_safe_loader()):  # type: ignore[misc]
        pass

    def construct(node: Any, loader: Any) -> Any:
        if isinstance(node, yaml.ScalarNode):
            return loader.construct_scalar(node)
        if isinstance(node, yaml.SequenceNode):
            return loader.construct_sequence(node, deep=True)
        return loader.construct_mapping(node, deep=True)

    def ref(loader: Any, node: Any) -> Any:
        return {"Ref": construct(node, loader)}

    def get_att(loader: Any, node: Any) -> Any:
        value = construct(node, loader)
        return {"Fn::GetAtt": value.split(".", 1) if isinstance(value, str) else value}

    def condition(loader: Any, node: Any) -> Any:
        return {"Condition": construct(node, loader)}

    def function(name: str) -> Any:
        def build(loader: Any, node: Any) -> Any:
            return {f"Fn::{name}": construct(node, loader)}

        return build

    CloudFormationLoader.add_constructor("!Ref", ref)
    CloudFormationLoader.add_constructor("!GetAtt", get_att)
    CloudFormationLoader.add_constructor("!Condition", condition)
    for name in _INTRINSICS:
        CloudFormationLoader.add_constructor(f"!{name}", function(name))
    return CloudFormationLoader


def read_template_document(path: Path, *, includes: bool = True) -> dict[str, Any]:
    """The template as plain data, intrinsics in long form; with `includes`, as CloudFormation
    processes it: every local `AWS::Include` replaced by its file (`resolve_includes`), then every
    `Fn::ForEach` loop expanded (`expand_for_each`, the AWS::LanguageExtensions transform's)."""
    import yaml

    loader = _yaml_loader()
    try:
        text = path.read_text()
    except OSError as exc:
        raise TemplateError(f"cannot read the template {path}: {exc}") from exc
    try:
        document = yaml.load(text, Loader=loader)  # a SafeLoader subclass
    except yaml.YAMLError as exc:
        raise TemplateError(f"{path} is not valid YAML: {exc}") from exc
    if not isinstance(document, dict) or not isinstance(document.get("Resources"), dict):
        raise TemplateError(f"{path} has no Resources section")
    return expand_for_each(resolve_includes(document, path.parent)) if includes else document


FOR_EACH_PREFIX = "Fn::ForEach::"
_FOR_EACH_SECTIONS = ("Conditions", "Resources", "Outputs")


def expand_for_each(document: dict[str, Any]) -> dict[str, Any]:
    """`document` with every `Fn::ForEach::<Loop>: [Identifier, [items], {OutputKey: OutputValue}]`
    in its Conditions, Resources and Outputs (resource properties included) expanded as the
    AWS::LanguageExtensions transform does: the fragment once per item, with `${Identifier}` and
    `&{Identifier}` (the item without its non-alphanumeric characters) replaced in its keys and
    strings and `{"Ref": Identifier}` replaced by the item; loops may nest. Refused: a collection
    that is not a literal list of strings, and a key produced twice."""

    def substitute(value: Any, identifier: str, item: str) -> Any:
        if isinstance(value, str):
            bare = re.sub(r"[^A-Za-z0-9]", "", item)
            return value.replace(f"${{{identifier}}}", item).replace(f"&{{{identifier}}}", bare)
        if isinstance(value, list):
            return [substitute(inner, identifier, item) for inner in value]
        if isinstance(value, dict):
            if value == {"Ref": identifier}:
                return item
            return {
                substitute(key, identifier, item): substitute(inner, identifier, item)
                for key, inner in value.items()
            }
        return value

    def loop(name: str, argument: Any) -> list[tuple[str, Any]]:
        if not (isinstance(argument, list) and len(argument) == 3 and isinstance(argument[2], dict)):
            raise TemplateError(f"{name} must be [Identifier, [items], {{OutputKey: OutputValue}}]")
        identifier, collection, fragment = argument
        if not isinstance(collection, list) or not all(isinstance(item, str) for item in collection):
            raise TemplateError(
                f"{name}: only a literal list of strings is expanded here, not {collection!r}"
            )
        return [
            (key, inner)
            for item in collection
            for key, inner in expand(substitute(fragment, identifier, item)).items()
        ]

    def expand(value: Any) -> Any:
        if isinstance(value, list):
            return [expand(inner) for inner in value]
        if not isinstance(value, dict):
            return value
        expanded: dict[str, Any] = {}
        for key, inner in value.items():
            entries = loop(key, inner) if key.startswith(FOR_EACH_PREFIX) else [(key, expand(inner))]
            for new_key, new_value in entries:
                if new_key in expanded:
                    raise TemplateError(f"{new_key} is produced twice (by {key})")
                expanded[new_key] = new_value
        return expanded

    return {key: expand(value) if key in _FOR_EACH_SECTIONS else value for key, value in document.items()}


INCLUDE_TRANSFORM = "AWS::Include"


def include_location(value: Any) -> str | None:
    """The Location of `value` if it is an `AWS::Include` transform's argument
    ({"Name": "AWS::Include", "Parameters": {"Location": ...}}), else None."""
    if not isinstance(value, dict) or value.get("Name") != INCLUDE_TRANSFORM:
        return None
    location = (value.get("Parameters") or {}).get("Location")
    if not isinstance(location, str) or not location:
        raise TemplateError(f"an {INCLUDE_TRANSFORM} transform without a Location: {value!r}")
    return location


def include_locations(document: Any) -> list[str]:
    """Every local file the document brings in with `AWS::Include`, in the order written."""
    if isinstance(document, list):
        return [location for item in document for location in include_locations(item)]
    if not isinstance(document, dict):
        return []
    found: list[str] = []
    for key, value in document.items():
        location = include_location(value) if key == "Fn::Transform" else None
        found.extend([location] if location else include_locations(value))
    return found


def read_included_snippet(path: Path) -> Any:
    """A file brought in with `AWS::Include`, as CloudFormation reads it: YAML or JSON whose
    intrinsics are in long form (`Fn::Sub:`, `Ref:`); CloudFormation does not support the
    short-form tags (`!Sub`, `!Ref`) in included snippets, so they are refused here too."""
    import yaml

    try:
        text = path.read_text()
    except OSError as exc:
        raise TemplateError(f"cannot read {path}, brought in with {INCLUDE_TRANSFORM}: {exc}") from exc
    try:
        return yaml.load(text, Loader=_safe_loader())  # a SafeLoader (libyaml's when built with it)
    except yaml.constructor.ConstructorError as exc:
        tag = re.search(r"'(![^']*)'", str(exc))
        raise TemplateError(
            f"{path}: CloudFormation does not read short-form tags ({tag.group(1) if tag else exc.problem})"
            f" in a file brought in with {INCLUDE_TRANSFORM}; write the long form (Fn::Sub:, Ref:)"
        ) from exc
    except yaml.YAMLError as exc:
        raise TemplateError(f"{path} is not valid YAML: {exc}") from exc


def resolve_includes(value: Any, base_dir: Path) -> Any:
    """`value` with every `Fn::Transform: {Name: AWS::Include, Parameters: {Location: <file>}}` done
    as `sam package` and CloudFormation do it together: a relative Location is a file beside the
    template (`sam package` uploads it to S3, CloudFormation fetches it back); the file's content, a
    key-value object, replaces the `Fn::Transform`, merged with the keys beside it if any.
    CloudFormation runs these transforms first, before the template's own (AWS::LanguageExtensions,
    SAM's), and evaluates the intrinsics they bring in with the rest of the template.

    Refused, as CloudFormation refuses them: a file that includes another, and short-form tags in a
    file (`read_included_snippet`). Refused too: an s3:// Location (only the deployed stack reads
    S3), and a key set both in the file and beside the transform (CloudFormation does not document
    which would win).
    """

    def resolve(value: Any, inside: str | None) -> Any:
        if isinstance(value, list):
            return [resolve(item, inside) for item in value]
        if not isinstance(value, dict):
            return value
        location = include_location(value.get("Fn::Transform"))
        if location is None:
            return {key: resolve(item, inside) for key, item in value.items()}
        if inside is not None:
            raise TemplateError(f"{inside} includes {location}: an included file cannot include another")
        if "://" in location:
            raise TemplateError(f"{INCLUDE_TRANSFORM} of {location}: only a local file can be read here")
        snippet = read_included_snippet(base_dir / location)
        if not isinstance(snippet, dict):
            raise TemplateError(f"{location} must hold a key-value object to be included")
        siblings = {key: item for key, item in value.items() if key != "Fn::Transform"}
        clash = sorted(set(siblings) & set(snippet))
        if clash:
            raise TemplateError(f"{location} sets {', '.join(clash)}, which the template sets beside it")
        return {**resolve(siblings, inside), **resolve(snippet, location)}

    return resolve(value, None)


@dataclass(frozen=True, slots=True)
class PhysicalResource:
    """What `!Ref` and `!GetAtt` return for one resource of the running local stack."""

    ref: str
    attributes: Mapping[str, str] = field(default_factory=dict)


class Resolver:
    """Evaluates intrinsic functions against parameters, pseudo parameters, conditions and resources."""

    def __init__(
        self,
        *,
        parameters: Mapping[str, str],
        conditions: Mapping[str, Any],
        stack_name: str,
        region: str = LOCAL_REGION,
        account_id: str = LOCAL_ACCOUNT_ID,
        resources: Mapping[str, PhysicalResource] | None = None,
    ) -> None:
        self.parameters = dict(parameters)
        self.stack_name = stack_name
        self.region = region
        self.account_id = account_id
        self._conditions = dict(conditions)
        self._resources = dict(resources or {})
        self._pseudo = {
            "AWS::Region": region,
            "AWS::AccountId": account_id,
            "AWS::Partition": "aws",
            "AWS::StackName": stack_name,
            "AWS::StackId": f"arn:aws:cloudformation:{region}:{account_id}:stack/{stack_name}/local",
            "AWS::URLSuffix": "amazonaws.com",
        }

    def with_resources(self, resources: Mapping[str, PhysicalResource]) -> Resolver:
        """A resolver that also knows the physical names of the local stack's resources."""
        return Resolver(
            parameters=self.parameters,
            conditions=self._conditions,
            stack_name=self.stack_name,
            region=self.region,
            account_id=self.account_id,
            resources={**self._resources, **resources},
        )

    def condition(self, name: str) -> bool:
        if name not in self._conditions:
            raise TemplateError(f"unknown condition {name!r}")
        return bool(self.resolve(self._conditions[name]))

    def resolve(self, value: Any) -> Any:
        """The value with every intrinsic evaluated; raises TemplateError on what it cannot evaluate."""
        if isinstance(value, list):
            return [self.resolve(item) for item in value]
        if not isinstance(value, dict):
            return value
        if len(value) == 1:
            ((name, argument),) = value.items()
            if name == "Ref":
                return self._ref(argument)
            if name == "Condition":
                return self.condition(argument)
            if name.startswith("Fn::"):
                return self._function(name[4:], argument)
        return {key: self.resolve(item) for key, item in value.items()}

    def partial(self, value: Any) -> Any:
        """Like `resolve`, but an intrinsic it cannot evaluate yet (a resource not created) is kept as is."""
        if isinstance(value, list):
            return [self.partial(item) for item in value]
        if not isinstance(value, dict):
            return value
        if len(value) == 1 and (
            next(iter(value)) in ("Ref", "Condition") or next(iter(value)).startswith("Fn::")
        ):
            try:
                return self.resolve(value)
            except TemplateError:
                return value
        return {key: self.partial(item) for key, item in value.items()}

    def _ref(self, name: str) -> str:
        if name in self.parameters:
            return self.parameters[name]
        if name in self._pseudo:
            return self._pseudo[name]
        if name in self._resources:
            return self._resources[name].ref
        raise TemplateError(f"!Ref {name} cannot be resolved locally")

    def _get_att(self, logical_id: str, attribute: str) -> str:
        resource = self._resources.get(logical_id)
        if resource is None or attribute not in resource.attributes:
            raise TemplateError(f"!GetAtt {logical_id}.{attribute} cannot be resolved locally")
        return resource.attributes[attribute]

    def _sub(self, argument: Any) -> str:
        if isinstance(argument, list):
            text, variables = argument[0], {k: self.resolve(v) for k, v in argument[1].items()}
        else:
            text, variables = argument, {}

        def replace(match: re.Match[str]) -> str:
            name = match.group(1)
            if name in variables:
                return str(variables[name])
            if "." in name and name.split(".", 1)[0] in self._resources:
                return self._get_att(*name.split(".", 1))
            return str(self._ref(name))

        return _SUB_VARIABLE.sub(replace, text).replace("${!", "${")

    def _function(self, name: str, argument: Any) -> Any:
        if name == "GetAtt":
            logical_id, attribute = argument
            return self._get_att(logical_id, attribute)
        if name == "Sub":
            return self._sub(argument)
        if name == "If":
            condition, when_true, when_false = argument
            return self.resolve(when_true if self.condition(condition) else when_false)
        if name == "Equals":
            left, right = self.resolve(argument)
            return str(left) == str(right)
        if name == "Not":
            return not self.resolve(argument[0])
        if name == "And":
            return all(self.resolve(argument))
        if name == "Or":
            return any(self.resolve(argument))
        if name == "Join":
            separator, items = argument
            return str(separator).join(str(item) for item in self.resolve(items))
        if name == "Select":
            index, items = self.resolve(argument)
            return items[int(index)]
        if name == "Split":
            separator, text = self.resolve(argument)
            return str(text).split(separator)
        raise TemplateError(f"Fn::{name} is not supported by the local stack")


def _int(value: Any, what: str) -> int:
    try:
        return int(value)
    except (TypeError, ValueError) as exc:
        raise TemplateError(f"{what} must be a whole number, got {value!r}") from exc


def _float(value: Any, what: str) -> float:
    try:
        return float(value)
    except (TypeError, ValueError) as exc:
        raise TemplateError(f"{what} must be a number, got {value!r}") from exc


@dataclass(frozen=True, slots=True)
class KeyElement:
    attribute_name: str
    key_type: str  # HASH or RANGE


@dataclass(frozen=True, slots=True)
class SecondaryIndex:
    name: str
    key_schema: tuple[KeyElement, ...]
    projection: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class TableThroughput:
    """The table's `WarmThroughput` and `OnDemandThroughput` as the template sets them (None: not
    set: a new on-demand table's warm throughput, no maximum). DynamoDB Local has neither: the
    local stack's contention layer models them (docs/explanation/contention.md)."""

    warm_write_units_per_s: int | None = None
    warm_read_units_per_s: int | None = None
    max_write_request_units: int | None = None
    max_read_request_units: int | None = None


@dataclass(frozen=True, slots=True)
class TableDefinition:
    logical_id: str
    attribute_definitions: Mapping[str, str]  # attribute name -> S, N or B
    key_schema: tuple[KeyElement, ...]
    billing_mode: str
    ttl_attribute: str | None
    global_secondary_indexes: tuple[SecondaryIndex, ...] = ()
    local_secondary_indexes: tuple[SecondaryIndex, ...] = ()
    stream_view_type: str | None = None
    throughput: TableThroughput = field(default_factory=lambda: TableThroughput())

    def create_table_request(self, table_name: str) -> dict[str, Any]:
        """CreateTable arguments for this definition (PAY_PER_REQUEST unless the template says otherwise)."""

        def keys(schema: tuple[KeyElement, ...]) -> list[dict[str, str]]:
            return [{"AttributeName": k.attribute_name, "KeyType": k.key_type} for k in schema]

        request: dict[str, Any] = {
            "TableName": table_name,
            "AttributeDefinitions": [
                {"AttributeName": name, "AttributeType": kind}
                for name, kind in self.attribute_definitions.items()
            ],
            "KeySchema": keys(self.key_schema),
        }
        provisioned = {"ReadCapacityUnits": 5, "WriteCapacityUnits": 5}
        if self.billing_mode == "PROVISIONED":
            request["ProvisionedThroughput"] = provisioned
        else:
            request["BillingMode"] = "PAY_PER_REQUEST"
        if self.global_secondary_indexes:
            request["GlobalSecondaryIndexes"] = [
                {
                    "IndexName": index.name,
                    "KeySchema": keys(index.key_schema),
                    "Projection": dict(index.projection),
                    **({"ProvisionedThroughput": provisioned} if self.billing_mode == "PROVISIONED" else {}),
                }
                for index in self.global_secondary_indexes
            ]
        if self.local_secondary_indexes:
            request["LocalSecondaryIndexes"] = [
                {
                    "IndexName": index.name,
                    "KeySchema": keys(index.key_schema),
                    "Projection": dict(index.projection),
                }
                for index in self.local_secondary_indexes
            ]
        if self.stream_view_type:
            request["StreamSpecification"] = {"StreamEnabled": True, "StreamViewType": self.stream_view_type}
        return request


@dataclass(frozen=True, slots=True)
class QueueDefinition:
    logical_id: str
    queue_name: str | None  # None: CloudFormation would generate one
    visibility_timeout_s: int
    message_retention_period_s: int | None
    dead_letter_queue_id: str | None
    max_receive_count: int | None
    fifo: bool = False
    delay_seconds: int | None = None
    receive_wait_time_s: int | None = None


@dataclass(frozen=True, slots=True)
class TopicDefinition:
    logical_id: str
    topic_name: str | None
    fifo: bool = False


@dataclass(frozen=True, slots=True)
class SqsEventSource:
    name: str
    queue_id: str
    batch_size: int
    maximum_batching_window_s: float
    maximum_concurrency: int | None
    report_batch_item_failures: bool
    enabled: bool = True
    # ProvisionedPollerConfig (provisioned mode): MinimumPollers, the pollers running before the
    # first message, and MaximumPollers, the most the event source scales up to.
    event_pollers: int | None = None
    maximum_pollers: int | None = None

    @property
    def concurrency(self) -> int | None:
        """Most invocations at once from the first message: MaximumConcurrency, or 10 per event
        poller running then (None: no cap set)."""
        if self.event_pollers:
            return self.event_pollers * INVOCATIONS_PER_EVENT_POLLER
        return self.maximum_concurrency


@dataclass(frozen=True, slots=True)
class FunctionDefinition:
    logical_id: str
    handler: str
    runtime: str | None
    timeout_s: int
    memory_mb: int
    environment: Mapping[str, Any]  # Globals merged; values may still refer to resources
    event_source: SqsEventSource


@dataclass(frozen=True, slots=True)
class ApiFunction:
    """A function the checkout API invokes (an `AWS::Lambda::Permission` lets API Gateway call it):
    the local gateway runs it for its Lambda proxy routes (docs/guides/checkin.md)."""

    logical_id: str
    handler: str
    timeout_s: int
    memory_mb: int
    environment: Mapping[str, Any]  # Globals merged; values may still refer to resources


@dataclass(frozen=True, slots=True)
class ScheduledFunction:
    """A function run by an EventBridge schedule (the hold sweeper): what the local runner repeats."""

    logical_id: str
    handler: str
    schedule: str  # the template's expression, e.g. "rate(1 minute)"
    interval_s: float
    timeout_s: int


_RATE = re.compile(r"rate\(\s*(\d+)\s+(minute|minutes|hour|hours|day|days)\s*\)")
_RATE_UNIT_S = {"minute": 60, "hour": 3600, "day": 86400}


def schedule_interval_s(expression: str) -> float:
    """Seconds between runs of a `rate(...)` expression; a `cron(...)` runs once a minute locally."""
    match = _RATE.fullmatch(expression.strip())
    if match:
        return float(int(match.group(1)) * _RATE_UNIT_S[match.group(2).rstrip("s")])
    if expression.strip().startswith("cron("):
        return 60.0
    raise TemplateError(f"unsupported schedule expression {expression!r}")


@dataclass(frozen=True, slots=True)
class StackTemplate:
    """Everything the local stack builds, as the template defines it."""

    path: Path
    resolver: Resolver
    table: TableDefinition
    queue: QueueDefinition
    dead_letter_queue: QueueDefinition
    topic: TopicDefinition
    function: FunctionDefinition
    outputs: Mapping[str, Any] = field(default_factory=dict)  # output name -> unresolved Value
    scheduled_functions: tuple[ScheduledFunction, ...] = ()
    api_functions: tuple[ApiFunction, ...] = ()

    @property
    def parameters(self) -> Mapping[str, str]:
        return self.resolver.parameters

    def api_function_environment(
        self, function: ApiFunction, resources: Mapping[str, PhysicalResource]
    ) -> dict[str, str]:
        """An API function's environment variables with every reference resolved locally."""
        resolver = self.resolver.with_resources(resources)
        return {name: str(resolver.resolve(value)) for name, value in function.environment.items()}

    def function_environment(self, resources: Mapping[str, PhysicalResource]) -> dict[str, str]:
        """The function's environment variables with every reference resolved to a local resource."""
        resolver = self.resolver.with_resources(resources)
        return {name: str(resolver.resolve(value)) for name, value in self.function.environment.items()}

    def output_values(self, names: list[str], resources: Mapping[str, PhysicalResource]) -> dict[str, str]:
        """The named stack Outputs as the local stack would report them (unknown names are skipped)."""
        resolver = self.resolver.with_resources(resources)
        return {name: str(resolver.resolve(self.outputs[name])) for name in names if name in self.outputs}


def _resource(document: Mapping[str, Any], logical_id: str, kind: str) -> Mapping[str, Any]:
    resource = document["Resources"].get(logical_id)
    if not isinstance(resource, dict):
        raise TemplateError(f"template has no resource {logical_id!r}")
    if resource.get("Type") != kind:
        raise TemplateError(f"{logical_id} is a {resource.get('Type')}, expected {kind}")
    properties = resource.get("Properties") or {}
    return properties if isinstance(properties, dict) else {}


def _parameters(document: Mapping[str, Any], overrides: Mapping[str, str]) -> dict[str, str]:
    declared = document.get("Parameters") or {}
    unknown = sorted(set(overrides) - set(declared))
    if unknown:
        raise TemplateError("unknown template parameter(s): " + ", ".join(unknown))
    values: dict[str, str] = {}
    for name, spec in declared.items():
        if name in overrides:
            values[name] = str(overrides[name])
        elif isinstance(spec, dict) and "Default" in spec:
            default = spec["Default"]
            values[name] = ",".join(map(str, default)) if isinstance(default, list) else str(default)
        # A parameter without a default only fails if something the local stack needs uses it.
    return values


def _key_schema(value: Any) -> tuple[KeyElement, ...]:
    return tuple(KeyElement(item["AttributeName"], item["KeyType"]) for item in value or [])


def _indexes(value: Any) -> tuple[SecondaryIndex, ...]:
    return tuple(
        SecondaryIndex(
            name=index["IndexName"],
            key_schema=_key_schema(index["KeySchema"]),
            projection=index.get("Projection") or {"ProjectionType": "ALL"},
        )
        for index in value or []
    )


_NO_VALUE = {"Ref": "AWS::NoValue"}


def _optional(resolver: Resolver, value: Any) -> Any:
    """`value` resolved, where `!Ref AWS::NoValue` (also chosen by `!If`) or no value at all
    removes the property: None."""
    if value is None or value == _NO_VALUE:
        return None
    if isinstance(value, dict) and set(value) == {"Fn::If"}:
        condition, when_true, when_false = value["Fn::If"]
        return _optional(resolver, when_true if resolver.condition(condition) else when_false)
    if isinstance(value, dict) and not any(k == "Ref" or k.startswith("Fn::") for k in value):
        resolved = {key: _optional(resolver, item) for key, item in value.items()}
        return {key: item for key, item in resolved.items() if item is not None}
    return resolver.resolve(value)


def _table_throughput(raw: Mapping[str, Any], resolver: Resolver) -> TableThroughput:
    warm = _optional(resolver, raw.get("WarmThroughput")) or {}
    maximum = _optional(resolver, raw.get("OnDemandThroughput")) or {}

    def whole(source: Mapping[str, Any], name: str) -> int | None:
        if name not in source:
            return None
        value = _int(source[name], f"{TABLE_ID}.{name}")
        return value if value >= 1 else None  # -1: no maximum

    return TableThroughput(
        warm_write_units_per_s=whole(warm, "WriteUnitsPerSecond"),
        warm_read_units_per_s=whole(warm, "ReadUnitsPerSecond"),
        max_write_request_units=whole(maximum, "MaxWriteRequestUnits"),
        max_read_request_units=whole(maximum, "MaxReadRequestUnits"),
    )


def _table(document: Mapping[str, Any], resolver: Resolver) -> TableDefinition:
    raw = _resource(document, TABLE_ID, "AWS::DynamoDB::Table")
    properties = resolver.partial(raw)
    ttl = properties.get("TimeToLiveSpecification") or {}
    ttl_enabled = str(ttl.get("Enabled", "false")).lower() == "true"
    stream = properties.get("StreamSpecification") or {}
    return TableDefinition(
        logical_id=TABLE_ID,
        attribute_definitions={
            item["AttributeName"]: item["AttributeType"]
            for item in properties.get("AttributeDefinitions", [])
        },
        key_schema=_key_schema(properties.get("KeySchema")),
        billing_mode=properties.get("BillingMode", "PROVISIONED"),
        ttl_attribute=ttl.get("AttributeName") if ttl_enabled else None,
        global_secondary_indexes=_indexes(properties.get("GlobalSecondaryIndexes")),
        local_secondary_indexes=_indexes(properties.get("LocalSecondaryIndexes")),
        stream_view_type=stream.get("StreamViewType"),
        throughput=_table_throughput(raw, resolver),
    )


def _dead_letter_target(redrive: Mapping[str, Any]) -> str | None:
    """The logical id the RedrivePolicy's deadLetterTargetArn points at (!GetAtt X.Arn or !Sub ${X.Arn})."""
    target = redrive.get("deadLetterTargetArn")
    if isinstance(target, dict) and "Fn::GetAtt" in target:
        return str(target["Fn::GetAtt"][0])
    if isinstance(target, dict) and isinstance(target.get("Fn::Sub"), str):
        match = re.fullmatch(r"\$\{(\w+)\.Arn\}", target["Fn::Sub"])
        if match:
            return match.group(1)
    raise TemplateError("the local stack needs RedrivePolicy.deadLetterTargetArn as !GetAtt <Queue>.Arn")


def _queue(document: Mapping[str, Any], resolver: Resolver, logical_id: str) -> QueueDefinition:
    properties = _resource(document, logical_id, "AWS::SQS::Queue")
    redrive = properties.get("RedrivePolicy") or {}
    dead_letter_queue_id = _dead_letter_target(redrive) if redrive else None

    def optional_int(name: str) -> int | None:
        value = properties.get(name)
        return None if value is None else _int(resolver.resolve(value), f"{logical_id}.{name}")

    name = properties.get("QueueName")
    return QueueDefinition(
        logical_id=logical_id,
        queue_name=None if name is None else str(resolver.resolve(name)),
        visibility_timeout_s=optional_int("VisibilityTimeout") or SQS_DEFAULT_VISIBILITY_TIMEOUT_S,
        message_retention_period_s=optional_int("MessageRetentionPeriod"),
        dead_letter_queue_id=dead_letter_queue_id,
        max_receive_count=(
            _int(resolver.resolve(redrive["maxReceiveCount"]), f"{logical_id} maxReceiveCount")
            if redrive
            else None
        ),
        fifo=str(resolver.resolve(properties.get("FifoQueue", False))).lower() == "true",
        delay_seconds=optional_int("DelaySeconds"),
        receive_wait_time_s=optional_int("ReceiveMessageWaitTimeSeconds"),
    )


def _topic(document: Mapping[str, Any], resolver: Resolver) -> TopicDefinition:
    properties = _resource(document, TOPIC_ID, "AWS::SNS::Topic")
    name = properties.get("TopicName")
    return TopicDefinition(
        logical_id=TOPIC_ID,
        topic_name=None if name is None else str(resolver.resolve(name)),
        fifo=str(resolver.resolve(properties.get("FifoTopic", False))).lower() == "true",
    )


def _queue_logical_id(value: Any) -> str:
    if isinstance(value, dict) and "Fn::GetAtt" in value:
        return str(value["Fn::GetAtt"][0])
    raise TemplateError(f"{MAPPING_ID}'s EventSourceArn must be !GetAtt <Queue>.Arn, got {value!r}")


def _function(document: Mapping[str, Any], resolver: Resolver) -> FunctionDefinition:
    properties = _resource(document, FUNCTION_ID, "AWS::Serverless::Function")
    globals_ = (document.get("Globals") or {}).get("Function") or {}
    event_properties = _resource(document, MAPPING_ID, "AWS::Lambda::EventSourceMapping")
    scaling = _optional(resolver, event_properties.get("ScalingConfig")) or {}
    pollers = _optional(resolver, event_properties.get("ProvisionedPollerConfig")) or {}
    response_types = resolver.resolve(event_properties.get("FunctionResponseTypes") or [])
    maximum_concurrency = scaling.get("MaximumConcurrency")
    event_source = SqsEventSource(
        name=MAPPING_ID,
        queue_id=_queue_logical_id(event_properties.get("EventSourceArn")),
        batch_size=_int(
            resolver.resolve(event_properties.get("BatchSize", SQS_EVENT_DEFAULT_BATCH_SIZE)),
            f"{MAPPING_ID}.BatchSize",
        ),
        maximum_batching_window_s=_float(
            resolver.resolve(event_properties.get("MaximumBatchingWindowInSeconds", 0)),
            f"{MAPPING_ID}.MaximumBatchingWindowInSeconds",
        ),
        maximum_concurrency=(
            None
            if maximum_concurrency is None
            else _int(maximum_concurrency, f"{MAPPING_ID}.MaximumConcurrency")
        ),
        report_batch_item_failures="ReportBatchItemFailures" in response_types,
        enabled=str(resolver.resolve(event_properties.get("Enabled", True))).lower() == "true",
        event_pollers=(
            _int(pollers["MinimumPollers"], f"{MAPPING_ID}.MinimumPollers")
            if "MinimumPollers" in pollers
            else None
        ),
        maximum_pollers=(
            _int(pollers["MaximumPollers"], f"{MAPPING_ID}.MaximumPollers")
            if "MaximumPollers" in pollers
            else None
        ),
    )

    def setting(name: str, default: Any) -> Any:
        return resolver.resolve(properties.get(name, globals_.get(name, default)))

    environment = {
        **((globals_.get("Environment") or {}).get("Variables") or {}),
        **((properties.get("Environment") or {}).get("Variables") or {}),
    }
    # Parameters resolve now; references to resources wait for the local stack's names.
    environment = {name: resolver.partial(value) for name, value in environment.items()}
    handler = setting("Handler", None)
    if not handler:
        raise TemplateError(f"{FUNCTION_ID} has no Handler")
    return FunctionDefinition(
        logical_id=FUNCTION_ID,
        handler=str(handler),
        runtime=setting("Runtime", None),
        timeout_s=_int(setting("Timeout", LAMBDA_DEFAULT_TIMEOUT_S), f"{FUNCTION_ID}.Timeout"),
        memory_mb=_int(setting("MemorySize", LAMBDA_DEFAULT_MEMORY_MB), f"{FUNCTION_ID}.MemorySize"),
        environment=environment,
        event_source=event_source,
    )


def _scheduled_functions(document: Mapping[str, Any], resolver: Resolver) -> tuple[ScheduledFunction, ...]:
    globals_ = (document.get("Globals") or {}).get("Function") or {}
    found: list[ScheduledFunction] = []
    for logical_id, resource in (document.get("Resources") or {}).items():
        if not isinstance(resource, dict) or resource.get("Type") != "AWS::Serverless::Function":
            continue
        properties = resource.get("Properties") or {}
        for event in (properties.get("Events") or {}).values():
            if not isinstance(event, dict) or event.get("Type") != "Schedule":
                continue
            schedule = str(resolver.resolve((event.get("Properties") or {}).get("Schedule")))
            found.append(
                ScheduledFunction(
                    logical_id=logical_id,
                    handler=str(resolver.resolve(properties.get("Handler", globals_.get("Handler")))),
                    schedule=schedule,
                    interval_s=schedule_interval_s(schedule),
                    timeout_s=_int(
                        resolver.resolve(
                            properties.get("Timeout", globals_.get("Timeout", LAMBDA_DEFAULT_TIMEOUT_S))
                        ),
                        f"{logical_id}.Timeout",
                    ),
                )
            )
    return tuple(found)


def _api_functions(document: Mapping[str, Any], resolver: Resolver) -> tuple[ApiFunction, ...]:
    """The functions an `AWS::Lambda::Permission` lets API Gateway invoke."""
    resources = document.get("Resources") or {}
    globals_ = (document.get("Globals") or {}).get("Function") or {}
    found: list[ApiFunction] = []
    for resource in resources.values():
        if not isinstance(resource, dict) or resource.get("Type") != "AWS::Lambda::Permission":
            continue
        properties = resource.get("Properties") or {}
        target = properties.get("FunctionName")
        if properties.get("Principal") != "apigateway.amazonaws.com" or not isinstance(target, dict):
            continue
        logical_id = str(target.get("Ref", ""))
        function = resources.get(logical_id)
        if not isinstance(function, dict) or function.get("Type") != "AWS::Serverless::Function":
            continue
        own = function.get("Properties") or {}

        def setting(name: str, default: Any, own: Mapping[str, Any] = own) -> Any:
            return resolver.resolve(own.get(name, globals_.get(name, default)))

        environment = {
            **((globals_.get("Environment") or {}).get("Variables") or {}),
            **((own.get("Environment") or {}).get("Variables") or {}),
        }
        found.append(
            ApiFunction(
                logical_id=logical_id,
                handler=str(setting("Handler", "")),
                timeout_s=_int(setting("Timeout", LAMBDA_DEFAULT_TIMEOUT_S), f"{logical_id}.Timeout"),
                memory_mb=_int(setting("MemorySize", LAMBDA_DEFAULT_MEMORY_MB), f"{logical_id}.MemorySize"),
                environment={name: resolver.partial(value) for name, value in environment.items()},
            )
        )
    return tuple(found)


def load_template(
    path: Path | None = None,
    *,
    parameter_overrides: Mapping[str, str] | None = None,
    stack_name: str = DEFAULT_STACK_NAME,
) -> StackTemplate:
    """Reads the template and describes the resources the local stack builds from it."""
    path = path or default_template_path()
    document = read_template_document(path)
    parameters = _parameters(document, parameter_overrides or {})
    resolver = Resolver(
        parameters=parameters, conditions=document.get("Conditions") or {}, stack_name=stack_name
    )
    function = _function(document, resolver)
    queue = _queue(document, resolver, function.event_source.queue_id)
    if queue.dead_letter_queue_id is None or queue.max_receive_count is None:
        raise TemplateError(
            f"{queue.logical_id} has no RedrivePolicy; the local stack needs its dead-letter queue"
        )
    return StackTemplate(
        path=path,
        resolver=resolver,
        table=_table(document, resolver),
        queue=queue,
        dead_letter_queue=_queue(document, resolver, queue.dead_letter_queue_id),
        topic=_topic(document, resolver),
        function=function,
        scheduled_functions=_scheduled_functions(document, resolver),
        api_functions=_api_functions(document, resolver),
        outputs={
            name: output["Value"]
            for name, output in (document.get("Outputs") or {}).items()
            if isinstance(output, dict) and "Value" in output
        },
    )
