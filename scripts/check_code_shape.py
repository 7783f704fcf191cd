"""Checks the shape of the service's code (src/seat_inventory), so that it stays readable:

- no function's cyclomatic complexity (radon cc) over 15;
- no function over 60 lines, no class over 300;
- a `ReservationOutcome` is built only where `OUTCOME_BUILDERS` says: the answers to
  reservations and their changes in one module (logic/answers.py), the gate's own outcomes in
  the gate's modules, and stored answers read back in the table's layout (dal/items.py).

    python scripts/check_code_shape.py   # exit 1, naming each excess (`make lint`)

`tests/unit/test_code_shape.py` runs the same checks.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

from radon.complexity import cc_visit

REPO = Path(__file__).resolve().parents[1]
SERVICE = REPO / "src" / "seat_inventory"
MAX_COMPLEXITY = 15
MAX_FUNCTION_LINES = 60
MAX_CLASS_LINES = 300
OUTCOME_BUILDERS = {
    "logic/answers.py": "every answer to a reservation, an order or a change",
    "logic/checkin.py": "CHECKIN_CONFLICT",
    "logic/transfer_tickets.py": "TRANSFERRED",
    "dal/items.py": "a stored answer read back",
}


def _modules(root: Path) -> Iterator[tuple[str, str]]:
    for path in sorted(root.rglob("*.py")):
        yield path.relative_to(root).as_posix(), path.read_text(encoding="utf-8")


def complexity_excesses(root: Path = SERVICE) -> list[str]:
    found = []
    for name, text in _modules(root):
        for block in cc_visit(text):
            if block.complexity > MAX_COMPLEXITY:
                found.append(f"{name}:{block.lineno} {block.name}: complexity {block.complexity}")
    return found


def length_excesses(root: Path = SERVICE) -> list[str]:
    found = []
    for name, text in _modules(root):
        for node in ast.walk(ast.parse(text)):
            lines = (node.end_lineno or node.lineno) - node.lineno + 1 if hasattr(node, "lineno") else 0
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and lines > MAX_FUNCTION_LINES:
                found.append(f"{name}:{node.lineno} {node.name}: {lines} lines (function)")
            if isinstance(node, ast.ClassDef) and lines > MAX_CLASS_LINES:
                found.append(f"{name}:{node.lineno} {node.name}: {lines} lines (class)")
    return found


def outcome_builders(root: Path = SERVICE) -> list[str]:
    found = []
    for name, text in _modules(root):
        for node in ast.walk(ast.parse(text)):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "ReservationOutcome"
                and name not in OUTCOME_BUILDERS
            ):
                found.append(f"{name}:{node.lineno} builds a ReservationOutcome (logic/answers.py does)")
    return found


def main() -> int:
    problems = complexity_excesses() + length_excesses() + outcome_builders()
    for problem in problems:
        print(f"src/seat_inventory/{problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
