"""A deterministic scheduler on a virtual clock: unchanged synchronous code, one task at a time.

Each task (a simulated Lambda container) runs on its own call stack, a greenlet, and only one
ever runs at once: the scheduler resumes the task with the earliest virtual wake-up time (ties in
the order they were scheduled), and that task runs, in zero virtual time, until it blocks in
`sleep` or `park` (every store call, publish and back-off of the simulation ends in one). So the
service's synchronous code runs as it would on Lambda, each container with its own stack, while
the interleaving, and with it every figure, depends only on the seed.

Greenlets rather than threads: the switches are explicit, so no operating-system scheduling sits
between two steps of the simulation (with threads, each hand-off waited for the OS to run the
next thread: a 2-core machine shared with other work spent most of a run there).
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field

from greenlet import greenlet


class SimulationError(RuntimeError):
    """A task raised, or the scheduler was misused; the run stops."""


@dataclass(eq=False)
class Task:
    name: str
    body: Callable[[], None]
    runner: greenlet | None = field(default=None, repr=False)
    done: bool = False


class VirtualScheduler:
    """Runs tasks on a shared virtual clock, in virtual-time order."""

    def __init__(self, start: float = 0.0) -> None:
        self._now = start
        self._queue: list[tuple[float, int, Task | Callable[[], None]]] = []
        self._order = itertools.count()
        self._current: Task | None = None
        self._loop: greenlet | None = None
        self.handoffs = 0

    def now(self) -> float:
        return self._now

    def spawn(self, name: str, body: Callable[[], None], *, at: float | None = None) -> Task:
        """Adds a task that starts at virtual time `at` (default: now)."""
        task = Task(name, body)
        self._push(self._now if at is None else at, task)
        return task

    def call_at(self, at: float, callback: Callable[[], None]) -> None:
        """Runs `callback` (in the scheduler's loop, never inside a task) at `at`."""
        self._push(max(at, self._now), callback)

    def current(self) -> Task:
        task = self._current
        if task is None or task.runner is not greenlet.getcurrent():
            raise SimulationError("called outside a simulated task")
        return task

    def park(self) -> None:
        """Blocks the calling task until another task or a callback calls `unpark` on it."""
        self._block(self.current())

    def unpark(self, task: Task) -> None:
        """Resumes a parked task at the current virtual time (after whoever runs now)."""
        self._push(self._now, task)

    def sleep(self, seconds: float) -> None:
        """Blocks the calling task for `seconds` of virtual time (other tasks run meanwhile)."""
        task = self.current()
        self._push(self._now + max(0.0, seconds), task)
        self._block(task)

    def run(self) -> None:
        """Runs every task to its end. Raises `SimulationError` if a task raised."""
        self._loop = greenlet.getcurrent()
        while self._queue:
            at, _, entry = heapq.heappop(self._queue)
            self._now = max(self._now, at)
            if isinstance(entry, Task):
                self._resume(entry)
            else:
                entry()

    # ------------------------------------------------------------------ internals
    def _push(self, at: float, entry: Task | Callable[[], None]) -> None:
        heapq.heappush(self._queue, (at, next(self._order), entry))

    def _block(self, task: Task) -> None:
        assert self._loop is not None
        self._current = None
        self._loop.switch()

    def _resume(self, task: Task) -> None:
        if task.done:
            raise SimulationError(f"{task.name} was resumed after it ended")
        self.handoffs += 1
        if task.runner is None:
            task.runner = greenlet(self._body(task), parent=self._loop)
        self._current = task
        try:
            task.runner.switch()
        except BaseException as exc:
            task.done = True
            self._queue.clear()
            raise SimulationError(f"{task.name} failed: {exc!r}") from exc
        finally:
            self._current = None

    @staticmethod
    def _body(task: Task) -> Callable[[], None]:
        def run() -> None:
            task.body()
            task.done = True

        return run
