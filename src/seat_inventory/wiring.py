"""Builds the real adapters (boto3 clients, table, publisher) from the settings, once per container."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import boto3
from botocore.config import Config

from seat_inventory.dal.inventory_table import InventoryTable
from seat_inventory.logic.inventory_hints import InventoryHints
from seat_inventory.publishing.sns_publisher import SnsOutcomePublisher
from seat_inventory.settings import Settings

if TYPE_CHECKING:
    # Only for the annotation: each handler passes in the `metrics` its decorator flushes.
    from aws_lambda_powertools import Metrics

# botocore retries throttling and 5xx itself (standard mode) before the service sees an error;
# short timeouts keep one slow call from eating the whole function timeout.
CLIENT_CONFIG = Config(
    retries={"mode": "standard", "max_attempts": 4},
    connect_timeout=3,
    read_timeout=10,
    max_pool_connections=16,
)


class SystemClock:
    def now(self) -> float:
        return time.time()

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


@dataclass(frozen=True, slots=True)
class Adapters:
    settings: Settings
    store: InventoryTable
    publisher: SnsOutcomePublisher
    clock: SystemClock
    hints: InventoryHints


def build_adapters(settings: Settings, session: boto3.session.Session | None = None) -> Adapters:
    """Creates the clients; endpoints and credentials come from the usual AWS variables
    (AWS_ENDPOINT_URL, AWS_ENDPOINT_URL_DYNAMODB, AWS_PROFILE, ...), so local emulators just work."""
    session = session or boto3.session.Session()
    return Adapters(
        settings=settings,
        store=InventoryTable(session.client("dynamodb", config=CLIENT_CONFIG), settings.table_name),
        publisher=SnsOutcomePublisher(
            session.client("sns", config=CLIENT_CONFIG), settings.outcomes_topic_arn
        ),
        clock=SystemClock(),
        hints=InventoryHints(),
    )


class ContainerAdapters:
    """The adapters of one Lambda container: built on the first invocation, reused while it is warm.

    Each handler module keeps one; `get` takes the factory at call time, so tests that patch the
    handler module's `build_adapters` are honoured.
    """

    def __init__(self, metrics: Metrics) -> None:
        self._metrics = metrics
        self._adapters: Adapters | None = None

    def get(self, factory: Callable[[Settings], Adapters]) -> Adapters:
        """Settings read from the environment once, the metrics' namespace and `service` dimension
        set from them (not from whatever the environment held when Powertools was imported), the
        adapters built."""
        if self._adapters is None:
            settings = Settings.from_env(os.environ)
            self._metrics.namespace = settings.metrics_namespace
            self._metrics.service = settings.service_name
            self._adapters = factory(settings)
        return self._adapters

    def reset(self) -> None:
        """Forgets the cached clients, as a new container would (tests and the local runner use it)."""
        self._adapters = None
