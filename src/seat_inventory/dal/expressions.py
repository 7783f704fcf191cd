"""Every action of a transaction (`seat_inventory.transaction`) as DynamoDB writes it: its item's key, the
update or put with its guard, and its item as a refusal hands it back (ALL_OLD) decoded by role.

Every guard returns ALL_OLD, so that a refused transaction tells the planner what it assumed
wrongly (the class as it is, the answer recorded before, a customer's counter, the token's first
user, the pool as it is, a row's seats).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from seat_inventory.dal.items import (
    ADMISSION_REQUIRED,
    OUTBOX_PREFIX,
    POOL_NAMES,
    SALE_OPEN_CONDITION,
    TAKEN_AT,
    admission_key,
    awaiting_tickets_values,
    customer_key,
    hold_shard,
    inventory_from_item,
    inventory_key,
    number,
    pool_from_item,
    pool_key,
    pool_names_value,
    pool_ref_key,
    record_from_item,
    record_item,
    reservation_key,
    row_from_item,
    row_key,
    seat_attribute,
)
from seat_inventory.models import ClassRules, Outcome, SaleStatus, SeatState
from seat_inventory.transaction import (
    Action,
    ChangeStatus,
    CountCustomer,
    MovePoolSeats,
    MoveSeats,
    PutRecord,
    ReleaseRow,
    ReturnPoolSeats,
    ReturnSeats,
    Role,
    SeatsDelta,
    TakeFromPool,
    TakeRow,
    TakeSeats,
    UncountCustomer,
    UseToken,
)


def item_key(action: Action) -> dict[str, Any]:
    """The key of the item an action writes."""
    if isinstance(action, TakeSeats | ReturnSeats):
        return inventory_key(action.key, action.shard)
    if isinstance(action, MoveSeats):
        return inventory_key(action.key, action.donor)
    if isinstance(action, TakeRow | ReleaseRow):
        return row_key(action.key, action.row_id)
    if isinstance(action, PutRecord):
        return reservation_key(action.answer.reservation_id)
    if isinstance(action, ChangeStatus):
        return reservation_key(action.transition.record.reservation_id)
    if isinstance(action, CountCustomer | UncountCustomer):
        return customer_key(action.key, action.customer)
    if isinstance(action, UseToken):
        return admission_key(action.use.token_id)
    if isinstance(action, TakeFromPool):
        return pool_key(action.event_id, action.pool, action.item)
    if isinstance(action, MovePoolSeats):
        return pool_key(action.event_id, action.pool, action.donor)
    return pool_ref_key(action.event_id, action.ref)


def decode(action: Action, item: Mapping[str, Any] | None) -> Any:
    """A refused action's item as it was (ALL_OLD), by role; None when there is none."""
    if not item:
        return None
    role = action.role
    if role is Role.SEATS:
        return inventory_from_item(item)
    if role is Role.ROW:
        return row_from_item(item)
    if role is Role.RECORD:
        return record_from_item(item)
    if role is Role.COUNTER:
        return int(item["seats"]["N"]) if "seats" in item else None
    if role is Role.TOKEN:
        return item["reservation_id"]["S"]
    return pool_from_item(item)


def render(action: Action, table: str, stamp: str) -> dict[str, Any]:
    """The action as one item of `TransactWriteItems` on `table`; `stamp` is the transaction's
    time (`recorded_at`, `status_changed_at`)."""
    if isinstance(action, PutRecord):
        return {"Put": _put_record(action, table, stamp)}
    if isinstance(action, UseToken):
        return {"Put": _use_token(action, table)}
    update = _UPDATES[type(action)](action, stamp)
    update.update(TableName=table, Key=item_key(action), ReturnValuesOnConditionCheckFailure="ALL_OLD")
    return {"Update": update}


def _now(now: int | None) -> int:
    return int(time.time()) if now is None else now


def _rules_condition(rules: ClassRules, values: dict[str, Any]) -> str:
    """The guard that the class's limit, pools and admission rule are the ones assumed."""
    if rules.max_per_customer is None:
        condition = " AND attribute_not_exists(max_per_customer)"
    else:
        condition = " AND max_per_customer = :limit"
        values[":limit"] = number(rules.max_per_customer)
    if rules.pools:
        condition += f" AND {POOL_NAMES} = :pools"
        values[":pools"] = pool_names_value(rules.pools)
    else:
        condition += f" AND attribute_not_exists({POOL_NAMES})"
    if rules.admission_required:
        values[":required"] = {"BOOL": True}
        return condition + f" AND {ADMISSION_REQUIRED} = :required"
    values[":not_required"] = {"BOOL": False}
    return (
        condition
        + f" AND (attribute_not_exists({ADMISSION_REQUIRED}) OR {ADMISSION_REQUIRED} = :not_required)"
    )


def _take_seats(action: TakeSeats, _: str) -> dict[str, Any]:
    """The take off a class's shard item: what the item itself must have is the seats less those
    moved into it; the sale open and the rules as assumed."""
    sold = action.seats - action.held
    values: dict[str, Any] = {
        ":seats": number(action.seats - action.moved),
        ":open": {"S": SaleStatus.OPEN.value},
        ":now": number(_now(action.now)),
    }
    updates = ["available = available - :seats"]
    update: dict[str, Any] = {}
    if action.moved:
        updates.append("#capacity = #capacity + :moved")
        values[":moved"] = number(action.moved)
        update["ExpressionAttributeNames"] = {"#capacity": "capacity"}
    if sold:
        updates.append("sold = sold + :sold")
        values[":sold"] = number(sold)
    if action.taken_at is not None:
        updates.append(f"{TAKEN_AT} = :taken_at")
        values[":taken_at"] = {"N": f"{action.taken_at:.3f}"}
    if action.held:
        updates.append("held = if_not_exists(held, :zero) + :held")
        values[":held"] = number(action.held)
        values[":zero"] = number(0)
    condition = f"attribute_exists(pk) AND available >= :seats AND {SALE_OPEN_CONDITION}"
    condition += _rules_condition(action.rules, values)
    update.update(
        UpdateExpression="SET " + ", ".join(updates),
        ConditionExpression=condition,
        ExpressionAttributeValues=values,
    )
    return update


def _move_seats(action: MoveSeats | MovePoolSeats, _: str) -> dict[str, Any]:
    """A donor's move: its available seats and as much capacity go to the item taken from, guarded
    by `available >=` what it gives, so the totals never change by a move."""
    return {
        "UpdateExpression": "SET #capacity = #capacity - :moved, available = available - :moved",
        "ConditionExpression": "attribute_exists(pk) AND available >= :moved",
        "ExpressionAttributeNames": {"#capacity": "capacity"},
        "ExpressionAttributeValues": {":moved": number(action.seats)},
    }


def _take_row(action: TakeRow, _: str) -> dict[str, Any]:
    """Exactly the row item's `positions`, each guarded on being free, held or sold."""
    state = SeatState.HELD if action.held else SeatState.SOLD
    counter = "held" if action.held else "sold"
    names = {f"#p{i}": seat_attribute(p) for i, p in enumerate(action.positions)}
    values: dict[str, Any] = {
        ":n": number(len(action.positions)),
        ":state": {"S": state.value},
        ":open": {"S": SaleStatus.OPEN.value},
        ":now": number(_now(action.now)),
    }
    sets = [f"{name} = :state" for name in names]
    sets += ["available = available - :n", f"{counter} = {counter} + :n"]
    free = " AND ".join(f"attribute_not_exists({name})" for name in names)
    condition = f"attribute_exists(pk) AND {free} AND {SALE_OPEN_CONDITION}"
    condition += _rules_condition(action.rules, values)
    return {
        "UpdateExpression": "SET " + ", ".join(sets),
        "ConditionExpression": condition,
        "ExpressionAttributeNames": names,
        "ExpressionAttributeValues": values,
    }


def _put_record(action: PutRecord, table: str, stamp: str) -> dict[str, Any]:
    item = record_item(
        action.answer,
        recorded_at=stamp,
        expires_at=action.expires_at,
        customer_counted=action.counted,
        shard=action.shard,
        pools=action.pools,
    )
    return {
        "TableName": table,
        "Item": item,
        "ConditionExpression": "attribute_not_exists(pk)",
        "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
    }


def _count_customer(action: CountCustomer, _: str) -> dict[str, Any]:
    if action.seats > action.limit:
        raise ValueError(
            f"{action.seats} seat(s) for customer {action.customer!r} pass the limit of {action.limit}"
        )
    key = action.key
    return {
        "UpdateExpression": (
            "SET seats = if_not_exists(seats, :zero) + :seats, entity = :entity,"
            " event_id = :event_id, seat_class = :seat_class, customer_id = :customer_id"
        ),
        "ConditionExpression": "attribute_not_exists(seats) OR seats <= :room",
        "ExpressionAttributeValues": {
            ":zero": number(0),
            ":seats": number(action.seats),
            ":room": number(action.limit - action.seats),
            ":entity": {"S": "customer_counter"},
            ":event_id": {"S": key.event_id},
            ":seat_class": {"S": key.seat_class},
            ":customer_id": {"S": action.customer},
        },
    }


def _use_token(action: UseToken, table: str) -> dict[str, Any]:
    """Spends an admission token: written only if no reservation used it, or this one did (its
    redelivery is not a replay)."""
    use = action.use
    return {
        "TableName": table,
        "Item": {
            **admission_key(use.token_id),
            "entity": {"S": "admission_token"},
            "token_id": {"S": use.token_id},
            "reservation_id": {"S": use.reservation_id},
            "expires_at": number(use.expires_at),
        },
        "ConditionExpression": "attribute_not_exists(pk) OR reservation_id = :reservation_id",
        "ExpressionAttributeValues": {":reservation_id": {"S": use.reservation_id}},
        "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
    }


def _take_from_pool(action: TakeFromPool, _: str) -> dict[str, Any]:
    """The seats off one pool item after `moved` moved into it (negative: out of it): guarded on
    the seats the item itself must have, and open."""
    sold = action.seats - action.held
    values: dict[str, Any] = {
        ":seats": number(action.seats - action.moved),
        ":held": number(action.held),
        ":sold": number(sold),
        ":open": {"S": SaleStatus.OPEN.value},
        ":now": number(_now(action.now)),
    }
    update: dict[str, Any] = {
        "UpdateExpression": "SET available = available - :seats, held = held + :held, sold = sold + :sold",
        "ConditionExpression": f"attribute_exists(pk) AND available >= :seats AND {SALE_OPEN_CONDITION}",
        "ExpressionAttributeValues": values,
    }
    if action.moved:
        update["UpdateExpression"] += ", #capacity = #capacity + :moved"
        values[":moved"] = number(action.moved)
        update["ExpressionAttributeNames"] = {"#capacity": "capacity"}
    return update


def _return_seats(action: ReturnSeats | ReturnPoolSeats, _: str) -> dict[str, Any]:
    """`held -=` confirmed and released holds, `sold +=` confirmed less released sales,
    `available +=` released, guarded by `held >=` and `sold >=` what it takes off and, with a
    capacity, by `capacity = :capacity AND available <= :capacity - released` (conditions have
    no arithmetic, so the caller's capacity is checked too)."""
    delta: SeatsDelta = action.delta
    capacity = action.capacity if isinstance(action, ReturnSeats) else None
    updates: list[str] = []
    conditions = ["attribute_exists(pk)"]
    values: dict[str, Any] = {}
    update: dict[str, Any] = {}
    if delta.released:
        updates.append("available = available + :released")
        values[":released"] = number(delta.released)
        if capacity is not None:
            conditions.append("#capacity = :capacity AND available <= :available_max")
            update["ExpressionAttributeNames"] = {"#capacity": "capacity"}
            values[":capacity"] = number(capacity)
            values[":available_max"] = number(capacity - delta.released)
    if delta.unheld:
        updates.append("held = held - :unheld")
        conditions.append("held >= :unheld")
        values[":unheld"] = number(delta.unheld)
    if delta.unsold:
        conditions.append("sold >= :unsold")
        values[":unsold"] = number(delta.unsold)
    if delta.sold != delta.unsold:
        updates.append("sold = sold + :sold_delta")
        values[":sold_delta"] = number(delta.sold - delta.unsold)
    update.update(
        UpdateExpression="SET " + ", ".join(updates),
        ConditionExpression=" AND ".join(conditions),
        ExpressionAttributeValues=values,
    )
    return update


def _release_row(action: ReleaseRow, stamp: str) -> dict[str, Any]:
    """Each seat guarded on the state its record says, then sold (confirm) or freed."""
    names = {f"#p{i}": seat_attribute(position) for i, (position, *_) in enumerate(action.seats)}
    values: dict[str, Any] = {}
    conditions = ["attribute_exists(pk)"]
    sets: list[str] = []
    removes: list[str] = []
    moves = {"available": 0, "held": 0, "sold": 0}
    for i, (_position, was, sells) in enumerate(action.seats):
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
    return {
        "UpdateExpression": "SET " + ", ".join(sets) + (" REMOVE " + ", ".join(removes) if removes else ""),
        "ConditionExpression": " AND ".join(conditions),
        "ExpressionAttributeNames": names,
        "ExpressionAttributeValues": values,
    }


def _change_status(action: ChangeStatus, stamp: str) -> dict[str, Any]:
    """The record's new status, guarded on the one it was read with (and a hold on being due or
    not); an expiry enters the outbox, a sale the ticket issuer's index, a cancelled hold its TTL."""
    transition, record = action.transition, action.transition.record
    values: dict[str, Any] = {
        ":to": {"S": transition.to.value},
        ":from": {"S": record.status.value},
        ":changed_at": {"S": stamp},
    }
    sets = ["#status = :to", "status_changed_at = :changed_at"]
    if transition.change_id is not None:
        sets.append("last_change_id = :change_id")
        values[":change_id"] = {"S": transition.change_id}
    removes = ["gsi1pk", "gsi1sk"]
    if transition.to is Outcome.CONFIRMED:
        sets.append("gsi2pk = :unnumbered, gsi2sk = :sold_at")
        index = awaiting_tickets_values(record.reservation_id, int(time.time() * 1000))
        values[":unnumbered"] = index["gsi2pk"]
        values[":sold_at"] = index["gsi2sk"]
    if record.status is Outcome.HELD:
        values[":now"] = number(action.now)
        condition = "#status = :from AND hold_expires_at > :now"
        if transition.to is Outcome.EXPIRED:
            condition = "#status = :from AND hold_expires_at <= :now"
            sets.append("gsi1pk = :outbox")
            values[":outbox"] = {"S": f"{OUTBOX_PREFIX}{hold_shard(record.reservation_id)}"}
            removes = []
        if transition.to is Outcome.CANCELLED:
            sets.append("expires_at = :expires_at")
            values[":expires_at"] = number(action.release_expires_at)
    else:
        condition = "(#status = :from OR (attribute_not_exists(#status) AND outcome = :from))"
        if transition.to is Outcome.CANCELLED:
            # Not while another customer holds one of its tickets (docs/guides/checkin.md).
            condition += " AND (attribute_not_exists(tickets_passed_on) OR tickets_passed_on = :none)"
            values[":none"] = number(0)
    return {
        "UpdateExpression": "SET " + ", ".join(sets) + (" REMOVE " + ", ".join(removes) if removes else ""),
        "ConditionExpression": condition,
        "ExpressionAttributeNames": {"#status": "status"},
        "ExpressionAttributeValues": values,
    }


def _uncount_customer(action: UncountCustomer, _: str) -> dict[str, Any]:
    return {
        "UpdateExpression": "SET seats = seats - :seats",
        "ConditionExpression": "seats >= :seats",
        "ExpressionAttributeValues": {":seats": number(action.seats)},
    }


_UPDATES: dict[type, Any] = {
    TakeSeats: _take_seats,
    MoveSeats: _move_seats,
    MovePoolSeats: _move_seats,
    TakeRow: _take_row,
    CountCustomer: _count_customer,
    TakeFromPool: _take_from_pool,
    ReturnSeats: _return_seats,
    ReturnPoolSeats: _return_seats,
    ReleaseRow: _release_row,
    ChangeStatus: _change_status,
    UncountCustomer: _uncount_customer,
}
