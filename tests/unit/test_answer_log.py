"""The reserve function's log: one `batch answered` line per batch naming every answer."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator

import pytest

from seat_inventory.models import BatchResult, Outcome, ReservationOutcome
from seat_inventory.observability import logger, record_batch


@pytest.fixture
def log_lines() -> Iterator[io.StringIO]:
    handler = logger.registered_handler
    stream = io.StringIO()
    previous = handler.setStream(stream)  # type: ignore[attr-defined]
    try:
        yield stream
    finally:
        handler.setStream(previous)  # type: ignore[attr-defined]


def _outcome(
    reservation_id: str, outcome: Outcome, reason: str, *, duplicate: bool = False
) -> ReservationOutcome:
    return ReservationOutcome(
        reservation_id,
        outcome,
        reason,
        "e-1",
        "GA",
        1,
        "c-1",
        duplicate=duplicate,
        message_id=f"m-{reservation_id}",
    )


def test_a_batch_is_logged_in_one_line_naming_each_answer_with_its_outcome(log_lines: io.StringIO) -> None:
    result = BatchResult(
        published=[
            _outcome("r-1", Outcome.CONFIRMED, ""),
            _outcome("r-2", Outcome.SOLD_OUT, "no seats left"),
            _outcome("r-3", Outcome.CONFIRMED, "", duplicate=True),
        ],
        failed_message_ids=["m-9"],
        handed_back={"m-9": "throttled"},
    )
    record_batch(result)
    lines = [json.loads(line) for line in log_lines.getvalue().splitlines()]
    answered = [line for line in lines if line["message"] == "batch answered"]
    assert len(answered) == 1
    assert answered[0]["answers"] == [
        {"reservation_id": "r-1", "outcome": "CONFIRMED", "message_id": "m-r-1"},
        {"reservation_id": "r-2", "outcome": "SOLD_OUT", "message_id": "m-r-2", "reason": "no seats left"},
        {"reservation_id": "r-3", "outcome": "CONFIRMED", "message_id": "m-r-3", "duplicate": True},
    ]
    assert answered[0]["outcomes"] == {"CONFIRMED": 2, "SOLD_OUT": 1}
    handed_back = [line for line in lines if line["message"] == "messages handed back to the queue"]
    assert [(line["reason"], line["message_ids"]) for line in handed_back] == [("throttled", ["m-9"])]


def test_a_batch_with_no_answer_logs_no_answer_line(log_lines: io.StringIO) -> None:
    record_batch(BatchResult(failed_message_ids=["m-1"], handed_back={"m-1": "conflicts"}))
    messages = [json.loads(line)["message"] for line in log_lines.getvalue().splitlines()]
    assert messages == ["messages handed back to the queue"]
