"""Lambda entry point for the reservations queue: parse the SQS event, reserve seats, report failures.

The event source mapping has `FunctionResponseTypes: [ReportBatchItemFailures]`: only the
messages listed in `batchItemFailures` come back; every other message is deleted.
"""

from __future__ import annotations

import os
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from seat_inventory.logic.reserve_seats import QueueMessage, reserve_seats
from seat_inventory.observability import logger, metrics, record_batch, tracer
from seat_inventory.settings import Settings
from seat_inventory.wiring import Adapters, build_adapters

_adapters: Adapters | None = None


def _container_adapters() -> Adapters:
    """Settings and clients are built on the first invocation and reused by the warm container."""
    global _adapters
    if _adapters is None:
        settings = Settings.from_env(os.environ)
        metrics.namespace = settings.metrics_namespace
        _adapters = build_adapters(settings)
    return _adapters


def reset_container() -> None:
    """Forgets the cached clients, as a new container would (tests and the local runner use it)."""
    global _adapters
    _adapters = None


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler(capture_response=False)
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    adapters = _container_adapters()
    messages = [QueueMessage(record["messageId"], record["body"]) for record in event["Records"]]
    result = reserve_seats(
        messages,
        store=adapters.store,
        publisher=adapters.publisher,
        settings=adapters.settings,
        clock=adapters.clock,
        hints=adapters.hints,
    )
    record_batch(result)
    return {"batchItemFailures": [{"itemIdentifier": message_id} for message_id in result.failed_message_ids]}
