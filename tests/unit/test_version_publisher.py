"""The custom resource that publishes the reserve function's version for its alias "live"
(template.yaml's ReserveSeatsVersionPublisher: seat_inventory.handlers.publish_live_version), run on
a stubbed Lambda client: a new version, the last one when nothing changed since it, and a failure
when that one is not the function as it is now (docs/guides/size-a-sale.md, "Provisioned concurrency"); and its
answer as CloudFormation receives it, PUT to the request's ResponseURL (a server on 127.0.0.1)."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from seat_inventory.handlers import publish_live_version
from seat_inventory.handlers.publish_live_version import answer

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


@pytest.fixture
def lambda_client() -> Iterator[tuple[Any, Stubber]]:
    client = boto3.client(
        "lambda", region_name="us-east-1", aws_access_key_id="testing", aws_secret_access_key="testing"
    )
    with Stubber(client) as stubber:
        yield client, stubber
        stubber.assert_no_pending_responses()


def event(
    request_type: str, response_url: str = "https://cloudformation-custom-resource-response.example/"
) -> dict[str, Any]:
    return {
        "RequestType": request_type,
        "ResourceProperties": {"FunctionName": FUNCTION},
        "PhysicalResourceId": f"{FUNCTION}:3",
        "ResponseURL": response_url,
        "StackId": "arn:aws:cloudformation:us-east-1:123456789012:stack/seats/1",
        "RequestId": "request-1",
        "LogicalResourceId": "ReserveSeatsLiveVersion",
    }


def stub_function_as_it_is(stubber: Stubber) -> None:
    # the waiter: the function's last update is done
    stubber.add_response(
        "get_function",
        {"Configuration": {**CONFIGURATION, "State": "Active", "LastUpdateStatus": "Successful"}},
        {"FunctionName": FUNCTION},
    )
    stubber.add_response("get_function_configuration", CONFIGURATION, {"FunctionName": FUNCTION})


def test_a_new_version_is_published_from_the_function_as_it_is(lambda_client: tuple[Any, Stubber]) -> None:
    client, stubber = lambda_client
    stub_function_as_it_is(stubber)
    stubber.add_response(
        "publish_version",
        {**CONFIGURATION, "Version": "7"},
        {"FunctionName": FUNCTION, "CodeSha256": "code-sha-2"},  # only if the code is still that
    )

    sent = answer(event("Update"), client)

    assert (sent["Status"], sent["Data"], sent["PhysicalResourceId"]) == (
        "SUCCESS",
        {"Version": "7"},
        f"{FUNCTION}:7",
    )
    assert (sent["StackId"], sent["RequestId"], sent["LogicalResourceId"]) == (
        "arn:aws:cloudformation:us-east-1:123456789012:stack/seats/1",
        "request-1",
        "ReserveSeatsLiveVersion",
    )


def test_when_nothing_changed_since_the_last_version_lambda_s_answer_that_one_is_given(
    lambda_client: tuple[Any, Stubber],
) -> None:
    # Given a function whose code and configuration are those of its last version, 6 (as right
    # after SAM's own version, or when only ProvisionedConcurrency is set): Lambda publishes none
    # and answers with that version (the AWS::Lambda::Version resource fails on that answer)
    client, stubber = lambda_client
    stub_function_as_it_is(stubber)
    stubber.add_response(
        "publish_version",
        {**CONFIGURATION, "Version": "6"},
        {"FunctionName": FUNCTION, "CodeSha256": "code-sha-2"},
    )

    sent = answer(event("Create"), client)

    assert (sent["Status"], sent["Data"]) == ("SUCCESS", {"Version": "6"})


def test_when_publishing_is_refused_the_last_version_is_given_if_it_is_the_function_as_it_is(
    lambda_client: tuple[Any, Stubber],
) -> None:
    # Given a refusal that may pass (SAM's alias updated at the same moment, or throttling) and a
    # last version, 6, with the function's code and configuration
    client, stubber = lambda_client
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

    sent = answer(event("Create"), client)

    assert (sent["Status"], sent["Data"]) == ("SUCCESS", {"Version": "6"})


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
    lambda_client: tuple[Any, Stubber], last: dict[str, Any]
) -> None:
    client, stubber = lambda_client
    stub_function_as_it_is(stubber)
    stubber.add_client_error("publish_version", "TooManyRequestsException", http_status_code=429)
    stubber.add_response(
        "list_versions_by_function", {"Versions": [{**last, "Version": "6"}]}, {"FunctionName": FUNCTION}
    )

    sent = answer(event("Update"), client)

    # the alias is not moved to a version that is not what was deployed: the deploy fails
    assert sent["Status"] == "FAILED" and "TooManyRequestsException" in sent["Reason"]
    assert sent["PhysicalResourceId"] == f"{FUNCTION}:3" and sent["Data"] == {}


def test_deleting_keeps_the_version_and_calls_nothing(lambda_client: tuple[Any, Stubber]) -> None:
    sent = answer(event("Delete"), lambda_client[0])  # the stubber fails on any call

    assert (sent["Status"], sent["Data"], sent["PhysicalResourceId"]) == ("SUCCESS", {}, f"{FUNCTION}:3")


class ResponseUrl(BaseHTTPRequestHandler):
    """Plays the pre-signed S3 URL CloudFormation waits on: records each PUT."""

    received: list[tuple[dict[str, str], bytes]] = []

    def do_PUT(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        ResponseUrl.received.append((dict(self.headers), body))
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def response_url() -> Iterator[str]:
    server = HTTPServer(("127.0.0.1", 0), ResponseUrl)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    ResponseUrl.received.clear()
    yield f"http://127.0.0.1:{server.server_address[1]}/response?X-Amz-Signature=abc"
    server.shutdown()
    thread.join(timeout=5)


def test_the_handler_puts_its_answer_to_the_response_url(
    response_url: str, lambda_client: tuple[Any, Stubber], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given CloudFormation's Delete request, which publishes nothing
    monkeypatch.setattr(publish_live_version.boto3, "client", lambda service: lambda_client[0])
    context = type("Context", (), {"log_stream_name": "2026/01/01/[$LATEST]abc"})()

    publish_live_version.lambda_handler(event("Delete", response_url), context)

    # Then the answer is PUT as the pre-signed URL expects: JSON, with no content type
    [(headers, body)] = ResponseUrl.received
    assert headers["Content-Type"] == "" and int(headers["Content-Length"]) == len(body)
    sent = json.loads(body)
    assert (sent["Status"], sent["PhysicalResourceId"], sent["RequestId"]) == (
        "SUCCESS",
        f"{FUNCTION}:3",
        "request-1",
    )
    assert sent["Reason"] == "See the details in CloudWatch Log Stream: 2026/01/01/[$LATEST]abc"


def test_an_answer_that_cannot_be_sent_fails_the_invocation_so_that_lambda_retries_it(
    lambda_client: tuple[Any, Stubber], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(publish_live_version.boto3, "client", lambda service: lambda_client[0])
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}/response"

        with pytest.raises(OSError):
            publish_live_version.lambda_handler(event("Delete", url), None)
