"""Runs the functions behind the checkout API's Lambda proxy routes locally (the gate's,
docs/guides/checkin.md), as Lambda would: each "container" a separate process (spawn) with the
function's environment, importing its handler once and keeping its clients while warm.

A function gets a pool of `containers` processes, started on its first request; a request waits
for a free one (as a function at its concurrency limit would queue, where Lambda would throttle).
An invocation past the function's timeout, or a handler that raises, is answered as API Gateway
answers a failed Lambda integration: 502.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import threading
import time
import uuid
from collections.abc import Mapping
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from seat_tools.local.runner import import_handler

DEFAULT_CONTAINERS = 4
# A container's first request also waits for its start (spawn, the handler's imports): Lambda
# bounds that init phase apart from the function's timeout; here it gets this much more.
INIT_ALLOWANCE_S = 60


@dataclass(frozen=True, slots=True)
class HostedFunction:
    """What the host needs of a function: plain data, so that it crosses the process boundary."""

    arn: str
    name: str
    handler: str
    environment: Mapping[str, str]
    timeout_s: int
    memory_mb: int
    log_path: Path | None = None


class _Context:
    def __init__(self, function: HostedFunction) -> None:
        self.function_name = function.name
        self.function_version = "$LATEST"
        self.invoked_function_arn = function.arn
        self.memory_limit_in_mb = function.memory_mb
        self.aws_request_id = str(uuid.uuid4())
        self.log_group_name = f"/aws/lambda/{function.name}"
        self.log_stream_name = "local"
        self._deadline = time.monotonic() + function.timeout_s

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._deadline - time.monotonic()) * 1000))


_function: HostedFunction | None = None
_handler: Any = None


def _start_container(function: HostedFunction) -> None:
    """Each container: the function's environment (and nothing of the caller's AWS settings),
    its logs to the function's log file, its handler imported once (the cold start)."""
    global _function, _handler
    for name in ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL"):
        os.environ.pop(name, None)
    os.environ.update(function.environment)
    if function.log_path is not None:
        log = open(function.log_path, "a", buffering=1)  # noqa: SIM115  (the process's stdout)
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
    _function = function
    _handler = import_handler(function.handler)


def _invoke(event: dict[str, Any]) -> dict[str, Any]:
    assert _function is not None
    return dict(_handler(event, _Context(_function)))


class FunctionHost:
    """The API's functions by ARN, each with its pool of container processes."""

    def __init__(
        self, functions: Mapping[str, HostedFunction], *, containers: int = DEFAULT_CONTAINERS
    ) -> None:
        self._functions = dict(functions)
        self._containers = containers
        self._pools: dict[str, Any] = {}
        self._lock = threading.Lock()

    def _pool(self, function: HostedFunction) -> Any:
        with self._lock:
            pool = self._pools.get(function.arn)
            if pool is None:
                context = multiprocessing.get_context("spawn")
                pool = context.Pool(self._containers, initializer=_start_container, initargs=(function,))
                self._pools[function.arn] = pool
            return pool

    def invoke(self, arn: str, event: dict[str, Any]) -> dict[str, Any]:
        """The function's answer to a proxy event, or a 502 answer when it failed or timed out."""
        function = self._functions.get(arn)
        if function is None:
            return _failure(f"no local function {arn}")
        result = self._pool(function).apply_async(_invoke, (event,))
        try:
            return dict(result.get(timeout=function.timeout_s + INIT_ALLOWANCE_S))
        except (FutureTimeout, multiprocessing.TimeoutError):
            return _failure(f"{function.name} timed out after {function.timeout_s} s")
        except Exception as exc:  # noqa: BLE001  (whatever the handler raised: API Gateway answers 502)
            return _failure(f"{function.name} failed: {type(exc).__name__}: {exc}")

    def stop(self) -> None:
        with self._lock:
            pools, self._pools = list(self._pools.values()), {}
        for pool in pools:
            pool.terminate()
            pool.join()


def _failure(message: str) -> dict[str, Any]:
    return {
        "statusCode": 502,
        "headers": {"Content-Type": "application/json"},
        "body": json.dumps({"message": "Internal server error", "local": message}),
    }
