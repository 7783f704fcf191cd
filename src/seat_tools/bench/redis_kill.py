"""What the Redis peer loses when its server is killed mid-sale and started again.

A sale of one-seat requests runs against a `RedisServer` with a persistence profile: `workers`
client threads (each a function instance calling the reserve script, `bench.redis_peer`) take
request ids from one list and tally every answer they receive. The class is created and, when
the profile has RDB save points, snapshotted before the sale (an event is created well before
its on-sale, so Redis's `save 3600 1` point has written it by then). Once `kill_at` of the
capacity is confirmed the server gets SIGKILL (a crash: no shutdown save); each client sees its
connection break and stops, and the request it was sending is kept as unanswered. The server is
started again on its files (RDB snapshot or AOF, per the profile), and the store is read:

- lost: reservations the clients were told CONFIRMED whose id is not in the store after the
  restart (`count_loss`, a set difference of ids, with their seats): the store has given those
  seats back, so it will sell them again;
- applied but unanswered: ids in the store that no client saw confirmed (the script ran, the
  answer died with the connection): not a loss, the redelivery gets the recorded answer.

Then the sale goes on to its end (the unanswered requests first, as a queue would redeliver
them, then the rest): with the seats given back sold again, the seats confirmed in all exceed
the capacity by the seats lost (oversold), unless the class itself was lost.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import Counter, deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from seat_inventory.models import Outcome, SeatKey
from seat_tools.bench.redis_peer import Answer, Persistence, RedisInventory, RedisServer
from seat_tools.local.engines import LocalStackError

BEFORE_KILL = "before the kill"
AFTER_RESTART = "after the restart"
KILL_WAIT_S = 600.0

# Called by the client threads with (phase, reservation id, answer; None: no answer).
AnswerHook = Callable[[str, str, Answer | None], None]


@dataclass(frozen=True)
class Loss:
    """Confirmed reservations compared with the store read after the restart."""

    confirmed_reservations: int
    confirmed_seats: int
    stored_reservations: int
    stored_seats: int
    lost_ids: tuple[str, ...]
    lost_seats: int
    applied_unanswered: int

    @property
    def lost_reservations(self) -> int:
        return len(self.lost_ids)


def count_loss(confirmed: Mapping[str, int], stored: Mapping[str, int]) -> Loss:
    """`confirmed`: reservation id -> seats, as the clients were answered; `stored`: the same as
    the store holds after the restart. Lost: confirmed ids the store no longer has."""
    lost = sorted(set(confirmed) - set(stored))
    return Loss(
        confirmed_reservations=len(confirmed),
        confirmed_seats=sum(confirmed.values()),
        stored_reservations=len(stored),
        stored_seats=sum(stored.values()),
        lost_ids=tuple(lost),
        lost_seats=sum(confirmed[rid] for rid in lost),
        applied_unanswered=len(set(stored) - set(confirmed)),
    )


@dataclass
class Tally:
    """What the clients were answered in one phase: confirmed ids with their seats, every outcome
    counted, and the ids sent on a connection that broke before an answer came."""

    confirmed: dict[str, int] = field(default_factory=dict)
    outcomes: Counter[str] = field(default_factory=Counter)
    unanswered: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


@dataclass(frozen=True)
class KillResult:
    persistence: Persistence
    key: SeatKey  # the class the sale ran on
    capacity: int
    requests: int
    workers: int
    kill_after: int  # confirmed reservations awaited before the kill
    sale_s_before_kill: float
    s_since_snapshot: float | None  # at the kill; None without RDB save points
    restart_s: float  # from the kill until the restarted server answered
    rest_of_sale_s: float  # the sale after the restart, to its end
    loss: Loss
    available_after_restart: int | None  # the counter read after the restart (None: key gone)
    outcomes_after_restart: dict[str, int]
    confirmed_seats_in_all: int
    sold_at_end: int | None  # capacity - the counter at the end (None: key gone)

    @property
    def class_survived(self) -> bool:
        return self.available_after_restart is not None

    @property
    def counter_agrees(self) -> bool:
        """The restored counter says as many seats taken as the restored records hold."""
        return (
            self.available_after_restart is None
            or self.capacity - self.available_after_restart == self.loss.stored_seats
        )

    @property
    def answers_per_s_after_restart(self) -> float:
        """Script answers per second from the client threads, after the restart (this machine)."""
        answered = sum(self.outcomes_after_restart.values())
        return answered / self.rest_of_sale_s if self.rest_of_sale_s > 0 else 0.0

    @property
    def oversold(self) -> int:
        """Seats confirmed to clients beyond the capacity, once the sale went on to its end."""
        return max(0, self.confirmed_seats_in_all - self.capacity)


def _sell(
    server: RedisServer,
    key: SeatKey,
    pending: deque[str],
    tally: Tally,
    *,
    phase: str,
    workers: int,
    on_answer: AnswerHook | None,
    reached: threading.Event | None = None,
    reach_at: int = 0,
) -> list[threading.Thread]:
    """Starts `workers` client threads taking ids from `pending` until it is empty or their
    connection breaks (no reconnection: a dead server is seen at once); sets `reached` once
    `reach_at` reservations are confirmed."""
    import redis

    def client_loop() -> None:
        client = server.client(retries=0)
        inventory = RedisInventory(client)
        try:
            while True:
                try:
                    reservation_id = pending.popleft()
                except IndexError:
                    return
                try:
                    answer = inventory.reserve(key, reservation_id, 1)
                except (redis.ConnectionError, redis.TimeoutError):
                    with tally.lock:
                        tally.unanswered.append(reservation_id)
                    if on_answer:
                        on_answer(phase, reservation_id, None)
                    return
                with tally.lock:
                    tally.outcomes[answer.outcome.value] += 1
                    if answer.outcome is Outcome.CONFIRMED:
                        tally.confirmed[reservation_id] = 1
                        if reached is not None and len(tally.confirmed) >= reach_at:
                            reached.set()
                if on_answer:
                    on_answer(phase, reservation_id, answer)
        finally:
            client.close()

    threads = [threading.Thread(target=client_loop, daemon=True) for _ in range(workers)]
    for thread in threads:
        thread.start()
    return threads


def _join(threads: list[threading.Thread]) -> None:
    for thread in threads:
        thread.join(KILL_WAIT_S)
        if thread.is_alive():
            raise LocalStackError(f"a Redis client thread did not end within {KILL_WAIT_S:.0f} s")


def kill_mid_sale(
    server: RedisServer,
    *,
    capacity: int,
    requests: int,
    workers: int,
    kill_at: float = 0.5,
    on_answer: AnswerHook | None = None,
) -> KillResult:
    """Sells `requests` one-seat requests for `capacity` seats on the started `server`, SIGKILLs
    it once `kill_at` of the capacity is confirmed, starts it again, reads what it kept, and sells
    the rest (see the module). The server is left running on the sale's final state."""
    if not 0 < kill_at < 1 or requests <= capacity * kill_at:
        raise ValueError("0 < kill_at < 1, and more requests than the seats confirmed before the kill")
    key = SeatKey(f"kill-{server.persistence.name}-{uuid.uuid4().hex[:8]}", "GA")
    admin = server.client(retries=0)
    try:
        RedisInventory(admin).create_seat_class(key, capacity)
        snapshot_at = None
        if server.persistence.snapshots:
            admin.save()
            snapshot_at = admin.lastsave().timestamp()
    finally:
        admin.close()
    pending = deque(f"{key.event_id}-{n:06d}" for n in range(requests))
    kill_after = max(1, round(capacity * kill_at))
    before = Tally()
    reached = threading.Event()
    started = time.monotonic()
    threads = _sell(
        server,
        key,
        pending,
        before,
        phase=BEFORE_KILL,
        workers=workers,
        on_answer=on_answer,
        reached=reached,
        reach_at=kill_after,
    )
    if not reached.wait(KILL_WAIT_S):
        raise LocalStackError(f"{kill_after} reservations were not confirmed within {KILL_WAIT_S:.0f} s")
    killed_at_wall = time.time()
    killed_at = time.monotonic()
    server.kill()
    _join(threads)
    server.restart()
    restart_s = time.monotonic() - killed_at
    reader = server.client(retries=0)
    try:
        inventory = RedisInventory(reader)
        loss = count_loss(before.confirmed, inventory.reservations(key))
        available_after = inventory.available(key)
        after = Tally()
        rest = deque([*before.unanswered, *pending])
        resumed = time.monotonic()
        _join(_sell(server, key, rest, after, phase=AFTER_RESTART, workers=workers, on_answer=on_answer))
        rest_of_sale_s = time.monotonic() - resumed
        if after.unanswered:
            raise LocalStackError(f"the restarted {server.name} broke {len(after.unanswered)} connection(s)")
        available_at_end = inventory.available(key)
    finally:
        reader.close()
    return KillResult(
        persistence=server.persistence,
        key=key,
        capacity=capacity,
        requests=requests,
        workers=workers,
        kill_after=kill_after,
        sale_s_before_kill=killed_at - started,
        s_since_snapshot=None if snapshot_at is None else killed_at_wall - snapshot_at,
        restart_s=restart_s,
        rest_of_sale_s=rest_of_sale_s,
        loss=loss,
        available_after_restart=available_after,
        outcomes_after_restart=dict(after.outcomes),
        confirmed_seats_in_all=sum(before.confirmed.values()) + sum(after.confirmed.values()),
        sold_at_end=None if available_at_end is None else capacity - available_at_end,
    )
