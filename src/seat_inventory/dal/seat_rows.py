"""Mapped seat classes (docs/guides/seat-maps.md): `InventoryStore.read_seat_map`, `read_seat_rows` and
`claim`. A class's rows are read by a Query per section (its items share a partition key), its
chosen seats' rows by a consistent BatchGetItem; the map item is the event's map, zlib-compressed
JSON, written once and never changed."""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from botocore.exceptions import ClientError

from seat_inventory.dal.access import TableAccess
from seat_inventory.dal.errors import CONDITION_FAILED, call, call_expecting
from seat_inventory.dal.items import claim_key, number, row_from_item, row_key, seat_map_key, section_pk
from seat_inventory.logic.seat_map import SeatMap, load_json
from seat_inventory.models import RetryableError, SeatKey, SeatRow

# A claim item is kept (DynamoDB TTL) this long after it was last written.
CLAIM_KEPT_SECONDS = 86_400
# A whole class is read by a Query per section, this many at a time (the stadium's classes have
# 48 sections: three rounds of one Query's latency rather than 48).
MAX_CONCURRENT_SECTION_QUERIES = 16


class SeatRows(TableAccess):
    """`InventoryStore.read_seat_map`, `read_seat_rows` and `claim`."""

    # Each mapped class's sections (from its map, which never changes), for reading all its rows.
    _sections: dict[SeatKey, list[str]] | None = None
    _section_pool: ThreadPoolExecutor | None = None

    def read_seat_map(self, event_id: str) -> SeatMap | None:
        response = call(
            self._client.get_item, TableName=self._table_name, Key=seat_map_key(event_id), ConsistentRead=True
        )
        item = response.get("Item")
        if not item:
            return None
        return load_json(zlib.decompress(item["map"]["B"]).decode())

    def read_seat_rows(self, key: SeatKey, row_ids: Sequence[str] | None = None) -> dict[str, SeatRow]:
        if row_ids is not None:
            return self._get_rows(key, row_ids)
        if self._sections is None:
            self._sections = {}
        if key not in self._sections:
            seat_map = self.read_seat_map(key.event_id)
            class_map = seat_map.classes.get(key.seat_class) if seat_map else None
            if class_map is None:
                return {}
            self._sections[key] = list(dict.fromkeys(r.section for r in class_map.rows))
        if self._section_pool is None:
            self._section_pool = ThreadPoolExecutor(
                MAX_CONCURRENT_SECTION_QUERIES, thread_name_prefix="sections"
            )
        rows: dict[str, SeatRow] = {}
        for section_rows in self._section_pool.map(
            lambda s: self._query_section(key, s), self._sections[key]
        ):
            rows.update(section_rows)
        return rows

    def _query_section(self, key: SeatKey, section: str) -> dict[str, SeatRow]:
        """Every row item of one section: a Query (eventually consistent), page by page."""
        params: dict[str, Any] = {
            "TableName": self._table_name,
            "KeyConditionExpression": "pk = :pk",
            "ExpressionAttributeValues": {":pk": {"S": section_pk(key, section)}},
        }
        rows: dict[str, SeatRow] = {}
        while True:
            response = call(self._client.query, **params)
            for item in response.get("Items", []):
                row = row_from_item(item)
                rows[row.row_id] = row
            if "LastEvaluatedKey" not in response:
                return rows
            params["ExclusiveStartKey"] = response["LastEvaluatedKey"]

    def claim(self, key: SeatKey, part: str, owner: str, *, now: float, until: float) -> bool:
        """One conditional `UpdateItem` of the part's claim item (created when missing): granted
        unless another owner's claim runs past `now`."""
        refused = call_expecting(
            CONDITION_FAILED,
            self._client.update_item,
            TableName=self._table_name,
            Key=claim_key(key, part),
            UpdateExpression="SET #owner = :owner, #until = :until, expires_at = :expires",
            ConditionExpression="attribute_not_exists(pk) OR #owner = :owner OR #until < :now",
            ExpressionAttributeNames={"#owner": "owner", "#until": "until"},
            ExpressionAttributeValues={
                ":owner": {"S": owner},
                ":until": {"N": f"{until:.3f}"},
                ":now": {"N": f"{now:.3f}"},
                ":expires": number(int(now) + CLAIM_KEPT_SECONDS),
            },
        )
        return not isinstance(refused, ClientError)

    def _get_rows(self, key: SeatKey, row_ids: Sequence[str]) -> dict[str, SeatRow]:
        items, complete = self._consistent_batch_get([row_key(key, r) for r in dict.fromkeys(row_ids)])
        if not complete:
            raise RetryableError("BatchGetItem left row items unprocessed")
        return {row.row_id: row for row in map(row_from_item, items)}
