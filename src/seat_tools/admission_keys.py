"""Admission keys and tokens on the issuer's side (docs/guides/admission.md): a key ring written for the
SSM parameter (a new key, a rotation), tokens signed with its current key (`seats tokens`, the
local crowd, the tests), and a fixed key loader for the local stack and the simulation."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable

from seat_inventory.logic.admission_tokens import KEY_ID, TOKEN_ID, VERSION, KeyRing, KeyRingError, sign
from seat_inventory.logic.key_rings import b64


def new_key_ring_text(key_id: str, secret: bytes, previous: KeyRing | None = None) -> str:
    """A ring whose current key is `key_id` (-> `secret`), keeping `previous`'s keys (a rotation)."""
    if not KEY_ID.fullmatch(key_id):
        raise KeyRingError(f"admission key id {key_id!r} must be 1-32 of A-Z a-z 0-9 _ -")
    keys = {kid: b64(raw) for kid, raw in (previous.keys.items() if previous else ())}
    keys[key_id] = b64(secret)
    return json.dumps({"current": key_id, "keys": keys}, sort_keys=True)


def ring_text(ring: KeyRing) -> str:
    """The ring as `parse_key_ring` reads it."""
    keys = {kid: b64(raw) for kid, raw in ring.keys.items()}
    return json.dumps({"current": ring.current, "keys": keys}, sort_keys=True)


def issue_token(
    ring: KeyRing, *, event_id: str, customer_id: str, expires_at: int, token_id: str | None = None
) -> str:
    """A token for `customer_id` at `event_id` until `expires_at`, signed with the ring's current key."""
    token_id = token_id or uuid.uuid4().hex
    if not TOKEN_ID.fullmatch(token_id):
        raise ValueError(f"token id {token_id!r} must be 1-64 of A-Z a-z 0-9 . _ : @ -")
    claims = {"cid": customer_id, "eid": event_id, "exp": int(expires_at), "jti": token_id}
    payload = b64(json.dumps(claims, sort_keys=True, separators=(",", ":")).encode())
    signed = f"{VERSION}.{ring.current}.{payload}"
    return f"{signed}.{b64(sign(ring.keys[ring.current], signed))}"


def fixed_keys(ring: KeyRing | None) -> Callable[[], KeyRing | None]:
    """A key loader that always gives `ring` (tests, the local stack, the simulation)."""
    return lambda: ring
