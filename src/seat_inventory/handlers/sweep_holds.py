"""Lambda entry point for the hold sweeper, run by an EventBridge schedule (`SweepSchedule`).

Releases the holds that ran out (seats back to `available`, outcome EXPIRED on SNS); see
`logic.sweep_holds`. The scheduled event's content is not used: every run looks at "now".
A transient fault leaves work for the next run; an error the service cannot classify fails
the invocation, so it shows in the function's Errors metric and alarm.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from seat_inventory.logic.sweep_holds import release_expired_holds
from seat_inventory.observability import logger, metrics, record_sweep, tracer
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
    return {
        "released": len(result.released),
        "seats_released": result.seats_released,
        "republished": result.republished,
        "unpublished": result.unpublished,
        "skipped": result.skipped,
        "failed_groups": result.failed_groups,
    }
