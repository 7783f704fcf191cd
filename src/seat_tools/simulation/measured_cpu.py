"""CPU the functions' handlers spend per invocation, measured; generated, do not edit.

Regenerate with `python scripts/measure_function_cpu.py --write`
(how it measures: seat_tools/bench/function_cpu.py). It ran the real reserve and ticket-issuer
handlers, their HTTP answered in process with valid DynamoDB and SNS responses, 40 rounds
per batch size, and fitted each kind's median CPU per invocation as
`invocation_ms + per_message_ms x messages`; of 3 such runs, each kind's constants are those
of the run with the median CPU for a full batch.

Measured on: AMD EPYC, 2 cores, x86_64, Python 3.11.7, botocore 1.43.127; load average 1.79, 1.61,
1.66 at the start; 2026-11-29.

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
RESERVE_CPU = {
    "reserve": HandlerCpu(invocation_ms=1.74, per_message_ms=0.318),
    "hold": HandlerCpu(invocation_ms=1.66, per_message_ms=0.284),
    "limit": HandlerCpu(invocation_ms=1.13, per_message_ms=0.308),
    "sold-out": HandlerCpu(invocation_ms=6.83, per_message_ms=0.732),
    "mapped": HandlerCpu(invocation_ms=3.64, per_message_ms=0.459),
}
# The ticket issuer: one round's fixed CPU (its ISSUER_ROUND_QUERIES index and outbox queries),
# each numbering batch (its transaction, TICKETED publications and outbox update) and each ticket.
ISSUER_ROUND_QUERIES = 520
ISSUER_ROUND_MS = 232.85
ISSUER_PER_BATCH_MS = 6.33
ISSUER_PER_TICKET_MS = 0.318


def vcpu_share(memory_mb: int) -> float:
    """The share of one vCPU a function of `memory_mb` gets (at most one: see the docstring)."""
    return min(1.0, memory_mb / LAMBDA_MB_PER_VCPU)


def handler_seconds(cpu_ms: float, memory_mb: int) -> float:
    """Seconds a handler needing `cpu_ms` of one core takes on a function of `memory_mb`."""
    return cpu_ms / 1000 / vcpu_share(memory_mb)
