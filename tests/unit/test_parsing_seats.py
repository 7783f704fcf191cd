"""The mapped classes' message fields (docs/reference/contract.md): seats, split, accessible."""

from __future__ import annotations

import json

import pytest

from seat_inventory.models import InvalidMessage, RequestType, ReservationRequest
from seat_inventory.parsing import parse_reservation

BASE = {"reservation_id": "r-1", "event_id": "e-1", "customer_id": "c-1", "seat_class": "STALLS"}


def parse(**fields: object) -> ReservationRequest | InvalidMessage:
    parsed = parse_reservation("m-1", json.dumps({**BASE, **fields}), default_seat_class="GA", max_quantity=4)
    assert not isinstance(parsed, InvalidMessage) or "\n" not in parsed.reason
    return parsed  # type: ignore[return-value]


def test_chosen_seats_need_no_quantity() -> None:
    parsed = parse(seats=["S101-R12-7", "S101-R12-8"])
    assert isinstance(parsed, ReservationRequest)
    assert (parsed.seats, parsed.quantity, parsed.split, parsed.accessible) == (
        ("S101-R12-7", "S101-R12-8"),
        2,
        False,
        False,
    )
    held = parse(type="hold", seats=["A-R1-1"], quantity=1, accessible=True)
    assert isinstance(held, ReservationRequest)
    assert held.request_type is RequestType.HOLD and held.accessible and held.hold_seconds == 600


def test_best_available_options() -> None:
    parsed = parse(quantity=3, split=True, accessible=False)
    assert isinstance(parsed, ReservationRequest)
    assert parsed.seats is None and parsed.quantity == 3 and parsed.split


@pytest.mark.parametrize(
    ("fields", "reason"),
    [
        ({"seats": []}, "seats must be a non-empty array of seat ids, got []"),
        ({"seats": "A-R1-1"}, 'seats must be a non-empty array of seat ids, got "A-R1-1"'),
        ({"seats": ["A-R1-1", 7]}, 'seats: 7 is not a seat id like "S101-R12-7"'),
        ({"seats": ["A-R1-0"]}, 'seats: "A-R1-0" is not a seat id'),
        ({"seats": ["A#1-R1-1"]}, "is not a seat id"),
        ({"seats": ["A-R1-1", "A-R1-1"]}, 'seats: repeated seat id(s): "A-R1-1"'),
        ({"seats": ["A-R1-1", "A-R1-2"], "quantity": 3}, "quantity 3 does not match the 2 seat(s) chosen"),
        ({"seats": [f"A-R1-{n}" for n in range(1, 6)]}, "5 seats are above the maximum of 4"),
        (
            {"seats": ["A-R1-1"], "split": True},
            "split applies to best available (quantity), not to chosen seats",
        ),
        ({"quantity": 2, "split": "yes"}, 'split must be true or false, got str "yes"'),
        ({"quantity": 2, "accessible": 1}, "accessible must be true or false, got int 1"),
        ({"split": True}, "missing required field(s): quantity"),
        ({"seats": None}, "missing required field(s): quantity"),
    ],
)
def test_malformed_seat_fields_are_invalid_with_one_line_reasons(fields: dict, reason: str) -> None:
    parsed = parse(**fields)
    assert isinstance(parsed, InvalidMessage)
    assert reason in parsed.reason
    assert parsed.reservation_id == "r-1"


def test_seat_fields_are_not_allowed_on_confirm() -> None:
    parsed = parse_reservation(
        "m",
        json.dumps({"type": "confirm", "reservation_id": "r", "seats": ["A-R1-1"]}),
        default_seat_class="GA",
        max_quantity=4,
    )
    assert (
        isinstance(parsed, InvalidMessage) and "not allowed with type 'confirm': \"seats\"" in parsed.reason
    )
