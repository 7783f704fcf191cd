"""The domain's types, one module per role, all importable from here.

- `requests`: what a queue message asks for (reserve, hold, an order's lines, confirm, cancel);
- `outcomes`: the answer to each message, as recorded and published;
- `views`: the inventory as a read shows it (seat classes, shard items, pools, row items);
- `records`: what the store keeps and writes (a reservation's record, status changes, takes);
- `tickets`: ticket numbering; `errors`: the faults and refusals the layers share.

Nothing here knows about boto3, SQS or SNS wire formats.
"""

from seat_inventory.models.errors import (
    EventAlreadyExists,
    InventoryChangeRefused,
    OperatorOutcomeUnknown,
    RetryableError,
    StoreInconsistency,
    Throttled,
    TransactionConflict,
    UnknownSeatClass,
)
from seat_inventory.models.outcomes import TAKES_SEATS, BatchResult, Outcome, ReservationOutcome
from seat_inventory.models.records import (
    ClassRules,
    ClassTake,
    LineTake,
    ReservationRecord,
    Take,
    TokenUse,
    Transition,
    TransitionsRefused,
    WriteRefused,
)
from seat_inventory.models.requests import (
    MAX_ORDER_LINES,
    AdmissionCheck,
    ChangeRequest,
    InvalidMessage,
    OrderLine,
    RequestType,
    ReservationRequest,
)
from seat_inventory.models.tickets import (
    MAX_TICKET_PREFIX,
    MAX_TICKET_SERIES,
    MAX_TICKET_WIDTH,
    NumbersRefused,
    TicketAssignment,
    TicketBatch,
    TicketFormat,
    TicketSeries,
    UnnumberedSale,
)
from seat_inventory.models.views import (
    MAX_POOLS_PER_CLASS,
    MAX_SHARDS,
    ROW_BLOCK,
    PoolInventory,
    SaleStatus,
    SeatClassInventory,
    SeatKey,
    SeatRow,
    SeatState,
    ShardSeats,
    ShardSurvey,
    iso_utc,
    pool_ref,
    row_item_of,
    seats_by_row,
    split_pool_ref,
)

__all__ = [
    "MAX_ORDER_LINES",
    "MAX_POOLS_PER_CLASS",
    "MAX_SHARDS",
    "MAX_TICKET_PREFIX",
    "MAX_TICKET_SERIES",
    "MAX_TICKET_WIDTH",
    "ROW_BLOCK",
    "TAKES_SEATS",
    "AdmissionCheck",
    "BatchResult",
    "ChangeRequest",
    "ClassRules",
    "ClassTake",
    "EventAlreadyExists",
    "InvalidMessage",
    "InventoryChangeRefused",
    "LineTake",
    "NumbersRefused",
    "OperatorOutcomeUnknown",
    "OrderLine",
    "Outcome",
    "PoolInventory",
    "RequestType",
    "ReservationOutcome",
    "ReservationRecord",
    "ReservationRequest",
    "RetryableError",
    "SaleStatus",
    "SeatClassInventory",
    "SeatKey",
    "SeatRow",
    "SeatState",
    "ShardSeats",
    "ShardSurvey",
    "StoreInconsistency",
    "Take",
    "Throttled",
    "TicketAssignment",
    "TicketBatch",
    "TicketFormat",
    "TicketSeries",
    "TokenUse",
    "TransactionConflict",
    "Transition",
    "TransitionsRefused",
    "UnknownSeatClass",
    "UnnumberedSale",
    "WriteRefused",
    "iso_utc",
    "pool_ref",
    "row_item_of",
    "seats_by_row",
    "split_pool_ref",
]
