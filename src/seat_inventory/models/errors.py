"""The errors the layers share: transient faults to retry, a broken invariant, operator refusals."""

from __future__ import annotations


class RetryableError(Exception):
    """A transient fault (throttling, transaction conflict, service error): retry the messages."""


class TransactionConflict(RetryableError):
    """Another transaction was writing the same item; retrying shortly usually succeeds."""


class Throttled(RetryableError):
    """DynamoDB refused the request for throughput (a hot partition's units were spent, or the
    table's): like a conflict, not a failure but a wait for the next units; retrying after a
    back-off usually succeeds."""


class StoreInconsistency(RetryableError):
    """The stored state breaks an invariant (a guard that cannot fail on consistent data failed).

    In the reservations handler only the affected messages are handed back; after
    MaxReceiveCount receives they reach the dead-letter queue, whose alarm calls an operator. In
    the hold sweeper the seat class is not retried, and the run fails after the rest of its work
    (`SweepHoldsErrorsAlarm`, `HoldsOverdueAlarm`). Nothing is written meanwhile.
    """


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
