"""The waiting list on the table (moto, built from template.yaml): the scenarios of
tests/unit/test_waitlist.py run again on the DynamoDB implementation, every expression of the
list's writes on each path, the operator's open, close and view, and the sweeper's handler
serving a list and publishing its offers."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from seat_inventory.dal.items import lane_key
from seat_inventory.handlers import sweep_holds as sweep_module
from seat_inventory.models import (
    Join,
    LaneWrite,
    ListedReturn,
    Outcome,
    Place,
    SeatKey,
    order_key,
)
from seat_tools.operator_commands import OperatorTable
from seat_tools.operator_errors import InventoryChangeRefused, UnknownSeatClass
from seat_tools.seat_map_commands import SaleRules
from tests.integration.conftest import Stack, sqs_event
from tests.unit.test_waitlist import (  # noqa: F401  (the scenarios, run here on the table)
    GA,
    NOW,
    MakeSale,
    Sale,
    test_a_refused_request_that_asks_joins_with_its_position_and_others_are_refused_as_before,
    test_an_expired_hold_goes_to_the_list_and_a_sharded_class_offers_from_one_item,
    test_an_offer_counts_against_the_limit_and_one_past_it_ends_the_entry,
    test_an_offer_taken_with_a_confirm_is_sold_and_its_customer_is_never_offered_again,
    test_an_offer_that_runs_out_passes_its_seats_to_the_next_entry,
    test_freed_seats_are_set_aside_then_offered_to_the_head_in_join_order,
    test_leaving_takes_the_entry_off_and_its_turn_passes,
    test_no_list_open_means_the_refusal_says_so,
    test_one_entry_per_customer_per_class_and_a_redelivery_is_the_same_answer,
    test_seats_added_for_the_list_are_offered_to_its_head_and_the_rest_go_on_sale,
    test_the_head_waits_for_its_seats_and_nobody_behind_it_is_served_first,
)
from tests.unit.test_waitlist_mapped import (  # noqa: F401  (the mapped class's scenarios, on the table)
    ROW,
    MakeMappedSale,
    MappedSale,
    seat_map,
    sold_out_with_two_waiting,
    test_a_head_no_block_fits_waits_unless_it_may_split,
    test_a_mapped_class_in_a_pool_keeps_the_pool_s_counts_through_set_aside_offer_and_return,
    test_a_mapped_offer_that_runs_out_passes_its_seats_to_the_next_entry,
    test_an_expired_hold_goes_to_the_list_and_closing_puts_the_lists_seats_back_on_sale,
    test_seats_given_back_are_set_aside_on_their_rows_and_offered_in_join_order,
    test_the_best_block_is_offered_and_the_seats_nobody_waits_for_go_back_on_sale,
)


@pytest.fixture
def table(stack: Stack) -> OperatorTable:
    return OperatorTable(stack.dynamodb, stack.table_name)


@pytest.fixture
def make_sale(table: OperatorTable) -> MakeSale:
    """A sale of `capacity` seats (`shards` items) on the table."""

    def make(
        capacity: int = 4, *, shards: int = 1, offer_seconds: int = 600, max_per_customer: int | None = None
    ) -> Sale:
        table.create_seat_class(GA, capacity, shards=shards, max_per_customer=max_per_customer)
        return Sale(table, offer_seconds=offer_seconds)

    return make


@pytest.fixture
def make_mapped_sale(table: OperatorTable) -> MakeMappedSale:
    """The mapped class ROW (tests/unit/test_waitlist_mapped.py) on the table."""

    def make(
        *, offer_seconds: int = 600, max_per_customer: int | None = None, hall: int | None = None
    ) -> MappedSale:
        if hall is not None:
            table.create_pool("e-1", "hall", hall)
        pools = ("hall",) if hall is not None else ()
        table.create_seat_map("e-1", seat_map(), SaleRules(max_per_customer=max_per_customer, pools=pools))
        return MappedSale(table, offer_seconds=offer_seconds)

    return make


def test_a_mapped_classs_list_rule_is_on_every_row_item_and_close_frees_its_seats(
    make_mapped_sale: MakeMappedSale, table: OperatorTable
) -> None:
    sale = make_mapped_sale()
    rows = table.read_seat_rows(ROW, ["S-R1#0", "S-R2#0"])
    assert all(row.waitlist for row in rows.values())
    opened = table.read_waitlist(ROW)
    assert opened is not None and opened.mapped and opened.open
    sold_out_with_two_waiting(sale)
    sale.send({"type": "cancel", "reservation_id": "r-a"})
    view = table.waitlist_view(ROW)
    assert view is not None and view.seats_set_aside == 2 and view.waiting_list.waiting == 2
    with pytest.raises(InventoryChangeRefused, match="is a mapped class: its seats are its map's"):
        table.add_waitlist_seats(ROW, 2)
    assert table.close_waitlist(ROW) == 2
    assert sale.counts() == (2, 0, 8) and not sale.listed()
    rows = table.read_seat_rows(ROW, ["S-R1#0", "S-R2#0"])
    assert not any(row.waitlist for row in rows.values())
    # Closed, seats given back go on sale at once.
    sale.send({"type": "cancel", "reservation_id": "r-b"})
    assert sale.counts() == (6, 0, 4) and not sale.listed()


def _place(n: int, lane: int = 0, ms: int = NOW * 1000) -> Place:
    return Place(GA, lane, order_key(ms, 0, f"w-{n}"), f"w-{n}", f"c-{n}", 1)


def test_open_refuses_a_missing_class_and_an_offer_length_out_of_bounds(table: OperatorTable) -> None:
    with pytest.raises(UnknownSeatClass):
        table.open_waitlist(SeatKey("e-1", "NONE"), offer_seconds=600)
    table.create_seat_class(GA, 4)
    with pytest.raises(ValueError, match="an offer lasts 60 to 86400 seconds"):
        table.open_waitlist(GA, offer_seconds=30)


def test_open_ends_offers_by_the_sales_end_and_close_puts_the_lists_seats_back_on_sale(
    make_sale: MakeSale, table: OperatorTable
) -> None:
    table.create_seat_class(SeatKey("e-1", "VIP"), 2, sale_ends_at=NOW + 3600)
    opened = table.open_waitlist(SeatKey("e-1", "VIP"), offer_seconds=600, until=NOW + 7200)
    assert opened.until == NOW + 3600 and opened.open and len(opened.lanes) == 16
    sale = make_sale()
    sale.reserve("r-a", "a", 4)
    sale.reserve("w-1", "c-1", 2, waitlist=True)
    sale.send({"type": "cancel", "reservation_id": "r-a"})
    assert sale.seats() == (0, 4, 0)
    view = table.waitlist_view(GA)
    assert view is not None and view.waiting_list.waiting == 1 and view.waiting_list.seats_held == 4
    assert [p.reservation_id for p in view.head] == ["w-1"]
    assert table.close_waitlist(GA) == 4
    assert sale.seats() == (4, 0, 0)
    assert table.find_open_lists() == [SeatKey("e-1", "VIP")]
    # Closed, seats given back go on sale at once.
    assert sale.reserve("r-b", "b", 2).outcome is Outcome.CONFIRMED
    sale.send({"type": "cancel", "reservation_id": "r-b"})
    assert sale.seats() == (4, 0, 0)


def test_a_join_is_refused_by_a_fenced_lane_a_taken_entry_and_a_record_moved_on(
    make_sale: MakeSale, table: OperatorTable
) -> None:
    sale = make_sale()
    sale.reserve("r-a", "a", 4)
    for n in (1, 2):
        assert sale.reserve(f"w-{n}", f"c-{n}", 1).outcome is Outcome.SOLD_OUT  # recorded, not joined
    record = table.get_reservation("w-1")
    assert record is not None
    table.fence_lanes(GA, [0], order_key(NOW * 1000 + 5, 0, ""))
    refused = table.join_waitlist(Join(GA, 0, ((record, _place(1)),)))
    assert refused is not None and refused.lanes[0] is not None
    assert table.join_waitlist(Join(GA, 0, ((record, _place(1, ms=NOW * 1000 + 6)),))) is None
    again = table.join_waitlist(Join(GA, 0, ((record, _place(1, ms=NOW * 1000 + 7)),)))
    assert again is not None and again.entries == {"c-1": "w-1"} and "w-1" in again.records
    nobody = dataclasses.replace(record, reservation_id="w-9", customer_id="c-9")
    missing = table.join_waitlist(Join(GA, 0, ((nobody, _place(9, ms=NOW * 1000 + 8)),)))
    assert missing is not None and missing.records["w-9"] is None


def test_a_lane_write_is_refused_for_a_place_gone_and_a_lane_short_of_seats(
    make_sale: MakeSale, table: OperatorTable
) -> None:
    sale = make_sale()
    sale.reserve("r-a", "a", 4)
    sale.reserve("w-1", "c-1", 1, waitlist=True)
    place = table.waitlist_view(GA).head[0]  # type: ignore[union-attr]
    from seat_inventory.models import EntryEnd

    gone = Place(GA, place.lane, order_key(1, 0, "x"), "w-1", "c-1", 1)
    end = EntryEnd(gone, Outcome.LEFT, NOW + 60)
    refused = table.write_lanes([LaneWrite(GA, place.lane, NOW, ends=(end,))])[0]
    assert refused is not None and gone.order in refused.places_gone
    short = table.return_listed(ListedReturn(GA, ledgers={place.lane: {"s0": 1}}, empty=False))
    assert short is not None and place.lane in refused.lanes | short.lanes
    not_empty = table.return_listed(ListedReturn(GA, empty=True))
    assert not_empty is not None and not_empty.lanes[place.lane] is not None


def test_seats_are_added_for_a_list_once_and_only_to_a_class_with_one_open(table: OperatorTable) -> None:
    from seat_inventory.transaction import added_seats_actions, list_refusal

    table.create_seat_class(GA, 4)
    with pytest.raises(InventoryChangeRefused, match="has no open waiting list"):
        table.add_waitlist_seats(GA, 2)
    table.open_waitlist(GA, offer_seconds=600)
    assert table.add_waitlist_seats(GA, 2).seats_held == 2
    # The same change sent again with the capacity it read first (a lost reply): refused, not added.
    stale = table._transact(added_seats_actions(GA, 2, capacity=4, lane=0), list_refusal)
    assert stale is not None and stale.shards == frozenset({0})
    item = table.read_inventory(GA)
    assert item is not None and (item.capacity, item.held) == (6, 2)


def test_the_sweepers_handler_offers_and_publishes_once(
    stack: Stack, table: OperatorTable, monkeypatch: pytest.MonkeyPatch
) -> None:
    stack.create_event("e-1", 2)
    table.open_waitlist(GA, offer_seconds=600)
    body: dict[str, Any] = {"event_id": "e-1", "seat_class": "GA", "quantity": 2}
    stack.invoke(sqs_event({**body, "reservation_id": "r-a", "customer_id": "a"}))
    stack.invoke(sqs_event({**body, "reservation_id": "w-1", "customer_id": "c-1", "waitlist": True}))
    stack.invoke(sqs_event({"type": "cancel", "reservation_id": "r-a"}))
    answers = {o["reservation_id"]: o for o in stack.outcomes()}
    assert answers["w-1"]["outcome"] == "WAITLISTED" and answers["w-1"]["position"] == 1
    monkeypatch.setattr(sweep_module, "build_adapters", stack_adapters(stack))
    sweep_module.reset_container()
    first = sweep_module.lambda_handler({}, _Context())
    assert first["offered"] == 1 and first["offers_published"] == 1
    (offer,) = stack.outcomes()
    assert offer["outcome"] == "OFFERED" and offer["reservation_id"] == "w-1"
    again = sweep_module.lambda_handler({}, _Context())
    assert again["offered"] == 0 and again["offers_published"] == 0 and stack.outcomes() == []
    lane = stack.dynamodb.get_item(TableName=stack.table_name, Key=lane_key(GA, 0))
    assert "Item" in lane
    sweep_module.reset_container()


def stack_adapters(stack: Stack) -> Any:
    from seat_inventory.handlers import reserve_seats as handler_module

    return handler_module.build_adapters  # the stack's session (patched by the fixture)


class _Context:
    function_name = "SweepHoldsFunction"
    function_version = "$LATEST"
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:SweepHoldsFunction"
    memory_limit_in_mb = 512
    aws_request_id = "00000000-0000-0000-0000-000000000001"

    def get_remaining_time_in_millis(self) -> int:
        return 30_000


def test_seats_unblocked_on_a_mapped_class_with_an_open_list_are_offered_to_it(
    make_mapped_sale: MakeMappedSale, table: OperatorTable
) -> None:
    sale = make_mapped_sale()
    table.block_seats(ROW, ["S-R2-1", "S-R2-2", "S-R2-3", "S-R2-4"])
    assert sale.reserve("r-a", "a", 6).outcome is Outcome.CONFIRMED
    assert sale.reserve("w-1", "c-1", 2, waitlist=True).outcome is Outcome.WAITLISTED
    table.unblock_seats(ROW, ["S-R2-1", "S-R2-2"])
    assert sale.listed() == {"S-R2-1", "S-R2-2"} and sale.counts() == (0, 2, 6)
    (offer,) = sale.sweep()
    assert offer.reservation_id == "w-1" and set(offer.seats or ()) == {"S-R2-1", "S-R2-2"}
    # Closed, an unblocked seat goes on sale.
    table.close_waitlist(ROW)
    table.unblock_seats(ROW, ["S-R2-3"])
    assert sale.counts() == (1, 2, 6) and not sale.listed()
