"""The real handlers on moto through a hold's life: hold, confirm, cancel, expiry by the sweeper.

Time is moved forward by replacing the system clock the handlers are built with; faults are
injected with botocore's own hooks (see conftest.py).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from seat_inventory.handlers import reserve_seats as handler_module
from seat_inventory.handlers import sweep_holds as sweeper_module
from seat_inventory.logic.sweep_holds import release_expired_holds
from seat_inventory.models import SaleStatus, SeatKey, iso_utc
from seat_inventory.publishing.sns_publisher import SnsOutcomePublisher
from seat_inventory.wiring import SystemClock, build_adapters
from seat_tools.operator_commands import OperatorTable
from tests.integration.conftest import LambdaContext, SimulatedCrash, Stack, load_event, sqs_event

GA = SeatKey("concert-2026", "GA")


class Lifecycle:
    """The stack plus a movable clock and the sweeper handler."""

    def __init__(self, stack: Stack, monkeypatch: pytest.MonkeyPatch) -> None:
        self.stack = stack
        self.offset = 0.0
        monkeypatch.setattr(SystemClock, "now", lambda _: time.time() + self.offset)
        monkeypatch.setattr(
            sweeper_module, "build_adapters", lambda settings: build_adapters(settings, stack.faults.session)
        )
        sweeper_module.reset_container()
        self.table = OperatorTable(stack.dynamodb, stack.table_name)

    def rebuild(self) -> None:
        """New containers: botocore hooks registered since apply only to clients built after them."""
        handler_module.reset_container()
        sweeper_module.reset_container()

    def advance(self, seconds: float) -> None:
        self.offset += seconds

    def invoke(self, *bodies: Any) -> dict[str, Any]:
        return self.stack.invoke(sqs_event(*bodies))

    def sweep(self, event: dict[str, Any] | None = None) -> dict[str, Any]:
        return sweeper_module.lambda_handler(event or load_event("sweep_schedule.json"), LambdaContext())

    def seats(self, key: SeatKey = GA) -> tuple[int, int, int]:
        item = self.table.read_inventory(key)
        assert item is not None
        assert item.available + item.held + item.sold == item.capacity, "invariant broken"
        return item.available, item.held, item.sold

    def answers(self) -> list[tuple[str, str, bool]]:
        return [(o["reservation_id"], o["outcome"], o["duplicate"]) for o in self.stack.outcomes()]


@pytest.fixture
def life(stack: Stack, monkeypatch: pytest.MonkeyPatch) -> Iterator[Lifecycle]:
    stack.create_event("concert-2026", 100, "GA")
    stack.create_event("concert-2026", 10, "VIP")
    yield Lifecycle(stack, monkeypatch)
    sweeper_module.reset_container()


def hold(
    rid: str, quantity: int = 2, seconds: int = 60, customer: str = "c-1", **extra: Any
) -> dict[str, Any]:
    return {
        "type": "hold",
        "reservation_id": rid,
        "event_id": "concert-2026",
        "seat_class": "GA",
        "quantity": quantity,
        "customer_id": customer,
        "hold_seconds": seconds,
        **extra,
    }


def reserve(rid: str, quantity: int = 2, customer: str = "c-1") -> dict[str, Any]:
    return {"reservation_id": rid, "event_id": "concert-2026", "quantity": quantity, "customer_id": customer}


def confirm(rid: str) -> dict[str, Any]:
    return {"type": "confirm", "reservation_id": rid}


def cancel(rid: str) -> dict[str, Any]:
    return {"type": "cancel", "reservation_id": rid}


# --- the samples move the inventory as documented ---------------------------------------------------


def test_the_samples_take_hold_confirm_and_give_back_the_seats(life: Lifecycle) -> None:
    vip = SeatKey("concert-2026", "VIP")

    life.stack.invoke(load_event("hold.json"))
    assert (life.seats(), life.seats(vip)) == ((98, 2, 0), (9, 1, 0))
    held = {o["reservation_id"]: o for o in life.stack.outcomes()}
    epoch = held["h-3001"]["expires_at_epoch"]
    assert abs(epoch - (time.time() + 600)) < 60  # the sample asks for 600 s
    assert held["h-3001"]["expires_at"] == iso_utc(epoch)

    life.stack.invoke(load_event("confirm.json"))
    assert life.seats() == (98, 0, 2)

    life.stack.invoke(load_event("cancel.json"))
    assert (life.seats(), life.seats(vip)) == ((100, 0, 0), (10, 0, 0))
    assert life.table.get_reservation_record("h-3001").status.value == "CANCELLED"  # type: ignore[union-attr]


# --- the sweeper releases expired holds once, and announces them at least once ----------------------


def test_the_scheduled_sweeper_releases_an_expired_hold(life: Lifecycle) -> None:
    # Given a 60-second hold and a minute later
    life.invoke(hold("h-1", quantity=3))
    life.stack.outcomes()
    life.advance(60)

    # When the scheduled sweeper runs (the sample EventBridge event)
    response = life.sweep()

    # Then the seats are back and EXPIRED was published
    assert response["released"] == 1 and response["seats_released"] == 3
    assert life.seats() == (100, 0, 0)
    [expired] = life.stack.outcomes()
    assert (expired["reservation_id"], expired["outcome"], expired["type"], expired["message_id"]) == (
        "h-1",
        "EXPIRED",
        "expire",
        None,
    )


def test_a_live_hold_is_left_alone_and_a_confirmed_one_is_not_in_the_index(life: Lifecycle) -> None:
    life.invoke(hold("h-1", seconds=120), hold("h-2", seconds=60), confirm("h-2"))
    life.advance(60)

    assert life.sweep()["released"] == 0
    assert life.seats() == (96, 2, 2)


def test_sweeping_twice_releases_once(life: Lifecycle) -> None:
    life.invoke(hold("h-1"), hold("h-2"))
    life.stack.outcomes()
    life.advance(61)

    first, second = life.sweep(), life.sweep()

    assert (first["released"], second["released"]) == (2, 0)
    assert sorted(o["reservation_id"] for o in life.stack.outcomes()) == ["h-1", "h-2"]
    assert life.seats() == (100, 0, 0)


def test_a_sweeper_interleaved_with_another_releases_each_hold_once(life: Lifecycle) -> None:
    # Given another sweeper that runs completely between this one's index query and its transaction
    life.invoke(hold("h-1"), hold("h-2", quantity=1))
    life.stack.outcomes()
    life.advance(61)
    other_table = OperatorTable(life.stack.dynamodb, life.stack.table_name)
    other_publisher = SnsOutcomePublisher(life.stack.faults.session.client("sns"), life.stack.topic_arn)
    others: list[Any] = []

    def other_sweeper_after_the_holds_query(parsed: dict[str, Any], **_: Any) -> None:
        found = [i for i in parsed.get("Items", []) if i.get("gsi1pk", {}).get("S", "").startswith("HOLDS#")]
        if found and not others:
            others.append(release_expired_holds(other_table, other_publisher, SystemClock(), limit=10))

    life.stack.faults.session.events.register(
        "after-call.dynamodb.Query", other_sweeper_after_the_holds_query
    )

    # When this sweeper runs
    response = life.sweep()

    # Then the other one released both, this one skipped what it found: seats came back once
    assert sorted(o.reservation_id for o in others[0].released) == ["h-1", "h-2"]
    assert response["released"] == 0 and response["skipped"] >= 1
    assert life.seats() == (100, 0, 0)
    assert sorted(o["reservation_id"] for o in life.stack.outcomes()) == ["h-1", "h-2"]


def test_an_expiry_whose_publication_failed_is_published_by_the_next_run(life: Lifecycle) -> None:
    life.invoke(hold("h-1"))
    life.stack.outcomes()
    life.advance(61)
    life.stack.faults.fail("sns.PublishBatch", "KMSThrottlingException")

    failed = life.sweep()
    assert (failed["released"], failed["unpublished"]) == (1, 1)
    assert life.stack.outcomes() == []
    assert life.seats() == (100, 0, 0)

    retried = life.sweep()

    assert (retried["released"], retried["republished"], retried["unpublished"]) == (0, 1, 0)
    assert [(o["reservation_id"], o["outcome"]) for o in life.stack.outcomes()] == [("h-1", "EXPIRED")]
    assert life.seats() == (100, 0, 0)
    assert life.sweep()["republished"] == 0  # out of the outbox for good


def test_a_confirm_that_arrives_after_the_sweeper_is_answered_expired(life: Lifecycle) -> None:
    life.invoke(hold("h-1"))
    life.advance(61)
    life.sweep()
    life.stack.outcomes()

    life.invoke(confirm("h-1"))

    [answer] = life.stack.outcomes()
    assert (answer["outcome"], answer["type"]) == ("EXPIRED", "confirm")
    assert answer["reason"].endswith("nothing to confirm")
    assert life.seats() == (100, 0, 0)


# --- faults during status changes -------------------------------------------------------------------


def test_a_crash_after_a_confirm_committed_is_answered_from_the_record_on_redelivery(life: Lifecycle) -> None:
    life.invoke(hold("h-1"))
    life.stack.outcomes()
    life.stack.faults.crash_after("dynamodb.TransactWriteItems")
    life.rebuild()

    with pytest.raises(SimulatedCrash):
        life.invoke(confirm("h-1"))
    assert life.seats() == (98, 0, 2)

    assert life.invoke(confirm("h-1")) == {"batchItemFailures": []}
    assert life.answers() == [("h-1", "CONFIRMED", True)]
    assert life.seats() == (98, 0, 2)


def test_a_cancel_whose_publication_failed_gives_the_seats_back_once(life: Lifecycle) -> None:
    life.invoke(reserve("r-1", quantity=4))
    life.stack.outcomes()
    life.stack.faults.fail("sns.PublishBatch", "InternalError")
    life.rebuild()

    assert life.invoke(cancel("r-1")) == {"batchItemFailures": [{"itemIdentifier": "msg-0"}]}
    assert life.seats() == (100, 0, 0)

    assert life.invoke(cancel("r-1")) == {"batchItemFailures": []}
    assert life.answers() == [("r-1", "CANCELLED", True)]
    assert life.seats() == (100, 0, 0)


def test_a_throttled_status_change_is_retried_in_place(life: Lifecycle) -> None:
    life.invoke(hold("h-1"))
    life.stack.outcomes()
    life.stack.faults.fail(
        "dynamodb.TransactWriteItems",
        "ThrottlingException",
        times=2,
        when=lambda r: "RESERVATION#h-1" in str(r.get("body")),
    )
    life.rebuild()

    response = life.invoke(confirm("h-1"), reserve("r-2"))

    assert response == {"batchItemFailures": []}
    assert sorted(life.answers()) == [("h-1", "CONFIRMED", False), ("r-2", "CONFIRMED", False)]
    assert life.seats() == (96, 0, 4)


def test_a_failed_status_change_is_retried_alone(life: Lifecycle) -> None:
    life.invoke(hold("h-1"))
    life.stack.outcomes()
    life.stack.faults.fail(
        "dynamodb.TransactWriteItems",
        "InternalServerError",
        when=lambda r: "RESERVATION#h-1" in str(r.get("body")),
    )
    life.rebuild()

    response = life.invoke(confirm("h-1"), reserve("r-2"))

    assert response == {"batchItemFailures": [{"itemIdentifier": "msg-0"}]}
    assert life.answers() == [("r-2", "CONFIRMED", False)]
    assert life.invoke(confirm("h-1")) == {"batchItemFailures": []}
    assert life.seats() == (96, 0, 4)


# --- limits and sale windows through the handler ------------------------------------------------------


def test_a_customer_limit_is_enforced_in_the_batch_and_across_batches(life: Lifecycle) -> None:
    life.table.set_max_per_customer(GA, 4)

    life.invoke(reserve("r-1", 3, "c-1"), hold("h-1", 2, customer="c-1"), reserve("r-2", 4, "c-2"))
    assert life.answers() == [
        ("r-1", "CONFIRMED", False),
        ("h-1", "LIMIT_EXCEEDED", False),
        ("r-2", "CONFIRMED", False),
    ]

    life.invoke(reserve("r-3", 2, "c-1"), reserve("r-4", 1, "c-1"))
    assert life.answers() == [("r-3", "LIMIT_EXCEEDED", False), ("r-4", "CONFIRMED", False)]

    life.invoke(cancel("r-1"))
    life.invoke(reserve("r-5", 3, "c-1"))
    assert life.answers()[-1] == ("r-5", "CONFIRMED", False)
    assert life.table.get_customer_seats(GA, "c-1") == 4


def test_a_closed_or_unscheduled_sale_answers_sale_closed(life: Lifecycle) -> None:
    life.table.set_sale_status(GA, SaleStatus.CLOSED)
    life.invoke(reserve("r-1"), hold("h-1"))
    assert [a[1] for a in life.answers()] == ["SALE_CLOSED", "SALE_CLOSED"]

    life.table.set_sale_status(GA, SaleStatus.OPEN)
    life.table.set_sale_window(GA, int(time.time()) + 3600, None)
    life.invoke(reserve("r-2"))
    [(rid, outcome, _)] = life.answers()
    assert (rid, outcome) == ("r-2", "SALE_CLOSED")

    life.advance(3600)
    life.invoke(reserve("r-3"))
    assert life.answers() == [("r-3", "CONFIRMED", False)]
    assert life.seats() == (98, 0, 2)


def test_confirm_and_cancel_go_on_after_the_sale_ended(life: Lifecycle) -> None:
    life.invoke(hold("h-1", seconds=600), reserve("r-1"))
    life.table.set_sale_window(GA, None, int(time.time()))
    life.stack.outcomes()

    life.invoke(confirm("h-1"), cancel("r-1"))

    assert life.answers() == [("h-1", "CONFIRMED", False), ("r-1", "CANCELLED", False)]
