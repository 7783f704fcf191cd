"""Admission tokens (docs/guides/admission.md): verified, pure (no AWS; the keys are passed in).

A token is four dot-separated parts, `v1.<key id>.<payload>.<signature>`:
- `v1`: the format's version;
- `<key id>`: which key signed it (`[A-Za-z0-9_-]`, 1-32 characters), so keys can rotate;
- `<payload>`: base64url (no padding) of compact JSON `{"cid": customer, "eid": event,
  "exp": expiry in epoch seconds, "jti": token id}`;
- `<signature>`: base64url (no padding) of HMAC-SHA256(key, "v1.<key id>.<payload>").

HMAC-SHA256 from the standard library (`hmac`, `hashlib`): the issuer (a waiting room;
`seat_tools.admission_keys` issues them for the tools) and the service share a secret, the format
is four fields, and a JWT library would add a dependency, a cold-start import and algorithm
negotiation (`alg: none`, RS/HS confusion) to get the same check.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from seat_inventory.models import AdmissionCheck, iso_utc

VERSION = "v1"
FORMAT = f"{VERSION}.<key id>.<payload>.<signature>"
MAX_TOKEN_LENGTH = 1024
MIN_KEY_BYTES = 32
KEY_ID = re.compile(r"[A-Za-z0-9_-]{1,32}")
TOKEN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@-]{0,63}")
_B64 = re.compile(r"[A-Za-z0-9_-]+")
# A token used by a reservation is kept this long after its expiry (the TTL of its use item):
# it no longer admits anyone by then, whatever the clocks of the containers say.
TOKEN_USE_GRACE_SECONDS = 86_400

MISSING = "admission token missing"


class KeyRingError(ValueError):
    """The key ring (the SSM parameter's value, or a key file) is malformed."""


@dataclass(frozen=True, slots=True)
class KeyRing:
    """The admission keys: `keys` (key id -> secret) are all accepted; `current` signs new tokens.

    During a rotation the ring holds the new key and the previous one (docs/guides/admission.md).
    """

    current: str
    keys: Mapping[str, bytes] = field(default_factory=dict)


def parse_key_ring(text: str) -> KeyRing:
    """Reads `{"current": "<key id>", "keys": {"<key id>": "<base64url secret>", ...}}`."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise KeyRingError(f"admission keys are not JSON: {exc.msg}") from exc
    if not isinstance(data, dict) or not isinstance(data.get("keys"), dict) or not data["keys"]:
        raise KeyRingError('admission keys must be {"current": "<key id>", "keys": {"<key id>": "<secret>"}}')
    keys: dict[str, bytes] = {}
    for key_id, secret in data["keys"].items():
        if not KEY_ID.fullmatch(key_id):
            raise KeyRingError(f"admission key id {key_id!r} must be 1-32 of A-Z a-z 0-9 _ -")
        if not isinstance(secret, str) or not _B64.fullmatch(secret.rstrip("=")):
            raise KeyRingError(f"admission key {key_id!r} must be a base64url string")
        raw = _unb64(secret.rstrip("="))
        if len(raw) < MIN_KEY_BYTES:
            raise KeyRingError(f"admission key {key_id!r} has {len(raw)} bytes; at least {MIN_KEY_BYTES}")
        keys[key_id] = raw
    current = data.get("current")
    if current not in keys:
        raise KeyRingError(f"admission keys: current key id {current!r} is not among the keys")
    return KeyRing(current=str(current), keys=keys)


def verify_token(
    token: str | None, keys: Mapping[str, bytes], *, event_id: str, customer_id: str, now: float
) -> AdmissionCheck:
    """Whether `token` admits `customer_id` to `event_id` at `now`; the refusal says why not.

    Checked in this order: present, well-formed, a known key id, the signature (constant-time
    compare), the claims, unexpired, this event, this customer. Whether the token was used
    already is the store's to say (its use is written with the seats).
    """
    if token is None:
        return AdmissionCheck(refusal=MISSING)
    parts = token.split(".") if len(token) <= MAX_TOKEN_LENGTH else []
    if len(parts) != 4 or parts[0] != VERSION or not all(_B64.fullmatch(p) for p in parts[1:]):
        return AdmissionCheck(refusal=f"admission token malformed: not {FORMAT}")
    _, key_id, payload, signature = parts
    key = keys.get(key_id)
    if key is None:
        return AdmissionCheck(refusal=f"admission token forged: unknown key id {key_id[:32]!r}")
    expected = sign(key, f"{VERSION}.{key_id}.{payload}")
    if not hmac.compare_digest(expected, _unb64(signature)):
        return AdmissionCheck(refusal="admission token forged: the signature does not verify")
    claims = _claims(payload)
    if claims is None:
        return AdmissionCheck(refusal="admission token malformed: signed claims unreadable")
    token_id, token_event, token_customer, expires_at = claims
    if now >= expires_at:
        return AdmissionCheck(token_id, expires_at, f"admission token expired at {iso_utc(expires_at)}")
    if token_event != event_id:
        return AdmissionCheck(token_id, expires_at, f"admission token is for another event, not {event_id}")
    if token_customer != customer_id:
        return AdmissionCheck(token_id, expires_at, "admission token is for another customer")
    return AdmissionCheck(token_id, expires_at, None)


def replay_refusal(reservation_id: str) -> str:
    """The refusal of a token another reservation used first."""
    return f"admission token replayed: already used by reservation {reservation_id}"


def use_expires_at(check: AdmissionCheck) -> int:
    """The TTL of a token's use item."""
    assert check.expires_at is not None
    return check.expires_at + TOKEN_USE_GRACE_SECONDS


class TokenVerifier:
    """Verifies tokens with the keys `load_keys` gives (the edge's cached SSM read, or a fixed ring).

    Keys are asked for only when a message carries a token: sales without admission never read
    them. `load_keys` raises `RetryableError` when the keys cannot be read (the message is retried).
    """

    def __init__(self, load_keys: Callable[[], KeyRing | None]) -> None:
        self._load_keys = load_keys

    def check(self, token: str | None, *, event_id: str, customer_id: str, now: float) -> AdmissionCheck:
        if token is None:
            return AdmissionCheck(refusal=MISSING)
        ring = self._load_keys()
        keys: Mapping[str, bytes] = ring.keys if ring is not None else {}
        return verify_token(token, keys, event_id=event_id, customer_id=customer_id, now=now)


def sign(key: bytes, signed: str) -> bytes:
    return hmac.new(key, signed.encode("ascii"), hashlib.sha256).digest()


def _unb64(text: str) -> bytes:
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        return b""


def _claims(payload: str) -> tuple[str, str, str, int] | None:
    """The token id, event, customer and expiry of a signed payload; None when unreadable."""
    try:
        data = json.loads(_unb64(payload))
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None
    if not isinstance(data, dict):
        return None
    token_id, event_id, customer_id, expires_at = (data.get(k) for k in ("jti", "eid", "cid", "exp"))
    if not (isinstance(token_id, str) and TOKEN_ID.fullmatch(token_id)):
        return None
    if not (isinstance(event_id, str) and isinstance(customer_id, str)):
        return None
    if isinstance(expires_at, bool) or not isinstance(expires_at, int):
        return None
    return token_id, event_id, customer_id, expires_at
