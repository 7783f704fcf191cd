"""The gate under concurrency on DynamoDB Local behind the AWS contention layer (docs/guides/checkin.md):
the same ticket scanned at 10 gates at once is let in once; a nonce replayed at 10 gates at once is
one admission; 10 offline uploads of one ticket at once keep every scan and report every conflict;
10 transfers of one secret at once pass it on once. Each gate has its own client (its own
container); a transient fault (a transaction conflict on AWS) is what a scanner retries with the
same request, as here.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

import pytest

from seat_inventory.dal.gate_table import GateTable
from seat_inventory.gate_models import CheckinList, GateResult, ScanAnswer, TicketClaim
from seat_inventory.logic.checkin import Gate, ScanRequest, check_in, upload_scans
from seat_inventory.logic.ticket_credentials import claim_of, parse_key_ring, sign_ticket
from seat_inventory.logic.transfer_tickets import TransferRequest, transfer_ticket
from seat_inventory.models import RetryableError, SeatKey
from seat_inventory.publishing.sns_publisher import SnsOutcomePublisher
from seat_inventory.wiring import SystemClock
from seat_tools.local.runner import LocalRunner, runner_config
from seat_tools.local.stack import LocalStack
from seat_tools.operator_commands import OperatorTable

pytestmark = pytest.mark.local_stack

GATES = 10
T = TypeVar("T")


@dataclass
class SoldEvent:
    event_id: str
    secrets: list[str]
    stack: LocalStack

    def gate(self) -> Gate:
        """A gate of its own: its own DynamoDB client and caches (another container)."""
        ring = parse_key_ring(
            self.stack.client("ssm").get_parameter(Name=self.stack.ticket_key_parameter, WithDecryption=True)[
                "Parameter"
            ]["Value"]
        )
        return Gate(
            GateTable(self.stack.client("dynamodb"), self.stack.table_name),
            lambda: ring,
            SystemClock(),
            SnsOutcomePublisher(self.stack.client("sns"), self.stack.topic_arn),
        )


@pytest.fixture(scope="module")
def sold(local_stack: LocalStack) -> Iterator[SoldEvent]:
    """An event of 12 reservations of 2 seats, sold through the queue and numbered by the issuer."""
    event_id = f"doors-{uuid.uuid4().hex[:6]}"
    OperatorTable(local_stack.client("dynamodb"), local_stack.table_name).create_seat_class(
        SeatKey(event_id, "GA"), 100
    )
    table = GateTable(local_stack.client("dynamodb"), local_stack.table_name)
    table.write_checkin_list(CheckinList(event_id, "main"))
    table.write_checkin_list(CheckinList(event_id, "yard", allow_reentry=True))
    rids = [f"{event_id}-{n}" for n in range(12)]
    sqs = local_stack.client("sqs")
    with LocalRunner(runner_config(local_stack, workers=2, issuer=True)):
        for rid in rids:
            body = f'{{"reservation_id": "{rid}", "event_id": "{event_id}", "quantity": 2, "customer_id": "c-{rid}"}}'
            sqs.send_message(QueueUrl=local_stack.queue_url, MessageBody=body)
        deadline = time.monotonic() + 120
        while True:
            tickets = [table.read_reservation_tickets(rid) or [] for rid in rids]
            if all(len(t) == 2 for t in tickets) or time.monotonic() > deadline:
                break
            time.sleep(1)
    assert all(len(t) == 2 for t in tickets), "the sale was not numbered"
    event = SoldEvent(event_id, [], local_stack)
    gate = event.gate()
    ring = gate.keys()
    assert ring is not None
    for held in (h for t in tickets for h in t):
        claim = TicketClaim(held.ticket, held.seat.seat_class, held.seat.seat, 0, "")
        event.secrets.append(sign_ticket(ring, claim))
    yield event


def retried(call: Callable[[], T]) -> T:
    """What a scanner does with a 503: the same request again."""
    for attempt in range(20):
        try:
            return call()
        except RetryableError:
            time.sleep(0.01 * (attempt + 1))
    raise AssertionError("still failing transiently after 20 attempts")


def at_once(count: int, task: Callable[[int], T]) -> list[T]:
    """`task(0..count-1)` from `count` threads released together."""
    barrier = threading.Barrier(count)

    def run(index: int) -> T:
        barrier.wait()
        return task(index)

    with ThreadPoolExecutor(count) as pool:
        return list(pool.map(run, range(count)))


def scan(
    gate: Gate, event: SoldEvent, secret: str, *, gate_name: str, nonce: str, list_name: str = "main"
) -> ScanAnswer:
    request = ScanRequest(event.event_id, list_name, gate_name, nonce, secret)
    return retried(lambda: check_in(gate, request))


def test_the_same_ticket_scanned_at_10_gates_at_once_is_let_in_once(sold: SoldEvent) -> None:
    gates = [sold.gate() for _ in range(GATES)]
    for secret in sold.secrets[:6]:
        answers = at_once(
            GATES, lambda i, s=secret: scan(gates[i], sold, s, gate_name=f"g{i}", nonce=uuid.uuid4().hex)
        )
        results = Counter(a.result for a in answers)
        assert results == {GateResult.ADMITTED: 1, GateResult.ALREADY_CHECKED_IN: GATES - 1}, results
        winner = next(a for a in answers if a.admits)
        named = {a.first.nonce for a in answers if not a.admits and a.first is not None}
        assert named == {winner.nonce}


def test_a_nonce_replayed_at_10_gates_at_once_is_one_admission(sold: SoldEvent) -> None:
    gates = [sold.gate() for _ in range(GATES)]
    secret, nonce = sold.secrets[6], uuid.uuid4().hex
    answers = at_once(GATES, lambda i: scan(gates[i], sold, secret, gate_name="north", nonce=nonce))
    assert {a.result for a in answers} == {GateResult.ADMITTED}
    assert sum(not a.replay for a in answers) == 1
    state = sold.gate().store.read_checkin(claim_of(secret).ticket, "main")  # type: ignore[union-attr]
    assert list(state.scans) == [nonce]


def test_10_offline_uploads_of_one_ticket_at_once_keep_every_scan_and_report_every_conflict(
    sold: SoldEvent,
) -> None:
    gates = [sold.gate() for _ in range(GATES)]
    secret = sold.secrets[7]
    start = int(time.time() * 1000) - 600_000

    def upload(i: int) -> list[ScanAnswer]:
        scan_body: dict[str, Any] = {
            "event_id": sold.event_id,
            "list": "main",
            "gate": f"off-{i}",
            "nonce": f"n{secret[-8:]}-{i}",  # a nonce starts with a letter or digit
            "secret": secret,
            "scanned_at": start + i * 1000,
        }
        return retried(lambda: upload_scans(gates[i], [scan_body]))

    answers = [a for batch in at_once(GATES, upload) for a in batch]
    assert {a.result for a in answers} <= {GateResult.ACCEPTED, GateResult.CONFLICT}
    state = sold.gate().store.read_checkin(claim_of(secret).ticket, "main")  # type: ignore[union-attr]
    assert len(state.scans) == GATES  # none lost
    # On a list without re-entry every entry after the first (in time) conflicts with the first.
    assert sorted(c.second.gate for c in state.conflicts if c.second) == sorted(
        f"off-{i}" for i in range(1, GATES)
    )
    assert {c.first.gate for c in state.conflicts} == {"off-0"}
    assert state.entered is not None and state.entered.gate == "off-0"


def test_10_transfers_of_one_secret_at_once_pass_it_on_once(sold: SoldEvent) -> None:
    gates = [sold.gate() for _ in range(GATES)]
    secret = sold.secrets[8]
    holder = sold.gate().store.locate_ticket(claim_of(secret).ticket)  # type: ignore[union-attr]
    assert holder is not None
    giver = f"c-{holder.reservation_id}"
    answers = at_once(
        GATES,
        lambda i: retried(
            lambda: transfer_ticket(gates[i], TransferRequest(uuid.uuid4().hex, secret, giver, f"friend-{i}"))
        ),
    )
    results = Counter(a.result for a in answers)
    assert results[GateResult.TRANSFERRED] == 1, results
    assert set(results) <= {GateResult.TRANSFERRED, GateResult.REVOKED}
    new = next(a.secret for a in answers if a.result is GateResult.TRANSFERRED)
    assert new is not None
    assert scan(sold.gate(), sold, secret, gate_name="n", nonce=uuid.uuid4().hex).result is GateResult.REVOKED
    assert scan(sold.gate(), sold, new, gate_name="n", nonce=uuid.uuid4().hex).result is GateResult.ADMITTED
