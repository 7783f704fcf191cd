"""`seats reserve | hold | confirm | cancel` (and `--wait`) against moto, the real handler consuming the queue."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from click.testing import Result

from seat_inventory.handlers import reserve_seats as handler_module
from seat_inventory.models import InvalidMessage
from seat_inventory.parsing import parse_reservation
from seat_tools.cli import request_commands
from seat_tools.traffic import OutcomeCollector
from tests.integration.conftest import LambdaContext
from tests.integration.test_traffic_commands import Aws, aws, run, seed_events  # noqa: F401


class Service(threading.Thread):
    """Plays the event source mapping: receives from the reservations queue and runs the real handler."""

    def __init__(self, resources: Aws) -> None:
        super().__init__(daemon=True)
        self.aws = resources
        self.stopped = threading.Event()

    def run(self) -> None:
        handler_module.reset_container()
        while not self.stopped.is_set():
            messages = self.aws.sqs.receive_message(
                QueueUrl=self.aws.queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=0
            ).get("Messages", [])
            if not messages:
                self.stopped.wait(0.05)
                continue
            event = {
                "Records": [
                    {
                        "messageId": m["MessageId"],
                        "receiptHandle": m["ReceiptHandle"],
                        "body": m["Body"],
                        "attributes": {"ApproximateReceiveCount": "1"},
                        "messageAttributes": {},
                        "eventSource": "aws:sqs",
                    }
                    for m in messages
                ]
            }
            handler_module.lambda_handler(event, LambdaContext())
            for m in messages:
                self.aws.sqs.delete_message(QueueUrl=self.aws.queue_url, ReceiptHandle=m["ReceiptHandle"])


@pytest.fixture
def service(aws: Aws) -> Iterator[Service]:  # noqa: F811
    seed_events(aws)
    running = Service(aws)
    running.start()
    yield running
    running.stopped.set()
    running.join(timeout=5)
    handler_module.reset_container()


def test_hold_confirm_cancel_send_the_contract_bodies(aws: Aws) -> None:  # noqa: F811
    # When a hold, a confirm and a cancel are sent without waiting
    held = run("hold", "concert-2026", "--quantity", "2", "--customer", "c-9", "--hold-seconds", "120")
    hold_id = json.loads(
        run("hold", "concert-2026", "--quantity", "1", "--customer", "c-9", "--output", "json").stdout
    )
    confirmed = run("confirm", "h-1", "--customer", "c-9", "--output", "text")
    cancelled = run("cancel", "h-2")

    # Then each prints the reservation id and message id, and the queue holds bodies the parser accepts
    assert all(r.exit_code == 0 for r in (held, confirmed, cancelled)), held.output + confirmed.output
    assert held.stdout.startswith("reservation_id h-")
    assert set(hold_id) == {"reservation_id", "message_id"}
    assert confirmed.stdout.split("\t")[0] == "h-1"
    bodies = [json.loads(m["Body"]) for m in aws.drain(aws.queue_url)]
    assert sorted((b.get("type"), b["reservation_id"]) for b in bodies)[:2] == [
        ("cancel", "h-2"),
        ("confirm", "h-1"),
    ]
    [first_hold] = [b for b in bodies if b.get("hold_seconds")]
    assert first_hold == {
        "type": "hold",
        "reservation_id": first_hold["reservation_id"],
        "event_id": "concert-2026",
        "quantity": 2,
        "customer_id": "c-9",
        "hold_seconds": 120,
    }
    for body in bodies:
        parsed = parse_reservation("m-1", json.dumps(body), default_seat_class="GA", max_quantity=10)
        assert not isinstance(parsed, InvalidMessage), (body, parsed)


def test_reserve_wait_prints_the_answer(service: Service) -> None:
    # When a reservation is sent with --wait
    result = run(
        "reserve", "concert-2026", "--quantity", "2", "--customer", "c-1", "--wait", "--timeout", "20"
    )

    # Then the service's answer is printed and the exit status says it was confirmed
    assert result.exit_code == 0, result.output + result.stderr
    assert "outcome" in result.stdout and "CONFIRMED" in result.stdout
    # and the temporary subscription is gone
    assert service.aws.subscriptions() == [] and service.aws.watch_queues() == []


def test_hold_then_confirm_with_wait_and_a_refusal_exits_1(service: Service) -> None:
    held = run(
        "hold", "concert-2026", "--quantity", "1", "--customer", "c-2", "--reservation-id", "h-w1",
        "--wait", "--timeout", "20", "--output", "json",
    )  # fmt: skip
    confirmed = run("confirm", "h-w1", "--wait", "--timeout", "20", "--output", "json")
    sold_out = run(
        "reserve", "sold-out-show", "--quantity", "2", "--customer", "c-3", "--wait", "--timeout", "20",
        "--output", "json",
    )  # fmt: skip

    assert held.exit_code == 0 and answer(held)["outcome"] == "HELD", held.output
    assert confirmed.exit_code == 0 and answer(confirmed)["outcome"] == "CONFIRMED"
    assert sold_out.exit_code == 1 and answer(sold_out)["outcome"] == "SOLD_OUT"


def answer(result: Result) -> dict[str, Any]:
    """The outcome document the command printed (the handler's own metrics lines share stdout here)."""
    [document] = [
        json.loads(line) for line in result.stdout.splitlines() if line.startswith('{"reservation_id"')
    ]
    return document


def test_wait_gives_up_after_the_timeout(aws: Aws) -> None:  # noqa: F811
    # Given nothing consumes the queue
    result = run("cancel", "r-nobody", "--wait", "--timeout", "1")

    assert result.exit_code == 1
    assert "no answer to cancel r-nobody within 1 s" in result.stderr
    assert aws.subscriptions() == [] and aws.watch_queues() == []


def test_wait_reads_the_recorded_answer_when_sns_delivers_nothing(
    service: Service, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a subscription that delivers nothing (as a new one on AWS may, for a few seconds)
    monkeypatch.setattr(request_commands, "RECORD_GRACE_S", 0.5)
    # (a long poll that waits and returns nothing: returning at once would spin and starve the handler)
    monkeypatch.setattr(OutcomeCollector, "poll", lambda self, wait_seconds=1: time.sleep(wait_seconds) or [])

    # When a hold is sent with --wait
    result = run(
        "hold", "concert-2026", "--quantity", "1", "--customer", "c-4", "--reservation-id", "h-rec",
        "--wait", "--timeout", "20", "--output", "json",
    )  # fmt: skip

    # Then the answer recorded for that message is printed, as SNS would have delivered it
    assert result.exit_code == 0, result.output + result.stderr
    document = answer(result)
    assert (document["reservation_id"], document["outcome"], document["type"]) == ("h-rec", "HELD", "hold")
    assert document["duplicate"] is False and document["message_id"]


def test_reserve_and_hold_send_chosen_seats_and_best_available_options(aws: Aws) -> None:  # noqa: F811
    chosen = run(
        "reserve",
        "concert-2026",
        "--seat",
        "S-R1-1",
        "--seat",
        "S-R1-2",
        "--customer",
        "c-1",
        "--seat-class",
        "STALLS",
    )
    best = run(
        "hold",
        "concert-2026",
        "--quantity",
        "3",
        "--split",
        "--accessible",
        "--customer",
        "c-2",
        "--seat-class",
        "STALLS",
    )
    neither = run("reserve", "concert-2026", "--customer", "c-3")
    both = run("reserve", "concert-2026", "--quantity", "1", "--seat", "S-R1-3", "--customer", "c-3")
    assert chosen.exit_code == 0 and best.exit_code == 0, chosen.output + best.output
    assert neither.exit_code == 2 and both.exit_code == 2
    assert "give --quantity N (best available, or a counted class) or --seat ID" in neither.stderr
    bodies = sorted((json.loads(m["Body"]) for m in aws.drain(aws.queue_url)), key=lambda b: b["customer_id"])
    assert [{k: v for k, v in b.items() if k != "reservation_id"} for b in bodies] == [
        {
            "event_id": "concert-2026",
            "customer_id": "c-1",
            "seat_class": "STALLS",
            "seats": ["S-R1-1", "S-R1-2"],
        },
        {
            "type": "hold",
            "event_id": "concert-2026",
            "customer_id": "c-2",
            "seat_class": "STALLS",
            "quantity": 3,
            "split": True,
            "accessible": True,
        },
    ]
    for body in bodies:
        parsed = parse_reservation("m-1", json.dumps(body), default_seat_class="GA", max_quantity=10)
        assert not isinstance(parsed, InvalidMessage), (body, parsed)
