"""A waiting list on a mapped class, on the in-memory store (the same scenarios on the table: tests/
integration/test_waitlist_table.py): seats given back are set aside on their row items (state L),
public best available never gets them, the sweeper offers each entry in join order the best block
of them for its quantity (by the orphan rule; pieces only with `split`), a confirm takes the offer,
an offer that runs out passes its seats on, and the seats nobody waits for go back on sale."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from seat_inventory.logic.seat_map import SeatMap, load_json
from seat_inventory.logic.seat_views import VIEW_SECONDS
from seat_inventory.models import Outcome, ReservationOutcome, SeatKey, SeatState
from tests.fakes import InMemoryInventoryStore
from tests.unit.test_waitlist import Sale

ROW = SeatKey("e-1", "ROW")
# One row of 6 seats (orphans refused) and one of 4 on one class.
MAP = {
    "classes": {"ROW": {"orphans": "refuse"}},
    "sections": [
        {"id": "S", "class": "ROW", "rank": 0, "rows": [{"id": "R1", "seats": 6}, {"id": "R2", "seats": 4}]}
    ],
}


def seat_map() -> SeatMap:
    return load_json(json.dumps(MAP))


class MappedSale(Sale):
    """The mapped class ROW with a waiting list open on `store`."""

    def __init__(self, store: Any, *, offer_seconds: int = 600) -> None:
        super().__init__(store, offer_seconds=offer_seconds, key=ROW)

    def reserve(self, rid: str, customer: str, quantity: int = 1, **more: Any) -> ReservationOutcome:
        return super().reserve(rid, customer, quantity, seat_class="ROW", **more)

    def states(self) -> dict[str, SeatState]:
        """Every seat not free, by seat id, read strongly consistently."""
        rows = self.store.read_seat_rows(ROW, ["S-R1#0", "S-R2#0"])
        return {f"{r.row_id.split('#')[0]}-{p}": s for r in rows.values() for p, s in r.states.items()}

    def listed(self) -> set[str]:
        return {seat for seat, state in self.states().items() if state is SeatState.LISTED}

    def counts(self) -> tuple[int, int, int]:
        rows = self.store.read_seat_rows(ROW, ["S-R1#0", "S-R2#0"]).values()
        assert all(
            r.available + r.held + r.sold + sum(s is SeatState.BLOCKED for s in r.states.values()) == r.size
            for r in rows
        )
        return sum(r.available for r in rows), sum(r.held for r in rows), sum(r.sold for r in rows)


MakeMappedSale = Callable[..., MappedSale]


@pytest.fixture
def make_mapped_sale() -> MakeMappedSale:
    def make(
        *, offer_seconds: int = 600, max_per_customer: int | None = None, hall: int | None = None
    ) -> MappedSale:
        """`hall`: the class takes from a capacity pool "hall" of that many seats too."""
        store = InMemoryInventoryStore()
        if hall is not None:
            store.add_pool("e-1", "hall", hall)
        pools = ("hall",) if hall is not None else ()
        store.add_seat_map("e-1", seat_map(), max_per_customer=max_per_customer, pools=pools)
        return MappedSale(store, offer_seconds=offer_seconds)

    return make


def sold_out_with_two_waiting(sale: MappedSale) -> tuple[ReservationOutcome, ReservationOutcome]:
    """Sold out to four buyers (2 seats, a row of 4, then 2 and 2); then two entries of 2 seats
    join."""
    a = sale.reserve("r-a", "a", 2)
    b = sale.reserve("r-b", "b", 4)
    rest = [sale.reserve("r-c", "c", 2), sale.reserve("r-d", "d", 2)]
    assert [o.outcome for o in (a, b, *rest)] == [Outcome.CONFIRMED] * 4
    joined = [sale.reserve("w-1", "c-1", 2, waitlist=True), sale.reserve("w-2", "c-2", 2, waitlist=True)]
    assert [(o.outcome, o.position) for o in joined] == [(Outcome.WAITLISTED, 1), (Outcome.WAITLISTED, 2)]
    return a, b


def test_seats_given_back_are_set_aside_on_their_rows_and_offered_in_join_order(
    make_mapped_sale: MakeMappedSale,
) -> None:
    sale = make_mapped_sale()
    a, _ = sold_out_with_two_waiting(sale)
    assert a.seats is not None
    sale.send({"type": "cancel", "reservation_id": "r-a"})
    # Set aside for the list: not free, and public best available does not get them.
    assert sale.listed() == set(a.seats) and sale.counts() == (0, 2, 8)
    assert sale.reserve("r-x", "x", 1).outcome is Outcome.SOLD_OUT
    offers = sale.sweep()
    assert [(o.reservation_id, o.outcome, o.seats) for o in offers] == [("w-1", Outcome.OFFERED, a.seats)]
    assert all(sale.states()[seat] is SeatState.HELD for seat in a.seats)
    assert sale.sweep() == []  # exactly once: nothing is offered again
    taken = sale.send({"type": "confirm", "reservation_id": "w-1"})["w-1"]
    assert taken.outcome is Outcome.CONFIRMED and taken.seats == a.seats
    assert sale.counts() == (0, 0, 10) and not sale.listed()


def test_a_mapped_offer_that_runs_out_passes_its_seats_to_the_next_entry(
    make_mapped_sale: MakeMappedSale,
) -> None:
    sale = make_mapped_sale(offer_seconds=120)
    a, _ = sold_out_with_two_waiting(sale)
    sale.send({"type": "cancel", "reservation_id": "r-a"})
    assert [o.reservation_id for o in sale.sweep()] == ["w-1"]
    sale.clock.time += 121
    offers = sale.sweep()
    assert [(o.reservation_id, o.seats) for o in offers] == [("w-2", a.seats)]
    assert sale.send({"type": "confirm", "reservation_id": "w-1"})["w-1"].outcome is Outcome.EXPIRED
    assert sale.send({"type": "confirm", "reservation_id": "w-2"})["w-2"].outcome is Outcome.CONFIRMED
    assert sale.counts() == (0, 0, 10)


def test_the_best_block_is_offered_and_the_seats_nobody_waits_for_go_back_on_sale(
    make_mapped_sale: MakeMappedSale,
) -> None:
    sale = make_mapped_sale()
    _, b = sold_out_with_two_waiting(sale)
    assert b.seats is not None and len(b.seats) == 4
    sale.send({"type": "cancel", "reservation_id": "r-b"})
    offers = sale.sweep()
    # Both entries are offered 2 of the 4 seats, each a block that strands no single seat.
    assert [o.reservation_id for o in offers] == ["w-1", "w-2"]
    first, second = (set(o.seats or ()) for o in offers)
    assert first | second == set(b.seats) and not first & second
    assert all(len(seats) == 2 for seats in (first, second))
    assert sale.counts() == (0, 4, 6) and not sale.listed()
    # A cancel of an offer gives its seats to the list, which nobody waits on any more: on sale.
    sale.send({"type": "cancel", "reservation_id": "w-2"})
    assert sale.sweep() == [] and not sale.listed()
    assert sale.counts() == (2, 2, 6)
    sale.clock.time += VIEW_SECONDS + 1  # the containers' view of the rows is read again
    again = sale.reserve("r-y", "y", 2)
    assert again.outcome is Outcome.CONFIRMED and set(again.seats or ()) == second


def test_a_head_no_block_fits_waits_unless_it_may_split(make_mapped_sale: MakeMappedSale) -> None:
    sale = make_mapped_sale()
    singles = [sale.reserve(f"r-{n}", f"s{n}", 1) for n in range(1, 11)]
    assert all(o.outcome is Outcome.CONFIRMED for o in singles)
    seat_of = {o.reservation_id: (o.seats or ())[0] for o in singles}
    assert sale.reserve("w-1", "c-1", 2, waitlist=True).position == 1
    assert sale.reserve("w-2", "c-2", 2, waitlist=True, split=True).position == 2
    # Two seats back, on different rows: no block of two for the head, which waits, and the
    # entry behind it is not served first.
    r1 = next(rid for rid, seat in seat_of.items() if seat.startswith("S-R1-"))
    r2 = next(rid for rid, seat in seat_of.items() if seat.startswith("S-R2-"))
    sale.send({"type": "cancel", "reservation_id": r1}, {"type": "cancel", "reservation_id": r2})
    assert sale.sweep() == [] and sale.listed() == {seat_of[r1], seat_of[r2]}
    # The head leaves: the entry that may split is offered both seats.
    assert sale.send({"type": "leave", "reservation_id": "w-1"})["w-1"].outcome is Outcome.LEFT
    (offer,) = sale.sweep()
    assert offer.reservation_id == "w-2" and set(offer.seats or ()) == {seat_of[r1], seat_of[r2]}


def test_an_expired_hold_goes_to_the_list_and_closing_puts_the_lists_seats_back_on_sale(
    make_mapped_sale: MakeMappedSale,
) -> None:
    sale = make_mapped_sale()
    held = sale.reserve("h-1", "h", 6, type="hold", hold_seconds=60)
    assert held.outcome is Outcome.HELD
    assert sale.reserve("r-c", "c", 4).outcome is Outcome.CONFIRMED
    assert sale.reserve("w-1", "c-1", 2, waitlist=True).outcome is Outcome.WAITLISTED
    sale.clock.time += 61
    (offer,) = sale.sweep()
    assert offer.reservation_id == "w-1" and len(offer.seats or ()) == 2
    # The other 4 stay with the list while it is open; closing it puts them back on sale.
    sale.store.close_waitlist(ROW)
    sale.sweep()
    assert not sale.listed() and sale.counts() == (4, 2, 4)


def test_a_mapped_class_in_a_pool_keeps_the_pool_s_counts_through_set_aside_offer_and_return(
    make_mapped_sale: MakeMappedSale,
) -> None:
    sale = make_mapped_sale(hall=10)

    def hall() -> tuple[int, int, int]:
        pool = sale.store.read_pools("e-1", ["hall"])["hall"]
        assert pool.available + pool.held + pool.sold == pool.capacity
        return pool.available, pool.held, pool.sold

    sold_out_with_two_waiting(sale)
    sale.send({"type": "cancel", "reservation_id": "r-b"})
    # The pool counts the list's seats as held, as the rows do.
    assert hall() == (0, 4, 6) and sale.counts() == (0, 4, 6)
    offers = sale.sweep()
    assert [o.reservation_id for o in offers] == ["w-1", "w-2"]
    assert sale.send({"type": "confirm", "reservation_id": "w-1"})["w-1"].outcome is Outcome.CONFIRMED
    assert hall() == (0, 2, 8)
    sale.send({"type": "cancel", "reservation_id": "w-2"})
    assert sale.sweep() == [] and hall() == (2, 0, 8) and sale.counts() == (2, 0, 8)
