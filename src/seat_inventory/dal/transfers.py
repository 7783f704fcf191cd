"""Transfers (docs/guides/checkin.md): the per-customer limit a receiver is counted against, the transfer
transaction, the transfers kept, and the export's read of the tickets a scanner must refuse."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from botocore.exceptions import ClientError

from seat_inventory.dal.access import TableAccess
from seat_inventory.dal.checkins import held_ticket
from seat_inventory.dal.errors import (
    TRANSACTION_CANCELED,
    call,
    call_expecting,
    cancellation_reasons,
    failed_condition,
)
from seat_inventory.dal.gate_items import (
    holder_attribute,
    holder_value,
    transfer_from_item,
    transfer_item,
    transfer_key,
)
from seat_inventory.dal.items import (
    RESERVATION_PREFIX,
    customer_key,
    inventory_key,
    number,
    record_from_item,
    reservation_key,
    row_key,
)
from seat_inventory.gate_models import HeldTicket, TicketRef, TransferRecord, TransferRefused, TransferWrite
from seat_inventory.models import Outcome, StoreInconsistency, row_item_of


class Transfers(TableAccess):
    """The transfer half of `GateStore`."""

    def _limit_item_key(self, ticket: HeldTicket) -> dict[str, Any]:
        """The item the class's per-customer limit is read from and guarded on: the class's
        inventory item (shard 0: an operator change writes every shard at once), or for a mapped
        class the row item of the ticket's seat (each carries the class's rules)."""
        if ticket.seat.seat is not None:
            return row_key(ticket.seat_key, row_item_of(ticket.seat.seat)[0])
        return inventory_key(ticket.seat_key)

    def read_limit(self, ticket: HeldTicket) -> int | None:
        item = call(
            self._client.get_item,
            TableName=self._table_name,
            Key=self._limit_item_key(ticket),
            ConsistentRead=True,
            ProjectionExpression="max_per_customer",
        ).get("Item", {})
        return int(item["max_per_customer"]["N"]) if "max_per_customer" in item else None

    def commit_transfer(self, write: TransferWrite) -> TransferRefused | None:
        """One `TransactWriteItems`: the record's holder (guarded on the record being CONFIRMED,
        this serial's reservation, and the holder generation read), the giver's and receiver's
        counters when they move, the limit's guard when the receiver is counted, and the
        transfer's item (`attribute_not_exists`: a transfer id is used once)."""
        held, before, after = write.held, write.before, write.after
        actions: list[dict[str, Any]] = [
            self._pass_holder(write),
            {
                "Put": {
                    "TableName": self._table_name,
                    "Item": transfer_item(write.record),
                    "ConditionExpression": "attribute_not_exists(pk)",
                    "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                }
            },
        ]
        moves = before.customer_id != after.customer_id
        giver = moves and before.counted and before.customer_id is not None
        receiver = moves and after.counted
        if giver:
            assert before.customer_id is not None
            actions.append(self._uncount(held, before.customer_id))
        receiver_at = len(actions)
        if receiver:
            assert after.customer_id is not None
            actions.append(self._count(held, after.customer_id, write.limit))
            actions.append(self._limit_guard(held, write.limit))
        cancelled = call_expecting(
            TRANSACTION_CANCELED, self._client.transact_write_items, TransactItems=actions
        )
        if not isinstance(cancelled, ClientError):
            return None
        return _refusal(
            write, cancellation_reasons(cancelled, len(actions)), giver, receiver_at if receiver else None
        )

    def _pass_holder(self, write: TransferWrite) -> dict[str, Any]:
        """The record's update: the serial's new holder, guarded on the generation read."""
        held, before = write.held, write.before
        names = {"#status": "status", "#holder": holder_attribute(held.ticket.serial)}
        values: dict[str, Any] = {
            ":confirmed": {"S": Outcome.CONFIRMED.value},
            ":series": number(held.ticket.series),
            ":first": number(held.record.ticket_first or 0),
            ":holder": holder_value(write.after),
            ":delta": number(write.passed_on_delta),
            ":zero": number(0),
            ":one": number(1),
        }
        condition = "#status = :confirmed AND ticket_series = :series AND ticket_first = :first AND "
        if before.generation == 0:
            condition += "attribute_not_exists(#holder)"
        else:
            condition += "#holder.g = :generation"
            values[":generation"] = number(before.generation)
        return {
            "Update": {
                "TableName": self._table_name,
                "Key": reservation_key(held.reservation_id),
                "UpdateExpression": (
                    "SET #holder = :holder,"
                    " tickets_passed_on = if_not_exists(tickets_passed_on, :zero) + :delta,"
                    " tickets_transferred = if_not_exists(tickets_transferred, :zero) + :one"
                ),
                "ConditionExpression": condition,
                "ExpressionAttributeNames": names,
                "ExpressionAttributeValues": values,
                "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
            }
        }

    def _uncount(self, held: HeldTicket, customer_id: str) -> dict[str, Any]:
        return {
            "Update": {
                "TableName": self._table_name,
                "Key": customer_key(held.seat_key, customer_id),
                "UpdateExpression": "SET seats = seats - :one",
                "ConditionExpression": "seats >= :one",
                "ExpressionAttributeValues": {":one": number(1)},
            }
        }

    def _count(self, held: HeldTicket, customer_id: str, limit: int | None) -> dict[str, Any]:
        key = held.seat_key
        update: dict[str, Any] = {
            "TableName": self._table_name,
            "Key": customer_key(key, customer_id),
            "UpdateExpression": (
                "SET seats = if_not_exists(seats, :zero) + :one, entity = :entity,"
                " event_id = :event_id, seat_class = :seat_class, customer_id = :customer_id"
            ),
            "ExpressionAttributeValues": {
                ":zero": number(0),
                ":one": number(1),
                ":entity": {"S": "customer_counter"},
                ":event_id": {"S": key.event_id},
                ":seat_class": {"S": key.seat_class},
                ":customer_id": {"S": customer_id},
            },
        }
        if limit is not None:
            update["ConditionExpression"] = "attribute_not_exists(seats) OR seats <= :room"
            update["ExpressionAttributeValues"][":room"] = number(limit - 1)
        return {"Update": update}

    def _limit_guard(self, held: HeldTicket, limit: int | None) -> dict[str, Any]:
        check: dict[str, Any] = {"TableName": self._table_name, "Key": self._limit_item_key(held)}
        if limit is None:
            check["ConditionExpression"] = "attribute_not_exists(max_per_customer)"
        else:
            check["ConditionExpression"] = "max_per_customer = :limit"
            check["ExpressionAttributeValues"] = {":limit": number(limit)}
        return {"ConditionCheck": check}

    def read_transfer(self, transfer_id: str) -> TransferRecord | None:
        item = call(
            self._client.get_item,
            TableName=self._table_name,
            Key=transfer_key(transfer_id),
            ConsistentRead=True,
        ).get("Item")
        return transfer_from_item(item) if item else None

    def read_event_tickets(self, event_id: str) -> list[HeldTicket]:
        """A consistent Scan for the event's numbered records that were cancelled or had a ticket
        transferred, expanded to their tickets (an operator's export, never the gate's path)."""
        request: dict[str, Any] = {
            "TableName": self._table_name,
            "ConsistentRead": True,
            "FilterExpression": "begins_with(pk, :reservation) AND event_id = :event"
            " AND attribute_exists(ticket_first)"
            " AND (#status = :cancelled OR attribute_exists(tickets_transferred))",
            "ExpressionAttributeNames": {"#status": "status"},
            "ExpressionAttributeValues": {
                ":reservation": {"S": RESERVATION_PREFIX},
                ":event": {"S": event_id},
                ":cancelled": {"S": Outcome.CANCELLED.value},
            },
        }
        tickets: list[HeldTicket] = []
        while True:
            page = call(self._client.scan, **request)
            for item in page.get("Items", []):
                record = record_from_item(item)
                for serial in record.ticket_numbers:
                    found = held_ticket(item, TicketRef(event_id, record.ticket_series or 0, serial))
                    if found is not None:
                        tickets.append(found)
            if "LastEvaluatedKey" not in page:
                return tickets
            request["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def _refusal(
    write: TransferWrite, reasons: Sequence[Mapping[str, Any]], giver: bool, receiver_at: int | None
) -> TransferRefused:
    """What refused a transfer, from its transaction's cancellation reasons (`commit_transfer`'s
    action order: the record, the transfer, the giver's counter, the receiver's, the limit)."""
    if failed_condition(reasons[1]) and "Item" in reasons[1]:
        return TransferRefused(existing=transfer_from_item(reasons[1]["Item"]))
    if giver and failed_condition(reasons[2]) and not failed_condition(reasons[0]):
        raise StoreInconsistency(
            f"{write.held.reservation_id}: ticket {write.held.ticket.serial} counts for"
            f" {write.before.customer_id}, whose counter is 0"
        )
    return TransferRefused(
        record_changed=failed_condition(reasons[0]),
        limit_reached=receiver_at is not None and failed_condition(reasons[receiver_at]),
        limit_changed=receiver_at is not None and failed_condition(reasons[receiver_at + 1]),
    )
