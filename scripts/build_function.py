"""Builds a function's deployment package with only what the functions import.

`sam build` runs it for each function (template.yaml: `BuildMethod: makefile`; the Makefile's
`build-<Function>` targets) with the directory to fill, and for a function that calls other AWS
services than the service's functions (the version publisher calls Lambda only), those services:

    python scripts/build_function.py ARTIFACTS_DIR [SERVICE ...]

1. The pinned runtime dependencies (src/requirements.txt, from the lock), as wheels for the
   functions' platform (Lambda, arm64, CPython 3.11), exactly the versions the tests ran with.
2. botocore's API models of the services the function calls only (DynamoDB, SNS, SSM, X-Ray;
   Lambda for the version publisher).
   botocore ships one for every AWS service (about 27 MB of its 29 MB); a client loads the
   model of its own service only.
3. The service package, `seat_inventory`, whole: it holds what runs in the functions and nothing
   else. The tools (`seats`, the local stack, the simulation, the bench) are the `seat_tools`
   package beside it, which imports the service and is never imported by it.
4. Every module compiled to bytecode. Lambda's /var/task is read-only, so Python cannot keep the
   .pyc files it makes: without them each cold start compiles every module it imports again.
   The .pyc files are "unchecked-hash" ones, used whatever the source files' timestamps (the zip
   and Lambda's unpacking do not keep them reliably); the build writes both at once. The build's
   Python must be 3.11, the runtime's (the bytecode format changes between minor versions).
"""

from __future__ import annotations

import compileall
import py_compile
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SOURCE = REPO / "src"
SERVICE_PACKAGE = "seat_inventory"
# template.yaml: Globals.Function.Runtime python3.11, Architectures [arm64]
PLATFORM = "manylinux2014_aarch64"
PYTHON_VERSION = "3.11"
# The AWS services the functions call: their clients (seat_inventory/wiring.py), and X-Ray, whose
# SDK builds an xray client for its sampling rules when the template's Tracing is Active; SSM for
# the admission keys (docs/guides/admission.md).
SERVICES = ("dynamodb", "sns", "ssm", "xray")
# What botocore reads besides the service models (endpoints, partitions, retry and default config).
BOTOCORE_DATA_FILES = ("endpoints.json", "partitions.json", "sdk-default-configuration.json", "_retry.json")


def install_dependencies(target: Path) -> None:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--no-deps",  # requirements.txt pins every package the functions need
            "--only-binary=:all:",
            "--platform",
            PLATFORM,
            "--implementation",
            "cp",
            "--python-version",
            PYTHON_VERSION,
            "--target",
            str(target),
            "--requirement",
            str(SOURCE / "requirements.txt"),
        ],
        check=True,
    )


def prune_botocore(target: Path, services: tuple[str, ...] = SERVICES) -> None:
    data = target / "botocore" / "data"
    for entry in data.iterdir():
        if entry.is_dir() and entry.name not in services:
            shutil.rmtree(entry)
        elif entry.is_file() and entry.name not in BOTOCORE_DATA_FILES:
            entry.unlink()
    missing = [name for name in (*services, *BOTOCORE_DATA_FILES) if not (data / name).exists()]
    if missing:
        raise SystemExit(f"botocore has no {', '.join(missing)}: update BOTOCORE_DATA_FILES or SERVICES")


def copy_function_code(target: Path) -> None:
    shutil.copytree(
        SOURCE / SERVICE_PACKAGE, target / SERVICE_PACKAGE, ignore=shutil.ignore_patterns("__pycache__")
    )


def compile_bytecode(target: Path) -> None:
    if sys.version_info[:2] != tuple(int(part) for part in PYTHON_VERSION.split(".")):
        raise SystemExit(f"build with Python {PYTHON_VERSION} (the runtime's), not {sys.version.split()[0]}")
    compiled = compileall.compile_dir(
        target, quiet=1, workers=0, invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH
    )
    if not compiled:
        raise SystemExit(f"compiling {target} failed")


def build(target: Path, services: tuple[str, ...] = SERVICES) -> None:
    target.mkdir(parents=True, exist_ok=True)
    install_dependencies(target)
    prune_botocore(target, services)
    for cache in target.rglob("__pycache__"):
        shutil.rmtree(cache)
    copy_function_code(target)
    compile_bytecode(target)


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: build_function.py ARTIFACTS_DIR [SERVICE ...]", file=sys.stderr)
        return 2
    build(Path(argv[0]), tuple(argv[1:]) or SERVICES)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
