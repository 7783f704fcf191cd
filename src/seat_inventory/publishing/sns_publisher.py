"""The only module that talks to SNS: publishes outcomes with PublishBatch, ten per call.

The calls of one batch are made concurrently (a batch of 100 outcomes is ten calls; one after
the other they would take ten round trips of the invocation's time). A call the topic refuses for
the region's publish rate (`Throttled`: each message of a PublishBatch counts against it, and
botocore does not retry that code) is sent again while the caller's `retry_throttled` allows.

Each outcome is one SNS message. Its body is the JSON document in docs/reference/contract.md ("The answer");
its message attributes `outcome`, `type`, `event_id` and `seat_class` let subscribers filter (for
instance a filter policy `{"outcome": ["SOLD_OUT"]}` or `{"type": ["hold"]}`).

SNS speaks AWS's query protocol: botocore keeps a call's body as a dict of form fields and
URL-encodes it again each time it reads the body (signing reads it three times, sending once).
`encode_body_once` hooks the client so the body is encoded once, to the same bytes; a batch of 99
outcomes' ten calls cost about a third less CPU (`scripts/measure_function_cpu.py`).
"""

from __future__ import annotations

import json
import threading
import urllib.parse
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from seat_inventory.models import OrderLine, ReservationOutcome, iso_utc

if TYPE_CHECKING:
    from mypy_boto3_sns import SNSClient

PUBLISH_BATCH_LIMIT = 10
# How SNS answers a call over the region's publish rate (the API's ThrottledException; botocore's
# standard retry mode does not count "Throttled" among the throttling codes it retries itself).
THROTTLING_CODES = frozenset({"Throttled", "ThrottledException", "Throttling", "ThrottlingException"})
# Concurrent PublishBatch calls of one publication; a publication under way (`publish_soon`) has
# as many of its own (the client's connection pool is sized for both: `wiring.build_adapters`).
MAX_CONCURRENT_CALLS = 10
# The hook `encode_body_once` registers (once per client, however many publishers share it).
ENCODE_ONCE_HOOK = "seat-inventory-encode-body-once"


def encode_body_once(client: Any) -> None:
    """Makes the SNS `client` encode each request's form body once, before it is signed."""
    client.meta.events.register_first("request-created.sns", _encode_form_body, unique_id=ENCODE_ONCE_HOOK)


def _encode_form_body(request: Any, **_: Any) -> None:
    """The request's form fields, URL-encoded as botocore's `AWSRequestPreparer` encodes them,
    stored as the body (botocore then sends and signs these bytes as they are)."""
    if isinstance(request.data, dict):
        fields = [(_utf8(key), _utf8(value)) for key, value in request.data.items()]
        request.data = urllib.parse.urlencode(fields, doseq=True)


def _utf8(value: Any) -> Any:
    return value.encode("utf-8") if isinstance(value, str) else value


def outcome_document(outcome: ReservationOutcome) -> dict[str, Any]:
    """The JSON body subscribers receive.

    `type` is the message type answered (`reserve`, `hold`, `confirm`, `cancel`; `expire` for the
    sweeper's release of a hold; null when an INVALID body had no usable one). `expires_at`
    (ISO-8601 UTC) and `expires_at_epoch` are the end of the hold for answers about a hold, else null.
    """
    expires_at = outcome.hold_expires_at
    document: dict[str, Any] = {
        "reservation_id": outcome.reservation_id,
        "event_id": outcome.event_id,
        "seat_class": outcome.seat_class,
        "quantity": outcome.quantity,
        "customer_id": outcome.customer_id,
        "outcome": outcome.outcome.value,
        "remaining": outcome.remaining,
        "reason": outcome.reason,
        "duplicate": outcome.duplicate,
        "message_id": outcome.message_id,
        "type": outcome.request_type.value if outcome.request_type else None,
        "expires_at": iso_utc(expires_at) if expires_at is not None else None,
        "expires_at_epoch": expires_at,
    }
    if outcome.tickets is not None:
        # Only a TICKETED outcome (docs/guides/tickets.md) carries its formatted ticket numbers.
        document["tickets"] = list(outcome.tickets)
    if outcome.seats is not None:
        # A mapped class's seats (docs/guides/seat-maps.md): taken, or not free (SEATS_TAKEN), or stranded.
        document["seats"] = list(outcome.seats)
    if outcome.position is not None:
        # WAITLISTED (docs/guides/waiting-list.md): the entry's position on the list when it joined.
        document["position"] = outcome.position
    if outcome.lines is not None:
        # A multi-line order (docs/guides/orders.md): its lines as asked, in order (where their seats
        # came from is the record's, not the subscriber's).
        document["lines"] = [_line_document(line) for line in outcome.lines]
    return document


def _line_document(line: OrderLine) -> dict[str, Any]:
    """An order line as published: its class and seats, and a mapped line's seat ids."""
    document: dict[str, Any] = {"seat_class": line.seat_class, "quantity": line.quantity}
    if line.seats is not None:
        document["seats"] = list(line.seats)
    return document


def message_attributes(outcome: ReservationOutcome) -> dict[str, Any]:
    attributes = {"outcome": {"DataType": "String", "StringValue": outcome.outcome.value}}
    if outcome.request_type:
        attributes["type"] = {"DataType": "String", "StringValue": outcome.request_type.value}
    # SNS refuses empty attribute values; an INVALID message may have no usable event id.
    if outcome.event_id:
        attributes["event_id"] = {"DataType": "String", "StringValue": outcome.event_id}
    if outcome.seat_class:
        attributes["seat_class"] = {"DataType": "String", "StringValue": outcome.seat_class}
    return attributes


class PublicationUnderWay:
    """`SnsOutcomePublisher.publish_soon`'s publication: `wait` returns what `publish` returned."""

    def __init__(self, future: Future[list[ReservationOutcome]]) -> None:
        self._future = future

    def wait(self) -> list[ReservationOutcome]:
        return self._future.result()


class SnsOutcomePublisher:
    """`OutcomePublisher` over SNS PublishBatch."""

    def __init__(
        self, client: SNSClient, topic_arn: str, *, max_concurrent_calls: int = MAX_CONCURRENT_CALLS
    ) -> None:
        self._client = client
        encode_body_once(client)
        self._topic_arn = topic_arn
        # Calls in flight at once, over all threads that publish through this publisher (the
        # ticket issuer's series tasks share it: its pool is sized from the series at once).
        self._max_concurrent_calls = max_concurrent_calls
        # Pools made once (under a lock: several threads may publish at once) and kept as long
        # as the container, like the client: the calls of `publish`; the thread of `publish_soon`
        # and its own calls, so that a publication under way never holds up the next part's.
        self._pools: dict[str, ThreadPoolExecutor] = {}
        self._making_pool = threading.Lock()

    def publish(
        self,
        outcomes: Sequence[ReservationOutcome],
        *,
        retry_throttled: Callable[[int], bool] | None = None,
    ) -> list[ReservationOutcome]:
        """Publishes all outcomes; returns those SNS did not accept (whole failed calls included).

        A failure is not raised: the caller hands just those messages back to the queue, and
        their redelivery publishes the recorded answer again. Calls refused for the publish rate
        are made again first, as long as `retry_throttled(n)` returns True (it waits its back-off).
        """
        return self._publish_on("publish", outcomes, retry_throttled)

    def publish_soon(
        self,
        outcomes: Sequence[ReservationOutcome],
        *,
        retry_throttled: Callable[[int], bool] | None = None,
    ) -> PublicationUnderWay:
        """`publish` on a thread of its own, with calls of its own: the answers of one part of a
        batch go out while the next part is written. `wait` on what it returns."""
        behind = self._pool("publish-behind", 1)
        return PublicationUnderWay(behind.submit(self._publish_on, "publish-soon", outcomes, retry_throttled))

    def _publish_on(
        self, pool: str, outcomes: Sequence[ReservationOutcome], retry_throttled: Callable[[int], bool] | None
    ) -> list[ReservationOutcome]:
        chunks = [
            outcomes[start : start + PUBLISH_BATCH_LIMIT]
            for start in range(0, len(outcomes), PUBLISH_BATCH_LIMIT)
        ]
        failed, throttled = self._publish_chunks(pool, chunks)
        refusals = 0
        while throttled and retry_throttled is not None and retry_throttled(refusals):
            refusals += 1
            more_failed, throttled = self._publish_chunks(pool, throttled)
            failed += more_failed
        return failed + [o for chunk in throttled for o in chunk]

    def _pool(self, name: str, workers: int) -> ThreadPoolExecutor:
        with self._making_pool:
            if name not in self._pools:
                self._pools[name] = ThreadPoolExecutor(max_workers=workers, thread_name_prefix=name)
            return self._pools[name]

    def _publish_chunks(
        self, pool: str, chunks: Sequence[Sequence[ReservationOutcome]]
    ) -> tuple[list[ReservationOutcome], list[Sequence[ReservationOutcome]]]:
        """One call per chunk, concurrently on `pool`: what failed, and the chunks refused for the rate."""
        if len(chunks) <= 1:
            results = [self._publish_chunk(chunk) for chunk in chunks]
        else:
            # map() re-raises what a call raised that is not an AWS error (the invocation fails).
            calls = self._pool(pool, self._max_concurrent_calls)
            results = list(calls.map(self._publish_chunk, chunks))
        failed = [o for chunk_failed, _ in results for o in chunk_failed]
        throttled = [chunk for chunk, (_, refused) in zip(chunks, results, strict=True) if refused]
        return failed, throttled

    def _publish_chunk(self, chunk: Sequence[ReservationOutcome]) -> tuple[list[ReservationOutcome], bool]:
        """The outcomes of one call that were not published, or ([], True) when SNS refused the
        whole call for the publish rate."""
        entries = [
            {
                "Id": str(index),
                "Message": json.dumps(outcome_document(outcome), separators=(",", ":")),
                "MessageAttributes": message_attributes(outcome),
            }
            for index, outcome in enumerate(chunk)
        ]
        try:
            response = self._client.publish_batch(
                TopicArn=self._topic_arn,
                PublishBatchRequestEntries=entries,  # type: ignore[arg-type]
            )
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in THROTTLING_CODES:
                return [], True
            # Any other failed call (KMS, authorisation, a fault botocore gave up on) is retried
            # through the queue; the stored answer makes the retry take no seats.
            return list(chunk), False
        except BotoCoreError:
            return list(chunk), False
        return [chunk[int(entry["Id"])] for entry in response.get("Failed", [])], False
