"""The outbox's clear (dal/tickets.py::mark_batches_published) tries again when another issuer's
transaction holds the ledger entry for a moment, and gives up on a conflict that lasts."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError

from seat_inventory.dal.items import ledger_pk, ledger_sk
from seat_inventory.dal.tickets import CLEAR_ATTEMPTS, TicketQueries
from seat_inventory.models import TicketAssignment, TicketBatch, TicketSeries, TransactionConflict

BATCH = TicketBatch(TicketSeries("ev", 0), 1, (TicketAssignment("r-1", 1, 2),))


class ConflictingClient:
    """`update_item` answers TransactionConflictException `conflicts` times, then as DynamoDB."""

    def __init__(self, conflicts: int, *, in_outbox: bool = True) -> None:
        self.conflicts = conflicts
        self.in_outbox = in_outbox
        self.calls: list[dict[str, Any]] = []

    def update_item(self, **request: Any) -> dict[str, Any]:
        self.calls.append(request)
        if len(self.calls) <= self.conflicts:
            raise ClientError(
                {"Error": {"Code": "TransactionConflictException", "Message": "conflict"}}, "UpdateItem"
            )
        if not self.in_outbox:
            raise ClientError(
                {"Error": {"Code": "ConditionalCheckFailedException", "Message": "no"}}, "UpdateItem"
            )
        return {}


def _queries(client: ConflictingClient, slept: list[float]) -> TicketQueries:
    return TicketQueries(client, "t", sleep=slept.append)  # type: ignore[arg-type]


def test_a_passing_conflict_is_tried_again_and_the_batch_cleared() -> None:
    client, slept = ConflictingClient(conflicts=2), []
    assert _queries(client, slept).mark_batches_published([BATCH]) == 1
    assert len(client.calls) == 3 and slept == [0.01, 0.02]
    request = client.calls[-1]
    assert request["Key"] == {"pk": {"S": ledger_pk("ev", 0)}, "sk": {"S": ledger_sk(1)}}
    assert request["ConditionExpression"] == "attribute_exists(gsi2pk)"


def test_a_batch_no_longer_in_the_outbox_is_not_counted() -> None:
    client, slept = ConflictingClient(conflicts=0, in_outbox=False), []
    assert _queries(client, slept).mark_batches_published([BATCH]) == 0
    assert len(client.calls) == 1 and slept == []


def test_a_conflict_that_lasts_raises_and_leaves_the_batch_in_the_outbox() -> None:
    client, slept = ConflictingClient(conflicts=CLEAR_ATTEMPTS), []
    with pytest.raises(TransactionConflict):
        _queries(client, slept).mark_batches_published([BATCH])
    assert len(client.calls) == CLEAR_ATTEMPTS
