"""The operator's writes to a mapped event (`seats event create --seat-map`, `seats event
close|open|admission` of a mapped class): its map and row items, and the sale rules on each row."""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from seat_inventory.dal.errors import CONDITION_FAILED, call, call_expecting
from seat_inventory.dal.items import (
    ADMISSION_REQUIRED,
    POOL_NAMES,
    number,
    pool_names_value,
    row_key,
    seat_attribute,
    seat_map_key,
)
from seat_inventory.dal.seat_rows import SeatRows
from seat_inventory.logic.seat_map import SeatMap
from seat_inventory.models import RetryableError, SaleStatus, SeatKey, SeatState, StoreInconsistency
from seat_tools.operator_errors import EventAlreadyExists, UnknownSeatClass
from seat_tools.seat_layout import layout_items
from seat_tools.seat_map_files import dump_json, row_items

BATCH_WRITE_LIMIT = 25
ATTEMPTS = 5
BACKOFF_SECONDS = 0.05


@dataclass(frozen=True, slots=True)
class SaleRules:
    """The sale rules a mapped class is created with (copied on each of its row items)."""

    max_per_customer: int | None = None
    sale_starts_at: int | None = None
    sale_ends_at: int | None = None
    closed: bool = False
    # The capacity pools the class takes from as well, and whether it requires admission tokens.
    pools: tuple[str, ...] = ()
    admission_required: bool = False


class SeatMapCommands(SeatRows):
    """Creating a mapped event's items, and changing a rule on every row item of a class."""

    def set_rows_sale_status(self, key: SeatKey, status: SaleStatus) -> int:
        """Opens or closes a mapped class: `sale_status` on each of its row items, one guarded
        update each (the row must exist). Not one transaction (a class can have thousands of row
        items): while it runs some rows sell and others do not; once it returns, none (closed) or
        all (open) do. Running it again finishes one that failed half-way. Returns the rows updated.
        """
        return self._set_on_rows(key, "sale_status", {"S": status.value})

    def set_rows_admission(self, key: SeatKey, required: bool) -> int:
        """Makes reserve and hold of a mapped class need an admission token, or no longer
        (docs/guides/admission.md): `admission_required` on each row item, as `set_rows_sale_status` sets
        the status (row by row; a take is guarded on it, so a planner that assumed the other rule
        is refused and plans again). Returns the rows updated."""
        return self._set_on_rows(key, ADMISSION_REQUIRED, {"BOOL": required})

    def _set_on_rows(self, key: SeatKey, name: str, value: dict[str, Any]) -> int:
        rows = self.read_seat_rows(key)
        if not rows:
            raise UnknownSeatClass(f"event {key.event_id!r} has no mapped seat class {key.seat_class!r}")
        for row_id in sorted(rows):
            refused = call_expecting(
                CONDITION_FAILED,
                self._client.update_item,
                TableName=self._table_name,
                Key=row_key(key, row_id),
                UpdateExpression="SET #rule = :value",
                ConditionExpression="attribute_exists(pk)",
                ExpressionAttributeNames={"#rule": name},
                ExpressionAttributeValues={":value": value},
            )
            if isinstance(refused, ClientError):
                raise StoreInconsistency(f"{key}: row item {row_id} vanished while its {name} was set")
        return len(rows)

    def create_seat_map(self, event_id: str, seat_map: SeatMap, rules: SaleRules) -> None:
        """Writes every row item and section layout item, then the map item (guarded: an event has
        one map, never replaced).

        Rows first: until the map item exists no request is placed on them, so a create that failed
        half-way is simply run again (the rows are overwritten as they were)."""
        if call(self._client.get_item, TableName=self._table_name, Key=seat_map_key(event_id)).get("Item"):
            raise EventAlreadyExists(f"event {event_id!r} already has a seat map")
        items = [
            self._row_item(SeatKey(event_id, name), row, rules)
            for name, class_map in seat_map.classes.items()
            for row in row_items(class_map)
        ]
        items += layout_items(event_id, seat_map)  # for pages drawing the map (seat_layout)
        for start in range(0, len(items), BATCH_WRITE_LIMIT):
            chunk = items[start : start + BATCH_WRITE_LIMIT]
            requests: list[Any] = [{"PutRequest": {"Item": i}} for i in chunk]
            for attempt in range(ATTEMPTS):
                response = call(self._client.batch_write_item, RequestItems={self._table_name: requests})
                requests = list(response.get("UnprocessedItems", {}).get(self._table_name, []))
                if not requests:
                    break
                self._sleep(BACKOFF_SECONDS * 2**attempt)
            if requests:
                raise RetryableError(f"BatchWriteItem left {len(requests)} row item(s) unwritten")
        refused = call_expecting(
            CONDITION_FAILED,
            self._client.put_item,
            TableName=self._table_name,
            Item={
                **seat_map_key(event_id),
                "entity": {"S": "seat_map"},
                "event_id": {"S": event_id},
                "map": {"B": zlib.compress(dump_json(seat_map).encode(), 9)},
            },
            ConditionExpression="attribute_not_exists(pk)",
        )
        if isinstance(refused, ClientError):
            raise EventAlreadyExists(f"event {event_id!r} already has a seat map")

    def _row_item(self, key: SeatKey, row: Any, rules: SaleRules) -> dict[str, Any]:
        item: dict[str, Any] = {
            **row_key(key, row.row_id),
            "entity": {"S": "seat_row"},
            "event_id": {"S": key.event_id},
            "seat_class": {"S": key.seat_class},
            "row_id": {"S": row.row_id},
            "first": number(row.first),
            "size": number(row.size),
            "available": number(row.size - len(row.blocked)),
            "held": number(0),
            "sold": number(0),
        }
        for position in row.blocked:
            item[seat_attribute(position)] = {"S": SeatState.BLOCKED.value}
        if rules.closed:
            item["sale_status"] = {"S": SaleStatus.CLOSED.value}
        for name in ("max_per_customer", "sale_starts_at", "sale_ends_at"):
            value = getattr(rules, name)
            if value is not None:
                item[name] = number(value)
        if rules.pools:
            item[POOL_NAMES] = pool_names_value(rules.pools)
        if rules.admission_required:
            item[ADMISSION_REQUIRED] = {"BOOL": True}
        return item
