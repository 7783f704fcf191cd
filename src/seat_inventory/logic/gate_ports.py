"""The gate's port (docs/guides/checkin.md): what check-in, offline uploads and transfers need of the
table. `dal.gate_table.GateTable` implements it on DynamoDB (the tests drive it on moto and on
DynamoDB Local, never on a stand-in with guards of its own).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from seat_inventory.gate_models import (
    CheckinList,
    CheckinState,
    Conflict,
    HeldTicket,
    ScanRecord,
    TicketRef,
    TransferRecord,
    TransferRefused,
    TransferWrite,
)
from seat_inventory.models import TicketFormat


@dataclass(frozen=True, slots=True)
class TicketPlace:
    """Where a ticket's numbers were given: its reservation and that reservation's first serial
    (from the series' ledger, which never changes once written)."""

    reservation_id: str
    ticket_first: int


@dataclass(frozen=True, slots=True)
class AdmitRefused:
    """A scan (entry or exit) the conditions refused (nothing written): `state` is the ticket's check-in item
    as it was (empty when it had none); `ticket_refused` when the reservation's guard refused,
    with `ticket` as it is now (cancelled, or its holder generation moved on; None when the
    record is gone or holds no such serial)."""

    state: CheckinState
    ticket: HeldTicket | None = None
    ticket_refused: bool = False


class GateStore(Protocol):
    """Tickets, check-in lists and items, and transfers."""

    def locate_ticket(self, ticket: TicketRef) -> TicketPlace | None:
        """The reservation that holds `ticket`'s serial, or None when no such serial was given."""
        ...

    def read_ticket(self, ticket: TicketRef, place: TicketPlace) -> HeldTicket | None:
        """The ticket as its reservation record says now (strongly consistent), None if missing."""
        ...

    def read_reservation_tickets(self, reservation_id: str) -> list[HeldTicket] | None:
        """Every ticket of a reservation (empty while it is not numbered); None: no such record."""
        ...

    def read_ticket_format(self, event_id: str) -> TicketFormat:
        """How the event's ticket numbers print (docs/guides/tickets.md)."""
        ...

    def read_checkin_list(self, event_id: str, name: str) -> CheckinList | None:
        """The check-in list `name` of the event, or None when there is none."""
        ...

    def admit(
        self, ticket: TicketRef, place: TicketPlace, checkin_list: CheckinList, record: ScanRecord
    ) -> AdmitRefused | None:
        """One entry scan, one conditional write: the ticket's check-in item on the list records
        `record` (inside, its first and last entry), only if the nonce is new and the list's rule
        lets the ticket in (never entered; or, with re-entry, not inside), and only if the
        reservation is CONFIRMED and its holder generation is `record.generation`, all at once."""
        ...

    def leave(
        self, ticket: TicketRef, place: TicketPlace, checkin_list: CheckinList, record: ScanRecord
    ) -> AdmitRefused | None:
        """One exit scan, one conditional write: records `record` and the ticket outside, only if
        the nonce is new and the ticket is inside, with the same check of its reservation."""
        ...

    def remember_answer(self, ticket: TicketRef, list_name: str, record: ScanRecord) -> ScanRecord | None:
        """Keeps a refusal's answer under its nonce (a replay gets it again) unless the nonce has
        one already, which is returned."""
        ...

    def read_checkin(self, ticket: TicketRef, list_name: str) -> CheckinState:
        """The ticket's check-in item on the list (strongly consistent; empty when none)."""
        ...

    def write_checkin(
        self, ticket: TicketRef, list_name: str, state: CheckinState, record: ScanRecord, *, version: int
    ) -> bool:
        """Records an uploaded scan and the item's new summary (`state`), only if the item is still
        at `version` and the nonce is new; False when it moved on (read it again)."""
        ...

    def read_conflicts(self, event_id: str, list_name: str | None = None) -> list[Conflict]:
        """Every conflict found on the event's tickets (an operator's report: a Scan)."""
        ...

    def read_limit(self, ticket: HeldTicket) -> int | None:
        """The per-customer limit of the ticket's class (its seat's row item for a mapped class)."""
        ...

    def commit_transfer(self, write: TransferWrite) -> TransferRefused | None:
        """The transfer, all at once (see `TransferWrite`); a refusal writes nothing."""
        ...

    def read_transfer(self, transfer_id: str) -> TransferRecord | None:
        """The transfer kept under `transfer_id`, or None."""
        ...

    def read_event_tickets(self, event_id: str) -> Sequence[HeldTicket]:
        """Every numbered ticket of the event that is void (cancelled) or was passed on (an
        operator's export: a Scan); the others are as issued and admit with generation 0."""
        ...
