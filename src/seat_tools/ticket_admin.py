"""The operator's side of ticket numbers (`seats tickets configure|audit|list`): an event's
numbering written, and the reads the audit makes (counters, the ledger, the event's sales)."""

from __future__ import annotations

from typing import Any

from seat_inventory.dal.access import TableAccess
from seat_inventory.dal.errors import call
from seat_inventory.dal.items import (
    LEDGER_SK_PREFIX,
    RESERVATION_PREFIX,
    UNNUMBERED_PREFIX,
    ledger_pk,
    ledger_sk,
    number,
    record_from_item,
    ticket_counter_key,
    ticket_format_key,
)
from seat_inventory.dal.tickets import TicketQueries, batch_from_item
from seat_inventory.models import Outcome, ReservationRecord, TicketBatch, TicketFormat, TicketSeries


class TicketAdmin(TicketQueries, TableAccess):
    """Writing an event's ticket format, and reading what the audit checks."""

    def write_ticket_format(self, event_id: str, fmt: TicketFormat) -> bool:
        """Sets the event's numbering unless it numbered a ticket already with another series
        count (a sale's series must not change); returns False when refused. Prefix and width
        only change how numbers print, and may change at any time."""
        current = self.read_ticket_format(event_id)
        if fmt.series != current.series and self.read_ticket_counters(event_id, current.series):
            return False
        item: dict[str, Any] = {
            **ticket_format_key(event_id),
            "entity": {"S": "ticket_format"},
            "event_id": {"S": event_id},
            "series": number(fmt.series),
            "width": number(fmt.width),
        }
        if fmt.prefix:
            item["prefix"] = {"S": fmt.prefix}
        call(self._client.put_item, TableName=self._table_name, Item=item)
        return True

    def read_ticket_counters(self, event_id: str, series_count: int) -> dict[int, int]:
        """Series -> next serial, for the series that numbered anything (consistent BatchGetItem)."""
        items, _ = self._consistent_batch_get([ticket_counter_key(event_id, s) for s in range(series_count)])
        return {int(item["ticket_series"]["N"]): int(item["next_number"]["N"]) for item in items}

    def read_ledger(self, series: TicketSeries, *, from_serial: int = 1) -> list[TicketBatch]:
        """The series' batches from the one holding `from_serial` on, in order (strongly consistent)."""
        pk = {":pk": {"S": ledger_pk(series.event_id, series.series)}}
        start_sk: Any = {"S": LEDGER_SK_PREFIX}
        if from_serial > 1:
            # The batch holding `from_serial` starts at or before it: the last such.
            before = call(
                self._client.query,
                TableName=self._table_name,
                KeyConditionExpression="pk = :pk AND sk <= :sk",
                ExpressionAttributeValues={**pk, ":sk": {"S": ledger_sk(from_serial)}},
                ScanIndexForward=False,
                Limit=1,
                ConsistentRead=True,
            ).get("Items", [])
            start_sk = before[0]["sk"] if before else start_sk
        batches: list[TicketBatch] = []
        request: dict[str, Any] = {
            "TableName": self._table_name,
            "KeyConditionExpression": "pk = :pk AND sk >= :sk",
            "ExpressionAttributeValues": {**pk, ":sk": start_sk},
            "ConsistentRead": True,
        }
        while True:
            page = call(self._client.query, **request)
            batches.extend(batch_from_item(item) for item in page.get("Items", []))
            if "LastEvaluatedKey" not in page:
                return batches
            request["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def read_event_sales(self, event_id: str) -> list[ReservationRecord]:
        """Every record of the event that was sold, numbered or waits for numbers: a consistent
        Scan of the whole table (an operator's audit, never the service's path; it reads every
        item once, 0.5 read units per 4 KB)."""
        request: dict[str, Any] = {
            "TableName": self._table_name,
            "ConsistentRead": True,
            "FilterExpression": "begins_with(pk, :reservation) AND event_id = :event AND ("
            "attribute_exists(ticket_first) OR begins_with(gsi2pk, :unnumbered)"
            " OR #status = :confirmed OR (#status = :cancelled AND outcome = :confirmed))",
            "ExpressionAttributeNames": {"#status": "status"},
            "ExpressionAttributeValues": {
                ":reservation": {"S": RESERVATION_PREFIX},
                ":event": {"S": event_id},
                ":unnumbered": {"S": UNNUMBERED_PREFIX},
                ":confirmed": {"S": Outcome.CONFIRMED.value},
                ":cancelled": {"S": Outcome.CANCELLED.value},
            },
        }
        records: list[ReservationRecord] = []
        while True:
            page = call(self._client.scan, **request)
            records.extend(record_from_item(item) for item in page.get("Items", []))
            if "LastEvaluatedKey" not in page:
                return records
            request["ExclusiveStartKey"] = page["LastEvaluatedKey"]
