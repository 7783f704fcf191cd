"""One local stack (DynamoDB Local + moto server, resources from template.yaml) for the whole session.

The tests start and stop the engines themselves, on 127.0.0.1 (DynamoDB Local also listens on the
other interfaces: it has no bind option). Each test uses its own event id, so they share the
stack without seeing each other's inventory; the stack is stopped even when a test fails.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from seat_inventory.local.stack import LocalStack


@pytest.fixture(scope="session")
def local_stack() -> Iterator[LocalStack]:
    stack = LocalStack()
    stack.start()
    try:
        yield stack
    finally:
        stack.stop()
