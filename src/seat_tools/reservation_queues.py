"""Which of a stack's reservation queues a request goes to (the template's `ReservationQueues`).

One SQS event source mapping has at most 200 event pollers ready from the first message
(`ProvisionedPollerConfig.MinimumPollers`), and a poller receives at most about 100 messages a
second, so one queue takes about 20,000 messages a second from a sale's first message. A stack
sized for more has several queues, each read by a mapping of its own (docs/guides/size-a-sale.md).
Every producer spreads its requests over them by the reservation id, the same way: the checkout
API's mapping templates (api/openapi.yaml) compute the index in VTL, the simulation calls
`queue_index`, and a checkout sending to SQS itself calls it (or computes the same) and sends to
`queue_name(...)` of the stack's `ReservationsQueueName` output. A confirm or cancel so goes to
the queue its reservation went to; nothing depends on it (a reservation's record is its
idempotency key whatever queue a message comes from), it only keeps a reservation's messages on
one mapping.

The index uses the id's last two characters, each looked up in `QUEUE_ALPHABET` (every character
an id may hold, docs/reference/contract.md), because that is what a mapping template can compute
with the string methods API Gateway's VTL documents (`length`, `substring`, `indexOf`): the
position of the last character plus 67 times that of the one before it, modulo the queues.
"""

from __future__ import annotations

# Every character a reservation id may hold (`parsing._ID_PATTERN`), in a fixed order.
QUEUE_ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ._:@-"
MAX_RESERVATION_QUEUES = 4  # template.yaml's ReservationQueues allows 1-4


def queue_index(reservation_id: str, queues: int) -> int:
    """The queue (0 to `queues` - 1) a message of `reservation_id` is sent to; 0 for one queue,
    for a one-character id, and for an id with a character outside the alphabet (the service
    refuses such an id)."""
    if queues <= 1 or len(reservation_id) < 2:
        return 0
    last = QUEUE_ALPHABET.find(reservation_id[-1])
    before = QUEUE_ALPHABET.find(reservation_id[-2])
    if last < 0 or before < 0:
        return 0
    return (last + len(QUEUE_ALPHABET) * before) % queues


def queue_name(stack_queue_name: str, index: int) -> str:
    """The name of queue `index` of a stack whose first queue is `stack_queue_name`
    (`<stack>-reservations`, then `<stack>-reservations-1`, ...)."""
    return stack_queue_name if index == 0 else f"{stack_queue_name}-{index}"
