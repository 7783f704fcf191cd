"""The service package never imports the tools: what ships in the functions stands on its own."""

from __future__ import annotations

import ast
from pathlib import Path

SOURCE = Path(__file__).resolve().parents[2] / "src"


def imported_packages(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def test_no_service_module_imports_the_tools() -> None:
    service = sorted((SOURCE / "seat_inventory").rglob("*.py"))
    assert len(service) > 20
    offenders = [str(p.relative_to(SOURCE)) for p in service if "seat_tools" in imported_packages(p)]
    assert offenders == []


def test_the_tools_import_the_service() -> None:
    tools = sorted((SOURCE / "seat_tools").rglob("*.py"))
    assert any("seat_inventory" in imported_packages(p) for p in tools)
