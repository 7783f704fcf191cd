"""Logger, Tracer and Metrics for the whole service (Powertools), and one metric per outcome.

Powertools reads POWERTOOLS_SERVICE_NAME, POWERTOOLS_METRICS_NAMESPACE and LOG_LEVEL itself;
template.yaml sets them in Globals.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics import MetricUnit

from seat_inventory.models import BatchResult, Outcome

if TYPE_CHECKING:
    from seat_inventory.logic.sweep_holds import SweepResult

logger = Logger()
tracer = Tracer()
metrics = Metrics()

OUTCOME_METRICS = {
    Outcome.CONFIRMED: "ReservationsConfirmed",
    Outcome.SOLD_OUT: "ReservationsSoldOut",
    Outcome.UNKNOWN_EVENT: "ReservationsUnknownEvent",
    Outcome.INVALID: "ReservationsInvalid",
    Outcome.HELD: "ReservationsHeld",
    Outcome.EXPIRED: "ReservationsExpired",
    Outcome.CANCELLED: "ReservationsCancelled",
    Outcome.LIMIT_EXCEEDED: "ReservationsLimitExceeded",
    Outcome.SALE_CLOSED: "ReservationsSaleClosed",
    Outcome.UNKNOWN_RESERVATION: "ReservationsUnknownReservation",
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
            type=outcome.request_type.value if outcome.request_type else None,
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
    metrics.add_metric(name="SeatsHeld", unit=MetricUnit.Count, value=result.seats_held)
    metrics.add_metric(name="SeatsReleased", unit=MetricUnit.Count, value=result.seats_released)
    metrics.add_metric(name="MessagesRetried", unit=MetricUnit.Count, value=len(result.failed_message_ids))
    if result.failed_message_ids:
        logger.warning("messages handed back for retry", message_ids=result.failed_message_ids)


def record_sweep(result: SweepResult) -> None:
    """Logs each released hold and counts the sweeper's work (`HoldsExpired` and friends)."""
    for outcome in result.released:
        logger.set_correlation_id(outcome.reservation_id)
        logger.info(
            "hold expired",
            outcome=outcome.outcome.value,
            event_id=outcome.event_id,
            seat_class=outcome.seat_class,
            quantity=outcome.quantity,
            expires_at=outcome.hold_expires_at,
        )
    logger.set_correlation_id(None)
    metrics.add_metric(name="HoldsExpired", unit=MetricUnit.Count, value=len(result.released))
    metrics.add_metric(name="SeatsReleased", unit=MetricUnit.Count, value=result.seats_released)
    metrics.add_metric(name="ExpiriesRepublished", unit=MetricUnit.Count, value=result.republished)
    metrics.add_metric(name="ExpiriesUnpublished", unit=MetricUnit.Count, value=result.unpublished)
    metrics.add_metric(name="HoldsSkipped", unit=MetricUnit.Count, value=result.skipped)
    if result.unpublished:
        logger.warning("expiries left in the outbox for the next run", count=result.unpublished)
    if result.failed_groups:
        logger.warning("seat classes left for the next run", groups=result.failed_groups)
