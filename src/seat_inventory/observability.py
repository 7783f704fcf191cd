"""Logger, Tracer and Metrics for the whole service (Powertools), and one metric per outcome.

Powertools reads POWERTOOLS_SERVICE_NAME, POWERTOOLS_METRICS_NAMESPACE, POWERTOOLS_TRACE_DISABLED
and LOG_LEVEL itself; template.yaml sets them in Globals.

The tracer is lazy: constructing Powertools' `Tracer` imports the X-Ray SDK (about 0.35 s, half of
the handler's cold start), so it is built on the first invocation, and only when tracing is on
(template parameter `Tracing=Active` sets POWERTOOLS_TRACE_DISABLED=false). With tracing off, the
X-Ray SDK is never imported.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.shared.functions import resolve_truthy_env_var_choice

from seat_inventory.models import BatchResult, Outcome

if TYPE_CHECKING:
    from seat_inventory.logic.issue_tickets import IssueResult
    from seat_inventory.logic.offer_rounds import RoundsResult
    from seat_inventory.logic.sweep_holds import SweepResult

Handler = TypeVar("Handler", bound=Callable[..., Any])


def tracing_requested(environ: Mapping[str, str]) -> bool:
    """Whether POWERTOOLS_TRACE_DISABLED leaves tracing on (Powertools' own truthy rules)."""
    return not resolve_truthy_env_var_choice(env=environ.get("POWERTOOLS_TRACE_DISABLED", "false"))


class LazyTracer:
    """`capture_lambda_handler` of Powertools' Tracer, with the Tracer built on first use.

    On the first invocation it reads POWERTOOLS_TRACE_DISABLED: when tracing is off the handler
    runs as it is, and the X-Ray SDK is never imported; when it is on, the handler is wrapped by
    a real `Tracer` (which still turns itself off outside Lambda, as Powertools does).
    """

    def capture_lambda_handler(self, *, capture_response: bool = True) -> Callable[[Handler], Handler]:
        def decorate(handler: Handler) -> Handler:
            resolved: list[Callable[..., Any]] = []

            @functools.wraps(handler)
            def run(event: Any, context: Any) -> Any:
                if not resolved:
                    resolved.append(
                        _traced(handler, capture_response) if tracing_requested(os.environ) else handler
                    )
                return resolved[0](event, context)

            return run  # type: ignore[return-value]

        return decorate


def _traced(handler: Callable[..., Any], capture_response: bool) -> Callable[..., Any]:
    from aws_lambda_powertools import Tracer  # imports the X-Ray SDK: only when tracing is on

    return Tracer().capture_lambda_handler(handler, capture_response=capture_response)


logger = Logger()
tracer = LazyTracer()
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
    Outcome.ADMISSION_REFUSED: "ReservationsAdmissionRefused",
    # Mapped classes (docs/guides/seat-maps.md).
    Outcome.SEATS_TAKEN: "ReservationsSeatsTaken",
    Outcome.ORPHAN_SEAT: "ReservationsOrphanSeat",
}


def record_batch(result: BatchResult) -> None:
    """Logs the batch's answers in one line (`batch answered`: each answer's reservation id,
    outcome, message id, and its reason when it has one) and counts them by outcome.

    One line a batch, not one an answer: Powertools formats each line (about a fifth of a full
    batch's CPU at one line an answer); every answer is also its own message on the outcome topic.
    A reservation's line is found by its id (`sam logs --filter '"<reservation id>"'`)."""
    counts = dict.fromkeys(Outcome, 0)
    duplicates = 0
    answers: list[dict[str, Any]] = []
    for outcome in result.published:
        counts[outcome.outcome] += 1
        duplicates += outcome.duplicate
        answer: dict[str, Any] = {
            "reservation_id": outcome.reservation_id,
            "outcome": outcome.outcome.value,
            "message_id": outcome.message_id,
        }
        if outcome.reason:
            answer["reason"] = outcome.reason
        if outcome.duplicate:
            answer["duplicate"] = True
        answers.append(answer)
    if answers:
        logger.info(
            "batch answered",
            answers=answers,
            outcomes={kind.value: n for kind, n in counts.items() if n},
        )
    for outcome_kind, name in OUTCOME_METRICS.items():
        metrics.add_metric(name=name, unit=MetricUnit.Count, value=counts[outcome_kind])
    metrics.add_metric(name="DuplicateDeliveries", unit=MetricUnit.Count, value=duplicates)
    metrics.add_metric(name="SeatsConfirmed", unit=MetricUnit.Count, value=result.seats_confirmed)
    metrics.add_metric(name="SeatsHeld", unit=MetricUnit.Count, value=result.seats_held)
    metrics.add_metric(name="SeatsReleased", unit=MetricUnit.Count, value=result.seats_released)
    metrics.add_metric(name="MessagesRetried", unit=MetricUnit.Count, value=len(result.failed_message_ids))
    reasons: dict[str, list[str]] = {}
    for message_id in result.failed_message_ids:
        reasons.setdefault(result.handed_back.get(message_id, "not recorded"), []).append(message_id)
    for reason, message_ids in reasons.items():
        logger.warning("messages handed back to the queue", reason=reason, message_ids=message_ids)


def record_offer_rounds(result: RoundsResult) -> None:
    """Counts the waiting lists' offers (`SeatsOffered` and friends); logs lists not served."""
    metrics.add_metric(name="WaitlistOffers", unit=MetricUnit.Count, value=result.offered)
    metrics.add_metric(name="SeatsOffered", unit=MetricUnit.Count, value=result.seats_offered)
    metrics.add_metric(name="SeatsReturnedFromLists", unit=MetricUnit.Count, value=result.seats_returned)
    metrics.add_metric(name="OffersUnpublished", unit=MetricUnit.Count, value=result.unpublished)
    if result.failed:
        logger.error("waiting lists not served", lists=result.failed)


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
    metrics.add_metric(name="HoldsOverdue", unit=MetricUnit.Count, value=result.holds_overdue)
    metrics.add_metric(
        name="OldestOverdueHoldSeconds", unit=MetricUnit.Seconds, value=result.oldest_overdue_seconds
    )
    if result.unpublished:
        logger.warning("expiries left in the outbox for the next run", count=result.unpublished)
    if result.failed_groups:
        logger.error(
            "due holds left unreleased after the run's retries",
            holds_overdue=result.holds_overdue,
            groups=result.failed_groups,
        )


def record_issue(rounds: Sequence[IssueResult]) -> None:
    """Counts the ticket issuer's work over a run's rounds (`TicketsNumbered` and friends) and its
    delay (`OldestUnnumberedSeconds`: how long the oldest sale a round found had waited)."""
    numbered = sum(r.numbered for r in rounds)
    metrics.add_metric(name="ReservationsNumbered", unit=MetricUnit.Count, value=numbered)
    metrics.add_metric(name="TicketsNumbered", unit=MetricUnit.Count, value=sum(r.tickets for r in rounds))
    metrics.add_metric(name="TicketBatches", unit=MetricUnit.Count, value=sum(len(r.batches) for r in rounds))
    metrics.add_metric(name="TicketRacesLost", unit=MetricUnit.Count, value=sum(r.lost_races for r in rounds))
    metrics.add_metric(
        name="TicketedUnpublished", unit=MetricUnit.Count, value=sum(r.unpublished for r in rounds)
    )
    oldest = max((r.oldest_wait_ms for r in rounds), default=0) / 1000
    metrics.add_metric(name="OldestUnnumberedSeconds", unit=MetricUnit.Seconds, value=oldest)
    failed = [f for r in rounds for f in r.failed_series]
    if failed:
        logger.error("series left unnumbered after a round's retries", series=failed)
    logger.info("ticket issuer run", rounds=len(rounds), numbered=numbered, oldest_wait_seconds=oldest)
