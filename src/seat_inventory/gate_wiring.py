"""Builds the gate's adapters (docs/guides/checkin.md) from the settings, once per container: the table,
the publisher, the clock, and the ticket key ring read from SSM on first use (`SsmKeyRing`)."""

from __future__ import annotations

from collections.abc import Callable

import boto3

from seat_inventory.dal.gate_table import GateTable
from seat_inventory.logic.checkin import Gate
from seat_inventory.logic.ticket_credentials import TicketKeyError, TicketKeyRing, parse_key_ring
from seat_inventory.publishing.sns_publisher import SnsOutcomePublisher
from seat_inventory.settings import Settings
from seat_inventory.wiring import CLIENT_CONFIG, SsmKeyRing, SystemClock


def build_gate(settings: Settings, session: boto3.session.Session | None = None) -> Gate:
    """The gate's collaborators; endpoints and credentials from the usual AWS variables."""
    session = session or boto3.session.Session()
    keys: Callable[[], TicketKeyRing | None] = lambda: None  # noqa: E731
    if settings.ticket_key_parameter:
        keys = SsmKeyRing(
            session,
            settings.ticket_key_parameter,
            settings.admission_key_refresh_seconds,
            parse=parse_key_ring,
            parse_error=TicketKeyError,
            what="ticket keys",
        )
    return Gate(
        store=GateTable(session.client("dynamodb", config=CLIENT_CONFIG), settings.table_name),
        keys=keys,
        clock=SystemClock(),
        publisher=SnsOutcomePublisher(
            session.client("sns", config=CLIENT_CONFIG), settings.outcomes_topic_arn
        ),
    )
