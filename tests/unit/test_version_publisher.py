"""The custom resource's code that publishes the reserve function's version for its alias "live"
(template.yaml, ReserveSeatsVersionPublisher's InlineCode), run on a stubbed Lambda client: a new
version, the last one when nothing changed since it, and a failure when that one is not the
function as it is now (docs/guides/size-a-sale.md, "Provisioned concurrency")."""

from __future__ import annotations

import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from tests.template_support import version_publisher

REPO = Path(__file__).resolve().parents[2]
FUNCTION = "seats-ReserveSeatsFunction-ABC"
CONFIGURATION = {
    "FunctionName": FUNCTION,
    "CodeSha256": "code-sha-2",
    "Handler": "seat_inventory.handlers.reserve_seats.lambda_handler",
    "Runtime": "python3.11",
    "Timeout": 30,
    "MemorySize": 512,
    "Environment": {"Variables": {"MAX_SEATS_PER_RESERVATION": "4"}},
    "Architectures": ["arm64"],
}


class CloudFormationResponses:
    """Stands in for the `cfnresponse` module Lambda gives inline code: records what is sent."""

    SUCCESS = "SUCCESS"
    FAILED = "FAILED"

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []

    def send(
        self,
        event: dict[str, Any],
        context: Any,
        status: str,
        data: dict[str, Any],
        physical_id: str | None = None,
        no_echo: bool = False,
        reason: str | None = None,
    ) -> None:
        self.sent.append({"status": status, "data": data, "physical_id": physical_id, "reason": reason})


@pytest.fixture
def lambda_client() -> Iterator[tuple[Any, Stubber]]:
    client = boto3.client(
        "lambda", region_name="us-east-1", aws_access_key_id="testing", aws_secret_access_key="testing"
    )
    with Stubber(client) as stubber:
        yield client, stubber
        stubber.assert_no_pending_responses()


@pytest.fixture
def publisher(
    monkeypatch: pytest.MonkeyPatch, lambda_client: tuple[Any, Stubber]
) -> tuple[types.ModuleType, CloudFormationResponses]:
    responses = CloudFormationResponses()
    module = version_publisher(REPO / "template.yaml", responses)
    monkeypatch.setattr(module.boto3, "client", lambda service: lambda_client[0])
    return module, responses


def event(request_type: str) -> dict[str, Any]:
    return {
        "RequestType": request_type,
        "ResourceProperties": {"FunctionName": FUNCTION},
        "PhysicalResourceId": f"{FUNCTION}:3",
        "ResponseURL": "https://cloudformation-custom-resource-response.example/",
    }


def stub_function_as_it_is(stubber: Stubber) -> None:
    # the waiter: the function's last update is done
    stubber.add_response(
        "get_function",
        {"Configuration": {**CONFIGURATION, "State": "Active", "LastUpdateStatus": "Successful"}},
        {"FunctionName": FUNCTION},
    )
    stubber.add_response("get_function_configuration", CONFIGURATION, {"FunctionName": FUNCTION})


def test_a_new_version_is_published_from_the_function_as_it_is(
    publisher: tuple[types.ModuleType, CloudFormationResponses], lambda_client: tuple[Any, Stubber]
) -> None:
    module, responses = publisher
    stubber = lambda_client[1]
    stub_function_as_it_is(stubber)
    stubber.add_response(
        "publish_version",
        {**CONFIGURATION, "Version": "7"},
        {"FunctionName": FUNCTION, "CodeSha256": "code-sha-2"},  # only if the code is still that
    )

    module.handler(event("Update"), None)

    assert responses.sent == [
        {"status": "SUCCESS", "data": {"Version": "7"}, "physical_id": f"{FUNCTION}:7", "reason": None}
    ]


def test_when_nothing_changed_since_the_last_version_lambda_s_answer_that_one_is_given(
    publisher: tuple[types.ModuleType, CloudFormationResponses], lambda_client: tuple[Any, Stubber]
) -> None:
    # Given a function whose code and configuration are those of its last version, 6 (as right
    # after SAM's own version, or when only ProvisionedConcurrency is set): Lambda publishes none
    # and answers with that version (the AWS::Lambda::Version resource fails on that answer)
    module, responses = publisher
    stubber = lambda_client[1]
    stub_function_as_it_is(stubber)
    stubber.add_response(
        "publish_version",
        {**CONFIGURATION, "Version": "6"},
        {"FunctionName": FUNCTION, "CodeSha256": "code-sha-2"},
    )

    module.handler(event("Create"), None)

    assert responses.sent[0]["status"] == "SUCCESS" and responses.sent[0]["data"] == {"Version": "6"}


def test_when_publishing_is_refused_the_last_version_is_given_if_it_is_the_function_as_it_is(
    publisher: tuple[types.ModuleType, CloudFormationResponses], lambda_client: tuple[Any, Stubber]
) -> None:
    # Given a refusal that may pass (SAM's alias updated at the same moment, or throttling) and a
    # last version, 6, with the function's code and configuration
    module, responses = publisher
    stubber = lambda_client[1]
    stub_function_as_it_is(stubber)
    stubber.add_client_error("publish_version", "ResourceConflictException", http_status_code=409)
    stubber.add_response(
        "list_versions_by_function",
        {
            "Versions": [
                {**CONFIGURATION, "Version": "$LATEST"},
                {**CONFIGURATION, "CodeSha256": "code-sha-1", "Version": "5"},
                {**CONFIGURATION, "Version": "6"},
            ]
        },
        {"FunctionName": FUNCTION},
    )

    module.handler(event("Create"), None)

    assert responses.sent[0]["status"] == "SUCCESS" and responses.sent[0]["data"] == {"Version": "6"}


@pytest.mark.parametrize(
    "last",
    [
        {**CONFIGURATION, "CodeSha256": "code-sha-1"},
        {**CONFIGURATION, "Environment": {"Variables": {"MAX_SEATS_PER_RESERVATION": "10"}}},
        {**CONFIGURATION, "Timeout": 29},
    ],
    ids=["other code", "other settings", "other timeout"],
)
def test_a_last_version_that_is_not_the_function_as_it_is_fails_the_deploy(
    publisher: tuple[types.ModuleType, CloudFormationResponses],
    lambda_client: tuple[Any, Stubber],
    last: dict[str, Any],
) -> None:
    module, responses = publisher
    stubber = lambda_client[1]
    stub_function_as_it_is(stubber)
    stubber.add_client_error("publish_version", "TooManyRequestsException", http_status_code=429)
    stubber.add_response(
        "list_versions_by_function", {"Versions": [{**last, "Version": "6"}]}, {"FunctionName": FUNCTION}
    )

    module.handler(event("Update"), None)

    # the alias is not moved to a version that is not what was deployed: the deploy fails
    [sent] = responses.sent
    assert sent["status"] == "FAILED" and "TooManyRequestsException" in sent["reason"]
    assert sent["physical_id"] == f"{FUNCTION}:3"


def test_deleting_keeps_the_version_and_calls_nothing(
    publisher: tuple[types.ModuleType, CloudFormationResponses], lambda_client: tuple[Any, Stubber]
) -> None:
    module, responses = publisher

    module.handler(event("Delete"), None)  # the stubber fails on any call

    assert responses.sent == [
        {"status": "SUCCESS", "data": {}, "physical_id": f"{FUNCTION}:3", "reason": None}
    ]
