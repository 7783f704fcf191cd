"""An HTTP proxy in front of DynamoDB Local that contends as DynamoDB on AWS does.

Every request goes through `seat_tools.contention.model`: the proxy reads `X-Amz-Target`
and the JSON body, asks the model about the items the request touches, and either forwards the
request to DynamoDB Local or answers with the error AWS would give, in AWS's JSON shape, so
botocore raises the same exceptions the DAL maps:

- `TransactWriteItems` on an item another transaction holds: `TransactionCanceledException`
  with `CancellationReasons` (`TransactionConflict` at that position, `None` elsewhere);
  throttled: the same exception with `ThrottlingError` at the throttled item's position;
- `TransactGetItems` of an item being written (held by a transaction, in a single-item write, or
  written by one that started while the read was in flight): the same exception with
  `TransactionConflict` at that position; a read holds nothing, so it never refuses a write;
- `PutItem` / `UpdateItem` / `DeleteItem` on a held item: `TransactionConflictException`;
  throttled (also `GetItem` / `BatchGetItem`): `ProvisionedThroughputExceededException` with
  `ThrottlingReasons` `Table{Write,Read}<limit>`: `KeyRangeThroughputExceeded` (a partition, as
  a hot key gets on an on-demand table), `AccountLimitExceeded` (the table quota) or
  `MaxOnDemandThroughputExceeded` (the table's OnDemandThroughput).

A forwarded request is answered no sooner than its modelled latency (x the time scale) after it
arrived; a forwarded transaction holds its items until DynamoDB Local has answered and that time
has passed. What DynamoDB Local answers to a transaction tells the model whether it committed.
Other operations (control plane, `Query`, `Scan`, `BatchWriteItem`) pass through with no added
latency or limits.

`GET /__contention__` answers the settings and the model's counters as JSON.

Run it as `python -m seat_tools.contention.proxy --target URL --port N [--settings JSON]`
(the local stack does; see `seat_tools.local.engines.ContentionProxy`).
"""

from __future__ import annotations

import argparse
import base64
import dataclasses
import http.client
import json
import random
import re
import signal
import sys
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from seat_tools.contention.model import (
    THROTTLED_KEY_RANGE,
    THROTTLING_ERROR,
    TRANSACTION_CONFLICT,
    ContentionModel,
    ContentionSettings,
    Decision,
    IndexWrite,
    ItemRead,
    ItemWrite,
    Verdict,
    read_units,
    write_units,
)

COUNTERS_PATH = "/__contention__"
TARGET_PREFIX = "DynamoDB_20120810."
ERROR_PREFIX = "com.amazonaws.dynamodb.v20120810#"
CONTENT_TYPE = "application/x-amz-json-1.0"
HOP_HEADERS = frozenset({"host", "content-length", "connection", "keep-alive", "transfer-encoding"})
SINGLE_WRITES = frozenset({"PutItem", "UpdateItem", "DeleteItem"})
READS = frozenset({"GetItem", "BatchGetItem"})
CONFLICT_MESSAGE = "Transaction is ongoing for the item"
THROTTLED_MESSAGE = (
    "The level of configured provisioned throughput for the table was exceeded."
    " Consider increasing your provisioning level with the UpdateTable API."
)
THROTTLED_TRANSACTION_MESSAGE = "Throughput exceeds the current capacity for one or more resources."


def item_size(item: Mapping[str, Any]) -> int:
    """An item's size by DynamoDB's rules, near enough for units: names plus values, in bytes."""
    return sum(len(name.encode()) + _value_size(value) for name, value in item.items())


def _value_size(value: Mapping[str, Any]) -> int:
    ((kind, data),) = value.items()
    if kind == "S":
        return len(str(data).encode())
    if kind == "N":
        return len(str(data).lstrip("-").replace(".", "")) // 2 + 2
    if kind == "B":
        return len(base64.b64decode(data)) if isinstance(data, str) else len(data)
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "SS":
        return sum(len(str(s).encode()) for s in data)
    if kind == "NS":
        return sum(len(str(n)) // 2 + 2 for n in data)
    if kind == "BS":
        return sum(len(base64.b64decode(b)) for b in data)
    if kind == "L":
        return 3 + sum(1 + _value_size(v) for v in data)
    if kind == "M":
        return 3 + sum(len(k.encode()) + 1 + _value_size(v) for k, v in data.items())
    return 0


@dataclasses.dataclass(frozen=True)
class KeySchema:
    partition: str
    sort: str | None
    # (index name, its partition key attribute) of each global secondary index
    indexes: tuple[tuple[str, str], ...] = ()


class ContentionProxy:
    """The proxy's logic, apart from HTTP: which items a request touches, and AWS's error bodies."""

    def __init__(self, model: ContentionModel, target: str, region: str = "us-east-1") -> None:
        self.model = model
        self.target = urlsplit(target)
        self.region = region
        self._schemas: dict[str, KeySchema] = {}
        self._schemas_lock = threading.Lock()
        self._local = threading.local()

    # ------------------------------------------------------------------ forwarding
    def connection(self) -> http.client.HTTPConnection:
        connection: http.client.HTTPConnection | None = getattr(self._local, "connection", None)
        if connection is None:
            connection = http.client.HTTPConnection(
                self.target.hostname or "127.0.0.1", self.target.port, timeout=120
            )
            self._local.connection = connection
        return connection

    def forward(self, body: bytes, headers: Mapping[str, str]) -> tuple[int, list[tuple[str, str]], bytes]:
        """Sends the request to DynamoDB Local on this thread's connection; (status, headers, body)."""
        outgoing = {k: v for k, v in headers.items() if k.lower() not in HOP_HEADERS}
        for attempt in (1, 2):
            connection = self.connection()
            try:
                connection.request("POST", "/", body=body, headers=outgoing)
                response = connection.getresponse()
                payload = response.read()
            except (OSError, http.client.HTTPException):
                connection.close()
                self._local.connection = None
                if attempt == 2:
                    raise
                continue
            kept = [(k, v) for k, v in response.getheaders() if k.lower() not in HOP_HEADERS]
            return response.status, kept, payload
        raise AssertionError("unreachable")

    def key_schema(self, table: str, headers: Mapping[str, str]) -> KeySchema:
        """The table's key attributes, asked of DynamoDB Local once per table."""
        schema = self._schemas.get(table)
        if schema is not None:
            return schema
        with self._schemas_lock:
            request = dict(headers)
            request["X-Amz-Target"] = TARGET_PREFIX + "DescribeTable"
            status, _, payload = self.forward(json.dumps({"TableName": table}).encode(), request)
            if status != 200:
                raise LookupError(f"DescribeTable {table} answered {status}")
            description = json.loads(payload)["Table"]
            keys = {e["KeyType"]: e["AttributeName"] for e in description["KeySchema"]}
            indexes = tuple(
                (
                    index["IndexName"],
                    next(e["AttributeName"] for e in index["KeySchema"] if e["KeyType"] == "HASH"),
                )
                for index in description.get("GlobalSecondaryIndexes", [])
            )
            schema = self._schemas[table] = KeySchema(keys["HASH"], keys.get("RANGE"), indexes)
        return schema

    # ------------------------------------------------------------------ items
    def _keys(self, table: str, key: Mapping[str, Any], headers: Mapping[str, str]) -> tuple[str, str]:
        """The item's partition key value (hashed onto the table's partitions as the simulation
        hashes it) and a key unique across tables (for holds)."""
        schema = self.key_schema(table, headers)
        ((_, value),) = key[schema.partition].items()  # {"S": "EVENT#e"}: its type and value
        partition = json.dumps(key[schema.partition], sort_keys=True)
        sort = json.dumps(key[schema.sort], sort_keys=True) if schema.sort else ""
        return str(value), f"{table}/{partition}/{sort}"

    def _write(
        self,
        table: str,
        key: Mapping[str, Any],
        size: int,
        headers: Mapping[str, str],
        *,
        transactional: bool,
    ) -> ItemWrite:
        partition, item = self._keys(table, key, headers)
        return ItemWrite(partition, item, write_units(size, transactional=transactional), table)

    def transaction_items(self, body: Mapping[str, Any], headers: Mapping[str, str]) -> list[ItemWrite]:
        """The items of a TransactWriteItems, in order; updates are sized by their request (DynamoDB
        charges the larger of the item before and after; the items here are well under 1 KB)."""
        items = []
        for action in body["TransactItems"]:
            ((kind, detail),) = action.items()
            table = detail["TableName"]
            if kind == "Put":
                key_source = detail["Item"]
                size = item_size(detail["Item"])
            else:
                key_source = detail["Key"]
                size = item_size(detail["Key"]) + item_size(detail.get("ExpressionAttributeValues", {}))
            items.append(self._write(table, key_source, size, headers, transactional=True))
        return items

    def index_writes(
        self, actions: Sequence[tuple[str, Mapping[str, Any]]], headers: Mapping[str, str]
    ) -> list[IndexWrite]:
        """What the writes (kind, request) make their tables' global secondary indexes write: a Put
        whose item has an index's partition key enters that index (keyed by its value); an Update
        whose expression names that attribute changes its entry (keyed by the item: the old value
        is not in the request); a Delete is taken to write no index (whether the item was in one
        is not in the request). Each entry 1 unit per KB of the item written (a projection is at
        most the item)."""
        writes = []
        for position, (kind, detail) in enumerate(actions):
            table = detail["TableName"]
            indexes = self.key_schema(table, headers).indexes
            if not indexes or kind in ("Delete", "DeleteItem", "ConditionCheck"):
                continue
            if kind in ("Put", "PutItem"):
                item = detail["Item"]
                units = write_units(item_size(item), transactional=False)
                for index, attribute in indexes:
                    if attribute in item:
                        ((_, value),) = item[attribute].items()
                        writes.append(IndexWrite(index, position, str(value), units))
                continue
            expression = detail.get("UpdateExpression", "")
            aliases = detail.get("ExpressionAttributeNames", {})
            named = {aliases.get(t, t) for t in re.findall(r"(?<![:\w#])#?[A-Za-z_]\w*", expression)}
            for index, attribute in indexes:
                if attribute in named:
                    _, item_key = self._keys(table, detail["Key"], headers)
                    writes.append(IndexWrite(index, position, item_key))
        return writes

    def single_write(self, body: Mapping[str, Any], operation: str, headers: Mapping[str, str]) -> ItemWrite:
        table = body["TableName"]
        if operation == "PutItem":
            return self._write(table, body["Item"], item_size(body["Item"]), headers, transactional=False)
        size = item_size(body["Key"]) + item_size(body.get("ExpressionAttributeValues", {}))
        return self._write(table, body["Key"], size, headers, transactional=False)

    def reads(self, body: Mapping[str, Any], operation: str, headers: Mapping[str, str]) -> list[ItemRead]:
        """The items a GetItem or BatchGetItem reads, each charged as one item under 4 KB."""
        requested: list[tuple[str, Mapping[str, Any], bool]] = []
        if operation == "GetItem":
            requested.append((body["TableName"], body["Key"], bool(body.get("ConsistentRead"))))
        else:
            for table, request in body["RequestItems"].items():
                consistent = bool(request.get("ConsistentRead"))
                requested.extend((table, key, consistent) for key in request["Keys"])
        reads = []
        for table, key, consistent in requested:
            partition, item = self._keys(table, key, headers)
            reads.append(ItemRead(partition, item, read_units(0, consistent=consistent), table))
        return reads

    def transactional_reads(self, body: Mapping[str, Any], headers: Mapping[str, str]) -> list[ItemRead]:
        """The items of a TransactGetItems, in order, each charged as one item under 4 KB."""
        reads = []
        for action in body["TransactItems"]:
            get = action["Get"]
            partition, item = self._keys(get["TableName"], get["Key"], headers)
            reads.append(ItemRead(partition, item, read_units(0, transactional=True), get["TableName"]))
        return reads

    # ------------------------------------------------------------------ AWS's error bodies
    def table_arn(self, table: str) -> str:
        return f"arn:aws:dynamodb:{self.region}:000000000000:table/{table}"

    @staticmethod
    def cancelled(decision: Decision) -> dict[str, Any]:
        codes = [reason or "None" for reason in decision.reasons]
        reasons: list[dict[str, str]] = []
        for code in codes:
            if code == TRANSACTION_CONFLICT:
                reasons.append({"Code": code, "Message": CONFLICT_MESSAGE})
            elif code == THROTTLING_ERROR:
                reasons.append({"Code": code, "Message": THROTTLED_TRANSACTION_MESSAGE})
            else:
                reasons.append({"Code": "None"})
        return {
            "__type": ERROR_PREFIX + "TransactionCanceledException",
            "Message": "Transaction cancelled, please refer cancellation reasons for specific reasons"
            f" [{', '.join(codes)}]",
            "CancellationReasons": reasons,
        }

    @staticmethod
    def conflict() -> dict[str, Any]:
        return {"__type": ERROR_PREFIX + "TransactionConflictException", "message": CONFLICT_MESSAGE}

    def throttled(
        self, table: str, *, write: bool, limit: str | None = None, index: str | None = None
    ) -> dict[str, Any]:
        """AWS's answer to a throttled single-item request: the limit (the model's
        `Decision.throttled_by`) is the reason's LimitType, e.g. TableWriteKeyRangeThroughputExceeded;
        an index's refusal (`throttled_index`) names the index, as AWS's GSI back-pressure does."""
        if index is not None and limit is not None:
            reason, resource = limit, f"{self.table_arn(table)}/index/{index}"
        else:
            reason = f"Table{'Write' if write else 'Read'}{limit or THROTTLED_KEY_RANGE}"
            resource = self.table_arn(table)
        return {
            "__type": ERROR_PREFIX + "ProvisionedThroughputExceededException",
            "message": THROTTLED_MESSAGE,
            "ThrottlingReasons": [{"reason": reason, "resource": resource}],
        }

    def status(self) -> dict[str, Any]:
        return {
            "settings": dataclasses.asdict(self.model.settings),
            "description": self.model.settings.describe(),
            "counters": self.model.counters().as_dict(),
        }


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # TCP_NODELAY on each connection: an answer goes out as two writes (its headers, then its
    # body), and with Nagle's algorithm the body waited for the client's delayed ACK of the
    # headers, about 40 ms, on top of every modelled latency (the bench's idempotent baseline,
    # 400 messages on 2 workers: 38 s through the layer and 9 s without it; 11 s with this).
    disable_nagle_algorithm = True
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        """No access log: one line per request would cost the CPU this machine needs."""

    def do_GET(self) -> None:
        if self.path.rstrip("/") == COUNTERS_PATH:
            self._answer(
                200, [], json.dumps(self.server.proxy.status()).encode(), json_type="application/json"
            )
            return
        self._answer(404, [], b"{}")

    def do_POST(self) -> None:
        arrived = time.monotonic()
        proxy = self.server.proxy
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        headers = {k: v for k, v in self.headers.items()}
        operation = (self.headers.get("X-Amz-Target") or "").removeprefix(TARGET_PREFIX)
        try:
            if operation == "TransactWriteItems":
                self._transaction(arrived, body, headers)
            elif operation == "TransactGetItems":
                self._transactional_read(arrived, body, headers)
            elif operation in SINGLE_WRITES:
                self._single_write(arrived, operation, body, headers)
            elif operation in READS:
                self._read(arrived, operation, body, headers)
            else:
                self._relay(*proxy.forward(body, headers))
        except (KeyError, TypeError, ValueError, LookupError):
            # A request the proxy cannot read (malformed, unknown table): DynamoDB Local answers it.
            self._relay(*proxy.forward(body, headers))

    # ------------------------------------------------------------------ operations
    def _transaction(self, arrived: float, body: bytes, headers: dict[str, str]) -> None:
        proxy = self.server.proxy
        request = json.loads(body)
        items = proxy.transaction_items(request, headers)
        actions = [next(iter(action.items())) for action in request["TransactItems"]]
        decision = proxy.model.transact_write(
            items, until_finished=True, index_writes=proxy.index_writes(actions, headers)
        )
        if not decision.admitted:
            self._sleep_until(arrived, decision.latency_s)
            self._error(ContentionProxy.cancelled(decision))
            return
        try:
            status, response_headers, payload = proxy.forward(body, headers)
        except BaseException:
            proxy.model.finish(decision, cancelled_by="EngineUnreachable")
            raise
        self._sleep_until(arrived, decision.latency_s)
        proxy.model.finish(decision, cancelled_by=None if status == 200 else _cancellation_code(payload))
        self._relay(status, response_headers, payload)

    def _transactional_read(self, arrived: float, body: bytes, headers: dict[str, str]) -> None:
        proxy = self.server.proxy
        decision = proxy.model.transact_read(proxy.transactional_reads(json.loads(body), headers))
        if not decision.admitted:
            self._sleep_until(arrived, decision.latency_s)
            self._error(ContentionProxy.cancelled(decision))
            return
        try:
            status, response_headers, payload = proxy.forward(body, headers)
            self._sleep_until(arrived, decision.latency_s)
        finally:
            # A write that started while the read was in flight cancels it (the model says).
            final = proxy.model.finish_read(decision)
        if final.admitted:
            self._relay(status, response_headers, payload)
        else:
            self._error(ContentionProxy.cancelled(final))

    def _single_write(self, arrived: float, operation: str, body: bytes, headers: dict[str, str]) -> None:
        proxy = self.server.proxy
        request = json.loads(body)
        decision = proxy.model.write_item(
            proxy.single_write(request, operation, headers),
            operation=operation,
            index_writes=proxy.index_writes([(operation, request)], headers),
        )
        if decision.verdict is Verdict.ADMITTED:
            self._forward_after(arrived, decision, body, headers)
            return
        self._sleep_until(arrived, decision.latency_s)
        if decision.verdict is Verdict.CONFLICT:
            self._error(ContentionProxy.conflict())
        else:
            self._error(
                proxy.throttled(
                    request["TableName"],
                    write=True,
                    limit=decision.throttled_by,
                    index=decision.throttled_index,
                )
            )

    def _read(self, arrived: float, operation: str, body: bytes, headers: dict[str, str]) -> None:
        proxy = self.server.proxy
        request = json.loads(body)
        reads = proxy.reads(request, operation, headers)
        decision = proxy.model.read_items(reads, operation=operation)
        if decision.admitted:
            self._forward_after(arrived, decision, body, headers)
            return
        self._sleep_until(arrived, decision.latency_s)
        table = reads[decision.reasons.index(THROTTLING_ERROR)].table
        self._error(proxy.throttled(table, write=False, limit=decision.throttled_by))

    # ------------------------------------------------------------------ answers
    def _forward_after(
        self, arrived: float, decision: Decision, body: bytes, headers: dict[str, str]
    ) -> None:
        status, response_headers, payload = self.server.proxy.forward(body, headers)
        self._sleep_until(arrived, decision.latency_s)
        self._relay(status, response_headers, payload)

    def _sleep_until(self, arrived: float, latency_s: float) -> None:
        remaining = arrived + self.server.proxy.model.settings.wall_seconds(latency_s) - time.monotonic()
        if remaining > 0:
            time.sleep(remaining)

    def _error(self, error: Mapping[str, Any]) -> None:
        headers = [("x-amzn-RequestId", uuid.uuid4().hex.upper())]
        self._answer(400, headers, json.dumps(error).encode())

    def _relay(self, status: int, headers: Sequence[tuple[str, str]], payload: bytes) -> None:
        self._answer(status, headers, payload, json_type=None)

    def _answer(
        self,
        status: int,
        headers: Sequence[tuple[str, str]],
        payload: bytes,
        json_type: str | None = CONTENT_TYPE,
    ) -> None:
        self.send_response_only(status)
        for name, value in headers:
            self.send_header(name, value)
        if json_type is not None:
            self.send_header("Content-Type", json_type)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


def _cancellation_code(payload: bytes) -> str:
    """The first reason code that cancelled a transaction DynamoDB Local refused, or its error type."""
    try:
        error = json.loads(payload)
    except ValueError:
        return "EngineError"
    for reason in error.get("CancellationReasons") or ():
        code = reason.get("Code")
        if code and code != "None":
            return str(code)
    return str(error.get("__type", "EngineError")).rpartition("#")[2]


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256

    def __init__(self, address: tuple[str, int], proxy: ContentionProxy) -> None:
        super().__init__(address, _Handler)
        self.proxy = proxy


def serve(
    settings: ContentionSettings,
    target: str,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    seed: int | None = None,
) -> _Server:
    """A started proxy server (in a daemon thread) in front of `target`; `server.server_address`
    says its port; `server.shutdown()` stops it."""
    model = ContentionModel(settings, rng=random.Random(seed))
    server = _Server((host, port), ContentionProxy(model, target))
    threading.Thread(target=server.serve_forever, name="contention-proxy", daemon=True).start()
    return server


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", required=True, help="DynamoDB Local's endpoint URL")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--settings", default="{}", help="ContentionSettings fields as a JSON object")
    parser.add_argument("--seed", type=int)
    args = parser.parse_args(argv)
    settings = ContentionSettings(**json.loads(args.settings))
    server = serve(settings, args.target, host=args.host, port=args.port, seed=args.seed)
    print(settings.describe(), flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    stop.wait()
    server.shutdown()
    sys.exit(0)


if __name__ == "__main__":
    main()
