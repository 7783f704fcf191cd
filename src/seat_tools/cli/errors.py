"""What `seats` says when a command fails: one line naming the problem and what to do, and an exit code.

`SeatsGroup` (cli/main.py) passes every exception a command raises through `explain`, so a
command added later gets the same messages and exit codes without handling AWS errors itself.
`seats --debug ...` prints the traceback as well.

Exit codes (docs/reference/seats-tool.md, "Errors and exit codes"):

| code | meaning |
|------|---------|
| 0    | done |
| 1    | the command ran and reports a failure (an unknown event, a refused change, failed checks) |
| 2    | usage: a bad option or argument, or no resource names (no --stack-name, no TABLE_NAME, ...) |
| 3    | AWS configuration: unknown profile, no region, no or invalid credentials, bad endpoint URL |
| 4    | AWS unreachable or busy (connection refused, timeout, throttled): try again |
| 5    | AWS refused the call: a missing table, queue, topic or stack, access denied |
| 130  | interrupted (Ctrl-C, SIGTERM) |
"""

from __future__ import annotations

from enum import IntEnum

import click
from botocore.exceptions import (
    ClientError,
    ConnectionClosedError,
    ConnectTimeoutError,
    EndpointConnectionError,
    NoCredentialsError,
    NoRegionError,
    PartialCredentialsError,
    ProfileNotFound,
    ReadTimeoutError,
)

from seat_inventory.models import RetryableError


class ExitCode(IntEnum):
    OK = 0
    FAILED = 1
    USAGE = 2
    CONFIGURATION = 3
    UNAVAILABLE = 4
    REFUSED = 5
    INTERRUPTED = 130


class CommandError(click.ClickException):
    """A failure explained in one line, with its exit code."""

    def __init__(self, message: str, exit_code: ExitCode = ExitCode.FAILED) -> None:
        super().__init__(message)
        self.exit_code = int(exit_code)


class InvalidClientSettings(Exception):
    """An endpoint URL (from --endpoint-url or AWS_ENDPOINT_URL*) or region botocore cannot use."""


NETWORK_ERRORS = (EndpointConnectionError, ConnectTimeoutError, ReadTimeoutError, ConnectionClosedError)
# Error codes that say the credentials themselves are wrong (not that they lack a permission).
CREDENTIAL_ERROR_CODES = frozenset(
    {
        "UnrecognizedClientException",
        "InvalidClientTokenId",
        "ExpiredToken",
        "ExpiredTokenException",
        "InvalidSignatureException",
        "SignatureDoesNotMatch",
        "InvalidAccessKeyId",
    }
)
# Error codes that say AWS is busy: the same call may well succeed a moment later.
BUSY_ERROR_CODES = frozenset(
    {
        "Throttling",
        "ThrottlingException",
        "ThrottledException",
        "RequestThrottled",
        "RequestLimitExceeded",
        "TooManyRequestsException",
        "ProvisionedThroughputExceededException",
        "TransactionConflictException",
        "ServiceUnavailable",
        "InternalError",
        "InternalServerError",
    }
)
ENDPOINT_HINT = "check --endpoint-url / AWS_ENDPOINT_URL* (is `seats local up` running?) or your network"
RESOURCE_HINT = (
    "check the resource names (--stack-name / SEATS_STACK_NAME, or TABLE_NAME, OUTCOMES_TOPIC_ARN,"
    " RESERVATIONS_QUEUE_URL, DEAD_LETTER_QUEUE_URL), --region and --endpoint-url"
)


def _causes(exc: BaseException) -> list[BaseException]:
    """The exception and what it was raised from (or while handling), outermost first."""
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in chain:
        chain.append(current)
        current = current.__cause__ or current.__context__
    return chain


def explain(exc: BaseException, doing: str | None = None) -> CommandError | None:
    """A one-line CommandError for a failure the user can act on, or None for an unknown one (a bug)."""
    prefix = f"{doing}: " if doing else ""
    for cause in _causes(exc):
        error = _explain_one(cause)
        if error is not None:
            return CommandError(prefix + error.message, ExitCode(error.exit_code))
    return None


def _explain_one(exc: BaseException) -> CommandError | None:
    if isinstance(exc, ProfileNotFound):
        return CommandError(
            f"the AWS profile {exc.kwargs.get('profile')!r} is not configured: check --profile / AWS_PROFILE,"
            " or create it with `aws configure --profile NAME`",
            ExitCode.CONFIGURATION,
        )
    if isinstance(exc, NoRegionError):
        return CommandError(
            "no AWS region: pass --region, set AWS_REGION, or set a region in your profile",
            ExitCode.CONFIGURATION,
        )
    if isinstance(exc, NoCredentialsError | PartialCredentialsError):
        return CommandError(
            "no AWS credentials found: pass --profile, set AWS_PROFILE or AWS_ACCESS_KEY_ID and"
            " AWS_SECRET_ACCESS_KEY, or run `aws configure` (for the local stack, paste the exports"
            " `seats local up` prints)",
            ExitCode.CONFIGURATION,
        )
    if isinstance(exc, InvalidClientSettings):
        return CommandError(str(exc), ExitCode.CONFIGURATION)
    if isinstance(exc, NETWORK_ERRORS):
        endpoint = exc.kwargs.get("endpoint_url", "")
        return CommandError(
            f"cannot reach {endpoint or 'AWS'} ({type(exc).__name__}): {ENDPOINT_HINT}",
            ExitCode.UNAVAILABLE,
        )
    if isinstance(exc, ClientError):
        error = exc.response.get("Error", {})
        code = str(error.get("Code", "Error"))
        detail = f"{exc.operation_name} was refused: {code}: {error.get('Message', '')}".rstrip(": ")
        if code in CREDENTIAL_ERROR_CODES:
            return CommandError(
                f"{detail}; check your credentials (--profile, AWS_PROFILE, AWS_ACCESS_KEY_ID)",
                ExitCode.CONFIGURATION,
            )
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 400)
        if status >= 500 or code in BUSY_ERROR_CODES:
            return CommandError(f"{detail}; AWS is busy, try again", ExitCode.UNAVAILABLE)
        return CommandError(f"{detail}; {RESOURCE_HINT}", ExitCode.REFUSED)
    if isinstance(exc, RetryableError):
        # Network causes are explained above (the chain is walked outermost first, so they come later).
        network = [c for c in _causes(exc) if isinstance(c, NETWORK_ERRORS)]
        if network:
            return _explain_one(network[0])
        return CommandError(f"AWS is busy ({exc}); try again", ExitCode.UNAVAILABLE)
    return None
