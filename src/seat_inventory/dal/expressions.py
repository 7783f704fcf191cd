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
    HOLDS_PREFIX,
    OFFERS_PREFIX,
    OUTBOX_PREFIX,
    POOL_NAMES,
    SALE_OPEN_CONDITION,
    TAKEN_AT,
    WAITLIST_LANE,
    WAITLIST_PLACE,
    WAITLIST_RULE,
    admission_key,
    answer_attributes,
    awaiting_tickets_values,
    customer_key,
    entry_item,
    entry_key,
    hold_shard,
    inventory_from_item,
    inventory_key,
    lane_from_item,
    lane_key,
    number,
    offer_bucket,
    place_item,
    place_key,
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
    ChangeLane,
    ChangeStatus,
    ClaimEntry,
    CountCustomer,
    DropPlace,
    EndEntry,
    JoinRecord,
    MoveHeld,
    MovePoolSeats,
    MoveSeats,
    OfferRecord,
    PutPlace,
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
    if isinstance(action, _LIST_ACTIONS):
        return _list_item_key(action)
    if isinstance(action, MoveHeld):
        return inventory_key(action.key, action.shard)
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


# A put that writes only a new item, and hands back the one there (ALL_OLD).
_NEW_ITEM = {
    "ConditionExpression": "attribute_not_exists(pk)",
    "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
}
_LIST_ACTIONS = (ChangeLane, PutPlace, DropPlace, ClaimEntry, JoinRecord, OfferRecord, EndEntry)


def _list_item_key(
    action: ChangeLane | PutPlace | DropPlace | ClaimEntry | JoinRecord | OfferRecord | EndEntry,
) -> dict[str, Any]:
    if isinstance(action, ChangeLane):
        return lane_key(action.key, action.lane)
    if isinstance(action, PutPlace | DropPlace):
        place = action.place
        return place_key(place.key, place.lane, place.order)
    if isinstance(action, ClaimEntry):
        return entry_key(action.place.key, action.place.customer_id)
    if isinstance(action, EndEntry):
        return reservation_key(action.reservation_id)
    return reservation_key(action.answer.reservation_id)


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
    if role is Role.TOKEN or role is Role.ENTRY:
        return item["reservation_id"]["S"]
    if role is Role.LANE:
        return lane_from_item(item)
    if role is Role.PLACE:
        return item["sk"]["S"]
    return pool_from_item(item)


def render(action: Action, table: str, stamp: str) -> dict[str, Any]:
    """The action as one item of `TransactWriteItems` on `table`; `stamp` is the transaction's
    time (`recorded_at`, `status_changed_at`)."""
    if isinstance(action, PutRecord):
        return {"Put": _put_record(action, table, stamp)}
    if isinstance(action, UseToken):
        return {"Put": _use_token(action, table)}
    if isinstance(action, PutPlace | ClaimEntry):
        written = place_item if isinstance(action, PutPlace) else entry_item
        put = {"TableName": table, "Item": written(action.place, stamp), **_NEW_ITEM}
        return {"Put": put}
    if isinstance(action, DropPlace):
        key = {"TableName": table, "Key": item_key(action), "ConditionExpression": "attribute_exists(pk)"}
        return {"Delete": key}
    update = _UPDATES[type(action)](action, stamp)
    if isinstance(action, ChangeLane) and not action.changes:
        del update["UpdateExpression"]
        update.update(TableName=table, Key=item_key(action), ReturnValuesOnConditionCheckFailure="ALL_OLD")
        return {"ConditionCheck": update}
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
    `available +=` released, `held +=` what the class's waiting list takes, guarded by `held >=`
    and `sold >=` what it takes off and, with a capacity, by `capacity = :capacity AND available
    <= :capacity - released` (conditions have no arithmetic, so the caller's capacity is checked
    too); and by the class's waiting list rule as assumed (`ReturnSeats.waitlist`)."""
    delta: SeatsDelta = action.delta
    capacity = action.capacity if isinstance(action, ReturnSeats) else None
    updates: list[str] = []
    conditions = ["attribute_exists(pk)"]
    values: dict[str, Any] = {}
    names: dict[str, str] = {}
    if delta.released:
        updates.append("available = available + :released")
        values[":released"] = number(delta.released)
        if capacity is not None:
            conditions.append("#capacity = :capacity AND available <= :available_max")
            names["#capacity"] = "capacity"
            values[":capacity"] = number(capacity)
            values[":available_max"] = number(capacity - delta.released)
    if delta.unheld:
        conditions.append("held >= :unheld")
        values[":unheld"] = number(delta.unheld)
    if delta.listed != delta.unheld:
        updates.append("held = held + :held_delta")
        values[":held_delta"] = number(delta.listed - delta.unheld)
    if delta.unsold:
        conditions.append("sold >= :unsold")
        values[":unsold"] = number(delta.unsold)
    if delta.sold != delta.unsold:
        updates.append("sold = sold + :sold_delta")
        values[":sold_delta"] = number(delta.sold - delta.unsold)
    if isinstance(action, ReturnSeats) and action.waitlist is not None:
        conditions.append(_rule_condition(action.waitlist, names, values))
    update: dict[str, Any] = {
        "UpdateExpression": "SET " + ", ".join(updates) if updates else "SET held = held",
        "ConditionExpression": " AND ".join(conditions),
        "ExpressionAttributeValues": values,
    }
    if names:
        update["ExpressionAttributeNames"] = names
    return update


def _rule_condition(waitlist: bool, names: dict[str, str], values: dict[str, Any]) -> str:
    """The guard that the class's seats given back go to its waiting list (True) or on sale."""
    names["#waitlist"] = WAITLIST_RULE
    if waitlist:
        values[":listing"] = {"BOOL": True}
        return "#waitlist = :listing"
    return "attribute_not_exists(#waitlist)"


# How each state of a seat counts on its row item (a seat the list holds is held).
_COUNTS = {SeatState.HELD: "held", SeatState.LISTED: "held", SeatState.SOLD: "sold", None: "available"}


def _release_row(action: ReleaseRow, stamp: str) -> dict[str, Any]:
    """Each seat guarded on the state it must be in, then set to its state after (or freed); the
    class's waiting list rule as assumed, and with `now` the sale open then."""
    names = {f"#p{i}": seat_attribute(position) for i, (position, *_) in enumerate(action.seats)}
    values: dict[str, Any] = {}
    conditions = ["attribute_exists(pk)"]
    sets: list[str] = []
    removes: list[str] = []
    moves = {"available": 0, "held": 0, "sold": 0}
    for i, (_position, was, after) in enumerate(action.seats):
        values[f":was{i}"] = {"S": was.value}
        conditions.append(f"#p{i} = :was{i}")
        moves[_COUNTS[was]] -= 1
        moves[_COUNTS[after]] += 1
        if after is None:
            removes.append(f"#p{i}")
        else:
            sets.append(f"#p{i} = :{after.name.lower()}")
            values[f":{after.name.lower()}"] = {"S": after.value}
    for counter, delta in moves.items():
        if delta:
            sets.append(f"{counter} = {counter} + :d_{counter}")
            values[f":d_{counter}"] = number(delta)
    if action.waitlist is not None:
        conditions.append(_rule_condition(action.waitlist, names, values))
    if action.now is not None:
        conditions.append(SALE_OPEN_CONDITION)
        values.update({":open": {"S": SaleStatus.OPEN.value}, ":now": number(action.now)})
    return {
        "UpdateExpression": ("SET " + ", ".join(sets) if sets else "")
        + (" REMOVE " + ", ".join(removes) if removes else ""),
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


def _change_lane(action: ChangeLane, _: str) -> dict[str, Any]:
    """A lane's entries and ledger seats (docs/guides/waiting-list.md), guarded on the lane having
    what it gives; a join on the list being open and the frontier below its first key (then its
    last); an offer on the list offering at its time; `empty` on no entry waiting."""
    names = {f"#{name}": name for name in ("waiting", "seats", "open", "until", "frontier")}
    values: dict[str, Any] = {}
    sets: list[str] = []
    conditions = ["attribute_exists(pk)"]
    if action.waiting:
        sets.append("#waiting = #waiting + :waiting")
        values[":waiting"] = number(action.waiting)
        if action.waiting < 0:
            conditions.append("#waiting >= :leaving")
            values[":leaving"] = number(-action.waiting)
    _ledger_clauses(action, names, values, sets, conditions)
    _lane_guards(action, values, sets, conditions)
    used = " ".join([*sets, *conditions])
    update: dict[str, Any] = {
        "UpdateExpression": "SET " + ", ".join(sets),
        "ConditionExpression": " AND ".join(conditions),
        "ExpressionAttributeNames": {k: v for k, v in names.items() if k in used},
    }
    if values:
        update["ExpressionAttributeValues"] = values
    if not update["ExpressionAttributeNames"]:
        del update["ExpressionAttributeNames"]
    return update


def _ledger_clauses(
    action: ChangeLane, names: dict[str, str], values: dict[str, Any], sets: list[str], conditions: list[str]
) -> None:
    """A lane's ledger seats by ledger key: added (from 0 when absent), or taken off guarded on the
    lane holding them."""
    for i, (place, seats) in enumerate(sorted(action.ledger.items())):
        names[f"#k{i}"] = place
        values[f":k{i}"] = number(abs(seats))
        if seats > 0:
            values[":none"] = number(0)
            sets.append(f"#seats.#k{i} = if_not_exists(#seats.#k{i}, :none) + :k{i}")
        elif seats < 0:
            sets.append(f"#seats.#k{i} = #seats.#k{i} - :k{i}")
            conditions.append(f"#seats.#k{i} >= :k{i}")


def _lane_guards(action: ChangeLane, values: dict[str, Any], sets: list[str], conditions: list[str]) -> None:
    """A join's guards (the list open, the frontier below its first key, which its last becomes),
    an offer's (the list open and offering at its time), and `empty`'s (no entry waiting)."""
    if action.join is not None or action.offer_at is not None:
        conditions.append("#open = :open")
        values[":open"] = {"BOOL": True}
    if action.join is not None:
        conditions.append("#frontier < :first")
        sets.append("#frontier = :last")
        values[":first"], values[":last"] = {"S": action.join[0]}, {"S": action.join[1]}
    if action.offer_at is not None:
        conditions.append("(attribute_not_exists(#until) OR #until > :now)")
        values[":now"] = number(action.offer_at)
    if action.empty:
        conditions.append("#waiting = :zero")
        values[":zero"] = number(0)


def _record_answer(answer: Any, values: dict[str, Any], names: dict[str, str]) -> list[str]:
    """SET clauses writing `answer` onto a record, as `dal.items.record_item` writes it."""
    sets = []
    for i, (name, value) in enumerate(answer_attributes(answer).items()):
        names[f"#a{i}"] = name
        values[f":a{i}"] = value
        sets.append(f"#a{i} = :a{i}")
    return sets


def _join_record(action: JoinRecord, stamp: str) -> dict[str, Any]:
    """The refused request's record takes its WAITLISTED answer and place, guarded on still being
    that refusal; it no longer expires (it waits)."""
    names = {"#status": "status"}
    values: dict[str, Any] = {
        ":refused": {"S": Outcome.SOLD_OUT.value},
        ":to": {"S": Outcome.WAITLISTED.value},
        ":changed_at": {"S": stamp},
        ":lane": number(action.place.lane),
        ":place": {"S": action.place.order},
    }
    sets = _record_answer(action.answer, values, names)
    sets += ["#status = :to", "status_changed_at = :changed_at", f"{WAITLIST_LANE} = :lane"]
    sets.append(f"{WAITLIST_PLACE} = :place")
    return {
        "UpdateExpression": "SET " + ", ".join(sets) + " REMOVE expires_at",
        "ConditionExpression": "#status = :refused",
        "ExpressionAttributeNames": names,
        "ExpressionAttributeValues": values,
    }


def _offer_record(action: OfferRecord, stamp: str) -> dict[str, Any]:
    """The waiting entry's record becomes a hold of its seats (the OFFERED answer, its shard item
    and pool items), in the holds' index until it expires and in the offers' outbox until its
    outcome is published; guarded on WAITLISTED."""
    answer = action.answer
    if answer.hold_expires_at is None:
        raise ValueError(f"the offer to {answer.reservation_id!r} has no expiry")
    rid = answer.reservation_id
    names = {"#status": "status"}
    values: dict[str, Any] = {
        ":waiting": {"S": Outcome.WAITLISTED.value},
        ":to": {"S": Outcome.HELD.value},
        ":changed_at": {"S": stamp},
        ":holds": {"S": f"{HOLDS_PREFIX}{hold_shard(rid)}"},
        ":expires": number(answer.hold_expires_at),
        ":offers": {"S": f"{OFFERS_PREFIX}{offer_bucket(rid)}"},
        ":offered_at": number(int(time.time() * 1000)),
    }
    sets = _record_answer(answer, values, names)
    sets += ["#status = :to", "status_changed_at = :changed_at", "gsi1pk = :holds", "gsi1sk = :expires"]
    sets += ["gsi2pk = :offers", "gsi2sk = :offered_at"]
    removes = [WAITLIST_LANE, WAITLIST_PLACE, "#position", "#remaining"]
    names.update({"#position": "position", "#remaining": "remaining"})
    if action.shard:
        sets.append("#shard = :shard")
        names["#shard"] = "shard"
        values[":shard"] = number(action.shard)
    if action.pools:
        sets.append(f"{POOL_NAMES} = :pools")
        values[":pools"] = pool_names_value(action.pools)
    if action.counted:
        sets.append("customer_counted = :counted")
        values[":counted"] = {"BOOL": True}
    return {
        "UpdateExpression": "SET " + ", ".join(sets) + " REMOVE " + ", ".join(removes),
        "ConditionExpression": "#status = :waiting",
        "ExpressionAttributeNames": names,
        "ExpressionAttributeValues": values,
    }


def _end_entry(action: EndEntry, stamp: str) -> dict[str, Any]:
    """A waiting entry's record moves on without an offer (left, or refused), guarded on
    WAITLISTED, and expires at `expires_at`."""
    names = {"#status": "status"}
    values: dict[str, Any] = {
        ":waiting": {"S": Outcome.WAITLISTED.value},
        ":to": {"S": action.to.value},
        ":changed_at": {"S": stamp},
        ":expires_at": number(action.expires_at),
    }
    sets = _record_answer(action.answer, values, names) if action.answer is not None else []
    sets += ["#status = :to", "status_changed_at = :changed_at", "expires_at = :expires_at"]
    removes = [WAITLIST_LANE, WAITLIST_PLACE]
    if action.answer is not None:
        removes.append("#position")
        names["#position"] = "position"
    if action.announce:
        rid = action.reservation_id
        sets += ["gsi2pk = :offers", "gsi2sk = :announced_at"]
        values[":offers"] = {"S": f"{OFFERS_PREFIX}{offer_bucket(rid)}"}
        values[":announced_at"] = number(int(time.time() * 1000))
    return {
        "UpdateExpression": "SET " + ", ".join(sets) + " REMOVE " + ", ".join(removes),
        "ConditionExpression": "#status = :waiting",
        "ExpressionAttributeNames": names,
        "ExpressionAttributeValues": values,
    }


def _move_held(action: MoveHeld, _: str) -> dict[str, Any]:
    """Held seats of the list (and as much capacity) onto or off a shard item; off it guarded on
    it holding them."""
    update: dict[str, Any] = {
        "UpdateExpression": "SET #capacity = #capacity + :seats, held = held + :seats",
        "ConditionExpression": "attribute_exists(pk)",
        "ExpressionAttributeNames": {"#capacity": "capacity"},
        "ExpressionAttributeValues": {":seats": number(action.seats)},
    }
    values, names = update["ExpressionAttributeValues"], update["ExpressionAttributeNames"]
    if action.seats < 0:
        update["ConditionExpression"] += " AND held >= :off"
        values[":off"] = number(-action.seats)
    if action.capacity is not None:
        update["ConditionExpression"] += " AND #capacity = :was"
        values[":was"] = number(action.capacity)
    if action.waitlist is not None:
        update["ConditionExpression"] += " AND " + _rule_condition(action.waitlist, names, values)
    return update


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
    ChangeLane: _change_lane,
    JoinRecord: _join_record,
    OfferRecord: _offer_record,
    EndEntry: _end_entry,
    MoveHeld: _move_held,
}
