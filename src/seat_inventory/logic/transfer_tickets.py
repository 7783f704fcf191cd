"""Transfers and the holders' views of their tickets (docs/guides/checkin.md, "Transfers").

A holder passes a ticket on by presenting its current secret: in one transaction the ticket's
holder generation moves on (every older secret is revoked from that moment), the receiver's
per-customer counter of the ticket's class goes up (guarded by the class's limit) and the
giver's down, and the transfer is kept under its id (a retry with the same id gets the same
answer). The ticket keeps its number: a number identifies the sale, which a transfer does not
undo or repeat, and the audit's sequence stays as it was (docs/guides/checkin.md says why).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from seat_inventory.gate_models import (
    CUSTOMER_ID,
    TRANSFER_ID,
    GateResult,
    HeldTicket,
    SecretRefusal,
    TicketClaim,
    TicketHolder,
    TransferAnswer,
    TransferRecord,
    TransferWrite,
)
from seat_inventory.logic.checkin import Gate, ticket_refusal
from seat_inventory.logic.ticket_credentials import claim_of, read_secret, sign_ticket
from seat_inventory.models import Outcome, RequestType, ReservationOutcome, RetryableError

# Attempts while the ticket's record or its class's limit moves under the transfer.
TRANSFER_ATTEMPTS = 4


@dataclass(frozen=True, slots=True)
class TransferRequest:
    """A transfer as the holder sends it (`POST /transfers`)."""

    transfer_id: str
    secret: str
    from_customer: str
    to_customer: str


def parse_transfer(body: Mapping[str, Any]) -> TransferRequest | TransferAnswer:
    """A transfer from its JSON body; INVALID (one line) when a field is missing or wrong."""
    transfer_id = body.get("transfer_id")
    if not isinstance(transfer_id, str) or not TRANSFER_ID.fullmatch(transfer_id):
        return TransferAnswer(
            GateResult.INVALID,
            "transfer_id is required: 1-128 of A-Z a-z 0-9 . _ : @ - starting with a letter or digit",
        )
    for name in ("from_customer_id", "to_customer_id"):
        value = body.get(name)
        if not isinstance(value, str) or not CUSTOMER_ID.fullmatch(value):
            return TransferAnswer(
                GateResult.INVALID, f"{name} is required: 1-128 of A-Z a-z 0-9 . _ : @ -", transfer_id
            )
    secret = body.get("secret")
    if not isinstance(secret, str) or not secret:
        return TransferAnswer(
            GateResult.INVALID, "secret (the ticket's current secret) is required", transfer_id
        )
    return TransferRequest(transfer_id, secret, body["from_customer_id"], body["to_customer_id"])


def transfer_ticket(gate: Gate, request: TransferRequest) -> TransferAnswer:
    """Passes the ticket `request.secret` names from its holder to another customer (or, to the
    same customer, issues the holder a new secret and revokes the old one)."""
    claimed = claim_of(request.secret)
    if claimed is None:
        return TransferAnswer(GateResult.INVALID, "the secret is not a ticket", request.transfer_id)
    event_id = claimed.ticket.event_id
    claim = read_secret(request.secret, gate.public_keys(event_id), event_id=event_id)
    if isinstance(claim, SecretRefusal):
        return TransferAnswer(claim.result, claim.reason, request.transfer_id)
    kept = gate.store.read_transfer(request.transfer_id)
    if kept is not None:
        return _again(gate, kept, request, claim)
    place = gate.store.locate_ticket(claim.ticket)
    if place is None:
        return TransferAnswer(GateResult.UNKNOWN_TICKET, "no such ticket was issued", request.transfer_id)
    for _ in range(TRANSFER_ATTEMPTS):
        held = gate.store.read_ticket(claim.ticket, place)
        if held is None:
            return TransferAnswer(GateResult.UNKNOWN_TICKET, "no such ticket was issued", request.transfer_id)
        refusal = ticket_refusal(held, claim)
        if refusal is not None:
            return TransferAnswer(refusal[0], refusal[1], request.transfer_id, gate.label(claim.ticket))
        if held.holder.customer_id != request.from_customer:
            return TransferAnswer(
                GateResult.NOT_HOLDER,
                f"customer {request.from_customer} does not hold this ticket",
                request.transfer_id,
                gate.label(claim.ticket),
            )
        write = plan_transfer(held, request, gate.store.read_limit(held), gate.now_ms())
        refused = gate.store.commit_transfer(write)
        if refused is None:
            return _transferred(gate, held, write.record, holds=True, duplicate=False)
        if refused.existing is not None:
            return _again(gate, refused.existing, request, claim)
        if refused.limit_reached:
            return TransferAnswer(
                GateResult.LIMIT_EXCEEDED,
                f"customer {request.to_customer} holds {write.limit} ticket(s) of {held.seat.seat_class},"
                f" the most one customer may",
                request.transfer_id,
                gate.label(claim.ticket),
            )
        # The record or the class's limit moved on meanwhile: read them again.
    raise RetryableError(
        f"transfer {request.transfer_id} kept racing other changes of its ticket; send it again"
    )


def plan_transfer(
    held: HeldTicket, request: TransferRequest, limit: int | None, now_ms: int
) -> TransferWrite:
    """The holder moves on: the next generation, to the receiver; the receiver's counter counts the
    ticket when the class has a limit (and, back to the buyer, exactly when the sale counted it,
    so that a cancel later gives back what was counted); a re-issue to the same holder moves no
    counter."""
    before = held.holder
    to = request.to_customer
    if to == before.customer_id:
        counted = before.counted
    elif to == held.buyer:
        counted = held.seat.buyer_counted
    else:
        counted = limit is not None
    after = TicketHolder(
        customer_id=to,
        generation=before.generation + 1,
        counted=counted,
        transfer_id=request.transfer_id,
        at_ms=now_ms,
        revoked_at={**before.revoked_at, before.generation: now_ms},
    )
    delta = int(to != held.buyer) - int(before.customer_id != held.buyer)
    record = TransferRecord(
        transfer_id=request.transfer_id,
        ticket=held.ticket,
        reservation_id=held.reservation_id,
        from_customer=before.customer_id,
        to_customer=to,
        generation=after.generation,
        at_ms=now_ms,
        previous=before.transfer_id,
    )
    return TransferWrite(held, before, after, delta, limit, record)


def _again(gate: Gate, kept: TransferRecord, request: TransferRequest, claim: TicketClaim) -> TransferAnswer:
    """A transfer id seen before: the same transfer is answered as then (with its receiver's
    secret while the receiver still holds the ticket); another one is refused."""
    if kept.ticket != claim.ticket or kept.to_customer != request.to_customer:
        return TransferAnswer(
            GateResult.INVALID,
            f"transfer id {kept.transfer_id} was used for another transfer",
            kept.transfer_id,
        )
    place = gate.store.locate_ticket(kept.ticket)
    held = gate.store.read_ticket(kept.ticket, place) if place is not None else None
    if held is None:
        return TransferAnswer(GateResult.UNKNOWN_TICKET, "no such ticket was issued", kept.transfer_id)
    holds = held.live and held.holder.generation == kept.generation
    return _transferred(gate, held, kept, holds=holds, duplicate=True)


def _transferred(
    gate: Gate, held: HeldTicket, kept: TransferRecord, *, holds: bool, duplicate: bool
) -> TransferAnswer:
    """TRANSFERRED, published (at least once: a retry with the same id publishes it again) and
    answered with the receiver's secret while the receiver holds the ticket."""
    label = gate.label(held.ticket)
    ring = gate.keys()
    secret = None
    if ring is not None and holds:
        claim = TicketClaim(held.ticket, held.seat.seat_class, held.seat.seat, kept.generation, "")
        secret = sign_ticket(ring, claim)
    reason = f"ticket {label} passed on from {kept.from_customer} to {kept.to_customer}"
    if not holds:
        reason += "; it has been passed on again since"
    outcome = ReservationOutcome(
        reservation_id=held.reservation_id,
        outcome=Outcome.TRANSFERRED,
        reason=reason,
        event_id=held.ticket.event_id,
        seat_class=held.seat.seat_class,
        quantity=1,
        customer_id=kept.to_customer,
        duplicate=duplicate,
        message_id=kept.transfer_id,
        request_type=RequestType.TRANSFER,
        tickets=(label,),
        seats=(held.seat.seat,) if held.seat.seat else None,
    )
    if gate.publisher.publish([outcome]):
        # Committed already: the caller sends it again (same transfer id) and it is published then.
        raise RetryableError(
            f"transfer {kept.transfer_id} committed, its outcome not published; send it again"
        )
    return TransferAnswer(
        GateResult.TRANSFERRED, reason, kept.transfer_id, label, secret, kept.generation, duplicate=duplicate
    )


# ------------------------------------------------------------------------------ views


def ticket_view(gate: Gate, held: HeldTicket, *, for_customer: str | None) -> dict[str, Any]:
    """One ticket as its holder's page shows it: its number and seat, whether it is live, void
    (cancelled) or passed on (another customer holds it), and its secret while `for_customer`
    holds it and it is live."""
    if held.record.status is Outcome.CANCELLED:
        status = "void"
    elif held.holder.customer_id != for_customer:
        status = "passed_on"
    else:
        status = "live"
    secret = None
    ring = gate.keys()
    if status == "live" and ring is not None:
        claim = TicketClaim(held.ticket, held.seat.seat_class, held.seat.seat, held.holder.generation, "")
        secret = sign_ticket(ring, claim)
    return {
        "ticket": gate.label(held.ticket),
        "series": held.ticket.series,
        "serial": held.ticket.serial,
        "seat_class": held.seat.seat_class,
        "seat": held.seat.seat,
        "status": status,
        "generation": held.holder.generation,
        "secret": secret,
    }


def reservation_tickets(gate: Gate, reservation_id: str) -> dict[str, Any] | None:
    """The buyer's tickets of a reservation (`GET /reservations/{id}/tickets`), None if unknown."""
    tickets = gate.store.read_reservation_tickets(reservation_id)
    if tickets is None:
        return None
    buyer = tickets[0].buyer if tickets else None
    return {
        "reservation_id": reservation_id,
        "tickets": [ticket_view(gate, t, for_customer=t.buyer) for t in tickets],
        "customer_id": buyer,
    }


def transfer_view(gate: Gate, transfer_id: str) -> dict[str, Any] | None:
    """The receiver's ticket of a transfer (`GET /transfers/{id}`), None if unknown: its secret
    while the receiver still holds it with the generation this transfer made."""
    kept = gate.store.read_transfer(transfer_id)
    if kept is None:
        return None
    place = gate.store.locate_ticket(kept.ticket)
    held = gate.store.read_ticket(kept.ticket, place) if place is not None else None
    if held is None:
        return None
    view = ticket_view(gate, held, for_customer=kept.to_customer)
    if held.holder.generation != kept.generation and view["status"] == "live":
        view.update(status="passed_on", secret=None)
    return {"transfer_id": transfer_id, "customer_id": kept.to_customer, **view}
