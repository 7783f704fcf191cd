"""Every DynamoDB expression of the gate's data access on moto, one test per path: success,
condition failed, item missing (dal/checkins.py, dal/transfers.py; docs/guides/checkin.md)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from seat_inventory.dal.gate_items import holder_attribute
from seat_inventory.dal.gate_table import GateTable
from seat_inventory.dal.items import reservation_key
from seat_inventory.gate_models import (
    CheckinList,
    CheckinState,
    Direction,
    GateResult,
    HeldTicket,
    Scan,
    ScanRecord,
    TicketHolder,
    TicketRef,
    TransferRecord,
    TransferWrite,
)
from seat_inventory.handlers import gate_api
from seat_inventory.logic.gate_ports import TicketPlace
from seat_inventory.models import SeatKey
from seat_tools.operator_commands import OperatorTable
from tests.integration.conftest import Stack
from tests.integration.gate_support import GateStack, gate_stack

MAIN = CheckinList("gig", "main")
YARD = CheckinList("gig", "yard", allow_reentry=True)


@pytest.fixture
def sold(stack: Stack, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[GateStack, GateTable, HeldTicket]]:
    gate_api.reset_container()
    gate = gate_stack(stack, monkeypatch)
    gate.sell("r-1", 2, "c-1")
    gate.number()
    table = gate.table
    ticket = TicketRef("gig", 0, 1)
    place = table.locate_ticket(ticket)
    assert place == TicketPlace("r-1", 1)
    held = table.read_ticket(ticket, place)
    assert held is not None
    yield gate, table, held
    gate_api.reset_container()


def record(nonce: str, *, generation: int = 0, direction: Direction = Direction.IN) -> ScanRecord:
    result = GateResult.ADMITTED if direction is Direction.IN else GateResult.EXITED
    return ScanRecord(Scan(nonce, "g1", 1_000, direction), result, "r", generation, moved=True)


PLACE = TicketPlace("r-1", 1)
T1 = TicketRef("gig", 0, 1)


# --- locate_ticket / read_ticket -------------------------------------------------------------------


def test_locate_and_read_a_ticket_and_nothing_for_a_serial_not_given(
    sold: tuple[GateStack, GateTable, HeldTicket],
) -> None:
    _, table, held = sold
    assert (held.reservation_id, held.seat.seat_class, held.holder) == (
        "r-1",
        "GA",
        TicketHolder("c-1", 0, True),
    )
    assert table.locate_ticket(TicketRef("gig", 0, 3)) is None  # past the counter
    assert table.locate_ticket(TicketRef("nope", 0, 1)) is None  # no ledger
    assert table.read_ticket(TicketRef("gig", 0, 9), PLACE) is None  # the record does not hold it
    assert table.read_ticket(T1, TicketPlace("missing", 1)) is None
    assert table.read_reservation_tickets("missing") is None


# --- admit ---------------------------------------------------------------------------------------------


def test_admit_success_then_the_list_s_rule_refuses(sold: tuple[GateStack, GateTable, HeldTicket]) -> None:
    _, table, _ = sold
    assert table.admit(T1, PLACE, MAIN, record("a")) is None
    refused = table.admit(T1, PLACE, MAIN, record("b"))
    assert refused is not None and not refused.ticket_refused
    assert (
        refused.state.entered == record("a").scan
        and "a" in refused.state.scans
        and "b" not in refused.state.scans
    )


def test_admit_the_same_nonce_finds_its_answer(sold: tuple[GateStack, GateTable, HeldTicket]) -> None:
    _, table, _ = sold
    assert table.admit(T1, PLACE, YARD, record("a")) is None
    refused = table.admit(T1, PLACE, YARD, record("a"))
    assert refused is not None and refused.state.scans["a"].result is GateResult.ADMITTED


def test_admit_refused_by_the_record_a_stale_generation_or_a_missing_record(
    sold: tuple[GateStack, GateTable, HeldTicket],
) -> None:
    _, table, held = sold
    refused = table.admit(T1, PLACE, MAIN, record("a", generation=1))
    assert refused is not None and refused.ticket_refused and refused.ticket == held
    assert refused.state == CheckinState()  # nothing written
    refused = table.admit(T1, TicketPlace("missing", 1), MAIN, record("b"))
    assert refused is not None and refused.ticket_refused and refused.ticket is None


# --- leave -------------------------------------------------------------------------------------------


def test_leave_success_not_inside_and_no_item(sold: tuple[GateStack, GateTable, HeldTicket]) -> None:
    _, table, _ = sold
    refused = table.leave(T1, PLACE, YARD, record("o-1", direction=Direction.OUT))  # no item yet
    assert refused is not None and not refused.ticket_refused and refused.state == CheckinState()
    assert table.admit(T1, PLACE, YARD, record("a")) is None
    assert table.leave(T1, PLACE, YARD, record("o-2", direction=Direction.OUT)) is None
    refused = table.leave(T1, PLACE, YARD, record("o-3", direction=Direction.OUT))
    assert refused is not None and not refused.state.inside
    assert table.admit(T1, PLACE, YARD, record("b")) is None  # re-entry after the exit


# --- remember_answer --------------------------------------------------------------------------------


def test_remember_answer_on_no_item_then_kept_once(sold: tuple[GateStack, GateTable, HeldTicket]) -> None:
    _, table, _ = sold
    first = ScanRecord(
        Scan("n", "g", 1, Direction.IN), GateResult.ALREADY_CHECKED_IN, "first", 0, moved=False
    )
    assert table.remember_answer(T1, "main", first) is None
    second = ScanRecord(
        Scan("n", "g", 2, Direction.IN), GateResult.ALREADY_CHECKED_IN, "second", 0, moved=False
    )
    assert table.remember_answer(T1, "main", second) == first


# --- write_checkin ----------------------------------------------------------------------------------


def test_write_checkin_guarded_by_the_version_read(sold: tuple[GateStack, GateTable, HeldTicket]) -> None:
    _, table, _ = sold
    scan = Scan("u-1", "east", 500, Direction.IN, offline=True)
    uploaded = ScanRecord(scan, GateResult.ACCEPTED, "ok", 0, moved=True)
    state = CheckinState(True, scan, scan, {"u-1": uploaded}, (), 1)
    assert table.write_checkin(T1, "main", state, uploaded, version=0)  # no item: version 0
    assert not table.write_checkin(T1, "main", state, uploaded, version=0)  # it exists now
    read = table.read_checkin(T1, "main")
    assert (read.version, read.entered, read.scans["u-1"]) == (1, scan, uploaded)
    other = ScanRecord(Scan("u-2", "west", 600, Direction.IN, True), GateResult.CONFLICT, "x", 0, moved=True)
    moved_on = CheckinState(True, scan, other.scan, {**read.scans, "u-2": other}, (), 2)
    assert not table.write_checkin(T1, "main", moved_on, other, version=5)  # a stale version
    assert table.write_checkin(T1, "main", moved_on, other, version=1)
    assert table.read_checkin(T1, "main").version == 2


# --- limits and transfers ------------------------------------------------------------------------------


def write(held: HeldTicket, to: str, *, transfer_id: str = "t-1", limit: int | None = 4) -> TransferWrite:
    before = held.holder
    after = TicketHolder(to, before.generation + 1, limit is not None, transfer_id, 5, {before.generation: 5})
    kept = TransferRecord(
        transfer_id, held.ticket, held.reservation_id, before.customer_id, to, after.generation, 5
    )
    return TransferWrite(held, before, after, int(to != held.buyer), limit, kept)


def test_read_limit_of_a_class_and_of_a_missing_class(sold: tuple[GateStack, GateTable, HeldTicket]) -> None:
    _, table, held = sold
    assert table.read_limit(held) == 4
    from dataclasses import replace

    from seat_inventory.gate_models import TicketSeat

    assert table.read_limit(replace(held, seat=TicketSeat("NOPE", None, False))) is None


def test_commit_transfer_success_and_a_retry_finds_the_transfer(
    sold: tuple[GateStack, GateTable, HeldTicket],
) -> None:
    gate, table, held = sold
    assert table.commit_transfer(write(held, "c-2")) is None
    after = table.read_ticket(T1, PLACE)
    assert after is not None and after.holder.customer_id == "c-2" and after.holder.generation == 1
    assert after.record.tickets_passed_on == 1
    refused = table.commit_transfer(write(held, "c-2"))  # the same id, read before it
    assert refused is not None and refused.existing == write(held, "c-2").record
    assert table.read_transfer("t-1") == write(held, "c-2").record and table.read_transfer("nope") is None
    counters = OperatorTable(gate.stack.dynamodb, gate.stack.table_name)
    assert counters.read_inventory(
        SeatKey("gig", "GA"), customers=["c-1", "c-2"], whole=False
    ).customer_seats == {  # type: ignore[union-attr]
        "c-1": 1,
        "c-2": 1,
    }


def test_commit_transfer_refused_when_the_record_moved_on(
    sold: tuple[GateStack, GateTable, HeldTicket],
) -> None:
    _, table, held = sold
    assert table.commit_transfer(write(held, "c-2")) is None
    refused = table.commit_transfer(write(held, "c-3", transfer_id="t-2"))  # read at generation 0
    assert refused is not None and refused.record_changed and refused.existing is None
    assert table.read_transfer("t-2") is None


def test_commit_transfer_refused_at_the_receiver_s_limit_and_when_the_limit_changed(
    sold: tuple[GateStack, GateTable, HeldTicket],
) -> None:
    gate, table, held = sold
    gate.sell("r-9", 4, "c-5")
    refused = table.commit_transfer(write(held, "c-5"))
    assert refused is not None and refused.limit_reached
    refused = table.commit_transfer(write(held, "c-6", limit=3))  # the class's is 4
    assert refused is not None and refused.limit_changed and not refused.limit_reached


def test_commit_transfer_of_a_missing_record(sold: tuple[GateStack, GateTable, HeldTicket]) -> None:
    gate, table, held = sold
    gate.stack.dynamodb.delete_item(TableName=gate.stack.table_name, Key=reservation_key("r-1"))
    refused = table.commit_transfer(write(held, "c-2"))
    assert refused is not None and refused.record_changed


def test_the_holder_attribute_is_the_ticket_s_own(sold: tuple[GateStack, GateTable, HeldTicket]) -> None:
    gate, table, held = sold
    table.commit_transfer(write(held, "c-2"))
    item = gate.stack.dynamodb.get_item(TableName=gate.stack.table_name, Key=reservation_key("r-1"))["Item"]
    assert holder_attribute(1) in item and holder_attribute(2) not in item
    other = table.read_ticket(TicketRef("gig", 0, 2), PLACE)
    assert other is not None and other.holder == TicketHolder("c-1", 0, True)
