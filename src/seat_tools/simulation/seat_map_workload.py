"""`seats simulate --seat-map`: best-available requests on a seat map, and the figures that check
the sale (docs/guides/seat-maps.md, "At scale").

Each request asks for 1 to `seats_per_request` adjacent seats (drawn with the run's seed) of one of
the map's classes (drawn the same way). After the run the final row items are checked against the
records: every seat sold by exactly one confirmed record and every sold seat recorded, the rows'
counts their states'. Singles left are counted, and each is traced to the take that stranded it:
replaying the committed takes in commit order, a take that created an orphan while some block of
its size creating none was free at that moment (an *avoidable* orphan: placed on a stale view) is
counted apart from one no placement could avoid (the class had no orphan-free block of that size).
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from seat_inventory.logic.seat_map import ClassMap, SeatMap
from seat_inventory.logic.seat_placement import Placement, free_positions, orphans, place_best
from seat_inventory.models import Outcome, SeatKey, SeatState, row_item_of
from seat_tools.simulation.memory_store import InMemoryInventoryStore


@dataclass(frozen=True)
class MappedRequests:
    """Each request's class and quantity, by request index."""

    classes: tuple[str, ...]
    quantities: tuple[int, ...]

    @classmethod
    def draw(cls, seat_map: SeatMap, requests: int, most: int, rng: random.Random) -> MappedRequests:
        names = sorted(seat_map.classes)
        classes = tuple(rng.choice(names) for _ in range(requests))
        quantities = tuple(rng.randint(1, most) for _ in range(requests))
        return cls(classes, quantities)


def seat_map_figures(
    data: InMemoryInventoryStore, event_id: str, seat_map: SeatMap, arrivals_order: Sequence[str]
) -> dict[str, Any]:
    """The sale's checks and its placements' quality. `arrivals_order`: reservation ids in the order
    their first message was sent (for the rank by arrival decile)."""
    problems: list[str] = []
    sold_by: dict[str, str] = {}
    confirmed = [o for o in data.records.values() if o.outcome is Outcome.CONFIRMED]
    for outcome in confirmed:
        for seat in outcome.seats or ():
            if seat in sold_by:
                problems.append(f"{seat} sold to {sold_by[seat]} and {outcome.reservation_id}")
            sold_by[seat] = outcome.reservation_id
    row_sold = 0
    for name in seat_map.classes:
        for row_id, row in data.seat_rows[SeatKey(event_id, name)].items():
            base = row_id.split("#", 1)[0]
            states = row.states
            sold_here = [p for p, s in states.items() if s is SeatState.SOLD]
            row_sold += len(sold_here)
            unrecorded = [f"{base}-{p}" for p in sold_here if f"{base}-{p}" not in sold_by]
            problems += [f"{seat} sold on its row, in no record" for seat in unrecorded]
            if row.sold != len(sold_here) or row.held != 0:
                problems.append(f"{row_id}: {row.sold} sold, {row.held} held; {len(sold_here)} S")
            if row.available + row.sold + row.held + _blocked(states) != row.size:
                problems.append(f"{row_id}: available + held + sold + blocked != its seats")
    if row_sold != len(sold_by):
        problems.append(f"{row_sold} seats sold on the rows, {len(sold_by)} in the records")
    singles = _singles(seat_map, [o.seats or () for o in confirmed])
    return {
        "seat_map_classes": sorted(seat_map.classes),
        "seats_on_map": seat_map.seat_count,
        "seats_sold": len(sold_by),
        "seat_invariants": problems[:10] or "ok",
        "singles_left": singles,
        "mean_rank_by_arrival_decile": _rank_by_decile(data, seat_map, arrivals_order),
    }


def _blocked(states: Mapping[int, SeatState]) -> int:
    return sum(1 for s in states.values() if s is SeatState.BLOCKED)


def _singles(seat_map: SeatMap, takes: list[tuple[str, ...]]) -> dict[str, int]:
    """Orphans at the end (wheelchair and companion seats apart: only accessible requests take
    them, and this workload has none), and the takes that created them: avoidable (an orphan-free block of the
    take's size was free when it committed) or not. Takes replayed in commit order (the records'
    insertion order in the store)."""
    taken: dict[str, set[str]] = {name: set() for name in seat_map.classes}
    created_avoidable = created_unavoidable = 0
    for seats in takes:
        if not seats:
            continue
        first = seat_map.seat(seats[0])
        if first is None:
            continue
        class_map = seat_map.classes[first.seat_class]
        before = taken[class_map.seat_class]
        made = _orphans_made(class_map, before, seats)
        if made:
            best = place_best(class_map, before, len(seats))
            if isinstance(best, Placement) and _orphans_made(class_map, before, best.seats) == 0:
                created_avoidable += made
            else:
                created_unavoidable += made
        before.update(seats)
    left = 0
    for name, class_map in seat_map.classes.items():
        for row in class_map.rows:
            free = free_positions(row, taken[name])
            left += sum(1 for i in orphans(free) if not row.seats[i].accessible)
    return {
        "orphans_left": left,
        "created_where_avoidable": created_avoidable,
        "created_unavoidable": created_unavoidable,
    }


def _orphans_made(class_map: ClassMap, taken: set[str], seats: Sequence[str]) -> int:
    rows = {row_item_of(s)[0].split("#", 1)[0] for s in seats}
    after = taken | set(seats)
    made = 0
    for row in class_map.rows:
        if row.row_id in rows:
            made += len(orphans(free_positions(row, after)) - orphans(free_positions(row, taken)))
    return made


def _rank_by_decile(
    data: InMemoryInventoryStore, seat_map: SeatMap, order: Sequence[str]
) -> dict[str, list[float]]:
    """Per class: the confirmed reservations in the order their requests were sent, in ten equal
    parts, and the mean rank (0 is the class's best seat) of the seats each part got. A burst of
    more requests than seats sells out within its first requests: the parts are of the confirmed
    ones, so that they say whether earlier requests got better seats."""
    taken: dict[str, list[list[int]]] = {name: [] for name in seat_map.classes}
    for reservation_id in order:
        outcome = data.records.get(reservation_id)
        if outcome is None or outcome.outcome is not Outcome.CONFIRMED or not outcome.seats:
            continue
        seats = [seat_map.seat(s) for s in outcome.seats]
        ranks = [s.rank for s in seats if s is not None]
        if ranks and outcome.seat_class in taken:
            taken[outcome.seat_class].append(ranks)
    means: dict[str, list[float]] = {}
    for name, per_request in taken.items():
        n = len(per_request)
        parts = [per_request[i * n // 10 : (i + 1) * n // 10] for i in range(10)]
        means[name] = [
            round(sum(sum(r) for r in part) / sum(len(r) for r in part), 1) for part in parts if part
        ]
    return means
