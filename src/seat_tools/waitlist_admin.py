"""The operator's commands on waiting lists (`seats waitlist open|close|show`,
docs/guides/waiting-list.md): opening a counted class's list (its list item and lanes, then the
rule on every shard item that seats given back go to it), closing it (the rule off first, then
the list's seats back on sale), and what a list holds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from seat_inventory.dal.errors import CONDITION_FAILED, call, call_expecting
from seat_inventory.dal.items import (
    LIST_SK,
    LISTS_PREFIX,
    WAITLIST_RULE,
    inventory_key,
    lane_key,
    list_bucket,
    list_key,
    number,
)
from seat_inventory.dal.seat_rows import SeatRows
from seat_inventory.dal.waitlist import WaitlistQueries
from seat_inventory.models import (
    MAX_OFFER_SECONDS,
    MIN_OFFER_SECONDS,
    WAITLIST_LANES,
    ListedReturn,
    Place,
    SeatKey,
    WaitingList,
    fence_key,
)
from seat_inventory.transaction import added_seats_actions, list_refusal
from seat_tools.operator_errors import InventoryChangeRefused, UnknownSeatClass


@dataclass(frozen=True, slots=True)
class WaitlistView:
    """A class's list as `seats waitlist show` prints it: the list, and its first entries."""

    waiting_list: WaitingList
    head: tuple[Place, ...]


class WaitlistAdmin(WaitlistQueries, SeatRows):
    """`open_waitlist`, `close_waitlist` and `waitlist_view` on the table."""

    def open_waitlist(self, key: SeatKey, *, offer_seconds: int, until: int | None = None) -> WaitingList:
        """Opens (or reopens, with new settings) a counted class's list; offers end by the sale's end."""
        if not MIN_OFFER_SECONDS <= offer_seconds <= MAX_OFFER_SECONDS:
            raise ValueError(
                f"an offer lasts {MIN_OFFER_SECONDS} to {MAX_OFFER_SECONDS} seconds, got {offer_seconds}"
            )
        item = self.read_inventory(key)
        if item is None:
            raise UnknownSeatClass(f"event {key.event_id!r} has no seat class {key.seat_class!r}")
        seat_map = self.read_seat_map(key.event_id)
        if seat_map is not None and key.seat_class in seat_map.classes:
            raise InventoryChangeRefused(
                f"{key.event_id} {key.seat_class} is a mapped class: waiting lists serve counted classes"
            )
        ends = [t for t in (until, item.sale_ends_at) if t is not None]
        until = min(ends) if ends else None
        self._put_list(key, open_=True, offer_seconds=offer_seconds, until=until)
        for lane in range(WAITLIST_LANES):
            self._open_lane(key, lane, offer_seconds, until)
        for shard in range(item.shard_items):
            self._set_rule(key, shard, on=True)
        opened = self.read_waitlist(key)
        assert opened is not None
        return opened

    def add_waitlist_seats(self, key: SeatKey, seats: int) -> WaitingList:
        """Adds `seats` to a class with an open list, set aside for it (offered by the sweeper's next
        run): one transaction guarded on the capacity read, so a retry after a lost reply is refused
        rather than adding twice."""
        if seats < 1:
            raise ValueError(f"seats to add must be at least 1, got {seats}")
        item = self.read_inventory(key)
        if item is None:
            raise UnknownSeatClass(f"event {key.event_id!r} has no seat class {key.seat_class!r}")
        if not item.waitlist:
            raise InventoryChangeRefused(f"{key.event_id} {key.seat_class} has no open waiting list")
        if item.pools:
            raise InventoryChangeRefused(
                f"{key.event_id} {key.seat_class} is in capacity pools: add seats with `seats event capacity`"
            )
        capacity = item.shard_seats()[0].capacity
        refused = self._transact(added_seats_actions(key, seats, capacity=capacity, lane=0), list_refusal)
        if refused is not None:
            raise InventoryChangeRefused(
                f"the capacity or the waiting list of {key.event_id} {key.seat_class} changed meanwhile"
                " (see `seats waitlist show`); nothing was added"
            )
        added = self.read_waitlist(key)
        assert added is not None
        return added

    def close_waitlist(self, key: SeatKey) -> int:
        """Closes a class's list: seats given back go on sale again, the list offers no more, and
        the seats it held go back on sale. Its entries stay (reopening serves them). Returns the
        seats put back on sale."""
        item = self.read_inventory(key)
        waiting = self.read_waitlist(key)
        if item is None or waiting is None:
            raise UnknownSeatClass(f"{key.event_id} {key.seat_class} has no waiting list")
        for shard in range(item.shard_items):
            self._set_rule(key, shard, on=False)
        self._put_list(key, open_=False, offer_seconds=waiting.offer_seconds, until=waiting.until)
        for lane in range(WAITLIST_LANES):
            call(
                self._client.update_item,
                TableName=self._table_name,
                Key=lane_key(key, lane),
                UpdateExpression="SET #open = :closed",
                ExpressionAttributeNames={"#open": "open"},
                ExpressionAttributeValues={":closed": {"BOOL": False}},
            )
        now = self.read_waitlist(key)
        assert now is not None
        ledgers = {lane.lane: dict(lane.seats) for lane in now.lanes if lane.seats_held}
        if not ledgers:
            return 0
        back = ListedReturn(key, ledgers=ledgers, empty=False)
        if self.return_listed(back) is not None:
            raise InventoryChangeRefused(
                f"the seats of {key.event_id} {key.seat_class}'s list changed; close it again"
            )
        return back.seats

    def waitlist_view(self, key: SeatKey, *, head: int = 10) -> WaitlistView | None:
        """The list and its first `head` entries in join order (None: the class never had one)."""
        waiting = self.read_waitlist(key)
        if waiting is None:
            return None
        places: list[Place] = []
        end = fence_key(10**13 - 1)
        for lane in waiting.lanes:
            if lane.waiting:
                places.extend(self.read_places(key, lane.lane, after="", before=end, limit=head))
        places.sort(key=lambda p: p.order)
        return WaitlistView(waiting, tuple(places[:head]))

    def _put_list(self, key: SeatKey, *, open_: bool, offer_seconds: int, until: int | None) -> None:
        item: dict[str, Any] = {
            **list_key(key),
            "entity": {"S": "waitlist"},
            "event_id": {"S": key.event_id},
            "seat_class": {"S": key.seat_class},
            "open": {"BOOL": open_},
            "offer_seconds": number(offer_seconds),
        }
        if until is not None:
            item["until"] = number(until)
        if open_:  # an open list is in the sweeper's index, for its rounds
            item["gsi1pk"] = {"S": f"{LISTS_PREFIX}{list_bucket(key)}"}
            item["gsi1sk"] = number(0)
        assert item["sk"]["S"] == LIST_SK
        call(self._client.put_item, TableName=self._table_name, Item=item)

    def _open_lane(self, key: SeatKey, lane: int, offer_seconds: int, until: int | None) -> None:
        values: dict[str, Any] = {
            ":open": {"BOOL": True},
            ":offer_seconds": number(offer_seconds),
            ":lane": number(lane),
            ":zero": number(0),
            ":start": {"S": fence_key(0)},
            ":none": {"M": {}},
        }
        sets = [
            "#open = :open",
            "offer_seconds = :offer_seconds",
            "lane = :lane",
            "waiting = if_not_exists(waiting, :zero)",
            "frontier = if_not_exists(frontier, :start)",
            "seats = if_not_exists(seats, :none)",
            "event_id = :event_id",
            "seat_class = :seat_class",
        ]
        values[":event_id"], values[":seat_class"] = {"S": key.event_id}, {"S": key.seat_class}
        expression = "SET " + ", ".join(sets)
        if until is not None:
            expression += ", #until = :until"
            values[":until"] = number(until)
        else:
            expression += " REMOVE #until"
        call(
            self._client.update_item,
            TableName=self._table_name,
            Key=lane_key(key, lane),
            UpdateExpression=expression,
            ExpressionAttributeNames={"#open": "open", "#until": "until"},
            ExpressionAttributeValues=values,
        )

    def _set_rule(self, key: SeatKey, shard: int, *, on: bool) -> None:
        """The rule on one shard item: seats given back go to the list (`on`) or on sale."""
        request: dict[str, Any] = {
            "TableName": self._table_name,
            "Key": inventory_key(key, shard),
            "ConditionExpression": "attribute_exists(pk)",
            "ExpressionAttributeNames": {"#rule": WAITLIST_RULE},
        }
        if on:
            request["UpdateExpression"] = "SET #rule = :on"
            request["ExpressionAttributeValues"] = {":on": {"BOOL": True}}
        else:
            request["UpdateExpression"] = "REMOVE #rule"
        refused = call_expecting(CONDITION_FAILED, self._client.update_item, **request)
        if isinstance(refused, ClientError):
            raise UnknownSeatClass(f"{key.event_id} {key.seat_class} has no shard item {shard}")
