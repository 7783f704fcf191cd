"""The AWS contention layer as an engine: DynamoDB Local behind it conflicts and throttles as AWS does.

Each test puts its own layer (`seat_tools.contention.proxy.serve`, in this process) in front of
the session's DynamoDB Local, with the settings it needs: long holds (a large time scale) to make
transactions overlap, or a small write budget to throttle. botocore parses every answer, and the
DAL maps the errors as it does on AWS.
"""

from __future__ import annotations

import bisect
import threading
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from seat_inventory.dal.access import SHARDED_READ_ATTEMPTS
from seat_inventory.dal.errors import call
from seat_inventory.dal.items import inventory_key
from seat_inventory.models import RetryableError, SaleStatus, SeatKey, Throttled, TransactionConflict
from seat_tools.contention.model import KEY_SPACE, PER_KEY, ContentionSettings, key_hash
from seat_tools.contention.proxy import serve
from seat_tools.local.engines import FAKE_ACCESS_KEY_ID, FAKE_SECRET_ACCESS_KEY
from seat_tools.local.stack import LocalStack
from seat_tools.operator_commands import OperatorTable

pytestmark = pytest.mark.local_stack

NO_RETRIES = Config(retries={"mode": "standard", "max_attempts": 1}, max_pool_connections=32)


class Layer:
    """A contention layer of its own in front of the session's DynamoDB Local."""

    def __init__(self, stack: LocalStack, settings: ContentionSettings) -> None:
        self.stack = stack
        self.server = serve(settings, stack.dynamodb_local_endpoint, seed=5)
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}"

    def client(self) -> Any:
        session = boto3.session.Session(
            aws_access_key_id=FAKE_ACCESS_KEY_ID,
            aws_secret_access_key=FAKE_SECRET_ACCESS_KEY,
            region_name=self.stack.region,
        )
        return session.client("dynamodb", endpoint_url=self.endpoint, config=NO_RETRIES)

    def counters(self) -> dict[str, Any]:
        return dict(self.server.proxy.status()["counters"])


@pytest.fixture
def layer_factory(local_stack: LocalStack) -> Iterator[Any]:
    layers: list[Layer] = []

    def make(**settings: Any) -> Layer:
        layer = Layer(local_stack, ContentionSettings(**settings))
        layers.append(layer)
        return layer

    yield make
    for layer in layers:
        layer.server.shutdown()
        layer.server.server_close()


def _hot_key(event_id: str) -> dict[str, Any]:
    return {"pk": {"S": f"EVENT#{event_id}"}, "sk": {"S": "CLASS#GA"}}


def _create_hot_item(client: Any, table: str, event_id: str, available: int) -> None:
    client.put_item(TableName=table, Item={**_hot_key(event_id), "available": {"N": str(available)}})


def _take_one(table: str, event_id: str, record_id: str) -> list[dict[str, Any]]:
    """A transaction: one record put, then a guarded decrement of the hot item (at position 1)."""
    return [
        {
            "Put": {
                "TableName": table,
                "Item": {"pk": {"S": f"RESERVATION#{record_id}"}, "sk": {"S": "RESERVATION"}},
                "ConditionExpression": "attribute_not_exists(pk)",
            }
        },
        {
            "Update": {
                "TableName": table,
                "Key": _hot_key(event_id),
                "UpdateExpression": "SET available = available - :one",
                "ConditionExpression": "available >= :one",
                "ExpressionAttributeValues": {":one": {"N": "1"}},
            }
        },
    ]


def test_concurrent_transactions_on_one_item_are_cancelled_with_the_conflict_at_its_position(
    local_stack: LocalStack, layer_factory: Any
) -> None:
    # x20: a transaction holds the item for about 0.5 s of wall time, so the 12 overlap.
    layer = layer_factory(time_scale=20)
    client = layer.client()
    table = local_stack.table_name
    event_id = f"conflict-{uuid.uuid4().hex[:8]}"
    _create_hot_item(client, table, event_id, available=100)
    start = threading.Barrier(12)

    def attempt(n: int) -> tuple[str, list[str] | None]:
        record_id = f"{event_id}-{n}"
        start.wait()
        try:
            client.transact_write_items(TransactItems=_take_one(table, event_id, record_id))
        except ClientError as exc:
            assert exc.response["Error"]["Code"] == "TransactionCanceledException"
            return record_id, [r["Code"] for r in exc.response["CancellationReasons"]]
        return record_id, None

    with ThreadPoolExecutor(12) as pool:
        results = list(pool.map(attempt, range(12)))

    committed = [record_id for record_id, reasons in results if reasons is None]
    cancelled = {record_id: reasons for record_id, reasons in results if reasons is not None}
    assert len(committed) >= 1 and len(cancelled) >= 8
    assert all(reasons == ["None", "TransactionConflict"] for reasons in cancelled.values())
    # Nothing a cancelled transaction wrote exists; the item counts exactly the commits.
    item = client.get_item(TableName=table, Key=_hot_key(event_id), ConsistentRead=True)["Item"]
    assert int(item["available"]["N"]) == 100 - len(committed)
    for record_id in cancelled:
        key = {"pk": {"S": f"RESERVATION#{record_id}"}, "sk": {"S": "RESERVATION"}}
        assert "Item" not in client.get_item(TableName=table, Key=key, ConsistentRead=True)
    counters = layer.counters()
    assert counters["transactions_committed"] == len(committed)
    assert counters["transactions_cancelled"] == {"TransactionConflict": len(cancelled)}
    assert counters["write_units_cancelled"] == 4 * len(cancelled)


def test_a_single_item_write_on_a_held_item_gets_a_conflict_which_the_dal_maps(
    local_stack: LocalStack, layer_factory: Any
) -> None:
    layer = layer_factory(time_scale=100)  # a 2-action transaction holds its items for 1.3 s or more
    client = layer.client()
    table = local_stack.table_name
    event_id = f"held-{uuid.uuid4().hex[:8]}"
    key = SeatKey(event_id, "GA")
    OperatorTable(local_stack.client("dynamodb"), table).create_seat_class(key, 10)
    holder = threading.Thread(
        target=client.transact_write_items,
        kwargs={"TransactItems": _take_one(table, event_id, f"{event_id}-0")},
    )
    holder.start()
    time.sleep(0.3)  # the holder's transaction is in flight: the writes below arrive while it holds
    close = {
        "TableName": table,
        "Key": _hot_key(event_id),
        "UpdateExpression": "SET sale_status = :closed",
        "ExpressionAttributeValues": {":closed": {"S": "CLOSED"}},
    }

    def outcome(write: Any) -> str:
        try:
            write()
        except ClientError as exc:
            return str(exc.response["Error"]["Code"])
        except Exception as exc:  # noqa: BLE001 - the DAL's domain error is the answer here
            return type(exc).__name__
        return "written"

    writes = [
        lambda: client.update_item(**close),  # botocore's view of the answer
        lambda: call(client.update_item, **close),  # the DAL's error mapping
        # An operator command reads and writes again after a retryable error: it waits the hold out.
        lambda: OperatorTable(client, table).change_capacity(key, 5),
    ]
    with ThreadPoolExecutor(3) as pool:
        outcomes = list(pool.map(outcome, writes))
    holder.join()

    assert outcomes == ["TransactionConflictException", "TransactionConflict", "written"]
    assert layer.counters()["write_conflicts"] >= 3  # the operator command's first write too
    inventory = OperatorTable(local_stack.client("dynamodb"), table).get_event(event_id)[0]
    assert (inventory.available, inventory.capacity, inventory.sale_status) == (14, 15, SaleStatus.OPEN)


def test_a_hot_partition_throttles_past_its_write_units(local_stack: LocalStack, layer_factory: Any) -> None:
    # A bucket of 20 write units (2,000 s of 0.01 a second: no unit comes back while the test
    # runs), no added latency (no holds to wait for).
    layer = layer_factory(write_units_per_s=0.01, burst_s=2000, latency=False, partitions=PER_KEY)
    client = layer.client()
    table = local_stack.table_name
    event_id = f"throttle-{uuid.uuid4().hex[:8]}"
    key = SeatKey(event_id, "GA")
    OperatorTable(local_stack.client("dynamodb"), table).create_seat_class(key, 10)  # not through it
    hot_item = {"pk": {"S": f"EVENT#{event_id}"}, "sk": {"S": "CLASS#other"}}  # the same partition key

    answers = []
    for _ in range(25):  # 1 unit each: 20 fit in the burst, the rest come too fast
        try:
            client.put_item(TableName=table, Item=hot_item)
            answers.append("ok")
        except ClientError as exc:
            answers.append(exc.response["Error"]["Code"])
            throttling = exc.response.get("ThrottlingReasons") or []
    assert answers.count("ok") == 20
    assert set(answers) == {"ok", "ProvisionedThroughputExceededException"}
    assert throttling[0]["reason"] == "TableWriteKeyRangeThroughputExceeded"

    # A transaction on the throttled partition is cancelled with ThrottlingError at its position,
    # which the DAL maps to a retryable error; another partition is not throttled.
    with pytest.raises(ClientError) as cancelled:
        client.transact_write_items(TransactItems=_take_one(table, event_id, f"{event_id}-1"))
    assert [r["Code"] for r in cancelled.value.response["CancellationReasons"]] == ["None", "ThrottlingError"]
    # An operator command on the throttled item (botocore's own retries are off here) gives up
    # with a retryable error after its attempts, having changed nothing.
    with pytest.raises(RetryableError, match="ProvisionedThroughputExceededException"):
        OperatorTable(client, table).change_capacity(key, 1)
    unchanged = OperatorTable(local_stack.client("dynamodb"), table).read_inventory(key)
    assert unchanged is not None and unchanged.capacity == 10
    other = {"pk": {"S": f"RESERVATION#{event_id}-x"}, "sk": {"S": "RESERVATION"}}
    client.put_item(TableName=table, Item=other)
    assert layer.counters()["throttled_requests"] >= 5


def _keys_on(partition: int, partitions: int, count: int, prefix: str) -> list[dict[str, Any]]:
    """Item keys whose partition key the layer hashes onto `partition` of `partitions` (it hashes
    the key's value, as the simulation does)."""
    bounds = [i * KEY_SPACE // partitions for i in range(partitions)]
    found = []
    for n in range(10_000):
        pk = {"S": f"{prefix}{n}"}
        where = bisect.bisect_right(bounds, key_hash(pk["S"])) - 1
        if where == partition:
            found.append({"pk": pk, "sk": {"S": "RESERVATION"}})
            if len(found) == count:
                return found
    raise AssertionError("no such keys")


def test_keys_on_one_partition_share_it_and_the_table_quota_throttles_with_its_own_reason(
    local_stack: LocalStack, layer_factory: Any
) -> None:
    # A table warmed to 0.02 write units per second: 2 partitions of 0.01, each holding 20 units
    # (2,000 s of burst: none comes back while the test runs); a table quota of 30 units.
    layer = layer_factory(
        write_units_per_s=0.01,
        burst_s=2000,
        warm_write_units_per_s=0.02,
        warm_read_units_per_s=3000,
        table_quota_units_per_s=0.015,
        latency=False,
    )
    client = layer.client()
    table = local_stack.table_name
    prefix = f"RESERVATION#share-{uuid.uuid4().hex[:8]}-"
    first, second = _keys_on(0, 2, 2, prefix)
    [other] = _keys_on(1, 2, 1, prefix)

    def put(key: dict[str, Any]) -> str:
        try:
            call(client.put_item, TableName=table, Item=key)  # 1 write unit: under 1 KB
        except Throttled:
            return "throttled"
        return "ok"

    def reason() -> str:
        try:
            client.put_item(TableName=table, Item=second)
        except ClientError as exc:
            assert exc.response["Error"]["Code"] == "ProvisionedThroughputExceededException"
            return str(exc.response["ThrottlingReasons"][0]["reason"])
        raise AssertionError("not throttled")

    assert [put(first) for _ in range(20)] == ["ok"] * 20
    # Another partition key on the same partition finds its units spent (the DAL: Throttled).
    assert put(second) == "throttled"
    assert reason() == "TableWriteKeyRangeThroughputExceeded"
    # The other partition has its own 20, but the table's quota has only 10 left.
    assert [put(other) for _ in range(11)] == ["ok"] * 10 + ["throttled"]
    with pytest.raises(ClientError) as quota:
        client.put_item(TableName=table, Item=other)
    assert quota.value.response["ThrottlingReasons"][0]["reason"] == "TableWriteAccountLimitExceeded"
    counters = layer.counters()
    assert counters["partitions"] == {table: 2}
    # botocore sends each throttled call twice here (its `max_attempts` 1 is one retry)
    assert counters["throttled_by"] == {"KeyRangeThroughputExceeded": 4, "AccountLimitExceeded": 4}
    assert counters["write_units_consumed"] == 30  # throttled requests consume nothing


def test_a_transactional_read_of_an_item_a_transaction_writes_is_cancelled_which_the_dal_maps(
    local_stack: LocalStack, layer_factory: Any
) -> None:
    # x40: a 2-action transaction holds its items for about 1 s of wall time, long enough for the
    # read that follows it to arrive while it holds them on a loaded machine (at x20, 0.5 s, a
    # read arrived after the hold had ended when another test process kept both cores busy).
    layer = layer_factory(time_scale=40)
    client = layer.client()
    table = local_stack.table_name
    key = SeatKey(f"read-{uuid.uuid4().hex[:8]}", "GA")
    OperatorTable(local_stack.client("dynamodb"), table).create_seat_class(key, 40, shards=4)
    shard_keys = [inventory_key(key, shard) for shard in range(4)]
    gets = [{"Get": {"TableName": table, "Key": shard_key}} for shard_key in shard_keys]
    writers: list[threading.Thread] = []

    def hold_a_shard() -> None:
        """A transaction that checks a shard item and writes a record (it changes no seat); each
        one checks the next shard, from shard 2, so that two in a row never conflict."""
        shard = (2 + len(writers)) % 4
        in_flight = layer.counters()["in_flight_transactions"]
        check = {"TableName": table, "Key": shard_keys[shard], "ConditionExpression": "attribute_exists(pk)"}
        record = {"pk": {"S": f"RESERVATION#{uuid.uuid4().hex}"}, "sk": {"S": "RESERVATION"}}
        actions = [{"ConditionCheck": check}, {"Put": {"TableName": table, "Item": record}}]
        writer = threading.Thread(target=client.transact_write_items, kwargs={"TransactItems": actions})
        writer.start()
        writers.append(writer)
        deadline = time.monotonic() + 5
        while layer.counters()["in_flight_transactions"] <= in_flight and time.monotonic() < deadline:
            time.sleep(0.005)

    hold_a_shard()  # on shard 2
    # botocore's view of the answer: the exception and the reason at the held item's position.
    with pytest.raises(ClientError) as cancelled:
        client.transact_get_items(TransactItems=gets)
    assert cancelled.value.response["Error"]["Code"] == "TransactionCanceledException"
    assert [r["Code"] for r in cancelled.value.response["CancellationReasons"]] == [
        "None",
        "None",
        "TransactionConflict",
        "None",
    ]
    # A plain read of the same item is never refused.
    assert "Item" in client.get_item(TableName=table, Key=shard_keys[2], ConsistentRead=True)

    # The DAL reads the class again after each refusal (here a new writer arrives every time)
    # and, after its attempts, raises the domain's TransactionConflict.
    store = OperatorTable(client, table, sleep=lambda _: hold_a_shard())
    hold_a_shard()
    with pytest.raises(TransactionConflict):
        store.read_inventory(key)
    for writer in writers:
        writer.join()

    # Once no transaction writes, the same read is admitted and sees the whole class.
    inventory = OperatorTable(client, table).read_inventory(key)
    assert inventory is not None and (inventory.capacity, inventory.available) == (40, 40)
    counters = layer.counters()
    assert counters["read_transactions_cancelled"] == {"TransactionConflict": 1 + SHARDED_READ_ATTEMPTS}
    assert counters["read_transactions_committed"] == 1
    assert counters["transactions_committed"] == len(writers)  # the reads refused no write
