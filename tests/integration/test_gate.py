"""The gate's routes on moto (docs/guides/checkin.md): tickets with signed secrets, check-in online (once
per list, re-entry after an exit, replayed nonces), hostile input, transfers (revoke and re-issue
at once, the receiver's limit, no cancel after, numbers unchanged), offline uploads (once each,
conflicts with both scans) and the export."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from seat_inventory.handlers import gate_api
from seat_inventory.logic.ticket_credentials import (
    TicketKeyRing,
    claim_of,
    public_key_bytes,
    read_secret,
    retire,
    sign_ticket,
    with_key,
)
from seat_tools.operator_commands import OperatorTable
from seat_tools.ticket_reports import audit_event
from tests.integration.conftest import Stack, sqs_event
from tests.integration.gate_support import GateStack, gate_stack, now_ms


@pytest.fixture
def gate(stack: Stack, monkeypatch: pytest.MonkeyPatch) -> Iterator[GateStack]:
    gate_api.reset_container()
    yield gate_stack(stack, monkeypatch)
    gate_api.reset_container()


@pytest.fixture
def sold(gate: GateStack) -> GateStack:
    gate.sell("r-1", 2, "c-1")
    gate.sell("r-2", 1, "c-2")
    assert gate.number() == 2
    gate.stack.outcomes()
    return gate


# --- tickets and their secrets -----------------------------------------------------------------


def test_each_numbered_ticket_has_a_secret_naming_event_number_and_seat(sold: GateStack) -> None:
    tickets = sold.tickets("r-1")
    assert [(t["ticket"], t["seat_class"], t["seat"], t["status"]) for t in tickets] == [
        ("1", "GA", None, "live"),
        ("2", "GA", None, "live"),
    ]
    keys = sold.ring.public_keys("gig")
    claims = [read_secret(t["secret"], keys, event_id="gig") for t in tickets]
    assert [(c.ticket.serial, c.seat_class, c.generation) for c in claims] == [(1, "GA", 0), (2, "GA", 0)]  # type: ignore[union-attr]
    # Signed when shown, never stored: the same secret every time.
    assert sold.secrets("r-1") == [t["secret"] for t in tickets]


def test_a_sale_not_numbered_yet_has_no_tickets_and_an_unknown_one_is_404(gate: GateStack) -> None:
    gate.sell("r-9", 2)
    assert gate.tickets("r-9") == []
    status, answer = gate.call("GET", "/reservations/{id}/tickets", path_id="nope")
    assert (status, answer["message"]) == (404, "no reservation nope is recorded")


# --- check-in online ---------------------------------------------------------------------------


def test_a_ticket_enters_once_per_list_and_a_second_scan_names_when_and_where(sold: GateStack) -> None:
    secret = sold.secrets("r-1")[0]
    first = sold.scan(secret, gate="north", nonce="a-1")
    assert (first["result"], first["reason"], first["ticket"]) == ("ADMITTED", "admitted: GA", "1")
    again = sold.scan(secret, gate="south", nonce="a-2")
    assert again["result"] == "ALREADY_CHECKED_IN"
    assert again["first_scan"]["gate"] == "north" and again["first_scan"]["nonce"] == "a-1"
    assert again["reason"].startswith("already checked in on main: ") and "at gate north" in again["reason"]
    # Another list is another entry.
    assert sold.scan(secret, checkin_list="yard")["result"] == "ADMITTED"


def test_a_replayed_nonce_gets_its_first_answer(sold: GateStack) -> None:
    secret = sold.secrets("r-1")[0]
    first = sold.scan(secret, nonce="same")
    replay = sold.scan(secret, nonce="same", gate="elsewhere")
    assert (first["result"], replay["result"], replay["replay"]) == ("ADMITTED", "ADMITTED", True)
    refused = sold.scan(secret, nonce="later")
    assert refused["result"] == "ALREADY_CHECKED_IN"
    assert sold.scan(secret, nonce="later")["result"] == "ALREADY_CHECKED_IN"
    assert sold.scan(secret, nonce="later")["replay"] is True


def test_re_entry_after_an_exit_where_the_list_allows_it(sold: GateStack) -> None:
    secret = sold.secrets("r-1")[1]
    assert sold.scan(secret, checkin_list="yard")["result"] == "ADMITTED"
    assert sold.scan(secret, checkin_list="yard")["result"] == "ALREADY_CHECKED_IN"
    assert sold.scan(secret, checkin_list="yard", direction="out")["result"] == "EXITED"
    assert sold.scan(secret, checkin_list="yard", direction="out")["result"] == "NOT_CHECKED_IN"
    assert sold.scan(secret, checkin_list="yard")["result"] == "ADMITTED"
    refused = sold.scan(secret, checkin_list="main", direction="out")
    assert (refused["result"], refused["reason"]) == (
        "INVALID",
        "check-in list main allows no re-entry: it takes no exit scans",
    )


def test_a_cancelled_ticket_is_refused(sold: GateStack) -> None:
    secret = sold.secrets("r-2")[0]
    sold.stack.invoke(sqs_event({"type": "cancel", "reservation_id": "r-2"}))
    answer = sold.scan(secret)
    assert (answer["result"], answer["reason"]) == (
        "CANCELLED",
        "the ticket is void: its reservation was cancelled",
    )
    assert sold.tickets("r-2")[0]["status"] == "void" and sold.tickets("r-2")[0]["secret"] is None


def test_an_unknown_list_is_refused(sold: GateStack) -> None:
    answer = sold.scan(sold.secrets("r-1")[0], checkin_list="vip")
    assert (answer["result"], answer["reason"]) == ("UNKNOWN_LIST", "gig has no check-in list 'vip'")


# --- hostile input: each a one-line refusal ------------------------------------------------------


def _forge(secret: str) -> str:
    head, signature = secret.rsplit(".", 1)
    flipped = ("B" if signature[0] == "A" else "A") + signature[1:]
    return f"{head}.{flipped}"


def test_hostile_secrets_are_refused_in_one_line(sold: GateStack) -> None:
    secret = sold.secrets("r-1")[0]
    other_ring = with_key(None, "k1", b"x" * 32, make_current=True)
    claim = claim_of(secret)
    assert claim is not None
    cases = {
        "forged signature": (_forge(secret), "FORGED"),
        "truncated": (secret[:-10], "FORGED"),
        "cut in the claims": (secret[:20], "INVALID"),
        "oversized": (secret + "A" * 600, "INVALID"),
        "not a ticket": ("hello", "INVALID"),
        "another key": (sign_ticket(other_ring, claim), "FORGED"),
        "unknown key id": (secret.replace(".k1.", ".k9.", 1), "FORGED"),
    }
    for name, (text, expected) in cases.items():
        answer = sold.scan(text)
        assert answer["result"] == expected, (name, answer)
        assert "\n" not in answer["reason"] and answer["reason"], name


def test_a_ticket_of_another_event_or_signed_with_its_key_is_refused(sold: GateStack) -> None:
    sold.sell("o-1", 1, "c-1", event="other")
    sold.number()
    theirs = sold.secrets("o-1")[0]
    answer = sold.scan(theirs)
    assert (answer["result"], answer["reason"]) == ("WRONG_EVENT", "the ticket is for event other, not gig")
    # A secret that claims gig, signed with other's key: forged.
    mine = claim_of(sold.secrets("r-1")[0])
    assert mine is not None
    other_signed = _sign_with_event_key(sold.ring, "other", mine)
    answer = sold.scan(other_signed)
    assert answer["result"] == "FORGED", answer


def _sign_with_event_key(ring: TicketKeyRing, event_id: str, claim: object) -> str:
    """`claim` (of gig) signed with `event_id`'s derived key instead of gig's."""
    import base64
    import json

    from seat_inventory.logic.ticket_credentials import _event_key

    assert hasattr(claim, "ticket")
    ticket = claim.ticket  # type: ignore[attr-defined]
    document = {"c": "GA", "e": ticket.event_id, "g": 0, "n": ticket.serial, "s": ticket.series}
    payload = base64.urlsafe_b64encode(json.dumps(document, sort_keys=True, separators=(",", ":")).encode())
    signed = f"T1.k1.{payload.decode().rstrip('=')}"
    signature = _event_key(ring.keys["k1"], event_id).sign(signed.encode()).signature
    return f"{signed}.{base64.urlsafe_b64encode(signature).decode().rstrip('=')}"


def test_malformed_requests_get_400_with_one_line(sold: GateStack) -> None:
    status, answer = sold.call("POST", "/checkins", body={"event_id": "gig", "list": "main"})
    assert status == 400 and answer["result"] == "INVALID" and answer["reason"].startswith("gate is required")
    status, answer = sold.call("POST", "/checkins", body="[not json")
    assert (status, answer["message"]) == (400, "the body must be a JSON object")


# --- keys and rotation ---------------------------------------------------------------------------


def test_rotation_old_secrets_admit_until_their_key_is_retired(sold: GateStack) -> None:
    old = sold.secrets("r-1")
    rotated = with_key(sold.ring, "k2", b"n" * 32, make_current=True)
    sold.put_ring(rotated)
    new = sold.secrets("r-1")
    assert [s.split(".")[1] for s in new] == ["k2", "k2"] and new != old
    assert sold.scan(old[0])["result"] == "ADMITTED"
    sold.put_ring(retire(rotated, "k1"))
    answer = sold.scan(old[1])
    assert (answer["result"], answer["reason"]) == (
        "FORGED",
        "the ticket is forged: key 'k1' is not one of gig's",
    )
    assert sold.scan(new[1])["result"] == "ADMITTED"


# --- transfers -------------------------------------------------------------------------------------


def test_a_transfer_revokes_the_old_secret_and_issues_a_new_one_for_the_same_seat(sold: GateStack) -> None:
    old = sold.secrets("r-1")[0]
    status, answer = sold.transfer(old, "c-9")
    assert (status, answer["result"], answer["ticket"], answer["generation"]) == (200, "TRANSFERRED", "1", 1)
    new = answer["secret"]
    claim = read_secret(new, sold.ring.public_keys("gig"), event_id="gig")
    assert (claim.ticket.serial, claim.generation) == (1, 1)  # type: ignore[union-attr]
    refused = sold.scan(old)
    assert refused["result"] == "REVOKED" and "passed on" in refused["reason"]
    assert sold.scan(new)["result"] == "ADMITTED"
    # The buyer's page shows it passed on; the receiver's shows the secret.
    assert [t["status"] for t in sold.tickets("r-1")] == ["passed_on", "live"]
    status, view = sold.call("GET", "/transfers/{id}", path_id="t-1")
    assert (status, view["secret"], view["customer_id"]) == (200, new, "c-9")
    [published] = sold.stack.outcomes()
    assert (published["outcome"], published["customer_id"], published["tickets"]) == (
        "TRANSFERRED",
        "c-9",
        ["1"],
    )


def test_a_retried_transfer_gets_the_same_answer_and_the_id_is_used_once(sold: GateStack) -> None:
    old = sold.secrets("r-1")[0]
    _, first = sold.transfer(old, "c-9")
    _, again = sold.transfer(old, "c-9")
    assert (again["secret"], again["duplicate"]) == (first["secret"], True)
    status, other = sold.transfer(sold.secrets("r-1")[1], "c-9")
    assert (status, other["result"]) == (400, "INVALID")
    assert other["reason"] == "transfer id t-1 was used for another transfer"


def test_only_the_holder_passes_a_ticket_on(sold: GateStack) -> None:
    status, answer = sold.transfer(sold.secrets("r-1")[0], "c-9", giver="c-2")
    assert (status, answer["result"], answer["reason"]) == (
        409,
        "NOT_HOLDER",
        "customer c-2 does not hold this ticket",
    )


def test_the_receiver_is_counted_against_the_limit(sold: GateStack) -> None:
    sold.sell("r-3", 4, "c-5")
    sold.number()
    status, answer = sold.transfer(sold.secrets("r-1")[0], "c-5")
    assert (status, answer["result"]) == (409, "LIMIT_EXCEEDED")
    assert answer["reason"] == "customer c-5 holds 4 ticket(s) of GA, the most one customer may"
    # The giver's count went down with the other ticket: c-1 may buy 3 more now, not 2.
    assert sold.transfer(sold.secrets("r-1")[1], "c-6", transfer_id="t-2")[0] == 200
    sold.sell("r-4", 3, "c-1")
    sold.stack.outcomes()
    sold.sell("r-5", 1, "c-1")
    assert [o["outcome"] for o in sold.stack.outcomes()] == ["LIMIT_EXCEEDED"]


def test_a_passed_on_ticket_keeps_its_number_and_the_audit_stays_sound(sold: GateStack) -> None:
    _, answer = sold.transfer(sold.secrets("r-1")[0], "c-9")
    _, back = sold.transfer(answer["secret"], "c-1", giver="c-9", transfer_id="t-2")
    assert back["result"] == "TRANSFERRED" and back["ticket"] == "1" and back["generation"] == 2
    assert audit_event(OperatorTable(sold.stack.dynamodb, sold.stack.table_name), "gig") == []


def test_a_reservation_with_a_ticket_passed_on_cannot_be_cancelled_until_it_comes_back(
    sold: GateStack,
) -> None:
    _, answer = sold.transfer(sold.secrets("r-1")[0], "c-9")
    sold.stack.outcomes()
    sold.stack.invoke(sqs_event({"type": "cancel", "reservation_id": "r-1"}))
    [refused] = sold.stack.outcomes()
    assert refused["outcome"] == "CONFIRMED" and "held by other customers" in refused["reason"]
    sold.transfer(answer["secret"], "c-1", giver="c-9", transfer_id="t-2")
    sold.stack.outcomes()
    sold.stack.invoke(sqs_event({"type": "cancel", "reservation_id": "r-1"}))
    [cancelled] = sold.stack.outcomes()
    assert cancelled["outcome"] == "CANCELLED"


def test_a_re_issue_to_the_holder_revokes_the_old_secret(sold: GateStack) -> None:
    old = sold.secrets("r-2")[0]
    _, answer = sold.transfer(old, "c-2", giver="c-2")
    assert answer["result"] == "TRANSFERRED" and answer["secret"] != old
    assert sold.scan(old)["result"] == "REVOKED"
    assert sold.tickets("r-2")[0]["secret"] == answer["secret"]


# --- offline ---------------------------------------------------------------------------------------


def test_the_export_has_the_events_public_keys_and_what_was_revoked(sold: GateStack) -> None:
    from seat_inventory.logic.checkin import export_for_scanners

    sold.transfer(sold.secrets("r-1")[0], "c-9")
    sold.stack.invoke(sqs_event({"type": "cancel", "reservation_id": "r-2"}))
    gate = gate_api._the_gate()[1]
    export = export_for_scanners(gate, "gig", sold.table.read_checkin_lists("gig"))
    assert {k: public_key_bytes(v) for k, v in export["public_keys"].items()} == sold.ring.public_keys("gig")
    assert export["void"] == ["0:3"]
    assert export["min_generation"] == {"0:1": 1}
    assert export["lists"] == {"main": {"allow_reentry": False}, "yard": {"allow_reentry": True}}


def test_offline_scans_are_accepted_once_and_a_ticket_let_in_twice_is_a_conflict(sold: GateStack) -> None:
    secret = sold.secrets("r-1")[0]
    at = now_ms() - 60_000
    first = sold.offline_scan(secret, gate="east", nonce="off-1", at_ms=at)
    second = sold.offline_scan(secret, gate="west", nonce="off-2", at_ms=at + 5_000)
    [accepted] = sold.upload(first)
    assert accepted["result"] == "ACCEPTED"
    [conflict] = sold.upload(second)
    assert conflict["result"] == "CONFLICT"
    [named] = conflict["conflicts"]
    assert (named["first"]["gate"], named["second"]["gate"]) == ("east", "west")
    again = sold.upload(first, second)
    assert [a["result"] for a in again] == ["DUPLICATE", "DUPLICATE"]
    assert (again[0]["conflicts"], again[1]["conflicts"]) == ([], conflict["conflicts"])
    # Online, the ticket is inside: a scan is refused naming the offline entry.
    answer = sold.scan(secret, gate="north")
    assert answer["result"] == "ALREADY_CHECKED_IN" and answer["first_scan"]["gate"] == "east"
    published = [o for o in sold.stack.outcomes() if o["outcome"] == "CHECKIN_CONFLICT"]
    assert [o["duplicate"] for o in published] == [False, True]
    assert sold.table.read_conflicts("gig") == sold.table.read_conflicts("gig", "main")
    assert len(sold.table.read_conflicts("gig")) == 1


def test_an_offline_entry_uploaded_after_an_online_one_is_a_conflict(sold: GateStack) -> None:
    secret = sold.secrets("r-1")[0]
    assert sold.scan(secret, gate="north")["result"] == "ADMITTED"
    [answer] = sold.upload(sold.offline_scan(secret, gate="east", nonce="off-1", at_ms=now_ms() - 1000))
    assert answer["result"] == "CONFLICT"


def test_re_entry_offline_conflicts_only_without_an_exit_between(sold: GateStack) -> None:
    secret = sold.secrets("r-1")[0]
    at = now_ms() - 60_000
    scans = [
        sold.offline_scan(secret, gate="a", nonce="y-1", at_ms=at, checkin_list="yard"),
        sold.offline_scan(
            secret, gate="a", nonce="y-2", at_ms=at + 1000, checkin_list="yard", direction="out"
        ),
        sold.offline_scan(secret, gate="b", nonce="y-3", at_ms=at + 2000, checkin_list="yard"),
    ]
    # Uploaded out of order: the last entry first.
    answers = sold.upload(scans[2], scans[0], scans[1])
    assert [a["result"] for a in answers] == ["ACCEPTED", "CONFLICT", "ACCEPTED"]
    # The exit in between, once uploaded, clears the conflict from the item's report.
    assert sold.table.read_conflicts("gig", "yard") == []


def test_an_offline_entry_with_a_secret_revoked_before_it_is_reported(sold: GateStack) -> None:
    old = sold.secrets("r-1")[0]
    sold.transfer(old, "c-9")
    [answer] = sold.upload(sold.offline_scan(old, gate="east", nonce="off-r", at_ms=now_ms() + 1000))
    assert answer["result"] == "CONFLICT" and "revoked" in answer["reason"]
    [earlier] = sold.upload(
        sold.offline_scan(sold.secrets("r-1")[1], gate="east", nonce="off-s", at_ms=now_ms() - 1000)
    )
    assert earlier["result"] == "ACCEPTED"
