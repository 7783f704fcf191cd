"""The interfaces the domain logic needs from the outside world (DynamoDB, SNS, the clock).

The real implementations live in `seat_inventory.dal` and `seat_inventory.publishing`; the unit
tests use in-memory fakes of the same shape.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from seat_inventory.models import ReservationOutcome, SeatClassInventory, SeatKey


@dataclass(frozen=True, slots=True)
class WriteRefused:
    """A transaction that DynamoDB cancelled because a condition failed, and what it told us.

    `inventory_refused` is True when the inventory guard failed; `inventory` then holds the item
    as it was (too few seats left), or is None when there is no such item (unknown event).
    `already_recorded` maps each reservation id whose record already existed to the answer
    stored with it: those requests were answered before and must not take seats again.
    """

    inventory_refused: bool
    inventory: SeatClassInventory | None
    already_recorded: Mapping[str, ReservationOutcome] = field(default_factory=dict)


class InventoryStore(Protocol):
    """Persistence of inventory and of the answer recorded for each reservation id."""

    def commit_outcomes(
        self,
        key: SeatKey,
        outcomes: Sequence[ReservationOutcome],
        *,
        seats_taken: int,
        rejection_expires_at: int,
    ) -> WriteRefused | None:
        """Atomically takes `seats_taken` seats (if any) and records every outcome.

        Returns None when everything committed, a `WriteRefused` when a condition failed (then
        nothing was written), and raises `RetryableError` on a transient fault.
        """
        ...

    def read_inventory(self, key: SeatKey) -> SeatClassInventory | None:
        """The inventory item read strongly consistently, or None when there is none.

        Costs a read, never a write: used instead of a doomed conditional write once a seat
        class is known to be (nearly) sold out.
        """
        ...


class OutcomePublisher(Protocol):
    """Delivers outcomes to subscribers."""

    def publish(self, outcomes: Sequence[ReservationOutcome]) -> list[ReservationOutcome]:
        """Publishes every outcome; returns the ones that could not be published."""
        ...


class Clock(Protocol):
    def now(self) -> float: ...

    def sleep(self, seconds: float) -> None: ...
