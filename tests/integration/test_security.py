"""The deployed surface: least privilege, encryption at rest, TLS only, who may publish, no secrets.

The IAM checks read the template as CloudFormation will deploy it: SAM's own translator expands
the functions into their roles, policy templates and the managed policies SAM attaches, so the
test sees every statement the stack grants, not only the ones written in template.yaml.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import REPO
from tests.template_support import Template, sam_translate

# AWS managed policies SAM attaches to the roles it generates; their resources are "*". Nothing
# else may be attached.
MANAGED_POLICIES = {
    "service-role/AWSLambdaBasicExecutionRole": "CloudWatch Logs; SAM attaches it to every role it generates",
    "AWSXrayWriteOnlyAccess": "Tracing: Active; X-Ray's PutTraceSegments has no resource-level permissions",
}
# Deny statements may name whole services: denying more is the safe direction.
WILDCARD_DENY_SIDS = {"DenyInsecureTransport"}
ENCRYPTED_QUEUES = ("ReservationsQueue", "ReservationsDeadLetterQueue")
TOPIC = "OutcomesTopic"
# Roles that are not a function's: what the checkout API's integrations assume, and API Gateway's
# account-wide logging role. Each is written in template.yaml, none has a managed policy.
API_ROLES = {
    "CheckoutApiQueueRole": {"sqs:SendMessage"},
    "CheckoutApiTableRole": {"dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:Query"},
    "ApiGatewayLoggingRole": {
        "logs:CreateLogGroup",
        "logs:CreateLogStream",
        "logs:DescribeLogGroups",
        "logs:DescribeLogStreams",
        "logs:PutLogEvents",
        "logs:GetLogEvents",
        "logs:FilterLogEvents",
    },
}

SECRET_PATTERNS = {
    "AWS access key id": re.compile(r"(?<![A-Z0-9])(AKIA|ASIA)[A-Z0-9]{16}(?![A-Z0-9])"),
    "private key": re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----"),
    "secret assigned a literal": re.compile(
        r"(?i)(secret|password|passwd|token|api[_-]?key|credential)[A-Za-z_]*[\"']?\s*[:=]\s*[\"']"
        r"(?!\$\{|\{\{)[^\"'\s]{12,}[\"']"
    ),
    # 40 characters of base64 with at least one capital and one digit, standing alone (a path of
    # lower-case words in a URL, such as docs.aws.amazon.com/memorydb/..., is not a key).
    "AWS secret access key shape": re.compile(
        r"(?<![A-Za-z0-9/+.])(?=[a-z0-9/+]*[A-Z])(?=[A-Za-z/+]*[0-9])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=.])"
    ),
}
SCANNED_FOR_SECRETS = [
    "template.yaml",
    "api/*.yaml",
    "monitoring/*.yaml",
    "samconfig.toml",
    "events/*.json",
    "src/**/*.py",
    "Makefile",
]


@pytest.fixture(scope="module")
def deployed(template: Template) -> dict[str, Any]:
    """template.yaml as CloudFormation receives it after SAM's transform (as `sam deploy` sends it)."""
    return sam_translate(template.document)


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def policy_documents(deployed: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every policy document of the stack: roles' inline policies and every resource policy."""
    for logical_id, resource in deployed["Resources"].items():
        props = resource.get("Properties", {})
        if resource["Type"] == "AWS::IAM::Role":
            for policy in props.get("Policies", []):
                yield f"{logical_id}/{policy['PolicyName']}", policy["PolicyDocument"]
        elif "PolicyDocument" in props:
            yield logical_id, props["PolicyDocument"]


def statements(deployed: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    for where, document in policy_documents(deployed):
        for statement in as_list(document["Statement"]):
            # A conditional statement (the admission key's, `Fn::If`) counts as granted.
            for granted in statement["Fn::If"][1:] if "Fn::If" in statement else [statement]:
                if isinstance(granted, dict) and "Effect" in granted:
                    yield where, granted


def managed_policy_name(arn: Any) -> str:
    text = arn["Fn::Sub"] if isinstance(arn, dict) else arn
    return text.split(":policy/", 1)[1]


def functions(template: Template) -> dict[str, dict[str, Any]]:
    return {
        logical_id: resource
        for logical_id, resource in template.document["Resources"].items()
        if resource["Type"] == "AWS::Serverless::Function"
    }


def publishers(template: Template) -> set[str]:
    """The functions whose policies let them publish to the outcomes topic."""
    names = set()
    for logical_id, resource in functions(template).items():
        for policy in resource["Properties"].get("Policies", []):
            if isinstance(policy, dict) and "SNSPublishMessagePolicy" in policy:
                assert policy["SNSPublishMessagePolicy"]["TopicName"] == {"Fn::GetAtt": [TOPIC, "TopicName"]}
                names.add(logical_id)
    return names


# --- least privilege ----------------------------------------------------------------------------


def test_the_transform_sees_every_role_and_policy(deployed: dict[str, Any], template: Template) -> None:
    roles = {lid for lid, r in deployed["Resources"].items() if r["Type"] == "AWS::IAM::Role"}
    assert roles == {f"{name}Role" for name in functions(template)} | set(API_ROLES)
    assert sum(1 for _ in statements(deployed)) >= 6


def test_no_allow_statement_grants_a_wildcard_action_or_every_resource(deployed: dict[str, Any]) -> None:
    for where, statement in statements(deployed):
        assert "NotAction" not in statement and "NotResource" not in statement, where
        if statement["Effect"] != "Allow":
            continue
        for action in as_list(statement["Action"]):
            assert "*" not in action, f"{where}: {action}"
        assert "*" not in as_list(statement.get("Resource", [])), where
        assert statement.get("Principal") != "*" and statement.get("Principal") != {"AWS": "*"}, where


def test_a_wildcard_is_only_ever_denied(deployed: dict[str, Any]) -> None:
    wildcard_denies = {
        statement.get("Sid")
        for _, statement in statements(deployed)
        if statement["Effect"] == "Deny" and any("*" in action for action in as_list(statement["Action"]))
    }
    assert wildcard_denies <= WILDCARD_DENY_SIDS


def test_only_the_listed_managed_policies_are_attached(deployed: dict[str, Any], template: Template) -> None:
    for function_id in functions(template):
        role = deployed["Resources"][f"{function_id}Role"]["Properties"]
        attached = {managed_policy_name(arn) for arn in role.get("ManagedPolicyArns", [])}
        assert attached <= set(MANAGED_POLICIES), function_id


def test_the_reserve_function_may_take_messages_from_the_reservations_queue_only(
    deployed: dict[str, Any],
) -> None:
    # The queue's mapping is written out (no SAM SQS event, whose managed policy, with
    # AWSLambdaSQSQueueExecutionRole's "*" resources, would come with it): its grant names the queue.
    queue_arn = {
        "Fn::Sub": [
            "arn:${AWS::Partition}:sqs:${AWS::Region}:${AWS::AccountId}:${queueName}",
            {"queueName": {"Fn::GetAtt": ["ReservationsQueue", "QueueName"]}},
        ]
    }
    receiving = [
        (where.split("/")[0], statement["Resource"])
        for where, statement in statements(deployed)
        if statement["Effect"] == "Allow" and "sqs:ReceiveMessage" in as_list(statement["Action"])
    ]
    # and, with ReservationQueues above 1, the other reservation queues, each only if it exists
    others = [
        {"Fn::GetAtt": ["ReservationsQueue1", "Arn"]},
        *(
            {
                "Fn::If": [
                    f"HasReservationQueue{index}",
                    {"Fn::GetAtt": [f"ReservationsQueue{index}", "Arn"]},
                    {"Ref": "AWS::NoValue"},
                ]
            }
            for index in (2, 3)
        ),
    ]
    assert receiving == [("ReserveSeatsFunctionRole", queue_arn), ("ReserveSeatsFunctionRole", others)]


def test_each_function_runs_as_its_own_generated_role(deployed: dict[str, Any], template: Template) -> None:
    for function_id in functions(template):
        role = deployed["Resources"][function_id]["Properties"]["Role"]
        assert role == {"Fn::GetAtt": [f"{function_id}Role", "Arn"]}


def test_dynamodb_grants_name_the_table_or_its_index(deployed: dict[str, Any]) -> None:
    for where, statement in statements(deployed):
        if statement["Effect"] == "Allow" and any(
            a.startswith("dynamodb:") for a in as_list(statement["Action"])
        ):
            for resource in as_list(statement["Resource"]):
                assert resource == {"Fn::GetAtt": ["InventoryTable", "Arn"]} or (
                    "Fn::Sub" in resource and resource["Fn::Sub"].startswith("${InventoryTable.Arn}/index/")
                ), where


def test_the_api_roles_grant_only_their_actions_and_are_assumed_by_api_gateway_only(
    deployed: dict[str, Any],
) -> None:
    for role_id, actions in API_ROLES.items():
        role = deployed["Resources"][role_id]["Properties"]
        assert "ManagedPolicyArns" not in role, role_id
        (trust,) = role["AssumeRolePolicyDocument"]["Statement"]
        assert trust["Principal"] == {"Service": "apigateway.amazonaws.com"}, role_id
        granted = {
            action
            for policy in role["Policies"]
            for statement in as_list(policy["PolicyDocument"]["Statement"])
            for action in as_list(statement["Action"])
        }
        assert granted == actions, role_id


def test_the_api_reads_only_reservation_records_and_event_items_and_their_public_attributes(
    deployed: dict[str, Any],
) -> None:
    role = deployed["Resources"]["CheckoutApiTableRole"]["Properties"]
    statement, seat_map = role["Policies"][0]["PolicyDocument"]["Statement"]
    condition = statement["Condition"]
    assert condition["ForAllValues:StringLike"]["dynamodb:LeadingKeys"] == ["RESERVATION#*", "EVENT#*"]
    readable = set(condition["ForAllValues:StringEquals"]["dynamodb:Attributes"])
    # Customer counters (whose `seats` is a customer's count) are under CUSTOMER# keys, which
    # the role cannot read; a record's `seats` are the seat ids it took (docs/guides/seat-maps.md).
    internal = {
        "gsi1pk",
        "gsi1sk",
        "expires_at",
        "customer_id",
        "customer_counted",
        "message_id",
        "entity",
    }
    assert not readable & internal
    # The seat-map routes: a Query of layout and row items only, their public attributes only;
    # the one pattern is a row item's seat states p<position>.
    assert seat_map["Action"] == ["dynamodb:Query"]
    like = seat_map["Condition"]["ForAllValues:StringLike"]
    assert like["dynamodb:LeadingKeys"] == ["SEATLAYOUT#*", "SEATROW#*"]
    assert not set(like["dynamodb:Attributes"]) & internal
    assert [a for a in like["dynamodb:Attributes"] if "*" in a] == ["p*"]
    assert seat_map["Condition"]["StringEqualsIfExists"] == {"dynamodb:Select": "SPECIFIC_ATTRIBUTES"}


# --- encryption at rest and in transit --------------------------------------------------------


def test_the_table_queues_and_topic_are_encrypted_at_rest(template: Template) -> None:
    assert template.properties("InventoryTable")["SSESpecification"]["SSEEnabled"] is True
    for queue in ENCRYPTED_QUEUES:
        props = template.properties(queue)
        assert props.get("SqsManagedSseEnabled") is True or props.get("KmsMasterKeyId"), queue
    assert template.properties(TOPIC)["KmsMasterKeyId"]


def deny_insecure_transport(statement: dict[str, Any], service: str) -> bool:
    return (
        statement["Effect"] == "Deny"
        and statement["Principal"] == "*"
        and as_list(statement["Action"]) == [f"{service}:*"]
        and statement.get("Condition") == {"Bool": {"aws:SecureTransport": "false"}}
    )


def test_both_queues_refuse_requests_without_tls(template: Template) -> None:
    [policy] = [
        r["Properties"]
        for r in template.document["Resources"].values()
        if r["Type"] == "AWS::SQS::QueuePolicy"
    ]
    extra = [f"ReservationsQueue{index}" for index in (1, 2, 3)]  # with ReservationQueues above 1

    def named(value: dict[str, Any], key: str) -> str:
        """The queue a policy entry names, whether always or only if the queue exists."""
        if "Fn::If" in value:
            condition, when, _ = value["Fn::If"]
            assert condition == f"HasReservationQueue{extra.index(named(when, key)) + 1}"
            return named(when, key)
        return value[key] if key == "Ref" else value[key][0]

    assert sorted(named(q, "Ref") for q in policy["Queues"]) == sorted([*ENCRYPTED_QUEUES, *extra])
    [statement] = [s for s in policy["PolicyDocument"]["Statement"] if deny_insecure_transport(s, "sqs")]
    assert sorted(named(r, "Fn::GetAtt") for r in statement["Resource"]) == sorted(
        [*ENCRYPTED_QUEUES, *extra]
    )


def topic_policy(template: Template) -> dict[str, Any]:
    [policy] = [
        r["Properties"]
        for r in template.document["Resources"].values()
        if r["Type"] == "AWS::SNS::TopicPolicy"
    ]
    assert policy["Topics"] == [{"Ref": TOPIC}]
    return policy["PolicyDocument"]


def test_the_topic_refuses_requests_without_tls(template: Template) -> None:
    [statement] = [s for s in topic_policy(template)["Statement"] if deny_insecure_transport(s, "sns")]
    assert statement["Resource"] == {"Ref": TOPIC}


def test_only_the_functions_may_publish_to_the_topic(template: Template) -> None:
    roles = [{"Fn::GetAtt": [f"{name}Role", "Arn"]} for name in sorted(publishers(template))]
    assert {"Fn::GetAtt": ["ReserveSeatsFunctionRole", "Arn"]} in roles
    granting = [
        s
        for s in topic_policy(template)["Statement"]
        if s["Effect"] == "Allow" and any(a in ("sns:Publish", "sns:*") for a in as_list(s["Action"]))
    ]
    principals = [p for s in granting for p in as_list(s["Principal"]["AWS"])]
    assert sorted(principals, key=str) == sorted(roles, key=str)
    # ... and nobody else, whatever their IAM policies grant
    [deny] = [
        s
        for s in topic_policy(template)["Statement"]
        if s["Effect"] == "Deny" and as_list(s["Action"]) == ["sns:Publish"]
    ]
    assert deny["Principal"] == "*" and deny["Resource"] == {"Ref": TOPIC}
    assert sorted(deny["Condition"]["ArnNotEquals"]["aws:PrincipalArn"], key=str) == sorted(roles, key=str)


# --- no secrets ----------------------------------------------------------------------------------


def scanned_files() -> list[Path]:
    files = sorted({path for pattern in SCANNED_FOR_SECRETS for path in REPO.glob(pattern) if path.is_file()})
    assert {"template.yaml", "openapi.yaml", "dashboard.yaml"} <= {path.name for path in files}
    return files


@pytest.mark.parametrize("path", scanned_files(), ids=lambda p: str(p.relative_to(REPO)))
def test_no_literal_secret_in_code_template_or_config(path: Path) -> None:
    text = path.read_text()
    for name, pattern in SECRET_PATTERNS.items():
        found = [m.group(0) for m in pattern.finditer(text)]
        assert not found, f"{name} in {path.relative_to(REPO)}: {found[:3]}"


def test_the_secret_patterns_catch_what_they_are_for() -> None:
    samples = {
        "AWS access key id": "aws_access_key_id = AKIAIOSFODNN7EXAMPLE",
        "private key": "-----BEGIN RSA PRIVATE KEY-----",
        "secret assigned a literal": 'API_TOKEN = "s3cr3t-t0ken-value"',
        "AWS secret access key shape": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    }
    for name, sample in samples.items():
        assert SECRET_PATTERNS[name].search(sample), name
    not_secrets = [
        "https://docs.aws.amazon.com/memorydb/latest/devguide/consistency.html",
        "src/seat_inventory/logic/settle_group/and/more/paths/here",
    ]
    for text in not_secrets:
        assert not SECRET_PATTERNS["AWS secret access key shape"].search(text), text


def test_no_parameter_or_variable_looks_like_a_secret(template: Template) -> None:
    secretish = re.compile(r"(?i)secret|password|token|credential|private|api_?key")
    for name, parameter in template.document.get("Parameters", {}).items():
        assert not secretish.search(name) or parameter.get("NoEcho") is True, name
    for function_id, function in functions(template).items():
        for name in function["Properties"].get("Environment", {}).get("Variables", {}):
            assert not secretish.search(name), f"{function_id}: {name}"
