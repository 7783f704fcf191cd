"""Measure the CPU the reserve and ticket-issuer handlers spend per invocation, and write the
constants `seats simulate` charges (src/seat_tools/simulation/measured_cpu.py).

    python scripts/measure_function_cpu.py [--runs N] [--rounds N] [--kinds K,...] [--write [PATH]]
                                           [--json PATH]

The handlers run for real (Powertools decorators, settings, their own boto3 clients) with HTTP
answered in process by canned DynamoDB and SNS responses (`seat_tools.bench.canned_aws`,
`seat_tools.bench.function_cpu` says what is and is not measured). For each kind of request and
batch size it prints the median CPU milliseconds per invocation over the rounds (and the lowest
and highest), then the fit `intercept + slope x messages`; for the issuer, a round's fixed CPU,
per numbering batch and per ticket. It measures `--runs` times (3 by default) and keeps, for each
kind, the run whose fit gives the median CPU (`function_cpu.median_run`): on a shared machine one
run's kind can come out a quarter slower than the next one's. Run it on an idle machine if you
can: another process on the same core slows this one's CPU too (the load average is printed with
the figures).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
import textwrap
import time
from pathlib import Path

from seat_inventory.dal.items import LEDGER_OUTBOX_BUCKETS, UNNUMBERED_BUCKETS
from seat_tools.bench.function_cpu import (
    DEFAULT_ISSUER_ROUNDS,
    DEFAULT_SIZES,
    RESERVE_KINDS,
    Measurement,
    measure,
    median_run,
)

ROOT = Path(__file__).resolve().parents[1]
CONSTANTS = ROOT / "src" / "seat_tools" / "simulation" / "measured_cpu.py"
COMMAND = "python scripts/measure_function_cpu.py --write"

MODULE = '''"""CPU the functions' handlers spend per invocation, measured; generated, do not edit.

Regenerate with `{command}`
(how it measures: seat_tools/bench/function_cpu.py). It ran the real reserve and ticket-issuer
handlers, their HTTP answered in process with valid DynamoDB and SNS responses, {rounds} rounds
per batch size, and fitted each kind's median CPU per invocation as
`invocation_ms + per_message_ms x messages`; of {runs} such runs, each kind's constants are those
of the run with the median CPU for a full batch.

{measured_on}

The figures are milliseconds of one core of that machine. Lambda gives a function CPU in
proportion to its memory, one vCPU at 1,769 MB (`vcpu_share`); Python runs one thread of CPU at
a time, so a handler gains nothing past one vCPU. The template's functions run on arm64; how
one of their cores compares with the machine above is not measured here.
"""

from __future__ import annotations

from dataclasses import dataclass

LAMBDA_MB_PER_VCPU = 1769


@dataclass(frozen=True)
class HandlerCpu:
    """One kind of batch's CPU milliseconds per invocation: `invocation_ms + per_message_ms x n`."""

    invocation_ms: float
    per_message_ms: float

    def ms(self, messages: int) -> float:
        return self.invocation_ms + self.per_message_ms * messages


# The reserve handler, by what the batch holds (seat_tools.bench.function_cpu describes each).
RESERVE_CPU = {{
{reserve}
}}
# The ticket issuer: one round's fixed CPU (its ISSUER_ROUND_QUERIES index and outbox queries),
# each numbering batch (its transaction, TICKETED publications and outbox update) and each ticket.
ISSUER_ROUND_QUERIES = {round_queries}
ISSUER_ROUND_MS = {round_ms}
ISSUER_PER_BATCH_MS = {per_batch_ms}
ISSUER_PER_TICKET_MS = {per_ticket_ms}


def vcpu_share(memory_mb: int) -> float:
    """The share of one vCPU a function of `memory_mb` gets (at most one: see the docstring)."""
    return min(1.0, memory_mb / LAMBDA_MB_PER_VCPU)


def handler_seconds(cpu_ms: float, memory_mb: int) -> float:
    """Seconds a handler needing `cpu_ms` of one core takes on a function of `memory_mb`."""
    return cpu_ms / 1000 / vcpu_share(memory_mb)
'''


def _fits(result: Measurement) -> str:
    lines = [f"{'fit':<10} {'per invocation ms':>18} {'per message ms':>15} {'R^2':>6}  99 messages ms"]
    for kind, fit in result.reserve_fits.items():
        lines.append(
            f"{kind:<10} {fit.intercept_ms:>18.2f} {fit.slope_ms:>15.3f} {fit.r_squared:>6.3f}"
            f"  {fit.intercept_ms + 99 * fit.slope_ms:>14.1f}"
        )
    if result.issuer_fit is not None:
        f = result.issuer_fit
        lines.append(
            f"issuer: per round {f.round_ms:.2f} ms + per batch {f.per_batch_ms:.2f} ms + per ticket"
            f" {f.per_ticket_ms:.3f} ms (R^2 {f.r_squared:.3f})"
        )
    return "\n".join(lines)


def _table(result: Measurement) -> str:
    lines = [f"machine: {result.machine}", ""]
    lines.append(f"{'kind':<10} {'messages':>8} {'median ms':>10} {'low':>8} {'high':>8} {'rounds':>6}")
    for s in result.samples:
        extra = f"   ({s.batches} batches, {s.series} series)" if s.kind == "issuer" else ""
        lines.append(
            f"{s.kind:<10} {s.messages:>8} {s.median_ms:>10.2f} {s.low_ms:>8.2f} {s.high_ms:>8.2f}"
            f" {s.rounds:>6}{extra}"
        )
    lines.append("")
    lines.append(_fits(result))
    lines.append("")
    lines.append("AWS calls per measured invocation:")
    for kind, calls in result.calls.items():
        described = ", ".join(f"{op} {n:g}" for op, n in sorted(calls.items()))
        lines.append(f"  {kind}: {described}")
    return "\n".join(lines)


def constants_module(result: Measurement, *, rounds: int, runs: int, load: str, date: str) -> str:
    """The generated module's text (ruff-formatted as written)."""
    if result.issuer_fit is None or not result.reserve_fits:
        raise ValueError("the constants need every reserve kind's fit and the issuer's")
    reserve = "\n".join(
        f'    "{kind}": HandlerCpu(invocation_ms={fit.intercept_ms:.2f}, per_message_ms={fit.slope_ms:.3f}),'
        for kind, fit in result.reserve_fits.items()
    )
    f = result.issuer_fit
    return MODULE.format(
        command=COMMAND,
        rounds=rounds,
        runs=runs,
        measured_on=textwrap.fill(
            f"Measured on: {result.machine}; load average {load} at the start; {date}.", width=99
        ),
        reserve=reserve,
        round_queries=UNNUMBERED_BUCKETS + LEDGER_OUTBOX_BUCKETS,
        round_ms=f"{f.round_ms:.2f}",
        per_batch_ms=f"{f.per_batch_ms:.2f}",
        per_ticket_ms=f"{f.per_ticket_ms:.3f}",
    )


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    # 40 and 20 rounds: two such runs agreed within about 3% on a reservation batch (10 rounds: 20%)
    parser.add_argument("--rounds", type=int, default=40, help="rounds per batch size (reserve kinds)")
    parser.add_argument("--issuer-rounds", type=int, default=20, help="rounds per issuer configuration")
    parser.add_argument(
        "--runs", type=int, default=3, help="runs; each kind's constants are its median run's"
    )
    parser.add_argument("--kinds", default=",".join(RESERVE_KINDS), help="reserve kinds, comma-separated")
    parser.add_argument("--sizes", default=",".join(map(str, DEFAULT_SIZES)), help="batch sizes")
    parser.add_argument(
        "--issuer",
        default=" ".join(f"{a}x{b}" for a, b in DEFAULT_ISSUER_ROUNDS),
        help="issuer configurations SALESxSERIES, space-separated ('' for none)",
    )
    parser.add_argument(
        "--write",
        nargs="?",
        const=str(CONSTANTS),
        type=Path,
        help=f"write the constants module (default {CONSTANTS.relative_to(ROOT)})",
    )
    parser.add_argument("--json", type=Path, help="write every sample and fit as JSON")
    args = parser.parse_args(argv)
    kinds = [k for k in args.kinds.split(",") if k]
    unknown = [k for k in kinds if k not in RESERVE_KINDS]
    if unknown:
        parser.error(f"unknown kind(s) {unknown}: choose from {', '.join(RESERVE_KINDS)}")
    sizes = [int(s) for s in args.sizes.split(",") if s]
    if any(not 1 <= s <= 99 for s in sizes) or len(set(sizes)) < 2:
        parser.error("--sizes: at least two different batch sizes, each 1 to 99")
    issuer = [tuple(int(n) for n in c.split("x")) for c in args.issuer.split()]
    load = ", ".join(f"{v:.2f}" for v in os.getloadavg())
    started = time.monotonic()
    if args.runs < 1:
        parser.error("--runs: at least 1")
    runs = []
    for run in range(1, args.runs + 1):
        measured = measure(
            kinds=kinds,
            sizes=sizes,
            rounds=args.rounds,
            issuer=[(a, b) for a, b in issuer],
            issuer_rounds=args.issuer_rounds,
            progress=lambda line, run=run: print(
                f"run {run}/{args.runs}: {line}", file=sys.stderr, flush=True
            ),
        )
        if args.runs > 1:
            print(f"run {run} of {args.runs}\n{_fits(measured)}\n")
        runs.append(measured)
    result = median_run(runs)
    if args.runs > 1:
        print(f"each kind's median run of {args.runs}:")
    print(_table(result))
    print(f"\nload average at the start: {load}; {time.monotonic() - started:.0f} s")
    if args.json:
        args.json.write_text(json.dumps(result.as_dict(), indent=2) + "\n")
    if args.write:
        if set(kinds) != set(RESERVE_KINDS) or not issuer:
            parser.error("--write needs every kind and the issuer")
        date = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d")
        args.write.write_text(
            constants_module(result, rounds=args.rounds, runs=args.runs, load=load, date=date)
        )
        print(f"wrote {args.write}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
