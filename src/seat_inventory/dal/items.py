"""The table's item layout: keys, attribute names and the conversions between items and models
(one table, keys `pk`/`sk`, TTL `expires_at`; the attributes of each item: docs/contributing/code-tour.md).

| item                 | pk                                       | sk              |
|----------------------|------------------------------------------|-----------------|
| seat-class inventory | `EVENT#<event_id>` (shard n > 0: `EVENT#<event_id>#SHARD#<n>`) | `CLASS#<class>` |
| capacity pool        | `EVENT#<event_id>` (item n > 0: `EVENT#<event_id>#SHARD#<n>`)  | `POOL#<pool>`   |
| customer counter     | `CUSTOMER#<event_id>#<class>#<customer>` | `COUNTER`       |
| reservation record   | `RESERVATION#<res_id>`                   | `RESERVATION`   |
| admission token use  | `ADMISSION#<token id>`                   | `TOKEN`         |
| seat map             | `SEATMAP#<event_id>`                     | `MAP`           |
| row item             | `SEATROW#<event_id>#<class>#<section>`   | `ROW#<row_id>`  |
| slice claim          | `SEATCLAIM#<event_id>#<class>#<part>`    | `CLAIM`         |
| ticket numbering     | `TICKETS#<event_id>`                     | `FORMAT`        |
| ticket counter       | `TICKETS#<event_id>#<series>`            | `COUNTER`       |
| ticket ledger batch  | `LEDGER#<event_id>#<series>`             | `FIRST#<first, 12 digits>` |
| waiting list         | `WAITLIST#<event_id>#<class>`            | `LIST`          |
| waiting list lane    | `WAITLIST#<event_id>#<class>#<lane>`     | `LANE`          |
| place on a lane      | `WAITLIST#<event_id>#<class>#<lane>`     | `P#<join ms>#<n>#<res_id>` |
| customer's entry     | `WAITER#<event_id>#<class>#<customer>`   | `ENTRY`         |

A record is in the sparse index `HoldsByExpiry` while it is a live hold (`gsi1pk = HOLDS#<0-7>`)
or an expiry to announce (`EXPIRED#<0-7>`), and in `TicketsToIssue` while a sale waits for its
numbers (`gsi2pk = UNNUMBERED#<0-511>`; a ledger batch to announce: `TICKETED#<0-7>`; an offer of
the waiting list to announce: `OFFERED#<0-7>`). An open waiting list is in `HoldsByExpiry` under
`WAITLISTS#<0-7>`, for the sweeper's rounds.
"""

from __future__ import annotations

import dataclasses
import time
import zlib
from collections.abc import Mapping, Sequence
from typing import Any

from seat_inventory.models import (
    DEFAULT_OFFER_SECONDS,
    IssuerLane,
    Lane,
    OrderLine,
    Outcome,
    Place,
    PoolInventory,
    RequestType,
    ReservationOutcome,
    ReservationRecord,
    SaleStatus,
    SeatClassInventory,
    SeatKey,
    SeatRow,
    SeatState,
    ShardSeats,
    ShardSurvey,
    WaitingList,
    split_pool_ref,
)

INVENTORY_PREFIX = "EVENT#"
CLASS_PREFIX = "CLASS#"
CUSTOMER_PREFIX = "CUSTOMER#"
CUSTOMER_SK = "COUNTER"
RESERVATION_PREFIX = "RESERVATION#"
RESERVATION_SK = "RESERVATION"
HOLDS_INDEX = "HoldsByExpiry"
HOLD_SHARDS = 8
HOLDS_PREFIX = "HOLDS#"
OUTBOX_PREFIX = "EXPIRED#"
TICKETS_INDEX = "TicketsToIssue"
# Sold records spread over this many index partition keys: at 40,000 sales a second numbered as
# fast, each gets about 80 index writes in and as many out, so the busiest of the index's
# partitions stays inside its 1,000 write units (docs/guides/tickets.md).
UNNUMBERED_BUCKETS = 512
UNNUMBERED_PREFIX = "UNNUMBERED#"
LEDGER_OUTBOX_BUCKETS = 8
LEDGER_OUTBOX_PREFIX = "TICKETED#"
TICKETS_PREFIX = "TICKETS#"
LEDGER_PREFIX = "LEDGER#"
LEDGER_SK_PREFIX = "FIRST#"
ADMISSION_PREFIX = "ADMISSION#"
ADMISSION_SK = "TOKEN"
ADMISSION_REQUIRED = "admission_required"
# Seats given back to a class (its shard items, its row items) go to its waiting list.
WAITLIST_RULE = "waitlist"
POOL_PREFIX = "POOL#"
# A class's pools, and a record's: the names joined by commas (no name contains one).
POOL_NAMES = "pool_names"

# The conditions every write that takes seats adds: the sale is open at :now.
SALE_OPEN_CONDITION = (
    "(attribute_not_exists(sale_status) OR sale_status = :open)"
    " AND (attribute_not_exists(sale_starts_at) OR sale_starts_at <= :now)"
    " AND (attribute_not_exists(sale_ends_at) OR sale_ends_at > :now)"
)


SHARD_MARK = "#SHARD#"


def inventory_key(key: SeatKey, shard: int = 0) -> dict[str, Any]:
    """The key of a seat class's shard item; shard 0 is the class's original item."""
    pk = INVENTORY_PREFIX + key.event_id + (f"{SHARD_MARK}{shard}" if shard else "")
    return {"pk": {"S": pk}, "sk": {"S": CLASS_PREFIX + key.seat_class}}


def pool_key(event_id: str, pool: str, shard: int = 0) -> dict[str, Any]:
    """The item of one capacity pool (shard 0), or of its shard `shard`: beside the event's seat
    classes, laid out like a class's shard items (docs/guides/pools.md)."""
    pk = INVENTORY_PREFIX + event_id + (f"{SHARD_MARK}{shard}" if shard else "")
    return {"pk": {"S": pk}, "sk": {"S": POOL_PREFIX + pool}}


def pool_ref_key(event_id: str, ref: str) -> dict[str, Any]:
    """The pool item a record's pool entry names (`models.pool_ref`)."""
    return pool_key(event_id, *split_pool_ref(ref))


def pool_names_value(pools: Sequence[str]) -> dict[str, str]:
    return {"S": ",".join(sorted(pools))}


def pool_names(item: Mapping[str, Any]) -> tuple[str, ...]:
    value = item.get(POOL_NAMES)
    return tuple(value["S"].split(",")) if value and value["S"] else ()


def pool_from_item(item: Mapping[str, Any]) -> PoolInventory:
    return PoolInventory(
        event_id=item["event_id"]["S"],
        pool=item["pool"]["S"],
        capacity=int(item["capacity"]["N"]),
        available=int(item["available"]["N"]),
        held=_optional_int(item, "held") or 0,
        sold=_optional_int(item, "sold") or 0,
        sale_status=SaleStatus(_optional_text(item, "sale_status") or SaleStatus.OPEN.value),
        version=_optional_int(item, "version") or 0,
        shard=_optional_int(item, "shard") or 0,
        shard_count=_optional_int(item, "shard_count") or 1,
    )


def pool_view(items: Sequence[Mapping[str, Any]]) -> PoolInventory:
    """A sharded pool from every one of its items read at once: the totals, each item in `shards`."""
    parts = sorted((pool_from_item(item) for item in items), key=lambda p: p.shard)
    head = parts[0]
    return dataclasses.replace(
        head,
        capacity=sum(p.capacity for p in parts),
        available=sum(p.available for p in parts),
        held=sum(p.held for p in parts),
        sold=sum(p.sold for p in parts),
        shards=tuple(ShardSeats(p.shard, p.capacity, p.available, p.held, p.sold) for p in parts),
    )


def reservation_key(reservation_id: str) -> dict[str, Any]:
    return {"pk": {"S": RESERVATION_PREFIX + reservation_id}, "sk": {"S": RESERVATION_SK}}


def customer_key(key: SeatKey, customer_id: str) -> dict[str, Any]:
    """A customer's counter has a partition key of its own, off the event's hot partition."""
    return {
        "pk": {"S": f"{CUSTOMER_PREFIX}{key.event_id}#{key.seat_class}#{customer_id}"},
        "sk": {"S": CUSTOMER_SK},
    }


def admission_key(token_id: str) -> dict[str, Any]:
    """The item that records an admission token's use (one partition key per token)."""
    return {"pk": {"S": ADMISSION_PREFIX + token_id}, "sk": {"S": ADMISSION_SK}}


def hold_shard(reservation_id: str) -> int:
    """The index shard of a reservation: stable across processes and Python versions (CRC-32)."""
    return zlib.crc32(reservation_id.encode()) % HOLD_SHARDS


def lane_buckets(lane: IssuerLane) -> list[int]:
    """The `UNNUMBERED#<bucket>` keys holding an issuer lane's sales."""
    return [b for b in range(UNNUMBERED_BUCKETS) if lane.takes_bucket(b)]


def unnumbered_bucket(reservation_id: str) -> int:
    return zlib.crc32(reservation_id.encode()) % UNNUMBERED_BUCKETS


def ticket_format_key(event_id: str) -> dict[str, Any]:
    return {"pk": {"S": TICKETS_PREFIX + event_id}, "sk": {"S": "FORMAT"}}


def ticket_counter_key(event_id: str, series: int) -> dict[str, Any]:
    return {"pk": {"S": f"{TICKETS_PREFIX}{event_id}#{series}"}, "sk": {"S": "COUNTER"}}


def ledger_pk(event_id: str, series: int) -> str:
    return f"{LEDGER_PREFIX}{event_id}#{series}"


def ledger_series(pk: str) -> int:
    """The series of a ledger entry's partition key (`ledger_pk`)."""
    return int(pk.rsplit("#", 1)[1])


def ledger_sk(first: int) -> str:
    return f"{LEDGER_SK_PREFIX}{first:012d}"


def awaiting_tickets_values(reservation_id: str, sold_at_ms: int) -> dict[str, Any]:
    """The index attributes a sold record carries until it is numbered."""
    return {
        "gsi2pk": {"S": f"{UNNUMBERED_PREFIX}{unnumbered_bucket(reservation_id)}"},
        "gsi2sk": {"N": str(sold_at_ms)},
    }


def number(value: int) -> dict[str, str]:
    return {"N": str(value)}


def timestamp() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _optional_text(item: Mapping[str, Any], name: str) -> str | None:
    value = item.get(name)
    return value["S"] if value else None


def _optional_int(item: Mapping[str, Any], name: str) -> int | None:
    value = item.get(name)
    return int(value["N"]) if value else None


SEATMAP_PREFIX = "SEATMAP#"
SEATROW_PREFIX = "SEATROW#"
SEATCLAIM_PREFIX = "SEATCLAIM#"
ROW_SK_PREFIX = "ROW#"


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
    return SeatRow(
        key=SeatKey(item["event_id"]["S"], item["seat_class"]["S"]),
        row_id=item["row_id"]["S"],
        first=int(item["first"]["N"]),
        size=int(item["size"]["N"]),
        states=states,
        available=int(item["available"]["N"]),
        held=int(item["held"]["N"]),
        sold=int(item["sold"]["N"]),
        max_per_customer=_optional_int(item, "max_per_customer"),
        sale_status=SaleStatus(_optional_text(item, "sale_status") or SaleStatus.OPEN.value),
        sale_starts_at=_optional_int(item, "sale_starts_at"),
        sale_ends_at=_optional_int(item, "sale_ends_at"),
        pools=pool_names(item),
        admission_required=bool(item.get(ADMISSION_REQUIRED, {}).get("BOOL", False)),
        waitlist=bool(item.get(WAITLIST_RULE, {}).get("BOOL", False)),
    )


# When a transaction last took seats from a shard item (routing: `logic.shards.pick_shard`).
TAKEN_AT = "last_taken_at"
# What a survey of a class's shard items reads of each (`TableAccess.survey_shards`); `shard`
# is a reserved word.
SURVEY_PROJECTION = f"#shard, available, {TAKEN_AT}"
SURVEY_NAMES = {"#shard": "shard"}


def survey_from_item(item: Mapping[str, Any]) -> ShardSurvey:
    taken_at = item.get(TAKEN_AT)
    return ShardSurvey(
        shard=_optional_int(item, "shard") or 0,
        available=int(item["available"]["N"]),
        taken_at=float(taken_at["N"]) if taken_at else None,
    )


def inventory_from_item(item: Mapping[str, Any]) -> SeatClassInventory:
    """The view of one shard item: the class's totals when it is the class's only item."""
    # An item without `held` has none held (updates use if_not_exists).
    seats = ShardSeats(
        shard=_optional_int(item, "shard") or 0,
        capacity=int(item["capacity"]["N"]),
        available=int(item["available"]["N"]),
        held=_optional_int(item, "held") or 0,
        sold=int(item["sold"]["N"]),
    )
    # Only shard 0 knows how many items there are; another shard's view is never complete.
    shard_items = (_optional_int(item, "shard_items") or 1) if seats.shard == 0 else 0
    return SeatClassInventory(
        event_id=item["event_id"]["S"],
        seat_class=item["seat_class"]["S"],
        capacity=seats.capacity,
        available=seats.available,
        sold=seats.sold,
        held=seats.held,
        max_per_customer=_optional_int(item, "max_per_customer"),
        sale_status=SaleStatus(_optional_text(item, "sale_status") or SaleStatus.OPEN.value),
        sale_starts_at=_optional_int(item, "sale_starts_at"),
        sale_ends_at=_optional_int(item, "sale_ends_at"),
        version=_optional_int(item, "version") or 0,
        # A class of one item is its own view: no shards listed.
        shards=() if shard_items == 1 else (seats,),
        shard_count=_optional_int(item, "shard_count") or 1,
        shard_items=shard_items,
        admission_required=bool(item.get(ADMISSION_REQUIRED, {}).get("BOOL", False)),
        pools=pool_names(item),
        waitlist=bool(item.get(WAITLIST_RULE, {}).get("BOOL", False)),
    )


def class_view(items: Sequence[Mapping[str, Any]]) -> SeatClassInventory:
    """The class's totals from all its shard items (read together), the sale rules from shard 0."""
    views = sorted((inventory_from_item(item) for item in items), key=lambda v: v.shard_seats()[0].shard)
    head = views[0]
    if len(views) == 1 and head.complete:
        return head
    shards = tuple(v.shard_seats()[0] for v in views)
    return dataclasses.replace(
        head,
        capacity=sum(s.capacity for s in shards),
        available=sum(s.available for s in shards),
        held=sum(s.held for s in shards),
        sold=sum(s.sold for s in shards),
        shards=shards,
    )


def outcome_from_item(item: Mapping[str, Any]) -> ReservationOutcome:
    return ReservationOutcome(
        reservation_id=item["reservation_id"]["S"],
        outcome=Outcome(item["outcome"]["S"]),
        reason=item["reason"]["S"],
        event_id=_optional_text(item, "event_id"),
        seat_class=_optional_text(item, "seat_class"),
        quantity=_optional_int(item, "quantity"),
        customer_id=_optional_text(item, "customer_id"),
        remaining=_optional_int(item, "remaining"),
        message_id=_optional_text(item, "message_id"),
        request_type=RequestType(_optional_text(item, "request_type") or RequestType.RESERVE.value),
        hold_expires_at=_optional_int(item, "hold_expires_at"),
        seats=tuple(v["S"] for v in item["seats"]["L"]) if "seats" in item else None,
        lines=tuple(_line_from_item(v["M"]) for v in item["lines"]["L"]) if "lines" in item else None,
        position=_optional_int(item, "position"),
    )


def _line_item(line: OrderLine) -> dict[str, Any]:
    """An order line on its record (docs/guides/orders.md): the class, the seats and where they came from."""
    item: dict[str, Any] = {"seat_class": {"S": line.seat_class}, "quantity": number(line.quantity)}
    if line.shard:
        item["shard"] = number(line.shard)
    if line.pools:
        item[POOL_NAMES] = pool_names_value(line.pools)
    if line.customer_counted:
        item["customer_counted"] = {"BOOL": True}
    if line.seats is not None:
        item["seats"] = {"L": [{"S": seat} for seat in line.seats]}
    return item


def _line_from_item(item: Mapping[str, Any]) -> OrderLine:
    return OrderLine(
        seat_class=item["seat_class"]["S"],
        quantity=int(item["quantity"]["N"]),
        shard=_optional_int(item, "shard") or 0,
        pools=pool_names(item),
        customer_counted=bool(item.get("customer_counted", {}).get("BOOL", False)),
        seats=tuple(v["S"] for v in item["seats"]["L"]) if "seats" in item else None,
    )


def record_from_item(item: Mapping[str, Any]) -> ReservationRecord:
    answer = outcome_from_item(item)
    status = _optional_text(item, "status")
    return ReservationRecord(
        answer=answer,
        # A record without `status` is in the state of its answer.
        status=Outcome(status) if status else answer.outcome,
        hold_expires_at=answer.hold_expires_at,
        customer_counted=bool(item.get("customer_counted", {}).get("BOOL", False)),
        awaiting_publication=(_optional_text(item, "gsi1pk") or "").startswith(OUTBOX_PREFIX),
        status_changed_at=_optional_text(item, "status_changed_at"),
        last_change_id=_optional_text(item, "last_change_id"),
        shard=_optional_int(item, "shard") or 0,
        awaiting_tickets=(_optional_text(item, "gsi2pk") or "").startswith(UNNUMBERED_PREFIX),
        ticket_series=_optional_int(item, "ticket_series"),
        ticket_first=_optional_int(item, "ticket_first"),
        pools=pool_names(item),
        tickets_passed_on=_optional_int(item, "tickets_passed_on") or 0,
        waitlist_place=_waitlist_place(item),
    )


def _waitlist_place(item: Mapping[str, Any]) -> tuple[int, str] | None:
    lane, order = _optional_int(item, WAITLIST_LANE), _optional_text(item, WAITLIST_PLACE)
    return (lane, order) if lane is not None and order is not None else None


def record_item(
    outcome: ReservationOutcome,
    *,
    recorded_at: str,
    expires_at: int | None,
    customer_counted: bool,
    shard: int = 0,
    pools: Sequence[str] = (),
) -> dict[str, Any]:
    """A reservation's record: its answer, in the holds' index while a hold lasts and in the
    ticket issuer's while a sale waits for numbers, and where its seats came from."""
    item: dict[str, Any] = {
        **reservation_key(outcome.reservation_id),
        "entity": {"S": "reservation"},
        "status": {"S": outcome.outcome.value},
        "recorded_at": {"S": recorded_at},
        **answer_attributes(outcome),
    }
    if outcome.outcome is Outcome.HELD:
        if outcome.hold_expires_at is None:
            raise ValueError(f"hold {outcome.reservation_id!r} has no expiry")
        item["gsi1pk"] = {"S": f"{HOLDS_PREFIX}{hold_shard(outcome.reservation_id)}"}
        item["gsi1sk"] = number(outcome.hold_expires_at)
    if outcome.outcome is Outcome.CONFIRMED:
        item.update(awaiting_tickets_values(outcome.reservation_id, int(time.time() * 1000)))
    optional = {
        "customer_counted": {"BOOL": True} if customer_counted else None,
        "expires_at": number(expires_at) if expires_at is not None else None,
        "shard": number(shard) if shard else None,
        POOL_NAMES: pool_names_value(pools) if pools else None,
    }
    item.update((name, value) for name, value in optional.items() if value is not None)
    return item


def answer_attributes(outcome: ReservationOutcome) -> dict[str, Any]:
    """The answer as a record keeps it (`outcome_from_item` reads it back)."""
    item: dict[str, Any] = {
        "reservation_id": {"S": outcome.reservation_id},
        "outcome": {"S": outcome.outcome.value},
        "reason": {"S": outcome.reason},
        "request_type": {"S": (outcome.request_type or RequestType.RESERVE).value},
    }
    for name in ("event_id", "seat_class", "customer_id", "message_id"):
        if (text := getattr(outcome, name)) is not None:
            item[name] = {"S": text}
    for name in ("quantity", "remaining", "hold_expires_at", "position"):
        if (value := getattr(outcome, name)) is not None:
            item[name] = number(value)
    if outcome.seats is not None:
        item["seats"] = {"L": [{"S": seat} for seat in outcome.seats]}
    if outcome.lines is not None:
        item["lines"] = {"L": [{"M": _line_item(line)} for line in outcome.lines]}
    return item


# ---------------------------------------------------------------------------- the waiting list

WAITLIST_PREFIX = "WAITLIST#"
WAITER_PREFIX = "WAITER#"
LIST_SK = "LIST"
LANE_SK = "LANE"
ENTRY_SK = "ENTRY"
# Open lists, in the `HoldsByExpiry` index for the sweeper's rounds (`gsi1pk`).
LISTS_PREFIX = "WAITLISTS#"
LIST_BUCKETS = 8
# Offers whose OFFERED outcome awaits publication, in the `TicketsToIssue` index (`gsi2pk`).
OFFERS_PREFIX = "OFFERED#"
OFFER_BUCKETS = 8
# A waiting record's place (its lane and order key), for leaving.
WAITLIST_LANE = "waitlist_lane"
WAITLIST_PLACE = "waitlist_place"


def _list_pk(key: SeatKey) -> str:
    return f"{WAITLIST_PREFIX}{key.event_id}#{key.seat_class}"


def list_key(key: SeatKey) -> dict[str, Any]:
    return {"pk": {"S": _list_pk(key)}, "sk": {"S": LIST_SK}}


def lane_pk(key: SeatKey, lane: int) -> str:
    return f"{_list_pk(key)}#{lane}"


def lane_key(key: SeatKey, lane: int) -> dict[str, Any]:
    return {"pk": {"S": lane_pk(key, lane)}, "sk": {"S": LANE_SK}}


def place_key(key: SeatKey, lane: int, order: str) -> dict[str, Any]:
    return {"pk": {"S": lane_pk(key, lane)}, "sk": {"S": order}}


def entry_key(key: SeatKey, customer_id: str) -> dict[str, Any]:
    """A customer's entry on a class's list: one partition key per customer and class."""
    pk = f"{WAITER_PREFIX}{key.event_id}#{key.seat_class}#{customer_id}"
    return {"pk": {"S": pk}, "sk": {"S": ENTRY_SK}}


def list_bucket(key: SeatKey) -> int:
    return zlib.crc32(f"{key.event_id}#{key.seat_class}".encode()) % LIST_BUCKETS


def offer_bucket(reservation_id: str) -> int:
    return zlib.crc32(reservation_id.encode()) % OFFER_BUCKETS


def lane_from_item(item: Mapping[str, Any]) -> Lane:
    seats = item.get("seats", {}).get("M", {})
    return Lane(
        lane=int(item["lane"]["N"]),
        waiting=_optional_int(item, "waiting") or 0,
        frontier=_optional_text(item, "frontier") or "",
        open=bool(item.get("open", {}).get("BOOL", False)),
        until=_optional_int(item, "until"),
        offer_seconds=_optional_int(item, "offer_seconds") or DEFAULT_OFFER_SECONDS,
        seats={name: int(value["N"]) for name, value in seats.items() if int(value["N"])},
    )


def place_item(place: Place, joined_at: str) -> dict[str, Any]:
    """A place on a lane: its entry's reservation, customer and what it waits for."""
    item: dict[str, Any] = {
        **place_key(place.key, place.lane, place.order),
        "entity": {"S": "waitlist_place"},
        "event_id": {"S": place.key.event_id},
        "seat_class": {"S": place.key.seat_class},
        "lane": number(place.lane),
        "reservation_id": {"S": place.reservation_id},
        "customer_id": {"S": place.customer_id},
        "quantity": number(place.quantity),
        "joined_at": {"S": joined_at},
    }
    if place.split:
        item["split"] = {"BOOL": True}
    if place.accessible:
        item["accessible"] = {"BOOL": True}
    return item


def place_from_item(item: Mapping[str, Any]) -> Place:
    return Place(
        key=SeatKey(item["event_id"]["S"], item["seat_class"]["S"]),
        lane=int(item["lane"]["N"]),
        order=item["sk"]["S"],
        reservation_id=item["reservation_id"]["S"],
        customer_id=item["customer_id"]["S"],
        quantity=int(item["quantity"]["N"]),
        split=bool(item.get("split", {}).get("BOOL", False)),
        accessible=bool(item.get("accessible", {}).get("BOOL", False)),
    )


def entry_item(place: Place, joined_at: str) -> dict[str, Any]:
    """A customer's entry on a class's list: the reservation that joined (for good)."""
    return {
        **entry_key(place.key, place.customer_id),
        "entity": {"S": "waitlist_entry"},
        "event_id": {"S": place.key.event_id},
        "seat_class": {"S": place.key.seat_class},
        "customer_id": {"S": place.customer_id},
        "reservation_id": {"S": place.reservation_id},
        "joined_at": {"S": joined_at},
    }


def waiting_list(key: SeatKey, items: Sequence[Mapping[str, Any]]) -> WaitingList | None:
    """A class's list from its list item and lane items (None: no list item)."""
    head = next((i for i in items if i["sk"]["S"] == LIST_SK), None)
    if head is None:
        return None
    lanes = sorted((lane_from_item(i) for i in items if i["sk"]["S"] == LANE_SK), key=lambda lane: lane.lane)
    return WaitingList(
        key=key,
        open=bool(head.get("open", {}).get("BOOL", False)),
        until=_optional_int(head, "until"),
        offer_seconds=_optional_int(head, "offer_seconds") or DEFAULT_OFFER_SECONDS,
        lanes=tuple(lanes),
        mapped=bool(head.get("mapped", {}).get("BOOL", False)),
    )
