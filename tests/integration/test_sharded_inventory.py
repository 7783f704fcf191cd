"""A seat class split over K shard items (docs/explanation/sharding.md): every DynamoDB path on moto, and the
service's logic on top of it, sequentially (moto is not atomic under concurrency; races are
judged on DynamoDB Local in tests/local).
"""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from seat_inventory.dal.items import inventory_key
from seat_inventory.logic.change_reservations import apply_changes, settle_transitions
from seat_inventory.logic.inventory_hints import InventoryHints
from seat_inventory.logic.reserve_seats import QueueMessage, reserve_seats
from seat_inventory.models import (
    MAX_SHARDS,
    ChangeRequest,
    Outcome,
    RequestType,
    ReservationOutcome,
    SaleStatus,
    SeatClassInventory,
    SeatKey,
    ShardSurvey,
    TransactionConflict,
    Transition,
)
from seat_inventory.settings import Settings
from seat_tools.operator_commands import OperatorTable
from seat_tools.operator_errors import EventAlreadyExists, InventoryChangeRefused
from tests.fakes import FakeClock, RecordingPublisher
from tests.integration.conftest import Stack
from tests.writes import GroupWrite, commit_outcomes

KEY = SeatKey("big-1", "GA")


@pytest.fixture
def table(stack: Stack) -> OperatorTable:
    return OperatorTable(stack.dynamodb, stack.table_name)


def shard_item(stack: Stack, shard: int) -> dict[str, Any]:
    return stack.dynamodb.get_item(
        TableName=stack.table_name, Key=inventory_key(KEY, shard), ConsistentRead=True
    ).get("Item", {})


def per_shard(view: SeatClassInventory) -> list[tuple[int, int, int, int]]:
    return [(s.capacity, s.available, s.held, s.sold) for s in view.shard_seats()]


def assert_consistent(view: SeatClassInventory | None) -> SeatClassInventory:
    """Each shard and the class keep available + held + sold == capacity, none negative."""
    assert view is not None and view.complete
    for s in view.shard_seats():
        assert min(s.available, s.held, s.sold) >= 0, s
        assert s.available + s.held + s.sold == s.capacity, s
    shards = view.shard_seats()
    assert view.capacity == sum(s.capacity for s in shards)
    assert view.available == sum(s.available for s in shards)
    assert view.available + view.held + view.sold == view.capacity
    return view


def confirmed(reservation_id: str, quantity: int) -> ReservationOutcome:
    return ReservationOutcome(
        reservation_id=reservation_id,
        outcome=Outcome.CONFIRMED,
        reason="test",
        event_id=KEY.event_id,
        seat_class=KEY.seat_class,
        quantity=quantity,
        customer_id="c-1",
    )


def body(reservation_id: str, quantity: int, kind: str = "reserve", **extra: Any) -> str:
    document = {
        "reservation_id": reservation_id,
        "event_id": KEY.event_id,
        "seat_class": KEY.seat_class,
        "quantity": quantity,
        "customer_id": f"c-{reservation_id}",
        "type": kind,
        **extra,
    }
    return json.dumps(document)


class Service:
    """The service's logic, as one warm container, on the real data access (moto)."""

    def __init__(self, table: OperatorTable, seed: int = 7) -> None:
        self.table = table
        self.clock = FakeClock()
        self.publisher = RecordingPublisher()
        self.hints = InventoryHints(random.Random(seed))
        self.settings = Settings(table_name=table.table_name, outcomes_topic_arn="arn:aws:sns:us-east-1:1:t")
        self.sent = 0

    def send(self, *bodies: str) -> dict[str, ReservationOutcome]:
        messages = []
        for text in bodies:
            self.sent += 1
            messages.append(QueueMessage(f"m-{self.sent}", text))
        result = reserve_seats(
            messages, store=self.table, publisher=self.publisher, settings=self.settings,
            clock=self.clock, hints=self.hints,
        )  # fmt: skip
        assert not result.failed_message_ids
        return {o.reservation_id: o for o in result.published}


# --- layout and operator commands -----------------------------------------------------------------


def test_a_sharded_class_is_k_items_each_its_own_partition_key(stack: Stack, table: OperatorTable) -> None:
    created = table.create_seat_class(KEY, 10, shards=4)
    assert (created.capacity, created.available, created.shard_count, created.shard_items) == (10, 10, 4, 4)
    assert per_shard(created) == [(3, 3, 0, 0), (3, 3, 0, 0), (2, 2, 0, 0), (2, 2, 0, 0)]
    pks = {shard_item(stack, n)["pk"]["S"] for n in range(4)}
    assert pks == {"EVENT#big-1", "EVENT#big-1#SHARD#1", "EVENT#big-1#SHARD#2", "EVENT#big-1#SHARD#3"}
    assert not shard_item(stack, 4)
    assert table.get_event("big-1") == [created]
    with pytest.raises(EventAlreadyExists):
        table.create_seat_class(KEY, 5, shards=2)
    assert table.read_inventory(KEY) == created


def test_one_shard_keeps_todays_single_item(stack: Stack, table: OperatorTable) -> None:
    created = table.create_seat_class(KEY, 10, shards=1)
    assert created.shards == () and created.complete
    assert "shard_items" not in shard_item(stack, 0) and not shard_item(stack, 1)


def test_shard_counts_outside_1_to_max_shards_are_refused(table: OperatorTable) -> None:
    for shards in (0, MAX_SHARDS + 1):
        with pytest.raises(ValueError, match=f"1 to {MAX_SHARDS}"):
            table.create_seat_class(KEY, 10, shards=shards)


def test_sale_rules_change_on_every_shard_at_once(table: OperatorTable) -> None:
    table.create_seat_class(KEY, 8, shards=4)
    closed = table.set_sale_status(KEY, SaleStatus.CLOSED)
    assert closed.sale_status is SaleStatus.CLOSED
    for shard in range(4):  # a closed class sells on no shard
        refused = commit_outcomes(
            table,
            GroupWrite(KEY, [confirmed(f"r-{shard}", 1)], seats_taken=1, rejection_expires_at=1, shard=shard),
        )
        assert refused is not None and refused.inventory_refused
        assert refused.inventory is not None and refused.inventory.sale_status is SaleStatus.CLOSED
    table.set_sale_status(KEY, SaleStatus.OPEN)
    limited = table.set_max_per_customer(KEY, 2)
    assert limited.max_per_customer == 2 and limited.version == 3
    refused = commit_outcomes(
        table, GroupWrite(KEY, [confirmed("r-9", 1)], seats_taken=1, rejection_expires_at=1, shard=3)
    )
    assert refused is not None and refused.inventory_refused  # the assumed limit (none) is stale on shard 3
    assert table.set_sale_window(KEY, 100, 200).sale_starts_at == 100


def test_capacity_changes_spread_over_the_shards_and_never_go_below_sold_plus_held(
    table: OperatorTable,
) -> None:
    table.create_seat_class(KEY, 8, shards=4)
    assert (
        commit_outcomes(
            table, GroupWrite(KEY, [confirmed("r-1", 2)], seats_taken=2, rejection_expires_at=1, shard=1)
        )
        is None
    )
    added = assert_consistent(table.change_capacity(KEY, 5))
    assert (added.capacity, added.available, added.sold) == (13, 11, 2)
    removed = assert_consistent(table.change_capacity(KEY, -9))
    assert (removed.capacity, removed.available, removed.sold) == (4, 2, 2)
    with pytest.raises(InventoryChangeRefused, match="only 2 available"):
        table.change_capacity(KEY, -3)
    assert_consistent(table.read_inventory(KEY))
    set_to = assert_consistent(table.set_capacity(KEY, 2))
    assert (set_to.capacity, set_to.available, set_to.sold) == (2, 0, 2)
    with pytest.raises(InventoryChangeRefused):
        table.set_capacity(KEY, 1)
    assert assert_consistent(table.set_capacity(KEY, 20)).available == 18


# --- taking seats ---------------------------------------------------------------------------------


def test_seats_are_taken_from_the_shard_named_and_the_record_says_which(
    stack: Stack, table: OperatorTable
) -> None:
    table.create_seat_class(KEY, 8, shards=4)
    assert (
        commit_outcomes(
            table, GroupWrite(KEY, [confirmed("r-1", 2)], seats_taken=2, rejection_expires_at=1, shard=2)
        )
        is None
    )
    view = assert_consistent(table.read_inventory(KEY))
    assert per_shard(view) == [(2, 2, 0, 0), (2, 2, 0, 0), (2, 0, 0, 2), (2, 2, 0, 0)]
    record = table.get_reservation_record("r-1")
    assert record is not None and record.shard == 2


def test_seats_move_into_a_short_shard_in_the_same_transaction(table: OperatorTable) -> None:
    table.create_seat_class(KEY, 8, shards=4)
    refused = commit_outcomes(
        table,
        GroupWrite(
            KEY, [confirmed("r-1", 5)], seats_taken=5, rejection_expires_at=1, shard=0, moves={1: 2, 3: 1}
        ),
    )
    assert refused is None
    view = assert_consistent(table.read_inventory(KEY))
    assert (view.capacity, view.available, view.sold) == (8, 3, 5)
    assert per_shard(view) == [(5, 0, 0, 5), (0, 0, 0, 0), (2, 2, 0, 0), (1, 1, 0, 0)]


def test_a_donor_with_too_few_seats_refuses_everything_and_hands_back_only_itself(
    table: OperatorTable,
) -> None:
    table.create_seat_class(KEY, 8, shards=4)
    before = table.read_inventory(KEY)
    refused = commit_outcomes(
        table,
        GroupWrite(KEY, [confirmed("r-1", 5)], seats_taken=5, rejection_expires_at=1, shard=0, moves={1: 3}),
    )
    assert refused is not None and refused.inventory_refused
    assert refused.inventory is not None and not refused.inventory.complete
    assert refused.inventory.available == 2  # shard 1's own numbers, not the class's
    assert table.read_inventory(KEY) == before
    assert table.get_reservation("r-1") is None


def test_the_service_sells_exactly_the_capacity_and_strands_no_seat_on_any_shard(
    table: OperatorTable,
) -> None:
    """Every request needs more than some shard holds; the service still sells every seat, and
    answers SOLD_OUT only when the class as a whole has too few."""
    table.create_seat_class(KEY, 23, shards=8)
    service = Service(table)
    answers: dict[str, ReservationOutcome] = {}
    for n in range(8):
        answers.update(service.send(body(f"r-{n}", 3)))
        view = assert_consistent(table.read_inventory(KEY))
        if answers[f"r-{n}"].outcome is Outcome.SOLD_OUT:
            assert view.available < 3
    sold = sum(a.quantity or 0 for a in answers.values() if a.outcome is Outcome.CONFIRMED)
    assert sold == 21
    answers.update(service.send(body("r-last", 2), body("r-none", 1)))
    assert answers["r-last"].outcome is Outcome.CONFIRMED
    assert answers["r-none"].outcome is Outcome.SOLD_OUT
    view = assert_consistent(table.read_inventory(KEY))
    assert (view.sold, view.available) == (23, 0)
    # Every record names a shard that sold its seats.
    records = table.read_reservations([rid for rid, a in answers.items() if a.outcome is Outcome.CONFIRMED])
    by_shard: dict[int, int] = {}
    for record in records.values():
        by_shard[record.shard] = by_shard.get(record.shard, 0) + record.quantity
    assert by_shard == {s.shard: s.sold for s in view.shard_seats() if s.sold}


def test_holds_confirm_cancel_give_seats_back_to_their_own_shard(table: OperatorTable) -> None:
    table.create_seat_class(KEY, 12, shards=4)
    service = Service(table)
    held = service.send(*(body(f"h-{n}", 2, "hold", hold_seconds=120) for n in range(4)))
    assert all(a.outcome is Outcome.HELD for a in held.values())
    assert assert_consistent(table.read_inventory(KEY)).held == 8
    changes = [
        ChangeRequest("c-1", "h-0", RequestType.CONFIRM),
        ChangeRequest("c-2", "h-1", RequestType.CANCEL),
        ChangeRequest("c-3", "h-2", RequestType.CONFIRM),
    ]
    answers, failed = apply_changes(
        changes, store=table, clock=service.clock, hints=service.hints, rejection_ttl_seconds=60
    )
    assert not failed
    assert [answers[m].outcome for m in ("c-1", "c-2", "c-3")] == [
        Outcome.CONFIRMED,
        Outcome.CANCELLED,
        Outcome.CONFIRMED,
    ]
    cancel_sale = [ChangeRequest("c-4", "h-2", RequestType.CANCEL)]
    answers, failed = apply_changes(
        cancel_sale, store=table, clock=service.clock, hints=service.hints, rejection_ttl_seconds=60
    )
    assert not failed and answers["c-4"].outcome is Outcome.CANCELLED
    view = assert_consistent(table.read_inventory(KEY))
    assert (view.capacity, view.available, view.held, view.sold) == (12, 8, 2, 2)


def test_after_a_sell_out_rejections_write_no_shard_item(stack: Stack, table: OperatorTable) -> None:
    table.create_seat_class(KEY, 4, shards=4)
    service = Service(table)
    service.send(*(body(f"r-{n}", 1) for n in range(4)))
    assert assert_consistent(table.read_inventory(KEY)).available == 0
    writes: list[str] = []

    def count(params: dict[str, Any], **_: Any) -> None:
        for action in params.get("TransactItems", []):
            for kind, request in action.items():
                if "pk" in request.get("Key", request.get("Item", {})):
                    pk = request.get("Key", request.get("Item"))["pk"]["S"]
                    writes.append(f"{kind} {pk}")
        if "Key" in params or "Item" in params:
            writes.append(str(params.get("Key", params.get("Item"))["pk"]["S"]))

    events = stack.dynamodb.meta.events
    for operation in ("TransactWriteItems", "UpdateItem", "PutItem"):
        events.register(f"provide-client-params.dynamodb.{operation}", count)
    answers = service.send(*(body(f"late-{n}", 1) for n in range(5)))
    assert {a.outcome for a in answers.values()} == {Outcome.SOLD_OUT}
    assert writes and not [w for w in writes if "EVENT#" in w]


# --- resharding -----------------------------------------------------------------------------------


def test_a_reshard_during_a_sale_conserves_the_class_and_strands_nothing(table: OperatorTable) -> None:
    table.create_seat_class(KEY, 40, shards=2)
    service = Service(table)
    service.send(*(body(f"a-{n}", 3) for n in range(4)))
    service.send(*(body(f"h-{n}", 2, "hold", hold_seconds=120) for n in range(3)))
    before = assert_consistent(table.read_inventory(KEY))
    grown = assert_consistent(table.reshard(KEY, 8))
    totals = lambda v: (v.capacity, v.available, v.held, v.sold)  # noqa: E731
    assert totals(grown) == totals(before) and (grown.shard_count, grown.shard_items) == (8, 8)
    assert max(s.available for s in grown.shard_seats()) - min(s.available for s in grown.shard_seats()) <= 1
    service.hints = InventoryHints(random.Random(3))  # a container that starts after the reshard
    service.send(*(body(f"b-{n}", 1) for n in range(6)))
    shrunk = assert_consistent(table.reshard(KEY, 1))
    assert (shrunk.shard_count, shrunk.shard_items) == (1, 8)
    assert [s.available for s in shrunk.shard_seats()[1:]] == [0] * 7  # retired shards keep no seat
    # Holds on retired shards are cancelled: their seats come back there, and still sell.
    answers, failed = apply_changes(
        [ChangeRequest(f"x-{n}", f"h-{n}", RequestType.CANCEL) for n in range(3)],
        store=table, clock=service.clock, hints=service.hints, rejection_ttl_seconds=60,
    )  # fmt: skip
    assert not failed and {a.outcome for a in answers.values()} == {Outcome.CANCELLED}
    left = assert_consistent(table.read_inventory(KEY)).available
    assert left == 22
    answers = service.send(body("c-1", 10), body("c-2", 10), body("c-3", 2), body("one-more", 1))
    assert [answers[f"c-{n}"].outcome for n in (1, 2, 3)] == [Outcome.CONFIRMED] * 3
    assert answers["one-more"].outcome is Outcome.SOLD_OUT
    final = assert_consistent(table.read_inventory(KEY))
    assert (final.capacity, final.available, final.held) == (40, 0, 0)
    assert final.sold == 40


def test_a_consistent_read_cancelled_by_writes_in_flight_is_retried_not_handed_back(
    stack: Stack, table: OperatorTable
) -> None:
    """On AWS a `TransactGetItems` is cancelled (TransactionConflict) while a transaction of another
    container writes one of the items it reads: with a hot sharded class that is exactly when the
    planner needs the read. Like a conflict on the write, it is retried in place until the deadline,
    never handed back to SQS (where it would count towards the dead-letter queue)."""
    table.create_seat_class(KEY, 8, shards=4)
    service = Service(table)
    cancelled_reads = {"left": 7}  # more than one `read_inventory` retries on its own

    def conflict(**_: Any) -> tuple[Any, dict[str, Any]] | None:
        if cancelled_reads["left"] == 0:
            return None
        cancelled_reads["left"] -= 1
        reasons = [{"Code": "TransactionConflict"}] + [{"Code": "None"}] * 3
        response = {
            "Error": {"Code": "TransactionCanceledException", "Message": "Transaction cancelled"},
            "CancellationReasons": reasons,
            "ResponseMetadata": {"HTTPStatusCode": 400},
        }
        return type("Http", (), {"status_code": 400, "headers": {}})(), response

    stack.dynamodb.meta.events.register("before-call.dynamodb.TransactGetItems", conflict)
    # 9 seats: more than the 4 shard items hold together (2 each), as their survey shows, so only
    # a consistent read of the class can answer SOLD_OUT (a take the items could serve together
    # moves seats planned from the survey instead, without that read).
    answers = service.send(body("r-big", 9))
    assert answers["r-big"].outcome is Outcome.SOLD_OUT
    assert cancelled_reads["left"] == 0
    assert assert_consistent(table.read_inventory(KEY)).sold == 0


def test_a_take_no_item_alone_can_serve_moves_seats_planned_from_the_survey_without_a_whole_read(
    stack: Stack, table: OperatorTable
) -> None:
    """3 seats over 4 shard items of 2: the survey (`BatchGetItem`) shows enough over two items,
    so the seats move into one in the take's transaction, each move guarded by its donor's
    `available`, with no `TransactGetItems` (which a write in flight on any item refuses)."""
    table.create_seat_class(KEY, 8, shards=4)
    service = Service(table)
    whole_reads: list[str] = []
    stack.dynamodb.meta.events.register(
        "before-call.dynamodb.TransactGetItems", lambda **_: whole_reads.append("read")
    )

    answers = service.send(body("r-big", 3))

    assert answers["r-big"].outcome is Outcome.CONFIRMED
    assert whole_reads == []
    inventory = assert_consistent(table.read_inventory(KEY))
    assert (inventory.sold, inventory.available) == (3, 5)
    assert sorted(s.available for s in inventory.shard_seats()) == [0, 1, 2, 2]


def test_operator_commands_read_a_sharded_class_again_while_a_sale_cancels_their_reads(
    stack: Stack,
) -> None:
    """During a rush on AWS a write is almost always in flight on one of the shard items, and each
    one cancels the consistent read (`TransactGetItems`) an operator command plans from: the
    command reads again for longer than `read_inventory`'s own 5 attempts, then gives up."""
    sleeps: list[float] = []
    table = OperatorTable(stack.dynamodb, stack.table_name, sleep=sleeps.append)
    table.create_seat_class(KEY, 40, shards=4)
    cancelled_reads = {"left": 12}  # two whole `read_inventory` calls and two reads more

    def conflict(**_: Any) -> tuple[Any, dict[str, Any]] | None:
        if cancelled_reads["left"] == 0:
            return None
        cancelled_reads["left"] -= 1
        reasons = [{"Code": "None"}, {"Code": "TransactionConflict"}, {"Code": "None"}, {"Code": "None"}]
        response = {
            "Error": {"Code": "TransactionCanceledException", "Message": "Transaction cancelled"},
            "CancellationReasons": reasons,
            "ResponseMetadata": {"HTTPStatusCode": 400},
        }
        return type("Http", (), {"status_code": 400, "headers": {}})(), response

    stack.dynamodb.meta.events.register("before-call.dynamodb.TransactGetItems", conflict)
    resharded = table.reshard(KEY, 2)
    assert cancelled_reads["left"] == 0
    assert (resharded.shard_count, resharded.capacity, resharded.available) == (2, 40, 40)
    assert len(sleeps) == 12 + 2  # within read_inventory after each cancelled read; 2 between calls

    cancelled_reads["left"] = 1_000  # a rush that never pauses: the command gives up, unchanged
    with pytest.raises(TransactionConflict):
        table.set_capacity(KEY, 50)
    cancelled_reads["left"] = 0
    assert assert_consistent(table.read_inventory(KEY)).capacity == 40


def test_an_operator_change_between_the_two_reads_of_a_reshard_is_not_forgotten(
    stack: Stack, table: OperatorTable
) -> None:
    """A reshard reads shard 0 (its recent operation ids) and then the whole class (the version it
    writes under). A capacity change landing between the two reads must not be erased from the
    recent ids: its retry after a lost reply would add the seats a second time."""
    table.create_seat_class(KEY, 8, shards=2)
    table.change_capacity(KEY, 2)  # the class has a version now
    interleaved: list[str] = []

    def change_in_between(**_: Any) -> None:
        if not interleaved:
            interleaved.append("op-add")
            table.change_capacity(KEY, 10, operation_id="op-add")

    stack.dynamodb.meta.events.register("before-call.dynamodb.TransactGetItems", change_in_between)
    table.reshard(KEY, 4)
    stack.dynamodb.meta.events.unregister("before-call.dynamodb.TransactGetItems", change_in_between)
    # The capacity change's reply was lost; its client sends it again with the same id.
    table.change_capacity(KEY, 10, operation_id="op-add")
    view = assert_consistent(table.read_inventory(KEY))
    assert (view.capacity, view.available, view.shard_count) == (20, 20, 4)


def test_a_transaction_of_status_changes_over_many_shards_stays_within_100_actions(
    table: OperatorTable,
) -> None:
    """Status changes (a cancel batch, the sweeper's expiries) whose records came from 16 shard items
    make one inventory update per item: the 100 actions of a transaction must count each of them."""
    table.create_seat_class(KEY, 16 * 7, shards=16)
    ids: list[str] = []
    for shard in range(16):
        outcomes = [confirmed(f"s{shard}-{n}", 1) for n in range(7)]
        assert (
            commit_outcomes(
                table, GroupWrite(KEY, outcomes, seats_taken=7, rejection_expires_at=0, shard=shard)
            )
            is None
        )
        ids += [o.reservation_id for o in outcomes]
    records = table.read_reservations(ids)
    transitions = [Transition(records[rid], Outcome.CANCELLED) for rid in ids]
    result = settle_transitions(
        KEY,
        transitions,
        now=0,
        store=table,
        clock=FakeClock(),
        hints=InventoryHints(),
        release_ttl_seconds=60,
    )
    assert result.error is None and len(result.committed) == len(ids)
    view = assert_consistent(table.read_inventory(KEY))
    assert (view.sold, view.available) == (0, 16 * 7)


def test_a_survey_shows_each_shard_items_seats_and_when_seats_were_last_taken(table: OperatorTable) -> None:
    table.create_seat_class(KEY, 12, shards=3)
    commit_outcomes(
        table,
        GroupWrite(
            KEY, [confirmed("r-1", 2)], seats_taken=2, rejection_expires_at=1, shard=2, taken_at=1234.5
        ),
    )

    survey = table.survey_shards(KEY, 3)

    assert survey == [
        ShardSurvey(0, 4, None),
        ShardSurvey(1, 4, None),
        ShardSurvey(2, 2, 1234.5),
    ]
    # A read of the first items only (a survey never decides more than it read).
    assert [s.shard for s in table.survey_shards(KEY, 2)] == [0, 1]
    # A class with no items: nothing to route to.
    assert table.survey_shards(SeatKey("big-1", "nope"), 3) == []


def test_a_never_seen_sharded_class_is_first_read_as_its_shard_0_alone(table: OperatorTable) -> None:
    table.create_seat_class(KEY, 12, shards=3)

    head = table.read_inventory(KEY, whole=False)
    whole = table.read_inventory(KEY)

    assert head is not None and not head.complete and head.shard_items == 3 and head.available == 4
    assert whole is not None and whole.complete and whole.available == 12
