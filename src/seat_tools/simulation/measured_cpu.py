"""CPU the functions' handlers spend per invocation, measured; generated, do not edit.

Regenerate with `python scripts/measure_function_cpu.py --write`
(how it measures: seat_tools/bench/function_cpu.py). It ran the real reserve and ticket-issuer
handlers, their HTTP answered in process with valid DynamoDB and SNS responses, 40 rounds
per batch size, and fitted each kind's median CPU per invocation as
`invocation_ms + per_message_ms x messages`.

Measured on: AMD EPYC, 2 cores, x86_64, Python 3.11.7, botocore 1.43.127; load average 1.06, 2.28,
2.57 at the start; 2026-11-29.

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
    "reserve": HandlerCpu(invocation_ms=2.02, per_message_ms=0.419),
    "hold": HandlerCpu(invocation_ms=2.01, per_message_ms=0.438),
    "limit": HandlerCpu(invocation_ms=1.76, per_message_ms=0.513),
    "sold-out": HandlerCpu(invocation_ms=7.83, per_message_ms=0.877),
    "mapped": HandlerCpu(invocation_ms=5.18, per_message_ms=0.681),
}
# The ticket issuer: one round's fixed CPU (its index and outbox queries), each numbering batch
# (its transaction, TICKETED publications and outbox update) and each ticket numbered.
ISSUER_ROUND_MS = 62.53
ISSUER_PER_BATCH_MS = 2.15
ISSUER_PER_TICKET_MS = 0.423


def vcpu_share(memory_mb: int) -> float:
    """The share of one vCPU a function of `memory_mb` gets (at most one: see the docstring)."""
    return min(1.0, memory_mb / LAMBDA_MB_PER_VCPU)


def handler_seconds(cpu_ms: float, memory_mb: int) -> float:
    """Seconds a handler needing `cpu_ms` of one core takes on a function of `memory_mb`."""
    return cpu_ms / 1000 / vcpu_share(memory_mb)
