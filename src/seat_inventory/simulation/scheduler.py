"""A deterministic scheduler on a virtual clock: unchanged synchronous code, one thread at a time.

Each task (a simulated Lambda container) runs in its own thread, but only one thread ever runs
at once: the scheduler resumes the task with the earliest virtual wake-up time (ties in the order
they were scheduled), and that task runs, in zero virtual time, until it blocks in `sleep`
(every store call, publish and back-off of the simulation ends in one). So the service's
synchronous code runs as it would on Lambda, each container with its own call stack, while the
interleaving, and with it every figure, depends only on the seed.
"""

from __future__ import annotations

import heapq
import itertools
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

# A task thread that neither blocks nor ends within this many (wall) seconds is stuck.
HANDOFF_TIMEOUT_S = 600.0


class SimulationError(RuntimeError):
    """A task raised, or the scheduler was misused; the run stops."""


class _Stop(BaseException):
    """Raised inside a task's `sleep` when the run is abandoned, to unwind its thread."""


@dataclass(eq=False)
class Task:
    name: str
    body: Callable[[], None]
    wake: threading.Event = field(default_factory=threading.Event)
    thread: threading.Thread | None = None
    done: bool = False
    error: BaseException | None = None


class VirtualScheduler:
    """Runs tasks on a shared virtual clock, in virtual-time order."""

    def __init__(self, start: float = 0.0) -> None:
        self._now = start
        self._queue: list[tuple[float, int, Task | Callable[[], None]]] = []
        self._order = itertools.count()
        self._current: Task | None = None
        self._yielded = threading.Event()
        self._stopping = False
        self._tasks: list[Task] = []
        self.handoffs = 0

    def now(self) -> float:
        return self._now

    def spawn(self, name: str, body: Callable[[], None], *, at: float | None = None) -> Task:
        """Adds a task that starts at virtual time `at` (default: now)."""
        task = Task(name, body)
        task.thread = threading.Thread(target=self._run_task, args=(task,), name=name, daemon=True)
        task.thread.start()
        self._tasks.append(task)
        self._push(self._now if at is None else at, task)
        return task

    def call_at(self, at: float, callback: Callable[[], None]) -> None:
        """Runs `callback` (in the scheduler's thread, never concurrently with a task) at `at`."""
        self._push(max(at, self._now), callback)

    def current(self) -> Task:
        task = self._current
        if task is None or threading.current_thread() is not task.thread:
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

    def _block(self, task: Task) -> None:
        self._current = None
        self._yielded.set()
        task.wake.wait()
        task.wake.clear()
        if self._stopping:
            raise _Stop

    def run(self) -> None:
        """Runs every task to its end. Raises `SimulationError` if a task raised."""
        try:
            while self._queue:
                at, _, entry = heapq.heappop(self._queue)
                self._now = max(self._now, at)
                if not isinstance(entry, Task):
                    entry()
                    continue
                task = entry
                self._resume(task)
                if task.error is not None:
                    raise SimulationError(f"{task.name} failed: {task.error!r}") from task.error
        finally:
            self._stop_all()

    # ------------------------------------------------------------------ internals
    def _push(self, at: float, entry: Task | Callable[[], None]) -> None:
        heapq.heappush(self._queue, (at, next(self._order), entry))

    def _resume(self, task: Task) -> None:
        self.handoffs += 1
        self._current = task
        self._yielded.clear()
        task.wake.set()
        if not self._yielded.wait(HANDOFF_TIMEOUT_S):
            raise SimulationError(f"{task.name} neither blocked nor ended within {HANDOFF_TIMEOUT_S} s")

    def _run_task(self, task: Task) -> None:
        task.wake.wait()
        task.wake.clear()
        try:
            if not self._stopping:
                task.body()
        except _Stop:
            pass
        except BaseException as exc:  # noqa: BLE001 - run() re-raises it as SimulationError
            task.error = exc
        finally:
            task.done = True
            self._current = None
            self._yielded.set()

    def _stop_all(self) -> None:
        """Unwinds the threads of tasks still waiting or parked (after an error)."""
        self._stopping = True
        self._queue.clear()
        for task in self._tasks:
            if not task.done and task.thread is not None:
                task.wake.set()
                task.thread.join(timeout=5)
