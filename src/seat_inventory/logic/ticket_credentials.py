"""Ticket secrets (docs/guides/checkin.md): sign and verify, pure (the keys are passed in).

A secret is what a phone shows as a QR code: four dot-separated parts,
`T1.<key id>.<payload>.<signature>`:
- `T1`: the format's version;
- `<key id>`: the ring key whose event key signed it (`[A-Za-z0-9_-]`, 1-16 characters);
- `<payload>`: base64url (no padding) of compact JSON `{"e": event, "s": series, "n": serial,
  "c": seat class, "p": seat (a mapped class's, else absent), "g": holder generation}`;
- `<signature>`: base64url (no padding) of the Ed25519 signature of `T1.<key id>.<payload>`.

Each event signs with its own key pair, derived from a ring key: the 32-byte seed is libsodium's
keyed BLAKE2b of the event id (key: the ring secret, personalisation `seats-tickets-1`). A scanner
gets the event's public keys only (`seats checkin export`): it can check every ticket of its event
and sign none, and a secret signed with another event's key does not verify. Ed25519 signatures
are deterministic: the same ticket, generation and key always give the same secret, so it is
signed when shown and never stored.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache

import nacl.encoding
import nacl.exceptions
import nacl.hash
import nacl.signing
import nacl.utils

from seat_inventory.gate_models import GateResult, SecretRefusal, TicketClaim, TicketRef
from seat_inventory.logic.key_rings import B64, MIN_KEY_BYTES, b64, key_id_pattern, read_ring, unb64

VERSION = "T1"
FORMAT = f"{VERSION}.<key id>.<payload>.<signature>"
# A secret is at most this long (about 200 characters in practice: a QR code of version 9-10).
MAX_SECRET_LENGTH = 512
PUBLIC_KEY_BYTES = 32
SIGNATURE_BYTES = 64
_KEY_ID_LENGTH = 16
_KEY_ID = key_id_pattern(_KEY_ID_LENGTH)
_PERSON = b"seats-tickets-1"


class TicketKeyError(ValueError):
    """The ticket key ring (the SSM parameter's value, or a key file) is malformed."""


@dataclass(frozen=True, slots=True)
class TicketKeyRing:
    """The ticket keys: `keys` (key id -> secret); `current` signs, every key verifies.

    A rotation adds a key first (verifying only: scanners learn its public key from the next
    export), then makes it current, and retires an old key only once no secret signed with it
    must still admit (docs/guides/checkin.md, "Keys and rotation").
    """

    current: str
    keys: Mapping[str, bytes] = field(default_factory=dict)

    def signing_key(self, event_id: str) -> nacl.signing.SigningKey:
        return _event_key(self.keys[self.current], event_id)

    def public_keys(self, event_id: str) -> dict[str, bytes]:
        """The event's public key of every ring key, by key id (what a scanner verifies with)."""
        return {kid: bytes(_event_key(secret, event_id).verify_key) for kid, secret in self.keys.items()}


@lru_cache(maxsize=4096)
def _event_key(ring_secret: bytes, event_id: str) -> nacl.signing.SigningKey:
    seed = nacl.hash.blake2b(
        event_id.encode(), digest_size=32, key=ring_secret, person=_PERSON, encoder=nacl.encoding.RawEncoder
    )
    return nacl.signing.SigningKey(seed)


def parse_key_ring(text: str) -> TicketKeyRing:
    """Reads `{"current": "<key id>", "keys": {"<key id>": "<base64url secret>", ...}}`."""
    current, keys = read_ring(text, what="ticket key", longest_id=_KEY_ID_LENGTH, error=TicketKeyError)
    return TicketKeyRing(current=current, keys=keys)


def ring_text(ring: TicketKeyRing) -> str:
    """The ring as `parse_key_ring` reads it."""
    keys = {kid: b64(raw) for kid, raw in sorted(ring.keys.items())}
    return json.dumps({"current": ring.current, "keys": keys}, sort_keys=True)


def with_key(ring: TicketKeyRing | None, key_id: str, secret: bytes, *, make_current: bool) -> TicketKeyRing:
    """`ring` with `key_id` added (or replaced), made current or verifying only."""
    if not _KEY_ID.fullmatch(key_id):
        raise TicketKeyError(f"ticket key id {key_id!r} must be 1-16 of A-Z a-z 0-9 _ -")
    if len(secret) < MIN_KEY_BYTES:
        raise TicketKeyError(f"ticket key {key_id!r} has {len(secret)} bytes; at least {MIN_KEY_BYTES}")
    keys = {**(ring.keys if ring else {}), key_id: secret}
    current = key_id if make_current or ring is None else ring.current
    return TicketKeyRing(current=current, keys=keys)


def promote(ring: TicketKeyRing, key_id: str) -> TicketKeyRing:
    """`ring` signing with `key_id` from now on (it must be in the ring)."""
    if key_id not in ring.keys:
        raise TicketKeyError(f"ticket key {key_id!r} is not in the ring")
    return TicketKeyRing(current=key_id, keys=dict(ring.keys))


def retire(ring: TicketKeyRing, key_id: str) -> TicketKeyRing:
    """`ring` without `key_id` (not the current key): its secrets are forged from then on."""
    if key_id == ring.current:
        raise TicketKeyError(f"ticket key {key_id!r} is the current key; promote another one first")
    if key_id not in ring.keys:
        raise TicketKeyError(f"ticket key {key_id!r} is not in the ring")
    return TicketKeyRing(current=ring.current, keys={k: v for k, v in ring.keys.items() if k != key_id})


def sign_ticket(ring: TicketKeyRing, claim: TicketClaim) -> str:
    """The secret of `claim` signed with the current key's key of the claim's event (the claim's
    own `key_id` is ignored: a secret is always signed with the current key)."""
    ticket = claim.ticket
    document: dict[str, object] = {
        "e": ticket.event_id,
        "s": ticket.series,
        "n": ticket.serial,
        "c": claim.seat_class,
        "g": claim.generation,
    }
    if claim.seat is not None:
        document["p"] = claim.seat
    payload = b64(json.dumps(document, sort_keys=True, separators=(",", ":")).encode())
    signed = f"{VERSION}.{ring.current}.{payload}"
    signature = ring.signing_key(ticket.event_id).sign(signed.encode("ascii")).signature
    return f"{signed}.{b64(signature)}"


def read_secret(
    secret: object, public_keys: Mapping[str, bytes], *, event_id: str
) -> TicketClaim | SecretRefusal:
    """What `secret` says if it is a ticket of `event_id` signed with one of `public_keys` (the
    event's, by key id); else why not, in one line. Checked in this order: a string of at most
    MAX_SECRET_LENGTH characters, four parts, readable claims, this event, a known key id, the
    signature."""
    if not isinstance(secret, str) or not secret:
        return _refusal(GateResult.INVALID, "no secret (the text of the ticket's QR code) was sent")
    if len(secret) > MAX_SECRET_LENGTH:
        return _refusal(
            GateResult.INVALID, f"the secret has {len(secret)} characters; at most {MAX_SECRET_LENGTH}"
        )
    parts = secret.split(".")
    if len(parts) != 4 or parts[0] != VERSION or not all(B64.fullmatch(p) for p in parts[1:]):
        return _refusal(GateResult.INVALID, f"the secret is not a ticket: not {FORMAT}")
    _, key_id, payload, signature = parts
    claim = _claim(payload, key_id)
    if claim is None:
        return _refusal(GateResult.INVALID, "the secret is not a ticket: its claims are unreadable")
    if claim.ticket.event_id != event_id:
        return _refusal(
            GateResult.WRONG_EVENT, f"the ticket is for event {claim.ticket.event_id[:64]}, not {event_id}"
        )
    public_key = public_keys.get(key_id)
    if public_key is None or not _KEY_ID.fullmatch(key_id):
        return _refusal(
            GateResult.FORGED, f"the ticket is forged: key {key_id[:16]!r} is not one of {event_id}'s"
        )
    raw = unb64(signature)
    try:
        if len(raw) != SIGNATURE_BYTES:
            raise nacl.exceptions.BadSignatureError("length")
        nacl.signing.VerifyKey(public_key).verify(f"{VERSION}.{key_id}.{payload}".encode("ascii"), raw)
    except nacl.exceptions.BadSignatureError:
        return _refusal(
            GateResult.FORGED, f"the ticket is forged: its signature does not verify with {event_id}'s key"
        )
    return claim


def claim_of(secret: str) -> TicketClaim | None:
    """What a secret claims, unverified (to find which event's keys verify it); None if unreadable."""
    parts = secret.split(".") if isinstance(secret, str) and len(secret) <= MAX_SECRET_LENGTH else []
    if len(parts) != 4 or parts[0] != VERSION or not all(B64.fullmatch(p) for p in parts[1:]):
        return None
    return _claim(parts[2], parts[1])


def public_key_text(key: bytes) -> str:
    return b64(key)


def public_key_bytes(text: str) -> bytes:
    """A public key as `seats checkin export` writes it (base64url), checked for its length."""
    raw = unb64(text) if isinstance(text, str) and B64.fullmatch(text) else b""
    if len(raw) != PUBLIC_KEY_BYTES:
        raise TicketKeyError(f"a public key is base64url of {PUBLIC_KEY_BYTES} bytes")
    return raw


def new_secret() -> bytes:
    """32 random bytes for a new ring key (`seats tickets keygen`)."""
    return nacl.utils.random(MIN_KEY_BYTES)


def _refusal(result: GateResult, reason: str) -> SecretRefusal:
    return SecretRefusal(result, reason)


def _claim(payload: str, key_id: str) -> TicketClaim | None:
    try:
        data = json.loads(unb64(payload))
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None
    if not isinstance(data, dict):
        return None
    event_id, series, serial, seat_class, generation = (data.get(k) for k in ("e", "s", "n", "c", "g"))
    seat = data.get("p")
    if not (isinstance(event_id, str) and event_id and isinstance(seat_class, str) and seat_class):
        return None
    if not all(
        isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in (series, serial, generation)
    ):
        return None
    if seat is not None and not isinstance(seat, str):
        return None
    assert isinstance(series, int) and isinstance(serial, int) and isinstance(generation, int)
    return TicketClaim(TicketRef(event_id, series, serial), seat_class, seat, generation, key_id)
