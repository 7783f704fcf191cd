"""Hostile input: a corpus of bad messages, mixed batches, and fuzzing of the message parser.

docs/explanation/guarantees.md, 4: an invalid message is answered INVALID with a precise reason and deleted; it
never fails the rest of the batch and never touches the inventory. Every case of the corpus is a
distinct way a producer (or an attacker with send rights on the queue) can get a body wrong.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from seat_inventory.logic.reserve_seats import QueueMessage, reserve_seats
from seat_inventory.models import InvalidMessage, Outcome, ReservationRequest, SeatKey
from seat_inventory.parsing import MAX_ID_LENGTH, MAX_SEAT_CLASS_LENGTH, parse_reservation
from seat_inventory.settings import Settings
from tests.fakes import FakeClock, InMemoryInventoryStore, RecordingPublisher

MAX_QUANTITY = 10
SETTINGS = Settings(
    table_name="t",
    outcomes_topic_arn="arn:aws:sns:us-east-1:123456789012:t",
    max_seats_per_reservation=MAX_QUANTITY,
)
# The documented contract (docs/reference/contract.md), written out again so the tests do not
# borrow the parser's own pattern.
ID_RULE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@-]*")
PRINTABLE_ASCII = frozenset(chr(c) for c in range(0x20, 0x7F))
MAX_REASON_LENGTH = 300
ID_CHARSET = "may only contain ASCII letters, digits and . _ : @ - and must start with a letter or digit"

GOOD: dict[str, Any] = {
    "reservation_id": "r-1",
    "event_id": "e-1",
    "seat_class": "VIP",
    "quantity": 2,
    "customer_id": "c-9",
}
GOOD_TEXT = json.dumps(GOOD)


def body(**changes: Any) -> str:
    """GOOD with some fields replaced."""
    return json.dumps({**GOOD, **changes})


def without(name: str) -> str:
    return json.dumps({k: v for k, v in GOOD.items() if k != name})


def with_quantity_literal(literal: str) -> str:
    """GOOD with the quantity written as raw JSON text (exponents, NaN, -0 ...)."""
    return GOOD_TEXT.replace('"quantity": 2', f'"quantity": {literal}')


def parse(text: str, message_id: str = "msg-1") -> ReservationRequest | InvalidMessage:
    return parse_reservation(message_id, text, default_seat_class="GA", max_quantity=MAX_QUANTITY)


@dataclass(frozen=True)
class Bad:
    """One kind of bad message and the exact reason it gets (a pattern where the wording may grow)."""

    kind: str
    body: str
    reason: str | re.Pattern[str]

    def reason_matches(self, reason: str) -> bool:
        if isinstance(self.reason, str):
            return reason == self.reason
        return self.reason.fullmatch(reason) is not None


def wrong_type(got: str) -> re.Pattern[str]:
    """The list of accepted types grows with the message lifecycle (hold, confirm, cancel)."""
    return re.compile(r"type must be (one of )?'reserve'(, '[a-z]+')*, got " + re.escape(got))


def bad_id(field: str, value: str) -> str:
    return f"{field} {json.dumps(value)} {ID_CHARSET}"


CORPUS: list[Bad] = [
    # --- not a JSON object at all
    Bad("not JSON", "hello", "body is not valid JSON: Expecting value at position 0"),
    Bad("XML", "<reservation id='r-1'/>", "body is not valid JSON: Expecting value at position 0"),
    Bad("Python literal True", "True", "body is not valid JSON: Expecting value at position 0"),
    Bad(
        "Python dict repr",
        str(GOOD),
        "body is not valid JSON: Expecting property name enclosed in double quotes at position 1",
    ),
    Bad(
        "truncated JSON",
        GOOD_TEXT[:40],
        "body is not valid JSON: Unterminated string starting at position 38",
    ),
    Bad("trailing garbage", GOOD_TEXT + " x", "body is not valid JSON: Extra data at position 103"),
    Bad(
        "raw control character in a string",
        '{"reservation_id": "r\n1"}',
        "body is not valid JSON: Invalid control character at position 21",
    ),
    Bad("empty body", "", "body is not valid JSON: Expecting value at position 0"),
    Bad("whitespace only", " \n\t ", "body is not valid JSON: Expecting value at position 4"),
    Bad(
        "UTF-8 byte order mark",
        "\ufeff" + GOOD_TEXT,
        "body is not valid JSON: Unexpected UTF-8 BOM (decode using utf-8-sig) at position 0",
    ),
    Bad("JSON array", json.dumps([GOOD]), "body must be a JSON object, got list"),
    Bad("JSON string", json.dumps(GOOD_TEXT), "body must be a JSON object, got str"),
    Bad("JSON number", "42", "body must be a JSON object, got int"),
    Bad("JSON null", "null", "body must be a JSON object, got null"),
    Bad("JSON true", "true", "body must be a JSON object, got bool"),
    Bad(
        "array nested 100000 deep", "[" * 100_000 + "]" * 100_000, "body is not valid JSON: nested too deeply"
    ),
    Bad(
        "object nested 100000 deep",
        '{"a":' * 100_000 + "1" + "}" * 100_000,
        "body is not valid JSON: nested too deeply",
    ),
    # --- JSON, but not numbers
    Bad("NaN", with_quantity_literal("NaN"), "body is not valid JSON: NaN is not a number"),
    Bad("Infinity", with_quantity_literal("Infinity"), "body is not valid JSON: Infinity is not a number"),
    Bad("-Infinity", with_quantity_literal("-Infinity"), "body is not valid JSON: -Infinity is not a number"),
    # --- structure of the object
    Bad("duplicate key", GOOD_TEXT[:-1] + ', "quantity": 3}', 'field "quantity" appears more than once'),
    Bad("extra field", body(price=10), 'unexpected field(s): "price"'),
    Bad("extra field named NUL", body(**{"\x00": 1}), 'unexpected field(s): "\\u0000"'),
    Bad(
        "SNS envelope (subscription without raw delivery)",
        json.dumps({"Type": "Notification", "MessageId": "x", "TopicArn": "arn", "Message": GOOD_TEXT}),
        "body is an SNS notification envelope; enable raw message delivery on the subscription"
        " or send the reservation itself",
    ),
    Bad("wrong type", body(type="refund"), wrong_type('"refund"')),
    Bad("type in capitals", body(type="RESERVE"), wrong_type('"RESERVE"')),
    Bad("type null", body(type=None), wrong_type("null")),
    Bad("type a number", body(type=1), wrong_type("1")),
    # --- missing fields
    Bad("missing reservation_id", without("reservation_id"), "missing required field(s): reservation_id"),
    Bad("missing event_id", without("event_id"), "missing required field(s): event_id"),
    Bad("missing quantity", without("quantity"), "missing required field(s): quantity"),
    Bad("missing customer_id", without("customer_id"), "missing required field(s): customer_id"),
    Bad("null quantity", body(quantity=None), "missing required field(s): quantity"),
    Bad(
        "empty object",
        "{}",
        "missing required field(s): reservation_id, event_id, quantity, customer_id",
    ),
    # --- wrong types
    Bad("reservation_id a number", body(reservation_id=17), "reservation_id must be a string, got int 17"),
    Bad("event_id a list", body(event_id=["e-1"]), 'event_id must be a string, got list ["e-1"]'),
    Bad(
        "customer_id an object",
        body(customer_id={"id": "c-9"}),
        'customer_id must be a string, got dict {"id": "c-9"}',
    ),
    Bad("seat_class a bool", body(seat_class=True), "seat_class must be a string, got bool true"),
    # --- quantity
    Bad("zero quantity", body(quantity=0), "quantity must be at least 1, got 0"),
    Bad("negative quantity", body(quantity=-3), "quantity must be at least 1, got -3"),
    Bad("negative zero quantity", with_quantity_literal("-0"), "quantity must be at least 1, got 0"),
    Bad(
        "quantity above the maximum",
        body(quantity=11),
        "quantity 11 is above the maximum of 10 seats per reservation",
    ),
    Bad(
        "huge quantity",
        body(quantity=10**30),
        "quantity 1000000000000000000000000000000 is above the maximum of 10 seats per reservation",
    ),
    Bad("fractional quantity", body(quantity=2.5), "quantity must be an integer, got float 2.5"),
    Bad("integral float quantity", body(quantity=2.0), "quantity must be an integer, got float 2.0"),
    Bad(
        "exponent notation quantity",
        with_quantity_literal("1e2"),
        "quantity must be an integer, got float 100.0",
    ),
    Bad(
        "quantity overflowing a double",
        with_quantity_literal("1e400"),
        "quantity must be an integer, got float Infinity",
    ),
    Bad("string quantity", body(quantity="2"), 'quantity must be an integer, got str "2"'),
    Bad("bool quantity", body(quantity=True), "quantity must be an integer, got bool true"),
    Bad("list quantity", body(quantity=[2]), "quantity must be an integer, got list [2]"),
    Bad(
        "BSON-style quantity",
        body(quantity={"$numberInt": "2"}),
        'quantity must be an integer, got dict {"$numberInt": "2"}',
    ),
    # --- identifiers: length and emptiness
    Bad(
        "overlong reservation_id",
        body(reservation_id="r" * 129),
        "reservation_id is 129 characters long; the maximum is 128",
    ),
    Bad(
        "overlong seat_class",
        body(seat_class="V" * 65),
        "seat_class is 65 characters long; the maximum is 64",
    ),
    Bad("empty reservation_id", body(reservation_id=""), "reservation_id must not be empty"),
    Bad("empty seat_class", body(seat_class=""), "seat_class must not be empty"),
    Bad(
        "256 KB body",
        body(reservation_id="a" * 262_000),
        "reservation_id is 262000 characters long; the maximum is 128",
    ),
    # --- identifiers: characters
    Bad("control character (BEL)", body(reservation_id="r-1\x07"), bad_id("reservation_id", "r-1\x07")),
    Bad("NUL", body(reservation_id="r\x00"), bad_id("reservation_id", "r\x00")),
    Bad("trailing newline", body(reservation_id="r-1\n"), bad_id("reservation_id", "r-1\n")),
    Bad("space", body(reservation_id="r 1"), bad_id("reservation_id", "r 1")),
    Bad("leading dash", body(reservation_id="-r1"), bad_id("reservation_id", "-r1")),
    Bad("key separator #", body(event_id="EVENT#x"), bad_id("event_id", "EVENT#x")),
    Bad("slash", body(customer_id="c/9"), bad_id("customer_id", "c/9")),
    Bad("RTL override", body(reservation_id="r\u202e1"), bad_id("reservation_id", "r\u202e1")),
    Bad("zero-width joiner", body(customer_id="c\u200d9"), bad_id("customer_id", "c\u200d9")),
    Bad("emoji", body(event_id="e-\U0001f39f"), bad_id("event_id", "e-\U0001f39f")),
    Bad("Cyrillic homoglyph", body(event_id="\u0435-1"), bad_id("event_id", "\u0435-1")),
    Bad("full-width digit", body(reservation_id="r-\uff11"), bad_id("reservation_id", "r-\uff11")),
    Bad(
        "lone surrogate escaped as \\ud800",
        GOOD_TEXT.replace('"r-1"', '"\\ud800"'),
        bad_id("reservation_id", "\ud800"),
    ),
]


def good_message(n: int, *, event_id: str = "e-1", quantity: int = 1) -> QueueMessage:
    return QueueMessage(
        f"good-{n}",
        json.dumps(
            {"reservation_id": f"ok-{n}", "event_id": event_id, "quantity": quantity, "customer_id": "c-1"}
        ),
    )


def assert_short_printable(reason: str) -> None:
    assert 0 < len(reason) < MAX_REASON_LENGTH, f"reason is {len(reason)} characters long"
    assert set(reason) <= PRINTABLE_ASCII, f"reason is not printable ASCII: {reason!r}"


def assert_salvaged_fields_obey_the_contract(parsed: InvalidMessage) -> None:
    """What an INVALID answer echoes back is safe to use as an SNS attribute or a key."""
    for value, limit in (
        (parsed.reservation_id, MAX_ID_LENGTH),
        (parsed.event_id, MAX_ID_LENGTH),
        (parsed.customer_id, MAX_ID_LENGTH),
        (parsed.seat_class, MAX_ID_LENGTH),
    ):
        assert value is None or (len(value) <= limit and ID_RULE.fullmatch(value))
    assert parsed.quantity is None or (type(parsed.quantity) is int)


# --- the corpus, one message at a time ---------------------------------------------------------


def test_the_corpus_has_at_least_30_distinct_kinds() -> None:
    assert len({case.kind for case in CORPUS}) == len(CORPUS) >= 30
    assert len({case.body for case in CORPUS}) == len(CORPUS)


@pytest.mark.parametrize("case", CORPUS, ids=[case.kind for case in CORPUS])
def test_each_bad_message_is_invalid_with_a_precise_short_reason(case: Bad) -> None:
    parsed = parse(case.body)

    assert isinstance(parsed, InvalidMessage)
    assert parsed.message_id == "msg-1"
    assert case.reason_matches(parsed.reason), parsed.reason
    assert_short_printable(parsed.reason)
    assert_salvaged_fields_obey_the_contract(parsed)


# --- batches mixing good and bad ----------------------------------------------------------------


def run_batch(messages: list[QueueMessage], capacity: int = 1000):
    store = InMemoryInventoryStore()
    store.add_event("e-1", capacity=capacity)
    publisher = RecordingPublisher()
    result = reserve_seats(messages, store=store, publisher=publisher, settings=SETTINGS, clock=FakeClock())
    return result, store, publisher


@pytest.mark.parametrize("case", CORPUS, ids=[case.kind for case in CORPUS])
def test_a_bad_message_between_good_ones_is_answered_invalid_and_the_batch_completes(case: Bad) -> None:
    messages = [good_message(1), QueueMessage("bad", case.body), good_message(2, quantity=3)]

    result, store, publisher = run_batch(messages)

    assert result.failed_message_ids == []
    answers = {o.message_id: o for o in publisher.published}
    assert answers["bad"].outcome is Outcome.INVALID
    assert case.reason_matches(answers["bad"].reason)
    assert answers["good-1"].outcome is Outcome.CONFIRMED
    assert answers["good-2"].outcome is Outcome.CONFIRMED
    assert set(store.records) == {"ok-1", "ok-2"}
    assert store.inventory[SeatKey("e-1", "GA")].sold == 4


def test_the_whole_corpus_interleaved_with_good_messages_touches_only_the_good_ones() -> None:
    messages: list[QueueMessage] = []
    for n, case in enumerate(CORPUS):
        messages.append(QueueMessage(f"bad-{n}", case.body))
        messages.append(good_message(n, quantity=1 + n % 3))

    result, store, publisher = run_batch(messages, capacity=10_000)

    assert result.failed_message_ids == []
    answers = {o.message_id: o for o in publisher.published}
    assert len(answers) == len(messages)
    for n, case in enumerate(CORPUS):
        assert answers[f"bad-{n}"].outcome is Outcome.INVALID
        assert case.reason_matches(answers[f"bad-{n}"].reason)
        assert answers[f"good-{n}"].outcome is Outcome.CONFIRMED
    assert set(store.records) == {f"ok-{n}" for n in range(len(CORPUS))}
    assert store.inventory[SeatKey("e-1", "GA")].sold == sum(1 + n % 3 for n in range(len(CORPUS)))
    assert result.seats_confirmed == store.inventory[SeatKey("e-1", "GA")].sold


def test_a_batch_of_only_bad_messages_writes_nothing() -> None:
    result, store, publisher = run_batch([QueueMessage(f"bad-{n}", c.body) for n, c in enumerate(CORPUS)])

    assert result.failed_message_ids == []
    assert [o.outcome for o in publisher.published] == [Outcome.INVALID] * len(CORPUS)
    assert store.transactions == 0
    assert store.records == {}


# --- defects found by this corpus, fixed: numbers past Python's digit limit, deep nesting, unbounded echoes

LONG_INTEGER = "7" * 5000  # Python refuses int('...') above 4300 digits (sys.get_int_max_str_digits)


@pytest.mark.parametrize("where", ["quantity", "extra field"])
def test_an_integer_literal_beyond_pythons_digit_limit_is_answered_invalid(where: str) -> None:
    text = (
        with_quantity_literal(LONG_INTEGER)
        if where == "quantity"
        else GOOD_TEXT[:-1] + f', "x": {LONG_INTEGER}}}'
    )
    parsed = parse(text)
    assert isinstance(parsed, InvalidMessage)
    assert_short_printable(parsed.reason)


def test_an_integer_literal_beyond_the_digit_limit_does_not_fail_the_batch() -> None:
    messages = [good_message(1), QueueMessage("bad", with_quantity_literal(LONG_INTEGER)), good_message(2)]

    result, store, _ = run_batch(messages)

    assert result.failed_message_ids == []
    assert set(store.records) == {"ok-1", "ok-2"}


def test_a_value_nested_just_below_the_decoders_limit_is_answered_invalid() -> None:
    # The depth at which decoding still works depends on the stack depth of the caller, so every
    # depth up to past the limit is tried.
    for depth in range(1, 1200):
        text = with_quantity_literal("[" * depth + "]" * depth)
        parsed = parse(text)
        assert isinstance(parsed, InvalidMessage), depth


REASONS_ECHOING_UNBOUNDED_INPUT = {
    "4000-digit quantity": with_quantity_literal("9" * 4000),
    "4000-digit negative quantity": with_quantity_literal("-" + "9" * 4000),
    "long duplicate key": '{"' + "k" * 1000 + '": 1, "' + "k" * 1000 + '": 1}',
    "duplicate key with NUL": '{"\\u0000": 1, "\\u0000": 1}',
    "duplicate key with RTL override": '{"\\u202e": 1, "\\u202e": 1}',
    "a thousand unexpected fields": json.dumps({**GOOD, **{f"x{n}": 0 for n in range(1000)}}),
}


@pytest.mark.parametrize(
    "text", list(REASONS_ECHOING_UNBOUNDED_INPUT.values()), ids=list(REASONS_ECHOING_UNBOUNDED_INPUT)
)
def test_a_reason_stays_short_and_printable_whatever_the_input_echoes(text: str) -> None:
    parsed = parse(text)
    assert isinstance(parsed, InvalidMessage)
    assert_short_printable(parsed.reason)


# --- fuzzing the parser -------------------------------------------------------------------------

FIELDS = ["reservation_id", "event_id", "seat_class", "quantity", "customer_id", "type"]
LIFECYCLE_TYPES = frozenset({"hold", "confirm", "cancel"})
FUZZ = settings(max_examples=300, deadline=None)

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=20)
)
json_values = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=5)
        | st.dictionaries(st.sampled_from(FIELDS) | st.text(max_size=10), children, max_size=6)
    ),
    max_leaves=30,
)
valid_ids = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}", fullmatch=True)
valid_seat_classes = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._:@-]{0,63}", fullmatch=True)
valid_bodies = st.fixed_dictionaries(
    {
        "reservation_id": valid_ids,
        "event_id": valid_ids,
        "customer_id": valid_ids,
        "quantity": st.integers(1, MAX_QUANTITY),
    },
    optional={"seat_class": valid_seat_classes | st.none(), "type": st.just("reserve")},
)


def contract_allows(document: Any) -> bool:
    """The message contract (docs/reference/contract.md), as an oracle independent of parsing.py."""

    def is_id(value: Any, limit: int) -> bool:
        return isinstance(value, str) and 0 < len(value) <= limit and ID_RULE.fullmatch(value) is not None

    if not isinstance(document, dict) or not set(document) <= set(FIELDS):
        return False
    if any(document.get(name) is None for name in ("reservation_id", "event_id", "customer_id", "quantity")):
        return False
    quantity = document["quantity"]
    return (
        all(is_id(document[name], MAX_ID_LENGTH) for name in ("reservation_id", "event_id", "customer_id"))
        and type(quantity) is int
        and 1 <= quantity <= MAX_QUANTITY
        and (document.get("seat_class") is None or is_id(document["seat_class"], MAX_SEAT_CLASS_LENGTH))
        and document.get("type", "reserve") == "reserve"
    )


def outside_this_oracle(document: Any) -> bool:
    """Messages of the lifecycle types (hold, confirm, cancel) follow their own contract."""
    return isinstance(document, dict) and str(document.get("type")) in LIFECYCLE_TYPES


def check_result(parsed: Any, message_id: str) -> None:
    """Whatever came in, the parser answered with a well-formed request or a reasoned refusal."""
    assert parsed.message_id == message_id
    if isinstance(parsed, InvalidMessage):
        assert isinstance(parsed.reason, str) and parsed.reason
        assert_salvaged_fields_obey_the_contract(parsed)
        return
    assert ID_RULE.fullmatch(parsed.reservation_id) and len(parsed.reservation_id) <= MAX_ID_LENGTH
    if isinstance(parsed, ReservationRequest):
        assert type(parsed.quantity) is int and 1 <= parsed.quantity <= MAX_QUANTITY
    for name, limit in (
        ("event_id", MAX_ID_LENGTH),
        ("customer_id", MAX_ID_LENGTH),
        ("seat_class", MAX_SEAT_CLASS_LENGTH),
    ):
        value = getattr(parsed, name, None)
        assert value is None or (0 < len(value) <= limit and ID_RULE.fullmatch(value)), (name, value)


@FUZZ
@given(text=st.text())
def test_fuzz_arbitrary_text_never_raises(text: str) -> None:
    check_result(parse(text, "m-fuzz"), "m-fuzz")


@FUZZ
@given(document=json_values)
def test_fuzz_arbitrary_json_never_raises_and_agrees_with_the_contract(document: Any) -> None:
    parsed = parse(json.dumps(document), "m-fuzz")

    check_result(parsed, "m-fuzz")
    if not outside_this_oracle(document):
        assert isinstance(parsed, ReservationRequest) == contract_allows(document)
    if isinstance(parsed, InvalidMessage):
        assert set(parsed.reason) <= PRINTABLE_ASCII


@FUZZ
@given(
    document=valid_bodies,
    field=st.sampled_from([*FIELDS, "price", "Type"]),
    replacement=st.one_of(st.just("<delete>"), json_values, valid_ids, st.integers(-5, 15)),
)
def test_fuzz_near_valid_messages_with_one_field_mutated(
    document: dict[str, Any], field: str, replacement: Any
) -> None:
    mutated = dict(document)
    if replacement == "<delete>":
        mutated.pop(field, None)
    else:
        mutated[field] = replacement

    parsed = parse(json.dumps(mutated), "m-fuzz")

    check_result(parsed, "m-fuzz")
    if outside_this_oracle(mutated):
        return
    assert isinstance(parsed, ReservationRequest) == contract_allows(mutated), parsed
    if isinstance(parsed, ReservationRequest):
        assert (parsed.reservation_id, parsed.event_id, parsed.customer_id, parsed.quantity) == (
            mutated["reservation_id"],
            mutated["event_id"],
            mutated["customer_id"],
            mutated["quantity"],
        )
        assert parsed.seat_class == (mutated.get("seat_class") or "GA")
    else:
        assert set(parsed.reason) <= PRINTABLE_ASCII


@FUZZ
@given(document=valid_bodies)
def test_fuzz_every_valid_message_is_accepted_as_sent(document: dict[str, Any]) -> None:
    parsed = parse(json.dumps(document), "m-fuzz")

    assert isinstance(parsed, ReservationRequest)
    check_result(parsed, "m-fuzz")


@FUZZ
@given(
    bodies=st.lists(
        st.one_of(
            st.text(max_size=40),
            json_values.map(json.dumps),
            valid_bodies.map(json.dumps),
            valid_bodies.map(lambda d: json.dumps({**d, "event_id": "e-1", "seat_class": "GA"})),
        ),
        min_size=1,
        max_size=12,
    )
)
def test_fuzz_a_batch_of_anything_never_fails_and_takes_seats_only_for_valid_requests(
    bodies: list[str],
) -> None:
    messages = [QueueMessage(f"m-{n}", text) for n, text in enumerate(bodies)]

    result, store, publisher = run_batch(messages, capacity=10_000)

    assert result.failed_message_ids == []
    assert {o.message_id for o in publisher.published} == {m.message_id for m in messages}
    valid = {
        parsed.reservation_id
        for m in messages
        if isinstance(parsed := parse(m.body, m.message_id), ReservationRequest)
    }
    assert set(store.records) == set(valid)
    for item in store.inventory.values():
        assert item.available >= 0 and item.available + item.sold == item.capacity
    confirmed = sum(o.quantity or 0 for o in store.records.values() if o.outcome is Outcome.CONFIRMED)
    assert confirmed == store.inventory[SeatKey("e-1", "GA")].sold
