"""Check-in at the gate (docs/guides/checkin.md): online scans, offline uploads, conflicts, the export.

Online, a scan is decided by one conditional write on the ticket's own check-in item of the list
(`GateStore.admit`): its condition is the list's rule (never entered; or, with re-entry, not
inside) and a nonce not seen, checked in the same transaction with the reservation being live and
the secret's holder generation being the current one. So a ticket enters once per list whatever
the gates, a replayed nonce finds its first answer on the item, and a revoked or cancelled
ticket never enters. Each ticket has its own item: scans of different tickets never meet.

Offline, scanners decide alone from the export (`export_for_scanners`: the event's public keys
and what was revoked) and upload their scans later (`upload_scans`): each is recorded once (its
nonce), and every ticket let in twice (a second entry while the first had not gone out, or any
second entry on a list without re-entry) is a conflict naming both scans, as is an entry with a
secret revoked before the scan.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from seat_inventory.gate_models import (
    GATE_ID,
    CheckinList,
    CheckinState,
    Conflict,
    Direction,
    GateResult,
    HeldTicket,
    Scan,
    ScanAnswer,
    ScanRecord,
    SecretRefusal,
    TicketClaim,
    TicketRef,
)
from seat_inventory.logic.gate_ports import GateStore, TicketPlace
from seat_inventory.logic.ports import Clock, OutcomePublisher
from seat_inventory.logic.ticket_credentials import (
    TicketKeyRing,
    public_key_text,
    read_secret,
)
from seat_inventory.models import (
    Outcome,
    RequestType,
    ReservationOutcome,
    RetryableError,
    TicketFormat,
    iso_utc,
)

# An upload carries at most this many scans (one request of the API; a scanner sends more in turn).
MAX_UPLOAD_SCANS = 500
# Attempts at one uploaded scan while other writes move its ticket's item on.
UPLOAD_ATTEMPTS = 5
# An offline scan's clock may not be further ahead of the service's than this (a day).
MAX_CLOCK_AHEAD_MS = 86_400_000


@dataclass
class Gate:
    """What the gate works with: the store, the ticket keys (None: no ring, every secret is
    forged), the clock, the outcome publisher, and per-container caches of lists and formats
    (a list's re-entry rule or an event's ticket format is read once per container)."""

    store: GateStore
    keys: Callable[[], TicketKeyRing | None]
    clock: Clock
    publisher: OutcomePublisher
    lists: dict[tuple[str, str], CheckinList | None] = field(default_factory=dict)
    formats: dict[str, TicketFormat] = field(default_factory=dict)

    def now_ms(self) -> int:
        return int(self.clock.now() * 1000)

    def public_keys(self, event_id: str) -> dict[str, bytes]:
        ring = self.keys()
        return ring.public_keys(event_id) if ring is not None else {}

    def checkin_list(self, event_id: str, name: str) -> CheckinList | None:
        key = (event_id, name)
        if self.lists.get(key) is None:
            self.lists[key] = self.store.read_checkin_list(event_id, name)
        return self.lists[key]

    def label(self, ticket: TicketRef) -> str:
        if ticket.event_id not in self.formats:
            self.formats[ticket.event_id] = self.store.read_ticket_format(ticket.event_id)
        return self.formats[ticket.event_id].label(ticket.series, ticket.serial)


@dataclass(frozen=True, slots=True)
class ScanRequest:
    """One scan as a scanner sends it (`POST /checkins`, or a scan of an upload with `at_ms`)."""

    event_id: str
    list_name: str
    gate: str
    nonce: str
    secret: str
    direction: Direction = Direction.IN
    at_ms: int | None = None


def parse_scan(body: Mapping[str, Any], *, offline: bool = False) -> ScanRequest | ScanAnswer:
    """A scan from its JSON body; an INVALID answer (one line) when a field is missing or wrong.
    An offline scan must say when it was made (`scanned_at`, epoch ms)."""
    fields = ("event_id", "list", "gate", "nonce")
    for name in fields:
        value = body.get(name)
        if not isinstance(value, str) or not GATE_ID.fullmatch(value):
            nonce = body.get("nonce") if isinstance(body.get("nonce"), str) else None
            return ScanAnswer(
                GateResult.INVALID,
                f"{name} is required: 1-64 of A-Z a-z 0-9 . _ : @ - starting with a letter or digit",
                nonce=nonce if nonce and GATE_ID.fullmatch(nonce) else None,
            )
    direction = body.get("direction", "in")
    if direction not in ("in", "out"):
        return ScanAnswer(GateResult.INVALID, 'direction is "in" or "out"', nonce=body["nonce"])
    at_ms = body.get("scanned_at")
    if offline and (isinstance(at_ms, bool) or not isinstance(at_ms, int) or at_ms <= 0):
        return ScanAnswer(
            GateResult.INVALID, "scanned_at (epoch ms) is required for an offline scan", body["nonce"]
        )
    return ScanRequest(
        event_id=body["event_id"],
        list_name=body["list"],
        gate=body["gate"],
        nonce=body["nonce"],
        secret=body.get("secret"),  # type: ignore[arg-type]  # read_secret refuses anything else
        direction=Direction(direction),
        at_ms=at_ms if offline else None,
    )


# ------------------------------------------------------------------------------ online


def check_in(gate: Gate, request: ScanRequest) -> ScanAnswer:
    """One online scan (`POST /checkins`): admitted, let out, or refused with a one-line reason;
    a nonce seen before gets the answer it got then (`replay`)."""
    checkin_list = gate.checkin_list(request.event_id, request.list_name)
    if checkin_list is None:
        return ScanAnswer(
            GateResult.UNKNOWN_LIST,
            f"{request.event_id} has no check-in list {request.list_name!r}",
            nonce=request.nonce,
        )
    if request.direction is Direction.OUT and not checkin_list.allow_reentry:
        return ScanAnswer(
            GateResult.INVALID,
            f"check-in list {checkin_list.name} allows no re-entry: it takes no exit scans",
            nonce=request.nonce,
        )
    found = _verified_ticket(gate, request)
    if isinstance(found, ScanAnswer):
        return found
    claim, place = found
    scan = Scan(request.nonce, request.gate, gate.now_ms(), request.direction)
    if request.direction is Direction.OUT:
        return _leave(gate, claim, place, checkin_list, scan)
    return _enter(gate, claim, place, checkin_list, scan)


def _verified_ticket(gate: Gate, request: ScanRequest) -> tuple[TicketClaim, TicketPlace] | ScanAnswer:
    claim = read_secret(request.secret, gate.public_keys(request.event_id), event_id=request.event_id)
    if isinstance(claim, SecretRefusal):
        return ScanAnswer(claim.result, claim.reason, nonce=request.nonce)
    place = gate.store.locate_ticket(claim.ticket)
    if place is None:
        return ScanAnswer(
            GateResult.UNKNOWN_TICKET,
            f"no ticket {gate.label(claim.ticket)} was issued for {claim.ticket.event_id}",
            nonce=request.nonce,
        )
    return claim, place


def _answer(gate: Gate, claim: TicketClaim, record: ScanRecord, *, replay: bool = False) -> ScanAnswer:
    return ScanAnswer(
        record.result,
        record.reason,
        nonce=record.scan.nonce,
        ticket=gate.label(claim.ticket),
        seat_class=claim.seat_class,
        seat=claim.seat,
        first=record.first,
        replay=replay,
    )


def _where(scan: Scan) -> str:
    return f"{iso_utc(scan.at_ms / 1000)} at gate {scan.gate}" + (" (offline)" if scan.offline else "")


def _enter(
    gate: Gate, claim: TicketClaim, place: TicketPlace, checkin_list: CheckinList, scan: Scan
) -> ScanAnswer:
    seat = f"{claim.seat_class}" + (f" seat {claim.seat}" if claim.seat else "")
    record = ScanRecord(scan, GateResult.ADMITTED, f"admitted: {seat}", claim.generation, moved=True)
    refused = gate.store.admit(claim.ticket, place, checkin_list, record)
    if refused is None:
        return _answer(gate, claim, record)
    earlier = refused.state.scans.get(scan.nonce)
    if earlier is not None:
        return _answer(gate, claim, earlier, replay=True)
    if refused.ticket_refused:
        # Final: a cancel is never undone and a holder generation only grows.
        return _refused_ticket(gate, claim, refused.ticket, scan.nonce)
    state = refused.state
    named = state.last_in if checkin_list.allow_reentry else state.entered
    if named is None:  # the item refused, yet says nobody entered: it moved on meanwhile
        raise RetryableError(f"check-in of {gate.label(claim.ticket)} on {checkin_list.name} raced; retry")
    refusal = ScanRecord(
        scan,
        GateResult.ALREADY_CHECKED_IN,
        f"already checked in on {checkin_list.name}: {_where(named)}",
        claim.generation,
        moved=False,
        first=named,
    )
    kept = gate.store.remember_answer(claim.ticket, checkin_list.name, refusal)
    return _answer(gate, claim, kept, replay=True) if kept is not None else _answer(gate, claim, refusal)


def _leave(
    gate: Gate, claim: TicketClaim, place: TicketPlace, checkin_list: CheckinList, scan: Scan
) -> ScanAnswer:
    record = ScanRecord(scan, GateResult.EXITED, "let out", claim.generation, moved=True)
    refused = gate.store.leave(claim.ticket, place, checkin_list, record)
    if refused is None:
        return _answer(gate, claim, record)
    earlier = refused.state.scans.get(scan.nonce)
    if earlier is not None:
        return _answer(gate, claim, earlier, replay=True)
    if refused.ticket_refused:
        # A revoked secret lets no one out either: its ticket's holder may be outside.
        return _refused_ticket(gate, claim, refused.ticket, scan.nonce)
    refusal = ScanRecord(
        scan,
        GateResult.NOT_CHECKED_IN,
        f"not checked in on {checkin_list.name}",
        claim.generation,
        moved=False,
    )
    kept = gate.store.remember_answer(claim.ticket, checkin_list.name, refusal)
    return _answer(gate, claim, kept, replay=True) if kept is not None else _answer(gate, claim, refusal)


def _refused_ticket(gate: Gate, claim: TicketClaim, held: HeldTicket | None, nonce: str) -> ScanAnswer:
    reason = ticket_refusal(held, claim) if held is not None else None
    result, text = reason if reason is not None else (GateResult.UNKNOWN_TICKET, "the ticket is not live")
    return ScanAnswer(result, text, nonce=nonce, ticket=gate.label(claim.ticket))


def ticket_refusal(held: HeldTicket, claim: TicketClaim) -> tuple[GateResult, str] | None:
    """Why the ticket as it is now does not admit with this secret (None: it does)."""
    if held.record.status is Outcome.CANCELLED:
        return GateResult.CANCELLED, "the ticket is void: its reservation was cancelled"
    if not held.live:
        return GateResult.UNKNOWN_TICKET, f"the ticket's reservation is {held.record.status.value}, not sold"
    if held.holder.generation != claim.generation:
        return (
            GateResult.REVOKED,
            f"this secret was revoked: the ticket was passed on (secret {claim.generation},"
            f" current {held.holder.generation})",
        )
    return None


# ------------------------------------------------------------------------------ offline


def upload_scans(gate: Gate, scans: Sequence[Mapping[str, Any]]) -> list[ScanAnswer]:
    """Offline scans uploaded (`POST /checkins/uploads`), each on its own: recorded once
    (ACCEPTED, or CONFLICT naming the scans it conflicts with), DUPLICATE when its nonce was
    uploaded before (its first answer, and its conflicts published again), or refused."""
    if len(scans) > MAX_UPLOAD_SCANS:
        return [ScanAnswer(GateResult.INVALID, f"an upload holds at most {MAX_UPLOAD_SCANS} scans")]
    return [_upload_one(gate, body if isinstance(body, Mapping) else {}) for body in scans]


def _upload_one(gate: Gate, body: Mapping[str, Any]) -> ScanAnswer:
    request = parse_scan(body, offline=True)
    if isinstance(request, ScanAnswer):
        return request
    assert request.at_ms is not None
    if request.at_ms > gate.now_ms() + MAX_CLOCK_AHEAD_MS:
        return ScanAnswer(
            GateResult.INVALID, "scanned_at is more than a day ahead of now", nonce=request.nonce
        )
    checkin_list = gate.checkin_list(request.event_id, request.list_name)
    if checkin_list is None:
        return ScanAnswer(
            GateResult.UNKNOWN_LIST,
            f"{request.event_id} has no check-in list {request.list_name!r}",
            request.nonce,
        )
    found = _verified_ticket(gate, request)
    if isinstance(found, ScanAnswer):
        return found
    claim, place = found
    held = gate.store.read_ticket(claim.ticket, place)
    if held is None:
        return ScanAnswer(
            GateResult.UNKNOWN_TICKET, f"no ticket {gate.label(claim.ticket)}", nonce=request.nonce
        )
    scan = Scan(request.nonce, request.gate, request.at_ms, request.direction, offline=True)
    return _keep_offline_scan(gate, held, claim, checkin_list, scan)


def _keep_offline_scan(
    gate: Gate, held: HeldTicket, claim: TicketClaim, checkin_list: CheckinList, scan: Scan
) -> ScanAnswer:
    """Adds an uploaded scan to its ticket's check-in item (or finds it there already)."""
    revoked = revoked_before(held, claim, scan.at_ms) if scan.direction is Direction.IN else None
    for _ in range(UPLOAD_ATTEMPTS):
        state = gate.store.read_checkin(claim.ticket, checkin_list.name)
        earlier = state.scans.get(scan.nonce)
        if earlier is not None:
            # Its first answer again; the conflicts it found then are published again (at least
            # once: the first publication may be what failed).
            created = earlier.result is GateResult.CONFLICT
            mine = tuple(c for c in state.conflicts if scan.nonce in c.key) if created else ()
            _publish_conflicts(gate, held, mine, duplicate=True)
            answer = _answer(gate, claim, earlier, replay=True)
            return replace(answer, result=GateResult.DUPLICATE, conflicts=mine)
        new_state, record = with_offline_scan(
            state, scan, claim.generation, checkin_list, claim.ticket, revoked
        )
        if gate.store.write_checkin(
            claim.ticket, checkin_list.name, new_state, record, version=state.version
        ):
            found_now = tuple(c for c in new_state.conflicts if c not in state.conflicts)
            _publish_conflicts(gate, held, found_now, duplicate=False)
            return replace(_answer(gate, claim, record), conflicts=found_now)
    raise RetryableError(f"the check-in item of {gate.label(claim.ticket)} kept moving; upload again")


def revoked_before(held: HeldTicket, claim: TicketClaim, at_ms: int) -> str | None:
    """Why the secret did not admit at `at_ms` (revoked or void by then), or None when it did."""
    revoked_at = held.holder.revoked_at.get(claim.generation)
    if claim.generation < held.holder.generation and revoked_at is not None and revoked_at <= at_ms:
        return f"its secret was revoked at {iso_utc(revoked_at / 1000)} (passed on)"
    if held.record.status is Outcome.CANCELLED:
        cancelled = held.record.status_changed_at
        if cancelled is None or cancelled <= iso_utc(at_ms / 1000):
            return (
                f"its reservation was cancelled at {cancelled}"
                if cancelled
                else "its reservation was cancelled"
            )
    return None


def with_offline_scan(
    state: CheckinState,
    scan: Scan,
    generation: int,
    checkin_list: CheckinList,
    ticket: TicketRef,
    revoked: str | None,
) -> tuple[CheckinState, ScanRecord]:
    """The item with an uploaded scan added: where the ticket is, its entries and its conflicts
    recomputed from every scan that let someone in or out, in the order they were made."""
    history = [r for r in state.scans.values() if r.moved]
    probe = ScanRecord(scan, GateResult.ACCEPTED, "", generation, moved=True)
    inside, entered, last_in, twice = walk([*history, probe], checkin_list, ticket)
    revocations = [c for c in state.conflicts if c.second is None]
    if revoked is not None:
        revocations.append(
            Conflict(ticket, checkin_list.name, scan, None, f"let in {_where(scan)} though {revoked}")
        )
    conflicts = tuple(twice) + tuple(revocations)
    mine = [c for c in conflicts if scan.nonce in c.key]
    if mine:
        reason = "; ".join(c.reason for c in mine)
        record = ScanRecord(scan, GateResult.CONFLICT, reason, generation, moved=True)
    else:
        verb = "entry" if scan.direction is Direction.IN else "exit"
        record = ScanRecord(scan, GateResult.ACCEPTED, f"offline {verb} recorded", generation, moved=True)
    scans = {**state.scans, scan.nonce: record}
    return CheckinState(inside, entered, last_in, scans, conflicts, state.version + 1), record


def walk(
    records: Sequence[ScanRecord], checkin_list: CheckinList, ticket: TicketRef
) -> tuple[bool, Scan | None, Scan | None, list[Conflict]]:
    """Where a ticket is after its scans (in the order made), its first and last entry, and the
    entries that should not have happened: on a list without re-entry every entry after the
    first, on one with re-entry every entry while the ticket was inside; each named with the
    entry it conflicts with."""
    inside = False
    entered: Scan | None = None
    last_in: Scan | None = None
    conflicts: list[Conflict] = []
    for record in sorted(records, key=lambda r: (r.scan.at_ms, r.scan.nonce)):
        scan = record.scan
        if scan.direction is Direction.OUT:
            inside = False
            continue
        other = last_in if checkin_list.allow_reentry and inside else entered
        if other is not None and (inside or not checkin_list.allow_reentry):
            conflicts.append(
                Conflict(
                    ticket,
                    checkin_list.name,
                    other,
                    scan,
                    f"let in twice: {_where(other)} and {_where(scan)}",
                )
            )
        entered = entered or scan
        last_in = scan
        inside = True
    return inside, entered, last_in, conflicts


def conflict_outcome(
    gate: Gate, held: HeldTicket, conflict: Conflict, *, duplicate: bool
) -> ReservationOutcome:
    """The CHECKIN_CONFLICT outcome of one conflict (docs/reference/contract.md)."""
    return ReservationOutcome(
        reservation_id=held.reservation_id,
        outcome=Outcome.CHECKIN_CONFLICT,
        reason=f"ticket {gate.label(conflict.ticket)} on list {conflict.list_name}: {conflict.reason}",
        event_id=conflict.ticket.event_id,
        seat_class=held.seat.seat_class,
        quantity=1,
        customer_id=held.holder.customer_id,
        duplicate=duplicate,
        message_id=conflict.second.nonce if conflict.second else conflict.first.nonce,
        request_type=RequestType.CHECKIN,
        tickets=(gate.label(conflict.ticket),),
        seats=(held.seat.seat,) if held.seat.seat else None,
    )


def _publish_conflicts(
    gate: Gate, held: HeldTicket, conflicts: Sequence[Conflict], *, duplicate: bool
) -> None:
    if not conflicts:
        return
    refused = gate.publisher.publish(
        [conflict_outcome(gate, held, c, duplicate=duplicate) for c in conflicts]
    )
    if refused:
        # Recorded already: the scanner uploads again, finds it a DUPLICATE and it is published then.
        raise RetryableError(f"{len(refused)} CHECKIN_CONFLICT outcome(s) not published; upload again")


# ------------------------------------------------------------------------------ export


def export_for_scanners(
    gate: Gate, event_id: str, lists: Sequence[CheckinList], now_ms: int | None = None
) -> dict[str, Any]:
    """What a scanner needs to check the event's tickets offline (`seats checkin export`): the
    event's public keys by key id, the check-in lists and their rule, and every ticket a scanner
    must refuse although its signature verifies: void ones (cancelled), and for each ticket
    passed on the generation its secrets must have at least."""
    tickets = gate.store.read_event_tickets(event_id)
    void: list[str] = []
    minimum: dict[str, int] = {}
    for held in sorted(tickets, key=lambda h: (h.ticket.series, h.ticket.serial)):
        key = f"{held.ticket.series}:{held.ticket.serial}"
        if held.record.status is Outcome.CANCELLED:
            void.append(key)
        elif held.holder.generation > 0:
            minimum[key] = held.holder.generation
    return {
        "format": "seats-checkin-export-1",
        "event_id": event_id,
        "exported_at": now_ms if now_ms is not None else gate.now_ms(),
        "public_keys": {kid: public_key_text(key) for kid, key in sorted(gate.public_keys(event_id).items())},
        "lists": {c.name: {"allow_reentry": c.allow_reentry} for c in lists},
        "void": void,
        "min_generation": minimum,
    }
