"""The operator's block and unblock of seats (src/seat_tools/seat_blocks.py) on moto: each
expression's paths (success, condition failed, item missing), all-or-none over row items, and
exactly once when a reply is lost."""

from __future__ import annotations

import json
from typing import Any

import pytest
from botocore.exceptions import ReadTimeoutError

from seat_inventory.dal.items import row_key
from seat_inventory.logic.seat_map import load_json
from seat_inventory.models import Outcome, ReservationOutcome, SeatKey
from seat_tools.operator_commands import OperatorTable
from seat_tools.operator_errors import InventoryChangeRefused, UnknownSeatClass
from seat_tools.seat_map_commands import SaleRules
from tests.integration.conftest import Stack
from tests.writes import GroupWrite, commit_outcomes

KEY = SeatKey("e-1", "A")
MAP = load_json(
    json.dumps(
        {
            "classes": {"A": {}, "B": {}},
            "sections": [
                {
                    "id": "S",
                    "class": "A",
                    "rows": [{"id": "R1", "seats": 6, "flags": {"blocked": [6]}}, {"id": "R2", "seats": 4}],
                },
                {"id": "T", "class": "B", "rows": [{"id": "R1", "seats": 3}]},
            ],
        }
    )
)


@pytest.fixture
def table(stack: Stack) -> OperatorTable:
    table = OperatorTable(stack.dynamodb, stack.table_name, sleep=lambda _: None)
    table.create_seat_map("e-1", MAP, SaleRules())
    return table


def states(table: OperatorTable) -> dict[str, str]:
    rows = table.read_seat_rows(KEY)
    return {
        f"{row_id.split('#')[0]}-{p}": state.value
        for row_id, row in rows.items()
        for p, state in row.states.items()
    }


def available(table: OperatorTable) -> dict[str, int]:
    return {row_id: row.available for row_id, row in table.read_seat_rows(KEY).items()}


def sell(table: OperatorTable, rid: str, row: str, positions: tuple[int, ...], held: bool = False) -> None:
    seats = tuple(f"{row.split('#')[0]}-{p}" for p in positions)
    outcome = ReservationOutcome(
        reservation_id=rid,
        outcome=Outcome.HELD if held else Outcome.CONFIRMED,
        reason="why",
        event_id="e-1",
        seat_class="A",
        quantity=len(seats),
        customer_id="c-1",
        message_id=f"m-{rid}",
        hold_expires_at=2_000_000_000 if held else None,
        seats=seats,
    )
    write = GroupWrite(
        key=KEY,
        outcomes=[outcome],
        seats_taken=len(seats),
        rejection_expires_at=2_000_000_000,
        max_per_customer=None,
        customer_seats={},
        now=1_800_000_000,
        rows={row: positions},
    )
    assert commit_outcomes(table, write) is None


def test_block_success_takes_free_seats_out_of_sale_on_every_row_item(table: OperatorTable) -> None:
    # Given the map's own blocked seat S-R1-6
    assert states(table) == {"S-R1-6": "B"} and available(table) == {"S-R1#0": 5, "S-R2#0": 4}
    # When free seats on two row items are blocked
    rows = table.block_seats(KEY, ["S-R1-2", "S-R2-1", "S-R2-2"])
    # Then they are blocked, available moves with them, and the rows come back as written
    assert states(table) == {"S-R1-6": "B", "S-R1-2": "B", "S-R2-1": "B", "S-R2-2": "B"}
    assert available(table) == {"S-R1#0": 4, "S-R2#0": 2}
    assert {row_id: row.available for row_id, row in rows.items()} == {"S-R1#0": 4, "S-R2#0": 2}
    # And a take of a blocked seat is refused by the take's own guard
    refused = commit_outcomes(
        table,
        GroupWrite(
            key=KEY,
            outcomes=[
                ReservationOutcome(
                    reservation_id="r-x",
                    outcome=Outcome.CONFIRMED,
                    reason="why",
                    event_id="e-1",
                    seat_class="A",
                    quantity=1,
                    customer_id="c",
                    message_id="m",
                    seats=("S-R1-2",),
                )
            ],
            seats_taken=1,
            rejection_expires_at=2_000_000_000,
            max_per_customer=None,
            customer_seats={},
            now=1_800_000_000,
            rows={"S-R1#0": (2,)},
        ),
    )
    assert refused is not None and refused.inventory_refused


def test_block_condition_failed_a_seat_not_free_changes_nothing(table: OperatorTable) -> None:
    sell(table, "r-1", "S-R1#0", (3,))
    sell(table, "r-2", "S-R1#0", (4,), held=True)
    before = (states(table), available(table))
    with pytest.raises(InventoryChangeRefused, match=r"free to be blocked: S-R1-3 is sold, S-R1-4 is held"):
        table.block_seats(KEY, ["S-R2-1", "S-R1-3", "S-R1-4"])
    with pytest.raises(InventoryChangeRefused, match=r"S-R1-6 is blocked"):
        table.block_seats(KEY, ["S-R1-6"])
    # All or none: S-R2-1, free, was not blocked either
    assert (states(table), available(table)) == before


def test_block_and_unblock_item_missing(table: OperatorTable, stack: Stack) -> None:
    stack.dynamodb.delete_item(TableName=stack.table_name, Key=row_key(KEY, "S-R2#0"))
    with pytest.raises(UnknownSeatClass, match=r"row item S-R2#0 of e-1 A does not exist"):
        table.block_seats(KEY, ["S-R1-1", "S-R2-1"])
    with pytest.raises(UnknownSeatClass, match=r"row item S-R2#0 of e-1 A does not exist"):
        table.unblock_seats(KEY, ["S-R2-1"])
    assert states(table) == {"S-R1-6": "B"}


def test_unblock_success_gives_an_operator_blocked_seat_back(table: OperatorTable) -> None:
    table.block_seats(KEY, ["S-R1-1", "S-R1-2", "S-R2-4"])
    rows = table.unblock_seats(KEY, ["S-R1-1", "S-R2-4"])
    assert states(table) == {"S-R1-6": "B", "S-R1-2": "B"}
    assert available(table) == {"S-R1#0": 4, "S-R2#0": 4}
    assert rows["S-R2#0"].states == {}


def test_unblock_condition_failed_a_seat_not_blocked_changes_nothing(table: OperatorTable) -> None:
    table.block_seats(KEY, ["S-R1-1"])
    sell(table, "r-1", "S-R1#0", (3,))
    before = (states(table), available(table))
    with pytest.raises(
        InventoryChangeRefused, match=r"blocked to be unblocked: S-R1-2 is free, S-R1-3 is sold"
    ):
        table.unblock_seats(KEY, ["S-R1-1", "S-R1-2", "S-R1-3"])
    assert (states(table), available(table)) == before


def test_a_seat_the_map_blocks_stays_blocked(table: OperatorTable) -> None:
    with pytest.raises(InventoryChangeRefused, match=r"S-R1-6 is blocked by the seat map"):
        table.unblock_seats(KEY, ["S-R1-6"])
    assert states(table) == {"S-R1-6": "B"}


@pytest.mark.parametrize(
    ("key", "seats", "error", "message"),
    [
        (KEY, ["T-R1-1"], ValueError, "not a seat of A"),
        (KEY, ["S-R9-1"], ValueError, "not a seat of A"),
        (KEY, [], ValueError, "at least one seat"),
        (SeatKey("e-1", "GA"), ["S-R1-1"], UnknownSeatClass, "no mapped seat class 'GA'"),
        (SeatKey("e-2", "A"), ["S-R1-1"], UnknownSeatClass, "no mapped seat class 'A'"),
    ],
)
def test_seats_not_on_the_class_s_map_are_refused_before_any_write(
    table: OperatorTable, key: SeatKey, seats: list[str], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        table.block_seats(key, seats)
    assert states(table) == {"S-R1-6": "B"}


def test_the_same_operation_sent_again_acts_once(table: OperatorTable) -> None:
    # A block whose reply was lost, sent again with its operation id: success, blocked once
    table.block_seats(KEY, ["S-R1-1", "S-R2-1"], operation_id="op-1")
    table.block_seats(KEY, ["S-R1-1", "S-R2-1"], operation_id="op-1")
    assert available(table) == {"S-R1#0": 4, "S-R2#0": 3}
    # Another operation blocking them is refused: they are not free
    with pytest.raises(InventoryChangeRefused):
        table.block_seats(KEY, ["S-R1-1"], operation_id="op-2")
    table.unblock_seats(KEY, ["S-R1-1", "S-R2-1"], operation_id="op-3")
    table.unblock_seats(KEY, ["S-R1-1", "S-R2-1"], operation_id="op-3")
    assert available(table) == {"S-R1#0": 5, "S-R2#0": 4}
    assert states(table) == {"S-R1-6": "B"}


class LosingReplies:
    """The DynamoDB client, but the first `transact_write_items` times out: after it was applied
    (`applied`), or before it reached the table."""

    def __init__(self, client: Any, *, applied: bool) -> None:
        self._client = client
        self._applied = applied
        self.lost = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    def transact_write_items(self, **params: Any) -> Any:
        if self.lost == 0:
            self.lost += 1
            if self._applied:
                self._client.transact_write_items(**params)
            raise ReadTimeoutError(endpoint_url="http://dynamodb")
        return self._client.transact_write_items(**params)


@pytest.mark.parametrize("applied", [True, False])
def test_a_write_without_an_answer_is_applied_exactly_once(
    table: OperatorTable, stack: Stack, applied: bool
) -> None:
    client = LosingReplies(stack.dynamodb, applied=applied)
    lossy = OperatorTable(client, stack.table_name, sleep=lambda _: None)  # type: ignore[arg-type]
    lossy.block_seats(KEY, ["S-R1-1", "S-R2-1"])
    assert client.lost == 1
    assert available(table) == {"S-R1#0": 4, "S-R2#0": 3}
    assert states(table) == {"S-R1-6": "B", "S-R1-1": "B", "S-R2-1": "B"}
