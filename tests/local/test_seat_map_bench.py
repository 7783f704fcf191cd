"""`seats bench --seat-map` run small on the session's local stack: the theatre map's on-sale
through the real handler (best-available and chosen-seat requests), then the sale read back.

No timing is asserted. What is checked: every request has one final answer (its record), no seat
is sold twice, each row item's sold seats are exactly its confirmed records' and its counts its
states' (the bench's own checks, which must find nothing), the seats the rows show sold add up to
the confirmed records' seats, nothing is dead-lettered, and the counted transactions add up.
Bounded (tests/depth.py): CI sends 400 requests (more than the theatre's seats: a sell-out),
`make test-deep` 2,000 (SEATS_SEAT_MAP_BENCH_REQUESTS overrides).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from seat_tools.bench.run import Bench
from seat_tools.bench.seat_map_bench import SeatMapRun, SeatMapWorkload, printed, run_seat_map_bench
from seat_tools.local.stack import LocalStack
from tests.depth import sized

pytestmark = [pytest.mark.local_stack, pytest.mark.bounded]

REQUESTS = sized("SEATS_SEAT_MAP_BENCH_REQUESTS", ci=400, deep=2000)
THEATRE = Path(__file__).parents[2] / "examples" / "seat_maps" / "theatre.json"
FINAL = {"CONFIRMED", "SOLD_OUT", "SEATS_TAKEN", "ORPHAN_SEAT"}


@pytest.fixture(scope="module")
def run(local_stack: LocalStack) -> SeatMapRun:
    bench = Bench(local_stack, workers=2)
    return run_seat_map_bench(bench, SeatMapWorkload(THEATRE, REQUESTS, chosen_share=0.3, seed=7))


def test_every_request_is_answered_once_and_no_seat_is_sold_twice(run: SeatMapRun) -> None:
    result = run.result
    assert run.problems == []
    assert sum(run.answers.values()) == REQUESTS  # one record per request
    assert set(run.answers) <= FINAL, run.answers
    assert run.chosen > 0 and run.best_available > 0
    assert run.answers["CONFIRMED"] == result.confirmed > 0
    # More seats asked than the theatre has: it sells out, and best available is refused after.
    assert run.answers.get("SOLD_OUT", 0) > 0
    assert 0 < run.seats_sold <= result.capacity
    assert result.dead_lettered == 0
    assert result.transactions_attempted == result.transactions_committed + sum(
        result.transactions_cancelled.values()
    )
    assert result.transactions_committed > 0
    assert "each seat sold at most once, rows' states and counts = records: ok" in printed(run)
