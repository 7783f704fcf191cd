"""Counts every AWS request a process makes, from botocore's own events, for the benchmark.

`install(worker_index)` is a runner `worker_setup` hook: in a worker process it makes every boto3
client created afterwards (the handler's and the SQS poller's) report to one `RequestCounter`,
and returns the counter's `snapshot`. The counter listens to three botocore events per client:

- `before-parameter-build.dynamodb.*`: asks DynamoDB for `ReturnConsumedCapacity=TOTAL` (so the
  engine reports what it charged) and notes the writes each request makes to an inventory item
  (`EVENT#...` / `CLASS#...`, the hot item of an on-sale) and the size of each item it puts;
- `before-send.*.*`: one HTTP request sent (retries included), by `<service>.<Operation>`;
- `after-call.*.*`: the reply, with the `ConsumedCapacity` it carries.

Billed capacity is derived from the request and the item sizes with DynamoDB's rules (see
`bench.pricing`), because DynamoDB Local reports 2 units for a whole `TransactWriteItems` of 100
actions, where DynamoDB bills 2 per action and KB.
"""

from __future__ import annotations

import math
import threading
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import boto3

from seat_inventory.dal.inventory_table import CLASS_PREFIX, INVENTORY_PREFIX

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


def is_inventory_key(key: Mapping[str, Mapping[str, Any]] | None) -> bool:
    """Whether a key names a seat class's inventory item (the item every reservation of an event hits)."""
    if not key:
        return False
    pk = key.get("pk", {}).get("S", "")
    sk = key.get("sk", {}).get("S", "")
    return pk.startswith(INVENTORY_PREFIX) and sk.startswith(CLASS_PREFIX)


# The key under which a TransactWriteItems request's write units travel from before-parameter-build
# to after-call, in botocore's per-request context.
_TRANSACTION_UNITS = "seat_inventory_bench_transaction_units"


class RequestCounter:
    """Counts per `<service>.<Operation>`: API calls, HTTP requests sent, reported capacity, and
    the writes DynamoDB bills, split into hot-item (inventory) writes and record writes.

    `write_units` holds billed write units for every write except updates and condition checks,
    whose item the request does not carry; those are counted in `hot_item_writes` (inventory)
    and `other_key_writes`, each with its transactional factor, and priced by `bench.pricing`
    with the item sizes read at the end of the run.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.calls: Counter[str] = Counter()
        self.http_requests: Counter[str] = Counter()
        self.reported_capacity: dict[str, float] = {}
        self.put_write_units = 0.0
        self.hot_item_writes = 0  # write actions on an inventory item (transactional count twice)
        self.hot_item_write_requests = 0  # requests that wrote (or tried to write) an inventory item
        self.other_key_writes = 0  # updates/condition checks of other items, same weighting
        self.reads = 0  # items read (GetItem, BatchGetItem keys, TransactGetItems), strongly consistent
        self.query_requests = 0
        self.published_messages = 0
        # Transactions DynamoDB refused (TransactionCanceledException), by cancellation reason,
        # and the write units they would bill if refused transactions are billed in full.
        self.refused_transactions: Counter[str] = Counter()
        self.refused_write_units = 0.0

    # --------------------------------------------------------------- botocore event handlers
    def before_parameter_build(
        self, params: dict[str, Any], model: Any, context: dict[str, Any] | None = None, **_: Any
    ) -> None:
        operation = model.name
        if operation in _CAPACITY_OPERATIONS:
            params.setdefault("ReturnConsumedCapacity", "TOTAL")
        with self._lock:
            units = self._note_dynamodb_request(operation, params)
        if operation == "TransactWriteItems" and context is not None:
            # Kept with the request, so that a refusal can be told apart in after-call.
            context[_TRANSACTION_UNITS] = units

    def before_publish(self, params: dict[str, Any], model: Any, **_: Any) -> None:
        with self._lock:
            if model.name == "PublishBatch":
                self.published_messages += len(params.get("PublishBatchRequestEntries", []))
            elif model.name == "Publish":
                self.published_messages += 1

    def before_send(self, request: Any, **kwargs: Any) -> None:
        name = kwargs.get("event_name", "")
        # before-send.<service>.<Operation>
        _, _, operation = name.partition(".")
        with self._lock:
            self.http_requests[operation] += 1

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
            error = parsed.get("Error", {}) if isinstance(parsed, Mapping) else {}
            if error.get("Code") == "TransactionCanceledException":
                reasons = {
                    r.get("Code") for r in parsed.get("CancellationReasons", []) if r.get("Code") != "None"
                }
                self.refused_transactions["+".join(sorted(reasons)) or "unknown"] += 1
                self.refused_write_units += float(kwargs.get("context", {}).get(_TRANSACTION_UNITS, 0.0))

    def after_call_error(self, **kwargs: Any) -> None:
        """A call that never got a reply (a network error) still counts; refusals arrive in after-call."""
        name = kwargs.get("event_name", "")
        _, _, operation = name.partition(".")
        with self._lock:
            self.calls[operation] += 1

    # --------------------------------------------------------------- what a request writes
    def _note_dynamodb_request(self, operation: str, params: Mapping[str, Any]) -> float:
        """Counts what one request writes or reads; returns a transaction's write units (2 per KB
        of each put item; 2 per keyed action, the items it updates or checks being under 1 KB),
        and 0 for any other request."""
        if operation == "PutItem":
            self.put_write_units += math.ceil(item_size(params["Item"]) / KB)
        elif operation in ("UpdateItem", "DeleteItem"):
            self._note_keyed_write(params.get("Key"), factor=1)
            if is_inventory_key(params.get("Key")):
                self.hot_item_write_requests += 1
        elif operation == "BatchWriteItem":
            for requests in params.get("RequestItems", {}).values():
                for request in requests:
                    if "PutRequest" in request:
                        self.put_write_units += math.ceil(item_size(request["PutRequest"]["Item"]) / KB)
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
                else:
                    touched_hot |= is_inventory_key(body.get("Key"))
                    self._note_keyed_write(body.get("Key"), factor=2)
                    transaction_units += 2
            self.hot_item_write_requests += touched_hot
            return transaction_units
        elif operation in ("GetItem",):
            self.reads += 1
        elif operation == "BatchGetItem":
            self.reads += sum(len(r.get("Keys", [])) for r in params.get("RequestItems", {}).values())
        elif operation == "TransactGetItems":
            self.reads += 2 * len(params.get("TransactItems", []))
        elif operation in ("Query", "Scan"):
            self.query_requests += 1
        return 0.0

    def _note_keyed_write(self, key: Mapping[str, Any] | None, *, factor: int) -> None:
        if is_inventory_key(key):
            self.hot_item_writes += factor
        else:
            self.other_key_writes += factor

    # --------------------------------------------------------------- wiring and reporting
    def register(self, client: Any) -> Any:
        """Makes `client` report to this counter; returns it."""
        service = client.meta.service_model.service_name
        events = client.meta.events
        if service == "dynamodb":
            events.register("before-parameter-build.dynamodb", self.before_parameter_build)
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
                "hot_item_writes": self.hot_item_writes,
                "hot_item_write_requests": self.hot_item_write_requests,
                "other_key_writes": self.other_key_writes,
                "reads": self.reads,
                "query_requests": self.query_requests,
                "published_messages": self.published_messages,
                "refused_transactions": dict(self.refused_transactions),
                "refused_write_units": self.refused_write_units,
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
