"""No tracked file names a path outside the repository: every source a reader needs is in the checkout.

A path on the machine a doc or a figure was made on (a home directory, a scratch directory, the
workspace the project was written in, a `shared/` folder beside the checkout) means nothing to a
reader of a fresh clone: the facts go into docs/reference/sources.md with their public links, and commands
use paths relative to the checkout or a scratch directory they create (`mktemp -d`).
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from seat_tools.bench.profiling import SOURCE_ROOT, relative_to_sources
from seat_tools.cli.bench_commands import shown_path

REPO = Path(__file__).resolve().parents[2]
# Absolute paths under the roots where a machine keeps its users' and scratch files, and a
# `shared/` folder (the workspace's, beside the repository). System paths (/bin/bash, /usr/bin)
# are not sources and stay allowed. The lookbehind keeps URLs and relative paths (a/tmp/b) out.
OUTSIDE = re.compile(r"(?<![\w.~$})/:-])/(?:work|tmp|root|home|Users|mnt|var/tmp)/|(?<![\w-])shared/")
THIS_FILE = Path(__file__).resolve().relative_to(REPO).as_posix()


def tracked_files() -> list[str]:
    result = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=False, timeout=60)
    if result.returncode != 0:
        pytest.fail(f"git ls-files failed in {REPO.name}: {result.stderr.decode().strip()}")
    return [name for name in result.stdout.decode().split("\0") if name]


def outside_paths(text: str) -> list[tuple[int, str]]:
    """(line number, line) of each line that names a path outside the repository."""
    return [(n, line.strip()) for n, line in enumerate(text.splitlines(), 1) if OUTSIDE.search(line)]


@pytest.mark.parametrize(
    "line",
    [
        "see `/work/shared/AWS-FACTS.md`",
        "Profile at /work/main/src/seat_tools/bench/profiling.py:66",
        "seats bench --figures-json /tmp/bench-final.json",
        'CHECKOV_VENV ?= "/tmp/seat-inventory-checkov"',
        "open(/root/notes.txt)",
        "(/home/dev/project/README.md)",
        "../shared/STYLE.md",
    ],
)
def test_a_path_outside_the_repository_is_found(line: str) -> None:
    assert outside_paths(line) == [(1, line)]


@pytest.mark.parametrize(
    "line",
    [
        "https://docs.aws.amazon.com/lambda/latest/dg/with-sqs.html",
        "SHELL := /bin/bash",
        "src/seat_tools/local/tmp/file.py",
        "CHECKOV_VENV ?= $(HOME)/.cache/seat-inventory/checkov",
        "~/.cache/seat-inventory/checkov",
        'before=$(mktemp -d) && git worktree add "$before/tree"',
        "a shared item, shared-nothing",
    ],
)
def test_paths_inside_the_repository_urls_and_system_tools_pass(line: str) -> None:
    assert outside_paths(line) == []


def test_no_tracked_file_names_a_path_outside_the_repository() -> None:
    found = []
    for name in tracked_files():
        if name == THIS_FILE:
            continue
        data = (REPO / name).read_bytes()
        if b"\0" in data:  # images and other binaries
            continue
        found += [f"{name}:{n}: {line}" for n, line in outside_paths(data.decode("utf-8", "replace"))]
    message = "paths outside the repository (cite docs/reference/sources.md instead):\n"
    assert not found, message + "\n".join(found)


def test_the_bench_report_shows_an_absolute_path_argument_by_its_name() -> None:
    command = [shown_path(a) for a in ["--figures-json", "/scratch/f.json", "--report=/x/b.md", "docs/b.md"]]
    assert command == ["--figures-json", "f.json", "--report=b.md", "docs/b.md"]


def test_the_handler_profile_names_source_files_from_src() -> None:
    line = f"Profile at {SOURCE_ROOT}/seat_tools/bench/profiling.py:66"
    assert relative_to_sources(line) == "Profile at seat_tools/bench/profiling.py:66"
    assert (SOURCE_ROOT / "seat_tools" / "bench" / "profiling.py").is_file()
