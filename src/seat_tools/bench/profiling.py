"""`seats bench --profile-handler FILE`: where one invocation's time goes, by pyinstrument.

Runs the service's handler in this process on the local stack: a class of `capacity` seats and
`batches` SQS batches of 100 one-seat requests (the first one unprofiled: it builds the clients),
so the profile shows the steady state of a warm container on a hot on-sale, selling out part-way.
"""

from __future__ import annotations

import io
import json
import os
import uuid
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

from seat_inventory.models import SeatKey
from seat_tools.local.stack import LocalStack
from seat_tools.operator_commands import OperatorTable
from seat_tools.traffic import reservation_body

BATCH = 100
# The directory that holds the packages (src/): the profile names files relative to it, as
# pyinstrument does for installed packages, instead of by this machine's absolute path.
SOURCE_ROOT = Path(__file__).resolve().parents[2]


class _Context:
    function_name = "bench-profile"
    function_version = "$LATEST"
    memory_limit_in_mb = 512
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:bench-profile"
    aws_request_id = "bench-profile"

    def get_remaining_time_in_millis(self) -> int:
        return 30_000


def relative_to_sources(text: str) -> str:
    """The profile's text with this checkout's source files named from src/, not by absolute path."""
    return text.replace(f"{SOURCE_ROOT}{os.sep}", "")


def profile_handler(stack: LocalStack, *, capacity: int = 500, batches: int = 11) -> str:
    """The profile as text (the handler's own log lines are discarded)."""
    from pyinstrument import Profiler

    from seat_inventory.handlers import reserve_seats as handler_module
    from seat_inventory.observability import logger

    saved = dict(os.environ)
    level = logger.log_level
    logger.setLevel("WARNING")  # its handler holds the real stdout: redirect_stdout would not catch it
    os.environ.update(stack.environment())
    handler_module.reset_container()
    try:
        key = SeatKey(f"profile-{uuid.uuid4().hex[:8]}", "GA")
        OperatorTable(stack.client("dynamodb"), stack.table_name).create_seat_class(key, capacity)
        events: list[dict[str, Any]] = [
            {
                "Records": [
                    {
                        "messageId": str(uuid.uuid4()),
                        "body": json.dumps(reservation_body(f"p{b}-{n}", key.event_id, 1, f"c{b}-{n}", "GA")),
                    }
                    for n in range(BATCH)
                ]
            }
            for b in range(batches)
        ]
        profiler = Profiler(interval=0.001)
        with redirect_stdout(io.StringIO()):
            handler_module.lambda_handler(events[0], _Context())
            profiler.start()
            for event in events[1:]:
                handler_module.lambda_handler(event, _Context())
            profiler.stop()
        return relative_to_sources(str(profiler.output_text(unicode=False, color=False)))
    finally:
        logger.setLevel(level)
        handler_module.reset_container()
        os.environ.clear()
        os.environ.update(saved)
