"""A row item stays under 1 KB (docs/guides/seat-maps.md): a transaction writes it for 2 write units."""

from __future__ import annotations

from typing import Any

from seat_inventory.models import ROW_BLOCK, SeatKey
from seat_tools.operator_commands import new_operation_id
from seat_tools.seat_blocks import LAST_OPERATION
from seat_tools.seat_map_commands import SaleRules, SeatMapCommands
from seat_tools.seat_map_files import RowItem


def item_bytes(item: dict[str, Any]) -> int:
    """DynamoDB's item size: each attribute's name plus its value (a number: about 1 byte per 2
    digits, plus 1)."""
    total = 0
    for name, value in item.items():
        if "S" in value:
            size = len(value["S"].encode())
        elif "N" in value:
            size = (len(value["N"].lstrip("-").replace(".", "")) + 1) // 2 + 1
        else:
            raise AssertionError(f"unexpected attribute type {value}")
        total += len(name.encode()) + size
    return total


def test_a_full_row_item_with_every_rule_stays_under_1_kb() -> None:
    rows = SeatMapCommands.__new__(SeatMapCommands)  # no client: only the item builder
    rows._table_name = "t"
    key = SeatKey("e" * 128, "c" * 64)  # the longest event id and seat class the contract allows
    row = RowItem("S" * 16 + "-" + "R" * 16 + "#9", "S" * 16, 361, ROW_BLOCK, ())
    item = rows._row_item(
        key,
        row,
        SaleRules(max_per_customer=10, sale_starts_at=1_800_000_000, sale_ends_at=1_900_000_000, closed=True),
    )
    item.update({f"p{361 + n}": {"S": "S"} for n in range(ROW_BLOCK)})
    # the operation id of the operator's last block or unblock on it (seat_tools.seat_blocks)
    item[LAST_OPERATION] = {"S": new_operation_id()}
    assert item_bytes(item) < 1024, item_bytes(item)
