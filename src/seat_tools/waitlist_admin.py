"""The operator's commands on waiting lists (`seats waitlist open|close|show`,
docs/guides/waiting-list.md): opening a class's list (its list item and lanes, then the rule that
seats given back go to it on every item that holds its seats: a counted class's shard items, a
mapped class's row items), closing it (the rule off first, then the list's seats back on sale),
and what a list holds.
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
    row_key,
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
    SeatState,
    WaitingList,
    fence_key,
)
from seat_inventory.transaction import added_seats_actions, list_refusal
from seat_tools.operator_errors import InventoryChangeRefused, UnknownSeatClass


@dataclass(frozen=True, slots=True)
class _ClassItems:
    """The items holding a class's seats (their keys), its sale's end, and whether it is mapped."""

    items: list[dict[str, Any]]
    sale_ends_at: int | None
    mapped: bool


@dataclass(frozen=True, slots=True)
class WaitlistView:
    """A class's list as `seats waitlist show` prints it: the list, its first entries, and the
    seats set aside for it."""

    waiting_list: WaitingList
    head: tuple[Place, ...]
    seats_set_aside: int


class WaitlistAdmin(WaitlistQueries, SeatRows):
    """`open_waitlist`, `close_waitlist` and `waitlist_view` on the table."""

    def open_waitlist(self, key: SeatKey, *, offer_seconds: int, until: int | None = None) -> WaitingList:
        """Opens (or reopens, with new settings) a class's list; offers end by the sale's end."""
        if not MIN_OFFER_SECONDS <= offer_seconds <= MAX_OFFER_SECONDS:
            raise ValueError(
                f"an offer lasts {MIN_OFFER_SECONDS} to {MAX_OFFER_SECONDS} seconds, got {offer_seconds}"
            )
        held = self._seats_held_by(key)
        ends = [t for t in (until, held.sale_ends_at) if t is not None]
        until = min(ends) if ends else None
        self._put_list(key, open_=True, offer_seconds=offer_seconds, until=until, mapped=held.mapped)
        for lane in range(WAITLIST_LANES):
            self._open_lane(key, lane, offer_seconds, until)
        for item_key in held.items:
            self._set_rule(key, item_key, on=True)
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
        if item is None and self._seats_held_by(key).mapped:
            raise InventoryChangeRefused(
                f"{key.event_id} {key.seat_class} is a mapped class: its seats are its map's"
                " (seats unblocked with `seats event unblock` go to its list)"
            )
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
        waiting = self.read_waitlist(key)
        if waiting is None:
            raise UnknownSeatClass(f"{key.event_id} {key.seat_class} has no waiting list")
        held = self._seats_held_by(key)
        for item_key in held.items:
            self._set_rule(key, item_key, on=False)
        self._put_list(
            key, open_=False, offer_seconds=waiting.offer_seconds, until=waiting.until, mapped=held.mapped
        )
        for lane in range(WAITLIST_LANES):
            call(
                self._client.update_item,
                TableName=self._table_name,
                Key=lane_key(key, lane),
                UpdateExpression="SET #open = :closed",
                ExpressionAttributeNames={"#open": "open"},
                ExpressionAttributeValues={":closed": {"BOOL": False}},
            )
        back = self._listed(key, held.mapped)
        if not back.seats:
            return 0
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
        set_aside = self._listed(key, mapped=True).seats if waiting.mapped else waiting.seats_held
        return WaitlistView(waiting, tuple(places[:head]), set_aside)

    def _seats_held_by(self, key: SeatKey) -> _ClassItems:
        """The items holding the class's seats (each carries the list rule), and its sale's end."""
        item = self.read_inventory(key)
        if item is not None:
            shards = [inventory_key(key, shard) for shard in range(item.shard_items)]
            return _ClassItems(shards, item.sale_ends_at, mapped=False)
        rows = self.read_seat_rows(key)
        if not rows:
            raise UnknownSeatClass(f"event {key.event_id!r} has no seat class {key.seat_class!r}")
        first = next(iter(rows.values()))
        return _ClassItems([row_key(key, row_id) for row_id in sorted(rows)], first.sale_ends_at, mapped=True)

    def _listed(self, key: SeatKey, mapped: bool) -> ListedReturn:
        """Every seat the list holds, to go back on sale: a counted class's in its lanes' ledgers, a
        mapped class's in state L on its row items (read strongly consistently)."""
        if not mapped:
            waiting = self.read_waitlist(key)
            assert waiting is not None
            ledgers = {lane.lane: dict(lane.seats) for lane in waiting.lanes if lane.seats_held}
            return ListedReturn(key, ledgers=ledgers, empty=False)
        row_ids = list(self.read_seat_rows(key))
        rows = self.read_seat_rows(key, row_ids)
        listed = {
            row_id: positions
            for row_id, row in rows.items()
            if (positions := tuple(sorted(p for p, s in row.states.items() if s is SeatState.LISTED)))
        }
        pools = next(iter(rows.values())).pools if rows else ()
        return ListedReturn(key, rows=listed, pools=pools, empty=False)

    def _put_list(
        self, key: SeatKey, *, open_: bool, offer_seconds: int, until: int | None, mapped: bool
    ) -> None:
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
        if mapped:  # its seats are its row items' in state L
            item["mapped"] = {"BOOL": True}
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

    def _set_rule(self, key: SeatKey, item_key: dict[str, Any], *, on: bool) -> None:
        """The rule on one item of the class: seats given back go to the list (`on`) or on sale."""
        request: dict[str, Any] = {
            "TableName": self._table_name,
            "Key": item_key,
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
            raise UnknownSeatClass(f"{key.event_id} {key.seat_class} has no item {item_key['sk']['S']}")
