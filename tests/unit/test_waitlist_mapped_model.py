"""Model-based test of a mapped class's waiting list on the in-memory store: random best-available
requests (some that may split, some joining the list), cancels, confirms, leaves, holds and offers
running out, redelivered messages and offer rounds (one sweeper or two). After every step:

- offers in join order, each entry offered at most once and never after it left;
- every seat is where exactly one thing puts it: a seat held or sold is on exactly one live record
  (never two live offers or holds of one seat), a seat set aside for the list (state L) on none,
  and the row items' counts are their seats' states;
- the seats set aside go back on public sale once nobody waits (after a round).

SEATS_WAITLIST_MAPPED_EXAMPLES and SEATS_WAITLIST_MAPPED_STEPS size it (tests/depth.py: 40 x 40
in `make test`, 300 x 60 in `make test-deep`).
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import invariant, rule

from seat_inventory.models import Outcome, SeatState
from tests.depth import sized
from tests.fakes import InMemoryInventoryStore
from tests.unit.test_waitlist_mapped import ROW, MappedSale, seat_map
from tests.unit.test_waitlist_model import ListHistory

LIVE = (Outcome.HELD, Outcome.CONFIRMED)


class MappedWaitingListMachine(ListHistory):
    def __init__(self) -> None:
        store = InMemoryInventoryStore()
        store.add_seat_map("e-1", seat_map())
        super().__init__(MappedSale(store, offer_seconds=120))

    def _send(self, body: dict[str, Any]) -> dict[str, Any]:
        if body.get("type") not in ("confirm", "cancel", "leave"):
            body = {"seat_class": "ROW", **body}
        return super()._send(body)

    @rule(
        quantity=st.integers(1, 3),
        waits=st.sampled_from([True, True, False]),
        hold=st.booleans(),
        split=st.sampled_from([False, False, True]),
    )
    def request(self, quantity: int, waits: bool, hold: bool, split: bool) -> None:
        self.n += 1
        self.sale.clock.time += 0.001  # requests a millisecond apart: join order is the join's time
        rid = f"r-{self.n}"
        body: dict[str, Any] = {"reservation_id": rid, "customer_id": f"c-{self.n}", "quantity": quantity}
        if waits:
            body["waitlist"] = True
        if hold:
            body.update(type="hold", hold_seconds=60)
        if split:
            body["split"] = True
        answer = self._send(body)[rid]
        if answer.outcome is Outcome.WAITLISTED:
            self.joined.append(rid)
        elif answer.outcome in (Outcome.CONFIRMED, Outcome.HELD):
            assert answer.seats is not None and len(answer.seats) == quantity

    @rule(twice=st.booleans())
    def sweep(self, twice: bool) -> None:
        offers = self.sale.sweep() + (self.sale.sweep() if twice else [])
        assert all(o.seats and len(o.seats) == o.quantity for o in offers), offers
        self._check_offers(offers)
        waiting = self.sale.store.read_waitlist(ROW)
        assert waiting is not None
        if not waiting.waiting:
            assert not self.sale.listed(), "seats kept aside with nobody waiting"

    @invariant()
    def every_seat_is_in_one_place(self) -> None:
        states = self.sale.states()
        owners: dict[str, str] = {}
        for rid in self.sale.store.records:
            record = self.sale.store.record(rid)
            if record is None or record.status not in LIVE:
                continue
            for seat in record.seats or ():
                assert seat not in owners, f"{seat} is on {owners[seat]} and {rid}"
                owners[seat] = rid
                want = SeatState.HELD if record.status is Outcome.HELD else SeatState.SOLD
                assert states.get(seat) is want, f"{seat} of {rid} is {states.get(seat)}"
        for seat, state in states.items():
            if state in (SeatState.HELD, SeatState.SOLD):
                assert seat in owners, f"{seat} is {state} on no live record"
        available, held, sold = self.sale.counts()
        assert held == sum(s in (SeatState.HELD, SeatState.LISTED) for s in states.values())
        assert sold == sum(s is SeatState.SOLD for s in states.values())
        assert available == 10 - len(states)
        waiting = self.sale.store.read_waitlist(ROW)
        assert waiting is not None
        assert waiting.waiting == len(
            [r for r in self.joined if r not in self.offered and r not in self.left]
        )


MappedWaitingListMachine.TestCase.settings = settings(
    max_examples=sized("SEATS_WAITLIST_MAPPED_EXAMPLES", ci=40, deep=300),
    stateful_step_count=sized("SEATS_WAITLIST_MAPPED_STEPS", ci=40, deep=60),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestMappedWaitingList = pytest.mark.bounded(MappedWaitingListMachine.TestCase)
