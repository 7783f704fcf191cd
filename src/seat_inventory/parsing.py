"""Turns an SQS message body into a `ReservationRequest`, or an `InvalidMessage` with a precise reason.

Hand-written rather than a pydantic model: the rules are few, the reasons must name the exact
field and value, and pydantic's import cost would roughly double the handler's cold start.
"""

from __future__ import annotations

import json
import re
from typing import Any

from seat_inventory.models import InvalidMessage, ReservationRequest

# Ids become parts of DynamoDB keys ("EVENT#<id>"), so '#' and white space are excluded.
_ID_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@-]*")
MAX_ID_LENGTH = 128
MAX_SEAT_CLASS_LENGTH = 64
MAX_BODY_BYTES_ECHOED = 80

ALLOWED_FIELDS = frozenset({"type", "reservation_id", "event_id", "seat_class", "quantity", "customer_id"})
REQUIRED_FIELDS = ("reservation_id", "event_id", "quantity", "customer_id")
RESERVE_TYPE = "reserve"


class _Invalid(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _describe(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=True)
    if len(text) > MAX_BODY_BYTES_ECHOED:
        text = text[:MAX_BODY_BYTES_ECHOED] + "..."
    return text


def _reject_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise _Invalid(f"field '{key}' appears more than once")
        result[key] = value
    return result


def _reject_constant(name: str) -> Any:
    raise _Invalid(f"body is not valid JSON: {name} is not a number")


def id_problem(name: str, value: str, max_length: int) -> str | None:
    """What is wrong with an identifier string, or None; shared with the `seats` command line."""
    if not value:
        return f"{name} must not be empty"
    if len(value) > max_length:
        return f"{name} is {len(value)} characters long; the maximum is {max_length}"
    if not _ID_PATTERN.fullmatch(value):
        return (
            f"{name} {_describe(value)} may only contain ASCII letters, digits and . _ : @ -"
            " and must start with a letter or digit"
        )
    return None


def _identifier(body: dict[str, Any], name: str, max_length: int) -> str:
    value = body[name]
    if not isinstance(value, str):
        raise _Invalid(f"{name} must be a string, got {type(value).__name__} {_describe(value)}")
    problem = id_problem(name, value, max_length)
    if problem:
        raise _Invalid(problem)
    return value


def _quantity(body: dict[str, Any], max_quantity: int) -> int:
    value = body["quantity"]
    # bool is a subclass of int in Python; JSON true is not a quantity.
    if isinstance(value, bool) or not isinstance(value, int):
        raise _Invalid(f"quantity must be an integer, got {type(value).__name__} {_describe(value)}")
    if value < 1:
        raise _Invalid(f"quantity must be at least 1, got {value}")
    if value > max_quantity:
        raise _Invalid(f"quantity {value} is above the maximum of {max_quantity} seats per reservation")
    return value


def _salvage(body: Any, name: str) -> Any:
    """Reads a field for the INVALID outcome when it is usable, so the producer can match it."""
    if not isinstance(body, dict):
        return None
    value = body.get(name)
    if name == "quantity":
        return value if isinstance(value, int) and not isinstance(value, bool) else None
    if isinstance(value, str) and 0 < len(value) <= MAX_ID_LENGTH and _ID_PATTERN.fullmatch(value):
        return value
    return None


def parse_reservation(
    message_id: str, body: str, *, default_seat_class: str, max_quantity: int
) -> ReservationRequest | InvalidMessage:
    """Validates one message body against the reservation contract.

    Returns an `InvalidMessage` (never raises) so that a bad message is answered once and
    removed from the queue instead of being retried until it reaches the dead-letter queue.
    """
    parsed: Any = None
    try:
        try:
            parsed = json.loads(
                body, object_pairs_hook=_reject_duplicate_keys, parse_constant=_reject_constant
            )
        except json.JSONDecodeError as exc:
            raise _Invalid(f"body is not valid JSON: {exc.msg} at position {exc.pos}") from exc
        except RecursionError as exc:
            raise _Invalid("body is not valid JSON: nested too deeply") from exc
        if not isinstance(parsed, dict):
            raise _Invalid(f"body must be a JSON object, got {type(parsed).__name__}")
        if parsed.get("Type") == "Notification" and "Message" in parsed:
            raise _Invalid(
                "body is an SNS notification envelope; enable raw message delivery on the"
                " subscription or send the reservation itself"
            )
        unexpected = sorted(set(parsed) - ALLOWED_FIELDS)
        if unexpected:
            raise _Invalid("unexpected field(s): " + ", ".join(_describe(name) for name in unexpected))
        message_type = parsed.get("type", RESERVE_TYPE)
        if message_type != RESERVE_TYPE:
            raise _Invalid(f"type must be {RESERVE_TYPE!r}, got {_describe(message_type)}")
        missing = [name for name in REQUIRED_FIELDS if name not in parsed or parsed[name] is None]
        if missing:
            raise _Invalid("missing required field(s): " + ", ".join(missing))
        reservation_id = _identifier(parsed, "reservation_id", MAX_ID_LENGTH)
        event_id = _identifier(parsed, "event_id", MAX_ID_LENGTH)
        customer_id = _identifier(parsed, "customer_id", MAX_ID_LENGTH)
        if parsed.get("seat_class") is None:
            seat_class = default_seat_class
        else:
            seat_class = _identifier(parsed, "seat_class", MAX_SEAT_CLASS_LENGTH)
        quantity = _quantity(parsed, max_quantity)
    except _Invalid as invalid:
        return InvalidMessage(
            message_id=message_id,
            reason=invalid.reason,
            reservation_id=_salvage(parsed, "reservation_id"),
            event_id=_salvage(parsed, "event_id"),
            seat_class=_salvage(parsed, "seat_class"),
            quantity=_salvage(parsed, "quantity"),
            customer_id=_salvage(parsed, "customer_id"),
        )
    return ReservationRequest(
        message_id=message_id,
        reservation_id=reservation_id,
        event_id=event_id,
        seat_class=seat_class,
        quantity=quantity,
        customer_id=customer_id,
    )
