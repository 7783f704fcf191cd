"""The system tools some tests drive (Chromium, chromedriver, redis-server, ...), found on PATH.

A test that needs a missing tool is skipped on a developer's machine with a line saying what to
install, and FAILS in CI (`CI=true`): CI installs every tool first (`make test` runs
scripts/install_system_packages.sh), so a missing one there is a broken install step, never a reason
to pass without running. The tools and their Debian packages are listed once, in that script.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

INSTALL_SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "install_system_packages.sh"


def packages() -> dict[str, str]:
    """Each tool's command and the Debian package that installs it, from the install script."""
    match = re.search(r'^TOOLS="\n(.*?)^"', INSTALL_SCRIPT.read_text(), re.MULTILINE | re.DOTALL)
    assert match is not None, f"{INSTALL_SCRIPT.name} has no TOOLS list"
    return dict(line.split() for line in match.group(1).splitlines() if line.strip())


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")


def require_tools(*commands: str) -> dict[str, str]:
    """The path of each command; skips the calling test when one is missing (fails it in CI)."""
    known = packages()
    unknown = [c for c in commands if c not in known]
    assert not unknown, f"add {unknown} to TOOLS in {INSTALL_SCRIPT.name}"
    found = {c: shutil.which(c) for c in commands}
    missing = [c for c, path in found.items() if path is None]
    if missing:
        wanted = sorted({known[c] for c in missing})
        message = (
            f"{', '.join(missing)} not installed: run `make system-packages` as root"
            f" (apt-get install -y {' '.join(wanted)})"
        )
        if in_ci():
            pytest.fail(f"CI must run every test: {message}", pytrace=False)
        pytest.skip(message)
    return {c: path for c, path in found.items() if path is not None}
