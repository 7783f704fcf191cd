"""Every sample event in events/ for the reservations function, run through the real handler by
`seats invoke -e events/<file>.json` on moto, with the inventory it is written for, answered as
its scenario says: chosen seats, best available, a mapped hold, an order, an admission token, and a
hold followed by its confirmation and cancellation (the reserve_*.json files are
test_traffic_commands.py's)."""

from __future__ import annotations

import inspect
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from click.testing import CliRunner
from moto import mock_aws

from seat_inventory.models import SeatKey
from seat_tools.admission_keys import new_key_ring_text
from seat_tools.cli.main import cli
from seat_tools.operator_commands import OperatorTable
from seat_tools.seat_map_commands import SaleRules
from seat_tools.seat_map_files import load_file
from seat_tools.traffic import OutcomeCollector
from tests.template_support import load_template

REPO = Path(__file__).resolve().parents[2]
EVENTS = REPO / "events"
REGION = "us-east-1"
TABLE_NAME = "seat-inventory-events-test"
KEYS_PARAMETER = "/seat-inventory/admission-keys"
# The ring admission_token.json's token is signed with (key id "sample"; the token runs to 2100).
SAMPLE_RING = new_key_ring_text("sample", b"sample admission key of 32 bytes")

# Each file's answers, in the order of its messages.
SCENARIOS = {
    "mapped_chosen.json": ["CONFIRMED", "SEATS_TAKEN"],  # the second asks for a seat of the first
    "mapped_best_available.json": ["CONFIRMED", "CONFIRMED"],
    "mapped_hold.json": ["HELD"],
    "order.json": ["CONFIRMED", "SOLD_OUT"],  # the second order's VIP line cannot be met: none taken
    "admission_token.json": ["CONFIRMED", "ADMISSION_REFUSED"],  # the second has no token
}
# Run in this order on one table: two holds, a confirm (one of them, and an unknown one), a cancel.
LIFECYCLE = {
    "hold.json": ["HELD", "HELD"],
    "confirm.json": ["CONFIRMED", "UNKNOWN_RESERVATION"],
    "cancel.json": ["CANCELLED", "CANCELLED"],
}
# Not for the reservations function (`sam local invoke` of the sweeper and the issuer), or not an event.
OTHER_FILES = {"env.local.json", "sweep_schedule.json", "issue_schedule.json"}
# API Gateway proxy events of the gate's function, run by test_traffic_commands.py
GATE_SAMPLES = {"gate_checkin.json", "gate_tickets.json"}


@pytest.fixture
def stack(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    """The table, the topic and the SSM key ring on moto, with the inventory the samples are for."""
    with mock_aws():
        session = boto3.session.Session(region_name=REGION)
        dynamodb, sns, sqs = session.client("dynamodb"), session.client("sns"), session.client("sqs")
        dynamodb.create_table(**load_template(REPO / "template.yaml").table_create_request(TABLE_NAME))
        topic_arn = sns.create_topic(Name="seat-inventory-outcomes")["TopicArn"]
        session.client("ssm").put_parameter(Name=KEYS_PARAMETER, Value=SAMPLE_RING, Type="SecureString")
        for name, value in {
            "TABLE_NAME": TABLE_NAME,
            "OUTCOMES_TOPIC_ARN": topic_arn,
            "ADMISSION_KEY_PARAMETER": KEYS_PARAMETER,
            "AWS_DEFAULT_REGION": REGION,
        }.items():
            monkeypatch.setenv(name, value)
        table = OperatorTable(dynamodb, TABLE_NAME)
        table.create_seat_class(SeatKey("concert-2026", "GA"), 100)
        table.create_seat_class(SeatKey("concert-2026", "VIP"), 10)
        table.create_seat_class(SeatKey("festival-2026", "GA"), 50, admission_required=True)
        seat_map = load_file(str(REPO / "examples" / "seat_maps" / "theatre.json"))
        table.create_seat_map("theatre-2026", seat_map, SaleRules())
        yield {"sns": sns, "sqs": sqs, "topic_arn": topic_arn}


def invoke(stack: dict[str, Any], name: str) -> list[str]:
    """`seats invoke -e events/<name>`: its answers' outcomes in the order of the file's messages."""
    keep_stderr_apart: dict[str, Any] = (
        {"mix_stderr": False} if "mix_stderr" in inspect.signature(CliRunner.__init__).parameters else {}
    )
    with OutcomeCollector(stack["sns"], stack["sqs"], stack["topic_arn"]) as collector:
        result = CliRunner(**keep_stderr_apart).invoke(
            cli, ["invoke", "-e", str(EVENTS / name)], catch_exceptions=False
        )
        outcomes = collector.collect(until=lambda docs: False, timeout_s=0.5, idle_s=0.2)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {"batchItemFailures": []}
    by_message = {o["message_id"]: o["outcome"] for o in outcomes}
    assert len(by_message) == len(outcomes)
    records = json.loads((EVENTS / name).read_text())["Records"]
    return [by_message.get(record["messageId"], "none") for record in records]


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_a_sample_event_is_answered_as_its_scenario_says(stack: dict[str, Any], name: str) -> None:
    assert invoke(stack, name) == SCENARIOS[name]


def test_the_hold_confirm_and_cancel_samples_answer_in_turn(stack: dict[str, Any]) -> None:
    assert {name: invoke(stack, name) for name in LIFECYCLE} == LIFECYCLE


def test_every_sample_event_is_run_by_a_test() -> None:
    from tests.integration.test_traffic_commands import EVENT_FILES

    run_elsewhere = {path.name for path in EVENT_FILES}
    assert {p.name for p in EVENTS.glob("*.json")} == set(SCENARIOS) | set(
        LIFECYCLE
    ) | OTHER_FILES | GATE_SAMPLES | run_elsewhere
