"""Several seeds of one simulated sale: every figure's mean, minimum and maximum (`seats simulate
--seeds N`, in parallel processes with `--jobs J`).

A run's figures depend on its seed (the interleaving of the containers, the latencies drawn); one
seed is one sample. `run_seeds` runs the same configuration with seeds `first` to `first + N - 1`
and `summarise` gives, for every number among the figures (nested ones by dotted name:
`cost_per_million_requests.total`), its mean, minimum and maximum over the seeds; for every other
value (a binding limit, the invariants), how many seeds gave each.
"""

from __future__ import annotations

import dataclasses
import statistics
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from seat_inventory.settings import Settings
from seat_tools.simulation.run import SimulationConfig, SimulationResult, run_simulation

MAX_SEEDS = 100


def _one(config: SimulationConfig, settings: Settings) -> SimulationResult:
    return run_simulation(config, settings)


def run_seeds(
    config: SimulationConfig, settings: Settings, seeds: int, *, jobs: int = 1
) -> list[SimulationResult]:
    """The run of `config` for each of `seeds` seeds from `config.seed` on, `jobs` at a time (in
    processes of their own when more than one)."""
    if not 1 <= seeds <= MAX_SEEDS:
        raise ValueError(f"seeds must be 1 to {MAX_SEEDS}, not {seeds}")
    if jobs < 1:
        raise ValueError(f"jobs must be at least 1, not {jobs}")
    configs = [dataclasses.replace(config, seed=config.seed + n) for n in range(seeds)]
    if jobs == 1 or seeds == 1:
        return [_one(c, settings) for c in configs]
    with ProcessPoolExecutor(max_workers=min(jobs, seeds)) as pool:
        return list(pool.map(_one, configs, [settings] * seeds))


def _flatten(figures: Mapping[str, Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    for name, value in figures.items():
        key = f"{prefix}{name}"
        if isinstance(value, Mapping):
            yield from _flatten(value, key + ".")
        elif not isinstance(value, list):
            yield key, value


def summarise(results: Sequence[SimulationResult]) -> dict[str, Any]:
    """Every figure over the runs: numbers as {"mean", "min", "max"}, other values as the count of
    runs that gave each (a figure some runs lack counts only where it is)."""
    columns: dict[str, list[Any]] = {}
    for result in results:
        for key, value in _flatten(result.figures):
            columns.setdefault(key, []).append(value)
    summary: dict[str, Any] = {}
    for key, values in columns.items():
        numbers = [v for v in values if isinstance(v, int | float) and not isinstance(v, bool)]
        if numbers and len(numbers) == len(values):
            summary[key] = {"mean": statistics.fmean(numbers), "min": min(numbers), "max": max(numbers)}
        else:
            summary[key] = dict(Counter(str(v) for v in values))
    return summary


def seeds_document(results: Sequence[SimulationResult]) -> dict[str, Any]:
    """The JSON of a several-seed run: the configuration (its first seed), the seeds, the summary
    and each run's figures."""
    first = results[0].as_dict()
    return {
        "config": first["config"],
        "seeds": [r.config.seed for r in results],
        "summary": summarise(results),
        "runs": [r.figures for r in results],
    }


def format_summary(results: Sequence[SimulationResult]) -> str:
    """The summary as aligned lines: figure, mean, min, max (or the values' counts)."""
    summary = summarise(results)
    seeds = [r.config.seed for r in results]
    lines = [f"{len(results)} seeds ({seeds[0]}-{seeds[-1]}); {results[0].config.rate_kind}"]
    width = max(len(key) for key in summary)
    lines.append(f"{'figure':<{width}}  {'mean':>14}  {'min':>14}  {'max':>14}")
    for key, value in summary.items():
        if "mean" in value:
            lines.append(
                f"{key:<{width}}  {_n(value['mean']):>14}  {_n(value['min']):>14}  {_n(value['max']):>14}"
            )
        else:
            counts = ", ".join(f"{v} x{n}" if n > 1 else v for v, n in value.items())
            lines.append(f"{key:<{width}}  {counts}")
    return "\n".join(lines)


def _n(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:,.4g}"
