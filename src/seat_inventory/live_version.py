"""The version of the reserve function its alias "live" runs (template.yaml's ReserveSeatsLiveVersion,
docs/guides/size-a-sale.md): published from the function's code and configuration as deployed.

Called by the custom resource's handler (`handlers.publish_live_version`) with a Lambda client.
"""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

# What a published version keeps of the function's configuration besides its code.
KEPT = (
    "Handler",
    "Runtime",
    "Timeout",
    "MemorySize",
    "Environment",
    "TracingConfig",
    "Layers",
    "Architectures",
    "Role",
    "EphemeralStorage",
    "LoggingConfig",
)
# The function's last update must be done before a version of it is published; the wait stays
# within the publisher's timeout (template.yaml: 300 s).
WAIT = {"Delay": 2, "MaxAttempts": 120}


def publish_version(client: Any, name: str) -> str:
    """A version with the function's code and configuration as they are now: a new one, or, when
    nothing changed since the last version (Lambda then publishes none and answers with that one),
    that one. When publishing is refused (throttled, or SAM's own alias being updated at once), the
    last version if it is the function as it is now; else the refusal is raised."""
    client.get_waiter("function_updated_v2").wait(FunctionName=name, WaiterConfig=WAIT)
    latest = client.get_function_configuration(FunctionName=name)
    try:
        # published only if the code is still the one just read
        return str(client.publish_version(FunctionName=name, CodeSha256=latest["CodeSha256"])["Version"])
    except ClientError:
        pages = client.get_paginator("list_versions_by_function").paginate(FunctionName=name)
        versions = [v for page in pages for v in page["Versions"] if v["Version"] != "$LATEST"]
        last = max(versions, key=lambda v: int(v["Version"]), default=None)
        if last is None or not is_the_function_as_it_is(last, latest):
            raise
        return str(last["Version"])


def is_the_function_as_it_is(version: dict[str, Any], latest: dict[str, Any]) -> bool:
    """Whether a published version has the function's current code and kept configuration."""
    return version["CodeSha256"] == latest["CodeSha256"] and all(
        version.get(key) == latest.get(key) for key in KEPT
    )
