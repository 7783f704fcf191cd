"""Run the published figures over several seeds; write the figures file and every page's tables.

    python scripts/make_figures.py [--only NAME,...] [--seeds 5] [--jobs 2]   # `make figures [ONLY=...]`
    python scripts/make_figures.py --only NAME --seeds 3 --add-seeds   # seeds after the recorded ones
    python scripts/make_figures.py --render    # only rewrite the pages from docs/reference/figures.json
    python scripts/make_figures.py --check     # exit 1 when a page disagrees with the file

Each figure of `seat_tools.published_figures.FIGURES` is its `seats simulate` command with
`--seed 1` .. `--seed N --output json`, `--jobs` seeds at a time, each in its own process at
low priority (`nice`). The runs of the figures asked for replace theirs in
docs/reference/figures.json (the others are kept as they are); then docs/reference/figures.md and
every generated block of README.md and the docs (`<!-- figures:NAME,... -->`) are rewritten from
the file. The date and commit recorded are the run's (a commit with uncommitted changes in the
tree is marked `+changes`); with `--add-seeds` a figure keeps its recorded runs, runs the next
seeds, and names every commit its runs came from.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from seat_tools.published_figures import (
    BY_NAME,
    DEFAULT_SEEDS,
    FIGURES,
    PAGE,
    REPO,
    RESULTS,
    Figure,
    metrics_of,
    page,
    pages_with_blocks,
    render_blocks,
    stray_lines,
    summary,
)


def seats_command() -> list[str]:
    """The `seats` of this environment (beside its Python), else the one on PATH."""
    beside = Path(sys.executable).with_name("seats")
    if beside.exists():
        return [str(beside)]
    found = shutil.which("seats")
    if found is None:
        raise SystemExit("make_figures: no `seats` command: run `make install` first")
    return [found]


def run_seed(figure: Figure, seed: int, *, nice: bool = True) -> dict[str, Any]:
    """One seed's run: the metrics the tables show, and its wall-clock seconds."""
    command = [*seats_command(), "simulate", *figure.args, "--seed", str(seed), "--output", "json"]
    if nice and shutil.which("nice"):
        command = ["nice", "-n", "10", *command]
    started = time.monotonic()
    result = subprocess.run(command, capture_output=True, text=True, cwd=REPO, check=False)
    if result.returncode != 0:
        raise RuntimeError(
            f"{figure.name} seed {seed}: `{' '.join(command)}` exited {result.returncode}:"
            f" {result.stderr.strip()[-2000:]}"
        )
    metrics = metrics_of(figure, json.loads(result.stdout))
    return {"seed": seed, **metrics, "wall_s": round(time.monotonic() - started, 1)}


def run_figure(
    figure: Figure,
    seeds: int,
    jobs: int,
    *,
    progress: Callable[[str], None] = lambda _line: None,
    nice: bool = True,
    first_seed: int = 1,
) -> list[dict[str, Any]]:
    """Seeds `first_seed` to `first_seed + seeds - 1` of `figure`, `jobs` at a time, in seed order."""

    def one(seed: int) -> dict[str, Any]:
        run = run_seed(figure, seed, nice=nice)
        progress(f"{figure.name} seed {seed}: {run['rate']:,.0f} {figure.rate_unit} in {run['wall_s']:.0f} s")
        return run

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        return list(pool.map(one, range(first_seed, first_seed + seeds)))


def commit() -> str:
    """The checkout's commit, marked when the tree has uncommitted changes other than the
    files this script writes (a run with `--add-seeds` starts from an earlier run's output)."""

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", *args], capture_output=True, text=True, cwd=REPO, check=True
        ).stdout.strip()

    try:
        head = git("rev-parse", "--short", "HEAD")
        changed = git(
            "status",
            "--porcelain",
            "--untracked-files=no",
            "--",
            ".",
            *(f":!{path.relative_to(REPO)}" for path in [RESULTS, PAGE, *pages_with_blocks()]),
        )
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+changes" if changed else "")


def seen_commits(recorded: Mapping[str, Any] | None, at: str) -> str:
    """The commit(s) a figure's runs come from: the recorded runs' and this run's, when they differ."""
    earlier = [c for c in str((recorded or {}).get("commit", "")).split(", ") if c]
    return ", ".join(dict.fromkeys([*earlier, at]))


def load_results(path: Path = RESULTS) -> dict[str, dict[str, Any]]:
    if not path.exists():
        return {}
    return {r["name"]: r for r in json.loads(path.read_text())["figures"]}


def write_results(results: Mapping[str, Mapping[str, Any]], path: Path = RESULTS) -> None:
    ordered = [results[f.name] for f in FIGURES if f.name in results]
    path.write_text(json.dumps({"figures": ordered}, indent=2) + "\n")


def rendered_pages(results: Mapping[str, Mapping[str, Any]]) -> dict[Path, str]:
    """Every generated page's text as the results render it: figures.md and each page with blocks."""
    pages = {PAGE: page(results)}
    for path in pages_with_blocks():
        pages[path] = render_blocks(path.read_text(), results)
    return pages


def problems(results: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Each page that disagrees with the results, and each figure copied outside a block."""
    found = []
    for path, text in rendered_pages(results).items():
        if not path.exists() or path.read_text() != text:
            found.append(
                f"{path.relative_to(REPO)} is not as figures.json renders it (make figures --render)"
            )
    for path in [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]:
        if path == PAGE:  # the generated page itself
            continue
        for number, line in stray_lines(path.read_text()):
            found.append(
                f"{path.relative_to(REPO)}:{number}: a figure's command outside a generated block: {line}"
            )
    return found


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default="", help="comma-separated figure names (default: every one)")
    parser.add_argument(
        "--seeds", type=int, default=DEFAULT_SEEDS, help="seeds per figure (at least 5 to publish)"
    )
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2, help="seeds run at once")
    parser.add_argument(
        "--add-seeds",
        action="store_true",
        help="keep each figure's recorded runs and run --seeds more after its last seed",
    )
    parser.add_argument("--render", action="store_true", help="only rewrite the pages from the file")
    parser.add_argument("--check", action="store_true", help="exit 1 when a page disagrees with the file")
    args = parser.parse_args(argv)
    results = load_results()
    if args.check:
        found = problems(results)
        print("\n".join(found) if found else "figures: every page agrees with docs/reference/figures.json")
        return 1 if found else 0
    if not args.render:
        names = [n for n in args.only.split(",") if n] or [f.name for f in FIGURES]
        unknown = [n for n in names if n not in BY_NAME]
        if unknown:
            parser.error(f"unknown figure(s) {', '.join(unknown)}: one of {', '.join(BY_NAME)}")
        if args.seeds < 1:
            parser.error("--seeds must be at least 1")
        date = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d")
        at = commit()
        for name in names:
            figure = BY_NAME[name]
            kept = results.get(name, {}).get("runs", []) if args.add_seeds else []
            first = max((r["seed"] for r in kept), default=0) + 1
            last = first + args.seeds - 1
            print(f"{name}: {figure.command}, seeds {first}-{last}, {args.jobs} at a time", file=sys.stderr)
            runs = run_figure(
                figure,
                args.seeds,
                args.jobs,
                progress=lambda line: print(line, file=sys.stderr),
                first_seed=first,
            )
            results[name] = summary(
                figure,
                [*kept, *runs],
                date=date,
                commit=seen_commits(results.get(name) if kept else None, at),
            )
            write_results(results)  # each figure kept as soon as it is done
    for path, text in rendered_pages(results).items():
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
            print(f"wrote {path.relative_to(REPO)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
