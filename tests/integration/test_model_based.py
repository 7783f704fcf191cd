"""Model-based testing of the real functions on moto: random histories checked against a tiny model.

A hypothesis state machine creates events; sends reservations and holds (for known and unknown
events), confirmations and cancellations (of holds, of sales, of unknown ids, sometimes naming
another customer); redelivers messages; crashes the function right after a transaction and
redelivers its batch; moves the clock; and runs the hold sweeper, sometimes crashing it after its
transaction or after a publish. A few lines of in-memory model say what must happen: capacity,
seats held and seats sold per (event, seat class), and per reservation id the one answer its
reserve or hold message got and its current status. After every step the table must agree with
the model: no oversell, no lost seat (available + held + sold == capacity), each reservation id
took effect at most once, every status moved only along the lifecycle (HELD -> CONFIRMED ->
CANCELLED, HELD -> CANCELLED, HELD -> EXPIRED), and every message delivered got exactly one
answer: the one its id and the clock call for (a redelivery or a producer's resend republishes a
recorded answer flagged `duplicate`; a confirm of a hold that ran out is answered EXPIRED, of a
cancelled one CANCELLED, and so on, docs/reference/contract.md, "Reservation lifecycle"). Every expiry is announced
at least once: a history that ends with expiries still in the sweeper's outbox runs it once more.

One moto serves every example: each teardown counts the table's items against the model and
empties the table, so examples are independent (creating a table per example would cost more than
the example). The functions' warm containers (their boto3 clients) are reused across examples, as
Lambda reuses them; both are built with one movable clock. Event and reservation ids are unique
across examples, so what a container learned about a seat class (`InventoryHints`) never carries
over to another example.

Each seat class is split over K shard items (K from 1 to 16, docs/explanation/sharding.md), and a rule reshards
a class between batches: the checks add up its shard items, each of which must keep the invariant.

The histories are split over three fixed seeds (`MODEL_SEEDS`), so that a failure only one seed's
search reaches cannot hide behind the others (each step is a few moto calls of 5-20 ms, a sweeper
run about 20). Bounded (tests/depth.py): `make test` and CI run MODEL_EXAMPLES_CI histories of 10
steps, `make test-deep` MODEL_EXAMPLES_DEEP. For a longer search, set the environment
(`SEATS_MODEL_SEEDS` takes a comma-separated list; `--hypothesis-seed=N` runs that one seed with
all the examples):
    SEATS_MODEL_EXAMPLES=2000 SEATS_MODEL_STEPS=20 .venv/bin/pytest tests/integration/test_model_based.py
"""

from __future__ import annotations

import itertools
import json
import os
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import boto3
import pytest
from hypothesis import HealthCheck, seed, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)
from moto import mock_aws

from seat_inventory.dal.items import HOLDS_PREFIX, OUTBOX_PREFIX, inventory_key, reservation_key
from seat_inventory.handlers import reserve_seats as handler_module
from seat_inventory.handlers import sweep_holds as sweeper_module
from seat_inventory.models import MAX_SHARDS, SeatKey
from seat_tools.operator_commands import OperatorTable
from tests.depth import sized
from tests.integration.conftest import (
    REGION,
    REPO,
    Faults,
    LambdaContext,
    MovableClock,
    SimulatedCrash,
    Stack,
    adapters_factory,
    create_table_from_template,
    load_event,
    sqs_event,
)
from tests.template_support import load_template

MODEL_EXAMPLES_CI = 60  # about 2 minutes on 2 cores
MODEL_EXAMPLES_DEEP = 300  # about 11 minutes
MODEL_EXAMPLES = sized("SEATS_MODEL_EXAMPLES", ci=MODEL_EXAMPLES_CI, deep=MODEL_EXAMPLES_DEEP)
MODEL_STEPS = int(os.environ.get("SEATS_MODEL_STEPS", "10"))
MODEL_SEEDS = [int(n) for n in os.environ.get("SEATS_MODEL_SEEDS", "14,99,2026").split(",")]
MAX_QUANTITY = 10  # the template's MaxSeatsPerReservation default, which the handler gets
QUANTITIES = [1, 2, 3, 5, MAX_QUANTITY]  # mostly a few seats, so that classes of 0-20 do not sell out at once
HOLD_SECONDS = [60, 61, 120]  # 60 is the shortest hold the contract allows
# With the holds above, every side of every expiry. Hypothesis draws the first ones most often.
CLOCK_STEPS = [61, 600, 60, 59, 1, 0]
CUSTOMER = "c-1"  # every request's customer; "c-2" is the wrong one on a confirm or cancel
TABLE_NAME = "seat-inventory-model"
TOPIC_NAME = "seat-inventory-model-outcomes"
TOPIC_ARN = f"arn:aws:sns:{REGION}:123456789012:{TOPIC_NAME}"  # moto's default account
TEMPLATE = load_template(REPO / "template.yaml")
SWEEP_EVENT = load_event("sweep_schedule.json")
PUBLISH_BATCH_LIMIT = 10

REQUESTS = ("reserve", "hold")  # the messages that take seats; "confirm" and "cancel" change a status
HELD, CONFIRMED, CANCELLED, EXPIRED = "HELD", "CONFIRMED", "CANCELLED", "EXPIRED"
# The statuses a record may move to from each status (docs/reference/contract.md, "Reservation lifecycle"); the answers
# of a reserve or hold that took no seats (SOLD_OUT, UNKNOWN_EVENT) are final, like CANCELLED and EXPIRED.
LEGAL_MOVES = {HELD: {CONFIRMED, CANCELLED, EXPIRED}, CONFIRMED: {CANCELLED}}

# moto still refuses a TransactGetItems of more than 25 items (AWS takes 100): K up to 25 here.
MOTO_MAX_SHARDS = min(MAX_SHARDS, 25)
SHARD_COUNTS = st.one_of(st.just(1), st.just(1), st.integers(2, MOTO_MAX_SHARDS))
_examples = itertools.count()
# Only the attributes the checks read: moto's response serializer costs more than anything else here.
PROJECTION = {
    "ProjectionExpression": (
        "pk, sk, reservation_id, outcome, #s, event_id, seat_class, quantity, hold_expires_at, gsi1pk,"
        " #c, available, sold, held"
    ),
    "ExpressionAttributeNames": {"#c": "capacity", "#s": "status"},
}


# --- the model ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Message:
    """One SQS message of a delivery: a reserve, hold, confirm or cancel body, or one that breaks the contract."""

    message_id: str
    body: str
    kind: str  # "reserve", "hold", "confirm", "cancel", or "invalid"
    reservation_id: str | None = None  # None: the body is invalid
    key: SeatKey | None = None  # reserve and hold
    quantity: int = 0  # reserve and hold
    hold_seconds: int = 0  # hold
    customer_id: str | None = None  # confirm and cancel: the customer the body names, if any
    invalid_answer_id: str | None = None  # the reservation_id an INVALID answer carries

    @property
    def valid(self) -> bool:
        return self.kind != "invalid"


@dataclass
class Record:
    """What the model knows of one reservation id: its answer, and where it stands now."""

    answer: str  # what its reserve or hold message was told: CONFIRMED, HELD, SOLD_OUT, UNKNOWN_EVENT
    key: SeatKey
    quantity: int
    hold_expires_at: int | None
    status: str
    in_outbox: bool = False  # released by the sweeper, its EXPIRED not announced for sure yet


@dataclass(frozen=True)
class Expected:
    reservation_id: str
    outcome: str
    duplicate: bool
    quantity: int | None  # None: an answer that names no reservation (INVALID, UNKNOWN_RESERVATION)


@dataclass
class Model:
    now: int
    capacity: dict[SeatKey, int] = field(default_factory=dict)
    held: dict[SeatKey, int] = field(default_factory=dict)
    sold: dict[SeatKey, int] = field(default_factory=dict)
    # items of a class (docs/explanation/sharding.md)
    shard_items: dict[SeatKey, int] = field(default_factory=dict)
    records: dict[str, Record] = field(default_factory=dict)
    sent: dict[str, Message] = field(default_factory=dict)  # first request message per reservation id
    changes_sent: list[Message] = field(default_factory=list)  # confirm and cancel messages delivered
    expired: set[str] = field(default_factory=set)  # holds the sweeper released
    announced: set[str] = field(default_factory=set)  # holds whose EXPIRED reached the topic

    def available(self, key: SeatKey) -> int:
        return self.capacity[key] - self.held[key] - self.sold[key]

    # -- reserve and hold

    def greedy(self, key: SeatKey, fresh: list[Message]) -> dict[str, Record]:
        """The records of the new requests of one (event, seat class) of a batch, filled in arrival order."""
        records: dict[str, Record] = {}
        left = self.available(key) if key in self.capacity else 0
        for m in fresh:
            if key not in self.capacity:
                answer = "UNKNOWN_EVENT"
            elif m.quantity <= left:
                left -= m.quantity
                answer = HELD if m.kind == "hold" else CONFIRMED
            else:
                answer = "SOLD_OUT"
            expires = self.now + m.hold_seconds if answer == HELD else None
            records[m.reservation_id or ""] = Record(answer, key, m.quantity, expires, answer)
        return records

    @staticmethod
    def first_requests(batch: list[Message]) -> list[Message]:
        """The first reserve or hold message of each reservation id in the batch, in arrival order."""
        seen: set[str] = set()
        first: list[Message] = []
        for m in batch:
            if m.kind in REQUESTS and m.reservation_id not in seen:
                seen.add(m.reservation_id or "")
                first.append(m)
        return first

    def groups(self, batch: list[Message]) -> dict[SeatKey, list[Message]]:
        """The new requests of the batch (ids not answered before), by (event, seat class)."""
        groups: dict[SeatKey, list[Message]] = defaultdict(list)
        for m in self.first_requests(batch):
            if m.reservation_id not in self.records and m.key is not None:
                groups[m.key].append(m)
        return groups

    def record(self, records: dict[str, Record]) -> None:
        for reservation_id, record in records.items():
            assert reservation_id not in self.records
            self.records[reservation_id] = record
            if record.answer == CONFIRMED:
                self.sold[record.key] += record.quantity
            elif record.answer == HELD:
                self.held[record.key] += record.quantity

    # -- confirm, cancel, expire

    def decide(self, change: Message) -> tuple[Expected, str | None]:
        """The answer to a confirm or cancel now, and the status it moves the reservation to (if any)."""
        rid = change.reservation_id or ""
        record = self.records.get(rid)
        if record is None:
            return Expected(rid, "UNKNOWN_RESERVATION", False, None), None
        if change.customer_id is not None and change.customer_id != CUSTOMER:
            return Expected(rid, "INVALID", False, None), None
        target = CONFIRMED if change.kind == "confirm" else CANCELLED
        status = record.status
        if status == HELD and record.hold_expires_at is not None and record.hold_expires_at <= self.now:
            return Expected(rid, EXPIRED, False, record.quantity), None  # ran out, not swept yet
        if status == target:
            return Expected(rid, target, True, record.quantity), None
        if status == HELD or (status, target) == (CONFIRMED, CANCELLED):
            return Expected(rid, target, False, record.quantity), target
        return Expected(rid, status, False, record.quantity), None  # nothing to confirm or cancel

    def move(self, reservation_id: str, to: str) -> None:
        record = self.records[reservation_id]
        assert to in LEGAL_MOVES.get(record.status, set()), (record, to)
        if record.status == HELD:
            self.held[record.key] -= record.quantity
        else:
            self.sold[record.key] -= record.quantity
        if to == CONFIRMED:
            self.sold[record.key] += record.quantity
        record.status = to
        if to == EXPIRED:
            record.in_outbox = True
            self.expired.add(reservation_id)

    def first_change_transaction(self, batch: list[Message]) -> list[tuple[str, str]]:
        """The status changes of the first transaction a batch without requests commits, or [].

        Changes of one reservation apply in arrival order, one wave per repetition; each wave is
        read once and committed per seat class, in order of the class's first change in the wave.
        Until a transaction commits nothing moves, so every wave is decided on the current state.
        """
        waves: list[list[Message]] = []
        count: dict[str, int] = defaultdict(int)
        for m in batch:
            if m.kind in ("confirm", "cancel"):
                index = count[m.reservation_id or ""]
                count[m.reservation_id or ""] += 1
                if index == len(waves):
                    waves.append([])
                waves[index].append(m)
        for wave in waves:
            by_class: dict[SeatKey, list[tuple[str, str]]] = {}
            for m in wave:
                _, to = self.decide(m)
                if to is not None:
                    rid = m.reservation_id or ""
                    by_class.setdefault(self.records[rid].key, []).append((rid, to))
            if by_class:
                return next(iter(by_class.values()))
        return []

    def due(self) -> list[str]:
        """Live holds that ran out by now: the sweeper's to release."""
        return sorted(
            rid
            for rid, r in self.records.items()
            if r.status == HELD and r.hold_expires_at is not None and r.hold_expires_at <= self.now
        )

    def outbox(self) -> list[str]:
        return sorted(rid for rid, r in self.records.items() if r.in_outbox)

    # -- a whole delivery

    def deliver(self, batch: list[Message]) -> dict[str, Expected]:
        """Applies one successful delivery; returns the answer each message must get.

        Requests are settled first (so a hold and its confirmation can share a batch), then the
        confirmations and cancellations in arrival order.
        """
        known_before = set(self.records)
        for key, fresh in self.groups(batch).items():
            self.record(self.greedy(key, fresh))
        expected: dict[str, Expected] = {}
        first_in_batch: set[str] = set()
        for m in batch:
            if not m.valid:
                expected[m.message_id] = Expected(m.invalid_answer_id or m.message_id, "INVALID", False, None)
            elif m.kind in REQUESTS:
                rid = m.reservation_id or ""
                duplicate = rid in known_before or rid in first_in_batch
                first_in_batch.add(rid)
                record = self.records[rid]
                expected[m.message_id] = Expected(rid, record.answer, duplicate, record.quantity)
                self.sent.setdefault(rid, m)
        for m in batch:
            if m.kind in ("confirm", "cancel"):
                expected[m.message_id], to = self.decide(m)
                if to is not None:
                    self.move(m.reservation_id or "", to)
                self.changes_sent.append(m)
        return expected


# --- the machine -------------------------------------------------------------------------------------


class CrashSwitch:
    """An after-call hook on some operations that, when armed, raises once one call has returned."""

    def __init__(self, session: boto3.session.Session, *operations: str) -> None:
        self.armed = False
        self.fired = 0
        self.operations = operations
        self._lock = threading.Lock()  # a group's PutItems run on several threads
        for operation in operations:
            session.events.register(f"after-call.{operation}", self._hook)

    def _hook(self, **_: Any) -> None:
        with self._lock:
            fire, self.armed = self.armed, False
            self.fired += fire
        if fire:
            raise SimulatedCrash(f"crashed after one of {self.operations} returned")


class PublishTap:
    """Every outcome SNS accepted from the functions' PublishBatch calls, read at the client.

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
    """What lives as long as the pytest test: moto's resources, the clock and the hooks on the functions' session."""

    stack: Stack
    clock: MovableClock
    # after a TransactWriteItems of either function, or a PutItem (a rejection's record)
    crash: CrashSwitch
    publish_crash: CrashSwitch  # after a PublishBatch, registered after the tap (which sees it succeed)
    tap: PublishTap

    def sweep(self) -> dict[str, Any]:
        return sweeper_module.lambda_handler(SWEEP_EVENT, LambdaContext())


HARNESS: Harness | None = None


class SeatInventoryMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        assert HARNESS is not None
        self.harness = HARNESS
        self.stack = HARNESS.stack
        self.example = next(_examples)
        self.ids = itertools.count()
        self.model = Model(now=int(HARNESS.clock.time))
        self.touched: set[str] = set()  # reservation ids the current step may have changed
        self.stale = True  # the step called AWS: the inventory may have changed
        self.observed: dict[str, tuple[str, str]] = {}  # reservation id -> (answer, status) last read
        self.harness.tap.take()

    def teardown(self) -> None:
        """Announces what the outbox still holds, counts the table's items against the model, then
        empties the table for the next example.

        Every record was compared with the model in the step that wrote it; the count shows that
        nothing else was written. (A full scan here would cost as much as a third of the example.)
        """
        failed = sys.exc_info()[0] is not None  # after a failed step, the first error is the one to see
        self.harness.crash.armed = self.harness.publish_crash.armed = False
        if not failed and self.model.outbox():
            self.sweep_cleanly()  # as the next scheduled run would
        if not failed:
            assert self.model.expired <= self.model.announced, "an expiry was never announced"
        keys = self.inventory_keys()
        keys += [reservation_key(rid) for rid in self.model.records]
        count = self.stack.dynamodb.scan(TableName=TABLE_NAME, Select="COUNT", ConsistentRead=True)["Count"]
        try:
            if not failed and count != len(keys):
                unknown = [(i["pk"]["S"], i["sk"]["S"]) for i in scan(self.stack)]
                known = {(k["pk"]["S"], k["sk"]["S"]) for k in keys}
                pytest.fail(
                    f"{count} items in the table, the model knows {len(keys)}; "
                    f"unknown: {[i for i in unknown if i not in known]}"
                )
        finally:
            if count != len(keys):
                keys = [{"pk": item["pk"], "sk": item["sk"]} for item in scan(self.stack)]
            for start in range(0, len(keys), 25):
                self.stack.dynamodb.batch_write_item(
                    RequestItems={
                        TABLE_NAME: [{"DeleteRequest": {"Key": key}} for key in keys[start : start + 25]]
                    }
                )

    # -- helpers

    def inventory_keys(self) -> list[dict[str, Any]]:
        """Every shard item of every seat class the model knows."""
        return [
            inventory_key(key, shard)
            for key in self.model.capacity
            for shard in range(self.model.shard_items[key])
        ]

    def new_id(self, prefix: str) -> str:
        return f"{prefix}{self.example}-{next(self.ids)}"

    def invoke(self, batch: list[Message], receive_count: int = 1) -> dict[str, Any]:
        self.touched.update(m.reservation_id for m in batch if m.reservation_id)
        self.stale = True
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
        # exactly one answer per message
        assert sorted(d["message_id"] for d in published) == sorted(m.message_id for m in batch)
        kinds = {m.message_id: m.kind for m in batch}
        for document in published:
            want = expected[document["message_id"]]
            assert (document["reservation_id"], document["outcome"], document["duplicate"]) == (
                want.reservation_id,
                want.outcome,
                want.duplicate,
            ), document
            if want.quantity is not None:
                # a republished answer is the recorded one, whatever the resent body said
                assert document["quantity"] == want.quantity, document
                assert document["type"] == kinds[document["message_id"]], document

    def draw_key(self, data: st.DataObject) -> SeatKey:
        """A known seat class three times in four, else an unknown event or an unknown class of a known one."""
        known = sorted(self.model.capacity, key=str)
        if data.draw(st.booleans(), label="unknown?") and data.draw(st.booleans(), label="unknown!"):
            unknown = [SeatKey(f"ghost{self.example}", "GA"), SeatKey(known[0].event_id, "BALCONY")]
            return data.draw(st.sampled_from(unknown), label="unknown seat class")
        return data.draw(st.sampled_from(known), label="seat class")

    def draw_request(self, data: st.DataObject, kind: str) -> Message:
        key = self.draw_key(data)
        quantity = data.draw(st.sampled_from(QUANTITIES), label="quantity")
        reservation_id = self.new_id("r" if kind == "reserve" else "h")
        document: dict[str, Any] = {
            "reservation_id": reservation_id,
            "event_id": key.event_id,
            "seat_class": key.seat_class,
            "quantity": quantity,
            "customer_id": CUSTOMER,
        }
        hold_seconds = 0
        if kind == "hold":
            hold_seconds = data.draw(st.sampled_from(HOLD_SECONDS), label="hold seconds")
            document.update(type="hold", hold_seconds=hold_seconds)
        return Message(
            self.new_id("m"), json.dumps(document), kind, reservation_id, key, quantity, hold_seconds
        )

    def draw_change(self, data: st.DataObject, kind: str, batch: list[Message]) -> Message:
        """A confirm or cancel of a reservation answered before or sent earlier in the batch, or of an unknown id."""
        holds = [rid for rid, r in self.model.records.items() if r.answer == HELD]
        holds += [m.reservation_id or "" for m in batch if m.kind == "hold"]
        others = [rid for rid, r in self.model.records.items() if r.answer != HELD]
        others += [m.reservation_id or "" for m in batch if m.kind == "reserve"]
        # holds twice as often as anything else; None: an id never sent
        candidates = [*dict.fromkeys(holds), *dict.fromkeys(holds), *dict.fromkeys(others), None]
        target = data.draw(st.sampled_from(candidates), label=f"{kind} of")
        reservation_id = target or self.new_id("u")
        customer = data.draw(st.sampled_from([None, None, CUSTOMER, "c-2"]), label="customer named")
        document: dict[str, Any] = {"type": kind, "reservation_id": reservation_id}
        if customer is not None:
            document["customer_id"] = customer
        return Message(self.new_id("m"), json.dumps(document), kind, reservation_id, customer_id=customer)

    def draw_resend(self, data: st.DataObject, earlier: list[Message]) -> Message:
        """A producer resend or an SQS redelivery of an earlier valid message (a new message id)."""
        original = data.draw(st.sampled_from(earlier), label="resend of")
        if original.kind in REQUESTS and data.draw(st.booleans(), label="altered body"):
            # same reservation id, other quantity: the id decides, the body is not looked at again
            document = json.loads(original.body)
            document["quantity"] = 1 + original.quantity % MAX_QUANTITY
            return Message(
                self.new_id("m"),
                json.dumps(document),
                original.kind,
                original.reservation_id,
                original.key,
                document["quantity"],
                original.hold_seconds,
            )
        return Message(
            self.new_id("m"),
            original.body,
            original.kind,
            original.reservation_id,
            original.key,
            original.quantity,
            original.hold_seconds,
            original.customer_id,
        )

    def draw_invalid(self, data: st.DataObject) -> Message:
        message_id = self.new_id("m")
        reservation_id = self.new_id("bad")
        kind = data.draw(
            st.sampled_from(
                ["zero quantity", "too many", "not json", "hold too short", "confirm with quantity"]
            ),
            label="invalid",
        )
        if kind == "not json":
            return Message(message_id, "{not json", "invalid", invalid_answer_id=message_id)
        key = self.draw_key(data)
        document: dict[str, Any] = {
            "reservation_id": reservation_id,
            "event_id": key.event_id,
            "quantity": 0 if kind == "zero quantity" else MAX_QUANTITY + 1 if kind == "too many" else 1,
            "customer_id": "c",
        }
        if kind == "hold too short":
            document.update(type="hold", hold_seconds=59)
        elif kind == "confirm with quantity":
            document = {"type": "confirm", "reservation_id": reservation_id, "quantity": 1}
        return Message(message_id, json.dumps(document), "invalid", invalid_answer_id=reservation_id)

    def draw_batch(
        self, data: st.DataObject, size: st.SearchStrategy[int], *, changes_only: bool = False
    ) -> list[Message]:
        batch: list[Message] = []
        for _ in range(data.draw(size, label="batch size")):
            if changes_only:
                kind = data.draw(st.sampled_from(["confirm", "cancel"]), label="message")
                batch.append(self.draw_change(data, kind, batch))
                continue
            earlier = [*self.model.sent.values(), *self.model.changes_sent] + [m for m in batch if m.valid]
            kinds = ["reserve", "hold", "hold", "confirm", "cancel", "invalid"] + (
                ["resend"] if earlier else []
            )
            kind = data.draw(st.sampled_from(kinds), label="message")
            if kind in REQUESTS:
                batch.append(self.draw_request(data, kind))
            elif kind in ("confirm", "cancel"):
                batch.append(self.draw_change(data, kind, batch))
            elif kind == "resend":
                batch.append(self.draw_resend(data, earlier))
            else:
                batch.append(self.draw_invalid(data))
        return batch

    def move_clock(self, seconds: int) -> None:
        self.model.now += seconds
        self.harness.clock.time = self.model.now

    # -- rules

    # Two seat classes per history, created first: a rule creating more would only thin out the
    # histories (hypothesis likes to pick it), and two are enough for a batch to span classes.

    # Each class is split over K shard items, K drawn from 1-16 (1 is today's single item, drawn
    # about two times in three: a tiny class over many shards costs several times the moto calls).

    @initialize(capacity=st.integers(0, 20), shards=SHARD_COUNTS)
    def create_event(self, capacity: int, shards: int) -> None:
        self.create_class(SeatKey(self.new_id("ev"), "GA"), capacity, shards)

    @initialize(capacity=st.integers(0, 20), same_event=st.booleans(), shards=SHARD_COUNTS)
    def create_another_class(self, capacity: int, same_event: bool, shards: int) -> None:
        event_id = next(iter(self.model.capacity)).event_id if same_event and self.model.capacity else None
        self.create_class(SeatKey(event_id or self.new_id("ev"), "VIP"), capacity, shards)

    def create_class(self, key: SeatKey, capacity: int, shards: int) -> None:
        if shards == 1:
            self.stack.create_event(key.event_id, capacity, key.seat_class)
        else:
            OperatorTable(self.stack.dynamodb, TABLE_NAME).create_seat_class(key, capacity, shards=shards)
        self.stale = True
        self.model.capacity[key] = capacity
        self.model.held[key] = self.model.sold[key] = 0
        self.model.shard_items[key] = shards

    @rule(data=st.data(), shards=st.integers(1, MOTO_MAX_SHARDS))
    def reshard(self, data: st.DataObject, shards: int) -> None:
        """`seats event reshard` between two batches: the class's numbers stay the model's."""
        key = data.draw(st.sampled_from(sorted(self.model.capacity, key=str)))
        OperatorTable(self.stack.dynamodb, TABLE_NAME).reshard(key, shards)
        self.model.shard_items[key] = max(self.model.shard_items[key], shards)
        self.stale = True

    @rule(data=st.data(), kind=st.sampled_from(["hold", "reserve"]))
    def reserve_or_hold(self, data: st.DataObject, kind: str) -> None:
        self.deliver([self.draw_request(data, kind)])

    def has_records(self) -> bool:
        return bool(self.model.records)

    @precondition(has_records)
    @rule(data=st.data(), kind=st.sampled_from(["confirm", "cancel"]))
    def confirm_or_cancel(self, data: st.DataObject, kind: str) -> None:
        self.deliver([self.draw_change(data, kind, [])])

    @rule(data=st.data())
    def deliver_batch(self, data: st.DataObject) -> None:
        """1-5 messages mixing new requests, confirmations and cancellations, resends of earlier
        messages (a producer's retry or an SQS redelivery), repeats within the batch and invalid bodies."""
        self.deliver(self.draw_batch(data, st.integers(1, 5)))

    @rule(data=st.data())
    def redeliver_after_crash(self, data: st.DataObject) -> None:
        """The function dies right after its first write returned (a transaction, or one of a
        rejection group's PutItems); SQS redelivers the whole batch, possibly after the clock moved
        on (the visibility timeout)."""
        changes_only = data.draw(st.booleans(), label="confirmations and cancellations only")
        batch = self.draw_batch(data, st.integers(1, 4), changes_only=changes_only)
        requests = self.model.first_requests(batch)
        changes = [] if requests else self.model.first_change_transaction(batch)
        if not requests and not changes:  # no transaction to crash after
            self.deliver(batch)
            return
        fired = self.harness.crash.fired
        self.harness.crash.armed = True
        with pytest.raises(SimulatedCrash):
            self.invoke(batch)
        assert self.harness.crash.fired == fired + 1
        assert self.outcomes() == [], "nothing is published before every transaction is done"

        if requests:
            # Requests are settled first, one transaction per seat class in order of first
            # appearance. Either nothing was written (the transaction was refused: a record already
            # existed, or too few seats for an optimistic write), or a prefix of the first class's
            # requests, in arrival order, was recorded with the answers the model gives them: all
            # of them, or fewer when the container split the group because it counts other
            # containers taking the last seats (`InventoryHints.share`; after a crash between a
            # commit and `_learn_commit`, its own commit looks like another container's).
            # A group of rejections only is written record by record (a PutItem each, all answered
            # before the crash is raised): every new request of the group is recorded.
            first_key = requests[0].key
            assert first_key is not None
            new = {m.reservation_id or "" for m in requests} - set(self.model.records)
            written = self.records(new)
            fresh = self.model.groups(batch)[first_key]
            rejections_only = all(
                r.answer not in (HELD, CONFIRMED) for r in self.model.greedy(first_key, fresh).values()
            )
            if written and rejections_only:
                rejected = self.model.greedy(first_key, fresh)
                assert {rid: r["outcome"] for rid, r in written.items()} == {
                    rid: a.answer for rid, a in rejected.items()
                }, "a rejection-only group left a record out, or recorded another answer"
                self.model.record(rejected)
            elif written:
                assert {r["key"] for r in written.values()} == {first_key}, written
                group = [m for m in requests if m.key == first_key]
                prefix = group[: len(written)]
                assert {m.reservation_id for m in prefix} == set(written), (
                    "the transaction recorded more than a prefix of the group, in arrival order"
                )
                assert set(written) <= {m.reservation_id for m in self.model.groups(batch)[first_key]}, (
                    "a transaction with an already recorded reservation was not refused"
                )
                answers = self.model.greedy(first_key, prefix)
                committed = answers
                assert {rid: r["outcome"] for rid, r in written.items()} == {
                    rid: a.answer for rid, a in committed.items()
                }
                self.model.record(committed)
        else:
            # Only confirmations and cancellations: the first seat class of the first wave with a
            # status change committed, and nothing else; or nothing at all, when its transaction was
            # refused because the container assumed a capacity that an operator change made stale
            # (a reshard: the release guard then checks the other items' held and sold).
            statuses = {rid: r["status"] for rid, r in self.records({rid for rid, _ in changes}).items()}
            moved = [statuses.get(rid) == to for rid, to in changes]
            assert all(moved) or not any(moved), (changes, statuses)
            if all(moved):
                for reservation_id, to in changes:
                    self.model.move(reservation_id, to)
        self.the_table_agrees_with_the_model()  # the state the crash left, before the redelivery

        self.move_clock(data.draw(st.sampled_from([0, 0, 61]), label="seconds until the redelivery"))
        self.deliver(batch, receive_count=2)

    def has_holds(self) -> bool:
        return any(r.status == HELD or r.in_outbox for r in self.model.records.values())

    @precondition(has_holds)  # the clock and the sweeper only matter to holds; a run costs 16 queries
    @rule(
        seconds=st.sampled_from(CLOCK_STEPS),
        sweeper=st.sampled_from(
            ["runs", "crashes after its first transaction", "crashes after its first publish", "does not run"]
        ),
    )
    def time_passes(self, seconds: int, sweeper: str) -> None:
        """The clock moves on, and the scheduled sweeper runs (or is late: holds that ran out are not
        released yet); sometimes it dies after its first transaction or publish, and a later run
        must finish its work."""
        self.move_clock(seconds)
        if sweeper != "does not run":
            self.sweep(sweeper.removeprefix("crashes ") if sweeper.startswith("crashes") else "none")

    def sweep(self, crash: str) -> None:
        outbox, due = self.model.outbox(), self.model.due()
        if crash == "after its first transaction" and not due:
            crash = "none"
        if crash == "after its first publish" and not (outbox or due):
            crash = "none"
        if crash == "none":
            self.sweep_cleanly()
            return
        self.touched.update(outbox, due)
        switch = self.harness.crash if crash == "after its first transaction" else self.harness.publish_crash
        switch.armed = True
        with pytest.raises(SimulatedCrash):
            self.run_sweeper()
        assert not switch.armed
        published = self.expiry_announcements()
        if crash == "after its first transaction":
            # The outbox was flushed first; then one seat class's due holds were released, into the outbox.
            assert sorted(published) == outbox
            for rid in outbox:
                self.model.records[rid].in_outbox = False
            statuses = self.records(set(due))
            released = sorted(rid for rid in due if statuses[rid]["status"] == EXPIRED)
            assert released, "the sweeper's first transaction released nothing"
            [key] = {statuses[rid]["key"] for rid in released}
            assert released == [rid for rid in due if self.model.records[rid].key == key]
            for rid in released:
                self.model.move(rid, EXPIRED)
        elif outbox:
            # The first publish was the outbox's: nothing left the outbox, nothing was released.
            assert set(published) <= set(outbox) and len(published) == min(PUBLISH_BATCH_LIMIT, len(outbox))
        else:
            # Every due hold was released; the first ten were announced, all are still in the outbox.
            assert set(published) <= set(due) and len(published) == min(PUBLISH_BATCH_LIMIT, len(due))
            for rid in due:
                self.model.move(rid, EXPIRED)
        self.model.announced.update(published)

    def sweep_cleanly(self) -> None:
        """One sweeper run that completes: it announces the outbox, then releases and announces the due holds."""
        outbox, due = self.model.outbox(), self.model.due()
        self.touched.update(outbox, due)
        response = self.run_sweeper()
        published = self.expiry_announcements()
        assert response == {
            "released": len(due),
            "seats_released": sum(self.model.records[rid].quantity for rid in due),
            "republished": len(outbox),
            "unpublished": 0,
            "skipped": 0,
            "failed_groups": [],
            "oldest_overdue_seconds": max(
                (self.model.now - (self.model.records[rid].hold_expires_at or 0) for rid in due), default=0
            ),
            # No class in this model has a waiting list: nothing is offered or set aside.
            "offered": 0,
            "seats_offered": 0,
            "seats_returned_from_lists": 0,
            "offers_published": 0,
        }
        assert sorted(published) == sorted(outbox + due), "each expiry announced once by this run"
        for rid in due:
            self.model.move(rid, EXPIRED)
        for rid in outbox + due:
            self.model.records[rid].in_outbox = False
        self.model.announced.update(published)

    def run_sweeper(self) -> dict[str, Any]:
        self.stale = True
        return self.harness.sweep()

    def expiry_announcements(self) -> list[str]:
        """The reservation ids of the EXPIRED outcomes the sweeper just published, each checked."""
        published = self.outcomes()
        for document in published:
            record = self.model.records[document["reservation_id"]]
            assert (document["outcome"], document["type"], document["duplicate"], document["message_id"]) == (
                EXPIRED,
                "expire",
                False,
                None,
            ), document
            assert document["quantity"] == record.quantity
        return [d["reservation_id"] for d in published]

    def outcomes(self) -> list[dict[str, Any]]:
        """The outcomes published since the last call."""
        return self.harness.tap.take()

    # -- invariants

    @invariant()
    def the_table_agrees_with_the_model(self) -> None:
        """After every step: every inventory item, and the record of every id the step may have changed.

        Records are written only for the ids of the messages delivered (and the holds a sweeper
        releases), so these are all a step can change (reading the whole table after each step
        would cost more than the step on moto); teardown counts the items to show that nothing
        else was written. As every record matched the model when it was written, and the model's
        `held` and `sold` are the sums of its live holds and sales, equal counts also mean the
        records add up to the inventory: no reservation took effect twice.
        """
        touched, self.touched = self.touched, set()
        if not (touched or self.stale):
            return  # the step only moved the clock
        self.stale = False
        keys = self.inventory_keys()
        keys += [reservation_key(rid) for rid in sorted(touched)]
        self.check(self.get(keys), expected_records=touched & set(self.model.records))

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
        return {
            item["reservation_id"]["S"]: record_of(item)
            for item in self.get([reservation_key(rid) for rid in sorted(reservation_ids)])
        }

    def check(self, items: list[dict[str, Any]], *, expected_records: set[str]) -> None:
        """The items read agree with the model; `expected_records` are the records that must be there."""
        inventory: dict[SeatKey, dict[str, int]] = {}
        records: dict[str, dict[str, Any]] = {}
        for item in items:
            pk, sk = item["pk"]["S"], item["sk"]["S"]
            if pk.startswith("RESERVATION#"):
                records[item["reservation_id"]["S"]] = record_of(item)
            else:
                assert pk.startswith("EVENT#") and sk.startswith("CLASS#"), (
                    f"an item the model has no place for: {pk} {sk}"
                )
                key = SeatKey(item["event_id"]["S"], item["seat_class"]["S"])
                shard = {name: int(item[name]["N"]) for name in ("capacity", "available", "sold", "held")}
                # Each shard item keeps the invariant on its own; the class is their sum.
                assert min(shard.values()) >= 0, (pk, shard)
                assert shard["available"] + shard["held"] + shard["sold"] == shard["capacity"], (pk, shard)
                totals = inventory.setdefault(key, dict.fromkeys(shard, 0))
                for name, value in shard.items():
                    totals[name] += value
        assert set(inventory) == set(self.model.capacity)
        for key, counts in inventory.items():
            assert counts["available"] >= 0, key
            assert counts["available"] + counts["held"] + counts["sold"] == counts["capacity"], key
            model = (
                self.model.capacity[key],
                self.model.available(key),
                self.model.held[key],
                self.model.sold[key],
            )
            assert (counts["capacity"], counts["available"], counts["held"], counts["sold"]) == model, key
        # Each reservation id took effect at most once: one record, holding the model's answer and status.
        assert set(records) == expected_records
        for rid, record in records.items():
            want = self.model.records[rid]
            assert (record["outcome"], record["key"], record["quantity"], record["hold_expires_at"]) == (
                want.answer,
                want.key,
                want.quantity,
                want.hold_expires_at,
            ), rid
            assert record["status"] == want.status, (rid, record, want)
            # In the index while a live hold (the sweeper's) or an unannounced expiry (its outbox).
            index = HOLDS_PREFIX if want.status == HELD else OUTBOX_PREFIX if want.in_outbox else None
            if index is None:
                assert record["index"] is None, (rid, record)
            else:
                assert (record["index"] or "").startswith(index), (rid, record)
            # Statuses only move along the lifecycle, and the recorded answer never changes.
            before = self.observed.get(rid)
            if before is not None:
                assert record["outcome"] == before[0], (rid, before, record)
                assert record["status"] == before[1] or record["status"] in LEGAL_MOVES.get(
                    before[1], set()
                ), f"{rid} moved from {before[1]} to {record['status']}"
            self.observed[rid] = (record["outcome"], record["status"])


def record_of(item: dict[str, Any]) -> dict[str, Any]:
    """A reservation record as the checks compare it."""
    return {
        "outcome": item["outcome"]["S"],
        "status": item["status"]["S"],
        "key": SeatKey(item["event_id"]["S"], item["seat_class"]["S"]),
        "quantity": int(item["quantity"]["N"]),
        "hold_expires_at": int(item["hold_expires_at"]["N"]) if "hold_expires_at" in item else None,
        "index": item["gsi1pk"]["S"] if "gsi1pk" in item else None,
    }


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
    clock = MovableClock(int(time.time()))
    # Both functions on one session (so one tap and one crash switch see both) and one clock.
    monkeypatch.setattr(handler_module, "build_adapters", adapters_factory(session, clock))
    monkeypatch.setattr(sweeper_module, "build_adapters", adapters_factory(session, clock))
    handler_module.reset_container()
    sweeper_module.reset_container()
    with mock_aws():
        setup = boto3.session.Session(region_name=REGION)
        dynamodb = setup.client("dynamodb")
        create_table_from_template(dynamodb, TEMPLATE, TABLE_NAME)
        assert setup.client("sns").create_topic(Name=TOPIC_NAME)["TopicArn"] == TOPIC_ARN
        stack = Stack(TABLE_NAME, TOPIC_ARN, "", Faults(session), setup.client("sqs"), dynamodb)
        crash = CrashSwitch(session, "dynamodb.TransactWriteItems", "dynamodb.PutItem")
        tap = PublishTap(session)
        HARNESS = Harness(stack, clock, crash, CrashSwitch(session, "sns.PublishBatch"), tap)
        yield HARNESS
    HARNESS = None
    handler_module.reset_container()
    sweeper_module.reset_container()


@pytest.mark.bounded
@pytest.mark.parametrize("model_seed", MODEL_SEEDS)
def test_random_histories_keep_the_inventory_and_the_answers_consistent(
    harness: Harness, model_seed: int, request: pytest.FixtureRequest
) -> None:
    examples = max(1, MODEL_EXAMPLES // len(MODEL_SEEDS))
    forced = request.config.getoption("hypothesis_seed", default=None)
    if forced is not None:  # --hypothesis-seed=N: that seed alone, with every example
        if model_seed != MODEL_SEEDS[0]:
            pytest.skip("--hypothesis-seed runs one seed")
        model_seed, examples = int(forced), MODEL_EXAMPLES
    machine = seed(model_seed)(type(f"SeatInventoryMachineSeed{model_seed}", (SeatInventoryMachine,), {}))
    run_state_machine_as_test(
        machine,
        settings=settings(
            max_examples=examples,
            stateful_step_count=MODEL_STEPS,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow],
        ),
    )
