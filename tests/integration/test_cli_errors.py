"""Every `seats` command, under each ordinary AWS misconfiguration, says one line and exits with its code.

The commands are found by walking the click tree, so a command added later is covered without
editing this file (its arguments are made up from its parameters; `EXTRA_ARGS` bounds the few
that would otherwise wait). The local-stack commands (`local up`, `demo`, `bench`) build no AWS
session of the user's: tests/local covers them.
"""

from __future__ import annotations

import inspect
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import botocore.endpoint
import click
import pytest
from click.testing import CliRunner, Result
from moto import mock_aws

from seat_tools.cli.errors import ExitCode
from seat_tools.cli.main import cli

REPO = Path(__file__).resolve().parents[2]
REGION = "us-east-1"
MISSING_RESOURCES = {
    "TABLE_NAME": "no-such-table",
    "OUTCOMES_TOPIC_ARN": f"arn:aws:sns:{REGION}:123456789012:no-such-topic",
    "RESERVATIONS_QUEUE_URL": f"https://sqs.{REGION}.amazonaws.com/123456789012/no-such-queue",
    "DEAD_LETTER_QUEUE_URL": f"https://sqs.{REGION}.amazonaws.com/123456789012/no-such-dlq",
}
# Commands that use no AWS settings of the user's: they start the local engines or simulate.
# A new command of that kind goes here (this test expects every other one to call AWS).
LOCAL_COMMANDS = {
    ("local", "up"),
    ("demo",),
    ("bench",),
    ("simulate",),
    ("onsale", "plan"),
    ("checkin", "demo"),
    ("checkin", "offline-scan"),  # a scanner offline: the export file alone
    ("waitlist", "simulate"),  # the in-memory store
}
# Options that keep a command from waiting or prompting (everything else is made up from its params).
EXTRA_ARGS: dict[tuple[str, ...], list[str]] = {
    ("watch",): ["--timeout", "1"],
    ("event", "capacity"): ["--add", "1"],
    ("event", "pool", "capacity"): ["--add", "1"],
    ("event", "create"): ["--capacity", "1"],  # or --seat-map: one of the two
    ("reserve",): ["--quantity", "1"],  # or --seat
    ("hold",): ["--quantity", "1"],
    ("event", "limit"): ["--max-per-customer", "1"],
    ("event", "schedule"): ["--clear"],
    ("dlq", "redrive"): ["--yes"],
    ("invoke",): ["-e", str(REPO / "events" / "reserve_single.json")],
    ("onsale", "check"): ["--stack-name", "x-1"],
    ("event", "admission"): ["--required"],
    ("tokens", "issue"): ["--parameter", "/x-1"],
    ("tokens", "keygen"): ["--put-parameter", "/x-1", "--keep-previous"],
    ("tickets", "keygen"): ["--put-parameter", "/x-1", "--keep-previous"],
}
EXPECTED = {
    "unknown profile": ExitCode.CONFIGURATION,
    "bad endpoint URL": ExitCode.CONFIGURATION,
    "endpoint down": ExitCode.UNAVAILABLE,
    "missing resources": ExitCode.REFUSED,
    "no region": ExitCode.CONFIGURATION,
    "no credentials": ExitCode.CONFIGURATION,
}


def leaf_commands(
    group: click.Group, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], click.Command]]:
    for name, command in sorted(group.commands.items()):
        if isinstance(command, click.Group):
            yield from leaf_commands(command, (*path, name))
        else:
            yield (*path, name), command


def made_up_args(path: tuple[str, ...], command: click.Command) -> list[str]:
    """Arguments that pass the command's own parsing: one value per argument and required option."""
    args = list(EXTRA_ARGS.get(path, []))
    given = set(args)
    for param in command.params:
        if isinstance(param, click.Argument):
            args.append("x-1")
        elif isinstance(param, click.Option) and param.required and not given & set(param.opts):
            choices = getattr(param.type, "choices", None)
            if choices:
                value = str(next(iter(choices)))
            elif isinstance(param.type, click.types._NumberRangeBase | click.types.IntParamType):
                value = str(getattr(param.type, "min", None) or 1)
            else:
                value = "x-1"
            args.extend([param.opts[0], value])
    return args


COMMANDS = [(path, command) for path, command in leaf_commands(cli) if path not in LOCAL_COMMANDS]


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.MonkeyPatch:
    """No AWS settings from this machine: empty config files, no profile, no endpoint, no metadata."""
    for name in (
        "SEATS_STACK_NAME",
        "AWS_PROFILE",
        "AWS_DEFAULT_PROFILE",
        "AWS_ENDPOINT_URL",
        "AWS_ENDPOINT_URL_DYNAMODB",
        "AWS_ENDPOINT_URL_SNS",
        "AWS_ENDPOINT_URL_SQS",
        "AWS_ENDPOINT_URL_SSM",
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_REGION",
        "AWS_DEFAULT_REGION",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
        "AWS_WEB_IDENTITY_TOKEN_FILE",
    ):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "config").write_text("")
    (tmp_path / "credentials").write_text("")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    for name, value in MISSING_RESOURCES.items():
        monkeypatch.setenv(name, value)
    return monkeypatch


class RetryPauses:
    """Stands in for botocore.endpoint's `time`: records each pause between retries, sleeps none.

    An unreachable endpoint is retried as configured (every attempt is still made); only the
    back-off between attempts is skipped, which was most of this file's minutes in CI.
    `test_an_unreachable_endpoint_is_reported_within_seconds` keeps the real pauses and times them.
    """

    def __init__(self) -> None:
        self.pauses: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.pauses.append(seconds)


@pytest.fixture
def retry_pauses(monkeypatch: pytest.MonkeyPatch) -> RetryPauses:
    pauses = RetryPauses()
    monkeypatch.setattr(botocore.endpoint, "time", pauses)
    return pauses


def with_credentials(monkeypatch: pytest.MonkeyPatch, *, region: bool = True) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    if region:
        monkeypatch.setenv("AWS_REGION", REGION)


def run(*args: str) -> Result:
    keep_stderr_apart: dict[str, Any] = (
        {"mix_stderr": False} if "mix_stderr" in inspect.signature(CliRunner.__init__).parameters else {}
    )
    return CliRunner(**keep_stderr_apart).invoke(cli, list(args))


def assert_one_line(result: Result, expected: ExitCode, what: str) -> None:
    output = result.output + (result.stderr if result.stderr_bytes is not None else "")
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        f"{what}: {result.exception!r}\n{output}"
    )
    assert "Traceback" not in output, f"{what}:\n{output}"
    assert result.exit_code == expected, f"{what}: exit {result.exit_code}, expected {expected}:\n{output}"
    errors = [line for line in output.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1, f"{what}: expected one error line:\n{output}"


@pytest.mark.parametrize("path,command", COMMANDS, ids=[" ".join(p) for p, _ in COMMANDS])
def test_every_command_says_one_line_for_each_condition(
    path: tuple[str, ...], command: click.Command, clean_env: pytest.MonkeyPatch, retry_pauses: RetryPauses
) -> None:
    args = [*path, *made_up_args(path, command)]
    # Given no profile, no region, no credentials (each run below adds what its condition needs)
    outcomes: dict[str, Result] = {}
    with clean_env.context() as env:
        env.setenv("AWS_PROFILE", "no-such-profile")
        outcomes["unknown profile"] = run(*args)
    with clean_env.context() as env:
        with_credentials(env)
        outcomes["bad endpoint URL"] = run("--endpoint-url", "notaurl", *args)
        retry_pauses.pauses.clear()
        outcomes["endpoint down"] = run("--endpoint-url", f"http://127.0.0.1:{closed_port()}", *args)
        # (botocore retried the refused connection: it asked for a pause before its next attempt)
        assert retry_pauses.pauses, f"seats {' '.join(args)}: the unreachable endpoint was not retried"
        with mock_aws():
            outcomes["missing resources"] = run(*args)
    with clean_env.context() as env:
        with_credentials(env, region=False)
        outcomes["no region"] = run(*args)
    outcomes["no credentials"] = run("--region", REGION, *args)

    for condition, result in outcomes.items():
        what = f"seats {' '.join(args)} ({condition})"
        if (path, condition) == (("invoke",), "endpoint down"):
            # The function's own answer, as Lambda's: every message handed back for a retry.
            assert result.exit_code == 0 and '"itemIdentifier"' in result.stdout, what
            continue
        assert_one_line(result, EXPECTED[condition], what)


def test_help_works_whatever_the_profile(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("AWS_PROFILE", "no-such-profile")
    for path, _ in leaf_commands(cli):
        result = run(*path, "--help")
        assert result.exit_code == 0, result.output
        assert "Usage: " in result.output


def test_debug_prints_the_traceback_as_well(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("AWS_PROFILE", "no-such-profile")
    result = run("--debug", "event", "show", "x-1")
    assert result.exit_code == ExitCode.CONFIGURATION
    assert "Traceback" in result.stderr and "ProfileNotFound" in result.stderr
    assert result.stderr.strip().splitlines()[-1].startswith("Error: the AWS profile 'no-such-profile'")


def test_an_unreachable_endpoint_is_reported_within_seconds(clean_env: pytest.MonkeyPatch) -> None:
    with_credentials(clean_env)
    started = time.monotonic()
    result = run("--endpoint-url", f"http://127.0.0.1:{closed_port()}", "event", "show", "x-1")
    elapsed = time.monotonic() - started
    assert result.exit_code == ExitCode.UNAVAILABLE
    assert "cannot reach http://127.0.0.1:" in result.stderr
    # botocore's default (5 attempts with backoff) took 17-28 s; one retry takes at most a few.
    assert elapsed < 8, elapsed


def test_bench_profiles_the_handler_with_profile_handler_not_profile() -> None:
    # `--profile` is the AWS CLI's (and seats') named profile; bench no longer takes it for a file
    assert "--profile-handler FILE" in run("bench", "--help").output
    refused = run("bench", "--profile", "out.txt")
    assert refused.exit_code == ExitCode.USAGE and "No such option: --profile" in refused.stderr


def test_an_unknown_stack_name_is_one_line(clean_env: pytest.MonkeyPatch) -> None:
    with_credentials(clean_env)
    with mock_aws():
        result = run("--stack-name", "no-such-stack", "event", "show", "x-1")
    assert result.exit_code == ExitCode.REFUSED
    assert result.stderr.startswith("Error: cannot read the outputs of stack 'no-such-stack': DescribeStacks")
    assert len(result.stderr.strip().splitlines()) == 1
