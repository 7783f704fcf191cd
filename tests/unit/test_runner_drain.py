"""`LocalRunner.drain`: when the queue counts as drained, with and without the caller's count of
messages sent. No worker is started: the queue depth is a list of readings, the deletes the
runner's own counter (what its workers' reports add up to)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from seat_tools.local.runner import LocalRunner, RunnerConfig


def _runner(deleted: int) -> LocalRunner:
    config = RunnerConfig(
        queue_url="http://127.0.0.1:1/q",
        queue_arn="arn:aws:sqs:us-east-1:123456789012:q",
        environment={},
        function_name="f",
        function_arn="arn:aws:lambda:us-east-1:123456789012:function:f",
        region="us-east-1",
        handler="m.f",
    )
    runner = LocalRunner(config)
    runner._stats.deleted = deleted
    return runner


def _depth(readings: list[tuple[int, int]]) -> tuple[Callable[[], tuple[int, int]], list[int]]:
    """A depth() that answers `readings` in turn (then the last one), and the calls it had."""
    calls: list[int] = []
    answers: Iterator[tuple[int, int]] = iter(readings)

    def depth() -> tuple[int, int]:
        calls.append(1)
        return next(answers, readings[-1])

    return depth, calls


def test_every_sent_message_deleted_and_an_empty_queue_ends_the_drain_at_that_reading() -> None:
    depth, calls = _depth([(5, 2), (0, 1), (0, 0)])
    assert _runner(deleted=7).drain(depth, quiet_s=3600, poll_s=0, deleted=7)
    assert len(calls) == 3  # not one reading more: no quiet period waited out


def test_an_empty_queue_with_messages_still_being_deleted_is_not_drained_yet() -> None:
    # an in-flight count at 0 while the last deletes are not counted: the quiet period decides
    depth, calls = _depth([(0, 0)])
    assert not _runner(deleted=6).drain(depth, quiet_s=3600, timeout_s=0.2, poll_s=0.01, deleted=7)
    assert len(calls) > 1


def test_without_a_count_or_short_of_it_the_queue_must_stay_empty_for_the_quiet_period() -> None:
    # a dead-lettered message is never deleted: the count falls short and the quiet period decides
    for deleted in (None, 7):
        depth, calls = _depth([(1, 0), (0, 0)])
        assert _runner(deleted=6).drain(depth, quiet_s=0, poll_s=0, deleted=deleted)
        assert len(calls) == 3  # the first empty reading starts the quiet period, the next ends it


def test_a_queue_that_never_empties_times_out() -> None:
    depth, _ = _depth([(0, 1)])
    assert not _runner(deleted=7).drain(depth, timeout_s=0.05, poll_s=0.01, deleted=7)
