"""The checkout API over real HTTP, against the local stack: the template's API definition and mapping
templates served on 127.0.0.1 (`LocalStack.api_url`), DynamoDB Local, moto, and the real handler in
the local runner's workers. The client is `requests`, as a shop's backend would use.
"""

from __future__ import annotations

import random
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import requests

from seat_inventory.models import Outcome, ReservationOutcome, SeatKey
from seat_tools.local.runner import LocalRunner, runner_config
from seat_tools.local.stack import LocalStack
from seat_tools.operator_commands import OperatorTable
from seat_tools.seat_map_commands import SaleRules
from seat_tools.seat_map_files import load_file
from seat_tools.traffic import OutcomeCollector
from tests.writes import GroupWrite, commit_outcomes

pytestmark = pytest.mark.local_stack

FINAL = {"CONFIRMED", "SOLD_OUT", "UNKNOWN_EVENT", "LIMIT_EXCEEDED", "SALE_CLOSED"}
CLUB_MAP = Path(__file__).parents[2] / "examples" / "seat_maps" / "club.csv"
BURST_REQUESTS = 200
BURST_CAPACITY = 60


@pytest.fixture(scope="module")
def api(local_stack: LocalStack) -> Iterator[str]:
    """The local API's base URL, with the function's workers consuming the queue and the ticket
    issuer numbering the sales."""
    assert local_stack.api_url is not None
    with LocalRunner(runner_config(local_stack, workers=2, issuer=True)):
        yield local_stack.api_url


@pytest.fixture(scope="module")
def http() -> Iterator[requests.Session]:
    with requests.Session() as session:
        adapter = requests.adapters.HTTPAdapter(pool_maxsize=32)
        session.mount("http://", adapter)
        yield session


def new_event(stack: LocalStack, capacity: int, seat_class: str = "GA") -> str:
    event_id = f"api-{uuid.uuid4().hex[:8]}"
    OperatorTable(stack.client("dynamodb"), stack.table_name).create_seat_class(
        SeatKey(event_id, seat_class), capacity
    )
    return event_id


def poll(http: requests.Session, api: str, reservation_id: str, timeout_s: float = 60) -> dict[str, Any]:
    """GET /reservations/{id} until it is answered (404 with Retry-After until then)."""
    deadline = time.monotonic() + timeout_s
    while True:
        response = http.get(f"{api}/reservations/{reservation_id}", timeout=10)
        if response.status_code == 200:
            return dict(response.json())
        assert response.status_code == 404, response.text
        assert response.headers["Retry-After"] == "1"
        assert time.monotonic() < deadline, f"no answer for {reservation_id}"
        time.sleep(0.2)


def seats_left(http: requests.Session, api: str, event_id: str) -> dict[str, dict[str, Any]]:
    response = http.get(f"{api}/events/{event_id}/availability", timeout=10)
    assert response.status_code == 200, response.text
    return {line["seat_class"]: line for line in response.json()["seat_classes"]}


def test_reserve_then_poll_until_confirmed_and_see_the_seats_left(
    local_stack: LocalStack, api: str, http: requests.Session
) -> None:
    # Given an event with 10 seats
    event_id = new_event(local_stack, 10)
    # When a checkout reserves 3 of them
    sent = http.post(
        f"{api}/reservations",
        json={"event_id": event_id, "quantity": 3, "customer_id": "c-1"},
        timeout=10,
    )
    # Then it is accepted with a generated reservation id and the SQS message id
    assert sent.status_code == 202, sent.text
    accepted = sent.json()
    assert set(accepted) == {"reservation_id", "message_id"}
    uuid.UUID(accepted["reservation_id"])
    uuid.UUID(accepted["message_id"])
    # And polling shows the answer, and nothing internal
    answer = poll(http, api, accepted["reservation_id"])
    assert answer["status"] == "CONFIRMED"
    assert answer["answer"]["outcome"] == "CONFIRMED"
    assert (answer["event_id"], answer["seat_class"], answer["quantity"], answer["type"]) == (
        event_id,
        "GA",
        3,
        "reserve",
    )
    assert not {"pk", "sk", "customer_id", "message_id", "gsi1pk", "gsi2pk", "expires_at"} & set(answer)
    # And the seats left went down by 3
    assert seats_left(http, api, event_id)["GA"] == {
        "seat_class": "GA",
        "seats_left": 7,
        "capacity": 10,
        "held": 0,
        "sold": 3,
        "sale": "OPEN",
        "sharded": False,
    }


def test_a_sale_shows_its_ticket_numbers_once_the_issuer_numbered_it(
    local_stack: LocalStack, api: str, http: requests.Session
) -> None:
    # Given two sales of a new event, 2 seats then 3
    event_id = new_event(local_stack, 10)
    ids = []
    for quantity in (2, 3):
        body = {"event_id": event_id, "quantity": quantity, "customer_id": f"c-{quantity}"}
        sent = http.post(f"{api}/reservations", json=body, timeout=10)
        assert sent.status_code == 202, sent.text
        ids.append(sent.json()["reservation_id"])
        assert poll(http, api, ids[-1])["status"] == "CONFIRMED"
    # When the issuer has numbered them (locally it runs every 2 s)
    deadline = time.monotonic() + 60
    answers = [poll(http, api, rid) for rid in ids]
    while any(a["tickets"] is None for a in answers):
        assert all(a["awaiting_tickets"] for a in answers if a["tickets"] is None)
        assert time.monotonic() < deadline, f"not numbered: {answers}"
        time.sleep(0.5)
        answers = [poll(http, api, rid) for rid in ids]
    # Then GET shows their numbers: serials 1..5 of series 0, each sale's consecutive
    tickets = sorted((a["tickets"]["first"], a["tickets"]["count"]) for a in answers)
    assert tickets in ([(1, 2), (3, 3)], [(1, 3), (4, 2)])
    assert all(a["tickets"]["series"] == 0 and a["awaiting_tickets"] is False for a in answers)


def test_availability_sums_the_items_of_a_class_in_the_event_s_partition(
    local_stack: LocalStack, api: str, http: requests.Session
) -> None:
    # Given a class kept in two items of the event's partition, and a customer counter there too
    event_id = new_event(local_stack, 10)
    dynamodb = local_stack.client("dynamodb")
    second = {
        "pk": {"S": f"EVENT#{event_id}"},
        "sk": {"S": "CLASS#GA#2"},
        "event_id": {"S": event_id},
        "seat_class": {"S": "GA"},
        "capacity": {"N": "5"},
        "available": {"N": "3"},
        "held": {"N": "1"},
        "sold": {"N": "1"},
    }
    dynamodb.put_item(TableName=local_stack.table_name, Item=second)
    counter = {"pk": {"S": f"EVENT#{event_id}"}, "sk": {"S": "CUSTOMER#GA#c-1"}, "seats": {"N": "2"}}
    dynamodb.put_item(TableName=local_stack.table_name, Item=counter)
    # Then the availability is one line for the class, summed over both items
    assert seats_left(http, api, event_id) == {
        "GA": {
            "seat_class": "GA",
            "seats_left": 13,
            "capacity": 15,
            "held": 1,
            "sold": 1,
            "sale": "OPEN",
            "sharded": False,
        }
    }


def test_a_sharded_class_s_availability_is_the_sum_over_its_shards(
    local_stack: LocalStack, api: str, http: requests.Session
) -> None:
    # Given a class of 40 seats over 4 shards (10 each), seats sold on shards 1, 2 and 3
    event_id = f"api-{uuid.uuid4().hex[:8]}"
    key = SeatKey(event_id, "GA")
    table = OperatorTable(local_stack.client("dynamodb"), local_stack.table_name)
    table.create_seat_class(key, 40, shards=4)
    for shard, quantity in ((1, 3), (2, 4), (3, 5)):
        sold = ReservationOutcome(
            reservation_id=f"r-{event_id}-{shard}",
            outcome=Outcome.CONFIRMED,
            reason="test",
            event_id=event_id,
            seat_class="GA",
            quantity=quantity,
            customer_id=f"c-{shard}",
        )
        assert (
            commit_outcomes(
                table, GroupWrite(key, [sold], seats_taken=quantity, rejection_expires_at=1, shard=shard)
            )
            is None
        )
    # And 2 more reserved through the API (on whichever shard the worker routes to)
    sent = http.post(
        f"{api}/reservations", json={"event_id": event_id, "quantity": 2, "customer_id": "c-9"}, timeout=10
    )
    assert sent.status_code == 202, sent.text
    assert poll(http, api, sent.json()["reservation_id"])["status"] == "CONFIRMED"
    # When the class's route is read
    response = http.get(f"{api}/events/{event_id}/classes/GA/availability", timeout=10)
    assert response.status_code == 200, response.text
    line = response.json()
    # Then its totals are the sum over the shards (the DAL's consistent read of every item)
    whole = table.read_inventory(key)
    assert whole is not None and len(whole.shard_seats()) == 4
    assert (line["capacity"], line["seats_left"], line["held"], line["sold"]) == (
        whole.capacity,
        whole.available,
        whole.held,
        whole.sold,
    )
    assert line == {
        "event_id": event_id,
        "seat_class": "GA",
        "seats_left": 26,
        "capacity": 40,
        "held": 0,
        "sold": 14,
        "sale": "OPEN",
        "items": 4,
    }
    # And the event's route shows no shard-0-only figures: it points to the class's route
    (event_line,) = http.get(f"{api}/events/{event_id}/availability", timeout=10).json()["seat_classes"]
    assert event_line["sharded"] is True and event_line["shards"] == 4
    assert event_line["seats_left"] is None and event_line["sold"] is None
    assert http.get(api + event_line["availability"], timeout=10).json() == line
    # And an unknown class is 404
    assert http.get(f"{api}/events/{event_id}/classes/NOPE/availability", timeout=10).status_code == 404


def test_hold_then_confirm_through_the_api(local_stack: LocalStack, api: str, http: requests.Session) -> None:
    event_id = new_event(local_stack, 5)
    hold_id = f"h-{uuid.uuid4().hex[:8]}"
    held = http.post(
        f"{api}/holds",
        json={"event_id": event_id, "quantity": 2, "customer_id": "c-2", "hold_seconds": 300},
        headers={"Idempotency-Key": hold_id},
        timeout=10,
    )
    assert held.status_code == 202 and held.json()["reservation_id"] == hold_id
    assert poll(http, api, hold_id)["status"] == "HELD"
    assert seats_left(http, api, event_id)["GA"]["held"] == 2

    confirmed = http.post(
        f"{api}/reservations/{hold_id}/confirmation", json={"customer_id": "c-2"}, timeout=10
    )
    assert confirmed.status_code == 202 and confirmed.json()["reservation_id"] == hold_id
    deadline = time.monotonic() + 60
    while poll(http, api, hold_id)["status"] != "CONFIRMED":
        assert time.monotonic() < deadline
        time.sleep(0.2)
    line = seats_left(http, api, event_id)["GA"]
    assert (line["seats_left"], line["held"], line["sold"]) == (3, 0, 2)


def test_an_order_of_two_classes_through_the_api_held_then_confirmed_whole(
    local_stack: LocalStack, api: str, http: requests.Session
) -> None:
    # docs/guides/orders.md: a basket of 2 adult and 1 child ticket, all lines in one transaction
    event_id = new_event(local_stack, 5, "ADULT")
    OperatorTable(local_stack.client("dynamodb"), local_stack.table_name).create_seat_class(
        SeatKey(event_id, "CHILD"), 4
    )
    order_id = f"o-{uuid.uuid4().hex[:8]}"
    lines = [{"seat_class": "ADULT", "quantity": 2}, {"seat_class": "CHILD", "quantity": 1}]
    held = http.post(
        f"{api}/holds",
        json={"event_id": event_id, "customer_id": "c-2", "lines": lines, "hold_seconds": 300},
        headers={"Idempotency-Key": order_id},
        timeout=10,
    )
    assert held.status_code == 202, held.text
    status = poll(http, api, order_id)
    assert (status["status"], status["seat_class"], status["quantity"], status["lines"]) == (
        "HELD",
        None,
        3,
        lines,
    )

    http.post(f"{api}/reservations/{order_id}/confirmation", json={}, timeout=10)
    deadline = time.monotonic() + 60
    while poll(http, api, order_id)["status"] != "CONFIRMED":
        assert time.monotonic() < deadline
        time.sleep(0.2)
    left = seats_left(http, api, event_id)
    assert (left["ADULT"]["sold"], left["CHILD"]["sold"], left["ADULT"]["held"]) == (2, 1, 0)


def test_a_duplicate_idempotency_key_takes_seats_once(
    local_stack: LocalStack, api: str, http: requests.Session
) -> None:
    event_id = new_event(local_stack, 10)
    key = f"order-{uuid.uuid4().hex[:8]}"
    body = {"event_id": event_id, "quantity": 4, "customer_id": "c-3"}
    first = http.post(f"{api}/reservations", json=body, headers={"Idempotency-Key": key}, timeout=10)
    again = http.post(f"{api}/reservations", json=body, headers={"Idempotency-Key": key}, timeout=10)
    assert first.status_code == again.status_code == 202
    assert first.json()["reservation_id"] == again.json()["reservation_id"] == key
    assert first.json()["message_id"] != again.json()["message_id"]  # two messages, one reservation
    assert poll(http, api, key)["status"] == "CONFIRMED"
    # Both messages answered (the queue is drained), the seats taken once
    deadline = time.monotonic() + 60
    while local_stack.queue_depth() != (0, 0):
        assert time.monotonic() < deadline
        time.sleep(0.2)
    assert seats_left(http, api, event_id)["GA"]["sold"] == 4


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"event_id": "e", "quantity": 1}, "'customer_id' is a required property"),
        ({"event_id": "e", "quantity": 2.5, "customer_id": "c"}, "quantity: 2.5 is not of type 'integer'"),
        ({"event_id": "e", "quantity": 0, "customer_id": "c"}, "quantity: 0 is less than the minimum of 1"),
        ({"event_id": "e f", "quantity": 1, "customer_id": "c"}, "event_id: 'e f' does not match"),
        ({"event_id": "e", "quantity": 1, "customer_id": "c", "extra": 1}, "('extra' was unexpected)"),
    ],
)
def test_bad_bodies_get_400_with_the_schema_s_message(
    api: str, http: requests.Session, body: dict[str, Any], message: str
) -> None:
    response = http.post(f"{api}/reservations", json=body, timeout=10)
    assert response.status_code == 400
    assert message in response.json()["message"]


def test_a_malformed_idempotency_key_or_a_quantity_over_the_maximum_gets_400(
    api: str, http: requests.Session
) -> None:
    body = {"event_id": "e", "quantity": 1, "customer_id": "c"}
    bad_key = http.post(f"{api}/reservations", json=body, headers={"Idempotency-Key": "a b"}, timeout=10)
    assert bad_key.status_code == 400 and "Idempotency-Key" in bad_key.json()["message"]
    too_many = http.post(f"{api}/reservations", json={**body, "quantity": 11}, timeout=10)
    assert too_many.status_code == 400 and too_many.json() == {
        "message": "quantity (or seats) is required and at most 10; with seats, quantity (if sent) must be"
        " their number and split is not allowed"
    }


def test_an_unknown_id_is_404_with_retry_after_and_an_unknown_route_403(
    api: str, http: requests.Session
) -> None:
    response = http.get(f"{api}/reservations/never-{uuid.uuid4().hex}", timeout=10)
    assert response.status_code == 404 and response.headers["Retry-After"] == "1"
    assert http.get(f"{api}/events/no-such-event/availability", timeout=10).status_code == 404
    unknown = http.delete(f"{api}/reservations", timeout=10)
    assert unknown.status_code == 403 and unknown.json() == {"message": "Missing Authentication Token"}


def test_cors_preflight_and_headers(api: str, http: requests.Session) -> None:
    preflight = http.options(f"{api}/reservations", timeout=10)
    assert preflight.status_code == 204
    assert "Idempotency-Key" in preflight.headers["Access-Control-Allow-Headers"]
    assert preflight.headers["Access-Control-Allow-Origin"] == "*"
    refused = http.post(f"{api}/reservations", json={}, timeout=10)
    assert refused.headers["Access-Control-Allow-Origin"] == "*"


def test_a_burst_with_duplicates_keeps_every_guarantee(
    local_stack: LocalStack, api: str, http: requests.Session
) -> None:
    # Given 60 seats and 200 reservation requests over HTTP, 10% of them re-sends of an earlier key
    event_id = new_event(local_stack, BURST_CAPACITY)
    rng = random.Random(16)
    keys = [f"b-{i}-{uuid.uuid4().hex[:6]}" for i in range(BURST_REQUESTS)]
    sends = []
    for i, key in enumerate(keys):
        if i and rng.random() < 0.10:
            key = keys[rng.randrange(i)]  # a re-send of an earlier checkout
        sends.append((key, rng.choice((1, 1, 2))))
    quantities: dict[str, int] = {}
    for key, quantity in sends:
        quantities.setdefault(key, quantity)

    def send(item: tuple[str, int]) -> tuple[int, str]:
        key, _ = item
        body = {"event_id": event_id, "quantity": quantities[key], "customer_id": f"c-{key}"}
        response = http.post(f"{api}/reservations", json=body, headers={"Idempotency-Key": key}, timeout=30)
        return response.status_code, response.json()["reservation_id"]

    with (
        OutcomeCollector(
            local_stack.client("sns"), local_stack.client("sqs"), local_stack.topic_arn, event_id=event_id
        ) as outcomes,
        ThreadPoolExecutor(16) as pool,
    ):
        # When they are sent at once
        accepted = list(pool.map(send, sends))
        assert all(status == 202 for status, _ in accepted)
        assert [rid for _, rid in accepted] == [key for key, _ in sends]
        # Then every reservation id gets an answer through the API
        answers = dict(
            zip(quantities, pool.map(lambda key: poll(http, api, key, 120), quantities), strict=True)
        )
        # (the ticket issuer's TICKETED outcomes about the sales are not answers to requests)
        published = [
            doc
            for doc in outcomes.collect(
                until=lambda docs: sum(d["outcome"] != "TICKETED" for d in docs) >= len(sends), timeout_s=120
            )
            if doc["outcome"] != "TICKETED"
        ]

    # Exactly the capacity is sold, to the reservations answered CONFIRMED
    confirmed = {key for key, answer in answers.items() if answer["status"] == "CONFIRMED"}
    assert sum(quantities[key] for key in confirmed) == BURST_CAPACITY
    assert all(answer["status"] in FINAL for answer in answers.values())
    line = seats_left(http, api, event_id)["GA"]
    assert (line["sold"], line["seats_left"], line["held"]) == (BURST_CAPACITY, 0, 0)
    # One final answer per id: one first answer each, re-sends answered with it as duplicates
    first_answers = Counter(doc["reservation_id"] for doc in published if not doc["duplicate"])
    assert first_answers == Counter(set(quantities))
    for doc in published:
        assert doc["outcome"] == answers[doc["reservation_id"]]["answer"]["outcome"]
    assert len(published) >= len(sends)


# --- a mapped class (docs/guides/seat-maps.md): chosen seats, best available, the seat map -----------------


def new_mapped_event(stack: LocalStack) -> str:
    event_id = f"map-{uuid.uuid4().hex[:8]}"
    table = OperatorTable(stack.client("dynamodb"), stack.table_name)
    table.create_seat_map(event_id, load_file(str(CLUB_MAP)), SaleRules())
    return event_id


def section_states(http: requests.Session, api: str, path: str) -> dict[str, str]:
    """Seat id -> state character (. H S B) from a section's seats route."""
    response = http.get(f"{api}{path}", timeout=10)
    assert response.status_code == 200, response.text
    body = response.json()
    states = {}
    for row in body["rows"]:
        section_row = row["row_id"].split("#", 1)[0]
        for offset, state in enumerate(row["states"]):
            states[f"{section_row}-{row['first'] + offset}"] = state
    return states


def test_a_mapped_class_through_the_api_chosen_seats_best_available_and_the_map(
    local_stack: LocalStack, api: str, http: requests.Session
) -> None:
    # Given an event created with the club's seat map (class TABLES, sections A and B)
    event_id = new_mapped_event(local_stack)
    seat_map = http.get(f"{api}/events/{event_id}/seat-map", timeout=10)
    assert seat_map.status_code == 200, seat_map.text
    sections = {s["section"]: s for s in seat_map.json()["sections"]}
    assert set(sections) == {"A", "B"} and {s["seat_class"] for s in sections.values()} == {"TABLES"}
    section_a = sections["A"]
    assert section_a["rows"][0] == {"row": "R1", "seats": 6, "flags": {"wheelchair": [1], "companion": [2]}}
    before = section_states(http, api, section_a["seats"])
    assert set(before.values()) == {"."}
    # When a customer chooses two seats, and another asks for the best 2 with split allowed
    chosen = http.post(
        f"{api}/reservations",
        json={
            "event_id": event_id,
            "seat_class": "TABLES",
            "seats": ["A-R2-3", "A-R2-4"],
            "customer_id": "c-1",
        },
        headers={"Idempotency-Key": f"{event_id}-chosen"},
        timeout=10,
    )
    assert chosen.status_code == 202, chosen.text
    answer = poll(http, api, f"{event_id}-chosen")
    # Then the answer names exactly those seats
    assert (answer["status"], answer["quantity"], answer["seats"]) == ("CONFIRMED", 2, ["A-R2-3", "A-R2-4"])
    best = http.post(
        f"{api}/holds",
        json={
            "event_id": event_id,
            "seat_class": "TABLES",
            "quantity": 2,
            "split": True,
            "customer_id": "c-2",
        },
        headers={"Idempotency-Key": f"{event_id}-best"},
        timeout=10,
    )
    assert best.status_code == 202, best.text
    held = poll(http, api, f"{event_id}-best")
    assert held["status"] == "HELD" and len(held["seats"]) == 2
    # And the seats routes show each seat as the records say: sold, held, the rest free
    states = {}
    for section in sections.values():
        states.update(section_states(http, api, section["seats"]))
    assert {seat for seat, state in states.items() if state == "S"} == {"A-R2-3", "A-R2-4"}
    assert {seat for seat, state in states.items() if state == "H"} == set(held["seats"])
    # matching the DAL's own consistent read of the rows
    table = OperatorTable(local_stack.client("dynamodb"), local_stack.table_name)
    rows = table.read_seat_rows(SeatKey(event_id, "TABLES"))
    taken = {
        f"{row_id.split('#')[0]}-{p}": state.value
        for row_id, row in rows.items()
        for p, state in row.states.items()
    }
    assert taken == {seat: state for seat, state in states.items() if state != "."}
    # And a chosen seat already taken is SEATS_TAKEN, naming it
    again = http.post(
        f"{api}/reservations",
        json={
            "event_id": event_id,
            "seat_class": "TABLES",
            "seats": ["A-R2-4"],
            "quantity": 1,
            "customer_id": "c-3",
        },
        headers={"Idempotency-Key": f"{event_id}-again"},
        timeout=10,
    )
    assert again.status_code == 202, again.text
    refused = poll(http, api, f"{event_id}-again")
    assert refused["answer"]["outcome"] == "SEATS_TAKEN" and refused["seats"] == ["A-R2-4"]
    # And seats an operator blocks (on DynamoDB Local's engine) show blocked, then free again
    free = sorted(
        seat for seat, state in section_states(http, api, sections["B"]["seats"]).items() if state == "."
    )
    table.block_seats(SeatKey(event_id, "TABLES"), free[:2])
    blocked = section_states(http, api, sections["B"]["seats"])
    assert [blocked[seat] for seat in free[:2]] == ["B", "B"]
    table.unblock_seats(SeatKey(event_id, "TABLES"), free[:1])
    assert section_states(http, api, sections["B"]["seats"])[free[0]] == "."


def test_the_seat_routes_answer_404_for_what_does_not_exist(api: str, http: requests.Session) -> None:
    assert http.get(f"{api}/events/no-such-event/seat-map", timeout=10).status_code == 404
    missing = http.get(f"{api}/events/no-such-event/classes/TABLES/sections/A/seats", timeout=10)
    assert missing.status_code == 404, missing.text


@pytest.mark.parametrize(
    "body",
    [
        {"seats": ["A-R1-3"], "quantity": 2},
        {"seats": ["A-R1-3"], "split": True},
        {},
        {"seats": ["A-R1-3", "A-R1-3"]},
    ],
)
def test_seat_bodies_the_contract_refuses_get_400(
    api: str, http: requests.Session, body: dict[str, Any]
) -> None:
    response = http.post(
        f"{api}/reservations", json={"event_id": "e", "customer_id": "c", **body}, timeout=10
    )
    assert response.status_code == 400, response.text
    assert response.json()["message"]
