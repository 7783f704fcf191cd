"""Client-side traffic tools: build reservation bodies, send bursts, watch outcomes, handle the DLQ.

Used by the `seats` command line and by the local demo, so it has no click in it: functions
take boto3 clients and plain values and return plain values. These tools are producers and
consumers *outside* the service; they talk to SQS and SNS only through their public APIs.
"""

from __future__ import annotations

import json
import random
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from datetime import UTC, datetime
from types import TracebackType
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError, ConnectionClosedError, ReadTimeoutError

from seat_inventory.parsing import MAX_ID_LENGTH, id_problem
from seat_tools.reservation_queues import MAX_RESERVATION_QUEUES, queue_index, queue_name

SQS_BATCH_LIMIT = 10
# Entries that SQS refused for a reason of its own (throttling, an internal error) are sent
# again this many times in all, with exponential back-off and jitter, before they count as failed.
SEND_ATTEMPTS = 5
SEND_BACKOFF_S = 0.05
SEND_BACKOFF_MAX_S = 2.0
# Whole-call errors that mean "try again later"; 5xx responses are retried too.
RETRYABLE_SQS_CODES = frozenset(
    {
        "ThrottlingException",
        "RequestThrottled",
        "AWS.SimpleQueueService.RequestThrottled",
        "KmsThrottled",
        "ServiceUnavailable",
        "InternalError",
        "InternalFailure",
        "RequestTimeout",
    }
)

# Long-poll time used to decide that a queue has nothing more to give. Long polling asks every
# SQS server, so an empty answer is trustworthy; a short poll may miss messages that exist.
EMPTY_QUEUE_WAIT_S = 1
# Peeked messages are hidden this long while the next ones are read (otherwise SQS keeps
# returning the same first few), then made visible again; a crash in between only delays them.
PEEK_HOLD_S = 30
# A message being redriven is hidden this long between its send and its delete.
REDRIVE_HOLD_S = 60

DEFAULT_WATCH_QUEUE_PREFIX = "seats-watch-"
WATCH_QUEUE_RETENTION_S = 3600


# --------------------------------------------------------------------------- bodies and bursts


def reservation_body(
    reservation_id: str, event_id: str, quantity: int, customer_id: str, seat_class: str | None = None
) -> dict[str, Any]:
    """One reservation message as the service expects it (docs/reference/contract.md).

    `seat_class` is left out when None so that the service applies its default class.
    """
    body: dict[str, Any] = {
        "reservation_id": reservation_id,
        "event_id": event_id,
        "quantity": quantity,
        "customer_id": customer_id,
    }
    if seat_class is not None:
        body["seat_class"] = seat_class
    return body


def plan_burst(
    event_id: str,
    requests: int,
    *,
    duplicates_pct: float = 0.0,
    seat_class: str | None = None,
    max_quantity: int = 4,
    multi_seat_share: float = 0.2,
    seed: int | None = None,
    id_prefix: str | None = None,
) -> list[dict[str, Any]]:
    """`requests` message bodies in send order, some of them exact re-sends, to load-test dedupe.

    round(requests * duplicates_pct / 100) bodies (at most requests - 1) are copies of an
    earlier body placed later in the list, as a producer retrying after a lost acknowledgement
    would send them. The others have distinct reservation ids `<prefix>-<counter>`; a share
    `multi_seat_share` of them (rounded) ask for 2..max_quantity seats, the rest for one.

    Quantities, customers and duplicate positions are deterministic for a given `seed`. The
    default prefix is random (`r-<8 hex>`) so that two runs never share reservation ids (the
    second would be answered entirely from the first's records); pass `id_prefix` as well to
    make the whole list reproducible.
    """
    if requests < 0:
        raise ValueError(f"requests must be at least 0, got {requests}")
    if not 0 <= duplicates_pct <= 100:
        raise ValueError(f"duplicates_pct must be between 0 and 100, got {duplicates_pct}")
    if not 0 <= multi_seat_share <= 1:
        raise ValueError(f"multi_seat_share must be between 0 and 1, got {multi_seat_share}")
    if max_quantity < 1:
        raise ValueError(f"max_quantity must be at least 1, got {max_quantity}")
    prefix = id_prefix if id_prefix is not None else f"r-{uuid.uuid4().hex[:8]}"
    problem = id_problem("id_prefix", prefix, MAX_ID_LENGTH - 16)
    if problem:
        raise ValueError(problem)
    if requests == 0:
        return []

    rng = random.Random(seed)
    duplicates = min(round(requests * duplicates_pct / 100), requests - 1)
    distinct = requests - duplicates
    width = max(6, len(str(distinct)))
    multi = round(distinct * multi_seat_share) if max_quantity >= 2 else 0
    multi_positions = set(rng.sample(range(distinct), multi))
    # A pool about half the size of the burst: most customers send one request, some several.
    customers = max(1, distinct // 2)

    originals = [
        reservation_body(
            reservation_id=f"{prefix}-{index:0{width}d}",
            event_id=event_id,
            quantity=rng.randint(2, max_quantity) if index in multi_positions else 1,
            customer_id=f"c-{rng.randrange(customers):0{width}d}",
            seat_class=seat_class,
        )
        for index in range(distinct)
    ]
    # Each body gets a sort key: originals keep their index, a re-send of original i gets a
    # key drawn after i. Sorting (originals first on ties) interleaves them in O(n log n).
    keyed: list[tuple[float, int, int, dict[str, Any]]] = [
        (float(index), 0, index, body) for index, body in enumerate(originals)
    ]
    for number in range(duplicates):
        source = rng.randrange(distinct)
        position = source + rng.random() * (distinct - source)
        keyed.append((position, 1, number, dict(originals[source])))
    keyed.sort(key=lambda entry: entry[:3])
    return [body for _, _, _, body in keyed]


# --------------------------------------------------------------------------- sending


@dataclass
class SendReport:
    """What `send_messages` did. `failed` messages were not accepted by SQS even after retries.

    `first_error` describes the first refusal (error code and message), so that a caller can
    say why something failed (a wrong queue URL fails every batch the same way).
    """

    sent: int
    failed: int
    elapsed_s: float
    first_error: str | None = None

    @property
    def per_second(self) -> float:
        return self.sent / self.elapsed_s if self.elapsed_s > 0 else 0.0


@dataclass
class _BatchResult:
    sent: int
    failed: int
    error: str | None


def _is_retryable(exc: Exception) -> bool:
    if isinstance(exc, ClientError):
        error = exc.response.get("Error", {})
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0)
        return error.get("Code", "") in RETRYABLE_SQS_CODES or status >= 500
    # Network errors (connection refused or reset, timeouts) after botocore's own retries.
    return isinstance(exc, BotoCoreError)


def _describe_error(exc: Exception) -> str:
    if isinstance(exc, ClientError):
        error = exc.response.get("Error", {})
        return f"{error.get('Code', 'Error')}: {error.get('Message', '')}".strip()
    return f"{type(exc).__name__}: {exc}"


def _backoff(attempt: int) -> None:
    delay = min(SEND_BACKOFF_MAX_S, SEND_BACKOFF_S * 2**attempt)
    time.sleep(delay * (0.5 + random.random() / 2))


def _send_batch(sqs_client: Any, queue_url: str, bodies: Sequence[str]) -> _BatchResult:
    """Sends up to ten bodies; re-sends the entries SQS could not take, a bounded number of times."""
    pending = dict(enumerate(bodies))
    sent = 0
    failed = 0
    error: str | None = None
    for attempt in range(SEND_ATTEMPTS):
        if attempt:
            _backoff(attempt - 1)
        entries = [{"Id": str(index), "MessageBody": body} for index, body in pending.items()]
        try:
            response = sqs_client.send_message_batch(QueueUrl=queue_url, Entries=entries)
        except (ClientError, BotoCoreError) as exc:
            error = error or _describe_error(exc)
            if not _is_retryable(exc):
                break
            continue
        for entry in response.get("Successful", []):
            if pending.pop(int(entry["Id"]), None) is not None:
                sent += 1
        for entry in response.get("Failed", []):
            error = error or f"{entry.get('Code', 'Error')}: {entry.get('Message', '')}".strip()
            # A sender fault means the message itself is wrong (too large, bad characters):
            # resending cannot help.
            if entry.get("SenderFault") and pending.pop(int(entry["Id"]), None) is not None:
                failed += 1
        if not pending:
            break
    failed += len(pending)
    return _BatchResult(sent=sent, failed=failed, error=error)


def reservation_queue_urls(sqs_client: Any, first_queue_url: str) -> list[str]:
    """The URLs of a stack's reservation queues, the first one's first: the queues named as the
    template's `ReservationQueues` names them (`<first>-1`, `-2`, `-3`) that exist."""
    name = first_queue_url.rpartition("/")[2]
    urls = [first_queue_url]
    for index in range(1, MAX_RESERVATION_QUEUES):
        try:
            urls.append(sqs_client.get_queue_url(QueueName=queue_name(name, index))["QueueUrl"])
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") not in _NO_SUCH_QUEUE:
                raise
            break
    return urls


_NO_SUCH_QUEUE = frozenset({"AWS.SimpleQueueService.NonExistentQueue", "QueueDoesNotExist"})


def send_messages(
    sqs_client: Any,
    queue_url: str | Sequence[str],
    bodies: Sequence[Mapping[str, Any]],
    *,
    concurrency: int = 8,
    on_sent: Callable[[int], None] | None = None,
) -> SendReport:
    """Sends every body to the queue with SendMessageBatch (ten per call) from `concurrency` threads.
    Given several queues (a stack's reservation queues, `reservation_queue_urls`), each body goes
    to the one its reservation id picks (`reservation_queues.queue_index`), as the checkout API
    sends it.

    Nothing is dropped silently: entries SQS refuses are retried with back-off, and what still
    could not be sent is counted in `failed`. `on_sent(n)` is called from the calling thread
    (so a progress bar needs no locking) as each batch finishes, with the number it sent.
    Ctrl-C cancels the batches not yet started and waits for those in flight.
    """
    if concurrency < 1:
        raise ValueError(f"concurrency must be at least 1, got {concurrency}")
    urls = [queue_url] if isinstance(queue_url, str) else list(queue_url)
    encoded: list[list[str]] = [[] for _ in urls]
    for body in bodies:
        reservation_id = body.get("reservation_id")
        index = queue_index(reservation_id, len(urls)) if isinstance(reservation_id, str) else 0
        encoded[index].append(json.dumps(body, separators=(",", ":")))
    batches = [
        (url, texts[start : start + SQS_BATCH_LIMIT])
        for url, texts in zip(urls, encoded, strict=True)
        for start in range(0, len(texts), SQS_BATCH_LIMIT)
    ]
    sent = 0
    failed = 0
    first_error: str | None = None
    started = time.monotonic()
    executor = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="seats-send")
    try:
        # Submitting lazily keeps at most 2 x concurrency batches queued: an interrupted
        # burst of a million messages does not leave 100,000 futures to cancel.
        remaining: Iterator[tuple[str, list[str]]] = iter(batches)
        in_flight: set[Future[_BatchResult]] = set()
        while True:
            while len(in_flight) < 2 * concurrency:
                batch = next(remaining, None)
                if batch is None:
                    break
                in_flight.add(executor.submit(_send_batch, sqs_client, *batch))
            if not in_flight:
                break
            done, in_flight = wait(in_flight, return_when=FIRST_COMPLETED)
            for future in done:
                result = future.result()
                sent += result.sent
                failed += result.failed
                first_error = first_error or result.error
                if on_sent is not None and result.sent:
                    on_sent(result.sent)
    finally:
        executor.shutdown(wait=True, cancel_futures=True)
    return SendReport(sent=sent, failed=failed, elapsed_s=time.monotonic() - started, first_error=first_error)


# --------------------------------------------------------------------------- watching outcomes


def _parse_document(body: str) -> dict[str, Any]:
    try:
        document = json.loads(body)
    except ValueError:
        return {"raw_body": body}
    return document if isinstance(document, dict) else {"raw_body": body}


class OutcomeCollector:
    """A temporary SQS queue subscribed to the outcomes topic, for watching and for tests.

    Use it as a context manager: entering creates the queue (with a policy letting the topic
    send to it) and subscribes it with raw message delivery, so each message body is exactly
    the outcome document; `outcome` / `event_id` become a filter policy on the message
    attributes the publisher sets, so SNS drops the others before they reach the queue.
    Leaving unsubscribes and deletes the queue, whatever ended the block (Ctrl-C included).

    SNS applies a new subscription (and its filter policy) within seconds, not instantly on
    AWS: outcomes published right after entering may be missed.
    """

    def __init__(
        self,
        sns_client: Any,
        sqs_client: Any,
        topic_arn: str,
        *,
        outcome: str | None = None,
        event_id: str | None = None,
        queue_name: str | None = None,
    ) -> None:
        self._sns = sns_client
        self._sqs = sqs_client
        self.topic_arn = topic_arn
        self.outcome = outcome
        self.event_id = event_id
        self.queue_name = queue_name or f"{DEFAULT_WATCH_QUEUE_PREFIX}{uuid.uuid4().hex[:12]}"
        self.queue_url: str | None = None
        self.queue_arn: str | None = None
        self.subscription_arn: str | None = None
        self._seen_message_ids: set[str] = set()

    @property
    def filter_policy(self) -> dict[str, list[str]] | None:
        """The SNS filter policy on message attributes, or None to receive every outcome."""
        policy: dict[str, list[str]] = {}
        if self.outcome:
            policy["outcome"] = [self.outcome]
        if self.event_id:
            policy["event_id"] = [self.event_id]
        return policy or None

    def _queue_policy(self, queue_arn: str) -> str:
        return json.dumps(
            {
                "Version": "2012-10-17",
                "Statement": [
                    {
                        "Sid": "AllowOutcomesTopic",
                        "Effect": "Allow",
                        "Principal": {"Service": "sns.amazonaws.com"},
                        "Action": "sqs:SendMessage",
                        "Resource": queue_arn,
                        "Condition": {"ArnEquals": {"aws:SourceArn": self.topic_arn}},
                    }
                ],
            }
        )

    def __enter__(self) -> OutcomeCollector:
        try:
            self.queue_url = self._sqs.create_queue(
                QueueName=self.queue_name,
                Attributes={
                    "MessageRetentionPeriod": str(WATCH_QUEUE_RETENTION_S),
                    "SqsManagedSseEnabled": "true",
                },
                tags={"seat-inventory": "outcome-watch"},
            )["QueueUrl"]
            self.queue_arn = self._sqs.get_queue_attributes(
                QueueUrl=self.queue_url, AttributeNames=["QueueArn"]
            )["Attributes"]["QueueArn"]
            self._sqs.set_queue_attributes(
                QueueUrl=self.queue_url, Attributes={"Policy": self._queue_policy(self.queue_arn)}
            )
            attributes = {"RawMessageDelivery": "true"}
            policy = self.filter_policy
            if policy:
                attributes["FilterPolicyScope"] = "MessageAttributes"
                attributes["FilterPolicy"] = json.dumps(policy)
            self.subscription_arn = self._sns.subscribe(
                TopicArn=self.topic_arn,
                Protocol="sqs",
                Endpoint=self.queue_arn,
                Attributes=attributes,
                ReturnSubscriptionArn=True,
            )["SubscriptionArn"]
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close(raise_errors=exc is None)

    def close(self, *, raise_errors: bool = False) -> None:
        """Removes the subscription and the queue; safe to call twice.

        Both steps are always attempted. A failure is raised only when asked (so that it never
        hides the exception that ended the `with` block).
        """
        errors: list[Exception] = []
        if self.subscription_arn:
            try:
                self._sns.unsubscribe(SubscriptionArn=self.subscription_arn)
                self.subscription_arn = None
            except (ClientError, BotoCoreError) as exc:
                errors.append(exc)
        if self.queue_url:
            try:
                self._sqs.delete_queue(QueueUrl=self.queue_url)
                self.queue_url = None
            except (ClientError, BotoCoreError) as exc:
                errors.append(exc)
        if errors and raise_errors:
            raise errors[0]

    def poll(self, wait_seconds: int = 1) -> list[dict[str, Any]]:
        """Receives up to ten outcomes (long-polling `wait_seconds`), deletes them, returns the documents."""
        if self.queue_url is None:
            raise RuntimeError("OutcomeCollector.poll() needs the collector to be entered (`with`)")
        messages = self._sqs.receive_message(
            QueueUrl=self.queue_url, MaxNumberOfMessages=SQS_BATCH_LIMIT, WaitTimeSeconds=wait_seconds
        ).get("Messages", [])
        if not messages:
            return []
        self._sqs.delete_message_batch(
            QueueUrl=self.queue_url,
            Entries=[
                {"Id": str(index), "ReceiptHandle": message["ReceiptHandle"]}
                for index, message in enumerate(messages)
            ],
        )
        documents = []
        for message in messages:
            # A message whose delete failed comes back after the visibility timeout; show it once.
            if message["MessageId"] in self._seen_message_ids:
                continue
            self._seen_message_ids.add(message["MessageId"])
            documents.append(_parse_document(message["Body"]))
        return documents

    def collect(
        self,
        *,
        until: Callable[[list[dict[str, Any]]], bool],
        timeout_s: float,
        idle_s: float | None = None,
    ) -> list[dict[str, Any]]:
        """Polls until `until(documents_so_far)` is true, or `timeout_s` passed, or `idle_s` went by
        with nothing new; returns every document received."""
        documents: list[dict[str, Any]] = []
        started = last_new = time.monotonic()
        while not until(documents):
            now = time.monotonic()
            left = timeout_s - (now - started)
            if idle_s is not None:
                left = min(left, idle_s - (now - last_new))
            if left <= 0:
                break
            # WaitTimeSeconds is whole seconds; below one second, short-poll and pause briefly.
            wait_seconds = 1 if left >= 1 else 0
            batch = self.poll(wait_seconds=wait_seconds)
            if batch:
                documents.extend(batch)
                last_new = time.monotonic()
            elif wait_seconds == 0:
                time.sleep(min(0.1, left))
        return documents


# --------------------------------------------------------------------------- dead letters


def _sent_at(attributes: Mapping[str, str]) -> str | None:
    raw = attributes.get("SentTimestamp")
    if not raw:
        return None
    return datetime.fromtimestamp(int(raw) / 1000, tz=UTC).isoformat(timespec="seconds")


def _release(sqs_client: Any, queue_url: str, receipt_handles: Sequence[str]) -> None:
    """Makes received messages visible again at once."""
    for start in range(0, len(receipt_handles), SQS_BATCH_LIMIT):
        chunk = receipt_handles[start : start + SQS_BATCH_LIMIT]
        sqs_client.change_message_visibility_batch(
            QueueUrl=queue_url,
            Entries=[
                {"Id": str(index), "ReceiptHandle": handle, "VisibilityTimeout": 0}
                for index, handle in enumerate(chunk)
            ],
        )


def peek_dead_letters(sqs_client: Any, dlq_url: str, *, max_messages: int = 100) -> list[dict[str, Any]]:
    """Reads up to `max_messages` dead letters without consuming them.

    Each is a dict with message_id, body (the exact text), receive_count and sent_at (ISO UTC).
    Messages are hidden for a moment while the next ones are read, then made visible again
    (also on errors); a receive with visibility 0 alone would keep returning the same ten.
    Reading increments each message's ApproximateReceiveCount, as any receive does.
    """
    found: dict[str, dict[str, Any]] = {}
    handles: list[str] = []
    # Bounded: every round either finds something new or ends the loop; the bound guards against
    # a queue that keeps handing back already-seen messages.
    max_rounds = -(-max_messages // SQS_BATCH_LIMIT) + 5
    try:
        for _ in range(max_rounds):
            wanted = max_messages - len(found)
            if wanted <= 0:
                break
            messages = sqs_client.receive_message(
                QueueUrl=dlq_url,
                MaxNumberOfMessages=min(SQS_BATCH_LIMIT, wanted),
                VisibilityTimeout=PEEK_HOLD_S,
                WaitTimeSeconds=EMPTY_QUEUE_WAIT_S,
                MessageSystemAttributeNames=["ApproximateReceiveCount", "SentTimestamp"],
            ).get("Messages", [])
            new = 0
            for message in messages:
                handles.append(message["ReceiptHandle"])
                if message["MessageId"] in found or len(found) >= max_messages:
                    continue
                attributes = message.get("Attributes", {})
                found[message["MessageId"]] = {
                    "message_id": message["MessageId"],
                    "body": message["Body"],
                    "receive_count": int(attributes.get("ApproximateReceiveCount", 0)),
                    "sent_at": _sent_at(attributes),
                }
                new += 1
            if not new:
                break
    finally:
        _release(sqs_client, dlq_url, handles)
    return list(found.values())


class RedriveIncomplete(Exception):
    """A redrive stopped at an SQS error; says what became of the messages it had in hand.

    `moved` were sent and deleted from the DLQ. `unsent` were refused (or never sent) and stay
    in the DLQ. `maybe_sent` got no answer to their send: they stay in the DLQ and may also be on
    the queue. `not_deleted` were sent but their deletion from the DLQ failed (or got no answer):
    they may come back there after the redrive's visibility hold. A copy on both queues is
    answered once per reservation id by the service, so redriving again is always safe.
    """

    def __init__(
        self, moved: int, refused: int, error: str, *, maybe_sent: int = 0, not_deleted: int = 0
    ) -> None:
        parts = [f"moved {moved} message(s)"]
        if refused:
            parts.append(f"{refused} could not be sent back and stay in the DLQ")
        if maybe_sent:
            parts.append(
                f"{maybe_sent} got no answer from SQS: they stay in the DLQ and may also have reached"
                " the queue (the service answers a reservation id once, so redriving them again is safe)"
            )
        if not_deleted:
            parts.append(
                f"{not_deleted} were sent but may not have been deleted from the DLQ: they come back"
                f" there after {REDRIVE_HOLD_S} s (redriving them again is safe)"
            )
        super().__init__("; ".join(parts) + f": {error}")
        self.moved = moved
        self.refused = refused
        self.maybe_sent = maybe_sent
        self.not_deleted = not_deleted
        self.error = error


def _no_answer(exc: Exception) -> bool:
    """Whether a failed SQS call may have been carried out: no reply came, or SQS failed inside."""
    if isinstance(exc, ReadTimeoutError | ConnectionClosedError):
        return True
    return (
        isinstance(exc, ClientError)
        and exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) >= 500
    )


def redrive_dead_letters(
    sqs_client: Any, dlq_url: str, queue_url: str, *, max_messages: int | None = None
) -> int:
    """Moves dead letters back to the reservations queue; returns how many moved.

    Each message is sent to `queue_url` (same body and message attributes) before it is
    deleted from the DLQ: a crash in between leaves a copy in both, which the service answers
    once since it dedupes by reservation_id; nothing can be lost. Stops at the first error and
    raises `RedriveIncomplete`, which counts what was moved and says where the rest is.
    """
    moved = 0
    while max_messages is None or moved < max_messages:
        wanted = SQS_BATCH_LIMIT if max_messages is None else min(SQS_BATCH_LIMIT, max_messages - moved)
        try:
            messages = sqs_client.receive_message(
                QueueUrl=dlq_url,
                MaxNumberOfMessages=wanted,
                VisibilityTimeout=REDRIVE_HOLD_S,
                WaitTimeSeconds=EMPTY_QUEUE_WAIT_S,
                MessageAttributeNames=["All"],
            ).get("Messages", [])
        except (ClientError, BotoCoreError) as exc:
            held = (
                f" (what it took comes back to the DLQ within {REDRIVE_HOLD_S} s)" if _no_answer(exc) else ""
            )
            raise RedriveIncomplete(moved, 0, _describe_error(exc) + held) from exc
        if not messages:
            break
        entries = []
        for index, message in enumerate(messages):
            entry: dict[str, Any] = {"Id": str(index), "MessageBody": message["Body"]}
            if message.get("MessageAttributes"):
                entry["MessageAttributes"] = message["MessageAttributes"]
            entries.append(entry)
        try:
            response = sqs_client.send_message_batch(QueueUrl=queue_url, Entries=entries)
        except (ClientError, BotoCoreError) as exc:
            _release(sqs_client, dlq_url, [message["ReceiptHandle"] for message in messages])
            if _no_answer(exc):
                raise RedriveIncomplete(moved, 0, _describe_error(exc), maybe_sent=len(messages)) from exc
            raise RedriveIncomplete(moved, len(messages), _describe_error(exc)) from exc
        sent_ids = {int(entry["Id"]) for entry in response.get("Successful", [])}
        sent = [messages[index] for index in sorted(sent_ids)]
        if sent:
            try:
                sqs_client.delete_message_batch(
                    QueueUrl=dlq_url,
                    Entries=[
                        {"Id": str(index), "ReceiptHandle": message["ReceiptHandle"]}
                        for index, message in enumerate(sent)
                    ],
                )
            except (ClientError, BotoCoreError) as exc:
                raise RedriveIncomplete(moved, 0, _describe_error(exc), not_deleted=len(sent)) from exc
            moved += len(sent)
        refused = [message for index, message in enumerate(messages) if index not in sent_ids]
        if refused:
            _release(sqs_client, dlq_url, [message["ReceiptHandle"] for message in refused])
            failures = response.get("Failed") or [{}]
            error = f"{failures[0].get('Code', 'Error')}: {failures[0].get('Message', '')}"
            raise RedriveIncomplete(moved, len(refused), error)
    return moved


# The event's classes: one per line an order may have (MAX_ORDER_LINES), so an order of 4 lines
# takes from every class.
ORDER_CLASSES = ("ADULT", "CHILD", "SENIOR", "PARKING")


@dataclass(frozen=True)
class OrderRequests:
    """The lines of every order of the run: `lines[i]` is request i's (class, seats) pairs."""

    lines: list[tuple[tuple[str, int], ...]]

    @classmethod
    def draw(
        cls, requests: int, order_lines: tuple[int, int], seats_per_line: int, rng: random.Random
    ) -> OrderRequests:
        low, high = order_lines
        drawn = []
        for _ in range(requests):
            classes = rng.sample(ORDER_CLASSES, rng.randint(low, high))
            drawn.append(tuple((seat_class, seats_per_line) for seat_class in classes))
        return cls(drawn)

    def line_objects(self, request: int) -> list[dict[str, object]]:
        return [{"seat_class": c, "quantity": q} for c, q in self.lines[request]]

    def refusal_contradicted(
        self, request: int, seat_class: str | None, class_left: int, pool_left: int | None
    ) -> bool:
        """Whether request `request`, refused SOLD_OUT for its line of `seat_class`, is refuted by
        what that class and the pool of every class have left at the end of a run in which seats
        only go (so they had at least that at the refusal): the line's seats in its class and,
        in the pool (None: no pool), the seats of the lines up to and including it, since a line
        is judged on what the pool has after the lines before it (docs/guides/orders.md: lines
        that each fit the pool alone may not fit it together). A refusal naming no line of the
        request is refuted."""
        asked = self.lines[request]
        index = next((n for n, (c, _) in enumerate(asked) if c == seat_class), None)
        if index is None:
            return True
        through = sum(seats for _, seats in asked[: index + 1])
        return class_left >= asked[index][1] and (pool_left is None or pool_left >= through)

    @property
    def line_count(self) -> int:
        return sum(len(lines) for lines in self.lines)
