"""`seats local up`: fixed ports, the resources events/env.local.json names, and a stop within seconds
when its process group gets SIGINT or SIGTERM.

SIGINT to the group is Ctrl-C in a terminal; SIGTERM to the group is what supervisors and CI
cancellation send. Before the fix, SIGTERM killed the sweeper while it slept in the runner's
multiprocessing Event, whose `set()` then waited forever for it: `local up` hung with the engines
up (this test failed with a timeout on that code; the sweeper sleeps its default minute here).
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from seat_tools.local.engines import DynamoDBLocal, LocalStackError, MotoServer, free_port

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.local_stack

READY_TIMEOUT_S = 180
STOP_WITHIN_S = 20


def seats_command() -> list[str]:
    script = Path(sys.executable).with_name("seats")
    return [str(script)] if script.exists() else [sys.executable, "-m", "seat_tools.cli.main"]


def port_open(url: str) -> bool:
    parts = urlsplit(url)
    with socket.socket() as sock:
        sock.settimeout(1)
        return sock.connect_ex((parts.hostname or "127.0.0.1", parts.port or 80)) == 0


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_local_up_stops_everything_on_a_signal_to_its_process_group(signum: int, tmp_path: Path) -> None:
    # Given `seats local up` running with its workers and sweeper, in a process group of its own
    ports = {"dynamodb": free_port(), "moto": free_port()}
    stdout, stderr = tmp_path / "stdout", tmp_path / "stderr"
    with stdout.open("wb") as out, stderr.open("wb") as err:
        process = subprocess.Popen(
            [
                *seats_command(),
                "local",
                "up",
                "--workers",
                "2",
                "--dynamodb-port",
                str(ports["dynamodb"]),
                "--moto-port",
                str(ports["moto"]),
            ],
            stdout=out,
            stderr=err,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            # An AWS profile this machine lacks must not matter to the local stack (it did).
            env={**os.environ, "AWS_PROFILE": "no-such-profile", "AWS_CONFIG_FILE": os.devnull},
        )
    try:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while "Ctrl-C to stop" not in stderr.read_text() or "sweeper:" not in stderr.read_text():
            assert process.poll() is None, stderr.read_text()
            assert time.monotonic() < deadline, stderr.read_text()
            time.sleep(0.5)
        exports = dict(re.findall(r"^export (\w+)=(\S+)$", stdout.read_text(), re.M))
        endpoints = {exports["AWS_ENDPOINT_URL_DYNAMODB"], exports["AWS_ENDPOINT_URL_SQS"]}
        assert all(port_open(url) for url in endpoints)
        # the ports asked for, and the resources events/env.local.json names (for sam local invoke)
        assert exports["AWS_ENDPOINT_URL_DYNAMODB"] == f"http://127.0.0.1:{ports['dynamodb']}"
        assert exports["AWS_ENDPOINT_URL_SQS"] == f"http://127.0.0.1:{ports['moto']}"
        function_env = json.loads((REPO / "events" / "env.local.json").read_text())["ReserveSeatsFunction"]
        assert exports["TABLE_NAME"] == function_env["TABLE_NAME"]
        assert exports["OUTCOMES_TOPIC_ARN"] == function_env["OUTCOMES_TOPIC_ARN"]
        time.sleep(2)  # the workers long-poll and the sweeper runs: the moment the signal lands varies

        # When the whole process group gets the signal
        os.killpg(process.pid, signum)
        started = time.monotonic()
        returncode = process.wait(timeout=STOP_WITHIN_S)
        took = time.monotonic() - started
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()

    # Then it exited within seconds, saying so, with no worker left and both engines stopped
    assert returncode == 0, stderr.read_text()
    assert took < STOP_WITHIN_S
    assert "stopped: DynamoDB Local, the moto server and the workers have exited." in stderr.read_text()
    assert "Traceback" not in stderr.read_text()
    deadline = time.monotonic() + 5
    while group_alive(process.pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not group_alive(process.pid), "a worker outlived `seats local up`"
    assert not any(port_open(url) for url in endpoints), "an engine outlived `seats local up`"


@pytest.mark.parametrize("engine", [DynamoDBLocal, MotoServer], ids=["DynamoDB Local", "moto"])
def test_a_fixed_port_in_use_is_one_clear_error(engine: type[DynamoDBLocal | MotoServer]) -> None:
    # Given something already listening on the port asked for
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]

        # When the engine is launched on it, it says so (and which option to change) before starting
        with pytest.raises(
            LocalStackError, match=rf"cannot listen on port {port}: .* pass --(dynamodb|moto)-port"
        ):
            engine(port=port).launch()
