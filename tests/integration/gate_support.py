"""The gate on moto: a sale numbered by the real issuer, the ticket key ring in SSM, and the gate's
handler driven with API Gateway proxy events (docs/guides/checkin.md)."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

import boto3
import pytest

from seat_inventory.dal.gate_table import GateTable
from seat_inventory.dal.inventory_table import InventoryTable
from seat_inventory.gate_models import CheckinList
from seat_inventory.handlers import gate_api
from seat_inventory.logic.issue_tickets import issue_tickets
from seat_inventory.logic.ticket_credentials import TicketKeyRing, ring_text, with_key
from seat_inventory.publishing.sns_publisher import SnsOutcomePublisher
from seat_inventory.wiring import SystemClock
from tests.integration.conftest import REGION, LambdaContext, Stack, sqs_event

KEY_PARAMETER = "/seats/test/ticket-keys"
RING = with_key(None, "k1", b"k" * 32, make_current=True)


def proxy_event(
    method: str, resource: str, *, body: Any = None, path_id: str | None = None
) -> dict[str, Any]:
    """An API Gateway REST proxy event, as the Lambda proxy integration sends it."""
    path = resource.replace("{id}", path_id or "")
    return {
        "resource": resource,
        "path": path,
        "httpMethod": method,
        "headers": {"Content-Type": "application/json"},
        "pathParameters": {"id": path_id} if path_id is not None else None,
        "queryStringParameters": None,
        "body": body if isinstance(body, str) or body is None else json.dumps(body),
        "isBase64Encoded": False,
        "requestContext": {"resourcePath": resource, "httpMethod": method, "stage": "v1"},
    }


@dataclass
class GateStack:
    """The moto stack with a gate: sell, number, then call the gate's routes."""

    stack: Stack
    session: boto3.session.Session
    ring: TicketKeyRing = RING
    nonces: int = 0
    gates: list[str] = field(default_factory=list)

    @property
    def table(self) -> GateTable:
        return GateTable(self.session.client("dynamodb"), self.stack.table_name)

    def put_ring(self, ring: TicketKeyRing) -> None:
        self.ring = ring
        self.session.client("ssm").put_parameter(
            Name=KEY_PARAMETER, Value=ring_text(ring), Type="SecureString", Overwrite=True
        )
        gate_api.reset_container()

    def sell(
        self, rid: str, quantity: int = 2, customer: str = "c-1", event: str = "gig", **extra: Any
    ) -> None:
        body = {
            "reservation_id": rid,
            "event_id": event,
            "quantity": quantity,
            "customer_id": customer,
            **extra,
        }
        self.stack.invoke(sqs_event(body))

    def number(self) -> int:
        store = InventoryTable(self.session.client("dynamodb"), self.stack.table_name)
        publisher = SnsOutcomePublisher(self.session.client("sns"), self.stack.topic_arn)
        return issue_tickets(store, publisher, SystemClock(), limit=1000).numbered

    def call(
        self, method: str, resource: str, *, body: Any = None, path_id: str | None = None
    ) -> tuple[int, Any]:
        answer = gate_api.lambda_handler(
            proxy_event(method, resource, body=body, path_id=path_id), LambdaContext()
        )
        return answer["statusCode"], json.loads(answer["body"])

    def tickets(self, rid: str) -> list[dict[str, Any]]:
        status, view = self.call("GET", "/reservations/{id}/tickets", path_id=rid)
        assert status == 200, view
        return list(view["tickets"])

    def secrets(self, rid: str) -> list[str]:
        return [t["secret"] for t in self.tickets(rid)]

    def scan(
        self,
        secret: Any,
        *,
        gate: str = "g1",
        checkin_list: str = "main",
        nonce: str | None = None,
        direction: str = "in",
        event: str = "gig",
    ) -> dict[str, Any]:
        self.nonces += 1
        body = {
            "event_id": event,
            "list": checkin_list,
            "gate": gate,
            "nonce": nonce or f"n-{self.nonces}",
            "secret": secret,
            "direction": direction,
        }
        status, answer = self.call("POST", "/checkins", body=body)
        assert status in (200, 400), answer
        return dict(answer)

    def transfer(
        self, secret: str, to: str, *, giver: str = "c-1", transfer_id: str = "t-1"
    ) -> tuple[int, Any]:
        body = {"transfer_id": transfer_id, "secret": secret, "from_customer_id": giver, "to_customer_id": to}
        return self.call("POST", "/transfers", body=body)

    def upload(self, *scans: dict[str, Any]) -> list[dict[str, Any]]:
        status, answer = self.call("POST", "/checkins/uploads", body={"scans": list(scans)})
        assert status == 200, answer
        return list(answer["answers"])

    def offline_scan(
        self,
        secret: str,
        *,
        gate: str,
        nonce: str,
        at_ms: int,
        checkin_list: str = "main",
        direction: str = "in",
    ) -> dict[str, Any]:
        return {
            "event_id": "gig",
            "list": checkin_list,
            "gate": gate,
            "nonce": nonce,
            "secret": secret,
            "scanned_at": at_ms,
            "direction": direction,
        }


def gate_stack(stack: Stack, monkeypatch: pytest.MonkeyPatch) -> GateStack:
    """The gate over the moto `stack`: the key ring in SSM, two lists (main: no re-entry; yard:
    re-entry), event gig of 20 GA seats (limit 4 per customer) and event other of 10."""
    session = boto3.session.Session(region_name=REGION)
    monkeypatch.setenv("TICKET_KEY_PARAMETER", KEY_PARAMETER)
    monkeypatch.setattr(gate_api, "build_gate", lambda settings: _build(settings, session))
    gate = GateStack(stack, session)
    gate.put_ring(RING)
    stack.create_event("gig", 20)
    stack.create_event("other", 10)
    from seat_inventory.models import SeatKey
    from seat_tools.operator_commands import OperatorTable

    OperatorTable(stack.dynamodb, stack.table_name).set_max_per_customer(SeatKey("gig", "GA"), 4)
    gate.table.write_checkin_list(CheckinList("gig", "main"))
    gate.table.write_checkin_list(CheckinList("gig", "yard", allow_reentry=True))
    gate.table.write_checkin_list(CheckinList("other", "main"))
    return gate


def _build(settings: Any, session: boto3.session.Session) -> Any:
    from seat_inventory.gate_wiring import build_gate

    return build_gate(settings, session)


def now_ms() -> int:
    return int(time.time() * 1000)
