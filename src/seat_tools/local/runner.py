"""Runs the function against the local queue the way Lambda's SQS event source mapping does.

- N workers (the template's MaximumConcurrency unless overridden), each its own "Lambda
  instance": a separate process (spawn) that imports the handler once (one cold start), builds
  its own boto3 clients on its first invocation, and handles one batch at a time.
- Each worker long-polls the queue, ten messages per ReceiveMessage, gathering up to BatchSize
  messages or until MaximumBatchingWindowInSeconds has passed since the first one arrived.
- It invokes the handler with an SQS-shaped event and a Lambda-like context, then deletes every
  message except those listed in `batchItemFailures` (ReportBatchItemFailures); a listed message
  reappears after the queue's visibility timeout. If the handler raises (or runs past the
  function's Timeout), nothing is deleted and the whole batch comes back. The queue's
  RedrivePolicy then moves a message that keeps failing to the dead-letter queue.

Workers write the handler's logs and EMF metrics to one log file each (not the console), and
report simple counters to the parent through a multiprocessing queue.

Not emulated: scaling up gradually (all N workers poll from the start), Lambda killing an
invocation at its timeout (the runner only treats an overrun as a failure afterwards), and
FIFO queues.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import logging
import multiprocessing
import os
import queue
import signal
import sys
import threading
import time
import traceback
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from seat_tools.local.engines import LocalStackError

if TYPE_CHECKING:
    from seat_tools.local.stack import LocalStack

SQS_RECEIVE_LIMIT = 10
# Long-poll length while waiting for a first message: short enough for a prompt stop.
IDLE_POLL_WAIT_S = 1
# Workers that neither report ready nor fail within this time are considered broken.
WORKER_READY_TIMEOUT_S = 90.0
# Reads outlast the longest long poll (20 s).
POLLER_CLIENT_CONFIG = Config(retries={"mode": "standard", "max_attempts": 5}, read_timeout=30)
# Pause after a failed ReceiveMessage (the moto server restarting, a network hiccup).
POLL_ERROR_PAUSE_S = 1.0
# A stopping worker finishes its current invocation; after this it is terminated.
WORKER_STOP_TIMEOUT_S = 45.0
# Variables of the calling shell a Lambda function would never see (a profile would even win
# over the fake credentials in some SDK code paths).
_SCRUBBED_VARIABLES = ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL")


@dataclass(frozen=True, slots=True)
class RunnerConfig:
    """Everything a worker needs; plain data so it crosses the process boundary (spawn pickles it)."""

    queue_url: str
    queue_arn: str
    environment: Mapping[str, str]
    function_name: str
    function_arn: str
    region: str
    handler: str  # <module>.<function>, as the template's Handler
    timeout_s: int = 30
    memory_mb: int = 512
    batch_size: int = 10
    batching_window_s: float = 0.0
    report_batch_item_failures: bool = True
    workers: int = 2
    log_dir: Path | None = None
    # The scheduled sweeper (template: SweepHoldsFunction's Schedule event); None runs none.
    sweep_handler: str | None = None
    sweep_interval_s: float = 60.0
    # The ticket issuer (template: IssueTicketsFunction's Schedule event); None runs none. Locally
    # it runs every `issue_interval_s` for `issue_seconds` (ISSUE_SECONDS) rather than every
    # minute for 50 s, so that a stop does not wait for a run and numbers show within seconds.
    issue_handler: str | None = None
    issue_interval_s: float = 2.0
    issue_seconds: int = 1
    # `<module>.<function>` called in each worker process with its index before the handler is
    # imported (instrumentation, fault injection). It may return a callable whose dict is reported
    # after each invocation (`RunnerStats.worker_snapshots`, the latest per worker) and when the
    # worker stops (`RunnerStats.worker_reports`). Not part of Lambda: tools and tests only.
    worker_setup: str | None = None


@dataclass
class RunnerStats:
    """Counters summed over every worker; `messages` counts deliveries, so a retried message counts again."""

    workers_ready: int = 0
    cold_starts: int = 0
    invocations: int = 0
    messages: int = 0
    deleted: int = 0
    item_failures: int = 0
    handler_errors: int = 0
    timeouts: int = 0
    delete_errors: int = 0
    invocation_s: float = 0.0
    sweeps: int = 0
    holds_released: int = 0
    sweep_errors: int = 0
    issues: int = 0
    reservations_numbered: int = 0
    issue_errors: int = 0
    errors: list[str] = field(default_factory=list)
    worker_reports: list[dict[str, Any]] = field(default_factory=list)
    worker_snapshots: dict[int, dict[str, Any]] = field(default_factory=dict)
    # Wall-clock (time.time()) start of the first invocation and end of the last one.
    first_invocation_at: float | None = None
    last_invocation_end_at: float | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "workers_ready": self.workers_ready,
            "cold_starts": self.cold_starts,
            "invocations": self.invocations,
            "messages": self.messages,
            "deleted": self.deleted,
            "item_failures": self.item_failures,
            "handler_errors": self.handler_errors,
            "timeouts": self.timeouts,
            "delete_errors": self.delete_errors,
            "sweeps": self.sweeps,
            "holds_released": self.holds_released,
            "sweep_errors": self.sweep_errors,
            "issues": self.issues,
            "reservations_numbered": self.reservations_numbered,
            "issue_errors": self.issue_errors,
            "mean_invocation_ms": round(1000 * self.invocation_s / self.invocations, 1)
            if self.invocations
            else 0.0,
        }


# --------------------------------------------------------------------------- event and context


class LocalLambdaContext:
    """The attributes of Lambda's Python context object that handlers and Powertools read."""

    def __init__(self, config: RunnerConfig, worker: int) -> None:
        self.function_name = config.function_name
        self.function_version = "$LATEST"
        self.invoked_function_arn = config.function_arn
        self.memory_limit_in_mb = config.memory_mb
        self.aws_request_id = str(uuid.uuid4())
        self.log_group_name = f"/aws/lambda/{config.function_name}"
        self.log_stream_name = f"{time.strftime('%Y/%m/%d')}/[$LATEST]local-worker-{worker}"
        self.identity = None
        self.client_context = None
        self.tenant_id = None
        self._deadline = time.monotonic() + config.timeout_s

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._deadline - time.monotonic()) * 1000))


def sqs_record(message: Mapping[str, Any], *, queue_arn: str, region: str) -> dict[str, Any]:
    """One record of an SQS event, from a ReceiveMessage entry, as Lambda shapes it."""
    attributes = message.get("Attributes", {})
    message_attributes = {
        name: {
            "stringValue": value.get("StringValue"),
            "binaryValue": value.get("BinaryValue"),
            "stringListValues": value.get("StringListValues", []),
            "binaryListValues": value.get("BinaryListValues", []),
            "dataType": value.get("DataType"),
        }
        for name, value in message.get("MessageAttributes", {}).items()
    }
    return {
        "messageId": message["MessageId"],
        "receiptHandle": message["ReceiptHandle"],
        "body": message["Body"],
        "attributes": {
            "ApproximateReceiveCount": attributes.get("ApproximateReceiveCount", "1"),
            "SentTimestamp": attributes.get("SentTimestamp", str(int(time.time() * 1000))),
            "SenderId": attributes.get("SenderId", "AIDAIENQZJOLO23YVJ4VO"),
            "ApproximateFirstReceiveTimestamp": attributes.get(
                "ApproximateFirstReceiveTimestamp", str(int(time.time() * 1000))
            ),
        },
        "messageAttributes": message_attributes,
        "md5OfBody": message.get("MD5OfBody") or hashlib.md5(message["Body"].encode()).hexdigest(),
        "eventSource": "aws:sqs",
        "eventSourceARN": queue_arn,
        "awsRegion": region,
    }


def failed_message_ids(response: Any, batch_ids: set[str]) -> set[str]:
    """The message ids to keep from a ReportBatchItemFailures response.

    As Lambda does: a response that is not a dict, or without `batchItemFailures`, is success;
    an entry whose itemIdentifier is missing, empty or not in the batch fails the whole batch.
    """
    if not isinstance(response, dict) or not response.get("batchItemFailures"):
        return set()
    failures = response["batchItemFailures"]
    if not isinstance(failures, list):
        return set(batch_ids)
    failed: set[str] = set()
    for entry in failures:
        identifier = entry.get("itemIdentifier") if isinstance(entry, dict) else None
        if not identifier or identifier not in batch_ids:
            return set(batch_ids)
        failed.add(identifier)
    return failed


def import_handler(dotted_path: str) -> Callable[..., Any]:
    """`package.module.function` -> the function (what Lambda's Handler setting names)."""
    module_name, _, function_name = dotted_path.rpartition(".")
    if not module_name:
        raise LocalStackError(f"handler {dotted_path!r} must be <module>.<function>")
    module = importlib.import_module(module_name)
    handler = getattr(module, function_name, None)
    if not callable(handler):
        raise LocalStackError(f"{module_name} has no function {function_name!r}")
    return handler


# --------------------------------------------------------------------------- the worker process


class _Worker:
    """One Lambda instance: polls, batches, invokes, deletes. Runs in its own process."""

    def __init__(
        self,
        config: RunnerConfig,
        index: int,
        stop: Any,
        reports: Any,
        snapshot: Callable[[], dict[str, Any]] | None = None,
    ) -> None:
        self.config = config
        self.snapshot = snapshot
        self.index = index
        self.stop = stop
        self.reports = reports
        self.log = logging.getLogger(f"seats.local.worker{index}")
        self.cold = True
        # The poller's client, separate from the handler's (as the event source mapping is).
        self.sqs: Any = boto3.session.Session().client("sqs", config=POLLER_CLIENT_CONFIG)
        self.handler = import_handler(config.handler)

    def run(self) -> None:
        self.reports.put(("ready", self.index, None))
        while not self.stop.is_set():
            batch = self._gather()
            if not batch:
                continue
            if self.stop.is_set():
                self._release(batch)
                break
            self._invoke(batch)

    def _receive(self, wanted: int, wait_s: int) -> list[dict[str, Any]]:
        """One ReceiveMessage; a failed poll is logged and retried after a pause, as Lambda's poller does."""
        try:
            response = self.sqs.receive_message(
                QueueUrl=self.config.queue_url,
                MaxNumberOfMessages=min(SQS_RECEIVE_LIMIT, wanted),
                WaitTimeSeconds=wait_s,
                MessageSystemAttributeNames=["All"],
                MessageAttributeNames=["All"],
            )
        except (BotoCoreError, ClientError) as exc:
            self.log.warning("ReceiveMessage failed (%s); polling again in %.0f s", exc, POLL_ERROR_PAUSE_S)
            self.stop.wait(POLL_ERROR_PAUSE_S)
            return []
        return list(response.get("Messages", []))

    def _gather(self) -> list[dict[str, Any]]:
        """Up to BatchSize messages: the first long poll waits for anything; once something has
        arrived, polling goes on until the batch is full or the batching window has passed."""
        config = self.config
        batch: list[dict[str, Any]] = []
        window_ends = 0.0
        while len(batch) < config.batch_size and not self.stop.is_set():
            if not batch:
                wait_s = IDLE_POLL_WAIT_S
            else:
                left = window_ends - time.monotonic()
                if left <= 0:
                    break
                wait_s = int(left)  # whole seconds; the rest of the window is spent short-polling
            messages = self._receive(config.batch_size - len(batch), wait_s)
            if messages and not batch:
                window_ends = time.monotonic() + config.batching_window_s
            batch.extend(messages)
            if batch and config.batching_window_s <= 0:
                break
            if batch and not messages and wait_s == 0:
                time.sleep(min(0.05, max(0.0, window_ends - time.monotonic())))
        return batch

    def _invoke(self, batch: list[dict[str, Any]]) -> None:
        config = self.config
        event = {"Records": [sqs_record(m, queue_arn=config.queue_arn, region=config.region) for m in batch]}
        context = LocalLambdaContext(config, self.index)
        batch_ids = {m["MessageId"] for m in batch}
        report: dict[str, Any] = {"messages": len(batch), "cold_start": self.cold}
        self.cold = False
        report["started_at"] = time.time()
        started = time.monotonic()
        try:
            response = self.handler(event, context)
        except Exception:
            # Lambda's contract, not a swallowed error: a raised error fails (and retries) the whole batch.
            self.log.exception("handler raised; the whole batch (%d messages) will be retried", len(batch))
            failed = set(batch_ids)
            report["handler_error"] = traceback.format_exc(limit=3).strip().splitlines()[-1]
        else:
            failed = failed_message_ids(response, batch_ids) if config.report_batch_item_failures else set()
        elapsed = time.monotonic() - started
        report["seconds"] = elapsed
        if elapsed > config.timeout_s:
            self.log.error(
                "invocation ran %.1f s, past the function timeout of %d s", elapsed, config.timeout_s
            )
            report["timeout"] = True
            failed = set(batch_ids)
        report["item_failures"] = len(failed) if "handler_error" not in report else 0
        report["deleted"], report["delete_errors"] = self._delete(
            [m for m in batch if m["MessageId"] not in failed]
        )
        self.log.info(
            "invocation %s: %d message(s) in %.0f ms%s; %d left for retry, %d deleted",
            context.aws_request_id,
            len(batch),
            1000 * elapsed,
            " (cold start)" if report["cold_start"] else "",
            len(failed),
            report["deleted"],
        )
        report["ended_at"] = time.time()
        if self.snapshot is not None:
            report["snapshot"] = self.snapshot()
        self.reports.put(("invocation", self.index, report))

    def _delete(self, messages: list[dict[str, Any]]) -> tuple[int, int]:
        """Deletes handled messages; one that cannot be deleted comes back and is answered again
        (marked duplicate), as on AWS."""
        deleted = errors = 0
        for start in range(0, len(messages), SQS_RECEIVE_LIMIT):
            chunk = messages[start : start + SQS_RECEIVE_LIMIT]
            try:
                response = self.sqs.delete_message_batch(
                    QueueUrl=self.config.queue_url,
                    Entries=[
                        {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(chunk)
                    ],
                )
            except (BotoCoreError, ClientError) as exc:
                self.log.warning(
                    "DeleteMessageBatch failed (%s); %d message(s) will come back", exc, len(chunk)
                )
                errors += len(chunk)
                continue
            deleted += len(response.get("Successful", []))
            errors += len(response.get("Failed", []))
        return deleted, errors

    def _release(self, messages: list[dict[str, Any]]) -> None:
        """Stopping with a gathered but uninvoked batch: make it visible again at once."""
        for start in range(0, len(messages), SQS_RECEIVE_LIMIT):
            chunk = messages[start : start + SQS_RECEIVE_LIMIT]
            self.sqs.change_message_visibility_batch(
                QueueUrl=self.config.queue_url,
                Entries=[
                    {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"], "VisibilityTimeout": 0}
                    for i, m in enumerate(chunk)
                ],
            )


def _redirect_output(log_path: Path | None) -> None:
    """Sends this process's stdout and stderr (Powertools logs, EMF, tracebacks) to its log file."""
    target = open(log_path, "a", buffering=1) if log_path else open(os.devnull, "w")  # noqa: SIM115
    os.dup2(target.fileno(), 1)
    os.dup2(target.fileno(), 2)
    sys.stdout = target
    sys.stderr = target


def _exit_with_parent(parent_pid: int) -> None:
    """Ends this worker when the runner's process is gone (killed without a chance to stop us)."""
    while True:
        time.sleep(1)
        if os.getppid() != parent_pid:
            os._exit(1)


def _prepare_process(config: RunnerConfig, log_name: str) -> None:
    """What Lambda gives a function's process: its environment, its own log, no terminal signals."""
    threading.Thread(target=_exit_with_parent, args=(os.getppid(),), name="parent-watch", daemon=True).start()
    # Ctrl-C in a terminal reaches the whole process group; the parent stops workers in order.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    log_path = config.log_dir / log_name if config.log_dir else None
    _redirect_output(log_path)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    logging.getLogger("botocore").setLevel(logging.WARNING)
    for name in _SCRUBBED_VARIABLES:
        os.environ.pop(name, None)
    os.environ.update(config.environment)
    os.environ.update(
        {
            "AWS_LAMBDA_FUNCTION_NAME": config.function_name,
            "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(config.memory_mb),
            "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
            "AWS_LAMBDA_LOG_GROUP_NAME": f"/aws/lambda/{config.function_name}",
            "AWS_REGION": config.region,
            "AWS_DEFAULT_REGION": config.region,
        }
    )


def scheduled_event(region: str) -> dict[str, Any]:
    """The event EventBridge sends a function on a schedule."""
    return {
        "version": "0",
        "id": str(uuid.uuid4()),
        "detail-type": "Scheduled Event",
        "source": "aws.events",
        "account": "123456789012",
        "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "region": region,
        "resources": [],
        "detail": {},
    }


def _sweeper_main(config: RunnerConfig, stop: Any, reports: Any) -> None:
    """Entry point of the sweeper process: invokes the scheduled handler every `sweep_interval_s`."""
    assert config.sweep_handler is not None
    _scheduled_main(config, "sweep", config.sweep_handler, config.sweep_interval_s, stop, reports)


def _issuer_main(config: RunnerConfig, stop: Any, reports: Any) -> None:
    """Entry point of the ticket issuer's process: a run of `issue_seconds` every `issue_interval_s`."""
    assert config.issue_handler is not None
    _scheduled_main(
        config,
        "issue",
        config.issue_handler,
        config.issue_interval_s,
        stop,
        reports,
        environment={"ISSUE_SECONDS": str(config.issue_seconds)},
    )


def _scheduled_main(
    config: RunnerConfig,
    kind: str,
    handler_path: str,
    interval_s: float,
    stop: Any,
    reports: Any,
    *,
    environment: Mapping[str, str] | None = None,
) -> None:
    """Invokes a scheduled handler every `interval_s`, reporting `kind` (or `<kind>_error`)."""
    _prepare_process(config, f"{kind}.log")
    os.environ.update(environment or {})
    log = logging.getLogger(f"seats.local.{kind}")
    try:
        handler = import_handler(handler_path)
    except Exception as exc:
        log.exception("%s could not start", kind)
        reports.put((f"{kind}_error", -1, f"{type(exc).__name__}: {exc}"))
        return
    while not stop.wait(interval_s):
        try:
            result = handler(scheduled_event(config.region), LocalLambdaContext(config, worker=-1))
        # Like Lambda for a scheduled invocation: an error is logged and counted, and the next
        # tick runs again; nothing is lost (expired holds and sales waiting for numbers stay in
        # their index until handled).
        except Exception as exc:
            log.exception("%s failed", kind)
            reports.put((f"{kind}_error", -1, f"{type(exc).__name__}: {exc}"))
            continue
        reports.put((kind, -1, result if isinstance(result, dict) else {}))


def _worker_main(config: RunnerConfig, index: int, stop: Any, reports: Any) -> None:
    """Entry point of a worker process."""
    _prepare_process(config, f"worker-{index}.log")
    final_report: Callable[[], dict[str, Any]] | None = None
    try:
        if config.worker_setup:
            final_report = import_handler(config.worker_setup)(index)
        worker = _Worker(config, index, stop, reports, final_report)
    except Exception as exc:
        # Reported to the parent, whose start() then fails with this message.
        logging.getLogger("seats.local").exception("worker %d could not start", index)
        reports.put(("failed", index, f"{type(exc).__name__}: {exc}"))
        return
    try:
        worker.run()
    finally:
        reports.put(("stopped", index, final_report() if final_report else None))


# --------------------------------------------------------------------------- the runner

# How often a waiting worker looks at the stop flag.
STOP_POLL_S = 0.1
# How long the runner's collector waits for a report before it looks whether the workers are gone
# (stop() waits for the collector to see it).
REPORTS_POLL_S = 0.1


class StopFlag:
    """The runner's stop request, shared with its processes, without a lock.

    multiprocessing's Event is a Condition shared by every process: `set()` wakes each process
    sleeping in `wait()` and waits for it to acknowledge. SIGTERM to the process group killed the
    sweeper in its `wait()` between runs, so `set()` waited forever for a dead sleeper and
    `seats local up` hung with the engines still up. One byte of shared memory, written by the
    runner and polled by its processes, has nobody to wait for.
    """

    def __init__(self, context: Any) -> None:
        self._value = context.RawValue("b", 0)

    def set(self) -> None:
        self._value.value = 1

    def clear(self) -> None:
        self._value.value = 0

    def is_set(self) -> bool:
        return bool(self._value.value)

    def wait(self, timeout: float) -> bool:
        """Sleeps until the flag is set (True) or `timeout` seconds passed (False), like Event.wait."""
        deadline = time.monotonic() + timeout
        while not self.is_set():
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            time.sleep(min(STOP_POLL_S, left))
        return True


class LocalRunner:
    """N worker processes consuming the queue; start(), drain(), stop() (or use it as a context manager).

    Workers are started with multiprocessing's spawn method, which imports the caller's main module
    in each worker: a script that uses the runner needs the `if __name__ == "__main__":` guard.
    """

    def __init__(self, config: RunnerConfig) -> None:
        if config.workers < 1:
            raise ValueError(f"workers must be at least 1, got {config.workers}")
        if config.batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {config.batch_size}")
        self.config = config
        self._context = multiprocessing.get_context("spawn")
        self._stop = StopFlag(self._context)
        self._reports: Any = self._context.Queue()
        self._processes: list[Any] = []
        self._stats = RunnerStats()
        self._lock = threading.Lock()
        self._collector: threading.Thread | None = None
        self._failed_workers: list[str] = []
        self._stopped_workers = 0

    @property
    def stats(self) -> RunnerStats:
        with self._lock:
            return replace(
                self._stats,
                errors=list(self._stats.errors),
                worker_reports=list(self._stats.worker_reports),
                worker_snapshots=dict(self._stats.worker_snapshots),
            )

    def start(self, *, wait_ready: bool = True) -> LocalRunner:
        """Starts the workers; by default returns once each has imported the handler (cold start)."""
        if self._processes:
            return self
        self._stop.clear()
        self._collector = threading.Thread(
            target=self._collect_reports, name="seats-runner-stats", daemon=True
        )
        self._collector.start()
        for index in range(self.config.workers):
            process = self._context.Process(
                target=_worker_main,
                args=(self.config, index, self._stop, self._reports),
                name=f"seats-worker-{index}",
                daemon=True,
            )
            process.start()
            self._processes.append(process)
        if self.config.sweep_handler:
            sweeper = self._context.Process(
                target=_sweeper_main,
                args=(self.config, self._stop, self._reports),
                name="seats-sweeper",
                daemon=True,
            )
            sweeper.start()
            self._processes.append(sweeper)
        if self.config.issue_handler:
            issuer = self._context.Process(
                target=_issuer_main,
                args=(self.config, self._stop, self._reports),
                name="seats-issuer",
                daemon=True,
            )
            issuer.start()
            self._processes.append(issuer)
        if wait_ready:
            self._wait_ready()
        return self

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + WORKER_READY_TIMEOUT_S
        while time.monotonic() < deadline:
            with self._lock:
                ready = self._stats.workers_ready
                failed = list(self._failed_workers)
            if failed:
                self.stop()
                raise LocalStackError("runner workers could not start: " + "; ".join(failed))
            if ready >= self.config.workers:
                return
            if not any(p.is_alive() for p in self._processes):
                break
            time.sleep(0.05)
        self.stop()
        raise LocalStackError(f"runner workers did not become ready in {WORKER_READY_TIMEOUT_S:.0f} s")

    def _collect_reports(self) -> None:
        while True:
            try:
                kind, index, payload = self._reports.get(timeout=REPORTS_POLL_S)
            except queue.Empty:
                if self._stop.is_set() and not any(p.is_alive() for p in self._processes):
                    return
                continue
            except (EOFError, OSError):
                return
            with self._lock:
                self._record(kind, index, payload)

    def _record_scheduled(self, kind: str, payload: Any) -> None:
        """A run of the sweeper or the issuer (`<kind>`), or its error (`<kind>_error`)."""
        stats = self._stats
        if kind == "sweep":
            stats.sweeps += 1
            stats.holds_released += int(payload.get("released", 0))
        elif kind == "issue":
            stats.issues += 1
            stats.reservations_numbered += int(payload.get("numbered", 0))
        else:
            if kind == "sweep_error":
                stats.sweep_errors += 1
            else:
                stats.issue_errors += 1
            if len(stats.errors) < 20:
                stats.errors.append(f"{'sweeper' if kind == 'sweep_error' else 'issuer'}: {payload}")

    def _record(self, kind: str, index: int, payload: Any) -> None:
        stats = self._stats
        if kind == "ready":
            stats.workers_ready += 1
        elif kind == "failed":
            self._failed_workers.append(f"worker {index}: {payload}")
        elif kind == "stopped":
            self._stopped_workers += 1
            if payload:
                stats.worker_reports.append(payload)
        elif kind in ("sweep", "sweep_error", "issue", "issue_error"):
            self._record_scheduled(kind, payload)
        elif kind == "invocation":
            stats.invocations += 1
            stats.cold_starts += bool(payload["cold_start"])
            stats.messages += payload["messages"]
            stats.deleted += payload["deleted"]
            stats.delete_errors += payload["delete_errors"]
            stats.item_failures += payload["item_failures"]
            stats.invocation_s += payload["seconds"]
            stats.timeouts += bool(payload.get("timeout"))
            if "snapshot" in payload:
                stats.worker_snapshots[index] = payload["snapshot"]
            if "started_at" in payload:
                first = stats.first_invocation_at
                stats.first_invocation_at = (
                    min(first, payload["started_at"]) if first else payload["started_at"]
                )
                stats.last_invocation_end_at = max(stats.last_invocation_end_at or 0.0, payload["ended_at"])
            if "handler_error" in payload:
                stats.handler_errors += 1
                if len(stats.errors) < 20:
                    stats.errors.append(f"worker {index}: {payload['handler_error']}")

    def drain(
        self,
        depth: Callable[[], tuple[int, int]],
        *,
        quiet_s: float = 1.5,
        timeout_s: float = 300.0,
        poll_s: float = 0.25,
        deleted: int | None = None,
    ) -> bool:
        """Waits until the queue stays empty (nothing visible, nothing in flight) for `quiet_s`,
        or, given `deleted`, until it is empty and the workers have deleted that many messages.

        `depth()` returns (ApproximateNumberOfMessages, ApproximateNumberOfMessagesNotVisible);
        `LocalStack.queue_depth` is one. Returns False if `timeout_s` passed first. A message a
        worker reported as failed counts as in flight until its visibility timeout ends.
        `deleted` is for a caller that knows how many messages it sent: once the counts say every
        one was handled, the quiet period is not waited for (a message dead-lettered instead is
        never counted, and the quiet period decides as without `deleted`).
        """
        deadline = time.monotonic() + timeout_s
        empty_since: float | None = None
        while time.monotonic() < deadline:
            visible, in_flight = depth()
            now = time.monotonic()
            if visible or in_flight:
                empty_since = None
            elif deleted is not None and self._deleted() >= deleted:
                return True
            elif empty_since is None:
                empty_since = now
            elif now - empty_since >= quiet_s:
                return True
            if self._processes and not any(p.is_alive() for p in self._processes):
                raise LocalStackError("every runner worker has exited; see the worker logs")
            time.sleep(poll_s)
        return False

    def _deleted(self) -> int:
        with self._lock:
            return self._stats.deleted

    def stop(self) -> None:
        """Asks every worker to finish its current invocation and exit; terminates stragglers."""
        self._stop.set()
        deadline = time.monotonic() + WORKER_STOP_TIMEOUT_S
        for process in self._processes:
            process.join(timeout=max(0.1, deadline - time.monotonic()))
        for process in self._processes:
            if process.is_alive():
                process.terminate()
                process.join(timeout=5)
            if process.is_alive():
                process.kill()
                process.join(timeout=5)
        if self._collector is not None:
            self._collector.join(timeout=2)
            self._collector = None
        # Reports still queued (the last invocations) are folded in before the queue is closed.
        with contextlib.suppress(queue.Empty, EOFError, OSError):
            while True:
                kind, index, payload = self._reports.get_nowait()
                with self._lock:
                    self._record(kind, index, payload)
        self._processes = []

    def __enter__(self) -> LocalRunner:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


# The template's scheduled ticket issuer (docs/guides/tickets.md).
ISSUER_FUNCTION = "IssueTicketsFunction"


def default_workers(maximum_concurrency: int | None, cap: int | None = None) -> int:
    """The template's MaximumConcurrency (Lambda's floor is 2), optionally capped."""
    workers = max(2, maximum_concurrency or 2)
    return min(workers, cap) if cap else workers


def runner_config(
    stack: LocalStack,
    *,
    workers: int | None = None,
    handler: str | None = None,
    sweep_interval_s: float | None = None,
    worker_setup: str | None = None,
    issuer: bool = False,
) -> RunnerConfig:
    """A RunnerConfig for a started `LocalStack` from its template: handler, timeout, memory, event
    source, the scheduled sweeper (its schedule, unless `sweep_interval_s` overrides it) and,
    with `issuer`, the ticket issuer (IssueTicketsFunction, run as `RunnerConfig` says)."""
    function = stack.template.function
    source = function.event_source
    others = [f for f in stack.template.scheduled_functions if f.logical_id != ISSUER_FUNCTION]
    scheduled = others[0] if others else None
    issuing = [f for f in stack.template.scheduled_functions if f.logical_id == ISSUER_FUNCTION]
    return RunnerConfig(
        queue_url=stack.queue_url,
        queue_arn=stack.queue_arn,
        environment=stack.environment(),
        function_name=stack.function_name,
        function_arn=stack.function_arn(),
        region=stack.region,
        handler=handler or function.handler,
        timeout_s=function.timeout_s,
        memory_mb=function.memory_mb,
        batch_size=source.batch_size,
        batching_window_s=source.maximum_batching_window_s,
        report_batch_item_failures=source.report_batch_item_failures,
        workers=workers or default_workers(source.concurrency),
        log_dir=stack.log_dir,
        sweep_handler=scheduled.handler if scheduled else None,
        sweep_interval_s=sweep_interval_s or (scheduled.interval_s if scheduled else 60.0),
        worker_setup=worker_setup,
        issue_handler=issuing[0].handler if issuer and issuing else None,
    )
