"""One local stack (DynamoDB Local + moto server, resources from template.yaml) for the whole session.

The tests start and stop the engines themselves, on 127.0.0.1 (DynamoDB Local also listens on the
other interfaces: it has no bind option). Each test uses its own event id, so they share the
stack without seeing each other's inventory; the stack is stopped even when a test fails.

DynamoDB Local sits behind the AWS contention layer (docs/explanation/contention.md): transactions on a held
item are cancelled, hot partitions throttle, requests take AWS's latencies. Set
`SEATS_AWS_CONTENTION=off` to run on DynamoDB Local alone, and `SEATS_AWS_CONTENTION_TIME_SCALE`
to stretch (> 1) or shrink (< 1) the modelled time on the wall clock (default 1).
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from seat_tools.contention.model import ContentionSettings
from seat_tools.local.stack import LocalStack
from tests.system_tools import require_tools

CONTENTION_ENV = "SEATS_AWS_CONTENTION"
TIME_SCALE_ENV = "SEATS_AWS_CONTENTION_TIME_SCALE"


def contention_settings() -> ContentionSettings | None:
    """The layer's settings for this test session, from the environment (None: off)."""
    switch = os.environ.get(CONTENTION_ENV, "on").strip().lower()
    if switch in ("off", "0", "false", "no"):
        return None
    if switch not in ("on", "1", "true", "yes"):
        raise pytest.UsageError(f"{CONTENTION_ENV} is on or off, not {switch!r}")
    try:
        return ContentionSettings(time_scale=float(os.environ.get(TIME_SCALE_ENV, "1")))
    except ValueError as exc:
        raise pytest.UsageError(f"{TIME_SCALE_ENV}: {exc}") from exc


@pytest.fixture(scope="session")
def local_stack(request: pytest.FixtureRequest) -> Iterator[LocalStack]:
    stack = LocalStack(aws_contention=contention_settings())
    stack.start()
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(f"\nlocal stack: {stack.contention_description()}")
    try:
        yield stack
    finally:
        stack.stop()


@pytest.fixture(scope="session")
def redis_program() -> str:
    """redis-server's path; skips without it (fails in CI, which installs it: tests/system_tools.py)."""
    return require_tools("redis-server")["redis-server"]
