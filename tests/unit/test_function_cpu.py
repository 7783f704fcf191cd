"""The CPU measurement of the real handlers (scripts/measure_function_cpu.py) and its canned AWS.

The canned services are checked through real boto3 clients (their answers parse, and say what
a table holding those items would say); the measurement runs in a tiny configuration: it proves
the handlers ran on the canned transport with the calls they make on AWS, and that the script
writes a constants module that imports. Nothing here asserts a speed.
"""

from __future__ import annotations

import math
from typing import Any

import boto3
import pytest
from scripts.measure_function_cpu import constants_module
from scripts.measure_function_cpu import main as script_main

from seat_tools.bench.canned_aws import CannedDynamoDB, CannedSns, UnsupportedRequest
from seat_tools.bench.function_cpu import IssuerFit, LinearFit, Measurement, Sample, measure, median_run

CREDENTIALS = {"region_name": "us-east-1", "aws_access_key_id": "test", "aws_secret_access_key": "test"}


def _clients() -> tuple[Any, Any, CannedDynamoDB, CannedSns]:
    session = boto3.session.Session(**CREDENTIALS)
    dynamodb, sns = CannedDynamoDB(), CannedSns()
    dynamodb.register(session.events)
    sns.register(session.events)
    return session.client("dynamodb"), session.client("sns"), dynamodb, sns


def _item(pk: str, sk: str, **attributes: Any) -> dict[str, Any]:
    return {"pk": {"S": pk}, "sk": {"S": sk}, **attributes}


def test_canned_dynamodb_answers_reads_from_the_items_written_until_frozen() -> None:
    client, _, canned, _ = _clients()
    client.put_item(TableName="t", Item=_item("A", "1", n={"N": "1"}))
    client.transact_write_items(
        TransactItems=[
            {"Put": {"TableName": "t", "Item": _item("A", "2", n={"N": "2"})}},
            {
                "Update": {
                    "TableName": "t",
                    "Key": {"pk": {"S": "A"}, "sk": {"S": "1"}},
                    "UpdateExpression": "SET n = :n",
                    "ExpressionAttributeValues": {":n": {"N": "9"}},
                }
            },
        ]
    )
    canned.frozen = True
    client.put_item(TableName="t", Item=_item("A", "3"))

    assert client.get_item(TableName="t", Key={"pk": {"S": "A"}, "sk": {"S": "1"}})["Item"]["n"] == {"N": "1"}
    assert "Item" not in client.get_item(TableName="t", Key={"pk": {"S": "A"}, "sk": {"S": "3"}})
    batch = client.batch_get_item(
        RequestItems={
            "t": {
                "Keys": [{"pk": {"S": "A"}, "sk": {"S": s}} for s in ("1", "2", "3")],
                "ProjectionExpression": "#n",
                "ExpressionAttributeNames": {"#n": "n"},
            }
        }
    )
    assert sorted(i["n"]["N"] for i in batch["Responses"]["t"]) == ["1", "2"]
    assert batch["Responses"]["t"][0].keys() == {"n"}
    got = client.transact_get_items(
        TransactItems=[
            {"Get": {"TableName": "t", "Key": {"pk": {"S": "A"}, "sk": {"S": s}}}} for s in ("2", "3")
        ]
    )
    assert [r.get("Item", {}).get("n") for r in got["Responses"]] == [{"N": "2"}, None]
    assert canned.calls["PutItem"] == 2 and canned.calls["TransactWriteItems"] == 1
    assert canned.cpu_s > 0


def test_canned_dynamodb_queries_an_index_in_sort_order_page_by_page() -> None:
    client, _, canned, _ = _clients()
    for n in (3, 1, 2):
        canned.put(_item(f"R#{n}", "R", gsi2pk={"S": "UNNUMBERED#0"}, gsi2sk={"N": str(n)}))
    canned.put(_item("R#9", "R", gsi2pk={"S": "UNNUMBERED#1"}, gsi2sk={"N": "0"}))
    query = {
        "TableName": "t",
        "IndexName": "TicketsToIssue",
        "KeyConditionExpression": "gsi2pk = :pk",
        "ExpressionAttributeValues": {":pk": {"S": "UNNUMBERED#0"}},
        "Limit": 2,
    }
    first = client.query(**query)
    second = client.query(**query, ExclusiveStartKey=first["LastEvaluatedKey"])

    assert [i["pk"]["S"] for i in first["Items"]] == ["R#1", "R#2"]
    assert [i["pk"]["S"] for i in second["Items"]] == ["R#3"]
    assert "LastEvaluatedKey" not in second
    bounded = client.query(
        TableName="t",
        IndexName="TicketsToIssue",
        KeyConditionExpression="gsi2pk = :pk AND gsi2sk <= :top",
        ExpressionAttributeValues={":pk": {"S": "UNNUMBERED#0"}, ":top": {"N": "2"}},
        ScanIndexForward=False,
    )
    assert [i["pk"]["S"] for i in bounded["Items"]] == ["R#2", "R#1"]


def test_canned_services_refuse_what_they_do_not_answer() -> None:
    client, sns, _, _ = _clients()
    with pytest.raises(UnsupportedRequest):
        client.scan(TableName="t")
    with pytest.raises(UnsupportedRequest):
        client.query(
            TableName="t",
            KeyConditionExpression="pk = :pk",
            FilterExpression="n > :n",
            ExpressionAttributeValues={":pk": {"S": "A"}, ":n": {"N": "1"}},
        )
    with pytest.raises(UnsupportedRequest):
        sns.publish(TopicArn="arn:aws:sns:us-east-1:123456789012:t", Message="m")


def test_canned_sns_publishes_every_entry_of_a_batch() -> None:
    _, sns, _, canned = _clients()
    response = sns.publish_batch(
        TopicArn="arn:aws:sns:us-east-1:123456789012:t",
        PublishBatchRequestEntries=[{"Id": str(n), "Message": f"m{n}"} for n in range(10)],
    )
    assert sorted(e["Id"] for e in response["Successful"]) == [str(n) for n in range(10)]
    assert response["Failed"] == []
    assert canned.messages == 10


def test_fits_recover_known_lines() -> None:
    line = LinearFit.of([(1, 3.0), (10, 12.0), (99, 101.0)])
    assert line.intercept_ms == pytest.approx(2.0) and line.slope_ms == pytest.approx(1.0)
    assert line.r_squared == pytest.approx(1.0)
    issuer = IssuerFit.of([(1, 1, 13.5), (1, 98, 62.0), (8, 98, 76.0), (8, 490, 272.0)])
    assert (issuer.round_ms, issuer.per_batch_ms, issuer.per_ticket_ms) == pytest.approx((11.0, 2.0, 0.5))
    with pytest.raises(ValueError):
        LinearFit.of([(5, 1.0), (5, 2.0)])


def test_a_tiny_measurement_runs_both_real_handlers_with_the_calls_they_make_on_aws() -> None:
    result = measure(
        kinds=("reserve", "sold-out"),
        sizes=(1, 12),
        rounds=2,
        issuer=((1, 1), (12, 1), (40, 4)),
        issuer_rounds=1,
    )

    reserve = [s for s in result.samples if s.kind == "reserve"]
    assert [(s.messages, s.rounds) for s in reserve] == [(1, 2), (12, 2)]
    assert all(s.low_ms <= s.median_ms <= s.high_ms and s.median_ms > 0 for s in result.samples)
    # One transaction per batch, one PublishBatch per 10 answers (1 and 12 messages: 1 and 2).
    assert result.calls["reserve"] == {"dynamodb.TransactWriteItems": 1.0, "sns.PublishBatch": 1.5}
    # After the sell-out each refusal's record is its own PutItem (13 over two invocations).
    assert result.calls["sold-out"]["dynamodb.PutItem"] == pytest.approx(13 / 2)
    issuer = [s for s in result.samples if s.kind == "issuer"]
    assert [(s.messages, s.series) for s in issuer] == [(1, 1), (12, 1), (40, 4)]
    assert issuer[2].batches == 4
    assert result.calls["issuer"]["dynamodb.TransactWriteItems"] == 4.0
    assert set(result.reserve_fits) == {"reserve", "sold-out"}
    assert result.issuer_fit is not None and math.isfinite(result.issuer_fit.per_ticket_ms)

    text = constants_module(result, rounds=2, runs=1, load="0.00", date="today")
    namespace: dict[str, Any] = {}
    exec(compile(text, "measured_cpu.py", "exec"), namespace)  # the generated module imports
    cpu = namespace["RESERVE_CPU"]["reserve"]
    assert cpu.ms(99) == pytest.approx(cpu.invocation_ms + 99 * cpu.per_message_ms)
    assert namespace["vcpu_share"](512) == pytest.approx(512 / 1769)
    assert namespace["vcpu_share"](3008) == 1.0
    assert namespace["handler_seconds"](100.0, 1769) == pytest.approx(0.1)


def test_the_script_prints_its_table_and_refuses_bad_sizes(capsys: pytest.CaptureFixture[str]) -> None:
    assert script_main(["--kinds", "hold", "--sizes", "1,2", "--rounds", "1", "--issuer", ""]) == 0
    out = capsys.readouterr().out
    assert "hold" in out and "per message ms" in out
    assert (
        script_main(["--runs", "2", "--kinds", "hold", "--sizes", "1,2", "--rounds", "1", "--issuer", ""])
        == 0
    )
    out = capsys.readouterr().out
    assert "run 1 of 2" in out and "run 2 of 2" in out and "each kind's median run of 2:" in out
    with pytest.raises(SystemExit):
        script_main(["--runs", "0", "--kinds", "hold", "--sizes", "1,2"])
    with pytest.raises(SystemExit):
        script_main(["--kinds", "hold", "--sizes", "100,2"])


def _run(
    reserve: tuple[float, float], sold_out: tuple[float, float], issuer_round_ms: float, tag: int
) -> Measurement:
    """A run whose fits are given; each sample carries `tag` as its rounds, to tell runs apart."""
    return Measurement(
        samples=[
            Sample("reserve", 99, reserve[0] + 99 * reserve[1], 0, 0, tag),
            Sample("sold-out", 99, sold_out[0] + 99 * sold_out[1], 0, 0, tag),
            Sample("issuer", 98, issuer_round_ms, 0, 0, tag, batches=1, series=1),
        ],
        reserve_fits={"reserve": LinearFit(*reserve, 1.0), "sold-out": LinearFit(*sold_out, 1.0)},
        issuer_fit=IssuerFit(issuer_round_ms, 1.0, 0.4, 1.0),
        machine="m",
        calls={"reserve": {"x": tag}, "sold-out": {"x": tag}, "issuer": {"x": tag}},
    )


def test_each_kind_keeps_the_run_with_its_median_full_batch_and_that_runs_samples() -> None:
    slow_reserve = _run((2.0, 0.50), (5.0, 0.80), 60.0, 1)  # reserve 51.5 ms at 99 (the slowest)
    middle = _run((2.0, 0.40), (5.0, 0.90), 70.0, 2)  # reserve 41.6, sold-out 94.1 (the slowest)
    fast = _run((1.5, 0.35), (6.0, 0.85), 50.0, 3)  # reserve 36.15, sold-out 90.15
    result = median_run([slow_reserve, middle, fast])
    assert result.reserve_fits["reserve"] == LinearFit(2.0, 0.40, 1.0)  # the middle of 36.15, 41.6, 51.5
    assert result.reserve_fits["sold-out"] == LinearFit(6.0, 0.85, 1.0)  # the middle of 84.2, 90.15, 94.1
    assert result.issuer_fit == IssuerFit(60.0, 1.0, 0.4, 1.0)  # rounds of 60, 70 and 50 ms
    assert [(s.kind, s.rounds) for s in result.samples] == [("reserve", 2), ("sold-out", 3), ("issuer", 1)]
    assert result.calls == {"reserve": {"x": 2}, "sold-out": {"x": 3}, "issuer": {"x": 1}}
    # of two, the lower; of one, itself
    assert median_run([middle, slow_reserve]).reserve_fits["reserve"] == LinearFit(2.0, 0.40, 1.0)
    assert median_run([fast]).reserve_fits == fast.reserve_fits
    with pytest.raises(ValueError, match="no run"):
        median_run([])
