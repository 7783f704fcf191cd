"""Model-based test of the waiting list on the in-memory store: random joins, leaves, releases (cancels,
holds running out, seats the operator adds), offer rounds (one sweeper or two), acceptances, offers running out and
redelivered messages, through the service's entry points. After every step:

- offers in join order: an entry is offered only when every entry that joined before it was offered
  or left;
- an entry is offered at most once, and never after it left;
- no seat offered twice, none beyond the seats given back: the class's held seats are exactly the
  live holds (offers included) plus the seats the list sets aside, and the list never holds a
  negative count;
- every seat back on public sale once nobody waits (after a round);
- one entry per customer.

SEATS_WAITLIST_MODEL_EXAMPLES and SEATS_WAITLIST_MODEL_STEPS size it (tests/depth.py: 60 x 40 in
`make test`, 500 x 60 in `make test-deep`).
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from seat_inventory.models import Outcome, ReservationOutcome
from tests.depth import sized
from tests.fakes import InMemoryInventoryStore
from tests.unit.test_waitlist import GA, Sale

CAPACITY = 4


class ListHistory(RuleBasedStateMachine):
    """What every waiting list's history has: cancels, confirms and leaves of any reservation so
    far, redeliveries, time passing, and the check of a sweeper run's offers (join order, once
    each, never after a leave). A machine adds its requests, sweeps and invariants."""

    def __init__(self, sale: Sale) -> None:
        super().__init__()
        self.sale = sale
        self.n = 0
        self.joined: list[str] = []  # WAITLISTED answers, in join order
        self.left: set[str] = set()
        self.offered: list[str] = []
        self.sent: list[dict[str, Any]] = []

    def _send(self, body: dict[str, Any]) -> dict[str, Any]:
        self.sent.append(body)
        return self.sale.send(body)  # type: ignore[return-value]

    def _status(self, rid: str) -> Outcome | None:
        record = self.sale.store.record(rid)
        return None if record is None else record.status

    @precondition(lambda self: self.n > 0)
    @rule(data=st.data(), kind=st.sampled_from(["cancel", "confirm", "leave"]))
    def change(self, data: st.DataObject, kind: str) -> None:
        rid = f"r-{data.draw(st.integers(1, self.n))}"
        was = self._status(rid)
        answer = self._send({"type": kind, "reservation_id": rid})[rid]
        if kind == "leave" and answer.outcome is Outcome.LEFT and not answer.duplicate:
            assert was is Outcome.WAITLISTED
            self.left.add(rid)

    @precondition(lambda self: bool(self.sent))
    @rule(data=st.data())
    def redeliver(self, data: st.DataObject) -> None:
        """A message delivered again: the same answer (a duplicate), nothing taken or joined twice."""
        self.sale.send(data.draw(st.sampled_from(self.sent)))

    @rule(seconds=st.sampled_from([3, 30, 61, 121]))
    def time_passes(self, seconds: int) -> None:
        self.sale.clock.time += seconds

    def _check_offers(self, offers: list[ReservationOutcome]) -> None:
        """A sweeper run's offers: each OFFERED once, never after its entry left, in join order."""
        this_run = {o.reservation_id for o in offers}
        for offer in offers:
            rid = offer.reservation_id
            assert offer.outcome is Outcome.OFFERED
            assert rid not in self.offered, f"{rid} offered twice"
            assert rid not in self.left, f"{rid} offered after it left"
            ahead = self.joined[: self.joined.index(rid)]
            waiting_ahead = [
                r for r in ahead if r not in self.offered and r not in self.left and r not in this_run
            ]
            assert not waiting_ahead, f"{rid} offered before {waiting_ahead}"
            self.offered.append(rid)

    def _still_waiting(self) -> int:
        return len([r for r in self.joined if r not in self.offered and r not in self.left])


class WaitingListMachine(ListHistory):
    def __init__(self) -> None:
        store = InMemoryInventoryStore()
        store.add_event("e-1", capacity=CAPACITY, shards=2)
        super().__init__(Sale(store, offer_seconds=120))
        self.customers: dict[str, str] = {}  # customer -> their entry
        self.capacity = CAPACITY

    @rule(
        quantity=st.integers(1, 3),
        waits=st.sampled_from([True, True, False]),
        hold=st.booleans(),
        returning=st.sampled_from([False, False, False, True]),
    )
    def request(self, quantity: int, waits: bool, hold: bool, returning: bool) -> None:
        self.n += 1
        self.sale.clock.time += 0.001  # requests a millisecond apart: join order is the join's time
        rid = f"r-{self.n}"
        customer = (
            next(iter(self.customers), f"c-{self.n}") if returning and self.customers else f"c-{self.n}"
        )
        body: dict[str, Any] = {"reservation_id": rid, "customer_id": customer, "quantity": quantity}
        if waits:
            body["waitlist"] = True
        if hold:
            body.update(type="hold", hold_seconds=60)
        answer = self._send(body)[rid]
        if answer.outcome is Outcome.WAITLISTED:
            assert customer not in self.customers, "a second entry for one customer"
            self.customers[customer] = rid
            self.joined.append(rid)
            assert answer.position is not None and answer.position >= 1
        elif answer.outcome is Outcome.SOLD_OUT and waits and customer in self.customers:
            assert "has an entry on it already" in answer.reason

    @rule(seats=st.integers(1, 3))
    def add_seats(self, seats: int) -> None:
        """The operator adds seats for the list (a capacity raise)."""
        assert self.sale.store.add_waitlist_seats(GA, seats) is None
        self.capacity += seats

    @rule(twice=st.booleans())
    def sweep(self, twice: bool) -> None:
        self._check_offers(self.sale.sweep() + (self.sale.sweep() if twice else []))
        waiting = self.sale.store.read_waitlist(GA)
        assert waiting is not None
        if not waiting.waiting:
            assert waiting.seats_held == 0, "seats kept aside with nobody waiting"

    @invariant()
    def seats_add_up(self) -> None:
        item = self.sale.store.read_inventory(GA)
        waiting = self.sale.store.read_waitlist(GA)
        assert item is not None and waiting is not None
        assert item.available + item.held + item.sold == item.capacity == self.capacity
        assert all(n >= 0 for lane in waiting.lanes for n in lane.seats.values())
        live = sum(
            r.quantity
            for rid in self.sale.store.records
            if (r := self.sale.store.record(rid)) is not None and r.status is Outcome.HELD
        )
        assert item.held == live + waiting.seats_held
        assert waiting.waiting == self._still_waiting()


WaitingListMachine.TestCase.settings = settings(
    max_examples=sized("SEATS_WAITLIST_MODEL_EXAMPLES", ci=60, deep=500),
    stateful_step_count=sized("SEATS_WAITLIST_MODEL_STEPS", ci=40, deep=60),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestWaitingList = pytest.mark.bounded(WaitingListMachine.TestCase)
