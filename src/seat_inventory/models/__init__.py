"""The domain's types, one module per role, all importable from here.

- `requests`: what a queue message asks for (reserve, hold, an order's lines, confirm, cancel);
- `outcomes`: the answer to each message, as recorded and published;
- `views`: the inventory as a read shows it (seat classes, shard items, pools, row items);
- `records`: what the store keeps and writes (a reservation's record, status changes, takes);
- `tickets`: ticket numbering; `errors`: the faults and refusals the layers share;
- `waitlist`: a class's waiting list, its lanes and places, and what an offer round plans.

Nothing here knows about boto3, SQS or SNS wire formats.
"""

from seat_inventory.models.errors import *  # noqa: F403
from seat_inventory.models.outcomes import *  # noqa: F403
from seat_inventory.models.records import *  # noqa: F403
from seat_inventory.models.requests import *  # noqa: F403
from seat_inventory.models.tickets import *  # noqa: F403
from seat_inventory.models.views import *  # noqa: F403
from seat_inventory.models.waitlist import *  # noqa: F403
