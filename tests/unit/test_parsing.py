"""The message contract: what is accepted, and the exact reason for what is not."""

from __future__ import annotations

import json

import pytest

from seat_inventory.models import ChangeRequest, InvalidMessage, RequestType, ReservationRequest
from seat_inventory.parsing import parse_reservation


def parse(body: object) -> ReservationRequest | InvalidMessage:
    text = body if isinstance(body, str) else json.dumps(body)
    return parse_reservation("msg-1", text, default_seat_class="GA", max_quantity=10)


GOOD = {"reservation_id": "r-1", "event_id": "e-1", "seat_class": "VIP", "quantity": 2, "customer_id": "c-9"}


def test_a_well_formed_message_becomes_a_request() -> None:
    assert parse(GOOD) == ReservationRequest("msg-1", "r-1", "e-1", "VIP", 2, "c-9")


def test_seat_class_defaults_when_absent_or_null() -> None:
    for body in ({k: v for k, v in GOOD.items() if k != "seat_class"}, {**GOOD, "seat_class": None}):
        parsed = parse(body)
        assert isinstance(parsed, ReservationRequest)
        assert parsed.seat_class == "GA"


def test_explicit_reserve_type_is_accepted() -> None:
    assert isinstance(parse({**GOOD, "type": "reserve"}), ReservationRequest)


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ('{"reservation_id": "r-9"', "body is not valid JSON: Expecting ',' delimiter at position 24"),
        ("", "body is not valid JSON: Expecting value at position 0"),
        ("[1, 2]", "body must be a JSON object, got list"),
        ('"r-1"', "body must be a JSON object, got str"),
        ({**GOOD, "quantity": 0}, "quantity must be at least 1, got 0"),
        ({**GOOD, "quantity": -3}, "quantity must be at least 1, got -3"),
        ({**GOOD, "quantity": 11}, "quantity 11 is above the maximum of 10 seats per reservation"),
        ({**GOOD, "quantity": 2.5}, "quantity must be an integer, got float 2.5"),
        ({**GOOD, "quantity": 2.0}, "quantity must be an integer, got float 2.0"),
        ({**GOOD, "quantity": "two"}, 'quantity must be an integer, got str "two"'),
        ({**GOOD, "quantity": True}, "quantity must be an integer, got bool true"),
        (
            {**GOOD, "quantity": 10**30},
            "quantity 1000000000000000000000000000000 is above the maximum of 10 seats per reservation",
        ),
        ({k: v for k, v in GOOD.items() if k != "event_id"}, "missing required field(s): event_id"),
        ({"event_id": "e-1"}, "missing required field(s): reservation_id, quantity, customer_id"),
        ({**GOOD, "customer_id": None}, "missing required field(s): customer_id"),
        ({**GOOD, "event_id": ""}, "event_id must not be empty"),
        ({**GOOD, "event_id": 7}, "event_id must be a string, got int 7"),
        ({**GOOD, "reservation_id": "r" * 129}, "reservation_id is 129 characters long; the maximum is 128"),
        (
            {**GOOD, "event_id": "EVENT#x"},
            'event_id "EVENT#x" may only contain ASCII letters, digits and . _ : @ - and must start with a letter or digit',
        ),
        (
            {**GOOD, "customer_id": "c\n9"},
            'customer_id "c\\n9" may only contain ASCII letters, digits and . _ : @ - and must start with a letter or digit',
        ),
        (
            {**GOOD, "seat_class": "G\u00c1"},
            'seat_class "G\\u00c1" may only contain ASCII letters, digits and . _ : @ - and must start with a letter or digit',
        ),
        ({**GOOD, "price": 10}, 'unexpected field(s): "price"'),
        (
            {**GOOD, "type": "refund"},
            "type must be one of 'reserve', 'hold', 'confirm', 'cancel', 'leave', got \"refund\"",
        ),
        (
            '{"reservation_id": "r-1", "reservation_id": "r-2"}',
            'field "reservation_id" appears more than once',
        ),
        ('{"quantity": NaN}', "body is not valid JSON: NaN is not a number"),
        (
            {"Type": "Notification", "Message": json.dumps(GOOD)},
            "body is an SNS notification envelope; enable raw message delivery on the subscription or send the reservation itself",
        ),
    ],
)
def test_each_bad_message_is_answered_with_its_exact_reason(body: object, reason: str) -> None:
    parsed = parse(body)
    assert isinstance(parsed, InvalidMessage)
    assert parsed.reason == reason
    assert parsed.message_id == "msg-1"


def test_an_invalid_message_keeps_the_fields_that_could_be_read() -> None:
    parsed = parse({**GOOD, "quantity": "two"})
    assert isinstance(parsed, InvalidMessage)
    assert (parsed.reservation_id, parsed.event_id, parsed.customer_id, parsed.quantity) == (
        "r-1",
        "e-1",
        "c-9",
        None,
    )


def test_a_huge_body_gives_a_short_reason() -> None:
    parsed = parse({**GOOD, "event_id": "x" * 256_000})
    assert isinstance(parsed, InvalidMessage)
    assert len(parsed.reason) < 200


# --- hold, confirm and cancel messages ------------------------------------------------------------

HOLD = {**GOOD, "type": "hold"}


def parse_with_hold_limit(body: object, max_hold_seconds: int = 3600) -> object:
    return parse_reservation(
        "msg-1", json.dumps(body), default_seat_class="GA", max_quantity=10, max_hold_seconds=max_hold_seconds
    )


def test_a_hold_becomes_a_hold_request_with_the_default_of_ten_minutes() -> None:
    # Given a hold without hold_seconds; When parsed; Then it is a hold of 600 s
    parsed = parse(HOLD)
    assert parsed == ReservationRequest(
        "msg-1", "r-1", "e-1", "VIP", 2, "c-9", request_type=RequestType.HOLD, hold_seconds=600
    )
    assert isinstance(parsed, ReservationRequest) and parsed.is_hold


def test_a_hold_keeps_its_hold_seconds_within_the_bounds() -> None:
    for seconds in (60, 900, 3600):
        parsed = parse_with_hold_limit({**HOLD, "hold_seconds": seconds})
        assert isinstance(parsed, ReservationRequest) and parsed.hold_seconds == seconds


def test_the_default_hold_never_exceeds_a_lower_deployment_maximum() -> None:
    parsed = parse_with_hold_limit(HOLD, max_hold_seconds=300)
    assert isinstance(parsed, ReservationRequest) and parsed.hold_seconds == 300


def test_a_message_without_type_is_still_a_reservation_exactly_as_before() -> None:
    parsed = parse(GOOD)
    assert parsed == ReservationRequest("msg-1", "r-1", "e-1", "VIP", 2, "c-9")
    assert isinstance(parsed, ReservationRequest)
    assert (parsed.request_type, parsed.hold_seconds) == (RequestType.RESERVE, None)


@pytest.mark.parametrize("kind", ["confirm", "cancel"])
def test_confirm_and_cancel_name_only_the_reservation(kind: str) -> None:
    assert parse({"type": kind, "reservation_id": "r-1"}) == ChangeRequest("msg-1", "r-1", RequestType(kind))
    assert parse({"type": kind, "reservation_id": "r-1", "customer_id": "c-9"}) == ChangeRequest(
        "msg-1", "r-1", RequestType(kind), customer_id="c-9"
    )


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ({**HOLD, "hold_seconds": 59}, "hold_seconds must be at least 60, got 59"),
        ({**HOLD, "hold_seconds": 3601}, "hold_seconds 3601 is above the maximum of 3600"),
        ({**HOLD, "hold_seconds": 600.0}, "hold_seconds must be an integer, got float 600.0"),
        ({**HOLD, "hold_seconds": "600"}, 'hold_seconds must be an integer, got str "600"'),
        ({**HOLD, "hold_seconds": True}, "hold_seconds must be an integer, got bool true"),
        ({**GOOD, "hold_seconds": 600}, "field(s) not allowed with type 'reserve': \"hold_seconds\""),
        (
            {**GOOD, "type": "reserve", "hold_seconds": 600},
            "field(s) not allowed with type 'reserve': \"hold_seconds\"",
        ),
        ({"type": "confirm"}, "missing required field(s): reservation_id"),
        ({"type": "cancel", "reservation_id": None}, "missing required field(s): reservation_id"),
        (
            {"type": "confirm", "reservation_id": "r-1", "quantity": 2},
            "field(s) not allowed with type 'confirm': \"quantity\"",
        ),
        (
            {"type": "cancel", "reservation_id": "r-1", "event_id": "e-1", "seat_class": "GA"},
            'field(s) not allowed with type \'cancel\': "event_id", "seat_class"',
        ),
        (
            {"type": "cancel", "reservation_id": "r#1"},
            'reservation_id "r#1" may only contain ASCII letters, digits and . _ : @ - and must start with a letter or digit',
        ),
        (
            {"type": "confirm", "reservation_id": "r-1", "customer_id": 9},
            "customer_id must be a string, got int 9",
        ),
        (
            {**GOOD, "type": None},
            "type must be one of 'reserve', 'hold', 'confirm', 'cancel', 'leave', got null",
        ),
        (
            {**GOOD, "type": "HOLD"},
            "type must be one of 'reserve', 'hold', 'confirm', 'cancel', 'leave', got \"HOLD\"",
        ),
        (
            {"type": "expire", "reservation_id": "r-1"},
            "type must be one of 'reserve', 'hold', 'confirm', 'cancel', 'leave', got \"expire\"",
        ),
    ],
)
def test_each_bad_lifecycle_message_is_answered_with_its_exact_reason(body: object, reason: str) -> None:
    parsed = parse_with_hold_limit(body)
    assert isinstance(parsed, InvalidMessage)
    assert parsed.reason == reason


def test_an_invalid_message_keeps_its_type_when_the_type_itself_was_fine() -> None:
    parsed = parse({**HOLD, "hold_seconds": 1})
    assert isinstance(parsed, InvalidMessage)
    assert (parsed.request_type, parsed.reservation_id) == (RequestType.HOLD, "r-1")
    untyped = parse({**GOOD, "type": "refund"})
    assert isinstance(untyped, InvalidMessage) and untyped.request_type is None
