"""Ticket numbers (docs/guides/tickets.md): the issuer's index, the series' counters, the numbering
transaction, the ledger and its publication outbox."""

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
    TICKETS_INDEX,
    UNNUMBERED_PREFIX,
    lane_buckets,
    ledger_pk,
    ledger_series,
    ledger_sk,
    number,
    reservation_key,
    ticket_counter_key,
    ticket_format_key,
)
from seat_inventory.models import (
    WHOLE_INDEX,
    IssuerLane,
    NumbersRefused,
    StoreInconsistency,
    TicketAssignment,
    TicketBatch,
    TicketFormat,
    TicketSeries,
    TransactionConflict,
    UnnumberedSale,
)

# Concurrent index queries of one `find_unnumbered` (of up to 512 partition keys).
MAX_CONCURRENT_QUERIES = 16
# A transaction holds at most 100 actions: the counter, the ledger entry and 98 reservations.
MAX_RESERVATIONS_PER_BATCH = 98
# An outbox update that meets another issuer's transaction on the same ledger entry (it raced for
# the same serial and is being cancelled) is tried again this many times, after 10, 20, 40 ms.
CLEAR_ATTEMPTS = 4
CLEAR_BACKOFF_SECONDS = 0.01


def batch_from_item(item: dict[str, Any]) -> TicketBatch:
    event_id = item["event_id"]["S"]
    series = TicketSeries(event_id, int(item["ticket_series"]["N"]))
    assignments = tuple(
        TicketAssignment(rid, first, qty) for rid, first, qty in json.loads(item["assignments"]["S"])
    )
    return TicketBatch(series, int(item["ticket_first"]["N"]), assignments)


class TicketQueries(TableAccess):
    """`TicketStore` on the table."""

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

    def find_unnumbered(self, limit: int, lane: IssuerLane = WHOLE_INDEX) -> list[UnnumberedSale]:
        """A Query of each of the lane's `UNNUMBERED#<bucket>` (oldest sale first), an equal share
        of `limit` each, 16 at a time (eventually consistent: a sale numbered a moment ago may show)."""
        partitions = [f"{UNNUMBERED_PREFIX}{b}" for b in lane_buckets(lane)]
        share = max(1, -(-limit // len(partitions)))
        if self._query_pool is None:
            self._query_pool = ThreadPoolExecutor(MAX_CONCURRENT_QUERIES, thread_name_prefix="tickets")
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
        actions = [
            {"Update": self._counter_action(batch)},
            {"Put": self._ledger_action(batch)},
            *({"Update": self._numbers_action(batch.series.series, a)} for a in batch.assignments),
        ]
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

    def _counter_action(self, batch: TicketBatch) -> dict[str, Any]:
        """The series' counter moves from `first` (no counter yet when it is 1) past the batch."""
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
        return counter

    def _ledger_action(self, batch: TicketBatch) -> dict[str, Any]:
        """The batch kept in the series' ledger, in its publication outbox until announced."""
        event_id, series = batch.series.event_id, batch.series.series
        pk = ledger_pk(event_id, series)
        return {
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

    def _numbers_action(self, series: int, assignment: TicketAssignment) -> dict[str, Any]:
        """A reservation's numbers, only while it waits for them; out of the issuer's index."""
        return {
            "TableName": self._table_name,
            "Key": reservation_key(assignment.reservation_id),
            "UpdateExpression": "SET ticket_series = :series, ticket_first = :first REMOVE gsi2pk, gsi2sk",
            "ConditionExpression": "attribute_exists(gsi2pk) AND attribute_not_exists(ticket_first)",
            "ExpressionAttributeValues": {":series": number(series), ":first": number(assignment.first)},
        }

    def find_unpublished_batches(self, limit: int, lane: IssuerLane = WHOLE_INDEX) -> list[TicketBatch]:
        """A Query of each `TICKETED#<bucket>`, then the lane's batches themselves (consistent
        BatchGetItem; a ledger key ends in its series)."""
        keys: list[dict[str, Any]] = []
        for bucket in range(LEDGER_OUTBOX_BUCKETS):
            if len(keys) >= limit:
                break
            items = self._query_partition(f"{LEDGER_OUTBOX_PREFIX}{bucket}", limit - len(keys))
            keys.extend(
                {"pk": item["pk"], "sk": item["sk"]}
                for item in items
                if lane.takes_series(ledger_series(item["pk"]["S"]))
            )
        items, _ = self._consistent_batch_get(keys)  # what stays unprocessed waits for the next run
        return [batch_from_item(item) for item in items if "gsi2pk" in item]

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
