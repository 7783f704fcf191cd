"""The waiting lists (docs/guides/waiting-list.md): reads of a class's list, its lanes and places;
the transactions of `seat_inventory.transaction` that join, leave, offer, move and return its
seats; the sweeper's open lists (in `HoldsByExpiry` under `WAITLISTS#<0-7>`) and the offers'
outbox (in `TicketsToIssue` under `OFFERED#<0-7>`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from botocore.exceptions import ClientError

from seat_inventory.dal.errors import CONDITION_FAILED, call, call_expecting
from seat_inventory.dal.items import (
    HOLDS_INDEX,
    LIST_BUCKETS,
    LISTS_PREFIX,
    OFFER_BUCKETS,
    OFFERS_PREFIX,
    TICKETS_INDEX,
    lane_key,
    lane_pk,
    list_key,
    offer_bucket,
    place_from_item,
    reservation_key,
    waiting_list,
)
from seat_inventory.dal.writes import Writes
from seat_inventory.models import (
    PLACE_PREFIX,
    WAITLIST_LANES,
    Join,
    LaneWrite,
    ListedReturn,
    ListRefused,
    Place,
    Rebalance,
    ReservationRecord,
    RetryableError,
    SeatKey,
    TransactionConflict,
    WaitingList,
)
from seat_inventory.transaction import (
    join_actions,
    lane_actions,
    list_refusal,
    rebalance_actions,
    return_actions,
)


class WaitlistQueries(Writes):
    """The `WaitlistStore` and the sweeper's part of `ListStore` on the table."""

    def read_waitlist(self, key: SeatKey) -> WaitingList | None:
        """The list item and its lanes in consistent `BatchGetItem`s."""
        keys = [list_key(key), *(lane_key(key, lane) for lane in range(WAITLIST_LANES))]
        items, complete = self._consistent_batch_get(keys)
        if not complete:
            raise RetryableError("BatchGetItem left keys of a waiting list unprocessed")
        return waiting_list(key, items)

    def read_places(self, key: SeatKey, lane: int, *, after: str, before: str, limit: int) -> list[Place]:
        """A consistent Query of the lane's partition between `after` and `before` (exclusive)."""
        request: dict[str, Any] = {
            "TableName": self._table_name,
            "KeyConditionExpression": "pk = :pk AND sk BETWEEN :low AND :high",
            "ExpressionAttributeValues": {
                ":pk": {"S": lane_pk(key, lane)},
                ":low": {"S": after or PLACE_PREFIX},
                ":high": {"S": before},
            },
            "ConsistentRead": True,
        }
        places: list[Place] = []
        while len(places) < limit:
            request["Limit"] = limit - len(places) + 2  # the bounds themselves may come back
            page = call(self._client.query, **request)
            found = [place_from_item(i) for i in page.get("Items", []) if i["sk"]["S"] not in (after, before)]
            places.extend(found)
            if "LastEvaluatedKey" not in page:
                break
            request["ExclusiveStartKey"] = page["LastEvaluatedKey"]
        return places[:limit]

    def fence_lanes(self, key: SeatKey, lanes: Sequence[int], frontier: str) -> None:
        """`SET frontier = :frontier` on each lane where it is below (a lane already past it is
        left as it is)."""
        for lane in lanes:
            call_expecting(
                CONDITION_FAILED,
                self._client.update_item,
                TableName=self._table_name,
                Key=lane_key(key, lane),
                UpdateExpression="SET frontier = :frontier",
                ConditionExpression="attribute_exists(pk) AND frontier < :frontier",
                ExpressionAttributeValues={":frontier": {"S": frontier}},
            )

    def join_waitlist(self, join: Join) -> ListRefused | None:
        return self._transact(join_actions(join), list_refusal)

    def write_lanes(self, writes: Sequence[LaneWrite]) -> list[ListRefused | None]:
        return [self._transact(lane_actions(write), list_refusal) for write in writes]

    def rebalance(self, rebalance: Rebalance) -> ListRefused | None:
        return self._transact(rebalance_actions(rebalance), list_refusal)

    def return_listed(self, back: ListedReturn) -> ListRefused | None:
        return self._transact(return_actions(back), list_refusal)

    def find_open_lists(self) -> list[SeatKey]:
        """A Query of each `WAITLISTS#<bucket>` partition of `HoldsByExpiry` (eventually consistent)."""
        found: list[SeatKey] = []
        for bucket in range(LIST_BUCKETS):
            for item in self._query_all(HOLDS_INDEX, "gsi1pk", f"{LISTS_PREFIX}{bucket}"):
                found.append(SeatKey(item["event_id"]["S"], item["seat_class"]["S"]))
        return sorted(found, key=lambda k: (k.event_id, k.seat_class))

    def find_unpublished_offers(self, limit: int) -> list[ReservationRecord]:
        """A Query of each `OFFERED#<bucket>` partition of `TicketsToIssue`, the records read whole."""
        ids: list[str] = []
        for bucket in range(OFFER_BUCKETS):
            items = self._query_all(TICKETS_INDEX, "gsi2pk", f"{OFFERS_PREFIX}{bucket}", limit - len(ids))
            ids.extend(item["reservation_id"]["S"] for item in items)
            if len(ids) >= limit:
                break
        records = self.read_reservations(ids)
        return [records[i] for i in ids if i in records]

    def mark_offers_published(self, records: Sequence[ReservationRecord]) -> int:
        """`REMOVE gsi2pk, gsi2sk` per record, conditional on it still being in the offers' outbox
        (a record a confirm moved on, or another sweeper took out, is skipped)."""
        cleared = 0
        for record in records:
            rid = record.reservation_id
            try:
                refused = call_expecting(
                    CONDITION_FAILED,
                    self._client.update_item,
                    TableName=self._table_name,
                    Key=reservation_key(rid),
                    UpdateExpression="REMOVE gsi2pk, gsi2sk",
                    ConditionExpression="gsi2pk = :outbox",
                    ExpressionAttributeValues={":outbox": {"S": f"{OFFERS_PREFIX}{offer_bucket(rid)}"}},
                )
            except TransactionConflict:
                continue
            if not isinstance(refused, ClientError):
                cleared += 1
        return cleared

    def _query_all(
        self, index: str, name: str, partition: str, limit: int | None = None
    ) -> list[dict[str, Any]]:
        request: dict[str, Any] = {
            "TableName": self._table_name,
            "IndexName": index,
            "KeyConditionExpression": f"{name} = :pk",
            "ExpressionAttributeValues": {":pk": {"S": partition}},
        }
        items: list[dict[str, Any]] = []
        while limit is None or len(items) < limit:
            if limit is not None:
                request["Limit"] = limit - len(items)
            page = call(self._client.query, **request)
            items.extend(page.get("Items", []))
            if "LastEvaluatedKey" not in page:
                break
            request["ExclusiveStartKey"] = page["LastEvaluatedKey"]
        return items
