"""The checkout API's mapping templates, as written in template.yaml, rendered by the renderer the local
API uses (`seat_tools.local.mapping_templates`, airspeed-ext). No network: the integration
answers are the JSON SQS and DynamoDB give API Gateway.

What a request template renders is checked against the message contract itself: the SQS message
body it produces must parse (`parse_reservation`) to the request the route stands for.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from seat_inventory.dal.items import inventory_key, seat_attribute, section_pk
from seat_inventory.logic.seat_map import MAX_ROW_SEATS
from seat_inventory.models import (
    MAX_SHARDS,
    ChangeRequest,
    InvalidMessage,
    RequestType,
    ReservationRequest,
    SeatKey,
)
from seat_inventory.parsing import parse_reservation
from seat_tools.local.gateway import ApiDefinition, ApiRequest, IntegrationResult, LocalApiGateway, Route
from seat_tools.local.mapping_templates import InputVariable, json_path, render
from seat_tools.local.template import PhysicalResource, default_template_path, load_template
from seat_tools.reservation_queues import queue_index, queue_name
from seat_tools.seat_layout import layout_items, section_layouts
from seat_tools.seat_map_files import load_csv

TABLE = "seats-test-InventoryTable"
QUEUE = "seats-test-reservations"
REQUEST_ID = "0b5c1f6e-7d7a-4c5e-9f43-2a9c8f3d1e00"
NOW_MS = 1_800_000_000_000
INTERNAL = ("pk", "sk", "gsi1pk", "gsi1sk", "expires_at", "customer_id", "customer_counted", "message_id")


@pytest.fixture(scope="module")
def api() -> ApiDefinition:
    template = load_template(default_template_path())
    resolver = template.resolver.with_resources(
        {
            "InventoryTable": PhysicalResource(TABLE, {"Arn": f"arn:aws:dynamodb:us-east-1:1:table/{TABLE}"}),
            "ReservationsQueue": PhysicalResource(
                f"http://127.0.0.1/123456789012/{QUEUE}", {"QueueName": QUEUE, "Arn": "arn"}
            ),
        }
    )
    return ApiDefinition.from_template(template.path, resolver)


def route(api: ApiDefinition, method: str, path: str) -> Route:
    return next(r for r in api.routes if r.method == method and r.resource_path == path)


def integration(api: ApiDefinition, method: str, path: str) -> Mapping[str, Any]:
    return route(api, method, path).operation["x-amazon-apigateway-integration"]


def context() -> dict[str, Any]:
    return {"requestId": REQUEST_ID, "requestTimeEpoch": NOW_MS, "error": {}}


def render_request(
    api: ApiDefinition,
    method: str,
    path: str,
    body: Any = None,
    *,
    headers: Mapping[str, str] | None = None,
    path_parameters: Mapping[str, str] | None = None,
) -> str:
    template = integration(api, method, path)["requestTemplates"]["application/json"]
    payload = "" if body is None else json.dumps(body)
    variable = InputVariable(payload, path=path_parameters, header=headers)
    return render(template, input_variable=variable, context=context()).body


def render_response(
    api: ApiDefinition,
    method: str,
    path: str,
    selection: str,
    answer: Any,
    *,
    headers: Mapping[str, str] | None = None,
    path_parameters: Mapping[str, str] | None = None,
    now_ms: int = NOW_MS,
) -> tuple[int, dict[str, str], Any]:
    response = integration(api, method, path)["responses"][selection]
    variable = InputVariable(json.dumps(answer), path=path_parameters, header=headers)
    rendered = render(
        response["responseTemplates"]["application/json"],
        input_variable=variable,
        context={**context(), "requestTimeEpoch": now_ms},
    )
    status = rendered.status_override or int(response["statusCode"])
    return status, rendered.header_overrides, json.loads(rendered.body)


def send_message(form: str) -> dict[str, list[str]]:
    """The SendMessage call a rendered template makes (form fields); no line break may leak in."""
    assert form.startswith("Action=SendMessage&") and "\n" not in form.strip("\n"), form
    return parse_qs(form.strip("\n"), keep_blank_values=True)


def message(form: str) -> ReservationRequest | ChangeRequest | InvalidMessage:
    (body,) = send_message(form)["MessageBody"]
    return parse_reservation("m-1", body, default_seat_class="GA", max_quantity=10, max_hold_seconds=3600)


# --- POST /reservations and /holds: SQS SendMessage --------------------------------------------


def test_a_reservation_becomes_a_reserve_message_with_the_idempotency_key_as_its_id(
    api: ApiDefinition,
) -> None:
    form = render_request(
        api,
        "POST",
        "/reservations",
        {"event_id": "concert-2026", "quantity": 2, "customer_id": "c-9", "seat_class": "VIP"},
        headers={"Idempotency-Key": "order-77"},
    )
    assert message(form) == ReservationRequest(
        message_id="m-1",
        reservation_id="order-77",
        event_id="concert-2026",
        seat_class="VIP",
        quantity=2,
        customer_id="c-9",
    )
    assert "DelaySeconds" not in send_message(form)


def test_without_an_idempotency_key_the_request_id_is_the_reservation_id(api: ApiDefinition) -> None:
    form = render_request(
        api, "POST", "/reservations", {"event_id": "e-1", "quantity": 1, "customer_id": "c-1"}
    )
    parsed = message(form)
    assert isinstance(parsed, ReservationRequest)
    assert (parsed.reservation_id, parsed.seat_class) == (REQUEST_ID, "GA")


def test_a_hold_carries_its_hold_seconds(api: ApiDefinition) -> None:
    body = {"event_id": "e-1", "quantity": 3, "customer_id": "c-1", "hold_seconds": 900}
    parsed = message(render_request(api, "POST", "/holds", body, headers={"Idempotency-Key": "h-1"}))
    assert isinstance(parsed, ReservationRequest)
    assert (parsed.request_type, parsed.reservation_id, parsed.hold_seconds) == (RequestType.HOLD, "h-1", 900)


@pytest.mark.parametrize("path", ["/reservations", "/holds"])
def test_an_admission_token_is_passed_on_as_sent(api: ApiDefinition, path: str) -> None:
    token = "v1.k1.eyJjaWQiOiJjLTEifQ.AbC-_x"
    body = {"event_id": "e-1", "quantity": 1, "customer_id": "c-1", "admission_token": token}
    parsed = message(render_request(api, "POST", path, body, headers={"Idempotency-Key": "r-1"}))
    without = message(render_request(api, "POST", path, {**body, "admission_token": None}))

    assert isinstance(parsed, ReservationRequest) and parsed.admission_token == token
    assert isinstance(without, ReservationRequest) and without.admission_token is None


@pytest.mark.parametrize("path", ["/reservations", "/holds"])
def test_a_request_to_wait_is_passed_on(api: ApiDefinition, path: str) -> None:
    body = {"event_id": "e-1", "quantity": 2, "customer_id": "c-1", "waitlist": True}
    parsed = message(render_request(api, "POST", path, body, headers={"Idempotency-Key": "r-1"}))
    without = message(render_request(api, "POST", path, {**body, "waitlist": None}))

    assert isinstance(parsed, ReservationRequest) and parsed.waitlist
    assert isinstance(without, ReservationRequest) and not without.waitlist


@pytest.mark.parametrize("token", ["", "has space", "x" * 1025, "a\n", 5])
def test_the_model_refuses_an_admission_token_the_service_would_not_take(
    api: ApiDefinition, token: Any
) -> None:
    gateway = LocalApiGateway(api, backends=None, account_id="123456789012")  # type: ignore[arg-type]
    schema = route(api, "POST", "/reservations").operation["requestBody"]["content"]["application/json"][
        "schema"
    ]
    body = {"event_id": "e-1", "quantity": 1, "customer_id": "c-1", "admission_token": token}

    assert gateway.body_problems(schema, json.dumps(body))


@pytest.mark.parametrize(
    ("path", "body", "key"),
    [
        ("/reservations", {"event_id": "e", "quantity": 1, "customer_id": "c"}, "has space"),
        ("/reservations", {"event_id": "e", "quantity": 1, "customer_id": "c"}, "-starts-with-dash"),
        ("/reservations", {"event_id": "e", "quantity": 1, "customer_id": "c"}, "x" * 129),
        ("/reservations", {"event_id": "e", "quantity": 11, "customer_id": "c"}, ""),
        ("/holds", {"event_id": "e", "quantity": 1, "customer_id": "c", "hold_seconds": 3601}, ""),
        # A mapped class's fields the model cannot relate to each other (docs/guides/seat-maps.md).
        ("/reservations", {"event_id": "e", "customer_id": "c"}, ""),
        ("/reservations", {"event_id": "e", "customer_id": "c", "seats": ["A-R1-1"], "quantity": 2}, ""),
        ("/holds", {"event_id": "e", "customer_id": "c", "seats": [f"A-R1-{n}" for n in range(1, 12)]}, ""),
        ("/reservations", {"event_id": "e", "customer_id": "c", "seats": ["A-R1-1"], "split": True}, ""),
    ],
)
def test_what_the_model_cannot_check_makes_sqs_refuse_the_call(
    api: ApiDefinition, path: str, body: dict[str, Any], key: str
) -> None:
    # A malformed Idempotency-Key, or a number above the deployment's maximum (MaxSeatsPerReservation
    # 10, MaxHoldSeconds 3600 by default): DelaySeconds 901 is outside SQS's 0..900, so no message.
    headers = {"Idempotency-Key": key} if key else {}
    fields = send_message(render_request(api, "POST", path, body, headers=headers))
    assert fields["DelaySeconds"] == ["901"]
    assert fields["MessageBody"] == ["refused"]


@pytest.mark.parametrize("path", ["/reservations", "/holds"])
def test_chosen_seats_are_passed_on_and_quantity_may_be_left_out(api: ApiDefinition, path: str) -> None:
    body = {"event_id": "e", "customer_id": "c", "seat_class": "STALLS", "seats": ["STC-R1-7", "STC-R1-8"]}
    parsed = message(render_request(api, "POST", path, body))
    assert isinstance(parsed, ReservationRequest)
    assert (parsed.seats, parsed.quantity, parsed.split, parsed.accessible) == (
        ("STC-R1-7", "STC-R1-8"),
        2,
        False,
        False,
    )
    with_quantity = message(render_request(api, "POST", path, {**body, "quantity": 2, "accessible": True}))
    assert isinstance(with_quantity, ReservationRequest)
    assert (with_quantity.quantity, with_quantity.accessible) == (2, True)


@pytest.mark.parametrize("path", ["/reservations", "/holds"])
def test_best_available_options_are_passed_on(api: ApiDefinition, path: str) -> None:
    body = {"event_id": "e", "customer_id": "c", "quantity": 3, "split": True, "accessible": True}
    parsed = message(render_request(api, "POST", path, body))
    assert isinstance(parsed, ReservationRequest)
    assert (parsed.seats, parsed.quantity, parsed.split, parsed.accessible) == (None, 3, True, True)
    plain = message(render_request(api, "POST", path, {**body, "split": False, "accessible": False}))
    assert isinstance(plain, ReservationRequest)
    assert (plain.split, plain.accessible) == (False, False)


def test_values_are_url_encoded_into_the_form(api: ApiDefinition) -> None:
    # The model refuses such ids; the template still never lets a value break the form.
    form = render_request(
        api, "POST", "/reservations", {"event_id": "a&b=c+d%", "quantity": 1, "customer_id": "c"}
    )
    (body,) = send_message(form)["MessageBody"]
    assert json.loads(body)["event_id"] == "a&b=c+d%"


def test_the_202_answer_names_the_reservation_id_and_the_sqs_message_id(api: ApiDefinition) -> None:
    sqs_answer = {
        "SendMessageResponse": {
            "ResponseMetadata": {"RequestId": "r"},
            "SendMessageResult": {
                "MD5OfMessageBody": "x",
                "MessageId": "6f8ce3cd-fe3a-4a21-887f-6479ded6a220",
            },
        }
    }
    for headers, expected in (({"Idempotency-Key": "order-77"}, "order-77"), ({}, REQUEST_ID)):
        status, _, body = render_response(
            api, "POST", "/reservations", "default", sqs_answer, headers=headers
        )
        assert (status, body) == (
            202,
            {"reservation_id": expected, "message_id": "6f8ce3cd-fe3a-4a21-887f-6479ded6a220"},
        )


def test_the_400_answer_says_why(api: ApiDefinition) -> None:
    error = {"ErrorResponse": {"Error": {"Code": "InvalidParameterValue"}}}
    _, _, bad_key = render_response(
        api, "POST", "/reservations", "400", error, headers={"Idempotency-Key": "a b"}
    )
    assert bad_key["message"].startswith("Idempotency-Key must be 1 to 128 characters")
    _, _, too_many = render_response(api, "POST", "/holds", "400", error)
    assert too_many == {
        "message": "quantity (or seats) is required and at most 10, hold_seconds at most 3600; with seats,"
        " quantity (if sent) must be their number and split is not allowed"
    }


# --- confirmations and cancellations -----------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "kind"),
    [
        ("confirmation", RequestType.CONFIRM),
        ("cancellation", RequestType.CANCEL),
        ("waitlist-exit", RequestType.LEAVE),
    ],
)
def test_a_change_names_the_reservation_of_the_path(api: ApiDefinition, path: str, kind: RequestType) -> None:
    resource = f"/reservations/{{id}}/{path}"
    with_customer = render_request(
        api, "POST", resource, {"customer_id": "c-9"}, path_parameters={"id": "h-1"}
    )
    assert message(with_customer) == ChangeRequest("m-1", "h-1", kind, "c-9")
    without = render_request(api, "POST", resource, {}, path_parameters={"id": "h-1"})
    assert message(without) == ChangeRequest("m-1", "h-1", kind, None)
    refused = render_request(api, "POST", resource, {}, path_parameters={"id": "h 1"})
    assert send_message(refused)["DelaySeconds"] == ["901"]


# --- GET /reservations/{id}: DynamoDB GetItem ---------------------------------------------------


def test_the_status_read_asks_for_the_record_and_only_its_public_attributes(api: ApiDefinition) -> None:
    request = json.loads(render_request(api, "GET", "/reservations/{id}", path_parameters={"id": "r-1"}))
    assert request["TableName"] == TABLE
    assert request["Key"] == {"pk": {"S": "RESERVATION#r-1"}, "sk": {"S": "RESERVATION"}}
    assert request["ConsistentRead"] is True
    names = request["ExpressionAttributeNames"]
    projected = {names.get(name.strip(), name.strip()) for name in request["ProjectionExpression"].split(",")}
    assert "status" in projected and "outcome" in projected
    assert not projected & set(INTERNAL)


def test_a_recorded_reservation_is_answered_with_its_status_and_answer(api: ApiDefinition) -> None:
    item = {
        "reservation_id": {"S": "h-1"},
        "request_type": {"S": "hold"},
        "status": {"S": "CONFIRMED"},
        "outcome": {"S": "HELD"},
        "reason": {"S": '2 seat(s) held until 2026-05-01T10:10:00Z; it\'s "yours"'},
        "event_id": {"S": "concert-2026"},
        "seat_class": {"S": "GA"},
        "quantity": {"N": "2"},
        "hold_expires_at": {"N": "1777630200"},
        # Not projected by the request, but a template must not echo them even if present:
        "gsi1pk": {"S": "HOLDS#3"},
        "customer_id": {"S": "c-9"},
    }
    status, headers, body = render_response(api, "GET", "/reservations/{id}", "default", {"Item": item})
    assert status == 200 and "Retry-After" not in headers
    assert body == {
        "reservation_id": "h-1",
        "type": "hold",
        "status": "CONFIRMED",
        "event_id": "concert-2026",
        "seat_class": "GA",
        "quantity": 2,
        "answer": {
            "outcome": "HELD",
            "reason": '2 seat(s) held until 2026-05-01T10:10:00Z; it\'s "yours"',
            "remaining": None,
            "position": None,
        },
        "hold_expires_at": 1777630200,
        "tickets": None,
        "awaiting_tickets": False,
        "seats": None,
        "lines": None,
    }


def test_an_order_is_answered_with_its_lines_and_no_seat_class(api: ApiDefinition) -> None:
    line = {
        "seat_class": {"S": "ADULT"},
        "quantity": {"N": "2"},
        "pool_names": {"S": "hall"},
        "shard": {"N": "3"},
    }
    item = {
        "reservation_id": {"S": "o-1"},
        "request_type": {"S": "reserve"},
        "status": {"S": "CONFIRMED"},
        "outcome": {"S": "CONFIRMED"},
        "reason": {"S": "3 seat(s) in 2 line(s) confirmed"},
        "event_id": {"S": "e"},
        "quantity": {"N": "3"},
        "lines": {
            "L": [
                {"M": line},
                {"M": {"seat_class": {"S": "CHILD"}, "quantity": {"N": "1"}}},
                {
                    "M": {
                        "seat_class": {"S": "FLOOR"},
                        "quantity": {"N": "2"},
                        "seats": {"L": [{"S": "F-R1-1"}, {"S": "F-R1-2"}]},
                    }
                },
            ]
        },
    }
    _, _, body = render_response(api, "GET", "/reservations/{id}", "default", {"Item": item})
    # Where the lines' seats came from (shard, pools) is the record's, never echoed.
    assert body["lines"] == [
        {"seat_class": "ADULT", "quantity": 2},
        {"seat_class": "CHILD", "quantity": 1},
        {"seat_class": "FLOOR", "quantity": 2, "seats": ["F-R1-1", "F-R1-2"]},
    ]
    assert body["seat_class"] is None and body["quantity"] == 3


@pytest.mark.parametrize("path", ["/reservations", "/holds"])
def test_an_order_s_lines_are_passed_on_without_quantity(api: ApiDefinition, path: str) -> None:
    lines = [
        {"seat_class": "ADULT", "quantity": 2},
        {"seat_class": "CHILD", "quantity": 1},
        {"seat_class": "FLOOR", "seats": ["F-R1-1"]},
    ]
    body = {"event_id": "e", "customer_id": "c", "lines": lines}
    parsed = message(render_request(api, "POST", path, body, headers={"Idempotency-Key": "o-1"}))
    assert isinstance(parsed, ReservationRequest)
    assert [(line.seat_class, line.quantity, line.seats) for line in parsed.lines or ()] == [
        ("ADULT", 2, None),
        ("CHILD", 1, None),
        ("FLOOR", 1, ("F-R1-1",)),
    ]
    assert (parsed.reservation_id, parsed.quantity, parsed.seat_class) == ("o-1", 4, "ADULT")


@pytest.mark.parametrize(
    "lines",
    [
        [],
        [{"seat_class": f"C{n}", "quantity": 1} for n in range(5)],
        [{"quantity": 1}],
        [{"seat_class": "A", "quantity": 0}],
        [{"seat_class": "A", "seats": []}],
        [{"seat_class": "A", "seats": ["not a seat"]}],
        [{"seat_class": "A b", "quantity": 1}],
        [{"seat_class": "A", "quantity": 1, "price": 3}],
        "A",
    ],
)
def test_the_model_refuses_malformed_order_lines(api: ApiDefinition, lines: Any) -> None:
    gateway = LocalApiGateway(api, backends=None, account_id="123456789012")  # type: ignore[arg-type]
    for path in ("/reservations", "/holds"):
        schema = route(api, "POST", path).operation["requestBody"]["content"]["application/json"]["schema"]
        body = {"event_id": "e-1", "customer_id": "c-1", "lines": lines}
        assert gateway.body_problems(schema, json.dumps(body)), (path, lines)


def test_an_order_the_model_cannot_judge_is_answered_invalid_by_the_service(api: ApiDefinition) -> None:
    # Two lines of one class, or lines beside a quantity: the model takes them, the service does not.
    twice = [{"seat_class": "A", "quantity": 1}, {"seat_class": "A", "quantity": 2}]
    parsed = message(
        render_request(api, "POST", "/reservations", {"event_id": "e", "customer_id": "c", "lines": twice})
    )
    assert isinstance(parsed, InvalidMessage) and "both name seat class 'A'" in parsed.reason
    without = {"event_id": "e", "customer_id": "c", "lines": [{"seat_class": "A"}]}
    parsed = message(render_request(api, "POST", "/reservations", without))
    assert (
        isinstance(parsed, InvalidMessage) and parsed.reason == "line 1: missing required field(s): quantity"
    )
    beside = {"event_id": "e", "customer_id": "c", "quantity": 1, "lines": twice[:1]}
    parsed = message(render_request(api, "POST", "/reservations", beside))
    assert isinstance(parsed, InvalidMessage) and "not allowed beside lines" in parsed.reason


def test_a_mapped_reservation_is_answered_with_its_seats(api: ApiDefinition) -> None:
    item = {
        "reservation_id": {"S": "r-1"},
        "request_type": {"S": "reserve"},
        "status": {"S": "CONFIRMED"},
        "outcome": {"S": "CONFIRMED"},
        "reason": {"S": "2 seat(s) confirmed"},
        "event_id": {"S": "e"},
        "seat_class": {"S": "STALLS"},
        "quantity": {"N": "2"},
        "seats": {"L": [{"S": "STC-R1-7"}, {"S": "STC-R1-8"}]},
    }
    _, _, body = render_response(api, "GET", "/reservations/{id}", "default", {"Item": item})
    assert body["seats"] == ["STC-R1-7", "STC-R1-8"]


@pytest.mark.parametrize(
    ("ticket_attributes", "tickets", "awaiting"),
    [
        # sold, waiting for the issuer (in the TicketsToIssue index)
        ({"gsi2pk": {"S": "UNNUMBERED#17"}}, None, True),
        # numbered: serials 42 and 43 of series 3 (ticket_first .. ticket_first + quantity - 1)
        (
            {"ticket_series": {"N": "3"}, "ticket_first": {"N": "42"}},
            {"series": 3, "first": 42, "count": 2},
            False,
        ),
    ],
)
def test_a_sold_reservation_shows_its_ticket_numbers_or_that_it_waits_for_them(
    api: ApiDefinition, ticket_attributes: dict[str, Any], tickets: Any, awaiting: bool
) -> None:
    request = json.loads(render_request(api, "GET", "/reservations/{id}", path_parameters={"id": "r-1"}))
    assert {"ticket_series", "ticket_first", "gsi2pk"} <= {
        name.strip() for name in request["ProjectionExpression"].split(",")
    }
    item = {
        "reservation_id": {"S": "r-1"},
        "request_type": {"S": "reserve"},
        "status": {"S": "CONFIRMED"},
        "outcome": {"S": "CONFIRMED"},
        "reason": {"S": "2 seat(s) reserved"},
        "event_id": {"S": "concert-2026"},
        "seat_class": {"S": "GA"},
        "quantity": {"N": "2"},
        **ticket_attributes,
    }
    status, _, body = render_response(api, "GET", "/reservations/{id}", "default", {"Item": item})
    assert status == 200
    assert body["tickets"] == tickets
    assert body["awaiting_tickets"] is awaiting
    assert "gsi2pk" not in json.dumps(body) and "UNNUMBERED" not in json.dumps(body)


def test_an_unknown_reservation_is_404_with_retry_after(api: ApiDefinition) -> None:
    status, headers, body = render_response(api, "GET", "/reservations/{id}", "default", {})
    assert status == 404
    assert headers == {"Retry-After": "1"}
    assert "message" in body


# --- GET /events/{event}/availability: DynamoDB Query -------------------------------------------


def inventory(
    seat_class: str, capacity: int, available: int, held: int, sold: int, **sale: Any
) -> dict[str, Any]:
    item = {
        "seat_class": {"S": seat_class},
        "capacity": {"N": str(capacity)},
        "available": {"N": str(available)},
        "held": {"N": str(held)},
        "sold": {"N": str(sold)},
    }
    for name, value in sale.items():
        item[name] = {"S": value} if isinstance(value, str) else {"N": str(value)}
    return item


def test_the_availability_query_reads_the_event_s_seat_classes(api: ApiDefinition) -> None:
    request = json.loads(
        render_request(api, "GET", "/events/{event}/availability", path_parameters={"event": "concert-2026"})
    )
    assert request["KeyConditionExpression"] == "pk = :pk AND begins_with(sk, :classes)"
    assert request["ExpressionAttributeValues"] == {
        ":pk": {"S": "EVENT#concert-2026"},
        ":classes": {"S": "CLASS#"},
    }


def test_availability_sums_the_items_of_a_class_and_tells_its_sale_status(api: ApiDefinition) -> None:
    now_s = NOW_MS // 1000
    items = [
        # GA kept in two items (shards): one line, summed
        inventory("GA", 60, 40, 5, 15),
        inventory("GA", 40, 30, 0, 10),
        inventory("VIP", 10, 10, 0, 0, sale_status="CLOSED"),
        inventory("EARLY", 5, 5, 0, 0, sale_ends_at=now_s),
        inventory("LATE", 5, 5, 0, 0, sale_starts_at=now_s + 1),
        inventory("WINDOW", 5, 1, 1, 3, sale_starts_at=now_s, sale_ends_at=now_s + 60),
    ]
    status, _, body = render_response(
        api,
        "GET",
        "/events/{event}/availability",
        "default",
        {"Items": items, "Count": len(items)},
        path_parameters={"event": "concert-2026"},
    )
    assert status == 200
    assert body == {
        "event_id": "concert-2026",
        "seat_classes": [
            {
                "seat_class": "GA",
                "seats_left": 70,
                "capacity": 100,
                "held": 5,
                "sold": 25,
                "sale": "OPEN",
                "sharded": False,
            },
            {
                "seat_class": "VIP",
                "seats_left": 10,
                "capacity": 10,
                "held": 0,
                "sold": 0,
                "sale": "CLOSED",
                "sharded": False,
            },
            {
                "seat_class": "EARLY",
                "seats_left": 5,
                "capacity": 5,
                "held": 0,
                "sold": 0,
                "sale": "ENDED",
                "sharded": False,
            },
            {
                "seat_class": "LATE",
                "seats_left": 5,
                "capacity": 5,
                "held": 0,
                "sold": 0,
                "sale": "SCHEDULED",
                "sharded": False,
            },
            {
                "seat_class": "WINDOW",
                "seats_left": 1,
                "capacity": 5,
                "held": 1,
                "sold": 3,
                "sale": "OPEN",
                "sharded": False,
            },
        ],
    }


def test_an_event_without_seats_is_404(api: ApiDefinition) -> None:
    status, _, _ = render_response(
        api, "GET", "/events/{event}/availability", "default", {"Items": [], "Count": 0}
    )
    assert status == 404


def test_a_sharded_class_shows_no_figures_on_the_event_route_and_points_to_its_own(
    api: ApiDefinition,
) -> None:
    # Given the event's partition: GA's shard 0 (of 4 shards), VIP unsharded, and OLD whose
    # shards were cut back to 1 but still has 3 items (shard_items)
    items = [
        inventory("GA", 25, 20, 0, 5, shard_count=4, shard_items=4),
        inventory("VIP", 10, 8, 0, 2, shard_count=1),
        inventory("OLD", 9, 9, 0, 0, shard_count=1, shard_items=3, sale_status="CLOSED"),
    ]
    status, _, body = render_response(
        api,
        "GET",
        "/events/{event}/availability",
        "default",
        {"Items": items, "Count": len(items)},
        path_parameters={"event": "concert-2026"},
    )
    assert status == 200
    # Then shard 0's numbers are never shown as a class's total
    assert body["seat_classes"] == [
        {
            "seat_class": "GA",
            "seats_left": None,
            "capacity": None,
            "held": None,
            "sold": None,
            "sale": "OPEN",
            "sharded": True,
            "shards": 4,
            "availability": "/events/concert-2026/classes/GA/availability",
        },
        {
            "seat_class": "VIP",
            "seats_left": 8,
            "capacity": 10,
            "held": 0,
            "sold": 2,
            "sale": "OPEN",
            "sharded": False,
        },
        {
            "seat_class": "OLD",
            "seats_left": None,
            "capacity": None,
            "held": None,
            "sold": None,
            "sale": "CLOSED",
            "sharded": True,
            "shards": 3,
            "availability": "/events/concert-2026/classes/OLD/availability",
        },
    ]


def test_the_availability_query_projects_the_shard_counts(api: ApiDefinition) -> None:
    request = json.loads(
        render_request(api, "GET", "/events/{event}/availability", path_parameters={"event": "concert-2026"})
    )
    projected = {name.strip() for name in request["ProjectionExpression"].split(",")}
    assert {"shard_count", "shard_items"} <= projected


# --- GET /events/{event}/classes/{seat_class}/availability: DynamoDB BatchGetItem ----------------

CLASS_ROUTE = "/events/{event}/classes/{seat_class}/availability"
CLASS_PATH = {"event": "concert-2026", "seat_class": "GA"}


def test_the_class_availability_reads_every_key_a_class_can_have(api: ApiDefinition) -> None:
    request = json.loads(render_request(api, "GET", CLASS_ROUTE, path_parameters=CLASS_PATH))
    assert set(request["RequestItems"]) == {TABLE}
    read = request["RequestItems"][TABLE]
    # shard 0 in the event's partition, shard n (1 to MAX_SHARDS - 1) in its own: dal/items.py's keys
    assert read["Keys"] == [
        inventory_key(SeatKey("concert-2026", "GA"), shard) for shard in range(MAX_SHARDS)
    ]
    assert read["ConsistentRead"] is False
    projected = {name.strip() for name in read["ProjectionExpression"].split(",")}
    names = read["ExpressionAttributeNames"]
    assert {names.get(name, name) for name in projected} == {
        "seat_class",
        "capacity",
        "available",
        "held",
        "sold",
        "sale_status",
        "sale_starts_at",
        "sale_ends_at",
    }


def batch_answer(*items: dict[str, Any], unprocessed: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"Responses": {TABLE: list(items)}, "UnprocessedKeys": unprocessed or {}}


def test_the_class_availability_is_the_sum_over_every_shard_item(api: ApiDefinition) -> None:
    now_s = NOW_MS // 1000
    answer = batch_answer(
        inventory("GA", 25, 20, 0, 5),
        inventory("GA", 25, 22, 1, 2),
        inventory("GA", 25, 25, 0, 0),
        inventory("GA", 25, 10, 4, 11, sale_ends_at=now_s + 60),
        inventory("GA", 0, 0, 0, 3),  # a retired shard still holds sold seats
    )
    status, _, body = render_response(api, "GET", CLASS_ROUTE, "default", answer, path_parameters=CLASS_PATH)
    assert status == 200
    assert body == {
        "event_id": "concert-2026",
        "seat_class": "GA",
        "seats_left": 77,
        "capacity": 100,
        "held": 5,
        "sold": 21,
        "sale": "OPEN",
        "items": 5,
    }


@pytest.mark.parametrize(
    ("sale", "expected"),
    [
        ({"sale_status": "CLOSED"}, "CLOSED"),
        ({"sale_ends_at": NOW_MS // 1000}, "ENDED"),
        ({"sale_starts_at": NOW_MS // 1000 + 1}, "SCHEDULED"),
    ],
)
def test_a_class_is_as_closed_as_its_most_closed_item(
    api: ApiDefinition, sale: dict[str, Any], expected: str
) -> None:
    answer = batch_answer(inventory("GA", 5, 5, 0, 0), inventory("GA", 5, 5, 0, 0, **sale))
    _, _, body = render_response(api, "GET", CLASS_ROUTE, "default", answer, path_parameters=CLASS_PATH)
    assert body["sale"] == expected


def test_an_unknown_class_is_404(api: ApiDefinition) -> None:
    status, _, _ = render_response(
        api, "GET", CLASS_ROUTE, "default", batch_answer(), path_parameters=CLASS_PATH
    )
    assert status == 404


def test_keys_dynamodb_left_unprocessed_are_a_503_never_a_short_sum(api: ApiDefinition) -> None:
    unprocessed = {TABLE: {"Keys": [{"pk": {"S": "EVENT#concert-2026#SHARD#3"}, "sk": {"S": "CLASS#GA"}}]}}
    answer = batch_answer(inventory("GA", 25, 20, 0, 5), unprocessed=unprocessed)
    status, headers, body = render_response(
        api, "GET", CLASS_ROUTE, "default", answer, path_parameters=CLASS_PATH
    )
    assert status == 503
    assert headers == {"Retry-After": "1"}
    assert "seats_left" not in body


# --- the models and the gateway's own answers ---------------------------------------------------


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ({"event_id": "e", "quantity": 1}, "'customer_id' is a required property"),
        ({"event_id": "e", "quantity": 2.5, "customer_id": "c"}, "quantity: 2.5 is not of type 'integer'"),
        ({"event_id": "e", "quantity": True, "customer_id": "c"}, "quantity: True is not of type 'integer'"),
        ({"event_id": "e", "quantity": "2", "customer_id": "c"}, "quantity: '2' is not of type 'integer'"),
        ({"event_id": "e", "quantity": 0, "customer_id": "c"}, "quantity: 0 is less than the minimum of 1"),
        ({"event_id": "e", "quantity": 1, "customer_id": "c", "type": "hold"}, "('type' was unexpected)"),
        ({"event_id": "e#1", "quantity": 1, "customer_id": "c"}, "event_id: 'e#1' does not match"),
        ({"event_id": "e", "quantity": 1, "customer_id": "c", "seat_class": "x" * 65}, "is too long"),
        (["not", "an", "object"], "is not of type 'object'"),
        ({"event_id": "e", "customer_id": "c", "seats": []}, "seats: [] should be non-empty"),
        ({"event_id": "e", "customer_id": "c", "seats": ["A-R1-1", "A-R1-1"]}, "has non-unique elements"),
        ({"event_id": "e", "customer_id": "c", "seats": ["A-R1-0"]}, "seats.0: 'A-R1-0' does not match"),
        ({"event_id": "e", "customer_id": "c", "seats": ["A-R1-1\n"]}, "does not match"),
        ({"event_id": "e", "customer_id": "c", "seats": "A-R1-1"}, "is not of type 'array'"),
        ({"event_id": "e", "customer_id": "c", "quantity": 1, "split": "yes"}, "split: 'yes' is not of type"),
        (
            {"event_id": "e", "customer_id": "c", "quantity": 1, "accessible": 1},
            "accessible: 1 is not of type",
        ),
    ],
)
def test_the_reservation_model_refuses_what_the_contract_refuses(
    api: ApiDefinition, body: Any, problem: str
) -> None:
    # Given the route's model (the message contract as JSON Schema)
    gateway = LocalApiGateway(api, backends=None, account_id="123456789012")  # type: ignore[arg-type]
    schema = route(api, "POST", "/reservations").operation["requestBody"]["content"]["application/json"][
        "schema"
    ]
    # Then the body is refused, saying why
    problems = gateway.body_problems(schema, json.dumps(body))
    assert any(problem in p for p in problems), problems


def test_a_body_that_fits_the_model_fits_the_contract(api: ApiDefinition) -> None:
    gateway = LocalApiGateway(api, backends=None, account_id="123456789012")  # type: ignore[arg-type]
    body = {"event_id": "e.1:x@y", "quantity": 10, "customer_id": "C_9", "seat_class": "GA-2"}
    schema = route(api, "POST", "/reservations").operation["requestBody"]["content"]["application/json"][
        "schema"
    ]
    assert gateway.body_problems(schema, json.dumps(body)) == []
    assert isinstance(message(render_request(api, "POST", "/reservations", body)), ReservationRequest)


def test_the_bad_request_answer_is_json_carrying_the_validation_message(api: ApiDefinition) -> None:
    template = api.gateway_responses["BAD_REQUEST_BODY"]["responseTemplates"]["application/json"]
    validation = '[object has missing required properties (["quantity"]), it\'s "odd"]'
    rendered = render(
        template,
        input_variable=InputVariable(""),
        context={**context(), "error": {"validationErrorString": validation}},
    )
    assert json.loads(rendered.body) == {"message": validation}


# --- the renderer's own pieces -----------------------------------------------------------------


def test_json_path_subset() -> None:
    document = {"a": {"b": [1, {"c": "x"}]}, "d e": 2}
    assert json_path(document, "$") == document
    assert json_path(document, "$.a.b[1].c") == "x"
    assert json_path(document, "$['d e']") == 2
    assert json_path(document, "$.a.missing") is None
    assert json_path(document, "$.a.b[5]") is None


def test_util_escape_javascript_is_java_s_and_json_readable_after_the_usual_fix() -> None:
    rendered = render(
        "\"$util.escapeJavaScript($input.path('$.s'))\"",
        input_variable=InputVariable(json.dumps({"s": "a\"b\\c/d'e\n"})),
        context=context(),
    )
    assert rendered.body == '"a\\"b\\\\c\\/d\\\'e\\n"'


# --- the local gateway's request lifecycle, with an in-memory backend ---------------------------


class FakeBackends:
    """Answers integration calls with a fixed status and body, and records what was sent."""

    def __init__(self, status: int, body: Any) -> None:
        self.status = status
        self.body = body
        self.calls: list[tuple[str, dict[str, str], str]] = []

    def call(self, uri: str, headers: Mapping[str, str], body: str) -> IntegrationResult:
        self.calls.append((uri, dict(headers), body))
        return IntegrationResult(self.status, {}, json.dumps(self.body))


def gateway_with(api: ApiDefinition, status: int, body: Any) -> tuple[LocalApiGateway, FakeBackends]:
    backends = FakeBackends(status, body)
    return LocalApiGateway(api, backends, account_id="123456789012"), backends  # type: ignore[arg-type]


SENT = {"SendMessageResponse": {"SendMessageResult": {"MessageId": "m-42"}}}
JSON_HEADERS = {"Content-Type": "application/json"}


def test_the_gateway_sends_the_rendered_request_to_the_integration_uri(api: ApiDefinition) -> None:
    gateway, backends = gateway_with(api, 200, SENT)
    body = json.dumps({"event_id": "e-1", "quantity": 1, "customer_id": "c-1"})
    response = gateway.handle(
        ApiRequest("POST", "/reservations", {**JSON_HEADERS, "idempotency-key": "k-1"}, body)
    )
    assert (response.status, json.loads(response.body)) == (
        202,
        {"reservation_id": "k-1", "message_id": "m-42"},
    )
    assert response.headers["Access-Control-Allow-Origin"] == "*"
    ((uri, headers, sent),) = backends.calls
    assert uri == f"arn:aws:apigateway:us-east-1:sqs:path/123456789012/{QUEUE}"
    assert headers == {"Content-Type": "application/x-www-form-urlencoded"}
    assert json.loads(parse_qs(sent)["MessageBody"][0])["reservation_id"] == "k-1"


def test_the_gateway_refuses_before_calling_anything(api: ApiDefinition) -> None:
    gateway, backends = gateway_with(api, 200, SENT)
    bad_body = gateway.handle(ApiRequest("POST", "/reservations", JSON_HEADERS, '{"quantity": "two"}'))
    assert bad_body.status == 400 and "is not of type 'integer'" in json.loads(bad_body.body)["message"]
    not_json = gateway.handle(ApiRequest("POST", "/reservations", JSON_HEADERS, "{nope"))
    assert not_json.status == 400 and "Invalid JSON" in json.loads(not_json.body)["message"]
    form = gateway.handle(ApiRequest("POST", "/reservations", {"Content-Type": "text/plain"}, "x"))
    assert (form.status, json.loads(form.body)) == (415, {"message": "Unsupported Media Type"})
    unknown = gateway.handle(ApiRequest("GET", "/tickets", {}))
    assert (unknown.status, json.loads(unknown.body)) == (403, {"message": "Missing Authentication Token"})
    assert backends.calls == []


def test_an_integration_error_selects_the_error_response(api: ApiDefinition) -> None:
    gateway, _ = gateway_with(api, 500, {"__type": "InternalServerError"})
    body = json.dumps({"event_id": "e-1", "quantity": 1, "customer_id": "c-1"})
    response = gateway.handle(ApiRequest("POST", "/reservations", JSON_HEADERS, body))
    assert response.status == 502
    assert "did not take the request" in json.loads(response.body)["message"]


def test_a_preflight_is_answered_by_the_mock_integration(api: ApiDefinition) -> None:
    gateway, backends = gateway_with(api, 200, {})
    response = gateway.handle(ApiRequest("OPTIONS", "/reservations/r-1", {}))
    assert response.status == 204
    assert response.headers["Access-Control-Allow-Methods"] == "GET,OPTIONS"
    assert backends.calls == []


# --- the API and the message contract agree -----------------------------------------------------

IDS = st.one_of(
    st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._:@-]{0,20}", fullmatch=True),
    st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._:@-]{0,5}\n?", fullmatch=True),
    st.text(max_size=8),
)
VALUES = st.one_of(
    IDS, st.integers(-5, 4000), st.floats(allow_nan=False, allow_infinity=False), st.booleans()
)
# Mostly bodies close to valid (each field valid or not), so the interesting ones are frequent.
SEAT_IDS = st.one_of(
    st.from_regex(r"[A-C]-R[1-3]-[1-9]\n?", fullmatch=True), st.from_regex(r"[A-Z0-9_-]{1,8}", fullmatch=True)
)
BODIES = st.fixed_dictionaries(
    {
        "event_id": st.one_of(IDS, VALUES),
        "customer_id": st.one_of(IDS, VALUES),
    },
    optional={
        "quantity": st.one_of(st.integers(1, 12), VALUES),
        "seats": st.one_of(st.lists(SEAT_IDS, max_size=12), VALUES),
        "split": st.one_of(st.booleans(), VALUES),
        "accessible": st.one_of(st.booleans(), VALUES),
        "seat_class": st.one_of(IDS, VALUES),
        "hold_seconds": st.one_of(st.integers(50, 4000), VALUES),
        "type": VALUES,
        "reservation_id": IDS,
        "admission_token": st.one_of(st.from_regex(r"[A-Za-z0-9._-]{1,12}\n?", fullmatch=True), VALUES),
    },
)


@pytest.mark.parametrize("path", ["/reservations", "/holds"])
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=BODIES, key=st.one_of(st.just(""), IDS))
def test_every_body_the_api_passes_on_is_a_valid_message_with_the_same_fields(
    api: ApiDefinition, path: str, body: dict[str, Any], key: str
) -> None:
    # A body the API lets through but the service answers INVALID would never be recorded, so
    # GET /reservations/{id} would answer 404 forever: the model and the template must refuse it.
    gateway = LocalApiGateway(api, backends=None, account_id="123456789012")  # type: ignore[arg-type]
    schema = route(api, "POST", path).operation["requestBody"]["content"]["application/json"]["schema"]
    if gateway.body_problems(schema, json.dumps(body)):
        return  # refused with 400 by the model
    headers = {"Idempotency-Key": key} if key else {}
    fields = send_message(render_request(api, "POST", path, body, headers=headers))
    if "DelaySeconds" in fields:
        return  # refused with 400 through SQS (an id or a number the model cannot check)
    parsed = message(render_request(api, "POST", path, body, headers=headers))
    assert isinstance(parsed, ReservationRequest), parsed
    assert parsed.reservation_id == (key or REQUEST_ID)
    assert (parsed.event_id, parsed.customer_id) == (body["event_id"], body["customer_id"])
    assert parsed.quantity == body.get("quantity", len(body.get("seats") or []))
    assert parsed.seats == (tuple(body["seats"]) if "seats" in body else None)
    assert (parsed.split, parsed.accessible) == (body.get("split", False), body.get("accessible", False))
    assert parsed.seat_class == body.get("seat_class", "GA")
    assert parsed.admission_token == body.get("admission_token")
    if path == "/holds":
        assert parsed.hold_seconds == body.get("hold_seconds", 600)


# --- the seat-map routes: a mapped event's layout, and each seat's state per section -----------

CLUB = (Path(__file__).parents[2] / "examples" / "seat_maps" / "club.csv").read_text()


def test_the_seat_map_route_queries_the_event_s_layout_items(api: ApiDefinition) -> None:
    request = json.loads(
        render_request(api, "GET", "/events/{event}/seat-map", path_parameters={"event": "e-1"})
    )
    item = layout_items("e-1", load_csv(CLUB))[0]
    assert request["TableName"] == TABLE
    assert request["ExpressionAttributeValues"] == {":pk": item["pk"]}
    assert request["ConsistentRead"] is False
    names = request["ExpressionAttributeNames"]
    projected = {names.get(n.strip(), n.strip()) for n in request["ProjectionExpression"].split(",")}
    assert projected == {"seat_class", "section", "section_rank", "orphans", "seat_count", "layout"}


def test_the_seat_map_route_answers_each_section_s_rows_and_flags(api: ApiDefinition) -> None:
    # Given the layout items `seats event create --seat-map club.csv` writes
    seat_map = load_csv(CLUB)
    items = layout_items("e-1", seat_map)
    # When the route's response template turns the Query's answer into the page's document
    status, _, body = render_response(
        api,
        "GET",
        "/events/{event}/seat-map",
        "default",
        {"Items": items, "Count": len(items)},
        path_parameters={"event": "e-1"},
    )
    # Then each section comes back with its rows front to back, its flags and its seats' route
    assert status == 200 and body["event_id"] == "e-1"
    layouts = section_layouts(seat_map)
    assert {(s["seat_class"], s["section"]) for s in body["sections"]} == set(layouts)
    for section in body["sections"]:
        assert section["rows"] == layouts[(section["seat_class"], section["section"])]
        assert section["seat_count"] == sum(r["seats"] for r in section["rows"])
        assert (
            section["seats"]
            == f"/events/e-1/classes/{section['seat_class']}/sections/{section['section']}/seats"
        )
        assert section["orphans"] == "refuse"
    first = next(s for s in body["sections"] if s["section"] == "A")
    assert first["rank"] == 0
    assert first["rows"][0] == {"row": "R1", "seats": 6, "flags": {"wheelchair": [1], "companion": [2]}}
    # and the seat ids the page builds are the map's
    ids = {
        f"{s['section']}-{r['row']}-{p}"
        for s in body["sections"]
        for r in s["rows"]
        for p in range(1, r["seats"] + 1)
    }
    assert ids == {seat for c in seat_map.classes.values() for seat in c.seats}


def test_the_seat_map_route_is_404_without_a_map_and_never_shows_part_of_one(api: ApiDefinition) -> None:
    status, _, body = render_response(
        api,
        "GET",
        "/events/{event}/seat-map",
        "default",
        {"Items": [], "Count": 0},
        path_parameters={"event": "e-1"},
    )
    assert (status, body) == (404, {"message": "this event has no seat map"})
    items = layout_items("e-1", load_csv(CLUB))
    page = {"Items": items[:1], "LastEvaluatedKey": {"pk": items[0]["pk"], "sk": items[0]["sk"]}}
    status, _, body = render_response(
        api, "GET", "/events/{event}/seat-map", "default", page, path_parameters={"event": "e-1"}
    )
    assert status == 500 and "larger than the route reads" in body["message"]


def test_the_section_route_queries_the_section_s_row_items_and_every_seat_attribute(
    api: ApiDefinition,
) -> None:
    parameters = {"event": "e-1", "seat_class": "TABLES", "section": "A"}
    request = json.loads(
        render_request(
            api,
            "GET",
            "/events/{event}/classes/{seat_class}/sections/{section}/seats",
            path_parameters=parameters,
        )
    )
    assert request["ExpressionAttributeValues"] == {":pk": {"S": section_pk(SeatKey("e-1", "TABLES"), "A")}}
    assert request["ConsistentRead"] is False
    names = request["ExpressionAttributeNames"]
    projected = [names.get(n.strip(), n.strip()) for n in request["ProjectionExpression"].split(",")]
    assert {seat_attribute(p) for p in range(1, MAX_ROW_SEATS + 1)} <= set(projected)
    assert {"row_id", "first", "size", "available", "held", "sold"} <= set(projected)
    assert not set(projected) & set(INTERNAL)
    assert len(request["ProjectionExpression"]) < 4096  # DynamoDB's limit on an expression


def row_item(row_id: str, first: int, size: int, states: dict[int, str], **extra: Any) -> dict[str, Any]:
    """A row item as dal/seat_rows.py writes it (the attributes the route projects)."""
    counts = {"H": 0, "S": 0}
    for state in states.values():
        if state in counts:
            counts[state] += 1
    item = {
        "row_id": {"S": row_id},
        "first": {"N": str(first)},
        "size": {"N": str(size)},
        "available": {"N": str(size - len(states))},
        "held": {"N": str(counts["H"])},
        "sold": {"N": str(counts["S"])},
        **{seat_attribute(p): {"S": state} for p, state in states.items()},
    }
    item.update(extra)
    return item


def test_the_section_route_answers_each_seat_s_state_row_by_row(api: ApiDefinition) -> None:
    parameters = {"event": "e-1", "seat_class": "STALLS", "section": "S"}
    items = [
        row_item("S-R1#0", 1, 40, {1: "B", 2: "S", 3: "S", 40: "H"}),
        row_item("S-R1#1", 41, 5, {41: "H", 45: "S"}),
        row_item("S-R2#0", 1, 4, {}),
    ]
    status, _, body = render_response(
        api,
        "GET",
        "/events/{event}/classes/{seat_class}/sections/{section}/seats",
        "default",
        {"Items": items, "Count": 3},
        path_parameters=parameters,
    )
    assert status == 200
    assert body["rows"] == [
        {"row_id": "S-R1#0", "first": 1, "size": 40, "states": "BSS" + "." * 36 + "H"},
        {"row_id": "S-R1#1", "first": 41, "size": 5, "states": "H...S"},
        {"row_id": "S-R2#0", "first": 1, "size": 4, "states": "...."},
    ]
    assert (body["seats_left"], body["held"], body["sold"], body["sale"]) == (36 + 3 + 4, 2, 3, "OPEN")
    assert (body["event_id"], body["seat_class"], body["section"]) == ("e-1", "STALLS", "S")


@pytest.mark.parametrize(
    ("extra", "sale"),
    [
        ({"sale_status": {"S": "CLOSED"}}, "CLOSED"),
        ({"sale_starts_at": {"N": str(NOW_MS // 1000 + 60)}}, "SCHEDULED"),
        ({"sale_ends_at": {"N": str(NOW_MS // 1000 - 60)}}, "ENDED"),
        ({"sale_starts_at": {"N": str(NOW_MS // 1000 - 60)}}, "OPEN"),
    ],
)
def test_the_section_route_tells_the_sale_status_of_its_rows(
    api: ApiDefinition, extra: dict[str, Any], sale: str
) -> None:
    parameters = {"event": "e-1", "seat_class": "STALLS", "section": "S"}
    status, _, body = render_response(
        api,
        "GET",
        "/events/{event}/classes/{seat_class}/sections/{section}/seats",
        "default",
        {"Items": [row_item("S-R1#0", 1, 4, {}, **extra)]},
        path_parameters=parameters,
    )
    assert (status, body["sale"]) == (200, sale)


def test_an_unknown_section_is_404(api: ApiDefinition) -> None:
    parameters = {"event": "e-1", "seat_class": "STALLS", "section": "NOPE"}
    status, _, body = render_response(
        api,
        "GET",
        "/events/{event}/classes/{seat_class}/sections/{section}/seats",
        "default",
        {"Items": [], "Count": 0},
        path_parameters=parameters,
    )
    assert status == 404 and "no seats of this section" in body["message"]


# Bodies for a mapped class: ids valid, the seat fields near valid (a seat list of 0 to 12 ids,
# some repeated or malformed; quantity absent, equal or not; split and accessible mostly
# booleans), so that many pass the model and reach the template.
VALID_IDS = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._:@-]{0,10}", fullmatch=True)
VALID_SEATS = st.from_regex(r"[A-C]-R[1-3]-[1-9]", fullmatch=True)


@st.composite
def seat_bodies(draw: st.DrawFn) -> dict[str, Any]:
    body: dict[str, Any] = {"event_id": draw(VALID_IDS), "customer_id": draw(VALID_IDS)}
    if draw(st.booleans()):  # chosen seats, mostly valid and distinct
        seats = draw(
            st.lists(st.one_of(VALID_SEATS, VALID_SEATS, SEAT_IDS), max_size=12, unique=draw(st.booleans()))
        )
        body["seats"] = seats
        if draw(st.booleans()):
            body["quantity"] = draw(st.one_of(st.just(len(seats)), st.integers(0, 12)))
    elif draw(st.integers(0, 9)):  # best available (or, once in ten, neither)
        body["quantity"] = draw(st.integers(0, 12))
    for name, odd in (("split", "true"), ("accessible", 1)):
        if draw(st.booleans()):
            body[name] = draw(st.one_of(st.booleans(), st.booleans(), st.just(odd)))
    return body


SEAT_BODIES = seat_bodies()


@pytest.mark.parametrize("path", ["/reservations", "/holds"])
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=SEAT_BODIES)
def test_every_seat_body_the_api_passes_on_is_a_valid_message_with_the_same_seats(
    api: ApiDefinition, path: str, body: dict[str, Any]
) -> None:
    gateway = LocalApiGateway(api, backends=None, account_id="123456789012")  # type: ignore[arg-type]
    schema = route(api, "POST", path).operation["requestBody"]["content"]["application/json"]["schema"]
    form = render_request(api, "POST", path, body)
    refused = bool(gateway.body_problems(schema, json.dumps(body))) or "DelaySeconds" in send_message(form)
    parsed = message(form) if not refused else None
    # What the API passes on is the request the body stands for; what it refuses, the service
    # would answer INVALID (so no accepted request is left without an answer).
    if refused:
        as_message = json.dumps({"type": "reserve", "reservation_id": "r-1", **body})
        assert isinstance(
            parse_reservation(
                "m-1", as_message, default_seat_class="GA", max_quantity=10, max_hold_seconds=3600
            ),
            InvalidMessage,
        ), body
        return
    assert isinstance(parsed, ReservationRequest), parsed
    assert parsed.seats == (tuple(body["seats"]) if body.get("seats") else None)
    assert parsed.quantity == body.get("quantity") or parsed.quantity == len(body["seats"])
    assert (parsed.split, parsed.accessible) == (body.get("split", False), body.get("accessible", False))


def test_with_several_reservation_queues_each_request_goes_to_the_queue_its_id_picks() -> None:
    # Given a stack of 3 reservation queues (ReservationQueues), the API rendered as deployed
    template = load_template(default_template_path(), parameter_overrides={"ReservationQueues": "3"})
    resolver = template.resolver.with_resources(
        {
            "ReservationsQueue": PhysicalResource(
                f"http://127.0.0.1/1/{QUEUE}", {"QueueName": QUEUE, "Arn": "a"}
            )
        }
    )
    gateway, backends = gateway_with(ApiDefinition.from_template(template.path, resolver), 200, SENT)
    ids = [f"k-{n}" for n in range(30)] + ["x", "order_2024.Z@a:-"]
    body = json.dumps({"event_id": "e-1", "quantity": 1, "customer_id": "c-1"})

    # When each id is reserved, then confirmed and cancelled
    for reservation_id in ids:
        headers = {**JSON_HEADERS, "idempotency-key": reservation_id}
        assert gateway.handle(ApiRequest("POST", "/reservations", headers, body)).status == 202
        for change in ("confirmation", "cancellation"):
            path = f"/reservations/{reservation_id}/{change}"
            assert gateway.handle(ApiRequest("POST", path, JSON_HEADERS, "{}")).status == 202

    # Then every message of an id went to the queue `queue_index` picks, the first queue by its
    # name and the others by theirs (-1, -2), and the ids are spread over all three
    base = "arn:aws:apigateway:us-east-1:sqs:path/123456789012/"
    sent = [
        (uri, json.loads(parse_qs(form)["MessageBody"][0])["reservation_id"])
        for uri, _, form in backends.calls
    ]
    assert len(sent) == 3 * len(ids)
    for uri, reservation_id in sent:
        assert uri == base + queue_name(QUEUE, queue_index(reservation_id, 3)), reservation_id
    assert {uri for uri, _ in sent} == {base + QUEUE, base + QUEUE + "-1", base + QUEUE + "-2"}
    assert queue_index("x", 3) == 0  # a one-character id: the first queue
