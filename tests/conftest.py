"""Session-wide: the test depth (tests/depth.py) is checked once and shown in pytest's header."""

from __future__ import annotations

import pytest

from tests.depth import DEPTH_ENV, depth


def pytest_configure(config: pytest.Config) -> None:
    try:
        depth()
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from exc


def pytest_report_header(config: pytest.Config) -> str:
    if depth() == "deep":
        return f"test depth: deep ({DEPTH_ENV}=deep): the bounded tests run at their full size"
    return f"test depth: ci: the bounded tests run smaller ({DEPTH_ENV}=deep or `make test-deep` for full)"
