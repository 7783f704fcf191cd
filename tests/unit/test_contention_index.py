"""A global secondary index in the contention model (and the local proxy): its own warm throughput
and partitions, and an index that cannot take a write throttles the table's write that makes it."""

from __future__ import annotations

import random

from seat_tools.contention.model import (
    INDEX_THROTTLING_REASONS,
    THROTTLING_ERROR,
    ContentionModel,
    ContentionSettings,
    IndexWrite,
    ItemWrite,
    Verdict,
)
from seat_tools.contention.proxy import ContentionProxy, KeySchema


def model(**settings: float) -> ContentionModel:
    return ContentionModel(ContentionSettings(**settings), clock=lambda: 0.0, rng=random.Random(1))  # type: ignore[arg-type]


_ids = iter(range(10**9))


def records(count: int) -> list[ItemWrite]:
    """`count` new reservation records (each transaction its own: no conflicts)."""
    keys = [f"RESERVATION#r-{next(_ids)}" for _ in range(count)]
    return [ItemWrite(key, f"{key}|R", 2, "t") for key in keys]


def entries(count: int, key: str = "UNNUMBERED#7") -> list[IndexWrite]:
    return [IndexWrite("TicketsToIssue", n, key) for n in range(count)]


def test_a_cold_index_partition_throttles_the_tables_write_and_names_the_index() -> None:
    # Given a table warmed far beyond the writes, and its index as new (4,000 write units a second
    # over 4 partitions of 1,000, burst 1 s): one index key takes at most 1,000 entries a second
    cold = model(warm_write_units_per_s=100_000)

    first = cold.transact_write(records(99), now=0.0, index_writes=entries(99))
    many = [cold.transact_write(records(99), now=0.0, index_writes=entries(99)) for _ in range(12)]

    # Then the transactions whose entries the index partition has no units for are cancelled with
    # ThrottlingError, the index named as the cause, and nothing taken from the table
    assert first.admitted
    refused = [d for d in many if d.verdict is Verdict.THROTTLED]
    assert len(refused) == 12 - 9  # 10 of 99 entries fit in the partition's 1,000 (burst 1 s)
    assert refused[0].throttled_by == "IndexWriteKeyRangeThroughputExceeded" in INDEX_THROTTLING_REASONS
    assert refused[0].throttled_index == "TicketsToIssue"
    assert refused[0].reasons[0] == THROTTLING_ERROR
    counters = cold.counters()
    assert counters.throttled_by == {"IndexWriteKeyRangeThroughputExceeded": 3}
    assert counters.write_units_consumed == 10 * 99 * 2  # the refused ones took nothing
    assert counters.index_write_units_consumed == 10 * 99
    assert counters.partitions == {"t": 100}  # the index's partitions are its own


def test_an_index_pre_warmed_for_the_sale_takes_its_writes_and_has_a_quota_of_its_own() -> None:
    # Entries spread over 128 keys (the index's buckets), 9,900 asked in one instant of an index
    # pre-warmed to 40,000 a second (40 partitions) and of a new one (4)
    spread = [IndexWrite("TicketsToIssue", n, f"UNNUMBERED#{n % 128}") for n in range(99)]

    def refused_by_the_index(count: int, **settings: float) -> list[str | None]:
        sale = model(warm_write_units_per_s=100_000, table_quota_units_per_s=100_000, **settings)
        decisions = [sale.transact_write(records(99), now=0.0, index_writes=spread) for _ in range(count)]
        return [d.throttled_by for d in decisions if d.throttled_by in INDEX_THROTTLING_REASONS]

    assert refused_by_the_index(100, index_warm_write_units_per_s=40_000) == []
    assert len(refused_by_the_index(100)) > 50

    # The index's own quota (the per-table quota: 100,000 here) stops it whatever its partitions
    # (entries of 3 KB on keys of their own, 3 units each, so that the index runs out before the
    # table's 2 a record)
    def big() -> list[IndexWrite]:
        return [IndexWrite("TicketsToIssue", n, f"KEY#{next(_ids)}", 3) for n in range(99)]

    sale = model(
        warm_write_units_per_s=1_000_000,
        table_quota_units_per_s=100_000,
        index_warm_write_units_per_s=1_000_000,
    )
    decisions = [sale.transact_write(records(99), now=0.0, index_writes=big()) for _ in range(500)]
    capped = [d.throttled_by for d in decisions if not d.admitted]
    assert capped and set(capped) == {"IndexWriteAccountLimitExceeded"}


def test_the_local_proxy_finds_the_index_writes_of_a_request() -> None:
    proxy = ContentionProxy(model(), "http://127.0.0.1:1")
    proxy._schemas["t"] = KeySchema("pk", "sk", (("TicketsToIssue", "gsi2pk"),))
    sold = {
        "TableName": "t",
        "Item": {"pk": {"S": "RESERVATION#r-1"}, "sk": {"S": "R"}, "gsi2pk": {"S": "UNNUMBERED#7"}},
    }
    numbered = {
        "TableName": "t",
        "Key": {"pk": {"S": "RESERVATION#r-2"}, "sk": {"S": "R"}},
        "UpdateExpression": "SET ticket_first = :f REMOVE #g, gsi2sk",
        "ExpressionAttributeNames": {"#g": "gsi2pk"},
        "ExpressionAttributeValues": {":f": {"N": "1"}},
    }
    other = {
        "TableName": "t",
        "Key": {"pk": {"S": "EVENT#e"}, "sk": {"S": "GA"}},
        "UpdateExpression": "SET available = available - :n",
        "ExpressionAttributeValues": {":n": {"N": "1"}},
    }
    gone = {"TableName": "t", "Key": {"pk": {"S": "RESERVATION#r-3"}, "sk": {"S": "R"}}}

    writes = proxy.index_writes(
        [("Put", sold), ("Update", numbered), ("Update", other), ("Delete", gone)], {}
    )

    assert [(w.index, w.position, w.partition_key) for w in writes] == [
        ("TicketsToIssue", 0, "UNNUMBERED#7"),
        ("TicketsToIssue", 1, 't/{"S": "RESERVATION#r-2"}/{"S": "R"}'),
    ]
    body = proxy.throttled(
        "t", write=True, limit="IndexWriteKeyRangeThroughputExceeded", index="TicketsToIssue"
    )
    assert body["ThrottlingReasons"] == [
        {
            "reason": "IndexWriteKeyRangeThroughputExceeded",
            "resource": "arn:aws:dynamodb:us-east-1:000000000000:table/t/index/TicketsToIssue",
        }
    ]
