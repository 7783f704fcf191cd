"""Check-in at the gate (docs/guides/checkin.md): where a ticket's serial was given (the series' ledger),
the ticket as its record says, check-in lists, and each ticket's check-in item on a list.

Every scan writes the scanned ticket's own item (`CHECKIN#<event>#<series>#<serial>`, `LIST#<list>`)
and checks its own reservation record: no item is written or checked by every scan.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from typing import Any

from botocore.exceptions import ClientError

from seat_inventory.dal.access import TableAccess
from seat_inventory.dal.errors import (
    CONDITION_FAILED,
    TRANSACTION_CANCELED,
    call,
    call_expecting,
    cancellation_reasons,
    failed_condition,
)
from seat_inventory.dal.gate_items import (
    HOLDER_PREFIX,
    checkin_event_prefix,
    checkin_from_item,
    checkin_key,
    checkin_list_key,
    conflict_value,
    holder_attribute,
    holder_from_item,
    scan_attribute,
    scan_record_from_value,
    scan_record_value,
    scan_value,
    ticket_of_checkin,
)
from seat_inventory.dal.items import ledger_pk, ledger_sk, number, record_from_item, reservation_key
from seat_inventory.gate_models import (
    CheckinList,
    CheckinState,
    Conflict,
    HeldTicket,
    ScanRecord,
    TicketRef,
    ticket_seat,
)
from seat_inventory.logic.gate_ports import AdmitRefused, TicketPlace
from seat_inventory.models import Outcome

# Tickets whose reservation a container keeps (from the ledger, which never changes once written):
# an arena's 60,000 with room to spare, some MB.
PLACES_CACHED = 100_000


def held_ticket(item: dict[str, Any], ticket: TicketRef) -> HeldTicket | None:
    """Ticket `ticket` of the reservation record `item`, or None if the record does not hold it."""
    record = record_from_item(item)
    if record.ticket_first is None or (record.ticket_series or 0) != ticket.series:
        return None
    if record.answer.event_id != ticket.event_id or ticket.serial not in record.ticket_numbers:
        return None
    seat = ticket_seat(record, ticket.serial - record.ticket_first)
    holder = holder_from_item(
        item, ticket.serial, buyer=record.answer.customer_id, buyer_counted=seat.buyer_counted
    )
    return HeldTicket(ticket, record, seat, holder)


class Checkins(TableAccess):
    """The check-in half of `GateStore`."""

    _places: OrderedDict[tuple[str, int, int], TicketPlace] | None = None
    _places_lock = threading.Lock()

    # ------------------------------------------------------------------ tickets

    def locate_ticket(self, ticket: TicketRef) -> TicketPlace | None:
        """The series' ledger batch holding the serial (the last batch starting at or before it:
        one Query), and its reservation; every serial of the batch is cached (a batch never
        changes once written)."""
        key = (ticket.event_id, ticket.series, ticket.serial)
        with self._places_lock:
            if self._places is None:
                self._places = OrderedDict()
            if key in self._places:
                return self._places[key]
        found = call(
            self._client.query,
            TableName=self._table_name,
            KeyConditionExpression="pk = :pk AND sk <= :sk",
            ExpressionAttributeValues={
                ":pk": {"S": ledger_pk(ticket.event_id, ticket.series)},
                ":sk": {"S": ledger_sk(ticket.serial)},
            },
            ScanIndexForward=False,
            Limit=1,
            ConsistentRead=True,
        ).get("Items", [])
        if not found or ticket.serial >= int(found[0]["next_number"]["N"]):
            return None
        places: dict[tuple[str, int, int], TicketPlace] = {}
        for rid, first, quantity in json.loads(found[0]["assignments"]["S"]):
            for serial in range(first, first + quantity):
                places[(ticket.event_id, ticket.series, serial)] = TicketPlace(rid, first)
        with self._places_lock:
            assert self._places is not None
            self._places.update(places)
            while len(self._places) > PLACES_CACHED:
                self._places.popitem(last=False)
        return places[key]

    def read_ticket(self, ticket: TicketRef, place: TicketPlace) -> HeldTicket | None:
        item = call(
            self._client.get_item,
            TableName=self._table_name,
            Key=reservation_key(place.reservation_id),
            ConsistentRead=True,
        ).get("Item")
        return held_ticket(item, ticket) if item else None

    def read_reservation_tickets(self, reservation_id: str) -> list[HeldTicket] | None:
        """Every ticket of a reservation (empty while not numbered), None when none is recorded."""
        item = call(
            self._client.get_item,
            TableName=self._table_name,
            Key=reservation_key(reservation_id),
            ConsistentRead=True,
        ).get("Item")
        if not item:
            return None
        record = record_from_item(item)
        if record.ticket_first is None or record.answer.event_id is None:
            return []
        tickets = [
            TicketRef(record.answer.event_id, record.ticket_series or 0, n) for n in record.ticket_numbers
        ]
        return [t for t in (held_ticket(item, ticket) for ticket in tickets) if t is not None]

    # ------------------------------------------------------------------ lists

    def read_checkin_list(self, event_id: str, name: str) -> CheckinList | None:
        item = call(
            self._client.get_item,
            TableName=self._table_name,
            Key=checkin_list_key(event_id, name),
            ConsistentRead=True,
        ).get("Item")
        if not item:
            return None
        return CheckinList(event_id, name, bool(item.get("allow_reentry", {}).get("BOOL", False)))

    def write_checkin_list(self, checkin_list: CheckinList) -> None:
        """Creates or changes a list (an operator's write: `seats checkin list`)."""
        call(
            self._client.put_item,
            TableName=self._table_name,
            Item={
                **checkin_list_key(checkin_list.event_id, checkin_list.name),
                "entity": {"S": "checkin_list"},
                "event_id": {"S": checkin_list.event_id},
                "checkin_list": {"S": checkin_list.name},
                "allow_reentry": {"BOOL": checkin_list.allow_reentry},
            },
        )

    def read_checkin_lists(self, event_id: str) -> list[CheckinList]:
        items = call(
            self._client.query,
            TableName=self._table_name,
            KeyConditionExpression="pk = :pk",
            ExpressionAttributeValues={":pk": checkin_list_key(event_id, "")["pk"]},
            ConsistentRead=True,
        ).get("Items", [])
        return [
            CheckinList(
                event_id, item["checkin_list"]["S"], bool(item.get("allow_reentry", {}).get("BOOL", False))
            )
            for item in items
        ]

    # ------------------------------------------------------------------ scans

    def admit(
        self, ticket: TicketRef, place: TicketPlace, checkin_list: CheckinList, record: ScanRecord
    ) -> AdmitRefused | None:
        """An entry: one `TransactWriteItems` of the check-in item's update (nonce new, the list's
        rule) and a `ConditionCheck` of the reservation record (CONFIRMED, this serial's
        reservation, the holder generation the secret was issued for)."""
        return self._scan(ticket, place, checkin_list, record, entry=True)

    def leave(
        self, ticket: TicketRef, place: TicketPlace, checkin_list: CheckinList, record: ScanRecord
    ) -> AdmitRefused | None:
        """An exit: the same transaction, the item's condition being that the ticket is inside."""
        return self._scan(ticket, place, checkin_list, record, entry=False)

    def _scan(
        self,
        ticket: TicketRef,
        place: TicketPlace,
        checkin_list: CheckinList,
        record: ScanRecord,
        *,
        entry: bool,
    ) -> AdmitRefused | None:
        names = {"#status": "status", "#holder": holder_attribute(ticket.serial)}
        values: dict[str, Any] = {
            ":confirmed": {"S": Outcome.CONFIRMED.value},
            ":series": number(ticket.series),
            ":first": number(place.ticket_first),
        }
        condition = "#status = :confirmed AND ticket_series = :series AND ticket_first = :first AND "
        if record.generation == 0:
            condition += "attribute_not_exists(#holder)"
        else:
            condition += "#holder.g = :generation"
            values[":generation"] = number(record.generation)
        check = {
            "TableName": self._table_name,
            "Key": reservation_key(place.reservation_id),
            "ConditionExpression": condition,
            "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": values,
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }
        actions = [
            {"Update": checkin_update(self._table_name, ticket, checkin_list, record, entry=entry)},
            {"ConditionCheck": check},
        ]
        cancelled = call_expecting(
            TRANSACTION_CANCELED, self._client.transact_write_items, TransactItems=actions
        )
        if not isinstance(cancelled, ClientError):
            return None
        checkin_reason, record_reason = cancellation_reasons(cancelled, len(actions))
        refused_ticket: HeldTicket | None = None
        if failed_condition(record_reason):
            old = record_reason.get("Item")
            refused_ticket = held_ticket(old, ticket) if old else None
        if failed_condition(checkin_reason) and "Item" in checkin_reason:
            state = checkin_from_item(checkin_reason["Item"])
        else:
            # Its condition held, or DynamoDB did not say: read it (a replayed nonce is on it).
            state = self.read_checkin(ticket, checkin_list.name)
        return AdmitRefused(state, refused_ticket, ticket_refused=failed_condition(record_reason))

    def remember_answer(self, ticket: TicketRef, list_name: str, record: ScanRecord) -> ScanRecord | None:
        name = scan_attribute(record.scan.nonce)
        refused = call_expecting(
            CONDITION_FAILED,
            self._client.update_item,
            TableName=self._table_name,
            Key=checkin_key(ticket, list_name),
            UpdateExpression="SET #scan = :answer",
            ConditionExpression="attribute_not_exists(#scan)",
            ExpressionAttributeNames={"#scan": name},
            ExpressionAttributeValues={":answer": scan_record_value(record)},
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
        )
        if not isinstance(refused, ClientError):
            return None
        old: dict[str, Any] = refused.response.get("Item") or {}  # type: ignore[assignment]
        return scan_record_from_value(old[name]) if name in old else None

    def read_checkin(self, ticket: TicketRef, list_name: str) -> CheckinState:
        item = call(
            self._client.get_item,
            TableName=self._table_name,
            Key=checkin_key(ticket, list_name),
            ConsistentRead=True,
        ).get("Item")
        return checkin_from_item(item)

    def write_checkin(
        self, ticket: TicketRef, list_name: str, state: CheckinState, record: ScanRecord, *, version: int
    ) -> bool:
        """An uploaded scan: the item's summary replaced and the scan added, guarded by the
        version it was read at (`attribute_not_exists(version)` for no item) and the nonce."""
        names = {"#scan": scan_attribute(record.scan.nonce)}
        values: dict[str, Any] = {
            ":answer": scan_record_value(record),
            ":inside": {"BOOL": state.inside},
            ":version": number(state.version),
            ":conflicts": {"L": [conflict_value(c) for c in state.conflicts]},
            ":event": {"S": ticket.event_id},
            ":list": {"S": list_name},
            ":entity": {"S": "checkin"},
        }
        sets = [
            "#scan = :answer",
            "inside = :inside",
            "version = :version",
            "conflicts = :conflicts",
            "event_id = :event",
            "checkin_list = :list",
            "entity = :entity",
        ]
        removes = []
        for name, scan in (("entered", state.entered), ("last_in", state.last_in)):
            if scan is None:
                removes.append(name)
            else:
                sets.append(f"{name} = :{name}")
                values[f":{name}"] = scan_value(scan)
        if version == 0:
            condition = "attribute_not_exists(version) AND attribute_not_exists(#scan)"
        else:
            condition = "version = :read AND attribute_not_exists(#scan)"
            values[":read"] = number(version)
        refused = call_expecting(
            CONDITION_FAILED,
            self._client.update_item,
            TableName=self._table_name,
            Key=checkin_key(ticket, list_name),
            UpdateExpression="SET " + ", ".join(sets) + (" REMOVE " + ", ".join(removes) if removes else ""),
            ConditionExpression=condition,
            ExpressionAttributeNames=names,
            ExpressionAttributeValues=values,
        )
        return not isinstance(refused, ClientError)

    def read_conflicts(self, event_id: str, list_name: str | None = None) -> list[Conflict]:
        """A consistent Scan of the event's check-in items that hold a conflict (an operator's
        report, never the gate's path)."""
        request: dict[str, Any] = {
            "TableName": self._table_name,
            "ConsistentRead": True,
            "FilterExpression": "begins_with(pk, :prefix) AND size(conflicts) > :zero",
            "ExpressionAttributeValues": {
                ":prefix": {"S": checkin_event_prefix(event_id)},
                ":zero": number(0),
            },
        }
        found: list[Conflict] = []
        while True:
            page = call(self._client.scan, **request)
            for item in page.get("Items", []):
                _, name = ticket_of_checkin(item)
                if list_name is None or name == list_name:
                    found.extend(checkin_from_item(item).conflicts)
            if "LastEvaluatedKey" not in page:
                return sorted(
                    found, key=lambda c: (c.list_name, c.ticket.series, c.ticket.serial, c.first.at_ms)
                )
            request["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def checkin_update(
    table_name: str, ticket: TicketRef, checkin_list: CheckinList, record: ScanRecord, *, entry: bool
) -> dict[str, Any]:
    """The check-in item's update for an online scan in (`entry`) or out, guarded by the list's rule."""
    names = {"#scan": scan_attribute(record.scan.nonce)}
    values: dict[str, Any] = {
        ":answer": scan_record_value(record),
        ":scan": scan_value(record.scan),
        ":zero": number(0),
        ":one": number(1),
        ":event": {"S": ticket.event_id},
        ":list": {"S": checkin_list.name},
    }
    sets = [
        "#scan = :answer",
        "version = if_not_exists(version, :zero) + :one",
        "entity = if_not_exists(entity, :entity)",
        "event_id = :event",
        "checkin_list = :list",
    ]
    values[":entity"] = {"S": "checkin"}
    if entry:
        values[":true"] = {"BOOL": True}
        sets += ["inside = :true", "last_in = :scan", "entered = if_not_exists(entered, :scan)"]
        if checkin_list.allow_reentry:
            rule = "(attribute_not_exists(inside) OR inside = :false)"
            values[":false"] = {"BOOL": False}
        else:
            rule = "attribute_not_exists(entered)"
    else:
        values[":false"] = {"BOOL": False}
        values[":true"] = {"BOOL": True}
        sets += ["inside = :false", "last_out = :scan"]
        rule = "inside = :true"
    return {
        "TableName": table_name,
        "Key": checkin_key(ticket, checkin_list.name),
        "UpdateExpression": "SET " + ", ".join(sets),
        "ConditionExpression": f"attribute_not_exists(#scan) AND {rule}",
        "ExpressionAttributeNames": names,
        "ExpressionAttributeValues": values,
        "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
    }


__all__ = ["HOLDER_PREFIX", "Checkins", "held_ticket"]
