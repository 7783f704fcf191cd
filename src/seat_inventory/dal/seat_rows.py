"""Mapped seat classes (docs/guides/seat-maps.md): the seat map item, the row items, and the expressions
that take and give back exactly the seats of a reservation.

| item      | pk                                        | sk              |
|-----------|-------------------------------------------|-----------------|
| seat map  | `SEATMAP#<event_id>`                      | `MAP`           |
| row item  | `SEATROW#<event_id>#<class>#<section>`    | `ROW#<row_id>`  |
| claim     | `SEATCLAIM#<event_id>#<class>#<part>`     | `CLAIM`         |

A row item (`row_id` = `<section>-<row>#<block>`, at most `ROW_BLOCK` seats) has `first` and
`size`, the counts `available`, `held`, `sold`, the class's sale rules (`sale_status`,
`sale_starts_at`, `sale_ends_at`, `max_per_customer`, and the class's `pool_names` and
`admission_required` (docs/guides/pools.md, docs/guides/admission.md), copied on every row item) and one
attribute `p<position>` per seat that is not free: `H` held, `S` sold, `B` blocked. A take is
one update per row item guarded by `attribute_not_exists(p<n>)` on exactly its seats (and the
sale rules); a release is guarded by each seat's state being the one the record says. No item
is written by every take: the class's counts are the sums of its rows'. A claim item (`owner`,
`until`, TTL `expires_at`) tells containers which of them places in a slice of a class's rows
(`claim`); no take reads or guards on it.
"""

from __future__ import annotations

import time
import zlib
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from seat_inventory.dal.access import TableAccess
from seat_inventory.dal.errors import CONDITION_FAILED, call, call_expecting, failed_condition
from seat_inventory.dal.items import (
    ADMISSION_REQUIRED,
    POOL_NAMES,
    SALE_OPEN_CONDITION,
    number,
    outcome_from_item,
    pool_names,
    pool_names_value,
)
from seat_inventory.dal.seat_layout import layout_items
from seat_inventory.logic.ports import WriteRefused
from seat_inventory.logic.seat_map import SeatMap, dump_json, load_json, row_item_of, row_items
from seat_inventory.models import (
    EventAlreadyExists,
    GroupWrite,
    Outcome,
    ReservationOutcome,
    RetryableError,
    SaleStatus,
    SeatKey,
    SeatRow,
    SeatState,
    StoreInconsistency,
    TokenUse,
    Transition,
    UnknownSeatClass,
)

SEATMAP_PREFIX = "SEATMAP#"
SEATROW_PREFIX = "SEATROW#"
SEATCLAIM_PREFIX = "SEATCLAIM#"
# A claim item is kept (DynamoDB TTL) this long after it was last written.
CLAIM_KEPT_SECONDS = 86_400
ROW_SK_PREFIX = "ROW#"
BATCH_WRITE_LIMIT = 25
ATTEMPTS = 5
BACKOFF_SECONDS = 0.05
# A whole class is read by a Query per section, this many at a time (the stadium's classes have
# 48 sections: three rounds of one Query's latency rather than 48).
MAX_CONCURRENT_SECTION_QUERIES = 16


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


def seat_map_key(event_id: str) -> dict[str, Any]:
    return {"pk": {"S": SEATMAP_PREFIX + event_id}, "sk": {"S": "MAP"}}


def section_pk(key: SeatKey, section: str) -> str:
    return f"{SEATROW_PREFIX}{key.event_id}#{key.seat_class}#{section}"


def row_key(key: SeatKey, row_id: str) -> dict[str, Any]:
    section = row_id.split("-", 1)[0]
    return {"pk": {"S": section_pk(key, section)}, "sk": {"S": ROW_SK_PREFIX + row_id}}


def claim_key(key: SeatKey, part: str) -> dict[str, Any]:
    return {"pk": {"S": f"{SEATCLAIM_PREFIX}{key.event_id}#{key.seat_class}#{part}"}, "sk": {"S": "CLAIM"}}


def seat_attribute(position: int) -> str:
    return f"p{position}"


def row_from_item(item: Mapping[str, Any]) -> SeatRow:
    states = {
        int(name[1:]): SeatState(value["S"])
        for name, value in item.items()
        if name[0] == "p" and name[1:].isdigit()
    }

    def optional(name: str) -> int | None:
        return int(item[name]["N"]) if name in item else None

    return SeatRow(
        key=SeatKey(item["event_id"]["S"], item["seat_class"]["S"]),
        row_id=item["row_id"]["S"],
        first=int(item["first"]["N"]),
        size=int(item["size"]["N"]),
        states=states,
        available=int(item["available"]["N"]),
        held=int(item["held"]["N"]),
        sold=int(item["sold"]["N"]),
        max_per_customer=optional("max_per_customer"),
        sale_status=SaleStatus(item["sale_status"]["S"]) if "sale_status" in item else SaleStatus.OPEN,
        sale_starts_at=optional("sale_starts_at"),
        sale_ends_at=optional("sale_ends_at"),
        pools=pool_names(item),
        admission_required=bool(item.get(ADMISSION_REQUIRED, {}).get("BOOL", False)),
    )


def take_rows_actions(table_name: str, write: GroupWrite) -> list[dict[str, Any]]:
    """One guarded update per row item: its seats must be free, the sale open at `now`, the limit,
    the pools and the admission rule the ones assumed (a stale assumption is refused, ALL_OLD hands
    back the row to plan again from); the seats become held or sold and the counts move with them."""
    now = int(time.time()) if write.now is None else write.now
    state = SeatState.HELD if write.seats_held else SeatState.SOLD
    counter = "held" if state is SeatState.HELD else "sold"
    actions = []
    for row_id, positions in write.rows.items():
        names = {f"#p{i}": seat_attribute(p) for i, p in enumerate(positions)}
        values: dict[str, Any] = {
            ":n": number(len(positions)),
            ":state": {"S": state.value},
            ":open": {"S": SaleStatus.OPEN.value},
            ":now": number(now),
        }
        sets = [f"{name} = :state" for name in names]
        sets += ["available = available - :n", f"{counter} = {counter} + :n"]
        free = " AND ".join(f"attribute_not_exists({name})" for name in names)
        condition = f"attribute_exists(pk) AND {free} AND {SALE_OPEN_CONDITION}"
        if write.max_per_customer is None:
            condition += " AND attribute_not_exists(max_per_customer)"
        else:
            condition += " AND max_per_customer = :limit"
            values[":limit"] = number(write.max_per_customer)
        condition += _rules_condition(write, values)
        actions.append(
            {
                "Update": {
                    "TableName": table_name,
                    "Key": row_key(write.key, row_id),
                    "UpdateExpression": "SET " + ", ".join(sets),
                    "ConditionExpression": condition,
                    "ExpressionAttributeNames": names,
                    "ExpressionAttributeValues": values,
                    "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                }
            }
        )
    return actions


def _rules_condition(write: GroupWrite, values: dict[str, Any]) -> str:
    """The guard that the class belongs to exactly the pools the planner assumed and requires an
    admission token exactly when it assumed so (docs/guides/pools.md, docs/guides/admission.md)."""
    if write.pools:
        condition = f" AND {POOL_NAMES} = :pools"
        values[":pools"] = pool_names_value(write.pools)
    else:
        condition = f" AND attribute_not_exists({POOL_NAMES})"
    if write.admission_required:
        values[":required"] = {"BOOL": True}
        return condition + f" AND {ADMISSION_REQUIRED} = :required"
    values[":not_required"] = {"BOOL": False}
    not_required = f"(attribute_not_exists({ADMISSION_REQUIRED}) OR {ADMISSION_REQUIRED} = :not_required)"
    return condition + f" AND {not_required}"


def rows_refusal(
    exc: ClientError,
    reasons: Sequence[Mapping[str, Any]],
    rows: Sequence[str],
    outcomes: Sequence[ReservationOutcome],
    customers: Sequence[str],
    token_uses: Sequence[TokenUse] = (),
) -> WriteRefused:
    """A mapped take's cancellation reasons (rows, then records, counters and token uses, in
    order; any pools after them are the caller's)."""
    refused_rows = {
        row_id: (row_from_item(reason["Item"]) if reason.get("Item") else None)
        for row_id, reason in zip(rows, reasons[: len(rows)], strict=True)
        if failed_condition(reason)
    }
    record_reasons = reasons[len(rows) : len(rows) + len(outcomes)]
    already_recorded: dict[str, ReservationOutcome] = {}
    for outcome, reason in zip(outcomes, record_reasons, strict=True):
        if failed_condition(reason):
            if not reason.get("Item"):
                raise RuntimeError("record condition failed without ALL_OLD item") from exc
            already_recorded[outcome.reservation_id] = outcome_from_item(reason["Item"])
    customer_seats: dict[str, int] = {}
    start = len(rows) + len(outcomes)
    for customer_id, reason in zip(customers, reasons[start : start + len(customers)], strict=True):
        if failed_condition(reason):
            if not reason.get("Item"):
                raise RuntimeError("counter condition failed without ALL_OLD item") from exc
            customer_seats[customer_id] = int(reason["Item"]["seats"]["N"])
    start += len(customers)
    tokens_used: dict[str, str] = {}
    for use, reason in zip(token_uses, reasons[start : start + len(token_uses)], strict=True):
        if failed_condition(reason):
            if not reason.get("Item"):
                raise RuntimeError("token condition failed without ALL_OLD item") from exc
            tokens_used[use.token_id] = reason["Item"]["reservation_id"]["S"]
    return WriteRefused(
        inventory_refused=bool(refused_rows),
        inventory=None,
        already_recorded=already_recorded,
        customer_seats=customer_seats,
        tokens_used=tokens_used,
        rows=refused_rows,
    )


def seats_by_row(seats: Iterable[str]) -> dict[str, list[int]]:
    by_row: dict[str, list[int]] = {}
    for seat in seats:
        row_id, position = row_item_of(seat)
        by_row.setdefault(row_id, []).append(position)
    return by_row


def release_rows_actions(
    table_name: str, key: SeatKey, transitions: Sequence[Transition]
) -> list[dict[str, Any]]:
    """One update per row item the transitions' seats are on: each seat guarded on the state its
    record says (H for a hold, S for a sale), then sold (confirm) or freed (cancel, expiry)."""
    changes: dict[str, list[tuple[int, SeatState, bool]]] = {}  # row -> (position, from, to sold)
    for t in transitions:
        was = SeatState.HELD if t.record.status is Outcome.HELD else SeatState.SOLD
        for row_id, positions in seats_by_row(t.record.seats).items():
            changes.setdefault(row_id, []).extend((p, was, not t.releases_seats) for p in positions)
    actions = []
    for row_id, seats in sorted(changes.items()):
        names = {f"#p{i}": seat_attribute(p) for i, (p, _, _) in enumerate(seats)}
        values: dict[str, Any] = {}
        conditions = ["attribute_exists(pk)"]
        sets: list[str] = []
        removes: list[str] = []
        moves = {"available": 0, "held": 0, "sold": 0}
        for i, (_, was, sells) in enumerate(seats):
            values[f":was{i}"] = {"S": was.value}
            conditions.append(f"#p{i} = :was{i}")
            moves["held" if was is SeatState.HELD else "sold"] -= 1
            if sells:
                sets.append(f"#p{i} = :sold")
                values[":sold"] = {"S": SeatState.SOLD.value}
                moves["sold"] += 1
            else:
                removes.append(f"#p{i}")
                moves["available"] += 1
        for counter, delta in moves.items():
            if delta:
                sets.append(f"{counter} = {counter} + :d_{counter}")
                values[f":d_{counter}"] = number(delta)
        expression = "SET " + ", ".join(sets) + (" REMOVE " + ", ".join(removes) if removes else "")
        actions.append(
            {
                "Update": {
                    "TableName": table_name,
                    "Key": row_key(key, row_id),
                    "UpdateExpression": expression,
                    "ConditionExpression": " AND ".join(conditions),
                    "ExpressionAttributeNames": names,
                    "ExpressionAttributeValues": values,
                    "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                }
            }
        )
    return actions


def release_rows_count(transitions: Sequence[Transition]) -> int:
    """How many row items the transitions' seats are on (one action each)."""
    return len({row for t in transitions for row in seats_by_row(t.record.seats)})


class SeatRows(TableAccess):
    """`InventoryStore.read_seat_map`, `read_seat_rows`, and creating a mapped event's items."""

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

    def _get_rows(self, key: SeatKey, row_ids: Sequence[str]) -> dict[str, SeatRow]:
        items, complete = self._consistent_batch_get([row_key(key, r) for r in dict.fromkeys(row_ids)])
        if not complete:
            raise RetryableError("BatchGetItem left row items unprocessed")
        return {row.row_id: row for row in map(row_from_item, items)}

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
        items += layout_items(event_id, seat_map)  # for pages drawing the map (dal/seat_layout.py)
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
