"""The Redis peer's pure parts: its server's settings, the script's answers, its keys, the loss
count after a kill, and the report's rows. No server: tests/local/test_redis_peer.py runs one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from redis.crc import key_slot

from seat_inventory.models import Outcome, SeatKey
from seat_tools.bench import redis_design, report
from seat_tools.bench.redis_kill import KillResult, count_loss
from seat_tools.bench.redis_peer import (
    AOF_EVERYSEC,
    DEBIAN_DEFAULT,
    IN_MEMORY,
    Answer,
    class_keys,
    parse_answer,
    server_config,
)


def _directives(text: str) -> list[str]:
    return [line for line in text.splitlines() if line]


def test_the_server_listens_on_localhost_only_with_its_files_in_the_given_folder() -> None:
    lines = _directives(server_config(6390, Path("data-dir"), DEBIAN_DEFAULT))
    assert lines[:6] == [
        "bind 127.0.0.1",
        "port 6390",
        "protected-mode yes",
        "daemonize no",
        'logfile ""',
        'dir "data-dir"',
    ]


def test_each_persistence_setting_writes_its_directives() -> None:
    debian = _directives(server_config(1, Path("/d"), DEBIAN_DEFAULT))
    assert "save 3600 1 300 100 60 10000" in debian and "appendonly no" in debian
    assert not any(line.startswith("appendfsync") for line in debian)
    aof = _directives(server_config(1, Path("/d"), AOF_EVERYSEC))
    assert {"appendonly yes", "appendfsync everysec", "save 3600 1 300 100 60 10000"} <= set(aof)
    memory = _directives(server_config(1, Path("/d"), IN_MEMORY))
    assert 'save ""' in memory and "appendonly no" in memory
    assert (DEBIAN_DEFAULT.snapshots, AOF_EVERYSEC.snapshots, IN_MEMORY.snapshots) == (True, True, False)
    assert (DEBIAN_DEFAULT.append_only, AOF_EVERYSEC.append_only, IN_MEMORY.append_only) == (
        False,
        True,
        False,
    )


def test_the_scripts_replies_parse_into_answers() -> None:
    assert parse_answer(["CONFIRMED", 7, 0]) == Answer(Outcome.CONFIRMED, 7, False)
    assert parse_answer([b"CONFIRMED", 2, 1]) == Answer(Outcome.CONFIRMED, 2, True)
    assert parse_answer(["SOLD_OUT", 1, 0]).outcome is Outcome.SOLD_OUT
    assert parse_answer(["UNKNOWN_EVENT", 0, 0]).outcome is Outcome.UNKNOWN_EVENT


@pytest.mark.parametrize(
    "reply", [["CONFIRMED", 1], ["HELD", 1, 0], ["CONFIRMED", 1, 2], ["CONFIRMED", "x", 0]]
)
def test_a_reply_the_script_cannot_give_is_refused(reply: list[Any]) -> None:
    with pytest.raises(ValueError):
        parse_answer(reply)


def test_a_class_keys_share_one_cluster_slot_and_classes_do_not_share_keys() -> None:
    keys = class_keys(SeatKey("event-1", "GA"))
    assert len({key_slot(k.encode()) for k in keys}) == 1
    assert len(set(keys)) == 3
    assert set(keys).isdisjoint(class_keys(SeatKey("event-1", "VIP")))
    assert set(keys).isdisjoint(class_keys(SeatKey("event-10", "GA")))


def test_the_loss_is_the_confirmed_ids_the_store_no_longer_has() -> None:
    confirmed = {"r1": 1, "r2": 2, "r3": 1, "r4": 3}
    stored = {"r1": 1, "r3": 1, "r9": 2}  # r9: applied, its answer lost with the connection
    loss = count_loss(confirmed, stored)
    assert loss.lost_ids == ("r2", "r4")
    assert loss.lost_reservations == 2
    assert loss.lost_seats == 5
    assert (loss.confirmed_reservations, loss.confirmed_seats) == (4, 7)
    assert (loss.stored_reservations, loss.stored_seats) == (3, 4)
    assert loss.applied_unanswered == 1


def test_nothing_is_lost_when_the_store_kept_every_confirmed_id() -> None:
    loss = count_loss({"a": 1, "b": 1}, {"a": 1, "b": 1})
    assert (loss.lost_ids, loss.lost_seats, loss.applied_unanswered) == ((), 0, 0)
    assert count_loss({}, {}).lost_reservations == 0


def _kill(**overrides: Any) -> KillResult:
    fields: dict[str, Any] = {
        "persistence": DEBIAN_DEFAULT,
        "key": SeatKey("kill-1", "GA"),
        "capacity": 100,
        "requests": 1000,
        "workers": 2,
        "kill_after": 50,
        "sale_s_before_kill": 0.5,
        "s_since_snapshot": 0.6,
        "restart_s": 0.2,
        "rest_of_sale_s": 0.5,
        "loss": count_loss({f"r{n}": 1 for n in range(52)}, {}),
        "available_after_restart": 100,
        "outcomes_after_restart": {"CONFIRMED": 100, "SOLD_OUT": 848},
        "confirmed_seats_in_all": 152,
        "sold_at_end": 100,
    }
    return KillResult(**(fields | overrides))


def test_a_kill_result_says_how_far_the_sale_oversold_and_whether_the_counter_agrees() -> None:
    lost = _kill()
    assert lost.oversold == 52 and lost.counter_agrees and lost.class_survived
    assert lost.answers_per_s_after_restart == (100 + 848) / 0.5
    kept = _kill(
        persistence=AOF_EVERYSEC,
        loss=count_loss({"a": 1}, {"a": 1}),
        available_after_restart=99,
        confirmed_seats_in_all=100,
    )
    assert kept.oversold == 0 and kept.counter_agrees
    assert not _kill(available_after_restart=90).counter_agrees
    gone = _kill(persistence=IN_MEMORY, available_after_restart=None, confirmed_seats_in_all=52)
    assert not gone.class_survived and gone.oversold == 0


def test_the_kill_table_shows_the_loss_and_the_oversell() -> None:
    table = report.peer_kill_table([_kill(), _kill(persistence=IN_MEMORY, available_after_restart=None)])
    rows = table.splitlines()[2:]
    assert rows[0].startswith("| debian-default | 100 | 1,000 | 2 | 52 | 0.50 | 1 | 0.20 | 0 | **52** | 0 |")
    assert rows[0].endswith("| 100 left | 152 | 52 | 1,896 |")
    assert "class gone" in rows[1]


def test_the_report_says_why_the_peer_did_not_run() -> None:
    section = report.peer_section([], None, "redis-server was not found on PATH")
    assert section[0].startswith("## The peer a team would pick instead")
    assert "Not in this run: redis-server was not found on PATH." in section


class _Inventory:
    """Answers as the script would, and records what it was asked."""

    def __init__(self, answer: Answer) -> None:
        self.answer = answer
        self.asked: list[tuple[SeatKey, str, int]] = []

    def reserve(self, key: SeatKey, reservation_id: str, quantity: int) -> Answer:
        self.asked.append((key, reservation_id, quantity))
        return self.answer


@pytest.mark.parametrize(
    ("answer", "outcome", "reason", "remaining"),
    [
        (Answer(Outcome.CONFIRMED, 8), Outcome.CONFIRMED, "2 seat(s) confirmed", 8),
        (Answer(Outcome.SOLD_OUT, 1), Outcome.SOLD_OUT, "requested 2 seat(s), 1 left", 1),
        (Answer(Outcome.UNKNOWN_EVENT, 0), Outcome.UNKNOWN_EVENT, "no seat class GA for event e-1", 0),
        (Answer(Outcome.CONFIRMED, 2, replay=True), Outcome.CONFIRMED, "2 seat(s) confirmed", None),
    ],
)
def test_the_function_asks_the_script_once_per_message_and_answers_as_the_service_does(
    answer: Answer, outcome: Outcome, reason: str, remaining: int | None
) -> None:
    inventory = _Inventory(answer)
    message = {"reservation_id": "r-1", "event_id": "e-1", "quantity": 2, "customer_id": "c"}
    published = redis_design.take_seats(inventory, message, "m-1")  # type: ignore[arg-type]
    assert inventory.asked == [(SeatKey("e-1", "GA"), "r-1", 2)]
    assert (published.outcome, published.reason, published.remaining) == (outcome, reason, remaining)
    assert (published.reservation_id, published.message_id, published.quantity) == ("r-1", "m-1", 2)
    assert published.duplicate is answer.replay
