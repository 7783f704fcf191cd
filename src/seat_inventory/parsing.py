"""Turns an SQS message body into a `ReservationRequest` (reserve, hold), a `ChangeRequest` (confirm,
cancel), or an `InvalidMessage` with a precise reason.

Hand-written rather than a pydantic model: the rules are few, the reasons must name the exact
field and value, and pydantic's import cost would roughly double the handler's cold start.
"""

from __future__ import annotations

import json
import re
from typing import Any

from seat_inventory.models import (
    MAX_ORDER_LINES,
    ChangeRequest,
    InvalidMessage,
    OrderLine,
    RequestType,
    ReservationRequest,
)

# Ids become parts of DynamoDB keys ("EVENT#<id>"), so '#' and white space are excluded.
_ID_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@-]*")
MAX_ID_LENGTH = 128
MAX_SEAT_CLASS_LENGTH = 64
MAX_BODY_BYTES_ECHOED = 80
# Limits on what a reason may echo: the answer must stay far below SNS's 256 KiB, and a number
# beyond Python's own digit limit must be answered, not crash the batch.
MAX_NUMBER_DIGITS = 40
MAX_REASON_LENGTH = 240
MAX_FIELDS_NAMED = 5
# An admission token (docs/guides/admission.md) is checked by the service, not here: only its type and size.
MAX_ADMISSION_TOKEN_LENGTH = 1024

RESERVE_FIELDS = frozenset(
    {"type", "reservation_id", "event_id", "seat_class", "quantity", "customer_id", "admission_token"}
    # A mapped class (docs/guides/seat-maps.md): chosen seats, or best available's options.
    | {"seats", "split", "accessible"}
    # A multi-line order (docs/guides/orders.md) instead of seat_class and quantity.
    | {"lines"}
    # Refused for lack of seats, join the class's waiting list (docs/guides/waiting-list.md).
    | {"waitlist"}
)
# The fields of one order line, and the top-level fields an order's lines replace.
LINE_FIELDS = frozenset({"seat_class", "quantity", "seats"})
LINE_REPLACES = ("seat_class", "quantity", "seats", "split", "accessible")
HOLD_FIELDS = RESERVE_FIELDS | {"hold_seconds"}
CHANGE_FIELDS = frozenset({"type", "reservation_id", "customer_id"})
ALLOWED_FIELDS = HOLD_FIELDS | CHANGE_FIELDS
REQUIRED_FIELDS = ("reservation_id", "event_id", "quantity", "customer_id")
RESERVE_TYPE = "reserve"
MESSAGE_TYPES = (
    RequestType.RESERVE,
    RequestType.HOLD,
    RequestType.CONFIRM,
    RequestType.CANCEL,
    RequestType.LEAVE,
)
# Messages that name only a recorded reservation.
CHANGE_TYPES = (RequestType.CONFIRM, RequestType.CANCEL, RequestType.LEAVE)
FIELDS_BY_TYPE = {
    RequestType.RESERVE: RESERVE_FIELDS,
    RequestType.HOLD: HOLD_FIELDS,
    RequestType.CONFIRM: CHANGE_FIELDS,
    RequestType.CANCEL: CHANGE_FIELDS,
    RequestType.LEAVE: CHANGE_FIELDS,
}

# A hold lasts `hold_seconds`: 600 unless the message says otherwise, from 60 up to the
# deployment's MaxHoldSeconds (settings.max_hold_seconds).
DEFAULT_HOLD_SECONDS = 600
MIN_HOLD_SECONDS = 60
DEFAULT_MAX_HOLD_SECONDS = 3600


class _Invalid(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _json_type(value: Any) -> str:
    return {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}.get(
        type(value), type(value).__name__
    )


def _describe(value: Any) -> str:
    """A short, printable-ASCII rendering of a value for a reason (never raises)."""
    try:
        text = json.dumps(value, ensure_ascii=True)
    except (ValueError, RecursionError):  # nested too deeply to render: name its type only
        text = f"<{_json_type(value)}>"
    if len(text) > MAX_BODY_BYTES_ECHOED:
        text = text[:MAX_BODY_BYTES_ECHOED] + "..."
    return text


def _reject_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise _Invalid(f"field {_describe(key)} appears more than once")
        result[key] = value
    return result


def _bounded_int(text: str) -> int:
    digits = len(text.lstrip("-"))
    if digits > MAX_NUMBER_DIGITS:
        raise _Invalid(f"body has a number of {digits} digits; at most {MAX_NUMBER_DIGITS} are accepted")
    return int(text)


def _bounded_float(text: str) -> float:
    if len(text) > MAX_NUMBER_DIGITS + 10:
        raise _Invalid(
            f"body has a number of {len(text)} characters; at most {MAX_NUMBER_DIGITS + 10} are accepted"
        )
    return float(text)


def _names(names: list[str]) -> str:
    """At most MAX_FIELDS_NAMED field names, rendered safely, then how many more there are."""
    shown = ", ".join(_describe(name) for name in names[:MAX_FIELDS_NAMED])
    hidden = len(names) - MAX_FIELDS_NAMED
    return shown + (f" and {hidden} more" if hidden > 0 else "")


def _bounded_reason(reason: str) -> str:
    reason = "".join(c if " " <= c <= "~" else "?" for c in reason)
    return reason if len(reason) <= MAX_REASON_LENGTH else reason[: MAX_REASON_LENGTH - 3] + "..."


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


def _integer(body: dict[str, Any], name: str) -> int:
    value = body[name]
    # bool is a subclass of int in Python; JSON true is not a number.
    if isinstance(value, bool) or not isinstance(value, int):
        raise _Invalid(f"{name} must be an integer, got {type(value).__name__} {_describe(value)}")
    return value


def _quantity(body: dict[str, Any], max_quantity: int) -> int:
    value = _integer(body, "quantity")
    if value < 1:
        raise _Invalid(f"quantity must be at least 1, got {value}")
    if value > max_quantity:
        raise _Invalid(f"quantity {value} is above the maximum of {max_quantity} seats per reservation")
    return value


# A seat id: `<section>-<row>-<position>` (logic.seat_map).
_SEAT_ID = re.compile(r"[A-Za-z0-9_]{1,16}-[A-Za-z0-9_]{1,16}-[1-9][0-9]{0,3}")


def _seat_choice(body: dict[str, Any], max_quantity: int) -> tuple[int, tuple[str, ...] | None, bool, bool]:
    """A mapped class's fields: (quantity, chosen seats or None, split, accessible).

    With `seats`, `quantity` may be left out (it is their number) or must equal it; `split` is
    for best available only.
    """
    flags = []
    for name in ("split", "accessible"):
        value = body.get(name, False)
        if not isinstance(value, bool):
            raise _Invalid(f"{name} must be true or false, got {type(value).__name__} {_describe(value)}")
        flags.append(value)
    split, accessible = flags
    if body.get("seats") is None:
        return _quantity(body, max_quantity), None, split, accessible
    seats = _chosen_seats(body["seats"], max_quantity)
    if body.get("quantity") is not None and _integer(body, "quantity") != len(seats):
        raise _Invalid(f"quantity {body['quantity']} does not match the {len(seats)} seat(s) chosen")
    if split:
        raise _Invalid("split applies to best available (quantity), not to chosen seats")
    return len(seats), seats, split, accessible


def _chosen_seats(seats: Any, max_quantity: int) -> tuple[str, ...]:
    if not isinstance(seats, list) or not seats:
        raise _Invalid(f"seats must be a non-empty array of seat ids, got {_describe(seats)}")
    if len(seats) > max_quantity:
        raise _Invalid(f"{len(seats)} seats are above the maximum of {max_quantity} seats per reservation")
    for seat in seats:
        if not isinstance(seat, str) or not _SEAT_ID.fullmatch(seat):
            raise _Invalid(f'seats: {_describe(seat)} is not a seat id like "S101-R12-7"')
    repeated = sorted({seat for seat in seats if seats.count(seat) > 1})
    if repeated:
        raise _Invalid("seats: repeated seat id(s): " + _names(repeated))
    return tuple(seats)


def _hold_seconds(body: dict[str, Any], max_hold_seconds: int) -> int:
    if body.get("hold_seconds") is None:
        return min(DEFAULT_HOLD_SECONDS, max_hold_seconds)
    value = _integer(body, "hold_seconds")
    if value < MIN_HOLD_SECONDS:
        raise _Invalid(f"hold_seconds must be at least {MIN_HOLD_SECONDS}, got {value}")
    if value > max_hold_seconds:
        raise _Invalid(f"hold_seconds {value} is above the maximum of {max_hold_seconds}")
    return value


def _message_type(body: dict[str, Any]) -> RequestType:
    value = body.get("type", RESERVE_TYPE)
    for message_type in MESSAGE_TYPES:
        if value == message_type.value:
            return message_type
    expected = ", ".join(repr(t.value) for t in MESSAGE_TYPES)
    raise _Invalid(f"type must be one of {expected}, got {_describe(value)}")


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


def _salvage_type(body: Any) -> RequestType | None:
    if not isinstance(body, dict):
        return None
    try:
        return _message_type(body)
    except _Invalid:
        return None


def parse_reservation(
    message_id: str,
    body: str,
    *,
    default_seat_class: str,
    max_quantity: int,
    max_hold_seconds: int = DEFAULT_MAX_HOLD_SECONDS,
) -> ReservationRequest | ChangeRequest | InvalidMessage:
    """Validates one message body against the message contract (docs/reference/contract.md).

    A body without `type` (or `"type": "reserve"`) is a reservation; `hold` adds `hold_seconds`;
    `confirm`, `cancel` and `leave` name only the reservation. Returns an `InvalidMessage` (never raises)
    so that a bad message is answered once and removed from the queue instead of being retried
    until it reaches the dead-letter queue.
    """
    parsed: Any = None
    try:
        parsed = _decode(body)
        message_type = _message_type(parsed)
        misplaced = sorted(set(parsed) - FIELDS_BY_TYPE[message_type])
        if misplaced:
            raise _Invalid(f"field(s) not allowed with type {message_type.value!r}: " + _names(misplaced))
        if message_type in CHANGE_TYPES:
            return _change_request(message_id, parsed, message_type)
        return _reservation(
            message_id, parsed, message_type, default_seat_class, max_quantity, max_hold_seconds
        )
    except _Invalid as invalid:
        return InvalidMessage(
            message_id=message_id,
            reason=_bounded_reason(invalid.reason),
            reservation_id=_salvage(parsed, "reservation_id"),
            event_id=_salvage(parsed, "event_id"),
            seat_class=_salvage(parsed, "seat_class"),
            quantity=_salvage(parsed, "quantity"),
            customer_id=_salvage(parsed, "customer_id"),
            request_type=_salvage_type(parsed),
        )


def _decode(body: str) -> dict[str, Any]:
    """The body as a JSON object with only fields of the contract."""
    try:
        parsed = json.loads(
            body,
            object_pairs_hook=_reject_duplicate_keys,
            parse_constant=_reject_constant,
            parse_int=_bounded_int,
            parse_float=_bounded_float,
        )
    except json.JSONDecodeError as exc:
        where = "position" if exc.msg.endswith(" at") else "at position"
        raise _Invalid(f"body is not valid JSON: {exc.msg} {where} {exc.pos}") from exc
    except RecursionError as exc:
        raise _Invalid("body is not valid JSON: nested too deeply") from exc
    if not isinstance(parsed, dict):
        raise _Invalid(
            "body must be a JSON object, got " + ("null" if parsed is None else type(parsed).__name__)
        )
    if parsed.get("Type") == "Notification" and "Message" in parsed:
        raise _Invalid(
            "body is an SNS notification envelope; enable raw message delivery on the"
            " subscription or send the reservation itself"
        )
    unexpected = sorted(set(parsed) - ALLOWED_FIELDS)
    if unexpected:
        raise _Invalid("unexpected field(s): " + _names(unexpected))
    return parsed


def _reservation(
    message_id: str,
    parsed: dict[str, Any],
    message_type: RequestType,
    default_seat_class: str,
    max_quantity: int,
    max_hold_seconds: int,
) -> ReservationRequest:
    """A reserve or hold: one class's seats (counted, chosen or best available), or an order's lines."""
    lines = _order_lines(parsed, max_quantity)
    required = [
        n for n in REQUIRED_FIELDS if n != "quantity" or (parsed.get("seats") is None and lines is None)
    ]
    missing = [name for name in required if name not in parsed or parsed[name] is None]
    if missing:
        raise _Invalid("missing required field(s): " + ", ".join(missing))
    reservation_id = _identifier(parsed, "reservation_id", MAX_ID_LENGTH)
    event_id = _identifier(parsed, "event_id", MAX_ID_LENGTH)
    customer_id = _identifier(parsed, "customer_id", MAX_ID_LENGTH)
    seats: tuple[str, ...] | None = None
    split = accessible = False
    if lines is not None:
        seat_class, quantity = lines[0].seat_class, sum(line.quantity for line in lines)
    else:
        seat_class = default_seat_class
        if parsed.get("seat_class") is not None:
            seat_class = _identifier(parsed, "seat_class", MAX_SEAT_CLASS_LENGTH)
        quantity, seats, split, accessible = _seat_choice(parsed, max_quantity)
    hold_seconds = _hold_seconds(parsed, max_hold_seconds) if message_type is RequestType.HOLD else None
    waitlist = _waitlist(parsed, lines)
    return ReservationRequest(
        message_id=message_id,
        reservation_id=reservation_id,
        event_id=event_id,
        seat_class=seat_class,
        quantity=quantity,
        customer_id=customer_id,
        request_type=message_type,
        hold_seconds=hold_seconds,
        seats=seats,
        split=split,
        accessible=accessible,
        admission_token=_admission_token(parsed),
        lines=lines,
        waitlist=waitlist,
    )


def _waitlist(body: dict[str, Any], lines: tuple[OrderLine, ...] | None) -> bool:
    """Whether a refusal for lack of seats joins the class's waiting list (one class: not an order)."""
    value = body.get("waitlist")
    if value is None:
        return False
    if not isinstance(value, bool):
        raise _Invalid(f"waitlist must be true or false, got {_describe(value)}")
    if value and lines is not None:
        raise _Invalid("waitlist applies to a request for one seat class, not to an order's lines")
    return value


def _order_lines(body: dict[str, Any], max_quantity: int) -> tuple[OrderLine, ...] | None:
    """A multi-line order's `lines` (docs/guides/orders.md), or None for a single-line request.

    1 to MAX_ORDER_LINES objects, each `seat_class` (required) and `quantity` (1 to
    `max_quantity`) or, on a mapped class, `seats` (chosen seat ids); no two lines of one class
    (one transaction cannot update an item twice: put its seats in one line); the seats of all
    lines at most `max_quantity` (an order is one reservation); no top-level seat_class,
    quantity, seats, split or accessible beside them.
    """
    if "lines" not in body:
        return None
    value = body["lines"]
    if not isinstance(value, list):
        raise _Invalid(f"lines must be an array of 1 to {MAX_ORDER_LINES} lines, got {_describe(value)}")
    if not 1 <= len(value) <= MAX_ORDER_LINES:
        raise _Invalid(f"lines must have 1 to {MAX_ORDER_LINES} lines, got {len(value)}")
    beside = [name for name in LINE_REPLACES if name in body]
    if beside:
        raise _Invalid(
            "lines replace seat_class, quantity and seats: not allowed beside lines: " + _names(beside)
        )
    lines: list[OrderLine] = []
    first_of: dict[str, int] = {}
    for number, line in enumerate(value, start=1):
        parsed = _order_line(number, line, max_quantity)
        if parsed.seat_class in first_of:
            raise _Invalid(
                f"lines {first_of[parsed.seat_class]} and {number} both name seat class"
                f" {parsed.seat_class!r}: put its seats in one line"
            )
        first_of[parsed.seat_class] = number
        lines.append(parsed)
    total = sum(line.quantity for line in lines)
    if total > max_quantity:
        raise _Invalid(
            f"the lines ask for {total} seats; the maximum is {max_quantity} seats per reservation"
        )
    return tuple(lines)


def _order_line(number: int, line: Any, max_quantity: int) -> OrderLine:
    """One order line, its problems named `line <number>: ...`."""
    if not isinstance(line, dict):
        raise _Invalid(f"line {number} must be an object, got {_json_type(line)} {_describe(line)}")
    unexpected = sorted(set(line) - LINE_FIELDS)
    if unexpected:
        raise _Invalid(f"line {number}: unexpected field(s): " + _names(unexpected))
    required = ("seat_class", "quantity") if line.get("seats") is None else ("seat_class",)
    missing = [name for name in required if line.get(name) is None]
    if missing:
        raise _Invalid(f"line {number}: missing required field(s): " + ", ".join(missing))
    try:
        seat_class = _identifier(line, "seat_class", MAX_SEAT_CLASS_LENGTH)
        # A mapped class's line (docs/guides/seat-maps.md): chosen seats (quantity, if sent, their
        # number), or best available (quantity), as a single request's `seats` and `quantity`.
        quantity, seats, _, _ = _seat_choice(line, max_quantity)
    except _Invalid as invalid:
        raise _Invalid(f"line {number}: {invalid.reason}") from invalid
    return OrderLine(seat_class, quantity, seats=seats)


def _admission_token(body: dict[str, Any]) -> str | None:
    """The optional `admission_token`: a non-empty string of at most MAX_ADMISSION_TOKEN_LENGTH."""
    value = body.get("admission_token")
    if value is None:
        return None
    if not isinstance(value, str):
        raise _Invalid(f"admission_token must be a string, got {type(value).__name__}")
    if not 0 < len(value) <= MAX_ADMISSION_TOKEN_LENGTH:
        raise _Invalid(
            f"admission_token is {len(value)} characters long; it must be 1 to {MAX_ADMISSION_TOKEN_LENGTH}"
        )
    return value


def _change_request(message_id: str, body: dict[str, Any], message_type: RequestType) -> ChangeRequest:
    """A confirm, cancel or leave: only `reservation_id` is required; `customer_id` is an optional
    cross-check."""
    if body.get("reservation_id") is None:
        raise _Invalid("missing required field(s): reservation_id")
    reservation_id = _identifier(body, "reservation_id", MAX_ID_LENGTH)
    customer_id = None if body.get("customer_id") is None else _identifier(body, "customer_id", MAX_ID_LENGTH)
    return ChangeRequest(
        message_id=message_id,
        reservation_id=reservation_id,
        request_type=message_type,
        customer_id=customer_id,
    )
