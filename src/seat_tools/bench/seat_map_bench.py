"""`seats bench --seat-map FILE`: a seat map's on-sale through the local stack (docs/guides/seat-maps.md,
"At scale").

One event is created with the map (the code path of `seats event create --seat-map`); the queue is
filled with best-available requests (1 to `most` adjacent seats of one of the map's classes) and
chosen-seat requests (a run of 1 to 4 adjacent seats of one row, drawn at random, so that chosen
seats meet best-available ones and each other), then fresh workers (the runner: one process per
Lambda instance, the real handler) drain it, counted as the other workloads are (`bench.counting`).

Afterwards every request's record is read (consistently) and every row item of the map, and the
sale is checked: every request has one record; no seat is in two confirmed records; each row
item's states are exactly the seats its confirmed records name (`S`), nothing is held (this
workload only reserves), and its counts are its states' (available + sold + blocked = its seats,
sold = its `S`, held = 0): so the class's counts, the sums of its rows', equal its seats' states.
"""

from __future__ import annotations

import random
import uuid
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from seat_inventory.logic.seat_map import SeatMap
from seat_inventory.models import SeatKey, SeatRow, SeatState, row_item_of
from seat_tools.bench.counting import add_snapshots, subtract_snapshots
from seat_tools.bench.run import SERVICE, Bench, DesignResult
from seat_tools.local.engines import LocalStackError
from seat_tools.seat_map_commands import SaleRules
from seat_tools.seat_map_files import load_file

# A chosen-seat request takes a run of 1 to CHOSEN_MOST adjacent seats.
CHOSEN_MOST = 4


@dataclass(frozen=True)
class SeatMapWorkload:
    """`requests` reserves on the map at `path`: a share `chosen_share` of them chosen seats, the
    others best available of 1 to `most` seats; drawn with `seed`."""

    path: Path
    requests: int
    chosen_share: float = 0.2
    most: int = 8
    seed: int = 1


@dataclass
class SeatMapRun:
    """What the seat-map workload did: the counted run (`DesignResult`, as the other workloads) and
    the sale's figures read back from the table."""

    result: DesignResult
    seats_on_map: int
    seats_sold: int
    best_available: int
    chosen: int
    # Each request's final answer (its record's outcome), by outcome.
    answers: dict[str, int] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    @property
    def seats_confirmed_per_s(self) -> float:
        elapsed = self.result.elapsed_s
        return self.seats_sold / elapsed if elapsed > 0 else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "seats_on_map": self.seats_on_map,
            "seats_sold": self.seats_sold,
            "best_available_requests": self.best_available,
            "chosen_seat_requests": self.chosen,
            "answers": self.answers,
            "seats_confirmed_per_s": round(self.seats_confirmed_per_s, 1),
            "problems": self.problems,
            "run": self.result.as_dict(),
        }


def request_bodies(
    event_id: str, seat_map: SeatMap, workload: SeatMapWorkload, tag: str
) -> tuple[list[dict[str, Any]], int]:
    """The workload's messages and how many of them choose their seats."""
    rng = random.Random(workload.seed)
    names = sorted(seat_map.classes)
    bodies: list[dict[str, Any]] = []
    chosen = 0
    for n in range(workload.requests):
        seat_class = rng.choice(names)
        body: dict[str, Any] = {
            "reservation_id": f"{tag}-{n:07d}",
            "event_id": event_id,
            "seat_class": seat_class,
            "customer_id": f"customer-{n:07d}",
        }
        seats = _chosen_run(seat_map, seat_class, rng) if rng.random() < workload.chosen_share else None
        if seats:
            body["seats"] = seats
            chosen += 1
        else:
            body["quantity"] = rng.randint(1, workload.most)
        bodies.append(body)
    return bodies, chosen


def _chosen_run(seat_map: SeatMap, seat_class: str, rng: random.Random) -> list[str]:
    """1 to CHOSEN_MOST adjacent seats of a random row that a plain request may choose (no
    blocked, wheelchair or companion seat); empty when the row drawn has none such."""
    row = rng.choice(seat_map.classes[seat_class].rows)
    length = rng.randint(1, min(CHOSEN_MOST, len(row.seats)))
    start = rng.randrange(len(row.seats) - length + 1)
    run = row.seats[start : start + length]
    if any(seat.blocked or seat.accessible for seat in run):
        return []
    return [seat.seat_id for seat in run]


def run_seat_map_bench(
    bench: Bench, workload: SeatMapWorkload, *, progress: Callable[[str], None] = lambda _line: None
) -> SeatMapRun:
    """Creates the event, fills the queue, drains it with `bench`'s workers and checks the sale."""
    seat_map = load_file(str(workload.path))
    event_id = f"seatmap-{bench.run_id}-{uuid.uuid4().hex[:6]}"
    bench.store.create_seat_map(event_id, seat_map, SaleRules())
    bodies, chosen = request_bodies(event_id, seat_map, workload, f"sm-{bench.run_id}")
    progress(
        f"seat map {workload.path.name}: {seat_map.seat_count} seats, {len(bodies)} requests"
        f" ({chosen} chosen seats), {bench.workers} workers"
    )
    producer_before = bench.producer.snapshot()
    bench.send(bodies)
    producer_after = bench.producer.snapshot()
    dead_before = bench.dead_letters()
    stats, elapsed = bench.drain(SERVICE, counted=True)
    dead_lettered = bench.dead_letters() - dead_before
    counts = add_snapshots(stats.worker_reports)
    if len(stats.worker_reports) != bench.workers:
        raise LocalStackError(
            f"{bench.workers - len(stats.worker_reports)} worker(s) did not report their counts"
        )
    records = bench.store.read_reservations([b["reservation_id"] for b in bodies])
    rows: dict[str, SeatRow] = {}
    for name in seat_map.classes:
        rows.update(bench.store.read_seat_rows(SeatKey(event_id, name)))
    answers = Counter(record.answer.outcome.value for record in records.values())
    sold_by, problems = _sold_by(records)
    problems += [f"{rid}: no record" for rid in (b["reservation_id"] for b in bodies) if rid not in records]
    problems += _row_problems(rows, sold_by)
    result = DesignResult(
        workload=f"seat map {workload.path.name}",
        design=SERVICE,
        requests=len(bodies),
        confirmed=answers.get("CONFIRMED", 0),
        sold_seats=len(sold_by),
        capacity=sum(c.capacity for c in seat_map.classes.values()),
        published=int(counts.get("published_messages", 0)),
        elapsed_s=elapsed,
        runner=stats.as_dict() | {"invocation_s": stats.invocation_s},
        counts=counts,
        producer_counts={
            "http_requests": subtract_snapshots(producer_after, producer_before)["http_requests"]
        },
        inventory_item_bytes=1024,  # a row item is under 1 KB (test_seat_row_item_size.py)
        memory_mb=bench.stack.template.function.memory_mb,
        dead_lettered=dead_lettered,
        workers=bench.workers,
        aws=bench.aws,
    )
    return SeatMapRun(
        result=result,
        seats_on_map=seat_map.seat_count,
        seats_sold=len(sold_by),
        best_available=len(bodies) - chosen,
        chosen=chosen,
        answers=dict(sorted(answers.items())),
        problems=problems,
    )


def _sold_by(records: Mapping[str, Any]) -> tuple[dict[str, str], list[str]]:
    """Each seat a confirmed record names -> that record; a seat named by two is a problem."""
    sold_by: dict[str, str] = {}
    problems: list[str] = []
    for rid, record in records.items():
        if record.answer.outcome.value != "CONFIRMED":
            continue
        for seat in record.seats:
            if seat in sold_by:
                problems.append(f"{seat} sold to {sold_by[seat]} and {rid}")
            sold_by[seat] = rid
    return sold_by, problems


def _row_problems(rows: Mapping[str, SeatRow], sold_by: Mapping[str, str]) -> list[str]:
    """A row item whose sold seats are not exactly its confirmed records' seats on it, that holds
    seats, or whose counts are not its states'."""
    problems: list[str] = []
    recorded: dict[str, set[int]] = {}
    for seat in sold_by:
        row_id, position = row_item_of(seat)
        recorded.setdefault(row_id, set()).add(position)
    for row_id, row in rows.items():
        states = Counter(row.states.values())
        sold = {p for p, s in row.states.items() if s is SeatState.SOLD}
        in_records = recorded.pop(row_id, set())
        if sold != in_records:
            problems.append(f"{row_id}: sold on the row {sorted(sold)}, in the records {sorted(in_records)}")
        blocked = states[SeatState.BLOCKED]
        if (row.sold, row.held) != (states[SeatState.SOLD], states[SeatState.HELD]) or row.held:
            problems.append(f"{row_id}: counts sold {row.sold} held {row.held}, states {dict(states)}")
        if row.available + row.sold + row.held + blocked != row.size:
            problems.append(f"{row_id}: available + held + sold + blocked != {row.size} seats")
    problems += [f"{row_id}: recorded seats on no row item of the map" for row_id in recorded]
    return problems


def printed(run: SeatMapRun) -> str:
    """The figures as lines of text."""
    r = run.result
    cancelled = ", ".join(f"{k} {v}" for k, v in sorted(r.transactions_cancelled.items())) or "none"
    lines = [
        f"seat map: {r.workload}, {run.seats_on_map:,} seats; {r.requests:,} requests"
        f" ({run.best_available:,} best available, {run.chosen:,} chosen seats), {r.workers} workers",
        f"drained in {r.elapsed_s:.1f} s: {r.messages_per_s:,.0f} requests/s,"
        f" {run.seats_confirmed_per_s:,.0f} seats confirmed/s",
        "answers: " + ", ".join(f"{k} {v:,}" for k, v in run.answers.items()),
        f"seats sold: {run.seats_sold:,} of {r.capacity:,} on sale",
        f"transactions: {r.transactions_attempted:,} attempted, {r.transactions_committed:,} committed,"
        f" cancelled: {cancelled}; throttled requests {r.throttled_requests:,}",
        f"handed back {r.handed_back:,}, dead-lettered {r.dead_lettered:,};"
        f" cost ${r.cost.total:.2f} per million requests",
        "each seat sold at most once, rows' states and counts = records: "
        + ("ok" if not run.problems else "; ".join(run.problems[:10])),
    ]
    return "\n".join(lines)
