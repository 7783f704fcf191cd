"""Logger, Tracer and Metrics for the whole service (Powertools), and one metric per outcome.

Powertools reads POWERTOOLS_SERVICE_NAME, POWERTOOLS_METRICS_NAMESPACE and LOG_LEVEL itself;
template.yaml sets them in Globals.
"""

from __future__ import annotations

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics import MetricUnit

from seat_inventory.models import BatchResult, Outcome

logger = Logger()
tracer = Tracer()
metrics = Metrics()

OUTCOME_METRICS = {
    Outcome.CONFIRMED: "ReservationsConfirmed",
    Outcome.SOLD_OUT: "ReservationsSoldOut",
    Outcome.UNKNOWN_EVENT: "ReservationsUnknownEvent",
    Outcome.INVALID: "ReservationsInvalid",
}


def record_batch(result: BatchResult) -> None:
    """Logs each answer with its reservation id as correlation id and counts them by outcome."""
    counts = dict.fromkeys(Outcome, 0)
    duplicates = 0
    for outcome in result.published:
        counts[outcome.outcome] += 1
        duplicates += outcome.duplicate
        logger.set_correlation_id(outcome.reservation_id)
        logger.info(
            "reservation answered",
            outcome=outcome.outcome.value,
            event_id=outcome.event_id,
            seat_class=outcome.seat_class,
            quantity=outcome.quantity,
            duplicate=outcome.duplicate,
            reason=outcome.reason,
            message_id=outcome.message_id,
        )
    logger.set_correlation_id(None)
    for outcome_kind, name in OUTCOME_METRICS.items():
        metrics.add_metric(name=name, unit=MetricUnit.Count, value=counts[outcome_kind])
    metrics.add_metric(name="DuplicateDeliveries", unit=MetricUnit.Count, value=duplicates)
    metrics.add_metric(name="SeatsConfirmed", unit=MetricUnit.Count, value=result.seats_confirmed)
    metrics.add_metric(name="MessagesRetried", unit=MetricUnit.Count, value=len(result.failed_message_ids))
    if result.failed_message_ids:
        logger.warning("messages handed back for retry", message_ids=result.failed_message_ids)
