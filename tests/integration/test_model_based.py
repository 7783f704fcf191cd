"""Model-based testing of the real handler on moto: random histories checked against a tiny model.

A hypothesis state machine creates events, sends reservations (for known and unknown events),
redelivers messages, crashes the function right after a transaction and redelivers its batch,
and sends batches mixing all of these. A few lines of in-memory model say what must happen:
capacity and seats sold per (event, seat class), and the one answer each reservation id got.
After every step the table must agree with the model: no oversell, no lost seat, each reservation
id took effect at most once, and every message delivered got exactly the answer of its id
(a redelivery or a producer's resend republishes that answer, flagged `duplicate`).

One moto serves every example: each teardown counts the table's items against the model and
empties the table, so examples are independent (creating a table per example would cost more than
the example). The handler's
warm container (its boto3 clients) is reused across examples, as Lambda reuses one. Event and
reservation ids are unique across examples, so what the container learned about a seat class
(`InventoryHints`) never carries over to another example.

CI runs 200 histories of 10 steps (about 80 s; each step is a few moto calls of 5-20 ms, and 15
steps would take half as long again). For a longer search, set the environment:
    SEATS_MODEL_EXAMPLES=2000 SEATS_MODEL_STEPS=20 .venv/bin/pytest tests/integration/test_model_based.py
"""

from __future__ import annotations

import itertools
import json
import os
import sys
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import boto3
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test
from moto import mock_aws

from seat_inventory.dal.inventory_table import inventory_key, reservation_key
from seat_inventory.handlers import reserve_seats as handler_module
from seat_inventory.models import SeatKey
from seat_inventory.wiring import build_adapters
from tests.integration.conftest import (
    REGION,
    REPO,
    Faults,
    SimulatedCrash,
    Stack,
    create_table_from_template,
    sqs_event,
)
from tests.template_support import load_template

MODEL_EXAMPLES = int(os.environ.get("SEATS_MODEL_EXAMPLES", "200"))
MODEL_STEPS = int(os.environ.get("SEATS_MODEL_STEPS", "10"))
MAX_QUANTITY = 10  # the template's MaxSeatsPerReservation default, which the handler gets
TABLE_NAME = "seat-inventory-model"
TOPIC_NAME = "seat-inventory-model-outcomes"
TOPIC_ARN = f"arn:aws:sns:{REGION}:123456789012:{TOPIC_NAME}"  # moto's default account
TEMPLATE = load_template(REPO / "template.yaml")

_examples = itertools.count()
# Only the attributes the checks read: moto's response serializer costs more than anything else here.
PROJECTION = {
    "ProjectionExpression": "pk, sk, reservation_id, outcome, event_id, seat_class, quantity, #c, available, sold, held",
    "ExpressionAttributeNames": {"#c": "capacity"},
}


# --- the model ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Message:
    """One SQS message of a delivery: a reservation body, or a body that breaks the contract."""

    message_id: str
    body: str
    reservation_id: str | None = None  # None: the body is invalid
    key: SeatKey | None = None
    quantity: int = 0
    invalid_answer_id: str | None = None  # the reservation_id an INVALID answer carries

    @property
    def valid(self) -> bool:
        return self.reservation_id is not None


@dataclass(frozen=True)
class Answer:
    outcome: str
    key: SeatKey
    quantity: int


@dataclass(frozen=True)
class Expected:
    reservation_id: str
    outcome: str
    duplicate: bool


@dataclass
class Model:
    capacity: dict[SeatKey, int] = field(default_factory=dict)
    sold: dict[SeatKey, int] = field(default_factory=dict)
    answers: dict[str, Answer] = field(default_factory=dict)  # the recorded answer per reservation id
    sent: dict[str, Message] = field(default_factory=dict)  # first valid message per reservation id

    def greedy(self, key: SeatKey, fresh: list[Message]) -> dict[str, Answer]:
        """The answers for the new requests of one (event, seat class) of a batch, in arrival order."""
        if key not in self.capacity:
            return {m.reservation_id or "": Answer("UNKNOWN_EVENT", key, m.quantity) for m in fresh}
        left = self.capacity[key] - self.sold[key]
        answers: dict[str, Answer] = {}
        for m in fresh:
            if m.quantity <= left:
                left -= m.quantity
                answers[m.reservation_id or ""] = Answer("CONFIRMED", key, m.quantity)
            else:
                answers[m.reservation_id or ""] = Answer("SOLD_OUT", key, m.quantity)
        return answers

    def groups(self, batch: list[Message]) -> dict[SeatKey, list[Message]]:
        """The first message of each reservation id not yet answered, by (event, seat class)."""
        groups: dict[SeatKey, list[Message]] = defaultdict(list)
        seen: set[str] = set()
        for m in batch:
            if m.valid and m.reservation_id not in seen:
                seen.add(m.reservation_id or "")
                if m.reservation_id not in self.answers and m.key is not None:
                    groups[m.key].append(m)
        return groups

    def record(self, answers: dict[str, Answer]) -> None:
        for reservation_id, answer in answers.items():
            assert reservation_id not in self.answers
            self.answers[reservation_id] = answer
            if answer.outcome == "CONFIRMED":
                self.sold[answer.key] += answer.quantity

    def deliver(self, batch: list[Message]) -> dict[str, Expected]:
        """Applies one successful delivery; returns the answer each message must get."""
        known_before = set(self.answers)
        for key, fresh in self.groups(batch).items():
            self.record(self.greedy(key, fresh))
        expected: dict[str, Expected] = {}
        first_in_batch: set[str] = set()
        for m in batch:
            if not m.valid:
                expected[m.message_id] = Expected(m.invalid_answer_id or m.message_id, "INVALID", False)
                continue
            rid = m.reservation_id or ""
            duplicate = rid in known_before or rid in first_in_batch
            first_in_batch.add(rid)
            expected[m.message_id] = Expected(rid, self.answers[rid].outcome, duplicate)
            self.sent.setdefault(rid, m)
        return expected


# --- the machine -------------------------------------------------------------------------------------


class CrashSwitch:
    """An after-call hook on TransactWriteItems that, when armed, raises once the call has returned."""

    def __init__(self, session: boto3.session.Session) -> None:
        self.armed = False
        self.fired = 0
        session.events.register("after-call.dynamodb.TransactWriteItems", self._hook)

    def _hook(self, **_: Any) -> None:
        if self.armed:
            self.armed = False
            self.fired += 1
            raise SimulatedCrash("crashed after TransactWriteItems returned")


class PublishTap:
    """Every outcome SNS accepted from the handler's PublishBatch calls, read at the client.

    A raw-delivery SQS subscriber (what the other integration tests read) costs a receive and a
    delete per step on moto; this tap sees the same documents, and only those SNS reported as
    `Successful`.
    """

    def __init__(self, session: boto3.session.Session) -> None:
        self.documents: list[dict[str, Any]] = []
        session.events.register("provide-client-params.sns.PublishBatch", self._remember)
        session.events.register("after-call.sns.PublishBatch", self._collect)

    @staticmethod
    def _remember(params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        context["tap_entries"] = {e["Id"]: e["Message"] for e in params["PublishBatchRequestEntries"]}

    def _collect(self, parsed: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        entries = context.get("tap_entries", {})
        self.documents += [json.loads(entries[ok["Id"]]) for ok in parsed.get("Successful", [])]

    def take(self) -> list[dict[str, Any]]:
        documents, self.documents = self.documents, []
        return documents


@dataclass
class Harness:
    """What lives as long as the pytest test: moto's resources and the hooks on the handler's session."""

    stack: Stack
    crash: CrashSwitch
    tap: PublishTap


HARNESS: Harness | None = None


class SeatInventoryMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        assert HARNESS is not None
        self.harness = HARNESS
        self.stack = HARNESS.stack
        self.example = next(_examples)
        self.ids = itertools.count()
        self.model = Model()
        self.touched: set[str] = set()  # reservation ids the current step sent
        self.harness.tap.take()

    def teardown(self) -> None:
        """Counts the table's items against the model, then empties the table for the next example.

        Every record was compared with the model in the step that wrote it; the count shows that
        nothing else was written. (A full scan here would cost as much as a third of the example.)
        """
        keys = [inventory_key(key) for key in self.model.capacity]
        keys += [reservation_key(rid) for rid in self.model.answers]
        count = self.stack.dynamodb.scan(TableName=TABLE_NAME, Select="COUNT", ConsistentRead=True)["Count"]
        try:
            if sys.exc_info()[0] is None:  # after a failed step, the first error is the one to see
                assert count == len(keys), f"{count} items in the table, the model knows {len(keys)}"
        finally:
            self.harness.crash.armed = False
            if count != len(keys):
                keys = [{"pk": item["pk"], "sk": item["sk"]} for item in scan(self.stack)]
            for start in range(0, len(keys), 25):
                self.stack.dynamodb.batch_write_item(
                    RequestItems={
                        TABLE_NAME: [{"DeleteRequest": {"Key": key}} for key in keys[start : start + 25]]
                    }
                )

    # -- helpers

    def new_id(self, prefix: str) -> str:
        return f"{prefix}{self.example}-{next(self.ids)}"

    def invoke(self, batch: list[Message], receive_count: int = 1) -> dict[str, Any]:
        self.touched.update(m.reservation_id for m in batch if m.reservation_id)
        event = sqs_event(*(m.body for m in batch), receive_count=receive_count)
        for record, message in zip(event["Records"], batch, strict=True):
            record["messageId"] = message.message_id
        return self.stack.invoke(event)

    def deliver(self, batch: list[Message], receive_count: int = 1) -> None:
        """One successful invocation, checked message by message against the model."""
        response = self.invoke(batch, receive_count)
        expected = self.model.deliver(batch)

        assert response == {"batchItemFailures": []}
        published = self.outcomes()
        assert sorted(d["message_id"] for d in published) == sorted(m.message_id for m in batch)
        for document in published:
            want = expected[document["message_id"]]
            assert (document["reservation_id"], document["outcome"], document["duplicate"]) == (
                want.reservation_id,
                want.outcome,
                want.duplicate,
            ), document
            if want.outcome != "INVALID":
                # a republished answer is the recorded one, whatever the resent body said
                assert document["quantity"] == self.model.answers[want.reservation_id].quantity

    def keys(self) -> list[SeatKey]:
        unknown = [SeatKey(f"ghost{self.example}", "GA")]
        unknown += [SeatKey(key.event_id, "BALCONY") for key in self.model.capacity]
        return sorted(self.model.capacity, key=str) + unknown

    def draw_new(self, data: st.DataObject) -> Message:
        key = data.draw(st.sampled_from(self.keys()), label="seat class")
        quantity = data.draw(st.integers(1, MAX_QUANTITY), label="quantity")
        reservation_id = self.new_id("r")
        body = json.dumps(
            {
                "reservation_id": reservation_id,
                "event_id": key.event_id,
                "seat_class": key.seat_class,
                "quantity": quantity,
                "customer_id": "c-1",
            }
        )
        return Message(self.new_id("m"), body, reservation_id, key, quantity)

    def draw_resend(self, data: st.DataObject, earlier: list[Message]) -> Message:
        """A producer resend or an SQS redelivery of an earlier valid message (a new message id)."""
        original = data.draw(st.sampled_from(earlier), label="resend of")
        if data.draw(st.booleans(), label="altered body"):
            # same reservation id, other quantity: the id decides, the body is not looked at again
            document = json.loads(original.body)
            document["quantity"] = 1 + original.quantity % MAX_QUANTITY
            return Message(
                self.new_id("m"),
                json.dumps(document),
                original.reservation_id,
                original.key,
                document["quantity"],
            )
        return Message(
            self.new_id("m"), original.body, original.reservation_id, original.key, original.quantity
        )

    def draw_invalid(self, data: st.DataObject) -> Message:
        message_id = self.new_id("m")
        reservation_id = self.new_id("bad")
        kind = data.draw(st.sampled_from(["zero quantity", "too many", "not json"]), label="invalid")
        if kind == "not json":
            return Message(message_id, "{not json", invalid_answer_id=message_id)
        key = data.draw(st.sampled_from(self.keys()), label="seat class")
        quantity = 0 if kind == "zero quantity" else MAX_QUANTITY + 1
        body = json.dumps(
            {
                "reservation_id": reservation_id,
                "event_id": key.event_id,
                "quantity": quantity,
                "customer_id": "c",
            }
        )
        return Message(message_id, body, invalid_answer_id=reservation_id)

    def draw_batch(self, data: st.DataObject, size: st.SearchStrategy[int]) -> list[Message]:
        batch: list[Message] = []
        for _ in range(data.draw(size, label="batch size")):
            earlier = list(self.model.sent.values()) + [m for m in batch if m.valid]
            kinds = ["new", "new", "invalid"] + (["resend"] if earlier else [])
            kind = data.draw(st.sampled_from(kinds), label="message")
            if kind == "new":
                batch.append(self.draw_new(data))
            elif kind == "resend":
                batch.append(self.draw_resend(data, earlier))
            else:
                batch.append(self.draw_invalid(data))
        return batch

    # -- rules

    @rule(capacity=st.integers(0, 15), seat_class=st.sampled_from(["GA", "VIP"]))
    def create_event(self, capacity: int, seat_class: str) -> None:
        key = SeatKey(self.new_id("ev"), seat_class)
        self.stack.create_event(key.event_id, capacity, key.seat_class)
        self.model.capacity[key] = capacity
        self.model.sold[key] = 0

    @rule(data=st.data())
    def reserve(self, data: st.DataObject) -> None:
        self.deliver([self.draw_new(data)])

    @rule(data=st.data())
    def deliver_duplicate(self, data: st.DataObject) -> None:
        if self.model.sent:
            self.deliver([self.draw_resend(data, list(self.model.sent.values()))])

    @rule(data=st.data())
    def deliver_batch(self, data: st.DataObject) -> None:
        self.deliver(self.draw_batch(data, st.integers(2, 5)))

    @rule(data=st.data())
    def redeliver_after_crash(self, data: st.DataObject) -> None:
        """The function dies right after one transaction returned; SQS redelivers the whole batch."""
        batch = self.draw_batch(data, st.integers(1, 4))
        if not any(m.valid for m in batch):  # no transaction to crash after
            self.deliver(batch)
            return
        before = set(self.model.answers)
        fired = self.harness.crash.fired
        self.harness.crash.armed = True
        with pytest.raises(SimulatedCrash):
            self.invoke(batch)
        assert self.harness.crash.fired == fired + 1
        assert self.outcomes() == [], "nothing is published before every transaction is done"

        # At most one transaction ran: either nothing was written, or one group's new requests were
        # all recorded, with the answers the model gives them.
        written = self.records({m.reservation_id for m in batch if m.reservation_id} - before)
        groups = self.model.groups(batch)
        if written:
            keys = {r["key"] for r in written.values()}
            assert len(keys) == 1, f"one transaction wrote records of several seat classes: {written}"
            [key] = keys
            answers = self.model.greedy(key, groups[key])
            assert {rid: r["outcome"] for rid, r in written.items()} == {
                rid: a.outcome for rid, a in answers.items()
            }
            self.model.record(answers)

        self.deliver(batch, receive_count=2)

    def outcomes(self) -> list[dict[str, Any]]:
        """The outcomes published since the last call."""
        return self.harness.tap.take()

    # -- invariants

    @invariant()
    def the_table_agrees_with_the_model(self) -> None:
        """After every step: every inventory item, and the record of every id the step sent.

        Records are written only for the ids of the messages delivered, so these are all a step can
        change (reading the whole table after each step would cost more than the step on moto);
        teardown counts the items to show that nothing else was written. As every record matched
        the model's answer when it was written, and the model's `sold` is the sum of its confirmed
        answers, `sold` equal to the model's also means the confirmed records add up to `sold`.
        """
        touched, self.touched = self.touched, set()
        keys = [inventory_key(key) for key in self.model.capacity]
        keys += [reservation_key(rid) for rid in sorted(touched)]
        self.check(self.get(keys), expected_records=touched & set(self.model.answers))

    def get(self, keys: list[dict[str, Any]]) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        for start in range(0, len(keys), 100):
            response = self.stack.dynamodb.batch_get_item(
                RequestItems={
                    TABLE_NAME: {"Keys": keys[start : start + 100], "ConsistentRead": True, **PROJECTION}
                }
            )
            assert not response.get("UnprocessedKeys")
            items += response["Responses"][TABLE_NAME]
        return items

    def records(self, reservation_ids: set[str]) -> dict[str, dict[str, Any]]:
        items = self.get([reservation_key(rid) for rid in sorted(reservation_ids)])
        return {
            item["reservation_id"]["S"]: {
                "outcome": item["outcome"]["S"],
                "key": SeatKey(item["event_id"]["S"], item["seat_class"]["S"]),
            }
            for item in items
        }

    def check(self, items: list[dict[str, Any]], *, expected_records: set[str]) -> None:
        """The items read agree with the model; `expected_records` are the records that must be there."""
        inventory: dict[SeatKey, dict[str, int]] = {}
        records: dict[str, dict[str, Any]] = {}
        for item in items:
            pk, sk = item["pk"]["S"], item["sk"]["S"]
            if pk.startswith("RESERVATION#"):
                records[item["reservation_id"]["S"]] = {
                    "outcome": item["outcome"]["S"],
                    "key": SeatKey(item["event_id"]["S"], item["seat_class"]["S"]),
                    "quantity": int(item["quantity"]["N"]),
                }
            else:
                assert pk.startswith("EVENT#") and sk.startswith("CLASS#"), (
                    f"an item the model has no place for: {pk} {sk}"
                )
                key = SeatKey(item["event_id"]["S"], item["seat_class"]["S"])
                inventory[key] = {
                    name: int(item[name]["N"])
                    for name in ("capacity", "available", "sold", "held")
                    if name in item
                }
        assert set(inventory) == set(self.model.capacity)
        for key, counts in inventory.items():
            assert counts["available"] >= 0, key
            assert counts["available"] + counts.get("held", 0) + counts["sold"] == counts["capacity"], key
            assert (counts["capacity"], counts["sold"]) == (self.model.capacity[key], self.model.sold[key]), (
                key
            )
        # Each reservation id took effect at most once: one record, holding the model's answer.
        assert set(records) == expected_records
        for rid, record in records.items():
            answer = self.model.answers.get(rid)
            assert answer is not None, f"a record for {rid}, which the model never answered"
            assert (record["outcome"], record["key"], record["quantity"]) == (
                answer.outcome,
                answer.key,
                answer.quantity,
            ), rid


def scan(stack: Stack) -> Iterator[dict[str, Any]]:
    """Every item of the table, with the attributes the checks read."""
    request: dict[str, Any] = {"TableName": stack.table_name, "ConsistentRead": True, **PROJECTION}
    while True:
        page = stack.dynamodb.scan(**request)
        yield from page["Items"]
        if "LastEvaluatedKey" not in page:
            return
        request["ExclusiveStartKey"] = page["LastEvaluatedKey"]


@pytest.fixture
def harness(monkeypatch: pytest.MonkeyPatch) -> Iterator[Harness]:
    """The environment of the `aws` and `stack` fixtures, set once for all the examples."""
    global HARNESS
    for name in (
        "AWS_ENDPOINT_URL",
        "AWS_ENDPOINT_URL_DYNAMODB",
        "AWS_ENDPOINT_URL_SNS",
        "AWS_ENDPOINT_URL_SQS",
        "AWS_PROFILE",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    for name, value in TEMPLATE.function_environment(
        overrides={"TABLE_NAME": TABLE_NAME, "OUTCOMES_TOPIC_ARN": TOPIC_ARN}
    ).items():
        monkeypatch.setenv(name, value)
    session = boto3.session.Session(region_name=REGION)
    monkeypatch.setattr(handler_module, "build_adapters", lambda s: build_adapters(s, session))
    handler_module.reset_container()
    with mock_aws():
        setup = boto3.session.Session(region_name=REGION)
        dynamodb = setup.client("dynamodb")
        create_table_from_template(dynamodb, TEMPLATE, TABLE_NAME)
        assert setup.client("sns").create_topic(Name=TOPIC_NAME)["TopicArn"] == TOPIC_ARN
        stack = Stack(TABLE_NAME, TOPIC_ARN, "", Faults(session), setup.client("sqs"), dynamodb)
        HARNESS = Harness(stack, CrashSwitch(session), PublishTap(session))
        yield HARNESS
    HARNESS = None
    handler_module.reset_container()


def test_random_histories_keep_the_inventory_and_the_answers_consistent(harness: Harness) -> None:
    run_state_machine_as_test(
        SeatInventoryMachine,
        settings=settings(
            max_examples=MODEL_EXAMPLES,
            stateful_step_count=MODEL_STEPS,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow],
        ),
    )
