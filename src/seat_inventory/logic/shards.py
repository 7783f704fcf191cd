"""How a sharded seat class's seats are spread over its shard items (docs/explanation/sharding.md).

Pure arithmetic on what a container has seen of a class's shard items (a survey, or a consistent
view of the class): which item a container takes from, and which seats move into it when it
alone is short. The data access executes these plans in transactions whose conditions re-check
every number they rest on.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from seat_inventory.models import SeatClassInventory, ShardSeats, ShardSurvey

# A shard item that seats were taken from within this many seconds is taken to be in use by
# another container. One container commits a transaction every 0.1-0.2 s on its shard, so a shard
# left alone this long has no owner any more (its container moved on, or ended). With 0.5 s,
# `seats simulate --requests 1000000 --containers 64 --shards 64` cancels 1.4% of transactions
# (docs/explanation/sharding.md, "How to size K").
SHARD_IN_USE_SECONDS = 0.5


class Draws(Protocol):
    """What routing draws from: a `random.Random`, or the `random` module itself."""

    def randrange(self, start: int, stop: int | None = None, step: int = 1) -> int: ...


def pick_shard(
    survey: Sequence[ShardSurvey], seats: int, now: float, rng: Draws, *, share: bool = False
) -> ShardSurvey | None:
    """The shard a container settles on when it has none yet, its transaction conflicted, or its
    shard ran short: among the items that showed at least `seats` and that nobody took from
    within `SHARD_IN_USE_SECONDS`, one drawn at random with a chance in proportion to its seats.
    None when every item that has the seats is in use (`shards_with`: then wait for one, rather
    than conflict with its container). With `share` (there are more containers than items with
    seats) items in use count too, drawn the same way.

    Containers that need a shard thus go where no other container is, so with K at least the
    number of containers each one settles on an item of its own and conflicts stay rare; the
    fuller items are drawn more often, so that they run dry at about the same time. The draw
    spreads over every candidate: containers that survey at the same moment (a sale's start, its
    drain) cannot see where the others are going (a transaction in flight has not yet written its
    `taken_at`), and drawing from a few fullest items alone sent them onto the same ones
    (docs/explanation/simulation.md, "Repeated customers on a pre-warmed table").
    """
    candidates = [s for s in shards_with(survey, seats) if share or not _in_use(s, now)]
    return _draw_by_seats(candidates, rng)


def _draw_by_seats(candidates: Sequence[ShardSurvey], rng: Draws) -> ShardSurvey | None:
    """One of `candidates`, each with a chance in proportion to its available seats."""
    total = sum(s.available for s in candidates)
    if total <= 0:
        return candidates[rng.randrange(len(candidates))] if candidates else None
    ticket = rng.randrange(total)
    for shard in candidates:
        ticket -= shard.available
        if ticket < 0:
            return shard
    raise AssertionError("unreachable: the tickets add up to the seats")


def _in_use(shard: ShardSurvey, now: float) -> bool:
    return shard.taken_at is not None and now - shard.taken_at < SHARD_IN_USE_SECONDS


def shards_with(survey: Sequence[ShardSurvey], seats: int) -> list[ShardSurvey]:
    """The items that showed at least `seats`; when none did, only a consistent read of the whole
    class can tell whether seats must move between items, or the class has too few."""
    return [s for s in survey if s.available >= seats]


def gather_target(survey: Sequence[ShardSurvey], now: float, rng: Draws) -> ShardSurvey:
    """The item that seats move into when no item alone has a group's first request (but the
    survey shows enough over several): drawn like a shard to settle on (`pick_shard`) among the
    items with seats that nobody took from lately (among all items with seats when every one is
    in use), so that containers at the sell-out spread out rather than all meet on the fullest."""
    with_seats = [s for s in survey if s.available > 0] or list(survey)
    idle = [s for s in with_seats if not _in_use(s, now)] or with_seats
    target = _draw_by_seats(idle, rng)
    assert target is not None, "a survey of a sharded class lists its items"
    return target


def gather_moves(
    survey: Sequence[ShardSurvey], target: ShardSurvey, seats: int, now: float
) -> dict[int, int]:
    """The seats that move into `target` from the other items so that it holds `seats`: from the
    items nobody took from lately first (a donor in another container's transaction would cancel
    this one), the fullest first; fewer seats take from no more donors."""
    short = seats - target.available
    moves: dict[int, int] = {}
    donors = sorted(
        (s for s in survey if s.shard != target.shard and s.available > 0),
        key=lambda s: (_in_use(s, now), -s.available, s.shard),
    )
    for donor in donors:
        if short <= 0:
            break
        moves[donor.shard] = min(donor.available, short)
        short -= moves[donor.shard]
    return moves


def routed_shards(view: SeatClassInventory | None) -> int:
    """How many shards groups are routed to (the first ones; 1 for a class never seen)."""
    if view is None:
        return 1
    return max(1, min(view.shard_count, view.shard_items))


def route(
    view: SeatClassInventory | None, seats: int, preferred: int, rng: Draws, *, read_whole: bool
) -> tuple[int, dict[int, int]]:
    """The shard a transaction takes `seats` from, and the seats to move into it from others.

    Used after a consistent read of the whole class, when no shard item alone showed the seats
    a group's first request wants (`pick_shard` routes every other group). With that complete
    view the container's own shard (`preferred`) is kept when it can cover the group; otherwise
    one that can is drawn; when none can but the class can, the shard with the most seats takes
    them and the others' seats move into it in the same transaction. Without such a view
    (`read_whole` False) the preferred shard is tried alone: its guard decides.
    """
    if view is None:
        return 0, {}
    routed = routed_shards(view)
    if not read_whole or not view.complete or view.shard_items == 1 or seats == 0:
        return (preferred if preferred < view.shard_items else 0), {}
    shards = view.shard_seats()
    if preferred < len(shards) and shards[preferred].available >= seats:
        return preferred, {}
    enough = [s.shard for s in shards[:routed] if s.available >= seats] or [
        s.shard for s in shards if s.available >= seats
    ]
    if enough:
        return enough[rng.randrange(len(enough))], {}
    by_seats = sorted(shards, key=lambda s: (-s.available, s.shard))
    return by_seats[0].shard, _fill_from(by_seats[1:], seats - by_seats[0].available)


def _fill_from(donors: Sequence[ShardSeats], short: int) -> dict[int, int]:
    """The seats each donor gives, in order, until `short` are given (as far as they have them)."""
    moves: dict[int, int] = {}
    for donor in donors:
        if short <= 0:
            break
        if donor.available > 0:
            moves[donor.shard] = min(donor.available, short)
            short -= moves[donor.shard]
    return moves
