"""Lambda entry point for the hold sweeper, run by an EventBridge schedule (`SweepSchedule`).

Releases the holds that ran out (`logic.sweep_holds`), then offers the seats the waiting lists
hold to their heads (`logic.offer_rounds`, docs/guides/waiting-list.md). A release or a list's
round that still fails after the run's retries fails the invocation once the rest of its work and
metrics are done: it shows in the function's Errors metric (`SweepHoldsErrorsAlarm`) and in
`HoldsOverdue`.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from seat_inventory.logic.offer_rounds import run_offer_rounds
from seat_inventory.logic.sweep_holds import SweepIncomplete, release_expired_holds
from seat_inventory.observability import logger, metrics, record_offer_rounds, record_sweep, tracer
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
    result = release_expired_holds(
        adapters.store,
        adapters.publisher,
        adapters.clock,
        limit=adapters.settings.sweep_limit,
        rejection_ttl_seconds=adapters.settings.rejection_record_ttl_seconds,
        hints=adapters.hints,
    )
    record_sweep(result)
    rounds = run_offer_rounds(
        adapters.store, adapters.publisher, adapters.clock, limit=adapters.settings.sweep_limit
    )
    record_offer_rounds(rounds)
    if result.failed_groups or rounds.failed:
        raise SweepIncomplete(
            f"{result.holds_overdue} due hold(s) left unreleased, {len(rounds.failed)} waiting list(s)"
            " not served: " + "; ".join(result.failed_groups + rounds.failed)
        )
    return {
        "released": len(result.released),
        "seats_released": result.seats_released,
        "republished": result.republished,
        "unpublished": result.unpublished,
        "skipped": result.skipped,
        "failed_groups": result.failed_groups,
        "oldest_overdue_seconds": result.oldest_overdue_seconds,
        "offered": rounds.offered,
        "seats_offered": rounds.seats_offered,
        "seats_returned_from_lists": rounds.seats_returned,
        "offers_published": rounds.published,
    }
