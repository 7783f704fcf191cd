"""Ticket secrets (logic/ticket_credentials.py; docs/guides/checkin.md): the format, per-event keys,
every refusal in one line (forged, truncated, oversized, another event's key, malformed claims), the
key ring and its rotation; the conflict rule of offline scans; the reference offline scanner."""

from __future__ import annotations

import base64
import json

import pytest

from seat_inventory.gate_models import (
    CheckinList,
    Direction,
    GateResult,
    Scan,
    ScanRecord,
    SecretRefusal,
    TicketClaim,
    TicketRef,
)
from seat_inventory.logic.checkin import walk
from seat_inventory.logic.ticket_credentials import (
    MAX_SECRET_LENGTH,
    TicketKeyError,
    claim_of,
    parse_key_ring,
    promote,
    public_key_bytes,
    public_key_text,
    read_secret,
    retire,
    ring_text,
    sign_ticket,
    with_key,
)
from seat_tools.gate_scanner import ExportError, OfflineScanner

RING = with_key(None, "k1", b"a" * 32, make_current=True)
GA = TicketClaim(TicketRef("gig", 0, 42), "GA", None, 0, "")
SEAT = TicketClaim(TicketRef("gig", 3, 7), "STALLS", "A-1-12", 2, "")


def keys(event_id: str = "gig") -> dict[str, bytes]:
    return RING.public_keys(event_id)


def test_a_secret_names_the_event_the_number_the_seat_and_the_generation() -> None:
    for claim in (GA, SEAT):
        secret = sign_ticket(RING, claim)
        assert secret.startswith("T1.k1.") and len(secret) < 200
        read = read_secret(secret, keys(), event_id="gig")
        assert read == TicketClaim(claim.ticket, claim.seat_class, claim.seat, claim.generation, "k1")
    # Deterministic: the same ticket, generation and key give the same secret.
    assert sign_ticket(RING, GA) == sign_ticket(RING, GA)
    assert sign_ticket(RING, GA) != sign_ticket(RING, TicketClaim(GA.ticket, "GA", None, 1, ""))


def test_each_event_has_its_own_key_pair() -> None:
    assert keys("gig") != keys("other")
    assert keys("gig") == with_key(None, "k1", b"a" * 32, make_current=True).public_keys("gig")


def refusal(secret: object) -> SecretRefusal:
    answer = read_secret(secret, keys(), event_id="gig")
    assert isinstance(answer, SecretRefusal), answer
    assert answer.reason and "\n" not in answer.reason
    return answer


def _payload(document: dict[str, object]) -> str:
    return base64.urlsafe_b64encode(json.dumps(document).encode()).decode().rstrip("=")


@pytest.mark.parametrize(
    ("mangle", "expected"),
    [
        (lambda s: s[:-1] + ("A" if s[-1] != "A" else "B"), GateResult.FORGED),  # a changed signature
        (lambda s: s[:-12], GateResult.FORGED),  # truncated signature
        (lambda s: s[:12], GateResult.INVALID),  # truncated claims
        (lambda s: s + "A" * MAX_SECRET_LENGTH, GateResult.INVALID),  # oversized
        (lambda s: s.replace(".k1.", ".k2.", 1), GateResult.FORGED),  # unknown key id
        (lambda s: "T2" + s[2:], GateResult.INVALID),  # another version
        (lambda s: s.replace(".", "..", 1), GateResult.INVALID),
        (lambda s: "", GateResult.INVALID),
        (lambda s: "x" * 40, GateResult.INVALID),
    ],
)
def test_a_hostile_secret_is_refused_in_one_line(mangle: object, expected: GateResult) -> None:
    assert refusal(mangle(sign_ticket(RING, GA))).result is expected  # type: ignore[operator]


def test_a_secret_that_is_not_a_string_is_refused() -> None:
    for value in (None, 42, ["T1"], {"e": "gig"}):
        assert refusal(value).result is GateResult.INVALID


def test_another_event_s_ticket_and_a_ticket_signed_with_its_key() -> None:
    theirs = sign_ticket(RING, TicketClaim(TicketRef("other", 0, 1), "GA", None, 0, ""))
    answer = refusal(theirs)
    assert (answer.result, answer.reason) == (
        GateResult.WRONG_EVENT,
        "the ticket is for event other, not gig",
    )
    # A secret claiming gig, signed with the key gig's ring key gives "other": forged.
    signed = theirs.rsplit(".", 2)
    forged = f"T1.k1.{_payload({'e': 'gig', 's': 0, 'n': 1, 'c': 'GA', 'g': 0})}.{signed[2]}"
    assert refusal(forged).result is GateResult.FORGED


def test_claims_that_are_not_a_ticket_are_invalid_even_when_signed() -> None:
    for document in (
        {"e": "gig", "s": 0, "n": -1, "c": "GA", "g": 0},
        {"e": "gig", "s": 0, "n": 1, "g": 0},
        [1],
    ):
        secret = f"T1.k1.{_payload(document)}.{'A' * 86}"  # type: ignore[arg-type]
        assert refusal(secret).result is GateResult.INVALID
        assert claim_of(secret) is None


def test_the_key_ring_parses_rotates_and_retires() -> None:
    assert parse_key_ring(ring_text(RING)) == RING
    rotated = with_key(RING, "k2", b"b" * 32, make_current=False)
    assert (rotated.current, sorted(rotated.keys)) == ("k1", ["k1", "k2"])
    promoted = promote(rotated, "k2")
    old, new = sign_ticket(rotated, GA), sign_ticket(promoted, GA)
    assert old.split(".")[1] == "k1" and new.split(".")[1] == "k2"
    assert all(
        isinstance(read_secret(s, promoted.public_keys("gig"), event_id="gig"), TicketClaim)
        for s in (old, new)
    )
    retired = retire(promoted, "k1")
    assert read_secret(old, retired.public_keys("gig"), event_id="gig").result is GateResult.FORGED  # type: ignore[union-attr]
    with pytest.raises(TicketKeyError, match="current key"):
        retire(promoted, "k2")
    with pytest.raises(TicketKeyError, match="not in the ring"):
        promote(RING, "k9")


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("nope", "not JSON"),
        ('{"current": "k1"}', "must be"),
        ('{"current": "k1", "keys": {"k1": "c2hvcnQ"}}', "at least 32 bytes"),
        ('{"current": "k1", "keys": {"bad id!": "' + "A" * 43 + '"}}', "key id"),
        ('{"current": "k9", "keys": {"k1": "' + "A" * 43 + '"}}', "not among the keys"),
    ],
)
def test_a_malformed_ring_says_what_is_wrong(text: str, problem: str) -> None:
    with pytest.raises(TicketKeyError, match=problem):
        parse_key_ring(text)


def test_public_keys_round_trip_and_are_checked() -> None:
    key = keys()["k1"]
    assert public_key_bytes(public_key_text(key)) == key
    with pytest.raises(TicketKeyError):
        public_key_bytes("short")


# --- the conflict rule -------------------------------------------------------------------------


def scanned(nonce: str, at: int, direction: Direction = Direction.IN, *, offline: bool = True) -> ScanRecord:
    scan = Scan(nonce, f"gate-{nonce}", at, direction, offline)
    return ScanRecord(scan, GateResult.ACCEPTED, "", 0, moved=True)


def pairs(records: list[ScanRecord], *, reentry: bool) -> list[tuple[str, str | None]]:
    _, _, _, conflicts = walk(records, CheckinList("gig", "l", reentry), GA.ticket)
    return [(c.first.nonce, c.second.nonce if c.second else None) for c in conflicts]


def test_without_re_entry_every_entry_after_the_first_conflicts_with_the_first() -> None:
    records = [scanned("c", 30), scanned("a", 10), scanned("x", 20, Direction.OUT), scanned("b", 25)]
    assert pairs(records, reentry=False) == [("a", "b"), ("a", "c")]


def test_with_re_entry_only_an_entry_while_inside_conflicts() -> None:
    records = [scanned("a", 10), scanned("x", 20, Direction.OUT), scanned("b", 30), scanned("c", 40)]
    assert pairs(records, reentry=True) == [("b", "c")]
    inside, entered, last_in, _ = walk(records, CheckinList("gig", "l", True), GA.ticket)
    assert (inside, entered.nonce if entered else None, last_in.nonce if last_in else None) == (
        True,
        "a",
        "c",
    )


# --- the reference offline scanner ---------------------------------------------------------------


def export(**extra: object) -> dict[str, object]:
    return {
        "format": "seats-checkin-export-1",
        "event_id": "gig",
        "public_keys": {"k1": public_key_text(keys()["k1"])},
        "lists": {"main": {"allow_reentry": False}, "yard": {"allow_reentry": True}},
        "void": [],
        "min_generation": {},
        **extra,
    }


def test_an_offline_scanner_lets_a_ticket_in_once_and_refuses_what_the_export_revokes() -> None:
    scanner = OfflineScanner(export(void=["3:7"], min_generation={"0:42": 1}), "east", "main")
    assert scanner.scan(sign_ticket(RING, GA), at_ms=1)[0] is GateResult.REVOKED
    fresh = sign_ticket(RING, TicketClaim(GA.ticket, "GA", None, 1, ""))
    assert scanner.scan(fresh, at_ms=2)[0] is GateResult.ADMITTED
    assert scanner.scan(fresh, at_ms=3)[0] is GateResult.ALREADY_CHECKED_IN
    assert scanner.scan(sign_ticket(RING, SEAT), at_ms=4)[0] is GateResult.CANCELLED
    assert scanner.scan("T1.k1.x.y", at_ms=5)[0] is GateResult.INVALID
    assert [entry["scanned_at"] for entry in scanner.journal] == [2]


def test_an_offline_scanner_on_a_re_entry_list_lets_in_again_after_an_exit() -> None:
    scanner = OfflineScanner(export(), "west", "yard")
    secret = sign_ticket(RING, GA)
    results = [
        scanner.scan(secret, at_ms=1)[0],
        scanner.scan(secret, at_ms=2, direction=Direction.OUT)[0],
        scanner.scan(secret, at_ms=3)[0],
        scanner.scan(secret, at_ms=4)[0],
    ]
    assert results == [
        GateResult.ADMITTED,
        GateResult.EXITED,
        GateResult.ADMITTED,
        GateResult.ALREADY_CHECKED_IN,
    ]
    assert [e["direction"] for e in scanner.journal] == ["in", "out", "in"]


def test_an_offline_scanner_needs_an_export_with_its_list() -> None:
    with pytest.raises(ExportError, match="no check-in list"):
        OfflineScanner(export(), "east", "vip")
    with pytest.raises(ExportError, match="not a check-in export"):
        OfflineScanner({"format": "other"}, "east", "main")
