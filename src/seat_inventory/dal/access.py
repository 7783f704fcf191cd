"""What every part of the data access shares: the client, the table, and the inventory read."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from seat_inventory.dal.errors import call
from seat_inventory.dal.items import inventory_from_item, inventory_key
from seat_inventory.models import SeatClassInventory, SeatKey

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


class TableAccess:
    """The DynamoDB client and table name that the concerns of `InventoryTable` work on."""

    def __init__(
        self, client: DynamoDBClient, table_name: str, *, sleep: Callable[[float], None] = time.sleep
    ) -> None:
        self._client = client
        self._table_name = table_name
        self._sleep = sleep

    @property
    def table_name(self) -> str:
        return self._table_name

    def read_inventory(self, key: SeatKey) -> SeatClassInventory | None:
        """GetItem with ConsistentRead: the seats left now, without writing to the hot item."""
        response = call(
            self._client.get_item, TableName=self._table_name, Key=inventory_key(key), ConsistentRead=True
        )
        item = response.get("Item")
        return inventory_from_item(item) if item else None
