"""Admission tokens (docs/guides/admission.md): the format, each refusal, rotation, and a batch's answers
on the in-memory store (one token buys once, redelivery is not a replay)."""

from __future__ import annotations

import base64
import json

import boto3
import pytest

from seat_inventory.logic.admission_tokens import (
    MISSING,
    KeyRing,
    KeyRingError,
    TokenVerifier,
    parse_key_ring,
    verify_token,
)
from seat_inventory.logic.inventory_hints import InventoryHints
from seat_inventory.logic.reserve_seats import QueueMessage, reserve_seats
from seat_inventory.models import Outcome, RetryableError, SeatKey
from seat_inventory.settings import Settings
from seat_tools.admission_keys import fixed_keys, issue_token, new_key_ring_text
from tests.fakes import FakeClock, InMemoryInventoryStore, RecordingPublisher

NOW = 1_800_000_000
KEY_1 = b"k" * 32
KEY_2 = b"q" * 32
RING = KeyRing("k1", {"k1": KEY_1})
SETTINGS = Settings(table_name="t", outcomes_topic_arn="arn:aws:sns:us-east-1:1:t")


def token(
    event: str = "e-1", customer: str = "c-1", *, ttl: int = 600, ring: KeyRing = RING, jti: str = "t-1"
):
    return issue_token(ring, event_id=event, customer_id=customer, expires_at=NOW + ttl, token_id=jti)


def check(tok: str | None, *, keys=None, event: str = "e-1", customer: str = "c-1", now: float = NOW):
    return verify_token(tok, keys or RING.keys, event_id=event, customer_id=customer, now=now)


# ------------------------------------------------------------------ the format


def test_a_token_is_four_parts_whose_payload_names_event_customer_expiry_and_id() -> None:
    version, key_id, payload, signature = token().split(".")

    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    assert (version, key_id) == ("v1", "k1")
    assert claims == {"cid": "c-1", "eid": "e-1", "exp": NOW + 600, "jti": "t-1"}
    assert len(base64.urlsafe_b64decode(signature + "=")) == 32  # HMAC-SHA256


def test_a_valid_token_admits_its_customer_at_its_event() -> None:
    result = check(token())

    assert result.admits
    assert (result.token_id, result.expires_at) == ("t-1", NOW + 600)


def test_each_issued_token_gets_its_own_id() -> None:
    first = issue_token(RING, event_id="e-1", customer_id="c-1", expires_at=NOW + 60)
    second = issue_token(RING, event_id="e-1", customer_id="c-1", expires_at=NOW + 60)

    assert check(first).token_id != check(second).token_id


# ------------------------------------------------------------------ each refusal


def test_a_missing_token_is_refused() -> None:
    assert check(None).refusal == MISSING


@pytest.mark.parametrize(
    "bad", ["", "abc", "v2.k1.x.y", "v1.k1.x", "v1.k1.x.y.z", "v1.k 1.x.y", "v1." + "a" * 2000 + ".x.y"]
)
def test_a_malformed_token_is_refused(bad: str) -> None:
    assert (check(bad).refusal or "").startswith("admission token malformed")


def test_a_token_signed_with_another_secret_is_forged() -> None:
    other = KeyRing("k1", {"k1": b"x" * 32})

    assert check(token(ring=other)).refusal == "admission token forged: the signature does not verify"


def test_a_token_with_a_changed_payload_is_forged() -> None:
    version, key_id, _, signature = token().split(".")
    _, _, payload, _ = token(customer="c-2").split(".")

    assert "forged" in (check(f"{version}.{key_id}.{payload}.{signature}", customer="c-2").refusal or "")


def test_a_token_with_an_unknown_key_id_is_forged() -> None:
    assert "unknown key id 'k9'" in (check(token(ring=KeyRing("k9", {"k9": KEY_1}))).refusal or "")


def test_an_expired_token_is_refused_at_its_expiry() -> None:
    assert check(token(), now=NOW + 599).admits
    assert (check(token(), now=NOW + 600).refusal or "").startswith("admission token expired at")


def test_a_token_for_another_event_or_customer_is_refused() -> None:
    assert check(token(), event="e-2").refusal == "admission token is for another event, not e-2"
    assert check(token(), customer="c-2").refusal == "admission token is for another customer"


# ------------------------------------------------------------------ keys and rotation


def test_a_ring_accepts_its_previous_key_while_it_signs_with_the_new_one() -> None:
    old = parse_key_ring(new_key_ring_text("k1", KEY_1))
    rotated = parse_key_ring(new_key_ring_text("k2", KEY_2, previous=old))
    old_token, new_token = token(ring=old, jti="a"), token(ring=rotated, jti="b")

    assert rotated.current == "k2"
    assert new_token.split(".")[1] == "k2"
    assert check(old_token, keys=rotated.keys).admits
    assert check(new_token, keys=rotated.keys).admits
    # Once the previous key is dropped, its tokens no longer verify.
    assert "forged" in (check(old_token, keys={"k2": KEY_2}).refusal or "")


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("not json", "not JSON"),
        ('{"keys": {}}', "must be"),
        ('{"current": "k1", "keys": {"k 1": "' + "A" * 43 + '"}}', "key id"),
        ('{"current": "k1", "keys": {"k1": "short"}}', "at least 32"),
        ('{"current": "k2", "keys": {"k1": "' + "A" * 43 + '"}}', "not among the keys"),
    ],
)
def test_a_malformed_key_ring_says_what_is_wrong(text: str, problem: str) -> None:
    with pytest.raises(KeyRingError, match=problem):
        parse_key_ring(text)


# ------------------------------------------------------------------ a batch's answers


def message(
    n: int, tok: str | None, *, reservation: str | None = None, customer: str = "c-1", kind="reserve"
):
    body: dict[str, object] = {
        "type": kind,
        "reservation_id": reservation or f"r-{n}",
        "event_id": "e-1",
        "quantity": 1,
        "customer_id": customer,
    }
    if tok is not None:
        body["admission_token"] = tok
    return QueueMessage(f"m-{n}", json.dumps(body))


def run(store: InMemoryInventoryStore, messages: list[QueueMessage], ring: KeyRing | None = RING):
    publisher = RecordingPublisher()
    result = reserve_seats(
        messages,
        store=store,
        publisher=publisher,
        settings=SETTINGS,
        clock=FakeClock(time=NOW),
        admission=TokenVerifier(fixed_keys(ring)),
    )
    return result, {o.reservation_id: o for o in publisher.published}


@pytest.fixture
def store() -> InMemoryInventoryStore:
    store = InMemoryInventoryStore()
    store.add_event("e-1", capacity=10, admission_required=True)
    return store


def test_a_class_that_requires_admission_refuses_each_bad_token_for_good(store) -> None:
    expired = token(ttl=-1, jti="old")
    forged = token(ring=KeyRing("k1", {"k1": b"z" * 32}), jti="f")
    _, answers = run(
        store,
        [
            message(1, None),
            message(2, forged),
            message(3, expired),
            message(4, token(customer="c-9", jti="w")),
            message(5, token(jti="good")),
        ],
    )

    reasons = {rid: (a.outcome, a.reason.split(":")[0]) for rid, a in answers.items()}
    assert reasons["r-1"] == (Outcome.ADMISSION_REFUSED, MISSING)
    assert reasons["r-2"] == (Outcome.ADMISSION_REFUSED, "admission token forged")
    assert reasons["r-3"][0] is Outcome.ADMISSION_REFUSED
    assert answers["r-3"].reason.startswith("admission token expired")
    assert answers["r-4"].reason == "admission token is for another customer"
    assert reasons["r-5"][0] is Outcome.CONFIRMED
    assert store.inventory[SeatKey("e-1", "GA")].available == 9
    # Refusals are recorded like other rejections (with their TTL): a redelivery republishes them.
    assert store.records["r-1"].outcome is Outcome.ADMISSION_REFUSED
    assert store.expiry["r-1"] is not None
    assert store.token_uses == {"good": "r-5"}


def test_one_token_buys_once_in_a_batch_and_across_batches(store) -> None:
    tok = token()
    _, first = run(store, [message(1, tok), message(2, tok)])
    _, later = run(store, [message(3, tok, kind="hold")])

    assert first["r-1"].outcome is Outcome.CONFIRMED
    assert first["r-2"].outcome is Outcome.ADMISSION_REFUSED
    assert first["r-2"].reason == "admission token replayed: already used by reservation r-1"
    assert later["r-3"].outcome is Outcome.ADMISSION_REFUSED
    assert later["r-3"].reason == "admission token replayed: already used by reservation r-1"
    assert store.inventory[SeatKey("e-1", "GA")].available == 9


def test_a_redelivery_of_the_same_reservation_is_a_duplicate_not_a_replay(store) -> None:
    tok = token()
    run(store, [message(1, tok)])
    _, again = run(store, [message(1, tok)])

    assert again["r-1"].outcome is Outcome.CONFIRMED
    assert again["r-1"].duplicate
    assert store.inventory[SeatKey("e-1", "GA")].available == 9


def test_a_replay_is_refused_exactly_once_under_redelivery(store) -> None:
    tok = token()
    run(store, [message(1, tok)])
    _, replay = run(store, [message(2, tok)])
    _, redelivered = run(store, [message(2, tok)])

    assert replay["r-2"].outcome is Outcome.ADMISSION_REFUSED
    assert not replay["r-2"].duplicate
    assert redelivered["r-2"].outcome is Outcome.ADMISSION_REFUSED
    assert redelivered["r-2"].duplicate


def test_a_class_without_admission_ignores_tokens(store) -> None:
    store.add_event("e-1", capacity=10, seat_class="FREE")
    body = {
        "reservation_id": "r-1",
        "event_id": "e-1",
        "seat_class": "FREE",
        "quantity": 1,
        "customer_id": "c",
    }
    _, answers = run(store, [QueueMessage("m-1", json.dumps(body))])

    assert answers["r-1"].outcome is Outcome.CONFIRMED
    assert store.token_uses == {}


def test_a_class_switched_to_admission_refuses_the_write_that_assumed_otherwise(store) -> None:
    key = SeatKey("e-1", "GA")
    store.change_item(key, admission_required=False)
    hints = InventoryHints()
    publisher = RecordingPublisher()

    def send(n: int) -> None:
        reserve_seats(
            [message(n, None)],
            store=store,
            publisher=publisher,
            settings=SETTINGS,
            clock=FakeClock(time=NOW),
            hints=hints,
        )

    send(1)  # sold without a token: the container now assumes the class needs none
    store.change_item(key, admission_required=True)
    send(2)
    send(3)

    assert [o.outcome for o in publisher.published] == [Outcome.CONFIRMED] + [Outcome.ADMISSION_REFUSED] * 2
    assert store.inventory[key].available == 9


def test_a_token_whose_keys_cannot_be_read_is_retried_not_refused(store) -> None:
    def unavailable():
        raise RetryableError("SSM unreachable")

    publisher = RecordingPublisher()
    result = reserve_seats(
        [message(1, token()), message(2, None)],
        store=store,
        publisher=publisher,
        settings=SETTINGS,
        clock=FakeClock(time=NOW),
        admission=TokenVerifier(unavailable),
    )

    assert result.failed_message_ids == ["m-1"]
    assert "admission keys unavailable" in result.handed_back["m-1"]
    assert [o.reservation_id for o in publisher.published] == ["r-2"]
    assert "r-1" not in store.records


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        (5, "admission_token must be a string, got int"),
        ("", "admission_token is 0 characters long; it must be 1 to 1024"),
        ("x" * 1025, "admission_token is 1025 characters long; it must be 1 to 1024"),
    ],
)
def test_a_malformed_admission_token_field_is_invalid(value: object, reason: str) -> None:
    from seat_inventory.parsing import parse_reservation

    body = {
        "reservation_id": "r",
        "event_id": "e",
        "quantity": 1,
        "customer_id": "c",
        "admission_token": value,
    }
    parsed = parse_reservation("m", json.dumps(body), default_seat_class="GA", max_quantity=10)

    assert getattr(parsed, "reason", None) == reason


def test_confirm_and_cancel_take_no_admission_token() -> None:
    from seat_inventory.parsing import parse_reservation

    body = {"type": "confirm", "reservation_id": "r", "admission_token": "t"}
    parsed = parse_reservation("m", json.dumps(body), default_seat_class="GA", max_quantity=10)

    assert getattr(parsed, "reason", None) == "field(s) not allowed with type 'confirm': \"admission_token\""


# ------------------------------------------------------------------ a sharded class


def test_a_sharded_class_spends_each_token_once() -> None:
    store = InMemoryInventoryStore()
    store.add_event("e-1", capacity=40, shards=4, admission_required=True)
    tokens = [token(customer=f"c-{n}", jti=f"t-{n}") for n in range(3)]
    messages = [message(10 * n + k, tokens[n], customer=f"c-{n}") for n in range(3) for k in range(3)]

    _, answers = run(store, messages)

    winners = [a for a in answers.values() if a.outcome is Outcome.CONFIRMED]
    assert sorted(a.customer_id or "" for a in winners) == ["c-0", "c-1", "c-2"]
    assert sum(a.outcome is Outcome.ADMISSION_REFUSED for a in answers.values()) == 6
    assert store.inventory[SeatKey("e-1", "GA")].available == 37
    assert sorted(store.token_uses) == ["t-0", "t-1", "t-2"]


# ------------------------------------------------------------------ the keys at the edge


class FakeSsm:
    def __init__(self, value: str) -> None:
        self.value = value
        self.calls = 0
        self.fail = False

    def get_parameter(self, **kwargs):
        from botocore.exceptions import ClientError

        self.calls += 1
        assert kwargs == {"Name": "/p", "WithDecryption": True}
        if self.fail:
            raise ClientError(
                {"Error": {"Code": "ThrottlingException", "Message": "slow down"}}, "GetParameter"
            )
        return {"Parameter": {"Value": self.value}}


class FakeSession:
    def __init__(self, ssm: FakeSsm) -> None:
        self.ssm = ssm

    def client(self, service: str, **_: object) -> FakeSsm:
        assert service == "ssm"
        return self.ssm


def keys_at(ssm: FakeSsm, clock: list[float]):
    from seat_inventory.wiring import ssm_admission_keys

    return ssm_admission_keys(FakeSession(ssm), "/p", 60, clock=lambda: clock[0])  # type: ignore[arg-type]


def test_the_edge_reads_the_keys_once_per_refresh() -> None:
    ssm, clock = FakeSsm(new_key_ring_text("k1", KEY_1)), [0.0]
    keys = keys_at(ssm, clock)

    assert keys().current == "k1"
    clock[0] = 59
    keys()
    assert ssm.calls == 1
    ssm.value = new_key_ring_text("k2", KEY_2, previous=parse_key_ring(ssm.value))
    clock[0] = 60
    assert keys().current == "k2"
    assert ssm.calls == 2


def test_the_edge_keeps_its_keys_across_a_failed_refresh_for_a_while_then_retries_the_messages() -> None:
    from seat_inventory.wiring import ADMISSION_KEYS_STALE_SECONDS

    ssm, clock = FakeSsm(new_key_ring_text("k1", KEY_1)), [0.0]
    keys = keys_at(ssm, clock)
    keys()
    ssm.fail = True
    clock[0] = 61
    assert keys().current == "k1"  # SSM throttled: the keys read a minute ago still verify
    clock[0] = ADMISSION_KEYS_STALE_SECONDS
    with pytest.raises(RetryableError, match="admission keys: SSM parameter /p not read"):
        keys()


def test_a_malformed_ring_in_the_parameter_is_retried_not_refused() -> None:
    keys = keys_at(FakeSsm('{"current": "k1", "keys": {}}'), [0.0])

    with pytest.raises(RetryableError, match="admission keys: SSM parameter /p: admission keys must be"):
        keys()


def test_a_malformed_ring_is_read_again_at_the_next_message_and_a_fixed_one_is_used() -> None:
    ssm, clock = FakeSsm('{"current": "k1", "keys": {}}'), [0.0]
    keys = keys_at(ssm, clock)
    with pytest.raises(RetryableError):
        keys()

    ssm.value = new_key_ring_text("k1", KEY_1)
    clock[0] = 1  # well within the refresh: the malformed value was not kept

    assert keys().current == "k1"
    assert ssm.calls == 2
    keys()
    assert ssm.calls == 2  # the valid ring is kept for the refresh


class FakeGateSession(FakeSession):
    """The gate also builds DynamoDB and SNS clients, which these tests never call (the SNS client
    is a real one, without credentials that work: the publisher hooks its request events)."""

    def client(self, service: str, **_: object) -> FakeSsm:
        if service == "sns":
            return boto3.client(  # type: ignore[return-value]
                "sns", region_name="us-east-1", aws_access_key_id="k", aws_secret_access_key="s"
            )
        return self.ssm if service == "ssm" else None  # type: ignore[return-value]


def test_the_gate_reads_its_ticket_keys_from_ssm_the_same_way() -> None:
    from seat_inventory.gate_wiring import build_gate
    from seat_inventory.logic.ticket_credentials import ring_text, with_key
    from seat_inventory.settings import Settings

    ssm = FakeSsm('{"current": "t1", "keys": {}}')
    settings = Settings(
        table_name="t",
        outcomes_topic_arn="arn:aws:sns:us-east-1:123456789012:t",
        ticket_key_parameter="/p",
    )
    keys = build_gate(settings, FakeGateSession(ssm)).keys  # type: ignore[arg-type]

    with pytest.raises(RetryableError, match="ticket keys: SSM parameter /p: ticket keys must be"):
        keys()
    ssm.value = ring_text(with_key(None, "t1", b"a" * 32, make_current=True))
    assert keys().current == "t1"  # type: ignore[union-attr]  # the bad value was not kept
    assert keys().current == "t1"  # type: ignore[union-attr]
    assert ssm.calls == 2  # the valid ring is kept for the refresh
    ssm.fail = True
    with pytest.raises(RetryableError, match="ticket keys: SSM parameter /p not read"):
        build_gate(settings, FakeGateSession(ssm)).keys()  # type: ignore[arg-type]
