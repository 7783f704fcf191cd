"""`seats checkin demo` on the session's local stack: every check of the gate's end-to-end run holds
(docs/guides/checkin.md, "A gate on the local stack")."""

from __future__ import annotations

import pytest

from seat_tools.gate_demo import GateDemoOptions, gate_checks_passed, run_gate_demo
from seat_tools.local.stack import LocalStack

pytestmark = pytest.mark.local_stack


def test_the_gate_demo_s_checks_hold(local_stack: LocalStack) -> None:
    summary = run_gate_demo(GateDemoOptions(reservations=8, gates=4, rescans=4, seed=3), local_stack)
    assert gate_checks_passed(summary), summary["checks"]
    assert summary["admitted"] == summary["tickets"] >= 8
    assert summary["offline_conflict_gates"] == ["east", "west"]
