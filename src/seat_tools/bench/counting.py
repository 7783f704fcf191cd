"""Counts every AWS request a process makes, from botocore's own events, for the benchmark.

`install(worker_index)` is a runner `worker_setup` hook: in a worker process it makes every boto3
client created afterwards (the handler's and the SQS poller's) report to one `RequestCounter`,
and returns the counter's `snapshot`. The counter listens to these botocore events per client:

- `before-parameter-build.dynamodb.*`: asks DynamoDB for `ReturnConsumedCapacity=TOTAL` (so the
  engine reports what it charged) and notes the writes each request makes to an inventory item
  (`EVENT#...` / `CLASS#...`, the hot item of an on-sale) and the size of each item it puts;
- `before-send.*.*`: one HTTP request sent (retries included), by `<service>.<Operation>`;
- `response-received.dynamodb.*`: each attempt's answer (botocore retries throttled requests
  itself, so a call may be several attempts): committed or cancelled transactions by
  cancellation reason, the write units a cancelled transaction carried, throttled attempts,
  every DynamoDB error by code;
- `after-call.*.*`: the reply, with the `ConsumedCapacity` it carries; for the poller's
  `ReceiveMessage`, each message's `SentTimestamp` and `ApproximateFirstReceiveTimestamp`;
- `before-parameter-build.sns.*`: each outcome published, counted by outcome (and SOLD_OUT by
  event); the time since its message was sent (and first received) goes into a latency
  histogram (`latency_bucket`).

Billed capacity is derived from the request and the item sizes with DynamoDB's rules (see
`bench.pricing`), because DynamoDB Local reports 2 units for a whole `TransactWriteItems` of 100
actions, where DynamoDB bills 2 per action and KB.
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import boto3

from seat_inventory.dal.items import CLASS_PREFIX, INVENTORY_PREFIX

KB = 1024
# The operations that accept ReturnConsumedCapacity.
_CAPACITY_OPERATIONS = frozenset(
    {
        "GetItem",
        "PutItem",
        "UpdateItem",
        "DeleteItem",
        "Query",
        "Scan",
        "BatchGetItem",
        "BatchWriteItem",
        "TransactWriteItems",
        "TransactGetItems",
    }
)


def attribute_size(value: Mapping[str, Any]) -> int:
    """Bytes of one attribute value by DynamoDB's item size rules (numbers: about 1 byte per two
    significant digits plus one; lists and maps: 3 bytes plus 1 per element)."""
    kind, content = next(iter(value.items()))
    if kind == "S":
        return len(content.encode())
    if kind == "N":
        digits = str(content).lstrip("-").replace(".", "").strip("0") or "0"
        return math.ceil(len(digits) / 2) + 1
    if kind == "B":
        return len(content)
    if kind in ("BOOL", "NULL"):
        return 1
    if kind in ("SS", "NS", "BS"):
        return sum(attribute_size({kind[0]: member}) for member in content)
    if kind == "L":
        return 3 + sum(1 + attribute_size(member) for member in content)
    if kind == "M":
        return 3 + sum(1 + len(name.encode()) + attribute_size(member) for name, member in content.items())
    raise ValueError(f"unknown DynamoDB type {kind!r}")


def item_size(item: Mapping[str, Mapping[str, Any]]) -> int:
    """Bytes of a DynamoDB item: each attribute's name plus its value."""
    return sum(len(name.encode()) + attribute_size(value) for name, value in item.items())


def is_inventory_partition(key: Mapping[str, Mapping[str, Any]] | None) -> bool:
    """Whether a key is in a seat class's inventory partition (`pk EVENT#...`)."""
    return bool(key) and key.get("pk", {}).get("S", "").startswith(INVENTORY_PREFIX)  # type: ignore[union-attr]


def _message_fields(body: str) -> tuple[str | None, str | None, str | None]:
    """The reservation id, outcome and event id of a request or outcome message (JSON), where
    present."""
    try:
        document = json.loads(body)
    except ValueError:
        return None, None, None
    if not isinstance(document, dict):
        return None, None, None
    fields = (document.get("reservation_id"), document.get("outcome"), document.get("event_id"))
    text = [value if isinstance(value, str) else None for value in fields]
    return text[0], text[1], text[2]


# The table's global secondary indexes (template.yaml), by their partition key attribute, and
# whether an entry carries the whole item (ProjectionType ALL) or a few attributes (under 1 KB).
INDEX_KEYS = {"gsi1pk": True, "gsi2pk": False}  # HoldsByExpiry (ALL), TicketsToIssue (INCLUDE)


def index_write_units(item: Mapping[str, Any] | None = None, update_expression: str = "") -> float:
    """Write units DynamoDB bills to the indexes for one write (1 per KB of each index entry
    written or deleted, never doubled by a transaction): a put of an item with an index's key
    writes its entry; an update that sets or removes an index's key writes or deletes one (the
    item's other attributes are under 1 KB). Updates that change only a projected attribute of an
    item already in an index are not counted (the service makes none on a hot path)."""
    units = 0.0
    for attribute, whole_item in INDEX_KEYS.items():
        if item is not None and attribute in item:
            units += math.ceil(item_size(item) / KB) if whole_item else 1
        elif attribute in update_expression:
            units += 1
    return units


def is_inventory_key(key: Mapping[str, Mapping[str, Any]] | None) -> bool:
    """Whether a key names a seat class's inventory item (the item every reservation of an event hits)."""
    if not key:
        return False
    pk = key.get("pk", {}).get("S", "")
    sk = key.get("sk", {}).get("S", "")
    return pk.startswith(INVENTORY_PREFIX) and sk.startswith(CLASS_PREFIX)


# What a TransactWriteItems request carries from before-parameter-build to each attempt's answer,
# in botocore's per-request context: its write units and whether it touches an inventory item.
_TRANSACTION_UNITS = "seat_inventory_bench_transaction_units"
_TRANSACTION_HOT = "seat_inventory_bench_transaction_hot"
_TRANSACTION_ACTIONS = "seat_inventory_bench_transaction_actions"
_TRANSACTION_ITEMS = "seat_inventory_bench_transaction_items"

# Error codes of a throttled DynamoDB request, and cancellation reasons of a throttled transaction.
THROTTLING_CODES = frozenset(
    {"ThrottlingException", "ProvisionedThroughputExceededException", "RequestLimitExceeded"}
)
THROTTLING_REASONS = frozenset({"ThrottlingError", "ProvisionedThroughputExceeded"})
TRANSACTION_CANCELED = "TransactionCanceledException"
COMMITTED = "committed"
# Resolution of the confirmed-outcome timeline (`RequestCounter.confirmed_at`): buckets per second.
CONFIRMED_AT_PER_S = 10

# Latency histogram buckets: bucket k holds latencies in (GROWTH**(k-1), GROWTH**k] milliseconds,
# so a percentile read from it is at most 5 % above the true one; bucket 0 holds up to 1 ms.
LATENCY_GROWTH = 1.05


def latency_bucket(seconds: float) -> int:
    milliseconds = seconds * 1000
    return 0 if milliseconds <= 1 else math.ceil(math.log(milliseconds) / math.log(LATENCY_GROWTH))


def latency_percentile(histogram: Mapping[Any, int], fraction: float) -> float | None:
    """The latency (seconds, the upper edge of its bucket) below which `fraction` of the histogram's
    values lie; None for an empty histogram. Keys may be ints or their strings (from JSON)."""
    counts = sorted((int(bucket), n) for bucket, n in histogram.items() if n)
    total = sum(n for _, n in counts)
    if not total:
        return None
    rank = math.ceil(fraction * total)
    seen = 0
    for bucket, n in counts:
        seen += n
        if seen >= rank:
            return LATENCY_GROWTH**bucket / 1000
    return LATENCY_GROWTH ** counts[-1][0] / 1000


class RequestCounter:
    """Counts per `<service>.<Operation>`: API calls, HTTP requests sent, reported capacity, and
    the writes DynamoDB bills, split into hot-item (inventory) writes and record writes; each
    DynamoDB attempt's answer; and the time from each message's send to its published outcome.

    `write_units` holds billed write units for every write except updates and condition checks,
    whose item the request does not carry; those are counted in `hot_item_writes` (inventory)
    and `other_key_writes`, each with its transactional factor, and priced by `bench.pricing`
    with the item sizes read at the end of the run.
    """

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._lock = threading.Lock()
        self._clock = clock
        self.calls: Counter[str] = Counter()
        self.http_requests: Counter[str] = Counter()
        self.reported_capacity: dict[str, float] = {}
        self.put_write_units = 0.0
        self.index_write_units = 0.0  # the global secondary indexes' writes (`index_write_units`)
        self.hot_item_writes = 0  # write actions on an inventory item (transactional count twice)
        self.hot_item_write_requests = 0  # requests that wrote (or tried to write) an inventory item
        self.other_key_writes = 0  # updates/condition checks of other items, same weighting
        # Of those, the ones in an inventory item's partition (customer counters: `EVENT#...`),
        # which share its partition's 1,000 write units per second.
        self.hot_partition_other_writes = 0
        self.reads = 0  # items read (GetItem, BatchGetItem keys, TransactGetItems), strongly consistent
        self.query_requests = 0
        self.published_messages = 0
        # Each TransactWriteItems attempt's answer: `committed`, or the cancellation reasons
        # (joined with "+"); those touching an inventory item again apart; the write units the
        # cancelled ones carried (billed, if AWS bills cancelled transactions in full).
        self.transactions: Counter[str] = Counter()
        self.hot_item_transactions: Counter[str] = Counter()
        self.hot_transaction_actions = 0  # actions of the committed ones on an inventory item
        self.hot_transaction_items = 0  # inventory (shard) items those committed ones held
        # Writes (transactional ones twice) per inventory item, by its partition key: how evenly
        # a sharded class's writes spread over its shard items.
        self.hot_item_writes_by_key: Counter[str] = Counter()
        self.cancelled_write_units = 0.0
        # Every DynamoDB attempt that failed, by `<Operation> <error code>`, and the throttled ones
        # (throttling errors, and transactions cancelled for throttling).
        self.dynamodb_errors: Counter[str] = Counter()
        self.throttled_requests = 0
        # Time from a message's send (SentTimestamp) and from its first receive to its outcome's
        # publish, as histograms (see `latency_bucket`); outcomes whose message this process did
        # not receive are counted apart.
        self.send_to_outcome: Counter[int] = Counter()
        self.receive_to_outcome: Counter[int] = Counter()
        self.outcomes_without_message = 0
        # When CONFIRMED outcomes were published: counts per tenth of a second (time.time() x 10).
        self.confirmed_at: Counter[int] = Counter()
        # Outcomes published, by their `outcome` (CONFIRMED, SOLD_OUT, ...).
        self.outcomes: Counter[str] = Counter()
        self.sold_out_by_event: Counter[str] = Counter()  # SOLD_OUT answers, by event id
        self._received: dict[str, tuple[float, float]] = {}

    # --------------------------------------------------------------- botocore event handlers
    def before_parameter_build(
        self, params: dict[str, Any], model: Any, context: dict[str, Any] | None = None, **_: Any
    ) -> None:
        operation = model.name
        if operation in _CAPACITY_OPERATIONS:
            params.setdefault("ReturnConsumedCapacity", "TOTAL")
        with self._lock:
            units, touches_hot = self._note_dynamodb_request(operation, params)
        if operation == "TransactWriteItems" and context is not None:
            # Kept with the request, so that each attempt's answer can be told apart.
            context[_TRANSACTION_UNITS] = units
            context[_TRANSACTION_HOT] = touches_hot
            context[_TRANSACTION_ACTIONS] = len(params.get("TransactItems", []))
            context[_TRANSACTION_ITEMS] = sum(
                is_inventory_key(next(iter(action.values())).get("Key"))
                for action in params.get("TransactItems", [])
            )

    def before_publish(self, params: dict[str, Any], model: Any, **_: Any) -> None:
        if model.name == "PublishBatch":
            messages = [entry.get("Message", "") for entry in params.get("PublishBatchRequestEntries", [])]
        elif model.name == "Publish":
            messages = [params.get("Message", "")]
        else:
            return
        now = self._clock()
        with self._lock:
            self.published_messages += len(messages)
            for message in messages:
                self._note_outcome(message, now)

    def before_send(self, request: Any, **kwargs: Any) -> None:
        name = kwargs.get("event_name", "")
        # before-send.<service>.<Operation>
        _, _, operation = name.partition(".")
        with self._lock:
            self.http_requests[operation] += 1

    def response_received(
        self,
        parsed_response: Mapping[str, Any] | None = None,
        context: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """One attempt's answer from DynamoDB (None when the request never got one)."""
        if parsed_response is None:
            return
        operation = kwargs.get("event_name", "").rsplit(".", 1)[-1]
        code = parsed_response.get("Error", {}).get("Code")
        context = context or {}
        with self._lock:
            if code:
                self.dynamodb_errors[f"{operation} {code}"] += 1
            if code in THROTTLING_CODES:
                self.throttled_requests += 1
            if operation != "TransactWriteItems" or (code and code != TRANSACTION_CANCELED):
                return
            if code:
                reasons = {
                    r.get("Code")
                    for r in parsed_response.get("CancellationReasons", [])
                    if r.get("Code") not in (None, "None")
                }
                answer = "+".join(sorted(reasons)) or "unknown"
                self.cancelled_write_units += float(context.get(_TRANSACTION_UNITS, 0.0))
                self.throttled_requests += bool(reasons & THROTTLING_REASONS)
            else:
                answer = COMMITTED
            self.transactions[answer] += 1
            if context.get(_TRANSACTION_HOT):
                self.hot_item_transactions[answer] += 1
                if answer == COMMITTED:
                    self.hot_transaction_actions += int(context.get(_TRANSACTION_ACTIONS, 0))
                    self.hot_transaction_items += int(context.get(_TRANSACTION_ITEMS, 0))

    def after_call(self, model: Any, parsed: Mapping[str, Any], **kwargs: Any) -> None:
        service = kwargs.get("event_name", "after-call.?.?").split(".")[1]
        operation = f"{service}.{model.name}"
        with self._lock:
            self.calls[operation] += 1
            capacity = parsed.get("ConsumedCapacity") if isinstance(parsed, Mapping) else None
            entries = capacity if isinstance(capacity, list) else [capacity] if capacity else []
            for entry in entries:
                units = float(entry.get("CapacityUnits", 0.0))
                self.reported_capacity[operation] = self.reported_capacity.get(operation, 0.0) + units
            if operation == "sqs.ReceiveMessage" and isinstance(parsed, Mapping):
                for message in parsed.get("Messages", []):
                    self._note_received(message)

    def after_call_error(self, **kwargs: Any) -> None:
        """A call that never got a reply (a network error) still counts; refusals arrive in after-call."""
        name = kwargs.get("event_name", "")
        _, _, operation = name.partition(".")
        with self._lock:
            self.calls[operation] += 1

    # --------------------------------------------------------------- time to outcome
    def _note_received(self, message: Mapping[str, Any]) -> None:
        reservation_id, _, _ = _message_fields(message.get("Body", ""))
        attributes = message.get("Attributes", {})
        if reservation_id is None or "SentTimestamp" not in attributes:
            return
        sent = int(attributes["SentTimestamp"]) / 1000
        first = int(attributes.get("ApproximateFirstReceiveTimestamp", attributes["SentTimestamp"])) / 1000
        self._received[reservation_id] = (sent, first)

    def _note_outcome(self, message: str, now: float) -> None:
        reservation_id, outcome, event_id = _message_fields(message)
        if outcome is not None:
            self.outcomes[outcome] += 1
        if outcome == "SOLD_OUT" and event_id is not None:
            self.sold_out_by_event[event_id] += 1
        if outcome == "CONFIRMED":
            self.confirmed_at[math.floor(now * CONFIRMED_AT_PER_S)] += 1
        times = self._received.pop(reservation_id, None) if reservation_id else None
        if times is None:
            self.outcomes_without_message += 1
            return
        sent, first_received = times
        self.send_to_outcome[latency_bucket(max(0.0, now - sent))] += 1
        self.receive_to_outcome[latency_bucket(max(0.0, now - first_received))] += 1

    # --------------------------------------------------------------- what a request writes
    def _note_dynamodb_request(self, operation: str, params: Mapping[str, Any]) -> tuple[float, bool]:
        """Counts what one request writes or reads; for a transaction, returns its write units (2
        per KB of each put item; 2 per keyed action, the items it updates or checks being under
        1 KB) and whether it touches an inventory item; (0, False) for any other request."""
        if operation == "PutItem":
            self.put_write_units += math.ceil(item_size(params["Item"]) / KB)
            self.index_write_units += index_write_units(params["Item"])
        elif operation in ("UpdateItem", "DeleteItem"):
            self._note_keyed_write(params.get("Key"), factor=1)
            self.index_write_units += index_write_units(update_expression=params.get("UpdateExpression", ""))
            if is_inventory_key(params.get("Key")):
                self.hot_item_write_requests += 1
        elif operation == "BatchWriteItem":
            for requests in params.get("RequestItems", {}).values():
                for request in requests:
                    if "PutRequest" in request:
                        self.put_write_units += math.ceil(item_size(request["PutRequest"]["Item"]) / KB)
                        self.index_write_units += index_write_units(request["PutRequest"]["Item"])
                    else:
                        self.other_key_writes += 1
        elif operation == "TransactWriteItems":
            touched_hot = False
            transaction_units = 0.0
            for action in params.get("TransactItems", []):
                kind, body = next(iter(action.items()))
                if kind == "Put":
                    put_units = 2 * math.ceil(item_size(body["Item"]) / KB)
                    self.put_write_units += put_units
                    transaction_units += put_units
                    self.index_write_units += index_write_units(body["Item"])
                else:
                    self.index_write_units += index_write_units(
                        update_expression=body.get("UpdateExpression", "")
                    )
                    touched_hot |= is_inventory_key(body.get("Key"))
                    self._note_keyed_write(body.get("Key"), factor=2)
                    transaction_units += 2
            self.hot_item_write_requests += touched_hot
            return transaction_units, touched_hot
        elif operation in ("GetItem",):
            self.reads += 1
        elif operation == "BatchGetItem":
            self.reads += sum(len(r.get("Keys", [])) for r in params.get("RequestItems", {}).values())
        elif operation == "TransactGetItems":
            self.reads += 2 * len(params.get("TransactItems", []))
        elif operation in ("Query", "Scan"):
            self.query_requests += 1
        return 0.0, False

    def _note_keyed_write(self, key: Mapping[str, Any] | None, *, factor: int) -> None:
        if is_inventory_key(key):
            self.hot_item_writes += factor
            self.hot_item_writes_by_key[key["pk"]["S"]] += factor  # type: ignore[index]
        else:
            self.other_key_writes += factor
            if is_inventory_partition(key):
                self.hot_partition_other_writes += factor

    # --------------------------------------------------------------- wiring and reporting
    def register(self, client: Any) -> Any:
        """Makes `client` report to this counter; returns it."""
        service = client.meta.service_model.service_name
        events = client.meta.events
        if service == "dynamodb":
            events.register("before-parameter-build.dynamodb", self.before_parameter_build)
            events.register("response-received.dynamodb", self.response_received)
        if service == "sns":
            events.register("before-parameter-build.sns", self.before_publish)
        events.register("before-send", self.before_send)
        events.register("after-call", self.after_call)
        events.register("after-call-error", self.after_call_error)
        return client

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            return {
                "calls": dict(self.calls),
                "http_requests": dict(self.http_requests),
                "reported_capacity": dict(self.reported_capacity),
                "put_write_units": self.put_write_units,
                "index_write_units": self.index_write_units,
                "hot_item_writes": self.hot_item_writes,
                "hot_item_write_requests": self.hot_item_write_requests,
                "other_key_writes": self.other_key_writes,
                "reads": self.reads,
                "query_requests": self.query_requests,
                "published_messages": self.published_messages,
                "hot_partition_other_writes": self.hot_partition_other_writes,
                "transactions": dict(self.transactions),
                "hot_item_transactions": dict(self.hot_item_transactions),
                "cancelled_write_units": self.cancelled_write_units,
                "dynamodb_errors": dict(self.dynamodb_errors),
                "throttled_requests": self.throttled_requests,
                "send_to_outcome": dict(self.send_to_outcome),
                "receive_to_outcome": dict(self.receive_to_outcome),
                "outcomes_without_message": self.outcomes_without_message,
                "confirmed_at": dict(self.confirmed_at),
                "hot_transaction_actions": self.hot_transaction_actions,
                "hot_transaction_items": self.hot_transaction_items,
                "hot_item_writes_by_key": dict(self.hot_item_writes_by_key),
                "outcomes": dict(self.outcomes),
                "sold_out_by_event": dict(self.sold_out_by_event),
            }


def counted_session_clients(counter: RequestCounter) -> None:
    """Makes every boto3 client created from now on in this process report to `counter`."""
    original: Callable[..., Any] = boto3.session.Session.client

    def client(self: boto3.session.Session, *args: Any, **kwargs: Any) -> Any:
        return counter.register(original(self, *args, **kwargs))

    boto3.session.Session.client = client  # type: ignore[method-assign]


def install(worker_index: int) -> Callable[[], dict[str, Any]]:
    """The runner's `worker_setup` hook: count this worker's requests; report the snapshot."""
    counter = RequestCounter()
    counted_session_clients(counter)
    return counter.snapshot


def add_snapshots(snapshots: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Sums snapshots (of several workers, or the parts of one run)."""
    total: dict[str, Any] = {}
    for snapshot in snapshots:
        for name, value in snapshot.items():
            if isinstance(value, Mapping):
                bucket = total.setdefault(name, Counter())
                bucket.update(value)
            else:
                total[name] = total[name] + value if name in total else value
    return {name: dict(value) if isinstance(value, Counter) else value for name, value in total.items()}


def subtract_snapshots(after: Mapping[str, Any], before: Mapping[str, Any]) -> dict[str, Any]:
    """What happened between two snapshots of the same counters."""
    result: dict[str, Any] = {}
    for name, value in after.items():
        earlier = before.get(name)
        if isinstance(value, Mapping):
            result[name] = {k: v - (earlier or {}).get(k, 0) for k, v in value.items()}
        else:
            result[name] = value - (earlier or 0)
    return result
