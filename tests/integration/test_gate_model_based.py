"""Model-based tests of the gate on moto (docs/guides/checkin.md): random histories of sales (and their
redeliveries), transfers (and retries, and stale secrets), cancels, online scans in and out on a
list without re-entry and one with it (and replayed nonces), offline scanners deciding from an
export that goes stale, and their uploads (and uploads again).

After every step, for every ticket and list, from the table:
- no ticket is let in online twice on the list without re-entry, nor while inside on the other;
- a revoked (passed on) or void (cancelled) secret is never let in online;
- every uploaded scan is recorded exactly once, and a replayed nonce or upload gets its first answer;
- the conflicts the table reports are exactly those the scans made (recomputed here on their own):
  every entry after the first on the list without re-entry, every entry while inside on the other,
  and every offline entry with a secret revoked or void before it;
- `seats tickets audit` finds the numbers sound (at the end of each history).

Bounded (tests/depth.py): SEATS_GATE_MODEL_EXAMPLES histories of SEATS_GATE_MODEL_STEPS steps.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from seat_inventory.gate_models import Direction, GateResult, TicketRef
from seat_inventory.handlers import gate_api
from seat_inventory.logic.checkin import Gate, ScanRequest, check_in, export_for_scanners, upload_scans
from seat_inventory.logic.ticket_credentials import claim_of
from seat_inventory.logic.transfer_tickets import TransferRequest, reservation_tickets, transfer_ticket
from seat_inventory.models import SeatKey
from seat_tools.gate_scanner import OfflineScanner
from seat_tools.operator_commands import OperatorTable
from seat_tools.ticket_reports import audit_event
from tests.depth import sized
from tests.integration.conftest import Stack, sqs_event
from tests.integration.gate_support import GateStack, gate_stack, now_ms

pytestmark = pytest.mark.bounded

EXAMPLES = sized("SEATS_GATE_MODEL_EXAMPLES", ci=4, deep=60)
STEPS = sized("SEATS_GATE_MODEL_STEPS", ci=25, deep=60)
CUSTOMERS = ("c-a", "c-b", "c-c", "c-d")
LISTS = ("main", "yard")  # main: one entry; yard: re-entry after an exit
HARNESS: GateStack | None = None


@dataclass
class Ticket:
    ref: TicketRef
    reservation_id: str
    secret: str
    holder: str
    stale: list[str] = field(default_factory=list)  # its revoked secrets
    void: bool = False


@dataclass
class Sent:
    """A scan sent online, to replay with its nonce."""

    request: ScanRequest
    result: GateResult


class GateMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        assert HARNESS is not None
        self.h = HARNESS
        self.event_id = f"m-{uuid.uuid4().hex[:8]}"
        stack = self.h.stack
        table = OperatorTable(stack.dynamodb, stack.table_name)
        table.create_seat_class(SeatKey(self.event_id, "GA"), 24)
        table.set_max_per_customer(SeatKey(self.event_id, "GA"), 4)
        from seat_inventory.gate_models import CheckinList

        self.h.table.write_checkin_list(CheckinList(self.event_id, "main"))
        self.h.table.write_checkin_list(CheckinList(self.event_id, "yard", allow_reentry=True))
        self.gate: Gate = gate_api._the_gate()[1]
        self.gate.lists.clear()
        self.sales: dict[str, tuple[str, int]] = {}  # reservation -> (buyer, quantity)
        self.tickets: list[Ticket] = []
        self.cancelled: set[str] = set()
        self.sent: list[Sent] = []
        self.scanners: dict[str, OfflineScanner] = {}
        self.uploaded: dict[str, GateResult] = {}  # nonce -> first answer
        self.touched: set[TicketRef] = set()  # tickets a step scanned or uploaded (checked after it)
        self.n = 0

    def _nonce(self) -> str:
        self.n += 1
        return f"{self.event_id}-{self.n}"

    # ------------------------------------------------------------------ sales

    @initialize()
    def doors_about_to_open(self) -> None:
        """Three sales numbered, an offline scanner on each list: every rule has work from step one."""
        for customer in CUSTOMERS[:3]:
            self.sell(customer, 2, redeliver=False)
        self.export_to_scanner("east", "main")
        self.export_to_scanner("west", "yard")

    @rule(customer=st.sampled_from(CUSTOMERS), quantity=st.integers(1, 3), redeliver=st.booleans())
    def sell(self, customer: str, quantity: int, redeliver: bool) -> None:
        rid = self._nonce()
        body = {
            "reservation_id": rid,
            "event_id": self.event_id,
            "quantity": quantity,
            "customer_id": customer,
        }
        self.h.stack.invoke(sqs_event(body))
        if redeliver:
            self.h.stack.invoke(sqs_event(body))
        self.h.number()
        if redeliver:
            self.h.number()  # a second issuer round finds nothing left to number
        view = reservation_tickets(self.gate, rid)
        assert view is not None
        if not view["tickets"]:
            return  # refused (sold out, or the buyer's limit)
        self.sales[rid] = (customer, quantity)
        assert len(view["tickets"]) == quantity
        for shown in view["tickets"]:
            claim = claim_of(shown["secret"])
            assert claim is not None
            self.tickets.append(Ticket(claim.ticket, rid, shown["secret"], customer))

    @precondition(lambda self: self.sales)
    @rule(data=st.data(), redeliver=st.booleans())
    def cancel(self, data: st.DataObject, redeliver: bool) -> None:
        rid = data.draw(st.sampled_from(sorted(self.sales)))
        self.h.stack.outcomes()
        body = {"type": "cancel", "reservation_id": rid}
        self.h.stack.invoke(sqs_event(body))
        if redeliver:
            self.h.stack.invoke(sqs_event(body))
        buyer = self.sales[rid][0]
        mine = [t for t in self.tickets if t.reservation_id == rid]
        passed_on = any(t.holder != buyer for t in mine)
        answers = [o for o in self.h.stack.outcomes() if o["reservation_id"] == rid]
        if passed_on and rid not in self.cancelled:
            assert answers[0]["outcome"] == "CONFIRMED", answers
            return
        assert answers[0]["outcome"] == "CANCELLED", answers
        self.cancelled.add(rid)
        for t in mine:
            t.void = True

    # ------------------------------------------------------------------ transfers

    @precondition(lambda self: self.tickets)
    @rule(data=st.data(), to=st.sampled_from(CUSTOMERS), retry=st.booleans())
    def transfer(self, data: st.DataObject, to: str, retry: bool) -> None:
        ticket = data.draw(st.sampled_from(self.tickets))
        request = TransferRequest(self._nonce(), ticket.secret, ticket.holder, to)
        answer = transfer_ticket(self.gate, request)
        if ticket.void:
            assert answer.result is GateResult.CANCELLED, answer
            return
        if answer.result is GateResult.LIMIT_EXCEEDED:
            assert to != ticket.holder
            return
        assert answer.result is GateResult.TRANSFERRED, answer
        assert answer.secret is not None and answer.secret != ticket.secret
        if retry:
            again = transfer_ticket(self.gate, request)
            assert (again.result, again.secret, again.duplicate) == (
                GateResult.TRANSFERRED,
                answer.secret,
                True,
            )
        ticket.stale.append(ticket.secret)
        ticket.secret, ticket.holder = answer.secret, to

    @precondition(lambda self: any(t.stale for t in self.tickets))
    @rule(data=st.data())
    def transfer_with_a_revoked_secret(self, data: st.DataObject) -> None:
        ticket = data.draw(st.sampled_from([t for t in self.tickets if t.stale]))
        stale = data.draw(st.sampled_from(ticket.stale))
        answer = transfer_ticket(self.gate, TransferRequest(self._nonce(), stale, ticket.holder, "c-x"))
        assert answer.result in (GateResult.REVOKED, GateResult.CANCELLED), answer

    # ------------------------------------------------------------------ online

    @precondition(lambda self: self.tickets)
    @rule(data=st.data(), list_name=st.sampled_from(LISTS), out=st.booleans(), stale=st.booleans())
    def scan(self, data: st.DataObject, list_name: str, out: bool, stale: bool) -> None:
        passed = [t for t in self.tickets if t.stale]
        ticket = data.draw(st.sampled_from(passed if stale and passed else self.tickets))
        secret = data.draw(st.sampled_from(ticket.stale)) if stale and ticket.stale else ticket.secret
        direction = Direction.OUT if out and list_name == "yard" else Direction.IN
        request = ScanRequest(self.event_id, list_name, f"g{self.n % 3}", self._nonce(), secret, direction)
        answer = check_in(self.gate, request)
        self.touched.add(ticket.ref)
        if secret in ticket.stale:
            assert answer.result is GateResult.REVOKED or (
                ticket.void and answer.result is GateResult.CANCELLED
            )
        elif ticket.void:
            assert answer.result is GateResult.CANCELLED, answer
        else:
            expected = {GateResult.ADMITTED, GateResult.ALREADY_CHECKED_IN}
            if direction is Direction.OUT:
                expected = {GateResult.EXITED, GateResult.NOT_CHECKED_IN}
            assert answer.result in expected, answer
        self.sent.append(Sent(request, answer.result))

    @precondition(lambda self: self.sent)
    @rule(data=st.data())
    def replay(self, data: st.DataObject) -> None:
        sent = data.draw(st.sampled_from(self.sent))
        answer = check_in(self.gate, dataclasses.replace(sent.request, gate="elsewhere"))
        assert answer.result is sent.result, (sent, answer)
        if sent.result in (GateResult.ADMITTED, GateResult.EXITED, GateResult.ALREADY_CHECKED_IN):
            assert answer.replay

    # ------------------------------------------------------------------ offline

    @rule(gate=st.sampled_from(("east", "west")), list_name=st.sampled_from(LISTS))
    def export_to_scanner(self, gate: str, list_name: str) -> None:
        export = export_for_scanners(self.gate, self.event_id, self.h.table.read_checkin_lists(self.event_id))
        kept = self.scanners.get(f"{gate}/{list_name}")
        self.scanners[f"{gate}/{list_name}"] = OfflineScanner(
            export, gate, list_name, journal=kept.journal if kept else []
        )

    @precondition(lambda self: self.scanners and self.tickets)
    @rule(data=st.data(), out=st.booleans(), behind_ms=st.integers(0, 120_000))
    def offline_scan(self, data: st.DataObject, out: bool, behind_ms: int) -> None:
        scanner = self.scanners[data.draw(st.sampled_from(sorted(self.scanners)))]
        ticket = data.draw(st.sampled_from(self.tickets))
        secret = data.draw(st.sampled_from([ticket.secret, *ticket.stale]))
        direction = Direction.OUT if out else Direction.IN
        scanner.scan(secret, at_ms=now_ms() - behind_ms, direction=direction, nonce=self._nonce())

    @precondition(lambda self: any(s.journal for s in self.scanners.values()))
    @rule(data=st.data())
    def upload(self, data: st.DataObject) -> None:
        scanner = self.scanners[
            data.draw(st.sampled_from(sorted(k for k, s in self.scanners.items() if s.journal)))
        ]
        answers = upload_scans(self.gate, scanner.journal)
        for scan in scanner.journal:
            claim = claim_of(scan["secret"])
            assert claim is not None
            self.touched.add(claim.ticket)
        for scan, answer in zip(scanner.journal, answers, strict=True):
            first = self.uploaded.get(scan["nonce"])
            if first is None:
                assert answer.result in (GateResult.ACCEPTED, GateResult.CONFLICT), answer
                self.uploaded[scan["nonce"]] = answer.result
            else:
                assert answer.result is GateResult.DUPLICATE and answer.replay, answer

    # ------------------------------------------------------------------ the table agrees

    @invariant()
    def the_tickets_scanned_keep_their_scans_and_conflicts(self) -> None:
        self._check([t for t in self.tickets if t.ref in self.touched])
        self.touched.clear()

    def teardown(self) -> None:
        """Every ticket once more, and the numbers' audit, at the end of each history."""
        self._check(self.tickets)
        table = OperatorTable(self.h.stack.dynamodb, self.h.stack.table_name)
        assert audit_event(table, self.event_id) == []

    def _check(self, tickets: list[Ticket]) -> None:
        store = self.gate.store
        for ticket in tickets:
            held = store.read_ticket(ticket.ref, store.locate_ticket(ticket.ref))  # type: ignore[arg-type]
            assert held is not None
            for name in LISTS:
                state = store.read_checkin(ticket.ref, name)
                moved = sorted(
                    (r for r in state.scans.values() if r.moved), key=lambda r: (r.scan.at_ms, r.scan.nonce)
                )
                online_in = [r for r in moved if not r.scan.offline and r.scan.direction is Direction.IN]
                assert all(r.result is GateResult.ADMITTED for r in online_in)
                # Offline scans recorded once each: every one uploaded is there, nothing else.
                offline = {r.scan.nonce for r in state.scans.values() if r.scan.offline}
                assert offline <= set(self.uploaded)
                expected = _conflicts(moved, reentry=name == "yard")
                for r in moved:
                    if r.scan.offline and r.scan.direction is Direction.IN:
                        revoked = _revoked_at(held, r.generation)
                        if revoked is not None and revoked <= r.scan.at_ms:
                            expected.add((r.scan.nonce, ""))
                found = {c.key for c in state.conflicts}
                assert found == expected, (ticket.ref, name, found, expected)
                # Online, a ticket was let in only when the rule allowed it: never twice on main,
                # never while inside on yard (a pair of online entries would be a conflict).
                online_twice = {(a, b) for a, b in expected if b and _online(state, a) and _online(state, b)}
                assert not online_twice, (ticket.ref, name, online_twice)


def _online(state: Any, nonce: str) -> bool:
    record = state.scans.get(nonce)
    return record is not None and not record.scan.offline


def _revoked_at(held: Any, generation: int) -> int | None:
    """When a secret of `generation` stopped admitting (passed on, or its sale cancelled), epoch ms
    (a cancel's time is kept to the second)."""
    times = []
    if generation < held.holder.generation and generation in held.holder.revoked_at:
        times.append(held.holder.revoked_at[generation])
    if held.record.status.value == "CANCELLED" and held.record.status_changed_at:
        changed = datetime.strptime(held.record.status_changed_at, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
        times.append(int(changed.timestamp()) * 1000)
    return min(times) if times else None


def _conflicts(moved: list[Any], *, reentry: bool) -> set[tuple[str, str]]:
    """The conflicts a ticket's scans make, computed here from the rule alone."""
    found: set[tuple[str, str]] = set()
    first = None
    inside = None
    for r in moved:
        if r.scan.direction is Direction.OUT:
            inside = None
            continue
        if reentry:
            if inside is not None:
                found.add((inside.scan.nonce, r.scan.nonce))
            inside = r
        elif first is None:
            first = r
        else:
            found.add((first.scan.nonce, r.scan.nonce))
    return found


@pytest.fixture
def harness(stack: Stack, monkeypatch: pytest.MonkeyPatch) -> Iterator[GateStack]:
    global HARNESS
    gate_api.reset_container()
    HARNESS = gate_stack(stack, monkeypatch)
    yield HARNESS
    HARNESS = None
    gate_api.reset_container()


def test_random_histories_at_the_gate_keep_every_guarantee(harness: GateStack) -> None:
    run_state_machine_as_test(
        GateMachine,
        settings=settings(
            max_examples=EXAMPLES,
            stateful_step_count=STEPS,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
            derandomize=True,  # the same histories every run
        ),
    )
