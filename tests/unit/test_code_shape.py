"""The service's code keeps its shape (scripts/check_code_shape.py, run by `make lint` too)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "check_code_shape.py"


def _check() -> ModuleType:
    spec = importlib.util.spec_from_file_location("check_code_shape", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_no_function_of_the_service_is_more_complex_than_15() -> None:
    assert _check().complexity_excesses() == []


def test_no_function_of_the_service_is_over_60_lines_and_no_class_over_300() -> None:
    assert _check().length_excesses() == []


def test_reservation_outcomes_are_built_in_the_answers_module_only() -> None:
    assert _check().outcome_builders() == []


def test_the_checks_find_what_they_look_for(tmp_path: Path) -> None:
    (tmp_path / "logic").mkdir()
    branches = "\n".join(f"    if x == {n}:\n        return {n}" for n in range(16))
    long_body = "\n".join(f"    y{n} = {n}" for n in range(60))
    (tmp_path / "logic" / "bad.py").write_text(
        f"def branchy(x):\n{branches}\n\n\ndef long():\n{long_body}\n    return 0\n\n\n"
        "def answer():\n    return ReservationOutcome(reservation_id='r', outcome='SOLD_OUT', reason='')\n"
    )
    check = _check()
    assert [p.split(" ")[1] for p in check.complexity_excesses(tmp_path)] == ["branchy:"]
    assert check.length_excesses(tmp_path) == ["logic/bad.py:36 long: 62 lines (function)"]
    assert check.outcome_builders(tmp_path) == [
        "logic/bad.py:101 builds a ReservationOutcome (logic/answers.py does)"
    ]
