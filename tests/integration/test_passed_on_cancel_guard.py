"""A reservation one of whose tickets another customer holds (passed on, docs/guides/checkin.md) cannot be
cancelled: the cancel's record condition refuses it on moto, and the answer says why.

The transfer that sets `tickets_passed_on` is the gate's (dal/transfers.py); here the attribute is
written directly, to test the cancel path's guard alone: success without it, refusal with it,
and the refusal decided from the record DynamoDB hands back when a transfer came between the
cancel's read and its write.
"""

from __future__ import annotations

from typing import Any

import pytest

from seat_inventory.dal.items import reservation_key
from seat_inventory.handlers import reserve_seats as handler_module
from tests.integration.conftest import Stack, sqs_event


@pytest.fixture
def sold(stack: Stack) -> Stack:
    stack.create_event("gig", 10)
    stack.invoke(sqs_event({"reservation_id": "r-1", "event_id": "gig", "quantity": 2, "customer_id": "c-1"}))
    assert [o["outcome"] for o in stack.outcomes()] == ["CONFIRMED"]
    return stack


def pass_on(stack: Stack, count: int) -> None:
    stack.dynamodb.update_item(
        TableName=stack.table_name,
        Key=reservation_key("r-1"),
        UpdateExpression="SET tickets_passed_on = :n",
        ExpressionAttributeValues={":n": {"N": str(count)}},
    )


def cancel() -> dict[str, Any]:
    return sqs_event({"type": "cancel", "reservation_id": "r-1"})


def test_a_reservation_none_of_whose_tickets_was_passed_on_is_cancelled(sold: Stack) -> None:
    pass_on(sold, 0)  # every ticket passed on came back to the buyer
    sold.invoke(cancel())
    [answer] = sold.outcomes()
    assert (answer["outcome"], answer["reason"]) == ("CANCELLED", "2 seat(s) released")
    assert sold.inventory("gig")["available"] == 10


def test_a_reservation_with_a_ticket_passed_on_is_not_cancelled(sold: Stack) -> None:
    pass_on(sold, 1)
    sold.invoke(cancel())
    [answer] = sold.outcomes()
    assert answer["outcome"] == "CONFIRMED"
    assert answer["reason"] == "1 of its tickets are held by other customers (passed on); nothing to cancel"
    assert sold.inventory("gig")["available"] == 8


def test_a_transfer_between_the_cancels_read_and_write_refuses_the_cancel(
    sold: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The record is read without the attribute; the transfer commits; the cancel's condition then
    fails and the refusal is decided from ALL_OLD: the seats stay sold."""
    from seat_inventory.dal.writes import Writes as Transitions

    original = Transitions.read_reservations
    calls = []

    def read_then_pass_on(self: Any, reservation_ids: Any) -> Any:
        records = original(self, reservation_ids)
        if not calls:
            pass_on(sold, 1)
        calls.append(reservation_ids)
        return records

    monkeypatch.setattr(Transitions, "read_reservations", read_then_pass_on)
    handler_module.reset_container()
    sold.invoke(cancel())
    [answer] = sold.outcomes()
    assert answer["outcome"] == "CONFIRMED"
    assert "held by other customers" in answer["reason"]
    assert sold.inventory("gig") == {"capacity": 10, "available": 8, "sold": 2}
