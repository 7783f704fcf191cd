"""The peer a team would pick instead: a seat counter in Redis, taken by a Lua script.

NOT part of the service: nothing deploys it. `seats bench` runs it as a design next to the
service (`bench.redis_design` is its handler) on a real `redis-server` from the distribution's
packages, started here on 127.0.0.1 with a persistence profile (`PERSISTENCE`), and kills that
server mid-sale to count what it loses (`bench.redis_kill`).

The design, as teams run it on ElastiCache or MemoryDB: each seat class is a counter of the
seats left (`seats:{<event>#<class>}:available`, a string `DECRBY` works on) and its capacity.
One Lua script takes seats (Redis runs a script atomically, so its check and its `DECRBY` see no
other command in between): it refuses when fewer seats are left than asked, else decrements the
counter. SQS delivers a message at least once and the client retries a command whose answer a
broken connection lost, so the script also records each reservation id with the seats it took
(a hash, `...:reservations`), and answers a reservation id it has seen with its first answer
instead of taking seats again: the idempotency a careful team adds. Refusals are not recorded
(a redelivered refusal is decided again). The keys of one class share a hash tag (`{...}`), so
they sit in one cluster slot, which a script on a sharded cluster needs.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from seat_inventory.models import Outcome, SeatClassInventory, SeatKey
from seat_tools.local.engines import LocalStackError, _ChildProcess

REDIS_SERVER = "redis-server"
REDIS_MISSING = (
    "redis-server was not found on PATH: the Redis peer is skipped (install Debian's package:"
    " `apt-get install redis-server`)"
)

# KEYS[1]: the seats left, KEYS[2]: the reservations taken (id -> seats);
# ARGV[1]: the reservation id, ARGV[2]: the seats asked for.
# Answers {outcome, seats left (for a replay: the seats it took), 1 if a replay else 0}.
RESERVE_SCRIPT = """
local taken = redis.call('HGET', KEYS[2], ARGV[1])
if taken then
  return {'CONFIRMED', tonumber(taken), 1}
end
local quantity = tonumber(ARGV[2])
if not quantity or quantity < 1 or quantity % 1 ~= 0 then
  return {'INVALID', 0, 0}
end
local available = redis.call('GET', KEYS[1])
if not available then
  return {'UNKNOWN_EVENT', 0, 0}
end
available = tonumber(available)
if available < quantity then
  return {'SOLD_OUT', available, 0}
end
local left = redis.call('DECRBY', KEYS[1], quantity)
redis.call('HSET', KEYS[2], ARGV[1], quantity)
return {'CONFIRMED', left, 0}
"""


@dataclass(frozen=True)
class Answer:
    """The script's answer: the outcome, the seats left after it (for a replayed reservation:
    the seats it took the first time), and whether it was a replay."""

    outcome: Outcome
    seats: int
    replay: bool = False


def parse_answer(reply: Sequence[Any]) -> Answer:
    """The script's reply (`[outcome, seats, replay]`) as an Answer; ValueError for anything else."""
    if len(reply) != 3:
        raise ValueError(f"the reserve script answered {reply!r}, not [outcome, seats, replay]")
    outcome, seats, replay = reply
    text = outcome.decode() if isinstance(outcome, bytes) else str(outcome)
    if text not in (Outcome.CONFIRMED, Outcome.SOLD_OUT, Outcome.UNKNOWN_EVENT, Outcome.INVALID):
        raise ValueError(f"the reserve script answered the outcome {text!r}")
    if int(replay) not in (0, 1):
        raise ValueError(f"the reserve script answered replay={replay!r}")
    return Answer(Outcome(text), int(seats), bool(int(replay)))


def class_keys(key: SeatKey) -> tuple[str, str, str]:
    """The class's keys: seats left, capacity, reservations; one hash tag, so one cluster slot."""
    tag = "{" + f"{key.event_id}#{key.seat_class}" + "}"
    return f"seats:{tag}:available", f"seats:{tag}:capacity", f"seats:{tag}:reservations"


class RedisInventory:
    """The seat classes in one Redis database, through a redis-py client."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self._reserve = client.register_script(RESERVE_SCRIPT)

    def create_seat_class(self, key: SeatKey, capacity: int, shards: int = 1) -> None:
        """A class of `capacity` seats (its counter, its capacity, no reservations), in one MULTI."""
        if shards != 1:
            raise ValueError("the Redis peer keeps one counter per class: it has no shards")
        available, capacity_key, reservations = class_keys(key)
        with self.client.pipeline(transaction=True) as pipe:
            pipe.set(available, capacity)
            pipe.set(capacity_key, capacity)
            pipe.delete(reservations)
            pipe.execute()

    def reserve(self, key: SeatKey, reservation_id: str, quantity: int) -> Answer:
        """Runs the script (EVALSHA, loading it again after a restart emptied the script cache)."""
        available, _, reservations = class_keys(key)
        return parse_answer(self._reserve(keys=[available, reservations], args=[reservation_id, quantity]))

    def reservations(self, key: SeatKey) -> dict[str, int]:
        """Every reservation the class recorded, with the seats each took."""
        _, _, reservations = class_keys(key)
        found = self.client.hgetall(reservations)
        return {_text(rid): int(seats) for rid, seats in found.items()}

    def available(self, key: SeatKey) -> int | None:
        """The class's counter of seats left, or None when the key is missing."""
        value = self.client.get(class_keys(key)[0])
        return None if value is None else int(value)

    def read_inventory(self, key: SeatKey) -> SeatClassInventory | None:
        """The class as the bench's checks read it: its capacity and counter, and the seats sold
        counted from the reservations recorded (so available + sold = capacity is a real check
        that the counter and the records agree). None when the class is missing."""
        available, capacity, reservations = class_keys(key)
        with self.client.pipeline(transaction=True) as pipe:
            pipe.get(capacity)
            pipe.get(available)
            pipe.hvals(reservations)
            found_capacity, found_available, taken = pipe.execute()
        if found_capacity is None or found_available is None:
            return None
        return SeatClassInventory(
            event_id=key.event_id,
            seat_class=key.seat_class,
            capacity=int(found_capacity),
            available=int(found_available),
            sold=sum(int(n) for n in taken),
        )


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


@dataclass(frozen=True)
class Persistence:
    """A redis.conf persistence setting: its name, what it is, and its directives."""

    name: str
    title: str
    directives: tuple[str, ...]

    @property
    def snapshots(self) -> bool:
        """Whether it has RDB save points (`save ""` turns them off)."""
        return any(d.startswith("save ") and d != 'save ""' for d in self.directives)

    @property
    def append_only(self) -> bool:
        return "appendonly yes" in self.directives


# Redis's built-in save points, which Debian's /etc/redis/redis.conf (package redis-server
# 5:7.0.15-1~deb12u10) leaves in force: it has no `save` line and sets `appendonly no`.
DEFAULT_SAVE = "save 3600 1 300 100 60 10000"
DEBIAN_DEFAULT = Persistence(
    "debian-default",
    f"Debian's packaged defaults: RDB snapshots `{DEFAULT_SAVE}`, `appendonly no`",
    (DEFAULT_SAVE, "appendonly no"),
)
AOF_EVERYSEC = Persistence(
    "aof-everysec",
    f"better configured: `appendonly yes`, `appendfsync everysec` (and `{DEFAULT_SAVE}`)",
    (DEFAULT_SAVE, "appendonly yes", "appendfsync everysec"),
)
IN_MEMORY = Persistence(
    "in-memory",
    'ElastiCache\'s default for a node: in memory only (`save ""`, `appendonly no`)',
    ('save ""', "appendonly no"),
)
PERSISTENCE = {p.name: p for p in (DEBIAN_DEFAULT, AOF_EVERYSEC, IN_MEMORY)}


def server_config(port: int, directory: Path, persistence: Persistence) -> str:
    """The redis.conf the bench starts a server with: 127.0.0.1 only, files in `directory`, the
    log on standard output, and the persistence directives."""
    lines = [
        "bind 127.0.0.1",
        f"port {port}",
        "protected-mode yes",
        "daemonize no",
        'logfile ""',
        f'dir "{directory}"',
        "dbfilename dump.rdb",
        *persistence.directives,
    ]
    return "\n".join(lines) + "\n"


def redis_server_path() -> str | None:
    """The redis-server program on PATH, or None."""
    return shutil.which(REDIS_SERVER)


def redis_server_version(program: str) -> str:
    """`redis-server --version`'s `v=` field (e.g. 7.0.15), or its whole first line."""
    output = subprocess.run([program, "--version"], capture_output=True, text=True, check=True).stdout
    words = [w for w in output.split() if w.startswith("v=")]
    return words[0][2:] if words else output.strip()


def redis_client(url: str, *, retries: int = 3) -> Any:
    """A redis-py client for `url`; `retries`: reconnections tried on a broken connection."""
    import redis
    from redis.backoff import ExponentialBackoff
    from redis.retry import Retry

    return redis.Redis.from_url(
        url,
        decode_responses=True,
        socket_timeout=5,
        socket_connect_timeout=2,
        retry=Retry(ExponentialBackoff(cap=1.0, base=0.05), retries),
        retry_on_error=[redis.ConnectionError, redis.TimeoutError],
    )


class RedisServer(_ChildProcess):
    """A redis-server started on a free port of 127.0.0.1 with its files in a temporary folder,
    which it can SIGKILL and start again on the same port and files (`kill`, `restart`)."""

    name = REDIS_SERVER

    def __init__(self, persistence: Persistence = DEBIAN_DEFAULT, *, program: str | None = None) -> None:
        found = program or redis_server_path()
        if found is None:
            raise LocalStackError(REDIS_MISSING)
        self.program = found
        self.persistence = persistence
        self.directory = Path(tempfile.mkdtemp(prefix="seats-redis-"))
        super().__init__(log_path=self.directory / "redis.log")

    @property
    def url(self) -> str:
        if self.port is None:
            raise LocalStackError(f"{self.name} is not running")
        return f"redis://127.0.0.1:{self.port}/0"

    def _command(self, port: int) -> list[str]:
        config = self.directory / "redis.conf"
        config.write_text(server_config(port, self.directory, self.persistence))
        return [self.program, str(config)]

    def _answers(self) -> bool:
        import redis

        try:
            client = redis_client(f"redis://127.0.0.1:{self.port or 0}/0", retries=0)
            try:
                return bool(client.ping())  # a server still loading its files answers LOADING
            finally:
                client.close()
        except redis.RedisError:
            return False

    def client(self, *, retries: int = 3) -> Any:
        return redis_client(self.url, retries=retries)

    def kill(self) -> None:
        """SIGKILL, as a crash: no shutdown save, no AOF flush beyond what the kernel already has."""
        process = self._process
        if process is None or process.poll() is not None:
            raise LocalStackError(f"{self.name} is not running")
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=10)

    def restart(self) -> None:
        """Starts the killed server again on the same port, with the same files (it loads them)."""
        port = self.port
        self._process = None
        self._close_log()
        self._fixed_port = port
        # A log of its own: the killed server's log is kept as it was.
        self._log_path = self.directory / f"redis-restart-{time.monotonic_ns()}.log"
        self.start()

    def close(self) -> None:
        """Stops the server and removes its folder."""
        self.stop()
        shutil.rmtree(self.directory, ignore_errors=True)
