"""The deployed stack's outputs that name its resources, and the variables that stand in for them.

Shared by the `seats` commands (which read either) and the local stack (which exports the
variables), so that neither layer imports the other.
"""

from __future__ import annotations

# Stack output name -> the environment variable that can stand in for it.
OUTPUT_ENV_VARS = {
    "InventoryTableName": "TABLE_NAME",
    "OutcomesTopicArn": "OUTCOMES_TOPIC_ARN",
    "ReservationsQueueUrl": "RESERVATIONS_QUEUE_URL",
    "DeadLetterQueueUrl": "DEAD_LETTER_QUEUE_URL",
}
