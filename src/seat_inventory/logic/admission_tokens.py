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

import hashlib
import hmac
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from seat_inventory.logic.key_rings import B64, key_id_pattern, read_ring, unb64
from seat_inventory.models import AdmissionCheck, iso_utc

VERSION = "v1"
FORMAT = f"{VERSION}.<key id>.<payload>.<signature>"
MAX_TOKEN_LENGTH = 1024
KEY_ID_LENGTH = 32
KEY_ID = key_id_pattern(KEY_ID_LENGTH)
TOKEN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@-]{0,63}")
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
    current, keys = read_ring(text, what="admission key", longest_id=KEY_ID_LENGTH, error=KeyRingError)
    return KeyRing(current=current, keys=keys)


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
    if len(parts) != 4 or parts[0] != VERSION or not all(B64.fullmatch(p) for p in parts[1:]):
        return AdmissionCheck(refusal=f"admission token malformed: not {FORMAT}")
    _, key_id, payload, signature = parts
    key = keys.get(key_id)
    if key is None:
        return AdmissionCheck(refusal=f"admission token forged: unknown key id {key_id[:32]!r}")
    expected = sign(key, f"{VERSION}.{key_id}.{payload}")
    if not hmac.compare_digest(expected, unb64(signature)):
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


def _claims(payload: str) -> tuple[str, str, str, int] | None:
    """The token id, event, customer and expiry of a signed payload; None when unreadable."""
    try:
        data = json.loads(unb64(payload))
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
