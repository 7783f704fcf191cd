"""Size and import time (the package's share of a cold start) of built function packages.

    python scripts/function_package_report.py [--rounds N] DIR [DIR ...]

DIR is a function's build output (e.g. .aws-sam/build/ReserveSeatsFunction). For each: the files'
bytes, the zip `sam deploy` would upload (deflate, level 9 here), and the median over N rounds of
the time a fresh interpreter takes to import both handlers from it. The interpreter sees only the
package and the standard library (-I -S), and writes no bytecode (-B), as on Lambda, whose /var/task
is read-only: a module the package ships no .pyc for is compiled again at every cold start. The
packages alternate round by round, so a busy moment of the machine hits each alike. What it does
not measure: Lambda's own init (the runtime, downloading and unpacking the package).

The last column is what a new environment of the reserve function runs before its first message
is handled: its handler's import (Lambda's init phase), then what its first invocation does first,
reading the settings and building the DynamoDB and SNS clients (`wiring.build_adapters`). The
settings are made-up names (building a client calls no AWS service).
"""

from __future__ import annotations

import argparse
import io
import os
import statistics
import subprocess
import sys
import zipfile
from pathlib import Path

IMPORT = (
    "import sys, time; sys.path.insert(0, {path!r}); t = time.perf_counter(); "
    "import seat_inventory.handlers.reserve_seats, seat_inventory.handlers.sweep_holds; "
    "print(time.perf_counter() - t)"
)

RESERVE_FIRST_INVOCATION = (
    "import os, sys, time; sys.path.insert(0, {path!r}); t = time.perf_counter(); "
    "from seat_inventory.handlers import reserve_seats; "
    "from seat_inventory.settings import Settings; "
    "reserve_seats.build_adapters(Settings.from_env(os.environ)); "
    "print(time.perf_counter() - t)"
)
# The variables `Settings.from_env` requires, and the region Lambda sets.
FUNCTION_ENVIRONMENT = {
    "TABLE_NAME": "seat-inventory",
    "OUTCOMES_TOPIC_ARN": "arn:aws:sns:us-east-1:123456789012:seat-inventory-outcomes",
    "AWS_REGION": "us-east-1",
    "AWS_DEFAULT_REGION": "us-east-1",
}


def package_bytes(directory: Path) -> tuple[int, int]:
    files = sorted(p for p in directory.rglob("*") if p.is_file())
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        for path in files:
            archive.write(path, path.relative_to(directory))
    return sum(p.stat().st_size for p in files), len(buffer.getvalue())


def import_seconds(directory: Path, statement: str = IMPORT) -> float:
    environment = {
        "PATH": os.environ.get("PATH", ""),
        "POWERTOOLS_TRACE_DISABLED": "true",
        **FUNCTION_ENVIRONMENT,
    }
    result = subprocess.run(
        [sys.executable, "-I", "-S", "-B", "-c", statement.format(path=str(directory))],
        capture_output=True,
        text=True,
        check=True,
        env=environment,
    )
    return float(result.stdout.strip().splitlines()[-1])


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("directories", nargs="+", type=Path)
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args(argv)
    samples: dict[Path, list[float]] = {d: [] for d in args.directories}
    first: dict[Path, list[float]] = {d: [] for d in args.directories}
    for _ in range(args.rounds):
        for directory in args.directories:
            samples[directory].append(import_seconds(directory))
            first[directory].append(import_seconds(directory, RESERVE_FIRST_INVOCATION))
    header = f"import s (median of {args.rounds})"
    first_header = "reserve: import + clients s"
    print(f"{'package':<60} {'files MB':>9} {'zip MB':>7} {header:>24} {first_header:>28}")
    for directory, values in samples.items():
        raw, zipped = package_bytes(directory)
        median = statistics.median(values)
        first_median = statistics.median(first[directory])
        print(
            f"{directory!s:<60} {raw / 1e6:>9.1f} {zipped / 1e6:>7.1f} {median:>24.3f} {first_median:>28.3f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
