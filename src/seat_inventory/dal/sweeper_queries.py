"""The hold sweeper's queries on the `HoldsByExpiry` index: expired holds and the expiry outbox."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from botocore.exceptions import ClientError

from seat_inventory.dal.access import TableAccess
from seat_inventory.dal.errors import CONDITION_FAILED, call, call_expecting
from seat_inventory.dal.items import (
    HOLD_SHARDS,
    HOLDS_INDEX,
    HOLDS_PREFIX,
    OUTBOX_PREFIX,
    hold_shard,
    number,
    record_from_item,
    reservation_key,
)
from seat_inventory.models import Outcome, ReservationRecord, TransactionConflict


class SweeperQueries(TableAccess):
    """What `HoldStore` adds to the inventory store: `find_expired_holds`, the outbox."""

    def _query_index(
        self, partition: str, limit: int, now: int | None
    ) -> tuple[list[ReservationRecord], bool]:
        """Up to `limit` records of one index partition (due by `now` when given); and whether more remain."""
        request: dict[str, Any] = {
            "TableName": self._table_name,
            "IndexName": HOLDS_INDEX,
            "KeyConditionExpression": "gsi1pk = :pk" + (" AND gsi1sk <= :now" if now is not None else ""),
            "ExpressionAttributeValues": {":pk": {"S": partition}},
        }
        if now is not None:
            request["ExpressionAttributeValues"][":now"] = number(now)
        records: list[ReservationRecord] = []
        while len(records) < limit:
            request["Limit"] = limit - len(records)
            page = call(self._client.query, **request)
            records.extend(record_from_item(item) for item in page.get("Items", []))
            if "LastEvaluatedKey" not in page:
                return records, False
            request["ExclusiveStartKey"] = page["LastEvaluatedKey"]
        return records, True

    def _query_shards(self, prefix: str, limit: int, now: int | None) -> list[ReservationRecord]:
        """Every shard gets an equal share of `limit` first, then shards with more get what is left."""
        found: list[ReservationRecord] = []
        more: list[int] = []
        share = max(1, -(-limit // HOLD_SHARDS))
        for shard in range(HOLD_SHARDS):
            records, has_more = self._query_index(f"{prefix}{shard}", min(share, limit - len(found)), now)
            found.extend(records)
            if has_more:
                more.append(shard)
            if len(found) >= limit:
                return found
        seen = {r.reservation_id for r in found}
        for shard in more:
            records, _ = self._query_index(f"{prefix}{shard}", limit - len(found) + share, now)
            found.extend(r for r in records if r.reservation_id not in seen)
            seen.update(r.reservation_id for r in records)
            if len(found) >= limit:
                return found[:limit]
        return found

    def find_expired_holds(self, now: int, limit: int) -> list[ReservationRecord]:
        """Query of each `HOLDS#<shard>` for `gsi1sk <= now`: holds that ran out (eventually consistent)."""
        return [r for r in self._query_shards(HOLDS_PREFIX, limit, now) if r.status is Outcome.HELD]

    def find_unpublished_expiries(self, limit: int) -> list[ReservationRecord]:
        """Query of each `EXPIRED#<shard>`: released holds whose EXPIRED outcome awaits publication."""
        return [r for r in self._query_shards(OUTBOX_PREFIX, limit, None) if r.status is Outcome.EXPIRED]

    def mark_expiries_published(self, records: Sequence[ReservationRecord], *, expires_at: int) -> int:
        """`REMOVE gsi1pk, gsi1sk SET expires_at` per record, conditional on it still being in the outbox.

        A record another sweeper took out first is skipped, and so is one that a transaction is
        writing right now (TransactionConflictException, e.g. a confirm or cancel of the expired
        hold): it stays in the outbox and the next run announces it again (expiries are announced
        at least once). The TTL starts only now, so an expiry is never deleted before it was
        announced.
        """
        cleared = 0
        for record in records:
            try:
                taken_out_first = self._take_out_of_outbox(record, expires_at)
            except TransactionConflict:
                continue
            if not isinstance(taken_out_first, ClientError):
                cleared += 1
        return cleared

    def _take_out_of_outbox(self, record: ReservationRecord, expires_at: int) -> Any:
        return call_expecting(
            CONDITION_FAILED,
            self._client.update_item,
            TableName=self._table_name,
            Key=reservation_key(record.reservation_id),
            UpdateExpression="SET expires_at = :expires_at REMOVE gsi1pk, gsi1sk",
            ConditionExpression="gsi1pk = :outbox",
            ExpressionAttributeValues={
                ":outbox": {"S": f"{OUTBOX_PREFIX}{hold_shard(record.reservation_id)}"},
                ":expires_at": number(expires_at),
            },
        )
