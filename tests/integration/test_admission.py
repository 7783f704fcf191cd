"""Admission tokens on moto (docs/guides/admission.md): every new DynamoDB expression path, the operator's
switch, the handler reading its keys from SSM (SecureString) once per container, and the CLI."""

from __future__ import annotations

import json
import time

import boto3
import pytest
from click.testing import CliRunner

from seat_inventory.logic.admission_tokens import KeyRing, parse_key_ring
from seat_inventory.models import Outcome, ReservationOutcome, SeatKey, TokenUse
from seat_tools.admission_keys import issue_token, new_key_ring_text
from seat_tools.cli.main import cli
from seat_tools.operator_commands import OperatorTable
from tests.integration.conftest import REGION, Stack, sqs_event
from tests.writes import GroupWrite, commit_outcomes

KEY = SeatKey("e-1", "GA")
PARAMETER = "/seats/test/admission-keys"
RING_TEXT = new_key_ring_text("k1", b"s" * 32)
RING = parse_key_ring(RING_TEXT)


def answer(reservation_id: str, outcome: Outcome = Outcome.CONFIRMED) -> ReservationOutcome:
    return ReservationOutcome(
        reservation_id=reservation_id,
        outcome=outcome,
        reason="why",
        event_id="e-1",
        seat_class="GA",
        quantity=1,
        customer_id="c-1",
        message_id=f"m-{reservation_id}",
    )


def spend(reservation_id: str, token_id: str = "t-1", *, required: bool = True) -> GroupWrite:
    return GroupWrite(
        KEY,
        [answer(reservation_id)],
        seats_taken=1,
        rejection_expires_at=0,
        admission_required=required,
        token_uses=[TokenUse(token_id, reservation_id, int(time.time()) + 3600)],
    )


@pytest.fixture
def table(stack: Stack) -> OperatorTable:
    table = OperatorTable(stack.dynamodb, stack.table_name)
    table.create_seat_class(KEY, 10, admission_required=True)
    return table


def token_item(stack: Stack, token_id: str) -> dict:
    return stack.dynamodb.get_item(
        TableName=stack.table_name, Key={"pk": {"S": f"ADMISSION#{token_id}"}, "sk": {"S": "TOKEN"}}
    ).get("Item", {})


# --- the token's put: attribute_not_exists(pk) OR reservation_id = :reservation_id -------------


def test_a_token_is_spent_with_the_seats_it_buys(stack: Stack, table: OperatorTable) -> None:
    assert commit_outcomes(table, spend("r-1")) is None

    item = token_item(stack, "t-1")
    assert item["reservation_id"] == {"S": "r-1"}
    assert int(item["expires_at"]["N"]) > time.time()
    assert stack.inventory("e-1") == {"capacity": 10, "available": 9, "sold": 1}


def test_a_token_another_reservation_spent_refuses_the_whole_write(
    stack: Stack, table: OperatorTable
) -> None:
    commit_outcomes(table, spend("r-1"))

    refused = commit_outcomes(table, spend("r-2"))

    assert refused is not None
    assert refused.tokens_used == {"t-1": "r-1"}
    assert not refused.inventory_refused and not refused.already_recorded
    assert stack.inventory("e-1")["available"] == 9  # nothing written
    assert table.get_reservation("r-2") is None


def test_a_redelivery_of_the_same_reservation_finds_its_record_not_a_replay(
    stack: Stack, table: OperatorTable
) -> None:
    commit_outcomes(table, spend("r-1"))

    refused = commit_outcomes(table, spend("r-1"))

    assert refused is not None
    assert refused.tokens_used == {}
    assert set(refused.already_recorded) == {"r-1"}
    assert stack.inventory("e-1")["available"] == 9


# --- the inventory guard: admission_required as the planner assumed it --------------------------


def test_a_write_that_assumed_no_admission_is_refused_with_the_item(table: OperatorTable) -> None:
    refused = commit_outcomes(
        table,
        GroupWrite(KEY, [answer("r-1")], seats_taken=1, rejection_expires_at=0, admission_required=False),
    )

    assert refused is not None and refused.inventory_refused
    assert refused.inventory is not None and refused.inventory.admission_required


def test_a_write_that_assumed_admission_on_a_free_class_is_refused(
    stack: Stack, table: OperatorTable
) -> None:
    table.create_seat_class(SeatKey("e-1", "FREE"), 5)
    write = spend("r-1")
    refused = commit_outcomes(
        table,
        GroupWrite(
            SeatKey("e-1", "FREE"),
            write.outcomes,
            seats_taken=1,
            rejection_expires_at=0,
            admission_required=True,
            token_uses=write.token_uses,
        ),
    )

    assert refused is not None and refused.inventory_refused
    assert refused.inventory is not None and not refused.inventory.admission_required
    assert token_item(stack, "t-1") == {}


def test_a_token_for_a_missing_class_is_not_spent(stack: Stack, table: OperatorTable) -> None:
    write = spend("r-1")
    refused = commit_outcomes(
        table,
        GroupWrite(
            SeatKey("e-9", "GA"),
            write.outcomes,
            seats_taken=1,
            rejection_expires_at=0,
            admission_required=True,
            token_uses=write.token_uses,
        ),
    )

    assert refused is not None and refused.inventory_refused and refused.inventory is None
    assert token_item(stack, "t-1") == {}


# --- the operator's switch ------------------------------------------------------------------------


def test_the_switch_is_applied_once_and_shown(stack: Stack, table: OperatorTable) -> None:
    table.set_admission_required(KEY, False, operation_id="op-1")
    again = table.set_admission_required(KEY, False, operation_id="op-1")  # a retry: no second write

    assert not again.admission_required
    assert table.get_event("e-1")[0].version == 1
    assert table.set_admission_required(KEY, True).admission_required
    assert table.get_event("e-1")[0].version == 2


def test_the_switch_on_a_missing_class_changes_nothing(table: OperatorTable) -> None:
    from seat_tools.operator_errors import UnknownSeatClass

    with pytest.raises(UnknownSeatClass, match="event 'e-1' has no seat class 'NOPE'"):
        table.set_admission_required(SeatKey("e-1", "NOPE"), True)
    assert [c.seat_class for c in table.get_event("e-1")] == ["GA"]


def test_a_sharded_class_requires_admission_on_every_item_and_after_a_reshard(table: OperatorTable) -> None:
    key = SeatKey("e-1", "SHARDED")
    table.create_seat_class(key, 40, shards=2, admission_required=True)
    table.reshard(key, 4)

    items = table._client.scan(TableName=table._table_name)["Items"]
    flags = [
        i.get("admission_required")
        for i in items
        if i.get("seat_class") == {"S": "SHARDED"} and i.get("entity") == {"S": "inventory"}
    ]
    assert flags == [{"BOOL": True}] * 4
    assert not table.set_admission_required(key, False).admission_required


def test_cli_create_require_admission_toggle_and_show(stack: Stack, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TABLE_NAME", stack.table_name)
    runner = CliRunner()
    created = runner.invoke(cli, ["event", "create", "gig", "--capacity", "5", "--require-admission"])
    shown = runner.invoke(cli, ["event", "show", "gig", "--output", "json"])
    table = runner.invoke(cli, ["event", "show", "gig"]).output.splitlines()
    off = runner.invoke(cli, ["event", "admission", "gig", "--not-required"])
    usage = runner.invoke(cli, ["event", "admission", "gig"])

    assert created.exit_code == 0, created.output
    assert json.loads(shown.output)["seat_classes"][0]["admission_required"] is True
    assert table[0].endswith("LIMIT  ADMISSION") and table[1].endswith("-  token")
    assert off.exit_code == 0 and "admission token required" not in off.output
    assert usage.exit_code == 2 and "give --required or --not-required" in usage.output


# --- the handler: keys from SSM, tokens end to end -------------------------------------------------


@pytest.fixture
def gated(stack: Stack, monkeypatch: pytest.MonkeyPatch) -> Stack:
    boto3.client("ssm", region_name=REGION).put_parameter(
        Name=PARAMETER, Value=RING_TEXT, Type="SecureString"
    )
    monkeypatch.setenv("ADMISSION_KEY_PARAMETER", PARAMETER)
    OperatorTable(stack.dynamodb, stack.table_name).create_seat_class(KEY, 10, admission_required=True)
    return stack


def body(reservation_id: str, token: str | None, customer: str = "c-1") -> dict:
    message = {"reservation_id": reservation_id, "event_id": "e-1", "quantity": 1, "customer_id": customer}
    if token is not None:
        message["admission_token"] = token
    return message


def fresh_token(ring: KeyRing = RING, token_id: str = "t-1", customer: str = "c-1") -> str:
    return issue_token(
        ring, event_id="e-1", customer_id=customer, expires_at=int(time.time()) + 600, token_id=token_id
    )


def test_the_handler_admits_a_token_once_and_reads_its_keys_once(gated: Stack) -> None:
    token = fresh_token()
    first = gated.invoke(sqs_event(body("r-1", token), body("r-2", None)))
    second = gated.invoke(sqs_event(body("r-3", token)))
    third = gated.invoke(sqs_event(body("r-3", token)))  # the replay's redelivery

    outcomes = {(o["reservation_id"], o["duplicate"]): (o["outcome"], o["reason"]) for o in gated.outcomes()}
    assert first == second == third == {"batchItemFailures": []}
    assert outcomes[("r-1", False)][0] == "CONFIRMED"
    assert outcomes[("r-2", False)] == ("ADMISSION_REFUSED", "admission token missing")
    assert outcomes[("r-3", False)] == (
        "ADMISSION_REFUSED",
        "admission token replayed: already used by reservation r-1",
    )
    assert outcomes[("r-3", True)][0] == "ADMISSION_REFUSED"
    assert gated.inventory("e-1")["available"] == 9
    assert gated.faults.calls.count("GetParameter") == 1  # cached for the container


def test_a_rotation_accepts_both_keys_and_the_new_one_is_read_after_the_refresh(gated: Stack) -> None:
    from seat_inventory.handlers import reserve_seats as handler_module

    old_token = fresh_token(token_id="old")
    gated.invoke(sqs_event(body("r-1", old_token)))
    rotated_text = new_key_ring_text("k2", b"t" * 32, previous=RING)
    boto3.client("ssm", region_name=REGION).put_parameter(
        Name=PARAMETER, Value=rotated_text, Type="SecureString", Overwrite=True
    )
    # The container's refresh (ADMISSION_KEY_REFRESH_SECONDS, 60) passes: its keys are read again.
    keys = handler_module._container.get(handler_module.build_adapters).admission._load_keys
    keys._read_at -= 61  # type: ignore[attr-defined]
    new_token = fresh_token(parse_key_ring(rotated_text), token_id="new", customer="c-2")
    older = fresh_token(token_id="old-2", customer="c-3")
    gated.invoke(sqs_event(body("r-2", new_token, "c-2"), body("r-3", older, "c-3")))

    outcomes = {o["reservation_id"]: o["outcome"] for o in gated.outcomes()}
    assert outcomes == {"r-1": "CONFIRMED", "r-2": "CONFIRMED", "r-3": "CONFIRMED"}
    assert gated.faults.calls.count("GetParameter") == 2


def test_unreadable_keys_hand_the_tokened_messages_back(gated: Stack) -> None:
    gated.faults.fail("ssm.GetParameter", "InternalServerError", times=10)

    result = gated.invoke(sqs_event(body("r-1", fresh_token()), body("r-2", None)))

    assert result == {"batchItemFailures": [{"itemIdentifier": "msg-0"}]}
    assert [(o["reservation_id"], o["outcome"]) for o in gated.outcomes()] == [("r-2", "ADMISSION_REFUSED")]


def test_seats_tokens_issue_from_the_parameter(gated: Stack) -> None:
    result = CliRunner().invoke(
        cli,
        ["tokens", "issue", "--event", "e-1", "--customer", "c-1", "--parameter", PARAMETER, "--ttl", "60"],
    )

    assert result.exit_code == 0, result.output
    token = result.output.strip()
    gated.invoke(sqs_event(body("r-1", token)))
    assert [o["outcome"] for o in gated.outcomes()] == ["CONFIRMED"]


def test_a_rotation_with_seats_tokens_keygen_and_retire(gated: Stack) -> None:
    runner = CliRunner()
    ssm = boto3.client("ssm", region_name=REGION)

    rotated = runner.invoke(
        cli, ["tokens", "keygen", "--key-id", "k2", "--put-parameter", PARAMETER, "--keep-previous"]
    )
    ring = parse_key_ring(ssm.get_parameter(Name=PARAMETER, WithDecryption=True)["Parameter"]["Value"])
    current = runner.invoke(cli, ["tokens", "retire", "k2", "--parameter", PARAMETER])
    retired = runner.invoke(cli, ["tokens", "retire", "k1", "--parameter", PARAMETER])
    after = parse_key_ring(ssm.get_parameter(Name=PARAMETER, WithDecryption=True)["Parameter"]["Value"])

    assert rotated.exit_code == 0 and "current key k2; still accepted: k1" in rotated.output
    assert (ring.current, sorted(ring.keys)) == ("k2", ["k1", "k2"])
    assert ring.keys["k1"] == RING.keys["k1"]
    assert current.exit_code == 1 and "is the current key" in current.output
    assert retired.exit_code == 0
    assert (after.current, sorted(after.keys)) == ("k2", ["k2"])
    assert ssm.get_parameter(Name=PARAMETER)["Parameter"]["Type"] == "SecureString"


def test_the_function_may_read_the_admission_parameter_only(template) -> None:
    policies = template.properties("ReserveSeatsFunction")["Policies"]
    conditional = {
        s["Fn::If"][1]["Sid"]: s["Fn::If"]
        for p in policies
        if isinstance(p, dict)
        for s in p.get("Statement", [])
        if "Fn::If" in s
    }

    condition, read, otherwise = conditional["AdmissionKeyRead"]
    assert (condition, otherwise) == ("HasAdmissionKey", {"Ref": "AWS::NoValue"})
    assert read["Action"] == "ssm:GetParameter"
    assert read["Resource"] == {
        "Fn::Sub": "arn:${AWS::Partition}:ssm:${AWS::Region}:${AWS::AccountId}:parameter${AdmissionKeyParameterName}"
    }
    condition, decrypt, _ = conditional["AdmissionKeyDecrypt"]
    assert condition == "HasAdmissionKmsKey"
    assert decrypt["Action"] == "kms:Decrypt"
    assert decrypt["Resource"] == {"Ref": "AdmissionKeyKmsKeyArn"}
    assert decrypt["Condition"] == {
        "StringEquals": {"kms:ViaService": {"Fn::Sub": "ssm.${AWS::Region}.amazonaws.com"}}
    }
