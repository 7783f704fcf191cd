"""Lambda entry point for the reservations queue: parse the SQS event, reserve seats, report failures.

The event source mapping has `FunctionResponseTypes: [ReportBatchItemFailures]`: only the
messages listed in `batchItemFailures` come back; every other message is deleted.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from seat_inventory.logic.reserve_seats import QueueMessage, reserve_seats
from seat_inventory.logic.retry_deadline import conflict_deadline
from seat_inventory.observability import logger, metrics, record_batch, tracer
from seat_inventory.wiring import ContainerAdapters, build_adapters

_container = ContainerAdapters(metrics)


def reset_container() -> None:
    """Forgets the cached clients, as a new container would (tests and the local runner use it)."""
    _container.reset()


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler(capture_response=False)
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    # `build_adapters` is looked up now, so tests can patch this module's name.
    adapters = _container.get(build_adapters)
    messages = [QueueMessage(record["messageId"], record["body"]) for record in event["Records"]]
    result = reserve_seats(
        messages,
        store=adapters.store,
        publisher=adapters.publisher,
        settings=adapters.settings,
        clock=adapters.clock,
        hints=adapters.hints,
        deadline=conflict_deadline(adapters.clock.now(), context.get_remaining_time_in_millis()),
        admission=adapters.admission,
        waitlist=adapters.store,
    )
    record_batch(result)
    return {"batchItemFailures": [{"itemIdentifier": message_id} for message_id in result.failed_message_ids]}
