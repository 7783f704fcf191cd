"""The ticket issuer's lanes (docs/guides/tickets.md, "Lanes"): the event that starts one, and the
adapter that starts them, one asynchronous Invoke of the issuer function each.

The scheduled run is lane 0; it starts lanes 1 .. count - 1 with `{"lane": i, "lanes": count,
"until": epoch seconds}`, and each numbers its share until then.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from seat_inventory.models import IssuerLane

# Invoke calls in flight at once while starting the lanes (the client's connection pool).
STARTS_AT_ONCE = 16


class LaneEventError(ValueError):
    """An issuer event names a lane it cannot be."""


def lane_event(index: int, count: int, until: float) -> dict[str, Any]:
    return {"lane": index, "lanes": count, "until": until}


def parse_lane_event(event: Mapping[str, Any]) -> tuple[IssuerLane, float] | None:
    """The lane and the epoch second it numbers until; None for the schedule's event (no `lane`)."""
    if "lane" not in event:
        return None
    try:
        lane = IssuerLane(int(event["lane"]), int(event["lanes"]))
        until = float(event["until"])
    except (KeyError, TypeError, ValueError) as exc:
        raise LaneEventError(f"not an issuer lane's event ({exc}): {json.dumps(event)[:200]}") from exc
    if lane.index == 0 or not math.isfinite(until):
        raise LaneEventError(
            f"not an issuer lane's event (lane 0 is the schedule's): {json.dumps(event)[:200]}"
        )
    return lane, until


class LambdaLaneStarter:
    """Starts lanes with `Invoke` (InvocationType Event) of `function` (the issuer's own ARN)."""

    def __init__(self, client: Any, function: str) -> None:
        self._client = client
        self._function = function

    def start_lanes(self, lanes: Sequence[int], count: int, until: float) -> list[int]:
        def start(index: int) -> bool:
            try:
                self._client.invoke(
                    FunctionName=self._function,
                    InvocationType="Event",
                    Payload=json.dumps(lane_event(index, count, until)).encode(),
                )
            except (BotoCoreError, ClientError):
                return False
            return True

        with ThreadPoolExecutor(min(STARTS_AT_ONCE, max(1, len(lanes)))) as pool:
            started = list(pool.map(start, lanes))
        return [index for index, ok in zip(lanes, started, strict=True) if not ok]
