"""Multi-line orders on moto (docs/guides/orders.md): every new DynamoDB expression path of the order's
one transaction (`take` of several parts: success, each kind of condition failed,
an item missing) and of its status changes (`change_status` over every line), and the
handler end to end."""

from __future__ import annotations

import dataclasses
import json

import pytest

from seat_inventory.logic.inventory_hints import InventoryHints
from seat_inventory.logic.seat_map import load_json
from seat_inventory.logic.sweep_holds import release_expired_holds
from seat_inventory.models import (
    OrderLine,
    Outcome,
    ReservationOutcome,
    SeatKey,
    SeatState,
    StoreInconsistency,
    TokenUse,
    Transition,
    pool_ref,
)
from seat_tools.operator_commands import OperatorTable
from seat_tools.seat_map_commands import SaleRules
from tests.fakes import FakeClock, RecordingPublisher
from tests.integration.conftest import Stack, sqs_event
from tests.writes import GroupWrite, commit_outcomes

SAT = SeatKey("e-1", "SAT")
PASS = SeatKey("e-1", "PASS")
PARKING = SeatKey("e-1", "PARKING")
NOW = 1_800_000_000


def order_answer(rid: str, lines: list[tuple[SeatKey, int]], outcome: Outcome = Outcome.CONFIRMED):
    pools = {SAT: ("weekend",), PASS: ("weekend",), PARKING: ()}
    return ReservationOutcome(
        reservation_id=rid,
        outcome=outcome,
        reason="why",
        event_id="e-1",
        seat_class=None,
        quantity=sum(q for _, q in lines),
        customer_id="c-1",
        message_id=f"m-{rid}",
        hold_expires_at=NOW + 600 if outcome is Outcome.HELD else None,
        lines=tuple(
            OrderLine(k.seat_class, q, pools=pools.get(k, ()), customer_counted=k == PARKING)
            for k, q in lines
        ),
    )


def order(
    rid: str, lines: list[tuple[SeatKey, int]], outcome: Outcome = Outcome.CONFIRMED, **first: object
) -> list[GroupWrite]:
    """The writes of an order: one per line, the answer and `first`'s extras on the first."""
    answer = order_answer(rid, lines, outcome)
    writes = []
    for index, (key, quantity) in enumerate(lines):
        limit = 3 if key == PARKING else None
        writes.append(
            GroupWrite(
                key,
                [answer] if index == 0 else [],
                seats_taken=quantity,
                rejection_expires_at=0,
                now=NOW,
                pools=("weekend",) if key in (SAT, PASS) else (),
                max_per_customer=limit,
                customer_seats={"c-1": quantity} if limit else {},
                order_line_held=outcome is Outcome.HELD,
                **(first if index == 0 else {}),  # type: ignore[arg-type]
            )
        )
    return writes


@pytest.fixture
def table(stack: Stack) -> OperatorTable:
    table = OperatorTable(stack.dynamodb, stack.table_name)
    table.create_pool("e-1", "weekend", 6)
    table.create_seat_class(SAT, 4, pools=["weekend"])
    table.create_seat_class(PASS, 4, pools=["weekend"])
    table.create_seat_class(PARKING, 5, max_per_customer=3)
    return table


def seats(table: OperatorTable) -> dict[str, tuple[int, int, int]]:
    found = {c.seat_class: (c.available, c.held, c.sold) for c in table.get_event("e-1")}
    pool = table.get_pool("e-1", "weekend")
    assert pool is not None
    found["weekend"] = (pool.available, pool.held, pool.sold)
    return found


UNTOUCHED = {"SAT": (4, 0, 0), "PASS": (4, 0, 0), "PARKING": (5, 0, 0), "weekend": (6, 0, 0)}


# --- the take: several writes, one transaction ---------------------------------------------------


def test_an_order_takes_every_line_and_a_shared_pool_once_and_records_its_lines(table: OperatorTable) -> None:
    assert commit_outcomes(table, order("o-1", [(SAT, 2), (PASS, 1), (PARKING, 2)])) is None

    assert seats(table) == {"SAT": (2, 0, 2), "PASS": (3, 0, 1), "PARKING": (3, 0, 2), "weekend": (3, 0, 3)}
    record = table.get_reservation_record("o-1")
    assert record is not None and record.answer.lines is not None
    assert [(t.key.seat_class, t.quantity, t.pools, t.customer_counted) for t in record.takes()] == [
        ("SAT", 2, ("weekend",), False),
        ("PASS", 1, ("weekend",), False),
        ("PARKING", 2, (), True),
    ]


def test_a_line_without_seats_refuses_the_order_and_nothing_is_written(table: OperatorTable) -> None:
    refused = commit_outcomes(table, order("o-1", [(SAT, 2), (PARKING, 1), (PASS, 5)]))

    assert refused is not None and refused.inventory_refused
    assert refused.parts[0] is None and refused.parts[1] is None
    part = refused.parts[2]
    assert part is not None and part.inventory is not None and part.inventory.seat_class == "PASS"
    assert seats(table) == UNTOUCHED and table.get_reservation("o-1") is None


def test_a_pool_that_the_lines_pass_together_refuses_the_order(table: OperatorTable) -> None:
    # Each line fits its class and the pool alone (4 + 3 > 6 together)
    refused = commit_outcomes(table, order("o-1", [(SAT, 4), (PASS, 3)]))

    assert refused is not None and not refused.inventory_refused
    pool = refused.pools_refused["weekend"]
    assert pool is not None and pool.available == 6
    assert seats(table) == UNTOUCHED


def test_a_counter_over_the_limit_is_reported_for_its_line(table: OperatorTable) -> None:
    assert commit_outcomes(table, order("o-1", [(PARKING, 2)])) is None
    refused = commit_outcomes(table, order("o-2", [(SAT, 1), (PARKING, 2)]))

    assert refused is not None and refused.parts[0] is None
    part = refused.parts[1]
    assert part is not None and part.customer_seats == {"c-1": 2}
    assert seats(table)["SAT"] == (4, 0, 0)


def test_a_spent_token_and_an_existing_record_are_reported(table: OperatorTable) -> None:
    use = TokenUse("t-1", "o-1", NOW + 600)
    assert commit_outcomes(table, order("o-1", [(SAT, 1), (PARKING, 1)], token_uses=[use])) is None

    replay = commit_outcomes(table, order("o-2", [(SAT, 1)], token_uses=[TokenUse("t-1", "o-2", NOW + 600)]))
    again = commit_outcomes(table, order("o-1", [(SAT, 1), (PARKING, 1)], token_uses=[use]))

    assert replay is not None and replay.tokens_used == {"t-1": "o-1"}
    assert again is not None and set(again.already_recorded) == {"o-1"}
    assert seats(table)["SAT"] == (3, 0, 1)


def test_a_line_whose_class_item_is_missing_refuses_the_order(table: OperatorTable) -> None:
    refused = commit_outcomes(table, order("o-1", [(SAT, 1), (SeatKey("e-1", "VIP"), 1)]))

    assert refused is not None and refused.inventory_refused and refused.inventory is None
    part = refused.parts[1]
    assert part is not None and part.inventory_refused and part.inventory is None
    assert seats(table) == UNTOUCHED


def test_a_sharded_line_takes_from_its_shard_with_seats_moved_in_and_gives_them_back_there(
    table: OperatorTable,
) -> None:
    # Given FLOOR over 2 shard items of 3 seats; the line takes 4 on shard 1, moving 1 from shard 0
    floor = SeatKey("e-1", "FLOOR")
    table.create_seat_class(floor, 6, shards=2)
    writes = order("o-1", [(SAT, 1)])
    answer = dataclasses.replace(
        writes[0].outcomes[0],
        quantity=5,
        lines=(*(writes[0].outcomes[0].lines or ()), OrderLine("FLOOR", 4, shard=1)),
    )
    line = GroupWrite(floor, [], 4, 0, now=NOW, shard=1, moves={0: 1}, order_line_held=False)
    assert commit_outcomes(table, [dataclasses.replace(writes[0], outcomes=[answer]), line]) is None
    shards = {s.shard: (s.capacity, s.available, s.sold) for s in table.read_inventory(floor).shard_seats()}  # type: ignore[union-attr]
    assert shards == {0: (2, 2, 0), 1: (4, 0, 4)}

    # When a donor has fewer seats than the move asks, nothing is written
    short = GroupWrite(floor, [], 3, 0, now=NOW, shard=1, moves={0: 3}, order_line_held=False)
    refused = commit_outcomes(table, [*order("o-2", [(SAT, 1)]), short])
    assert refused is not None and refused.parts[1] is not None and refused.parts[1].inventory_refused
    assert seats(table)["SAT"] == (3, 0, 1)

    # And a cancel gives the line's seats back to shard 1, where they came from
    assert transition(table, "o-1", Outcome.CANCELLED) is None
    shards = {s.shard: (s.capacity, s.available, s.sold) for s in table.read_inventory(floor).shard_seats()}  # type: ignore[union-attr]
    assert shards == {0: (2, 2, 0), 1: (4, 4, 0)}


def test_writes_of_one_class_twice_are_refused_before_any_call(table: OperatorTable) -> None:
    with pytest.raises(ValueError, match="distinct classes of one event"):
        commit_outcomes(table, order("o-1", [(SAT, 1), (SAT, 1)]))


# --- lines on a sharded pool (docs/guides/pools.md): each on the item its class shard routes to ---------

STALLS = SeatKey("e-1", "STALLS")
CIRCLE = SeatKey("e-1", "CIRCLE")


@pytest.fixture
def hall(table: OperatorTable) -> OperatorTable:
    # A hall of 8 over 4 items (2 each), shared by STALLS over 4 shards and CIRCLE of one item.
    table.create_pool("e-1", "hall", 8, shards=4)
    table.create_seat_class(STALLS, 20, shards=4, pools=["hall"])
    table.create_seat_class(CIRCLE, 20, pools=["hall"])
    return table


def hall_order(
    rid: str,
    stalls: tuple[int, int, dict[int, int]],
    circle: tuple[int, dict[int, int]],
    outcome: Outcome = Outcome.CONFIRMED,
) -> list[GroupWrite]:
    """STALLS (seats, class shard, moves into its pool item) and CIRCLE (seats, moves into pool
    item 0): STALLS takes from hall item (class shard mod 4), and its line names that item."""
    (quantity, shard, stalls_moves), (circle_quantity, circle_moves) = stalls, circle
    lines = (
        OrderLine("STALLS", quantity, shard=shard, pools=(pool_ref("hall", shard % 4),)),
        OrderLine("CIRCLE", circle_quantity, pools=("hall",)),
    )
    answer = dataclasses.replace(
        order_answer(rid, [], outcome), quantity=quantity + circle_quantity, lines=lines
    )
    held = outcome is Outcome.HELD
    common = {"rejection_expires_at": 0, "now": NOW, "pools": ("hall",), "order_line_held": held}
    return [
        GroupWrite(
            STALLS,
            [answer],
            quantity,
            shard=shard,
            pool_shards={"hall": shard % 4},
            pool_moves={"hall": stalls_moves},
            **common,  # type: ignore[arg-type]
        ),
        GroupWrite(CIRCLE, [], circle_quantity, pool_moves={"hall": circle_moves}, **common),  # type: ignore[arg-type]
    ]


def hall_items(table: OperatorTable) -> list[tuple[int, int, int, int]]:
    """Each hall item's (capacity, available, held, sold), checked against the invariant."""
    pool = table.get_pool("e-1", "hall")
    assert pool is not None and pool.complete and pool.capacity == 8
    for s in pool.shards:
        assert s.available + s.held + s.sold == s.capacity and s.available >= 0
    return [(s.capacity, s.available, s.held, s.sold) for s in pool.shards]


def test_an_order_line_takes_from_pool_item_n_names_it_and_gets_its_seats_back_there(
    hall: OperatorTable,
) -> None:
    # STALLS on class shard 3 takes from hall item 3, CIRCLE from item 0
    assert commit_outcomes(hall, hall_order("o-1", (2, 3, {}), (1, {}), Outcome.HELD)) is None

    assert hall_items(hall) == [(2, 1, 1, 0), (2, 2, 0, 0), (2, 2, 0, 0), (2, 0, 2, 0)]
    record = hall.get_reservation_record("o-1")
    assert record is not None
    assert [(t.key.seat_class, t.shard, t.pools) for t in record.takes()] == [
        ("STALLS", 3, ("hall#3",)),
        ("CIRCLE", 0, ("hall",)),
    ]
    assert transition(hall, "o-1", Outcome.CONFIRMED) is None
    assert hall_items(hall) == [(2, 1, 0, 1), (2, 2, 0, 0), (2, 2, 0, 0), (2, 0, 0, 2)]
    assert transition(hall, "o-1", Outcome.CANCELLED) is None
    assert hall_items(hall) == [(2, 2, 0, 0)] * 4


def test_a_pool_item_without_room_refuses_the_order_and_hands_back_that_item_alone(
    hall: OperatorTable,
) -> None:
    # STALLS on class shard 1 wants 3 of hall item 1's 2 (the hall has 8)
    refused = commit_outcomes(hall, hall_order("o-1", (3, 1, {}), (1, {})))

    assert refused is not None and not refused.inventory_refused
    item = refused.pools_refused["hall"]
    assert item is not None and (item.shard, item.available, item.complete) == (1, 2, False)
    assert hall_items(hall) == [(2, 2, 0, 0)] * 4 and hall.get_reservation("o-1") is None


def test_lines_on_one_pool_item_are_guarded_on_their_sum_and_take_seats_moved_in(hall: OperatorTable) -> None:
    # Two lines on item 0 (STALLS on class shard 0): 2 + 1 seats, each fits item 0 alone
    refused = commit_outcomes(hall, hall_order("o-1", (2, 0, {}), (1, {})))
    assert refused is not None and refused.pools_refused["hall"] is not None
    assert refused.pools_refused["hall"].shard == 0  # type: ignore[union-attr]
    assert hall_items(hall) == [(2, 2, 0, 0)] * 4

    # With seats moved into item 0 from items 1 (2) and 2 (1), both lines are taken in one update
    assert commit_outcomes(hall, hall_order("o-1", (2, 0, {1: 2}), (3, {2: 1}))) is None
    assert hall_items(hall) == [(5, 0, 0, 5), (0, 0, 0, 0), (1, 1, 0, 0), (2, 2, 0, 0)]


def test_a_line_s_pool_item_takes_and_gives_seats_to_another_line_s_item_in_one_update(
    hall: OperatorTable,
) -> None:
    # Item 1 (STALLS on class shard 1) takes 2 and gives 1 to item 0: it needs 3, it has 2
    refused = commit_outcomes(hall, hall_order("o-1", (2, 1, {}), (3, {1: 1})))
    assert refused is not None
    assert refused.pools_refused["hall"] is not None and refused.pools_refused["hall"].shard == 1  # type: ignore[union-attr]
    assert hall_items(hall) == [(2, 2, 0, 0)] * 4

    # Item 1 takes 1 and gives 1: item 0 takes 3 with it
    assert commit_outcomes(hall, hall_order("o-1", (1, 1, {}), (3, {1: 1}))) is None
    assert hall_items(hall) == [(3, 0, 0, 3), (1, 0, 0, 1), (2, 2, 0, 0), (2, 2, 0, 0)]
    assert transition(hall, "o-1", Outcome.CANCELLED) is None
    assert hall_items(hall) == [(3, 3, 0, 0), (1, 1, 0, 0), (2, 2, 0, 0), (2, 2, 0, 0)]


def test_a_missing_pool_item_refuses_an_order_line_and_its_give_back(
    stack: Stack, hall: OperatorTable
) -> None:
    assert commit_outcomes(hall, hall_order("o-1", (1, 3, {}), (1, {}))) is None
    stack.dynamodb.delete_item(
        TableName=stack.table_name, Key={"pk": {"S": "EVENT#e-1#SHARD#3"}, "sk": {"S": "POOL#hall"}}
    )

    refused = commit_outcomes(hall, hall_order("o-2", (1, 3, {}), (1, {})))
    assert refused is not None and refused.pools_refused == {"hall": None}
    given_back = transition(hall, "o-1", Outcome.CANCELLED)
    assert given_back is not None and given_back.pools_refused == frozenset({"hall#3"})
    record = hall.get_reservation_record("o-1")
    assert record is not None and record.status is Outcome.CONFIRMED  # nothing given back


# --- a mapped line (docs/guides/seat-maps.md): its row items, each guarded on exactly its seats ------------

FLOOR = SeatKey("e-1", "FLOOR")
FLOOR_MAP = load_json(
    json.dumps(
        {
            "classes": {"FLOOR": {}},
            "sections": [{"id": "F", "class": "FLOOR", "rows": [{"id": "R1", "seats": 6}]}],
        }
    )
)


def mapped_order(
    rid: str, positions: tuple[int, ...], outcome: Outcome = Outcome.CONFIRMED
) -> list[GroupWrite]:
    """An order of 1 Saturday ticket and chosen FLOOR seats (no limit on FLOOR)."""
    seats_ids = tuple(f"F-R1-{p}" for p in positions)
    writes = order(rid, [(SAT, 1)], outcome)
    answer = writes[0].outcomes[0]
    lines = (*(answer.lines or ()), OrderLine("FLOOR", len(positions), seats=seats_ids))
    first = dataclasses.replace(
        writes[0], outcomes=[dataclasses.replace(answer, quantity=1 + len(positions), lines=lines)]
    )
    floor = GroupWrite(
        FLOOR,
        [],
        len(positions),
        0,
        now=NOW,
        rows={"F-R1#0": positions},
        order_line_held=outcome is Outcome.HELD,
    )
    return [first, floor]


def floor_row(table: OperatorTable):
    return table.read_seat_rows(FLOOR, ["F-R1#0"])["F-R1#0"]


def test_a_mapped_line_takes_its_seats_with_the_counted_lines_or_nothing(table: OperatorTable) -> None:
    table.create_seat_map("e-1", FLOOR_MAP, SaleRules())
    assert commit_outcomes(table, mapped_order("o-1", (2, 3), Outcome.HELD)) is None
    row = floor_row(table)
    assert (row.states, row.available, row.held) == ({2: SeatState.HELD, 3: SeatState.HELD}, 4, 2)
    assert seats(table)["SAT"] == (3, 1, 0)

    # Condition failed: a seat of the mapped line is taken: the row comes back, nothing is written
    refused = commit_outcomes(table, mapped_order("o-2", (3, 4)))
    assert refused is not None and refused.parts[0] is None
    part = refused.parts[1]
    assert part is not None and part.rows["F-R1#0"] is not None and 3 in part.rows["F-R1#0"].states  # type: ignore[union-attr]
    assert seats(table)["SAT"] == (3, 1, 0) and floor_row(table).available == 4

    # The whole held order confirmed, then cancelled: the seats follow on their row
    assert transition(table, "o-1", Outcome.CONFIRMED) is None
    assert floor_row(table).states == {2: SeatState.SOLD, 3: SeatState.SOLD}
    assert transition(table, "o-1", Outcome.CANCELLED) is None
    assert (floor_row(table).states, floor_row(table).available) == ({}, 6)
    assert seats(table)["SAT"] == (4, 0, 0)


def test_a_mapped_line_whose_row_item_is_missing_refuses_the_order(table: OperatorTable) -> None:
    refused = commit_outcomes(table, mapped_order("o-1", (1,)))
    assert refused is not None and refused.parts[1] is not None
    assert refused.parts[1].rows == {"F-R1#0": None}
    assert seats(table) == UNTOUCHED


def test_a_change_whose_mapped_seats_are_not_as_recorded_is_an_inconsistency(
    stack: Stack, table: OperatorTable
) -> None:
    table.create_seat_map("e-1", FLOOR_MAP, SaleRules())
    commit_outcomes(table, mapped_order("o-1", (5,)))
    stack.dynamodb.update_item(
        TableName=stack.table_name,
        Key={"pk": {"S": "SEATROW#e-1#FLOOR#F"}, "sk": {"S": "ROW#F-R1#0"}},
        UpdateExpression="REMOVE p5",
    )
    with pytest.raises(StoreInconsistency):
        transition(table, "o-1", Outcome.CANCELLED)
    assert seats(table)["SAT"] == (3, 0, 1)


# --- the whole order's status changes -----------------------------------------------------------


def transition(table: OperatorTable, rid: str, to: Outcome):
    record = table.get_reservation_record(rid)
    assert record is not None
    return table.change_status(SAT, [Transition(record, to)], now=NOW, capacity=4, release_expires_at=NOW + 1)


def test_confirm_then_cancel_move_every_line_its_pool_and_its_counter(table: OperatorTable) -> None:
    commit_outcomes(table, order("o-1", [(SAT, 2), (PASS, 1), (PARKING, 2)], Outcome.HELD))
    assert seats(table) == {"SAT": (2, 2, 0), "PASS": (3, 1, 0), "PARKING": (3, 2, 0), "weekend": (3, 3, 0)}

    assert transition(table, "o-1", Outcome.CONFIRMED) is None
    assert seats(table) == {"SAT": (2, 0, 2), "PASS": (3, 0, 1), "PARKING": (3, 0, 2), "weekend": (3, 0, 3)}

    assert transition(table, "o-1", Outcome.CANCELLED) is None
    assert seats(table) == UNTOUCHED
    # The parking counter went back with its line: the customer may take 3 again.
    assert commit_outcomes(table, order("o-2", [(PARKING, 3)])) is None


def test_a_change_of_an_order_already_changed_is_refused_and_moves_nothing(table: OperatorTable) -> None:
    commit_outcomes(table, order("o-1", [(SAT, 2), (PARKING, 1)], Outcome.HELD))
    stale = table.get_reservation_record("o-1")
    assert stale is not None and transition(table, "o-1", Outcome.CANCELLED) is None

    refused = table.change_status(
        SAT, [Transition(stale, Outcome.CONFIRMED)], now=NOW, capacity=4, release_expires_at=NOW + 1
    )

    assert refused is not None and set(refused.records) == {"o-1"}
    assert seats(table) == UNTOUCHED


def test_a_change_whose_line_item_is_missing_is_refused(stack: Stack, table: OperatorTable) -> None:
    commit_outcomes(table, order("o-1", [(SAT, 1), (PARKING, 1)]))
    stack.dynamodb.delete_item(
        TableName=stack.table_name, Key={"pk": {"S": "EVENT#e-1"}, "sk": {"S": "CLASS#PARKING"}}
    )

    refused = transition(table, "o-1", Outcome.CANCELLED)

    assert refused is not None and refused.inventory_refused and refused.inventory is None
    assert seats(table)["SAT"] == (3, 0, 1)


def test_the_sweeper_finds_a_held_order_in_the_index_and_releases_it_whole_once(table: OperatorTable) -> None:
    commit_outcomes(table, order("o-1", [(SAT, 2), (PASS, 1), (PARKING, 1)], Outcome.HELD))
    clock = FakeClock(time=NOW + 601)
    publisher = RecordingPublisher()
    for _ in range(2):
        release_expired_holds(
            table, publisher, clock, limit=10, rejection_ttl_seconds=60, hints=InventoryHints()
        )

    assert seats(table) == UNTOUCHED
    [expired] = publisher.published
    assert (expired.reservation_id, expired.outcome, expired.quantity) == ("o-1", Outcome.EXPIRED, 4)
    assert expired.lines is not None and [line.seat_class for line in expired.lines] == [
        "SAT",
        "PASS",
        "PARKING",
    ]


# --- end to end ---------------------------------------------------------------------------------


def test_the_handler_answers_an_order_once_with_its_lines(stack: Stack, table: OperatorTable) -> None:
    body = {
        "type": "hold",
        "reservation_id": "o-1",
        "event_id": "e-1",
        "customer_id": "c-1",
        "lines": [{"seat_class": "SAT", "quantity": 2}, {"seat_class": "PARKING", "quantity": 1}],
    }
    assert stack.invoke(sqs_event(body)) == {"batchItemFailures": []}
    assert stack.invoke(sqs_event({"type": "confirm", "reservation_id": "o-1"})) == {"batchItemFailures": []}

    held, confirmed = stack.outcomes()
    assert held["outcome"] == "HELD" and held["seat_class"] is None and held["quantity"] == 3
    assert held["lines"] == [{"seat_class": "SAT", "quantity": 2}, {"seat_class": "PARKING", "quantity": 1}]
    assert confirmed["outcome"] == "CONFIRMED" and confirmed["lines"] == held["lines"]
    assert seats(table)["SAT"] == (2, 0, 2) and seats(table)["weekend"] == (4, 0, 2)


def test_the_handler_takes_a_mapped_line_and_a_counted_one_or_names_the_seat_taken(
    stack: Stack, table: OperatorTable
) -> None:
    table.create_seat_map("e-1", FLOOR_MAP, SaleRules())

    def body(rid: str, seats: list[str]) -> dict:
        lines = [{"seat_class": "SAT", "quantity": 1}, {"seat_class": "FLOOR", "seats": seats}]
        return {"reservation_id": rid, "event_id": "e-1", "customer_id": "c-1", "lines": lines}

    assert stack.invoke(sqs_event(body("o-1", ["F-R1-1", "F-R1-2"]))) == {"batchItemFailures": []}
    assert stack.invoke(sqs_event(body("o-2", ["F-R1-2"]))) == {"batchItemFailures": []}

    taken, refused = stack.outcomes()
    assert taken["outcome"] == "CONFIRMED" and taken["lines"][1]["seats"] == ["F-R1-1", "F-R1-2"]
    assert refused["outcome"] == "SEATS_TAKEN" and refused["seats"] == ["F-R1-2"]
    assert refused["reason"] == "line 2 (FLOOR): seats not free: F-R1-2"
    assert floor_row(table).states == {1: SeatState.SOLD, 2: SeatState.SOLD}
    assert seats(table)["SAT"] == (3, 0, 1)
