"""Session-wide: the test depth (tests/depth.py) is checked once and shown in pytest's header, and
the suite's split over pytest-xdist's processes (`make test` runs `-n 2 --dist loadgroup`).

The split: every test is a unit of work of its own, sent to whichever process is free, except the
tests of a module that defines a module-scoped fixture (a `sam build`, a stack on moto's
CloudFormation, a bench run), which run together in one process so that the fixture is set up
once. The local tier's stack is session-scoped: each process starts its own, on free ports. The
longest tests (the local tier, then the integration tier) are handed out first, so that the
short ones fill the end of the run.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from botocore.loaders import Loader
from xdist.scheduler import LoadScopeScheduling

from tests.depth import DEPTH_ENV, depth

ROOT = Path(__file__).resolve().parents[1]
# The order the tiers are handed out in under xdist: the longest tests first.
TIER_ORDER = ("tests/local/", "tests/integration/", "tests/unit/")
MODULE_FIXTURE = re.compile(r"""@pytest\.fixture\([^)]*\bscope\s*=\s*["'](?:module|class|package)["']""")


# botocore reads its JSON models (each service's API, endpoints, partitions) once per Loader, and
# each new boto3 Session has a Loader of its own: tests that build sessions and clients afresh
# would parse the same files again every time. The test processes' Loaders share one cache of the
# parsed files (botocore treats them as read-only: a session's clients already share them). The
# processes the tests start (the local runner's workers, `seats` commands) load theirs as usual.
_PARSED_MODELS: dict[Any, Any] = {}
_loader_init = Loader.__init__


def _loader_with_shared_cache(self: Loader, *args: Any, **kwargs: Any) -> None:
    _loader_init(self, *args, **kwargs)
    self._cache = _PARSED_MODELS


Loader.__init__ = _loader_with_shared_cache  # type: ignore[method-assign]


def pytest_configure(config: pytest.Config) -> None:
    try:
        depth()
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from exc


def pytest_report_header(config: pytest.Config) -> str:
    if depth() == "deep":
        return f"test depth: deep ({DEPTH_ENV}=deep): the bounded tests run at their full size"
    return f"test depth: ci: the bounded tests run smaller ({DEPTH_ENV}=deep or `make test-deep` for full)"


@cache
def defines_a_module_fixture(path: str) -> bool:
    """Whether the test module at `path` (relative to the repository) defines a fixture set up once
    for the module (or a class, or a package)."""
    try:
        return bool(MODULE_FIXTURE.search((ROOT / path).read_text()))
    except OSError:
        return False


class ModuleFixtureScheduling(LoadScopeScheduling):
    """xdist's scope scheduling with a unit of work per test, or per module for a module that
    defines a module-scoped fixture. (xdist's own `loadgroup` reads `xdist_group` marks through
    test ids that pytest 9.2 no longer lets a plugin change: it would split every module.)"""

    def _split_scope(self, nodeid: str) -> str:
        path = nodeid.split("::", 1)[0]
        return path if defines_a_module_fixture(path) else nodeid


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> LoadScopeScheduling | None:
    if config.getvalue("dist") == "loadgroup":
        return ModuleFixtureScheduling(config, log)
    return None


def tier_rank(item: pytest.Item) -> int:
    return next(
        (rank for rank, tier in enumerate(TIER_ORDER) if item.nodeid.startswith(tier)), len(TIER_ORDER)
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """In xdist's processes (`--dist loadgroup`), the tiers in TIER_ORDER; each process collects the
    same order, which the scheduler hands out (modules with a module fixture first, largest first)."""
    if getattr(config.option, "loadgroup", False):
        items.sort(key=tier_rank)
