"""What the operator's commands refuse, or cannot tell (`seats event ...`)."""

from __future__ import annotations


class OperatorOutcomeUnknown(Exception):
    """An operator change got no answer from DynamoDB, and neither did the reads that would tell
    whether it was applied: it may or may not have been. Not a retryable error: sending the change
    again under a new operation id could apply it twice."""


class EventAlreadyExists(Exception):
    """`create_event` was asked to create a seat class that already exists."""


class UnknownSeatClass(Exception):
    """An operator change named a seat class that has no inventory item."""


class InventoryChangeRefused(Exception):
    """An operator change would break the inventory's invariant (e.g. capacity below sold + held)."""


class WaitlistTakesNewSeats(InventoryChangeRefused):
    """Seats added to a class with an open waiting list go to the list (`add_waitlist_seats`), not
    on sale past the people waiting."""
