"""The handler's share of a cold start: its import time against `boto3` plus Powertools alone.

Each measurement is a fresh interpreter (as a new Lambda instance is) that times one import
statement with `time.perf_counter`; the kinds alternate, so a busy moment of the machine hits
each of them alike, and the median of `rounds` is reported. Run with the function's environment
for tracing (the template's default turns it off: POWERTOOLS_TRACE_DISABLED=true), which the
handler reads only at its first invocation anyway.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
from dataclasses import dataclass

IMPORTS = {
    "reference": "import boto3; from aws_lambda_powertools import Logger, Metrics, Tracer",
    "service": "import seat_inventory.handlers.reserve_seats",
    "baseline": "import seat_tools.bench.baseline",
}
_TIMER = "import time; t = time.perf_counter(); {statement}; print(time.perf_counter() - t)"


@dataclass(frozen=True)
class ColdStart:
    rounds: int
    median_s: dict[str, float]

    @property
    def ratio(self) -> float:
        """The service handler's import over boto3 + Powertools'."""
        return self.median_s["service"] / self.median_s["reference"]


def time_import(statement: str) -> float:
    environment = {**os.environ, "POWERTOOLS_TRACE_DISABLED": "true"}
    result = subprocess.run(
        [sys.executable, "-c", _TIMER.format(statement=statement)],
        capture_output=True,
        text=True,
        check=True,
        env=environment,
    )
    return float(result.stdout.strip().splitlines()[-1])


def measure_cold_start(rounds: int = 7) -> ColdStart:
    samples: dict[str, list[float]] = {name: [] for name in IMPORTS}
    time_import(IMPORTS["service"])  # compiles the bytecode caches once, as a deployment package has
    for _ in range(rounds):
        for name, statement in IMPORTS.items():
            samples[name].append(time_import(statement))
    return ColdStart(rounds, {name: statistics.median(values) for name, values in samples.items()})
