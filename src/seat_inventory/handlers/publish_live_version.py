"""Lambda entry point of ReserveSeatsVersionPublisher, the function behind the custom resource
ReserveSeatsLiveVersion (template.yaml; only while ProvisionedConcurrency is set).

CloudFormation sends it a Create, Update or Delete request and waits for the answer at the
request's ResponseURL (the custom resource protocol). Create and Update publish a version of the
reserve function (`live_version.publish_version`) and answer its number (`!GetAtt
ReserveSeatsLiveVersion.Version`); Delete keeps the version, as SAM keeps its own. Whatever
happens, an answer is sent: a failure fails (and rolls back) the deploy, with its reason.
"""

from __future__ import annotations

import json
import logging
import urllib.request
from typing import Any

import boto3

from seat_inventory.live_version import publish_version

logger = logging.getLogger(__name__)

SUCCESS = "SUCCESS"
FAILED = "FAILED"
# CloudFormation shows at most this much of a failure's reason.
MAX_REASON = 400


def lambda_handler(event: dict[str, Any], context: Any) -> None:
    send_answer(event["ResponseURL"], answer(event, boto3.client("lambda"), context))


def answer(event: dict[str, Any], client: Any, context: Any = None) -> dict[str, Any]:
    """The answer to one request: the body CloudFormation receives."""
    physical_id = event.get("PhysicalResourceId", "not-published")
    status, data, reason = SUCCESS, {}, None
    try:
        if event["RequestType"] != "Delete":
            name = event["ResourceProperties"]["FunctionName"]
            version = publish_version(client, name)
            physical_id, data = f"{name}:{version}", {"Version": version}
    except Exception as error:  # CloudFormation waits for an answer whatever happens
        logger.exception("publishing a version failed")
        status, reason = FAILED, str(error)[:MAX_REASON]
    log_stream = getattr(context, "log_stream_name", None)
    return {
        "Status": status,
        "Reason": reason or (f"See the details in CloudWatch Log Stream: {log_stream}" if log_stream else ""),
        "PhysicalResourceId": physical_id,
        "StackId": event.get("StackId"),
        "RequestId": event.get("RequestId"),
        "LogicalResourceId": event.get("LogicalResourceId"),
        "NoEcho": False,
        "Data": data,
    }


def send_answer(url: str, body: dict[str, Any]) -> None:
    """PUTs the answer to the request's pre-signed ResponseURL (an S3 URL: no content type, as it
    was signed). A failure raises: Lambda retries the invocation, which publishes nothing new."""
    payload = json.dumps(body).encode()
    request = urllib.request.Request(
        url, data=payload, method="PUT", headers={"Content-Type": "", "Content-Length": str(len(payload))}
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        response.read()
