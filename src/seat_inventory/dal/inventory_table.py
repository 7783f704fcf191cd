"""`InventoryTable`: the DynamoDB implementation of the stores, composed of one part per concern.

The data access is a package (every DynamoDB key, expression and error code lives in it):

- `items`: the single-table layout, keys, and conversions between items and models;
- `errors`: the one place DynamoDB's error codes become domain outcomes or retryable errors;
- `access`: the client and table the parts share, and the consistent inventory read;
- `reservations`: taking seats (reserve, hold) with the answers, in one transaction per group;
- `transitions`: confirm, cancel and expire, in one transaction per group;
- `sweeper_queries`: the hold sweeper's index queries and the expiry outbox;
- `operator_commands`: `seats event ...` (create, status, window, limits, capacity) and reads.

The names callers used from this module before the split are still exported here.
"""

from __future__ import annotations

from seat_inventory.dal.items import (
    CLASS_PREFIX,
    CUSTOMER_PREFIX,
    HOLD_SHARDS,
    HOLDS_INDEX,
    HOLDS_PREFIX,
    INVENTORY_PREFIX,
    OUTBOX_PREFIX,
    RESERVATION_PREFIX,
    RESERVATION_SK,
    customer_key,
    hold_shard,
    inventory_key,
    reservation_key,
)
from seat_inventory.dal.operator_commands import OperatorCommands
from seat_inventory.dal.reservations import Reservations
from seat_inventory.dal.sweeper_queries import SweeperQueries
from seat_inventory.dal.transitions import Transitions

__all__ = [
    "CLASS_PREFIX",
    "CUSTOMER_PREFIX",
    "HOLDS_INDEX",
    "HOLDS_PREFIX",
    "HOLD_SHARDS",
    "INVENTORY_PREFIX",
    "OUTBOX_PREFIX",
    "RESERVATION_PREFIX",
    "RESERVATION_SK",
    "InventoryTable",
    "customer_key",
    "hold_shard",
    "inventory_key",
    "reservation_key",
]


class InventoryTable(Reservations, Transitions, SweeperQueries, OperatorCommands):
    """DynamoDB implementation of the `InventoryStore` and `HoldStore` ports, plus the operator's queries."""
