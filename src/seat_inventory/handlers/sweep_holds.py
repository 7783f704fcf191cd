"""Lambda entry point for the hold sweeper, run by an EventBridge schedule (`SweepSchedule`).

Releases the holds that ran out (seats back to `available`, outcome EXPIRED on SNS); see
`logic.sweep_holds`. The scheduled event's content is not used: every run looks at "now".
A transient fault leaves work for the next run; an error the service cannot classify fails
the invocation, so it shows in the function's Errors metric and alarm.
"""

from __future__ import annotations

import os
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from seat_inventory.logic.sweep_holds import release_expired_holds
from seat_inventory.observability import logger, metrics, record_sweep, tracer
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
