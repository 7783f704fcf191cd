"""`sam build` and the function package: the service package and no tool, and it runs on its own.

The build is the real one (`sam build` -> the Makefile's build-<Function> targets ->
scripts/build_function.py), into a temporary directory; pip installs the pinned wheels for arm64.
The package is then imported by an interpreter that sees nothing else (-I -S) and writes no
bytecode (-B), as Lambda's read-only /var/task. Then `sam package`, the upload `sam deploy` does
first, runs on the built template against moto's S3: the files template.yaml brings in with
AWS::Include must be uploaded with the code.
"""

from __future__ import annotations

import importlib.util
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import boto3
import pytest
from moto.server import ThreadedMotoServer
from scripts.build_function import BOTOCORE_DATA_FILES, SERVICE_PACKAGE, SERVICES, SOURCE

from seat_tools.local.template import include_locations, read_template_document
from tests.integration.conftest import REPO
from tests.template_support import Template

FUNCTIONS = ("ReserveSeatsFunction", "SweepHoldsFunction", "IssueTicketsFunction", "GateFunction")
# The version publisher (provisioned concurrency's custom resource) calls Lambda's API only; the
# ticket issuer calls it too (it starts its other lanes).
PUBLISHER = "ReserveSeatsVersionPublisher"
SERVICES_OF = {
    **dict.fromkeys(FUNCTIONS, SERVICES),
    "IssueTicketsFunction": (*SERVICES, "lambda"),
    PUBLISHER: ("lambda",),
}
# 39 MB before (boto3's every service model, the cli/local/bench code); about 18 MB now.
MAX_PACKAGE_BYTES = 25_000_000


@pytest.fixture(scope="module")
def build_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    build = tmp_path_factory.mktemp("sam-build")
    result = subprocess.run(
        [
            str(Path(sys.executable).with_name("sam")),
            "build",
            "--build-dir",
            str(build / "out"),
            "--cache-dir",
            str(build / "cache"),
            "--no-cached",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert result.returncode == 0, (result.stdout + result.stderr)[-4000:]
    return build / "out"


def run_in_package(package: Path, code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-I", "-S", "-B", "-c", f"import sys; sys.path.insert(0, {str(package)!r}); {code}"],
        capture_output=True,
        text=True,
        env={"AWS_DEFAULT_REGION": "us-east-1", "POWERTOOLS_TRACE_DISABLED": "true"},
        timeout=120,
    )


def test_every_function_is_built_by_the_makefile_target(template: Template) -> None:
    makefile = (REPO / "Makefile").read_text()
    functions = [
        lid for lid, r in template.document["Resources"].items() if r["Type"] == "AWS::Serverless::Function"
    ]
    assert sorted(functions) == sorted(SERVICES_OF)
    for function in functions:
        metadata = template.resource(function)["Metadata"]
        assert (metadata["BuildMethod"], metadata["ContextPath"]) == ("makefile", ".")
        assert f"build-{function}" in makefile
    assert template.document["Globals"]["Function"]["Architectures"] == ["arm64"]
    assert template.document["Globals"]["Function"]["Runtime"] == "python3.11"


def modules(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*.py") if "__pycache__" not in p.parts)


@pytest.mark.parametrize("function", SERVICES_OF)
def test_the_package_holds_the_service_package_and_no_tool(build_dir: Path, function: str) -> None:
    package = build_dir / function
    assert modules(package / SERVICE_PACKAGE) == modules(SOURCE / SERVICE_PACKAGE)
    assert "handlers/reserve_seats.py" in modules(package / SERVICE_PACKAGE)
    assert not (package / "seat_tools").exists()
    importing_tools = re.compile(r"^\s*(from|import)\s+seat_tools\b", re.MULTILINE)
    assert not [p for p in package.rglob("*.py") if importing_tools.search(p.read_text(errors="replace"))]


@pytest.mark.parametrize("function", SERVICES_OF)
def test_botocore_keeps_the_models_of_the_services_called_only(build_dir: Path, function: str) -> None:
    data = build_dir / function / "botocore" / "data"
    assert sorted(p.name for p in data.iterdir()) == sorted((*SERVICES_OF[function], *BOTOCORE_DATA_FILES))


@pytest.mark.parametrize("function", SERVICES_OF)
def test_every_module_ships_its_bytecode_used_whatever_the_timestamps(build_dir: Path, function: str) -> None:
    package = build_dir / function
    tag = sys.implementation.cache_tag
    sources = [p for p in package.rglob("*.py") if "__pycache__" not in p.parts]
    assert len(sources) > 500
    for source in sources:
        compiled = Path(importlib.util.cache_from_source(str(source)))
        assert compiled.exists() and tag in compiled.name, source
        flags = int.from_bytes(compiled.read_bytes()[4:8], "little")
        assert flags == 0b01, source  # hash-based, unchecked (PEP 552)


@pytest.mark.parametrize("function", FUNCTIONS)
def test_the_package_runs_on_its_own_with_and_without_tracing(build_dir: Path, function: str) -> None:
    package = build_dir / function
    result = run_in_package(
        package,
        "import boto3, seat_inventory.handlers.reserve_seats, seat_inventory.handlers.sweep_holds; "
        "session = boto3.session.Session(); session.client('dynamodb'); session.client('sns'); "
        # Tracing: Active (the handler imports the X-Ray SDK, which builds an xray client)
        "from aws_xray_sdk.core import patch, xray_recorder; patch(['botocore']); "
        "import seat_inventory; print(seat_inventory.__file__)",
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip() == str(package / "seat_inventory" / "__init__.py")


def test_the_version_publisher_runs_on_its_own_with_the_lambda_waiter_it_uses(build_dir: Path) -> None:
    package = build_dir / PUBLISHER
    result = run_in_package(
        package,
        "import seat_inventory.handlers.publish_live_version as handler; "
        "client = handler.boto3.client('lambda'); client.get_waiter('function_updated_v2'); "
        "client.get_paginator('list_versions_by_function'); print(handler.__file__)",
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip() == str(package / "seat_inventory" / "handlers" / "publish_live_version.py")


def test_the_package_is_small(build_dir: Path) -> None:
    for function in SERVICES_OF:
        size = sum(p.stat().st_size for p in (build_dir / function).rglob("*") if p.is_file())
        assert size < MAX_PACKAGE_BYTES, (function, size)


def test_sam_package_uploads_the_files_the_template_includes(build_dir: Path, tmp_path: Path) -> None:
    """What `sam deploy` sends: every AWS::Include Location becomes the S3 object of that file."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    env = {
        **os.environ,
        "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "SAM_CLI_TELEMETRY": "0",
    }
    env.pop("AWS_PROFILE", None)
    try:
        s3 = boto3.client(
            "s3",
            endpoint_url=env["AWS_ENDPOINT_URL"],
            region_name="us-east-1",
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        )
        s3.create_bucket(Bucket="artifacts")
        packaged = tmp_path / "packaged.yaml"
        result = subprocess.run(
            [
                str(Path(sys.executable).with_name("sam")),
                "package",
                "--template-file",
                str(build_dir / "template.yaml"),
                "--s3-bucket",
                "artifacts",
                "--region",
                "us-east-1",
                "--output-template-file",
                str(packaged),
                "--language-extensions",  # as samconfig.toml sets for every command (Fn::ForEach)
            ],
            cwd=tmp_path,  # not the repository's samconfig.toml
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]
        written = include_locations(read_template_document(REPO / "template.yaml", includes=False))
        uploaded = include_locations(read_template_document(packaged, includes=False))
        assert len(uploaded) == len(written) == 3
        for location, url in zip(written, uploaded, strict=True):
            assert url.startswith("s3://artifacts/"), url
            body = s3.get_object(Bucket="artifacts", Key=url.removeprefix("s3://artifacts/"))["Body"].read()
            assert body == (REPO / location).read_bytes(), location
    finally:
        server.stop()


def elf_machine(path: Path) -> int:
    """The ELF header's e_machine of a shared object (183: AArch64, 62: x86-64)."""
    header = path.read_bytes()[:20]
    assert header[:4] == b"\x7fELF", path
    return int.from_bytes(header[18:20], "little")


def test_the_gate_function_gets_pynacl_built_for_arm64(build_dir: Path, template: Template) -> None:
    """The gate signs and verifies ticket secrets with PyNaCl (libsodium, docs/guides/checkin.md): its
    native parts in the package are the template's architecture's (arm64), not this machine's."""
    assert template.resource("GateFunction")["Metadata"]["BuildMethod"] == "makefile"
    package = build_dir / "GateFunction"
    sodium = list((package / "nacl").glob("_sodium*.so"))
    cffi = list(package.glob("_cffi_backend*.so"))
    assert len(sodium) == 1 and len(cffi) == 1, (sodium, cffi)
    assert elf_machine(sodium[0]) == elf_machine(cffi[0]) == 183
    assert (package / "seat_inventory" / "handlers" / "gate_api.py").exists()
