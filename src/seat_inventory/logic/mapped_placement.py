"""Where a mapped request's seats are on the container's view of its class (docs/guides/seat-maps.md):
chosen seats as asked, best available in the container's slice of the rows first (`seat_slices`),
and a batch's best-available requests filling one slice for one take (`fill`). Pure but for the
container's views (`SeatMaps`); every take is still guarded on its seats."""

from __future__ import annotations

import dataclasses
from collections.abc import Collection

from seat_inventory.logic import answers
from seat_inventory.logic.seat_map import ClassMap
from seat_inventory.logic.seat_placement import (
    Placement,
    Refusal,
    Refused,
    place_best,
    place_chosen,
    stranded_by,
)
from seat_inventory.logic.seat_slices import Slice
from seat_inventory.logic.seat_views import MappedContext, taken_seats
from seat_inventory.logic.shards import Draws
from seat_inventory.models import (
    ReservationOutcome,
    ReservationRequest,
    SeatKey,
    SeatRow,
    SeatState,
    seats_by_row,
)

# TransactWriteItems' limit: a batch's row items and records together.
MAX_ACTIONS = 100


def place(
    key: SeatKey,
    class_map: ClassMap,
    request: ReservationRequest,
    rows: dict[str, SeatRow],
    context: MappedContext,
) -> Placement | Refusal:
    if request.seats is not None:
        return place_chosen(class_map, taken_seats(rows), request.seats, request.accessible)
    if request.split or request.accessible:
        return place_best(class_map, taken_seats(rows), request.quantity, request.split, request.accessible)
    return place_spread(key, class_map, request.quantity, rows, context)


def slice_order(
    slices: tuple[Slice, ...],
    available: dict[int, int],
    quantity: int,
    own: int | None,
    rng: Draws,
    in_use: Collection[int] = (),
) -> list[int]:
    """The slices to try: the container's own, then those the view shows with `quantity` seats,
    those at least as full as the median first (as `logic.shards.pick_shard` picks a shard item:
    away from where others sold), each group in ring order from the slice after the container's
    own (from a slice drawn at random when it has none); slices `in_use` by other containers come
    only after all the others. Containers that start apart and go round the ring at about the
    same pace stay apart, so two rarely aim at the same slice; trying every slice before the
    whole class spreads the last seats' buyers instead of sending every container to the same
    best block left."""
    fits = [index for index, seats in available.items() if seats >= quantity and index != own]
    median = sorted(available[i] for i in fits)[len(fits) // 2] if fits else 0
    start = own + 1 if own is not None else rng.randrange(len(slices))
    ring = sorted(fits, key=lambda index: (index - start) % len(slices))
    # Stable: ring order within each group (in use last, the fuller half first).
    order = sorted(ring, key=lambda index: (index in in_use, available[index] < median))
    return ([own] if own is not None else []) + order


def place_spread(
    key: SeatKey,
    class_map: ClassMap,
    quantity: int,
    rows: dict[str, SeatRow],
    context: MappedContext,
    available: dict[int, int] | None = None,
) -> Placement | Refusal:
    """Best available in the container's slice (`seat_slices`), then in the others its view shows
    with enough seats, then on the whole class; NO_BLOCK only when no block fits the view.
    `available`: each slice's free seats on `rows`, when the caller keeps them (`_fill`).

    A block that would strand a seat is taken only when every block does (the whole class's
    rule: fewest orphans, then best ranked); then too it is looked for slice by slice in the
    same order, among the blocks stranding as few seats as the class's best: at the sale's end
    every container would otherwise aim at that one best block."""
    maps = context.maps
    if maps.no_fit.get(key, quantity + 1) <= quantity:
        return Refusal(Refused.NO_BLOCK)
    slices = maps.slices_of(key, class_map)
    if len(slices) == 1:
        return place_best(class_map, taken_seats(rows), quantity)
    if available is None:
        available = {s.index: s.available(rows) for s in slices}
    in_use = maps.in_use(key, context.clock.now())
    order = slice_order(slices, available, quantity, maps.own_slice.get(key), context.rng, in_use)
    found = in_slices(slices, order, rows, quantity, 0)
    if found is None:
        taken = taken_seats(rows)
        whole = place_best(class_map, taken, quantity)
        if not isinstance(whole, Placement) or not (least := len(stranded_by(class_map, taken, whole.seats))):
            return whole
        found = in_slices(slices, order, rows, quantity, least) or (None, whole)
    index, placement = found
    if index is not None:
        maps.own_slice[key] = index
    return placement


def in_slices(
    slices: tuple[Slice, ...], order: list[int], rows: dict[str, SeatRow], quantity: int, strands: int
) -> tuple[int | None, Placement] | None:
    """The first slice in `order` whose best block strands exactly `strands` seats, and the block."""
    for index in order:
        piece = slices[index]
        taken = taken_seats(piece.rows_of(rows))
        placement = place_best(piece.class_map, taken, quantity)
        if (
            isinstance(placement, Placement)
            and len(stranded_by(piece.class_map, taken, placement.seats)) == strands
        ):
            return index, placement
    return None


def fill(
    key: SeatKey,
    class_map: ClassMap,
    pending: list[ReservationRequest],
    rows: dict[str, SeatRow],
    context: MappedContext,
    now: float,
) -> tuple[list[ReservationOutcome], dict[str, list[int]], int | None]:
    """The answers of the requests that fit in one transaction, in order, their seats merged per
    row item, and the slice they are in (None: placed on the whole class). The first request is
    placed as `_place_spread` places (none fitting: no answers); the slice it lands in is the
    transaction's, and each later request goes in only with a block in that slice stranding no
    seat (the others are placed again after the commit, first the earliest): a transaction stays
    in one slice, so a container that meets another in a slice loses only that slice's takes, and
    at the sale's end one take fills a slice's gaps with the batch's requests that fit them.
    Placed on the whole class, it stops at the first request placed in another slice."""
    local = dict(rows)
    outcomes: list[ReservationOutcome] = []
    merged: dict[str, list[int]] = {}
    home = context.maps.own_slice.get(key)
    slices = context.maps.slices_of(key, class_map)
    available = {s.index: s.available(local) for s in slices}
    for request in pending:
        if outcomes and home is not None:
            found = in_slices(slices, [home], local, request.quantity, 0)
            if found is None:
                continue  # no block without a single in the slice: the next transaction places it
            placement = found[1]
        else:
            placed = place_spread(key, class_map, request.quantity, local, context, available)
            if isinstance(placed, Refusal):
                break
            placement = placed
            where = context.maps.own_slice.get(key)
            if outcomes and where != home:
                break
            home = where
        by_row = seats_by_row(placement.seats)
        if len(merged.keys() | by_row.keys()) + len(outcomes) + 1 > MAX_ACTIONS:
            break
        outcomes.append(answers.taken(request, int(now), seats=placement.seats))
        for row_id, positions in by_row.items():
            merged.setdefault(row_id, []).extend(positions)
            row = local[row_id]
            states = {**row.states, **dict.fromkeys(positions, SeatState.SOLD)}
            local[row_id] = dataclasses.replace(row, states=states, available=row.available - len(positions))
        count_taken(slices, available, by_row, home)
    return outcomes, merged, home


def count_taken(
    slices: tuple[Slice, ...], available: dict[int, int], by_row: dict[str, tuple[int, ...]], home: int | None
) -> None:
    """Each slice's free seats after a placement: in `home` (its slice), or where its rows are (a
    placement on the whole class)."""
    for row_id, positions in by_row.items():
        if home is not None and row_id in slices[home].items:
            available[home] -= len(positions)
            continue
        for piece in slices:
            if row_id in piece.items:
                available[piece.index] -= len(positions)
                break
