"""The docs and the README describe the product as it is, not how it got there.

History (what changed and when, which attempt failed, who worked on it) belongs in commit messages
and CHANGELOG.md. A commit hash, a branch, an issue number, a date of a change, "until this change"
or the load of the machine a figure was taken on means nothing to a reader of the docs, and goes
stale the day it is written. This test finds them in README.md and every page under docs/.

Generated measurement records (a page that says it is written by a command: the benchmark report,
the generated figures) may name the date and commit of their run, as a measurement should; the
other patterns apply to them too. CHANGELOG.md is the project's history and is not checked.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
THIS_FILE = Path(__file__).resolve().relative_to(REPO).as_posix()

# (what it is, pattern). Each is tried on a line with its links to other sites removed (their text
# names the source: "SAM #1640", "AWS News Blog, 2025-11-14") and its URLs removed.
HISTORY: list[tuple[str, re.Pattern[str]]] = [
    (
        "a commit hash",
        re.compile(r"(?<![\w-])(?=[0-9a-f]*[0-9])(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}(?![\w-])"),
    ),
    ("a commit", re.compile(r"\b(at|in|since|before|after) commit\b|\bcommits? [0-9a-f]{7}", re.I)),
    ("an issue number", re.compile(r"\b(issues?|PR|pull request)\s*#?\d+", re.I)),
    ("an issue reference", re.compile(r"(?<![\w/&])#\d+\b")),
    ("a branch", re.compile(r"\bbranch(es)?\b", re.I)),
    (
        "the state of main",
        re.compile(r"\b(on|of|at) main\b|\bmain at\b|\bmerge of\b|\bmerged (into|onto)\b", re.I),
    ),
    (
        "a session",
        re.compile(r"(?<!boto3 )(?<!botocore )(?<!pytest )(?<!test )(?<!AWS )\bsessions?\b", re.I),
    ),
    ("a helper", re.compile(r"\bhelpers? session|\bthe helpers?\b|\bthe lead\b", re.I)),
    (
        "a change's history",
        re.compile(
            r"\b(until|since|before|after) (this|that|the) change\b|\bthis change\b|\bas before\b"
            r"|\bbefore/after\b|\bbefore and after the (fix|change)|\bfixed since\b|\b(earlier|previous) versions?\b"
            r"|\(was\b|\bwas \$?\d[\d,.]*\)",
            re.I,
        ),
    ),
    ("the machine's load", re.compile(r"\bload average\b|\bshared with (other|another)\b|\buptime\b", re.I)),
    ("git history", re.compile(r"\bgit (show|log|blame)\b|\b(git|file's) history\b", re.I)),
    ("a date", re.compile(r"(?<![\w-])20\d\d-[01]\d-[0-3]\d(?![\w:-])")),
]
# A measurement record may say when and on which commit it was taken.
RECORD_MAY_NAME = {"a commit hash", "a commit", "a date"}
GENERATED_RECORD = re.compile(r"^(Written|Generated) by .*do not edit by hand", re.M)
EXTERNAL_LINK = re.compile(r"\[[^\]]*\]\((https?|mailto):[^)]*\)")
URL = re.compile(r"<?(https?|mailto):[^\s)>]+>?")


def findings(text: str, *, record: bool = False) -> list[tuple[int, str, str]]:
    """(line number, what, line) of every piece of history in `text`."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        bare = URL.sub("", EXTERNAL_LINK.sub("", line))
        for what, pattern in HISTORY:
            if record and what in RECORD_MAY_NAME:
                continue
            if pattern.search(bare):
                found.append((number, what, line.strip()))
    return found


def doc_files() -> list[Path]:
    return [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]


@pytest.mark.parametrize(
    "line",
    [
        "measured on main at commit 3b21579",
        "(`git show 48265dc:docs/guides/tickets.md`)",
        "main at the end of issue 13",
        "the fixes of issue 12 item 4",
        "see #12 for the discussion",
        "### Repeated customers (branch `repeats`)",
        "on the branch that added sharded pools",
        "the 2 cores were shared with other sessions",
        "a helper session ran at the same time",
        "until this change the model started every container at once",
        "a sale of 25 s (was 1,341 s)",
        "run on 2026-11-26 (seed 1)",
        "load average 3-11",
        "the rows before it are in git history",
        "Figures before main 3936af4 are in this file's history",
        "after the merge of `orderroute`",
        "the same figures as before",
    ],
)
def test_history_is_found(line: str) -> None:
    assert findings(line), line


@pytest.mark.parametrize(
    "line",
    [
        'reason "2 seat(s) held until 2026-05-01T10:10:00Z"',
        "--starts-at 2026-05-01T10:00:00+02:00",
        "message_id 78c9cac2-9375-43c5-8ae7-f7564c4bcc2a, reservation r-c5930170412b",
        "SAM's alias misses it ([SAM #1640](https://github.com/aws/serverless-application-model/issues/1640))",
        "[AWS News Blog, 2025-11-14](https://aws.amazon.com/blogs/aws/lambda-provisioned-mode/)",
        "checkov's check (bridgecrewio/checkov#5869)",
        "faults are botocore hooks on the function's botocore session",
        "1,000,000 requests, 64 containers, $2.10 per million",
        "a class split over K shard items; 100 actions per transaction",
        '{"current": "2026-11", "keys": {"2026-10": "..."}}',
        "the key rotation: `seats tokens keygen --key-id 2026-12`",
    ],
)
def test_product_descriptions_pass(line: str) -> None:
    assert findings(line) == [], findings(line)


def test_a_measurement_record_may_name_its_run() -> None:
    text = "Written by `seats bench`; do not edit by hand.\n- Run: 2026-11-26 07:35 UTC, main at 3b21579\n"
    assert GENERATED_RECORD.search(text)
    assert [what for _, what, _ in findings(text, record=True)] == ["the state of main"]


@pytest.mark.parametrize("path", doc_files(), ids=lambda p: p.relative_to(REPO).as_posix())
def test_the_docs_tell_no_history(path: Path) -> None:
    text = path.read_text()
    found = findings(text, record=bool(GENERATED_RECORD.search(text)))
    assert not found, f"{path.relative_to(REPO)} tells history (it goes to CHANGELOG.md):\n" + "\n".join(
        f"  line {n}: {what}: {line[:160]}" for n, what, line in found
    )


def test_the_readmes_links_into_the_repository_resolve() -> None:
    """README.md is read on the repository's page, outside the docs site's strict build."""
    text = (REPO / "README.md").read_text()
    targets = re.findall(r"\]\((?!https?:|mailto:|#)([^)#\s]+)(?:#[^)\s]*)?\)", text)
    assert targets
    missing = [target for target in targets if not (REPO / target).exists()]
    assert not missing, missing


DOCS_PATH = re.compile(r"(?<![\w/.-])docs/[\w/.-]+?\.(?:md|png)(?![\w-])")


def test_every_docs_page_the_repository_names_exists() -> None:
    """Help texts, docstrings, comments and tests name docs pages by path; a moved page leaves them
    pointing nowhere. (CHANGELOG.md may name pages as they were.)"""
    result = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True, timeout=60)
    missing = []
    for name in result.stdout.decode().split("\0"):
        # test_no_outside_paths.py names a made-up page in its own test data.
        if not name or name in ("CHANGELOG.md", THIS_FILE, "tests/unit/test_no_outside_paths.py"):
            continue
        data = (REPO / name).read_bytes()
        if b"\0" in data:
            continue
        for number, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
            missing += [
                f"{name}:{number}: {path}" for path in DOCS_PATH.findall(line) if not (REPO / path).exists()
            ]
    assert not missing, "\n".join(missing)


CODE_PATH = re.compile(r"`((?:[\w.-]+/)+[\w.-]+\.(?:py|yaml|yml|json|csv|sh|toml|js|html))(?:::[^`]*)?`")
# Where a path in the docs may be relative to: the checkout, src/, or one of the two packages.
CODE_ROOTS = ("", "src/", "src/seat_inventory/", "src/seat_tools/")


def test_every_file_the_docs_name_exists() -> None:
    """A page that names `logic/shards.py` or `scripts/gen_reference.py` sends its reader there;
    when a file moves or goes, the page must follow."""
    missing, named = [], 0
    for path in doc_files():
        for number, line in enumerate(path.read_text().splitlines(), 1):
            for name in CODE_PATH.findall(line):
                first = name.split("/", 1)[0]
                if not any((REPO / root / first).is_dir() for root in CODE_ROOTS):
                    continue  # another project's file (botocore's `retries/standard.py`)
                named += 1
                if not any((REPO / root / name).exists() for root in CODE_ROOTS):
                    missing.append(f"{path.relative_to(REPO)}:{number}: {name}")
    assert named > 50  # the pattern finds the paths the pages name
    assert not missing, "the docs name files that do not exist (update the page):\n" + "\n".join(missing)


@pytest.mark.parametrize(("name", "budget"), [("README.md", 200), ("template.yaml", 1300)])
def test_the_readme_and_the_template_keep_to_their_length(name: str, budget: int) -> None:
    """A reader's budget: the README read in minutes (what it is, two commands, a first sale,
    deploy, the figures, links), the template reviewed in ten (what repeats is in Globals, loops
    and included files)."""
    lines = (REPO / name).read_text(encoding="utf-8").count("\n")
    assert lines <= budget, f"{name} has {lines} lines; keep it to {budget}"
