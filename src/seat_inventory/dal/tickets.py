"""Ticket numbers (docs/guides/tickets.md): the issuer's index, the series' counters, the numbering
transaction, the ledger and its publication outbox; and the reads the audit makes."""

from __future__ import annotations

import json
import time
import zlib
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
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
from seat_inventory.dal.items import (
    LEDGER_OUTBOX_BUCKETS,
    LEDGER_OUTBOX_PREFIX,
    LEDGER_SK_PREFIX,
    RESERVATION_PREFIX,
    TICKETS_INDEX,
    UNNUMBERED_BUCKETS,
    UNNUMBERED_PREFIX,
    ledger_pk,
    ledger_sk,
    number,
    record_from_item,
    reservation_key,
    ticket_counter_key,
    ticket_format_key,
)
from seat_inventory.models import (
    NumbersRefused,
    Outcome,
    ReservationRecord,
    StoreInconsistency,
    TicketAssignment,
    TicketBatch,
    TicketFormat,
    TicketSeries,
    TransactionConflict,
    UnnumberedSale,
)

# Concurrent index queries of one `find_unnumbered` (128 partitions).
MAX_CONCURRENT_QUERIES = 16
# A transaction holds at most 100 actions: the counter, the ledger entry and 98 reservations.
MAX_RESERVATIONS_PER_BATCH = 98
# An outbox update that meets another issuer's transaction on the same ledger entry (it raced for
# the same serial and is being cancelled) is tried again this many times, after 10, 20, 40 ms.
CLEAR_ATTEMPTS = 4
CLEAR_BACKOFF_SECONDS = 0.01


def _batch_from_item(item: dict[str, Any]) -> TicketBatch:
    event_id = item["event_id"]["S"]
    series = TicketSeries(event_id, int(item["ticket_series"]["N"]))
    assignments = tuple(
        TicketAssignment(rid, first, qty) for rid, first, qty in json.loads(item["assignments"]["S"])
    )
    return TicketBatch(series, int(item["ticket_first"]["N"]), assignments)


class TicketQueries(TableAccess):
    """`TicketStore` on the table, and the reads of `seats tickets audit|list`."""

    _query_pool: ThreadPoolExecutor | None = None

    # ------------------------------------------------------------------ the issuer

    def _query_partition(self, partition: str, limit: int) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        request: dict[str, Any] = {
            "TableName": self._table_name,
            "IndexName": TICKETS_INDEX,
            "KeyConditionExpression": "gsi2pk = :pk",
            "ExpressionAttributeValues": {":pk": {"S": partition}},
        }
        while len(items) < limit:
            request["Limit"] = limit - len(items)
            page = call(self._client.query, **request)
            items.extend(page.get("Items", []))
            if "LastEvaluatedKey" not in page:
                break
            request["ExclusiveStartKey"] = page["LastEvaluatedKey"]
        return items

    def find_unnumbered(self, limit: int) -> list[UnnumberedSale]:
        """A Query of each `UNNUMBERED#<bucket>` (oldest sale first), an equal share of `limit`
        each, 16 at a time (eventually consistent: a sale numbered a moment ago may show)."""
        share = max(1, -(-limit // UNNUMBERED_BUCKETS))
        if self._query_pool is None:
            self._query_pool = ThreadPoolExecutor(MAX_CONCURRENT_QUERIES, thread_name_prefix="tickets")
        partitions = [f"{UNNUMBERED_PREFIX}{b}" for b in range(UNNUMBERED_BUCKETS)]
        sales: list[UnnumberedSale] = []
        for items in self._query_pool.map(lambda p: self._query_partition(p, share), partitions):
            sales.extend(
                UnnumberedSale(
                    reservation_id=item["reservation_id"]["S"],
                    event_id=item["event_id"]["S"],
                    quantity=int(item["quantity"]["N"]),
                    sold_at_ms=int(item["gsi2sk"]["N"]),
                )
                for item in items
            )
        return sorted(sales, key=lambda s: (s.sold_at_ms, s.reservation_id))[:limit]

    def read_ticket_format(self, event_id: str) -> TicketFormat:
        """GetItem of the event's numbering (strongly consistent); the default when there is none."""
        item = call(
            self._client.get_item,
            TableName=self._table_name,
            Key=ticket_format_key(event_id),
            ConsistentRead=True,
        ).get("Item")
        if not item:
            return TicketFormat()
        return TicketFormat(
            series=int(item["series"]["N"]),
            prefix=item.get("prefix", {}).get("S", ""),
            width=int(item["width"]["N"]),
        )

    def read_next_number(self, series: TicketSeries) -> int:
        item = call(
            self._client.get_item,
            TableName=self._table_name,
            Key=ticket_counter_key(series.event_id, series.series),
            ConsistentRead=True,
        ).get("Item")
        return int(item["next_number"]["N"]) if item else 1

    def commit_numbers(self, batch: TicketBatch) -> NumbersRefused | None:
        """One `TransactWriteItems`: the counter's guarded move (`next_number = :first`, or no
        counter yet when `first` is 1), the ledger entry (`attribute_not_exists`), and one update
        per reservation guarded by `attribute_exists(gsi2pk) AND attribute_not_exists(ticket_first)`
        that gives it its numbers and takes it out of the index."""
        if not batch.assignments:
            return None
        if len(batch.assignments) > MAX_RESERVATIONS_PER_BATCH:
            raise ValueError(f"{len(batch.assignments)} reservations do not fit one transaction")
        event_id, series = batch.series.event_id, batch.series.series
        counter: dict[str, Any] = {
            "TableName": self._table_name,
            "Key": ticket_counter_key(event_id, series),
            "UpdateExpression": "SET next_number = :next, event_id = :event, ticket_series = :series",
            "ExpressionAttributeValues": {
                ":next": number(batch.next_after),
                ":event": {"S": event_id},
                ":series": number(series),
            },
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }
        if batch.first == 1:
            counter["ConditionExpression"] = "attribute_not_exists(next_number)"
        else:
            counter["ConditionExpression"] = "next_number = :first"
            counter["ExpressionAttributeValues"][":first"] = number(batch.first)
        pk = ledger_pk(event_id, series)
        ledger = {
            "TableName": self._table_name,
            "Item": {
                "pk": {"S": pk},
                "sk": {"S": ledger_sk(batch.first)},
                "entity": {"S": "ticket_batch"},
                "event_id": {"S": event_id},
                "ticket_series": number(series),
                "ticket_first": number(batch.first),
                "next_number": number(batch.next_after),
                "assignments": {
                    "S": json.dumps([[a.reservation_id, a.first, a.quantity] for a in batch.assignments])
                },
                "gsi2pk": {"S": f"{LEDGER_OUTBOX_PREFIX}{zlib.crc32(pk.encode()) % LEDGER_OUTBOX_BUCKETS}"},
                "gsi2sk": number(int(time.time() * 1000)),
            },
            "ConditionExpression": "attribute_not_exists(pk)",
        }
        records = [
            {
                "Update": {
                    "TableName": self._table_name,
                    "Key": reservation_key(a.reservation_id),
                    "UpdateExpression": (
                        "SET ticket_series = :series, ticket_first = :first REMOVE gsi2pk, gsi2sk"
                    ),
                    "ConditionExpression": "attribute_exists(gsi2pk) AND attribute_not_exists(ticket_first)",
                    "ExpressionAttributeValues": {":series": number(series), ":first": number(a.first)},
                }
            }
            for a in batch.assignments
        ]
        actions = [{"Update": counter}, {"Put": ledger}, *records]
        cancelled = call_expecting(
            TRANSACTION_CANCELED, self._client.transact_write_items, TransactItems=actions
        )
        if not isinstance(cancelled, ClientError):
            return None
        reasons = cancellation_reasons(cancelled, len(actions))
        counter_next: int | None = None
        if failed_condition(reasons[0]):
            old = reasons[0].get("Item") or {}
            counter_next = int(old["next_number"]["N"]) if "next_number" in old else 1
        not_waiting = frozenset(
            a.reservation_id
            for a, r in zip(batch.assignments, reasons[2:], strict=True)
            if failed_condition(r)
        )
        if failed_condition(reasons[1]) and counter_next is None:
            raise StoreInconsistency(
                f"the ledger of {batch.series} has a batch at {batch.first} its counter passed"
            )
        return NumbersRefused(counter_next=counter_next, not_waiting=not_waiting)

    def find_unpublished_batches(self, limit: int) -> list[TicketBatch]:
        """A Query of each `TICKETED#<bucket>`, then the batches themselves (consistent BatchGetItem)."""
        keys: list[dict[str, Any]] = []
        for bucket in range(LEDGER_OUTBOX_BUCKETS):
            if len(keys) >= limit:
                break
            items = self._query_partition(f"{LEDGER_OUTBOX_PREFIX}{bucket}", limit - len(keys))
            keys.extend({"pk": item["pk"], "sk": item["sk"]} for item in items)
        items, _ = self._consistent_batch_get(keys)  # what stays unprocessed waits for the next run
        return [_batch_from_item(item) for item in items if "gsi2pk" in item]

    def mark_batches_published(self, batches: Sequence[TicketBatch]) -> int:
        """`REMOVE gsi2pk, gsi2sk` per batch, conditional on it still being in the outbox; 16 at a
        time (one by one, a round of 20,000 sales spent about 1.5 s here: `seats simulate`).

        A `TransactionConflict` (a second issuer's transaction, racing for the same serial, holds
        the entry for a moment) is tried again `CLEAR_ATTEMPTS` times; other faults, and a
        conflict that lasts, raise (the batch stays in the outbox: published again later)."""

        def clear(batch: TicketBatch) -> bool:
            for attempt in range(CLEAR_ATTEMPTS):
                try:
                    answer = call_expecting(
                        CONDITION_FAILED,
                        self._client.update_item,
                        TableName=self._table_name,
                        Key={
                            "pk": {"S": ledger_pk(batch.series.event_id, batch.series.series)},
                            "sk": {"S": ledger_sk(batch.first)},
                        },
                        UpdateExpression="REMOVE gsi2pk, gsi2sk",
                        ConditionExpression="attribute_exists(gsi2pk)",
                    )
                except TransactionConflict:
                    if attempt + 1 >= CLEAR_ATTEMPTS:
                        raise
                    self._sleep(CLEAR_BACKOFF_SECONDS * 2**attempt)
                    continue
                return not isinstance(answer, ClientError)
            return False  # not reached: the last attempt returns or raises

        if len(batches) <= 1:
            return sum(clear(b) for b in batches)
        if self._query_pool is None:
            self._query_pool = ThreadPoolExecutor(MAX_CONCURRENT_QUERIES, thread_name_prefix="tickets")
        return sum(self._query_pool.map(clear, batches))

    # ------------------------------------------------------------------ numbering and audit reads

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
            batches.extend(_batch_from_item(item) for item in page.get("Items", []))
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
