"""`InventoryTable`: the DynamoDB implementation of the service's stores, one part per concern.

The data access is a package (every DynamoDB key, expression and error code lives in it):

- `items`: the single-table layout, keys, and conversions between items and models;
- `errors`: the one place DynamoDB's error codes become domain outcomes or retryable errors;
- `access`: the client and table the parts share, and the consistent reads of classes and pools;
- `expressions`: each action of a take or a status change (`seat_inventory.transaction`) as
  DynamoDB writes it, and its item as a refusal hands it back;
- `writes`: take, record rejections, change status;
- `seat_rows`: mapped seat classes: the seat map, row items, slice claims;
- `sweeper_queries`: the hold sweeper's index queries and the expiry outbox;
- `waitlist`: the waiting lists: their reads, writes, open lists and the offers' outbox;
- `tickets`: ticket numbers: the issuer's index, counters, numbering transaction and ledger.

The operator's commands (`seats event ...`) are not part of the service: `seat_tools.operator_commands`
adds them to this class for the tools.
"""

from __future__ import annotations

from seat_inventory.dal.seat_rows import SeatRows
from seat_inventory.dal.sweeper_queries import SweeperQueries
from seat_inventory.dal.tickets import TicketQueries
from seat_inventory.dal.waitlist import WaitlistQueries


class InventoryTable(WaitlistQueries, SweeperQueries, TicketQueries, SeatRows):
    """DynamoDB implementation of the `InventoryStore`, `HoldStore`, `ListStore` and `TicketStore`
    ports."""
