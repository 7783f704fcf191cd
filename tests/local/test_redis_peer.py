"""The Redis peer on a live redis-server (Debian's package): its counting under concurrency, and
what a kill loses, checked against tallies the tests keep themselves.

Skipped where redis-server is absent, except under CI=true, where the CI installs it and a
missing server fails (tests/local/conftest.py). The last test runs the peer through `seats
bench`'s runner on the session's local stack.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Iterator

import pytest

from seat_inventory.models import Outcome, SeatKey
from seat_tools.bench import report
from seat_tools.bench.redis_kill import AFTER_RESTART, BEFORE_KILL, count_loss, kill_mid_sale
from seat_tools.bench.redis_peer import (
    AOF_EVERYSEC,
    DEBIAN_DEFAULT,
    IN_MEMORY,
    Answer,
    Persistence,
    RedisInventory,
    RedisServer,
)
from seat_tools.bench.run import REDIS, SERVICE, Bench, DesignResult, cpu_seconds_by_process, workloads
from seat_tools.local.stack import LocalStack

pytestmark = pytest.mark.redis

KEY = SeatKey("event-redis", "GA")


@pytest.fixture
def start_server(redis_program: str) -> Iterator[Callable[[Persistence], RedisServer]]:
    """Starts servers with a given persistence; every one is stopped and its folder removed."""
    started: list[RedisServer] = []

    def start(persistence: Persistence) -> RedisServer:
        server = RedisServer(persistence, program=redis_program)
        started.append(server)
        server.start()
        return server

    yield start
    for server in started:
        server.close()


def _sell_concurrently(
    server: RedisServer, requests: list[tuple[str, int]], threads: int
) -> tuple[dict[str, int], Counter[str]]:
    """Sends (reservation id, seats) from `threads` clients at once; the answers, tallied here."""
    confirmed: dict[str, int] = {}
    outcomes: Counter[str] = Counter()
    lock = threading.Lock()
    start = threading.Barrier(threads)

    def client(share: list[tuple[str, int]]) -> None:
        inventory = RedisInventory(server.client())
        start.wait()
        for reservation_id, seats in share:
            answer = inventory.reserve(KEY, reservation_id, seats)
            with lock:
                outcomes[answer.outcome] += 1
                if answer.outcome is Outcome.CONFIRMED:
                    confirmed[reservation_id] = seats
        inventory.client.close()

    workers = [threading.Thread(target=client, args=(requests[n::threads],)) for n in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
    assert not any(worker.is_alive() for worker in workers)
    return confirmed, outcomes


def test_concurrent_one_seat_requests_sell_exactly_the_capacity(
    start_server: Callable[[Persistence], RedisServer],
) -> None:
    server = start_server(IN_MEMORY)
    inventory = RedisInventory(server.client())
    inventory.create_seat_class(KEY, 300)
    confirmed, outcomes = _sell_concurrently(server, [(f"r-{n}", 1) for n in range(1200)], threads=8)
    assert len(confirmed) == 300
    assert outcomes == {"CONFIRMED": 300, "SOLD_OUT": 900}
    # the store recorded exactly the reservations the clients were told CONFIRMED
    assert inventory.reservations(KEY) == confirmed
    assert inventory.available(KEY) == 0


def test_concurrent_requests_of_several_seats_never_oversell(
    start_server: Callable[[Persistence], RedisServer],
) -> None:
    server = start_server(IN_MEMORY)
    inventory = RedisInventory(server.client())
    inventory.create_seat_class(KEY, 250)
    requests = [(f"r-{n}", 1 + n % 4) for n in range(600)]  # 1,500 seats asked for 250
    confirmed, _ = _sell_concurrently(server, requests, threads=8)
    sold = sum(confirmed.values())
    assert 250 - 3 <= sold <= 250  # a request of up to 4 seats may be refused with 3 left
    assert inventory.reservations(KEY) == confirmed
    assert inventory.available(KEY) == 250 - sold
    view = inventory.read_inventory(KEY)
    assert view is not None and (view.capacity, view.available, view.sold) == (250, 250 - sold, sold)


def test_a_reservation_sent_again_gets_its_first_answer_and_takes_no_more_seats(
    start_server: Callable[[Persistence], RedisServer],
) -> None:
    inventory = RedisInventory(start_server(IN_MEMORY).client())
    inventory.create_seat_class(KEY, 3)
    assert inventory.reserve(KEY, "r-1", 2) == Answer(Outcome.CONFIRMED, 1)
    assert inventory.reserve(KEY, "r-1", 2) == Answer(Outcome.CONFIRMED, 2, replay=True)
    assert inventory.available(KEY) == 1
    assert inventory.reserve(KEY, "r-2", 2) == Answer(Outcome.SOLD_OUT, 1)
    assert inventory.reserve(KEY, "r-3", 1) == Answer(Outcome.CONFIRMED, 0)
    # a refusal is not recorded: only the two reservations that took seats are
    assert inventory.reservations(KEY) == {"r-1": 2, "r-3": 1}
    assert inventory.reserve(SeatKey("no-such-event", "GA"), "r-4", 1).outcome is Outcome.UNKNOWN_EVENT
    assert inventory.reserve(KEY, "r-5", 0).outcome is Outcome.INVALID


@pytest.mark.parametrize("persistence", [DEBIAN_DEFAULT, AOF_EVERYSEC, IN_MEMORY], ids=lambda p: p.name)
def test_a_kill_loses_exactly_what_the_persistence_had_not_written(
    start_server: Callable[[Persistence], RedisServer], persistence: Persistence
) -> None:
    server = start_server(persistence)
    client = server.client()
    inventory = RedisInventory(client)
    inventory.create_seat_class(KEY, 100)
    early = [f"early-{n}" for n in range(10)]
    late = [f"late-{n}" for n in range(7)]
    for reservation_id in early:
        assert inventory.reserve(KEY, reservation_id, 1).outcome is Outcome.CONFIRMED
    if persistence.snapshots:
        client.save()  # an RDB snapshot now, as a save point would take one
    for reservation_id in late:
        assert inventory.reserve(KEY, reservation_id, 2).outcome is Outcome.CONFIRMED
    told = {rid: 1 for rid in early} | {rid: 2 for rid in late}
    client.close()
    server.kill()
    server.restart()
    inventory = RedisInventory(server.client())
    loss = count_loss(told, inventory.reservations(KEY))
    if persistence is AOF_EVERYSEC:  # every write reached the kernel before its answer
        assert loss.lost_ids == () and inventory.available(KEY) == 100 - 24
    elif persistence is DEBIAN_DEFAULT:  # the snapshot is all there is: what came after is lost
        assert loss.lost_ids == tuple(sorted(late)) and loss.lost_seats == 14
        assert inventory.available(KEY) == 100 - 10
    else:  # in memory only: the server comes back empty, the class gone with its reservations
        assert loss.lost_ids == tuple(sorted(told)) and loss.lost_seats == 24
        assert inventory.read_inventory(KEY) is None


@pytest.mark.parametrize("persistence", [DEBIAN_DEFAULT, AOF_EVERYSEC], ids=lambda p: p.name)
def test_kill_mid_sale_counts_what_the_clients_were_told_against_the_store(
    start_server: Callable[[Persistence], RedisServer], persistence: Persistence
) -> None:
    server = start_server(persistence)
    told: dict[str, dict[str, int]] = {BEFORE_KILL: {}, AFTER_RESTART: {}}
    lock = threading.Lock()

    def tally(phase: str, reservation_id: str, answer: Answer | None) -> None:
        if answer is not None and answer.outcome is Outcome.CONFIRMED:
            with lock:
                told[phase][reservation_id] = 1

    result = kill_mid_sale(server, capacity=200, requests=1000, workers=4, on_answer=tally)
    # the server is left running on the sale's final state: read it here
    final = RedisInventory(server.client())
    key = result.key
    before, after = told[BEFORE_KILL], told[AFTER_RESTART]
    assert result.loss.confirmed_reservations == len(before) >= result.kill_after == 100
    assert result.confirmed_seats_in_all == len(before) + len(after)
    if persistence is DEBIAN_DEFAULT:
        # the snapshot was taken before the sale: every seat confirmed before the kill is lost...
        assert set(result.loss.lost_ids) == set(before)
        assert result.loss.stored_reservations == 0 and result.available_after_restart == 200
        # ...and sold again: the store ends sold out, holding none of the lost reservations
        stored = final.reservations(key)
        assert sum(stored.values()) == 200 == result.sold_at_end
        assert set(stored) == set(after) and not set(stored) & set(before)
        assert result.oversold == len(before) == result.loss.lost_seats
    else:
        assert result.loss.lost_ids == ()
        assert result.loss.stored_reservations >= len(before)
        assert result.oversold == 0 and result.sold_at_end == 200
        assert len(before) + len(after) == 200
    assert result.counter_agrees


@pytest.mark.local_stack
def test_the_bench_runs_the_redis_peer_on_the_local_stack(
    local_stack: LocalStack, start_server: Callable[[Persistence], RedisServer]
) -> None:
    server = start_server(DEBIAN_DEFAULT)
    specs = [spec for spec in workloads(0.02) if spec.name in ("hot", "tail")]  # 400 for 40; 100 after 10
    results: list[DesignResult] = Bench(local_stack, workers=2, redis=server).run(specs, (REDIS,))
    assert [(r.workload, r.design) for r in results] == [("hot", REDIS), ("tail", REDIS)]
    hot, tail = results
    for result in results:
        assert result.invariant_problems == [] and result.sell_out_problems == []
        assert result.published == result.requests and result.runner["handler_errors"] == 0
        # answers published as the service publishes them: ten per PublishBatch at most
        requests = result.counts["http_requests"]
        assert "sns.Publish" not in requests
        assert result.requests / 10 <= requests["sns.PublishBatch"] < result.requests / 5
        assert "dynamodb.UpdateItem" not in result.counts["http_requests"]
        assert "redis-server" in result.cpu_seconds  # its CPU is measured with the others'
        assert result.ceiling is None
    # ... read where the bench reads it: the server's own CPU (the runs above may round to 0, the
    # clock ticking in 10 ms; a server kept busy for a moment shows it)
    assert server.pid is not None
    engines = {server.name: server.pid}
    before = cpu_seconds_by_process(local_stack, engines)[server.name]
    server.client(retries=0).eval("local i = 0 while i < 30000000 do i = i + 1 end return i", 0)
    assert cpu_seconds_by_process(local_stack, engines)[server.name] - before >= 0.05
    assert hot.confirmed == 40 and hot.outcomes == {"CONFIRMED": 40, "SOLD_OUT": 360}
    assert tail.confirmed == 0 and tail.outcomes == {"SOLD_OUT": 100}
    table = report.peer_rate_table(results)
    assert table.splitlines()[2].startswith(
        f"| hot | 2 | 400 | n/a | n/a | n/a | {hot.messages_per_s:,.0f} |"
    )
    assert SERVICE not in {r.design for r in results}
