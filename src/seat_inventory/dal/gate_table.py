"""`GateTable`: the DynamoDB implementation of the gate's port (`logic.gate_ports.GateStore`):
check-in (`checkins`), transfers (`transfers`), and the ticket format of the issuer's items."""

from __future__ import annotations

from seat_inventory.dal.checkins import Checkins
from seat_inventory.dal.tickets import TicketQueries
from seat_inventory.dal.transfers import Transfers


class GateTable(Checkins, Transfers, TicketQueries):
    """Tickets at the gate: check-in lists and items, holders and transfers."""
