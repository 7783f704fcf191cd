"""Builds the gate's adapters (docs/guides/checkin.md) from the settings, once per container: the table,
the publisher, the clock, and the ticket key ring read from SSM on first use."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import boto3
from botocore.exceptions import BotoCoreError, ClientError

from seat_inventory.dal.gate_table import GateTable
from seat_inventory.logic.checkin import Gate
from seat_inventory.logic.ticket_credentials import TicketKeyError, TicketKeyRing, parse_key_ring
from seat_inventory.models import RetryableError
from seat_inventory.publishing.sns_publisher import SnsOutcomePublisher
from seat_inventory.settings import Settings
from seat_inventory.wiring import ADMISSION_KEYS_STALE_SECONDS, CLIENT_CONFIG, SystemClock


class SsmTicketKeys:
    """The ticket key ring from an SSM SecureString parameter: read on first use (never at import
    or cold start), kept for `refresh_seconds` (a rotation reaches every container within it),
    and kept in use for up to 15 minutes while a refresh fails. A parameter that cannot be read,
    or holds no valid ring, raises `RetryableError` (the scanner is told to try again)."""

    def __init__(
        self,
        session: boto3.session.Session,
        name: str,
        refresh_seconds: int,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._session = session
        self._name = name
        self._refresh_seconds = refresh_seconds
        self._clock = clock
        self._client: Any = None
        self._ring: TicketKeyRing | None = None
        self._read_at = 0.0
        self.reads = 0

    def __call__(self) -> TicketKeyRing | None:
        now = self._clock()
        if self._ring is not None and now - self._read_at < self._refresh_seconds:
            return self._ring
        try:
            ring = self._read()
        except RetryableError:
            if self._ring is not None and now - self._read_at < ADMISSION_KEYS_STALE_SECONDS:
                return self._ring
            raise
        self._ring, self._read_at = ring, now
        return ring

    def _read(self) -> TicketKeyRing:
        if self._client is None:
            self._client = self._session.client("ssm", config=CLIENT_CONFIG)
        self.reads += 1
        try:
            response = self._client.get_parameter(Name=self._name, WithDecryption=True)
            return parse_key_ring(response["Parameter"]["Value"])
        except (BotoCoreError, ClientError) as exc:
            raise RetryableError(f"ticket keys: SSM parameter {self._name} not read: {exc}") from exc
        except TicketKeyError as exc:
            raise RetryableError(f"ticket keys: SSM parameter {self._name}: {exc}") from exc


def build_gate(settings: Settings, session: boto3.session.Session | None = None) -> Gate:
    """The gate's collaborators; endpoints and credentials from the usual AWS variables."""
    session = session or boto3.session.Session()
    keys: Callable[[], TicketKeyRing | None] = lambda: None  # noqa: E731
    if settings.ticket_key_parameter:
        keys = SsmTicketKeys(session, settings.ticket_key_parameter, settings.admission_key_refresh_seconds)
    return Gate(
        store=GateTable(session.client("dynamodb", config=CLIENT_CONFIG), settings.table_name),
        keys=keys,
        clock=SystemClock(),
        publisher=SnsOutcomePublisher(
            session.client("sns", config=CLIENT_CONFIG), settings.outcomes_topic_arn
        ),
    )
