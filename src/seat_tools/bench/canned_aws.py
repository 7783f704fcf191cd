"""DynamoDB and SNS answered at the HTTP level, in process, for measuring the handlers' own CPU.

Each is a botocore `before-send` handler: the client serialises, signs and sends its request as
it would to AWS, and gets back a raw HTTP response with a valid body, which it then parses; no
socket is opened. So a handler run on clients with these registered spends on botocore exactly
the CPU it spends on AWS, minus the network itself (TLS and the socket's reads and writes).

- `CannedDynamoDB` keeps the items a setup writes (puts, in `PutItem`, `TransactWriteItems` and
  `BatchWriteItem`) and answers reads from them: `GetItem`, `BatchGetItem`, `TransactGetItems`,
  and `Query` on the table or an index (a key condition on the partition key, optionally one
  comparison on the sort key). Once `frozen`, writes are answered as committed and nothing is
  stored, so every measured invocation sees the same items. Updates, deletes and conditions are
  never evaluated: every write succeeds. A request it does not support raises
  `UnsupportedRequest` (the measurement fails rather than answer wrongly).
- `CannedSns` answers `PublishBatch` with every entry published.

Each counts its calls by operation and the CPU its own answers took (`cpu_s`: each thread's CPU
time inside them), which a measurement subtracts: what is left is the client's work.
"""

from __future__ import annotations

import json
import re
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator, Mapping
from typing import Any
from urllib.parse import parse_qs
from xml.sax.saxutils import escape

from botocore.awsrequest import AWSResponse, HTTPHeaders

TableKey = tuple[str, str]

_KEY_CONDITION = re.compile(r"^(\w+) = (:\w+)(?: AND (\w+) (<=|>=|<|>|=) (:\w+))?$")
_ENTRY_ID = re.compile(r"^PublishBatchRequestEntries\.member\.(\d+)\.Id$")


class UnsupportedRequest(Exception):
    """A request the canned service does not answer."""


class _Body:
    """The raw stream botocore reads a response body from."""

    def __init__(self, content: bytes) -> None:
        self.content = content

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield self.content


def _response(url: str, content_type: str, body: bytes) -> AWSResponse:
    headers = HTTPHeaders()
    headers["Content-Type"] = content_type
    headers["x-amzn-RequestId"] = str(uuid.uuid4())
    return AWSResponse(url, 200, headers, _Body(body))


def _operation(request: Any) -> str:
    target = request.headers.get("X-Amz-Target", b"")
    target = target.decode() if isinstance(target, bytes) else str(target)
    return target.rsplit(".", 1)[-1]


def _key(item: Mapping[str, Any]) -> TableKey:
    return item["pk"]["S"], item["sk"]["S"]


def _comparable(value: Mapping[str, Any]) -> Any:
    if "N" in value:
        return float(value["N"])
    if "S" in value:
        return value["S"]
    raise UnsupportedRequest(f"a key value of type {list(value)}")


def _project(item: dict[str, Any], request: Mapping[str, Any]) -> dict[str, Any]:
    """The item's attributes named by a top-level `ProjectionExpression` (all without one)."""
    projection = request.get("ProjectionExpression")
    if not projection:
        return item
    names = request.get("ExpressionAttributeNames", {})
    wanted = [names.get(part.strip(), part.strip()) for part in projection.split(",")]
    if any("." in name or "[" in name for name in wanted):
        raise UnsupportedRequest(f"a nested projection: {projection}")
    return {name: item[name] for name in wanted if name in item}


class _CpuAccount:
    """The CPU its own answers took (each thread's CPU time inside them, summed), so that a
    measurement can leave out the canned service's work and keep only the client's."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self._lock = threading.Lock()
        self.cpu_s = 0.0

    def _charge(self, started: float) -> None:
        spent = time.thread_time() - started
        with self._lock:
            self.cpu_s += spent


class CannedDynamoDB(_CpuAccount):
    """A `before-send.dynamodb` handler answering from the items it was given (module docstring)."""

    def __init__(self) -> None:
        super().__init__()
        self.items: dict[TableKey, dict[str, Any]] = {}
        # Items by the value of each partition-key attribute they have (the table's and indexes').
        self._by_partition: dict[tuple[str, str], dict[TableKey, dict[str, Any]]] = {}
        self.frozen = False

    def register(self, events: Any) -> None:
        """Answers the DynamoDB requests of clients made from this botocore event emitter."""
        events.register("before-send.dynamodb", self)

    def __call__(self, request: Any, **_: Any) -> AWSResponse:
        started = time.thread_time()
        try:
            operation = _operation(request)
            self.calls[operation] += 1
            body = json.loads(request.body or b"{}")
            answer = getattr(self, f"_{operation}", None)
            if answer is None:
                raise UnsupportedRequest(f"DynamoDB {operation}")
            reply = answer(body)
            return _response(request.url, "application/x-amz-json-1.0", json.dumps(reply).encode())
        finally:
            self._charge(started)

    def put(self, item: dict[str, Any]) -> None:
        """Stores the item (replacing one of its key), unless frozen."""
        if self.frozen:
            return
        key = _key(item)
        self.remove(key)
        self.items[key] = item
        for name, value in item.items():
            if name.endswith("pk") and "S" in value:
                self._by_partition.setdefault((name, value["S"]), {})[key] = item

    def remove(self, key: TableKey) -> None:
        """Takes the item of `key` out (the harness uses it to set what a round finds)."""
        old = self.items.pop(key, None)
        if old is not None:
            for name, value in old.items():
                if name.endswith("pk") and "S" in value:
                    self._by_partition.get((name, value["S"]), {}).pop(key, None)

    # ------------------------------------------------------------------ writes

    def _PutItem(self, body: dict[str, Any]) -> dict[str, Any]:
        self.put(body["Item"])
        return {}

    def _UpdateItem(self, body: dict[str, Any]) -> dict[str, Any]:
        if body.get("ReturnValues", "NONE") != "NONE":
            raise UnsupportedRequest("UpdateItem with ReturnValues")
        return {}

    def _TransactWriteItems(self, body: dict[str, Any]) -> dict[str, Any]:
        for action in body["TransactItems"]:
            if "Put" in action:
                self.put(action["Put"]["Item"])
        return {}

    def _BatchWriteItem(self, body: dict[str, Any]) -> dict[str, Any]:
        for requests in body["RequestItems"].values():
            for request in requests:
                if "PutRequest" in request:
                    self.put(request["PutRequest"]["Item"])
        return {"UnprocessedItems": {}}

    # ------------------------------------------------------------------ reads

    def _GetItem(self, body: dict[str, Any]) -> dict[str, Any]:
        item = self.items.get(_key(body["Key"]))
        return {"Item": _project(item, body)} if item is not None else {}

    def _BatchGetItem(self, body: dict[str, Any]) -> dict[str, Any]:
        responses: dict[str, list[dict[str, Any]]] = {}
        for table, request in body["RequestItems"].items():
            found = (self.items.get(_key(key)) for key in request["Keys"])
            responses[table] = [_project(item, request) for item in found if item is not None]
        return {"Responses": responses, "UnprocessedKeys": {}}

    def _TransactGetItems(self, body: dict[str, Any]) -> dict[str, Any]:
        responses = []
        for action in body["TransactItems"]:
            item = self.items.get(_key(action["Get"]["Key"]))
            responses.append({"Item": _project(item, action["Get"])} if item is not None else {})
        return {"Responses": responses}

    def _Query(self, body: dict[str, Any]) -> dict[str, Any]:
        unsupported = {"FilterExpression", "QueryFilter", "KeyConditions"} & body.keys()
        if unsupported:
            raise UnsupportedRequest(f"Query with {sorted(unsupported)}")
        match = _KEY_CONDITION.match(body["KeyConditionExpression"])
        if match is None:
            raise UnsupportedRequest(f"Query on {body['KeyConditionExpression']!r}")
        hash_name, hash_value, range_name, operator, range_value = match.groups()
        values = body.get("ExpressionAttributeValues", {})
        sort_name = range_name or re.sub(r"pk$", "sk", hash_name)
        wanted = values[hash_value]
        if "S" not in wanted:
            raise UnsupportedRequest(f"Query on a partition key of type {list(wanted)}")
        items = list(self._by_partition.get((hash_name, wanted["S"]), {}).values())
        if range_name is not None:
            bound = _comparable(values[range_value])
            compare = {
                "<=": lambda v: v <= bound,
                ">=": lambda v: v >= bound,
                "<": lambda v: v < bound,
                ">": lambda v: v > bound,
                "=": lambda v: v == bound,
            }[operator]
            items = [i for i in items if range_name in i and compare(_comparable(i[range_name]))]
        items.sort(key=lambda i: (_comparable(i[sort_name]) if sort_name in i else "", _key(i)))
        if body.get("ScanIndexForward") is False:
            items.reverse()
        start = body.get("ExclusiveStartKey")
        if start is not None:
            keys = [_key(i) for i in items]
            items = items[keys.index(_key(start)) + 1 :] if _key(start) in keys else []
        limit = body.get("Limit")
        reply: dict[str, Any] = {}
        if limit is not None and len(items) > limit:
            items = items[:limit]
            last = items[-1]
            reply["LastEvaluatedKey"] = {
                name: last[name] for name in ("pk", "sk", hash_name, sort_name) if name in last
            }
        reply["Items"] = [_project(item, body) for item in items]
        reply["Count"] = reply["ScannedCount"] = len(items)
        return reply


class CannedSns(_CpuAccount):
    """A `before-send.sns` handler: every `PublishBatch` entry is published."""

    def __init__(self) -> None:
        super().__init__()
        self.messages = 0

    def register(self, events: Any) -> None:
        events.register("before-send.sns", self)

    def __call__(self, request: Any, **_: Any) -> AWSResponse:
        started = time.thread_time()
        try:
            return self._answer(request)
        finally:
            self._charge(started)

    def _answer(self, request: Any) -> AWSResponse:
        body = request.body.decode() if isinstance(request.body, bytes) else str(request.body or "")
        form = parse_qs(body)
        operation = form.get("Action", [""])[0]
        self.calls[operation] += 1
        if operation != "PublishBatch":
            raise UnsupportedRequest(f"SNS {operation}")
        ids = [values[0] for name, values in form.items() if _ENTRY_ID.match(name)]
        self.messages += len(ids)
        members = "".join(
            f"<member><Id>{escape(entry)}</Id><MessageId>{uuid.uuid4()}</MessageId></member>" for entry in ids
        )
        xml = (
            '<PublishBatchResponse xmlns="http://sns.amazonaws.com/doc/2010-03-31/">'
            f"<PublishBatchResult><Successful>{members}</Successful><Failed/></PublishBatchResult>"
            f"<ResponseMetadata><RequestId>{uuid.uuid4()}</RequestId></ResponseMetadata>"
            "</PublishBatchResponse>"
        )
        return _response(request.url, "text/xml", xml.encode())
