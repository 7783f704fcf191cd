"""The one place DynamoDB's faults become domain outcomes.

Every call to DynamoDB goes through `call` (or `call_expecting`): an unreachable endpoint or a
retryable error code becomes `RetryableError`, a `TransactionConflictException` becomes
`TransactionConflict`, a throttling code becomes `Throttled`; `cancellation_reasons` reads a
cancelled transaction's reasons the same way.
Error codes are read from the response, never from a message.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from botocore.exceptions import (
    ClientError,
    ConnectionClosedError,
    ConnectTimeoutError,
    EndpointConnectionError,
    ReadTimeoutError,
)

from seat_inventory.models import RetryableError, Throttled, TransactionConflict

_Response = TypeVar("_Response")
# Error codes that mean "try again later" rather than "your request is wrong".
RETRYABLE_ERROR_CODES = frozenset(
    {
        "ThrottlingException",
        "ProvisionedThroughputExceededException",
        "RequestLimitExceeded",
        "InternalServerError",
        "ServiceUnavailable",
        "TransactionInProgressException",
        "TransactionConflictException",
    }
)
# Of those, the codes that mean throughput was refused (a hot partition, or the table's or
# account's limit): `Throttled`.
THROTTLING_ERROR_CODES = frozenset(
    {"ThrottlingException", "ProvisionedThroughputExceededException", "RequestLimitExceeded"}
)
THROTTLING_CANCELLATION_CODES = frozenset({"ThrottlingError", "ProvisionedThroughputExceeded"})
NETWORK_ERRORS = (EndpointConnectionError, ConnectTimeoutError, ReadTimeoutError, ConnectionClosedError)
TRANSACTION_CANCELED = "TransactionCanceledException"
CONDITION_FAILED = "ConditionalCheckFailedException"


def error_code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", ""))


def call(operation: Callable[..., _Response], /, **params: Any) -> _Response:
    """Calls DynamoDB; the one place its faults are classified.

    Unreachable or a retryable error code raises RetryableError (a TransactionConflictException
    raises TransactionConflict, a throttling code Throttled); any other error propagates unchanged.
    """
    try:
        return operation(**params)
    except NETWORK_ERRORS as exc:
        raise RetryableError(f"DynamoDB unreachable: {exc}") from exc
    except ClientError as exc:
        code = error_code(exc)
        if code == "TransactionConflictException":
            raise TransactionConflict(code) from exc
        if code in THROTTLING_ERROR_CODES:
            raise Throttled(code) from exc
        if code in RETRYABLE_ERROR_CODES:
            raise RetryableError(code) from exc
        raise


def call_expecting(
    code: str, operation: Callable[..., _Response], /, **params: Any
) -> _Response | ClientError:
    """`call`, but the error with `code` (a refusal the caller reads) is returned instead of raised."""
    try:
        return call(operation, **params)
    except ClientError as exc:
        if error_code(exc) == code:
            return exc
        raise


def cancellation_reasons(exc: ClientError, expected_count: int) -> list[dict[str, Any]]:
    """The per-action reasons of a cancelled transaction; transient ones raise a retryable error."""
    reasons: list[dict[str, Any]] = exc.response.get("CancellationReasons", [])  # type: ignore[assignment]
    codes = [reason.get("Code") or "None" for reason in reasons]
    if "TransactionConflict" in codes:
        raise TransactionConflict("TransactionConflict") from exc
    if any(code in THROTTLING_CANCELLATION_CODES for code in codes):
        raise Throttled(",".join(codes)) from exc
    unexpected = {code for code in codes if code not in ("None", "ConditionalCheckFailed")}
    if unexpected or len(reasons) != expected_count:
        raise RuntimeError(f"transaction cancelled for reasons {codes}") from exc
    return reasons


def failed_condition(reason: Mapping[str, Any]) -> bool:
    return reason.get("Code") == "ConditionalCheckFailed"
