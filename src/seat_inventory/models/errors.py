"""The errors the layers share: transient faults to retry, and a broken invariant."""

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
    """The stored state breaks an invariant (a guard that cannot fail on consistent data failed):
    nothing is written; the messages go on to the dead-letter queue, the sweeper reports the class."""
