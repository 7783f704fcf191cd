"""Lambda entry point for the ticket issuer, run by an EventBridge schedule (`IssueSchedule`).

Numbers sold reservations and publishes their TICKETED outcomes (`logic.issue_tickets`), in rounds
for ISSUE_SECONDS (as long as the schedule: no gap between runs), ISSUE_SERIES_AT_ONCE series at
once (the client's connections and the publisher's calls are sized from it). With ISSUE_LANES
above 1 the scheduled run is lane 0 and starts the other lanes (asynchronous invocations of this
function, `issuer_lanes`) when they have work; a lane's event names it and the run's end. A
series left unnumbered fails the invocation once the run's work and metrics are done
(`IssueTicketsErrorsAlarm`).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from seat_inventory.dal.tickets import MAX_CONCURRENT_QUERIES
from seat_inventory.issuer_lanes import LambdaLaneStarter, parse_lane_event
from seat_inventory.logic.issue_tickets import LaneFanOut, run_issuer
from seat_inventory.models import WHOLE_INDEX, IssuerLane
from seat_inventory.observability import logger, metrics, record_issue, tracer
from seat_inventory.publishing.sns_publisher import PUBLISH_BATCH_LIMIT
from seat_inventory.settings import Settings
from seat_inventory.wiring import Adapters, ContainerAdapters, build_adapters, lane_starter

_container = ContainerAdapters(metrics)
# Left of the invocation's time when the last round starts: a round's transactions and
# publication fit in it.
MARGIN_SECONDS = 8
_executor: ThreadPoolExecutor | None = None
_lanes: LambdaLaneStarter | None = None


class IssueIncomplete(Exception):
    """The run's last round left series unnumbered (a fault outlasted its retries)."""


def publish_calls(series_at_once: int) -> int:
    """The publisher's calls at once: each series publishes a batch of up to 98 outcomes at a
    time, 10 PublishBatch calls, all at once."""
    return series_at_once * -(-98 // PUBLISH_BATCH_LIMIT)


def issuer_adapters(settings: Settings) -> Adapters:
    """The adapters with pools sized from the series at once: one DynamoDB connection per series
    plus the index queries' and outbox updates' pool, and `publish_calls` SNS connections."""
    return build_adapters(
        settings,
        dynamodb_connections=settings.issue_series_at_once + MAX_CONCURRENT_QUERIES,
        publish_calls=publish_calls(settings.issue_series_at_once),
    )


def _scheduled_lane(adapters: Adapters, context: LambdaContext, until: float) -> IssuerLane | LaneFanOut:
    """The scheduled run's lane: the whole index, or lane 0 starting the others."""
    global _lanes
    if adapters.settings.issue_lanes == 1:
        return WHOLE_INDEX
    if _lanes is None:
        _lanes = lane_starter(context.invoked_function_arn)
    return LaneFanOut(_lanes, adapters.settings.issue_lanes, until)


def reset_container() -> None:
    """Forgets the cached clients, as a new container would (tests and the local runner use it)."""
    global _lanes
    _container.reset()
    _lanes = None


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler(capture_response=False)
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    global _executor
    adapters = _container.get(issuer_adapters)
    if _executor is None:
        _executor = ThreadPoolExecutor(adapters.settings.issue_series_at_once, thread_name_prefix="series")
    now = adapters.clock.now()
    given = parse_lane_event(event)
    planned = given[1] if given else now + adapters.settings.issue_seconds
    until = max(now, min(planned, now + context.get_remaining_time_in_millis() / 1000 - MARGIN_SECONDS))
    rounds = run_issuer(
        adapters.store,
        adapters.publisher,
        adapters.clock,
        limit=adapters.settings.issue_limit,
        until=until,
        executor=_executor,
        lane=given[0] if given else _scheduled_lane(adapters, context, until),
    )
    record_issue(rounds)
    last = rounds[-1]
    if last.failed_series:
        raise IssueIncomplete("series left unnumbered: " + "; ".join(last.failed_series))
    return {
        "rounds": len(rounds),
        "numbered": sum(r.numbered for r in rounds),
        "tickets": sum(r.tickets for r in rounds),
        "published": sum(r.published for r in rounds),
        "unpublished": sum(r.unpublished for r in rounds),
        "lost_races": sum(r.lost_races for r in rounds),
        "oldest_wait_seconds": max(r.oldest_wait_ms for r in rounds) / 1000,
    }
