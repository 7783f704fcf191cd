"""A test that needs a missing system tool is skipped on a developer's machine and fails in CI."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.system_tools import INSTALL_SCRIPT, packages, require_tools


@pytest.fixture
def empty_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("PATH", str(tmp_path))
    return tmp_path


def test_the_install_script_lists_the_browser_its_driver_and_redis() -> None:
    assert packages() == {
        "chromium": "chromium",
        "chromedriver": "chromium-driver",
        "redis-server": "redis-server",
        "java": "openjdk-17-jre-headless",
        "npm": "npm",
    }


def test_a_missing_tool_skips_with_what_to_install_outside_ci(
    empty_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception) as skipped:
        require_tools("chromium", "chromedriver")
    assert str(skipped.value) == (
        "chromium, chromedriver not installed: run `make system-packages` as root"
        " (apt-get install -y chromium chromium-driver)"
    )


def test_a_missing_tool_fails_in_ci(empty_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception) as failed:
        require_tools("redis-server")
    assert str(failed.value) == (
        "CI must run every test: redis-server not installed: run `make system-packages` as root"
        " (apt-get install -y redis-server)"
    )


def test_a_present_tool_is_found_by_its_path(empty_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    npm = empty_path / "npm"
    npm.write_text("#!/bin/sh\n")
    npm.chmod(0o755)
    assert require_tools("npm") == {"npm": str(npm)}


def test_a_tool_the_script_does_not_install_is_refused() -> None:
    with pytest.raises(AssertionError, match="add \\['docker'\\] to TOOLS"):
        require_tools("docker")


def test_the_install_script_names_what_to_install_when_it_cannot(empty_path: Path) -> None:
    # Given no tool and no apt-get on PATH: the script cannot install, and says what to install
    result = subprocess.run(
        ["/bin/bash", str(INSTALL_SCRIPT)], capture_output=True, text=True, check=False, timeout=30
    )
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        "error: the tests need system packages that are not installed: run (as root) apt-get install -y"
        " chromium chromium-driver redis-server openjdk-17-jre-headless npm"
    ]
