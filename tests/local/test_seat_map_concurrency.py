"""Mapped seats on DynamoDB Local (atomic conditional transactions) behind the contention layer:
containers (separate processes running the real handler) race for the same ten seats with
chosen-seat and best-available reserves and holds, some delivered twice. Exactly the ten seats
are taken, each by one reservation; every request gets one final answer; each seat's state on
its row item is its record's (docs/guides/seat-maps.md).

Bounded (tests/depth.py): CI sends 300 requests, `make test-deep` the 1,000 of issue 20
(SEATS_SEAT_MAP_REQUESTS overrides).
"""

from __future__ import annotations

import json
import multiprocessing
import random
import uuid
from collections import Counter, defaultdict
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import pytest

from seat_inventory.logic.seat_map import load_json
from seat_inventory.models import SeatKey, SeatState
from seat_tools.local.runner import RunnerConfig, runner_config
from seat_tools.local.stack import LocalStack
from seat_tools.operator_commands import OperatorTable
from seat_tools.seat_map_commands import SaleRules
from tests.depth import sized
from tests.local.test_model_concurrent import Message, Workload, _start_container, apply

pytestmark = [pytest.mark.local_stack, pytest.mark.bounded]

REQUESTS = sized("SEATS_SEAT_MAP_REQUESTS", ci=300, deep=1000)
CONTAINERS = 3
SEATS = [f"S-R1-{n}" for n in range(1, 11)]
TAKERS = ("CONFIRMED", "HELD")


@pytest.fixture(scope="module")
def containers(local_stack: LocalStack) -> Iterator[tuple[ProcessPoolExecutor, RunnerConfig]]:
    config = runner_config(local_stack, workers=CONTAINERS)
    with ProcessPoolExecutor(
        max_workers=CONTAINERS,
        mp_context=multiprocessing.get_context("spawn"),
        initializer=_start_container,
        initargs=(config,),
    ) as pool:
        yield pool, config


def _workload(event_id: str, rng: random.Random) -> Workload:
    messages = []
    requests: dict[str, dict[str, Any]] = {}
    for n in range(REQUESTS):
        rid = f"{event_id}-r{n}"
        body: dict[str, Any] = {
            "reservation_id": rid,
            "event_id": event_id,
            "seat_class": "A",
            "customer_id": f"c-{n}",
        }
        if rng.random() < 0.7:
            body["seats"] = rng.sample(SEATS, rng.choice([1, 1, 2, 3]))
        else:
            body["quantity"] = rng.choice([1, 2, 3])
        if rng.random() < 0.3:
            body.update(type="hold", hold_seconds=600)
        requests[rid] = body
        messages.append(
            Message(f"{event_id}-m{n}", json.dumps(body), "hold" if "type" in body else "reserve", rid)
        )
    deliveries = [m for m in messages for _ in range(rng.choice([1, 1, 1, 1, 2]))]  # some redelivered
    rng.shuffle(deliveries)
    sizes = [rng.randint(1, 10) for _ in deliveries]
    return Workload(event_id, {}, {}, None, requests, messages, deliveries, sizes)


def test_a_thousand_requests_for_ten_seats_sell_exactly_ten(
    local_stack: LocalStack, containers: tuple[ProcessPoolExecutor, RunnerConfig]
) -> None:
    pool, config = containers
    event_id = f"sm-{uuid.uuid4().hex[:8]}"
    table = OperatorTable(local_stack.client("dynamodb"), local_stack.table_name)
    seat_map = load_json(
        json.dumps(
            {
                "classes": {"A": {"orphans": "allow"}},
                "sections": [{"id": "S", "class": "A", "rows": [{"id": "R1", "seats": 10}]}],
            }
        )
    )
    table.create_seat_map(event_id, seat_map, SaleRules())
    workload = _workload(event_id, random.Random(20))

    run = apply(workload, pool, config)

    # Every delivery answered once or handed back (and delivered again); every message answered.
    for invocation in run.invocations:
        answered = Counter(d["message_id"] for d in invocation.documents)
        assert set(answered.values()) <= {1}
        assert set(answered) == {m.message_id for m in invocation.batch} - invocation.failed
    documents = run.documents
    assert {d["message_id"] for d in documents} == {m.message_id for m in workload.messages}
    # Each reservation decided once: its first answer, its duplicates the same, its record that answer.
    by_rid: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for d in documents:
        by_rid[d["reservation_id"]].append(d)
    records = table.read_reservations(list(workload.requests))
    taken: Counter[str] = Counter()
    for rid, answers in by_rid.items():
        first = [a for a in answers if not a["duplicate"]]
        assert len(first) == 1, answers
        assert {(a["outcome"], tuple(a.get("seats") or ())) for a in answers} == {
            (first[0]["outcome"], tuple(first[0].get("seats") or ()))
        }
        assert records[rid].answer.outcome.value == first[0]["outcome"]
        assert first[0]["outcome"] in (*TAKERS, "SEATS_TAKEN", "SOLD_OUT"), first[0]
        if first[0]["outcome"] in TAKERS:
            taken.update(first[0]["seats"])
        elif first[0]["outcome"] == "SEATS_TAKEN":
            assert set(first[0]["seats"]) <= set(SEATS)
    # Exactly the ten seats, each once.
    assert taken == Counter(SEATS), taken
    rows = table.read_seat_rows(SeatKey(event_id, "A"))
    [row] = rows.values()
    live = {
        seat: records[rid].status.value
        for rid in records
        for seat in records[rid].seats
        if records[rid].status.value in TAKERS
    }
    assert {
        f"S-R1-{p}": ("HELD" if s is SeatState.HELD else "CONFIRMED") for p, s in row.states.items()
    } == live
    assert (row.available, row.held + row.sold) == (0, 10)
