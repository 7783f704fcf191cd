"""The seat-map bench's checks (`seat_tools.bench.seat_map_bench`) catch what they claim: a seat
in two confirmed records, a sold seat with no record, a row whose counts are not its states', and
its chosen-seat requests are runs of adjacent plain seats."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from click.testing import CliRunner

from seat_inventory.models import SeatKey, SeatRow, SeatState
from seat_tools.bench.seat_map_bench import SeatMapWorkload, _row_problems, _sold_by, request_bodies
from seat_tools.cli.main import cli
from seat_tools.seat_map_files import load_file

THEATRE = Path(__file__).parents[2] / "examples" / "seat_maps" / "theatre.json"
KEY = SeatKey("e", "STALLS")


def _record(outcome: str, seats: tuple[str, ...]) -> SimpleNamespace:
    return SimpleNamespace(answer=SimpleNamespace(outcome=SimpleNamespace(value=outcome)), seats=seats)


def _row(states: dict[int, SeatState], *, sold: int, available: int, size: int = 10) -> SeatRow:
    return SeatRow(KEY, "S-R1#0", 1, size, states, available, 0, sold)


def test_a_seat_in_two_confirmed_records_is_a_problem() -> None:
    records = {
        "a": _record("CONFIRMED", ("S-R1-1", "S-R1-2")),
        "b": _record("CONFIRMED", ("S-R1-2",)),
        "c": _record("SEATS_TAKEN", ("S-R1-1",)),
    }
    sold_by, problems = _sold_by(records)
    assert problems == ["S-R1-2 sold to a and b"]
    assert set(sold_by) == {"S-R1-1", "S-R1-2"}


def test_a_row_agreeing_with_its_records_has_no_problem() -> None:
    row = _row({1: SeatState.SOLD, 2: SeatState.SOLD}, sold=2, available=8)
    assert _row_problems({"S-R1#0": row}, {"S-R1-1": "a", "S-R1-2": "a"}) == []


def test_a_sold_seat_without_a_record_and_wrong_counts_are_problems() -> None:
    row = _row({1: SeatState.SOLD, 2: SeatState.SOLD}, sold=1, available=8)
    problems = _row_problems({"S-R1#0": row}, {"S-R1-1": "a"})
    assert any("sold on the row [1, 2], in the records [1]" in p for p in problems)
    assert any("counts sold 1" in p for p in problems)
    assert any("!= 10 seats" in p for p in problems)


def test_a_recorded_seat_on_no_row_is_a_problem() -> None:
    assert _row_problems({}, {"X-R1-1": "a"}) == ["X-R1#0: recorded seats on no row item of the map"]


def test_chosen_requests_are_runs_of_adjacent_plain_seats() -> None:
    seat_map = load_file(str(THEATRE))
    bodies, chosen = request_bodies("e", seat_map, SeatMapWorkload(THEATRE, 500, chosen_share=0.5), "t")
    assert len(bodies) == 500 and 0 < chosen < 500
    assert chosen == sum(1 for b in bodies if "seats" in b)
    for body in bodies:
        if "seats" in body:
            seats = [seat_map.seat(s) for s in body["seats"]]
            assert all(s is not None and not s.blocked and not s.accessible for s in seats)
            assert len({(s.section, s.row) for s in seats if s}) == 1
            positions = [s.position for s in seats if s]
            assert positions == list(range(positions[0], positions[0] + len(positions)))
        else:
            assert 1 <= body["quantity"] <= 8


def test_the_command_line_refuses_a_bad_share_before_starting_anything() -> None:
    refused = CliRunner().invoke(cli, ["bench", "--seat-map", str(THEATRE), "--chosen-share", "2"])
    assert refused.exit_code == 2
    assert "--chosen-share" in refused.output
