"""A reference offline scanner (docs/guides/checkin.md): what a scanner at a door does without the
network, from `seats checkin export` alone, and the journal it uploads later.

It verifies each secret with the event's public keys, refuses what the export revokes (void
tickets, generations below the export's minimum), and lets a ticket in once on its own (or again
after an exit on a list that allows re-entry). It cannot know what other scanners did meanwhile:
that is what the upload's conflicts report.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from seat_inventory.gate_models import Direction, GateResult, SecretRefusal
from seat_inventory.logic.ticket_credentials import public_key_bytes, read_secret

EXPORT_FORMAT = "seats-checkin-export-1"


class ExportError(ValueError):
    """The export file is not one `seats checkin export` wrote."""


@dataclass
class OfflineScanner:
    """One scanner at one gate on one list, deciding alone from an export."""

    export: dict[str, Any]
    gate: str
    list_name: str
    inside: dict[str, bool] = field(default_factory=dict)  # ticket "series:serial" -> inside
    journal: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.export.get("format") != EXPORT_FORMAT:
            raise ExportError(f"not a check-in export (format {self.export.get('format')!r})")
        if self.list_name not in self.export.get("lists", {}):
            raise ExportError(f"the export has no check-in list {self.list_name!r}")
        self._keys = {kid: public_key_bytes(text) for kid, text in self.export["public_keys"].items()}
        self._reentry = bool(self.export["lists"][self.list_name]["allow_reentry"])

    @classmethod
    def from_file(cls, path: Path, *, gate: str, list_name: str) -> OfflineScanner:
        try:
            export = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            raise ExportError(f"{path}: {exc}") from exc
        return cls(export, gate, list_name)

    def scan(
        self, secret: str, *, at_ms: int, direction: Direction = Direction.IN, nonce: str | None = None
    ) -> tuple[GateResult, str]:
        """What the scanner shows, in one line; a scan that lets someone in or out is journaled."""
        claim = read_secret(secret, self._keys, event_id=self.export["event_id"])
        if isinstance(claim, SecretRefusal):
            return claim.result, claim.reason
        key = f"{claim.ticket.series}:{claim.ticket.serial}"
        if key in self.export.get("void", []):
            return GateResult.CANCELLED, "the ticket is void: its reservation was cancelled"
        if claim.generation < int(self.export.get("min_generation", {}).get(key, 0)):
            return GateResult.REVOKED, "this secret was revoked: the ticket was passed on"
        if direction is Direction.OUT:
            if not self._reentry:
                return GateResult.INVALID, f"check-in list {self.list_name} allows no re-entry"
            if not self.inside.get(key):
                return GateResult.NOT_CHECKED_IN, f"not checked in on {self.list_name} at this scanner"
            self.inside[key] = False
            self._journal(secret, at_ms, direction, nonce)
            return GateResult.EXITED, "let out"
        if key in self.inside and (self.inside[key] or not self._reentry):
            return GateResult.ALREADY_CHECKED_IN, f"already checked in on {self.list_name} at this scanner"
        self.inside[key] = True
        self._journal(secret, at_ms, direction, nonce)
        seat = claim.seat_class + (f" seat {claim.seat}" if claim.seat else "")
        return GateResult.ADMITTED, f"admitted (offline): {seat}"

    def _journal(self, secret: str, at_ms: int, direction: Direction, nonce: str | None) -> None:
        self.journal.append(
            {
                "event_id": self.export["event_id"],
                "list": self.list_name,
                "gate": self.gate,
                "nonce": nonce or uuid.uuid4().hex,
                "secret": secret,
                "scanned_at": at_ms,
                "direction": direction.value,
            }
        )
