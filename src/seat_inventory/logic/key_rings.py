"""What the admission keys and the ticket keys share: the ring's JSON and base64url without padding.

A ring is `{"current": "<key id>", "keys": {"<key id>": "<base64url secret>", ...}}`: every key
verifies, `current` signs (docs/guides/admission.md, docs/guides/checkin.md).
"""

from __future__ import annotations

import base64
import binascii
import json
import re

MIN_KEY_BYTES = 32
B64 = re.compile(r"[A-Za-z0-9_-]+")


def key_id_pattern(longest: int) -> re.Pattern[str]:
    """A key id: 1 to `longest` of A-Z a-z 0-9 _ -."""
    return re.compile(rf"[A-Za-z0-9_-]{{1,{longest}}}")


def read_ring(
    text: str, *, what: str, longest_id: int, error: type[ValueError]
) -> tuple[str, dict[str, bytes]]:
    """The current key id and the keys of a ring's JSON; `error` names what is wrong (`what`:
    "admission key", "ticket key"; key ids of 1 to `longest_id` characters)."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise error(f"{what}s are not JSON: {exc.msg}") from exc
    if not isinstance(data, dict) or not isinstance(data.get("keys"), dict) or not data["keys"]:
        raise error(f'{what}s must be {{"current": "<key id>", "keys": {{"<key id>": "<secret>"}}}}')
    key_id = key_id_pattern(longest_id)
    keys: dict[str, bytes] = {}
    for kid, secret in data["keys"].items():
        if not key_id.fullmatch(kid):
            raise error(f"{what} id {kid!r} must be 1-{longest_id} of A-Z a-z 0-9 _ -")
        raw = (
            unb64(secret.rstrip("="))
            if isinstance(secret, str) and B64.fullmatch(secret.rstrip("="))
            else b""
        )
        if len(raw) < MIN_KEY_BYTES:
            raise error(f"{what} {kid!r} must be base64url of at least {MIN_KEY_BYTES} bytes")
        keys[kid] = raw
    current = data.get("current")
    if current not in keys:
        raise error(f"{what}s: current key id {current!r} is not among the keys")
    return str(current), keys


def b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def unb64(text: str) -> bytes:
    """The bytes of base64url with or without padding; empty when it is not base64url."""
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        return b""
