"""The on-sale, end to end on this machine: a burst of reservations for a limited event, then checks.

Steps: the local stack comes up (or an existing one is used), an event with `capacity` seats is
created in the recommended configuration, its seat class kept in as many items (shards) as there are
workers, so that each worker can take seats from an item of its own (docs/explanation/sharding.md; `shards=1`
keeps it in one item that every worker shares, the comparison), the runner's workers start (cold
starts happen before the burst, as with warm Lambda instances at an on-sale), a temporary queue
is subscribed to the outcomes topic, the burst is sent (with deliberate duplicate re-sends and some
multi-seat requests), and outcomes are collected until every message sent has been answered.

The summary is computed by checking, not by trusting counters: the inventory item is read back
and compared with the capacity and with the seats of the reservation ids the service told
CONFIRMED; every reservation id sent must have an answer; a reservation id answered twice with
two different outcomes is reported as inconsistent. The ticket issuer runs beside the workers
(docs/guides/tickets.md); at the end the demo waits until every sale is numbered and audits the event's
ticket numbers (`seats tickets audit`): every defect is a failed check.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from seat_inventory.models import MAX_SHARDS, SeatClassInventory, SeatKey
from seat_inventory.settings import DEFAULT_SEAT_CLASS
from seat_tools.contention.model import ContentionSettings
from seat_tools.local.engines import LocalStackError
from seat_tools.local.runner import LocalRunner, default_workers, runner_config
from seat_tools.local.stack import DEFAULT_CONTENTION, LocalStack
from seat_tools.operator_commands import OperatorTable
from seat_tools.resharding import check_shard_count
from seat_tools.ticket_reports import audit_event
from seat_tools.traffic import OutcomeCollector, plan_burst, send_messages

DEFAULT_CAPACITY = 1000
DEFAULT_REQUESTS = 5000
DEFAULT_DUPLICATES_PCT = 10.0
# More local workers than cores mostly adds contention; the template's concurrency is capped here.
DEFAULT_MAX_WORKERS = 8
DEFAULT_TIMEOUT_S = 600.0
SEND_CONCURRENCY = 8
# How long the demo waits, after the last answer, for the issuer to number every sale.
TICKETS_WAIT_S = 60.0

CONFIRMED = "CONFIRMED"
SOLD_OUT = "SOLD_OUT"
INVALID = "INVALID"
UNKNOWN_EVENT = "UNKNOWN_EVENT"
TICKETED = "TICKETED"


@dataclass(frozen=True, slots=True)
class DemoOptions:
    capacity: int = DEFAULT_CAPACITY
    requests: int = DEFAULT_REQUESTS
    duplicates_pct: float = DEFAULT_DUPLICATES_PCT
    workers: int | None = None  # None: the template's MaximumConcurrency, capped at DEFAULT_MAX_WORKERS
    shards: int | None = None  # None: one item per worker (at most MAX_SHARDS); 1: one shared item
    seed: int | None = None
    max_quantity: int = 4
    multi_seat_share: float = 0.2
    event_id: str | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S
    handler: str | None = None  # a dotted path other than the template's Handler (tests)
    aws_contention: ContentionSettings | None = DEFAULT_CONTENTION  # None: DynamoDB Local alone


def recommended_shards(workers: int, *, capacity: int | None = None, seats_per_batch: float = 0.0) -> int:
    """The items a seat class is kept in for `workers` concurrent containers: one each, but no more
    than the capacity fills with a full batch each (`seats onsale plan`'s rule,
    docs/explanation/sharding.md).

    With fewer items than containers, containers meet on an item and their transactions cancel each
    other (AWS's TransactionConflict). An item that holds less than a batch takes is drained by the
    first transaction on it, and its container then moves seats from other containers' items,
    meeting them there: items of a full batch or more keep each container on its own.
    """
    shards = max(1, min(workers, MAX_SHARDS))
    if capacity is not None and seats_per_batch > 0:
        shards = min(shards, max(1, int(capacity // seats_per_batch)))
    return shards


def seats_a_batch_takes(bodies: Sequence[Mapping[str, Any]], batch_size: int) -> float:
    """The seats a full batch of the burst asks for: `batch_size` messages of its mean quantity,
    re-sends left out (they are answered from their records and take nothing)."""
    distinct: dict[str, int] = {}
    for body in bodies:
        distinct.setdefault(str(body["reservation_id"]), int(body["quantity"]))
    if not distinct:
        return 0.0
    mean = sum(distinct.values()) / len(distinct)
    return batch_size * mean * len(distinct) / len(bodies)


def summarize(
    *,
    capacity: int,
    bodies: Sequence[Mapping[str, Any]],
    outcomes: Sequence[Mapping[str, Any]],
    inventory: SeatClassInventory | None,
    elapsed_s: float,
    dlq_depth: int = 0,
    workers: int | None = None,
    shards: int | None = None,
) -> dict[str, Any]:
    """The demo's verdict from what was sent, what was answered and what the table holds.

    `oversold` is the number of seats by which the table and the answers disagree with the
    capacity: seats sold beyond it, a negative `available`, `available + held + sold` differing
    from it, and the confirmed reservations' seats differing from `sold`. 0 means all agree.
    """
    quantity_by_id: dict[str, int] = {}
    for body in bodies:
        quantity_by_id.setdefault(str(body["reservation_id"]), int(body["quantity"]))

    answers: dict[str, set[str]] = {}
    final: dict[str, str] = {}
    duplicates = 0
    ticketed: set[str] = set()
    for document in outcomes:
        reservation_id = document.get("reservation_id")
        value = document.get("outcome")
        if not isinstance(reservation_id, str) or not isinstance(value, str):
            continue
        if value == TICKETED:  # the issuer's later news about a sale, not an answer to a request
            ticketed.add(reservation_id)
            continue
        answers.setdefault(reservation_id, set()).add(value)
        duplicates += bool(document.get("duplicate"))
        if not document.get("duplicate") or reservation_id not in final:
            final[reservation_id] = value

    sent_ids = set(quantity_by_id)
    by_outcome = Counter(final[rid] for rid in sent_ids if rid in final)
    confirmed_ids = [rid for rid in sent_ids if CONFIRMED in answers.get(rid, set())]
    confirmed_seats = sum(quantity_by_id[rid] for rid in confirmed_ids)

    sold = inventory.sold if inventory else 0
    available = inventory.available if inventory else 0
    held = int(getattr(inventory, "held", 0) or 0) if inventory else 0
    oversold = (
        max(0, sold - capacity)
        + max(0, -available)
        + abs(available + held + sold - capacity)
        + abs(confirmed_seats - sold)
    )
    requests = len(bodies)
    return {
        "capacity": capacity,
        "requests": requests,
        "confirmed_seats": confirmed_seats,
        "sold_out": by_outcome.get(SOLD_OUT, 0),
        "duplicates": duplicates,
        "invalid": by_outcome.get(INVALID, 0),
        "oversold": oversold,
        "outcomes_missing": len(sent_ids - set(answers)),
        "elapsed_s": round(elapsed_s, 2),
        "reservations_per_s": round(requests / elapsed_s, 1) if elapsed_s > 0 else 0.0,
        # Extras: the details behind the verdict.
        "distinct_reservations": len(sent_ids),
        "confirmed": len(confirmed_ids),
        "unknown_event": by_outcome.get(UNKNOWN_EVENT, 0),
        "other_outcomes": {
            k: v
            for k, v in sorted(by_outcome.items())
            if k not in (CONFIRMED, SOLD_OUT, INVALID, UNKNOWN_EVENT)
        },
        "inconsistent": sum(1 for rid in sent_ids if len(answers.get(rid, ())) > 1),
        "unexpected_outcomes": len(set(answers) - sent_ids),
        "outcome_messages": len(outcomes),
        "ticketed_outcomes": len(ticketed),
        "sold": sold,
        "available": available,
        "held": held,
        "dlq_depth": dlq_depth,
        "workers": workers,
        "shards": shards,
    }


def checks_passed(summary: Mapping[str, Any]) -> bool:
    """True when the on-sale was correct: nothing oversold, missing, contradictory or dead-lettered."""
    return (
        summary["oversold"] == 0
        and summary["outcomes_missing"] == 0
        and summary.get("inconsistent", 0) == 0
        and summary.get("dlq_depth", 0) == 0
        and summary.get("send_failed", 0) == 0
        and summary.get("tickets_defects", 0) == 0
    )


class _AnsweredTracker:
    """The `until` predicate of the collector: every message answered (or asked to stop).

    Incremental, because the collector calls it with the whole list after every poll. The
    issuer's TICKETED news shares the topic but answers no message, so it is not counted: counting
    it ended the wait while re-sends were still unanswered.
    """

    def __init__(self, bodies: Sequence[Mapping[str, Any]], stop: threading.Event) -> None:
        self._waiting = {str(body["reservation_id"]) for body in bodies}
        self._messages = len(bodies)
        self._seen = 0
        self._answers = 0
        self._stop = stop

    def __call__(self, documents: list[dict[str, Any]]) -> bool:
        for document in documents[self._seen :]:
            if document.get("outcome") == TICKETED:
                continue
            self._answers += 1
            self._waiting.discard(str(document.get("reservation_id")))
        self._seen = len(documents)
        return self._stop.is_set() or (not self._waiting and self._answers >= self._messages)


def _dlq_depth(stack: LocalStack) -> int:
    visible, in_flight = stack.queue_depth(stack.dead_letter_queue_url)
    return visible + in_flight


@dataclass(frozen=True, slots=True)
class OnSaleRun:
    """One on-sale: what was sent, every outcome document collected, the item read back, the verdict."""

    summary: dict[str, Any]
    bodies: list[dict[str, Any]]
    outcomes: list[dict[str, Any]]
    inventory: SeatClassInventory | None


def _audit_when_numbered(stack: LocalStack, event_id: str) -> list[str]:
    """The tickets audit of the event once every sale is numbered (or as it is after
    TICKETS_WAIT_S): `seats tickets audit`'s lines, empty when the numbers are sound."""
    table = OperatorTable(stack.client("dynamodb"), stack.table_name)
    deadline = time.monotonic() + TICKETS_WAIT_S
    while True:
        pending = audit_event(table, event_id, allow_pending=True)
        if pending or time.monotonic() >= deadline:
            return pending or audit_event(table, event_id)
        defects = audit_event(table, event_id)
        if not defects:
            return []
        time.sleep(1.0)


def run_demo(
    options: DemoOptions,
    *,
    stack: LocalStack | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Runs one on-sale and returns its summary; starts (and stops) a LocalStack unless given one."""
    say = progress or (lambda message: None)
    if stack is None:
        say("starting DynamoDB Local and the moto server ...")
        with LocalStack(aws_contention=options.aws_contention) as own_stack:
            say(own_stack.contention_description())
            return run_onsale(options, own_stack, progress=say).summary
    return run_onsale(options, stack, progress=say).summary


def run_onsale(
    options: DemoOptions, stack: LocalStack, *, progress: Callable[[str], None] | None = None
) -> OnSaleRun:
    """Runs one on-sale on a started stack (a fresh event each time, so a stack can host several)."""
    if options.capacity < 0 or options.requests < 1:
        raise ValueError("capacity must be at least 0 and requests at least 1")
    if options.shards is not None:
        check_shard_count(options.shards)
    say = progress or (lambda message: None)
    workers = options.workers or default_workers(
        stack.template.function.event_source.concurrency, DEFAULT_MAX_WORKERS
    )
    environment = stack.environment()
    seat_class = environment.get("DEFAULT_SEAT_CLASS") or DEFAULT_SEAT_CLASS
    event_id = options.event_id or f"onsale-{uuid.uuid4().hex[:8]}"
    bodies = plan_burst(
        event_id,
        options.requests,
        duplicates_pct=options.duplicates_pct,
        max_quantity=options.max_quantity,
        multi_seat_share=options.multi_seat_share,
        seed=options.seed,
    )
    seats_per_batch = seats_a_batch_takes(bodies, stack.template.function.event_source.batch_size)
    recommended = recommended_shards(workers, capacity=options.capacity, seats_per_batch=seats_per_batch)
    shards = options.shards or recommended
    OperatorTable(stack.client("dynamodb"), stack.table_name).create_seat_class(
        SeatKey(event_id, seat_class), options.capacity, shards=shards
    )
    config = runner_config(stack, workers=workers, handler=options.handler, issuer=True)
    items = f"{shards} items" if shards > 1 else "one item"
    say(
        f"event {event_id}: {options.capacity} seats in {items}; starting {workers} workers (cold starts) ..."
    )
    stop_collecting = threading.Event()
    # Nothing new for this long means nothing more will come (a failed message is retried after
    # the visibility timeout, so the wait covers a few of those).
    idle_s = max(60.0, 3.0 * stack.visibility_timeout_s)
    collected: list[dict[str, Any]] = []
    collector_errors: list[Exception] = []
    with (
        LocalRunner(config) as runner,
        OutcomeCollector(
            stack.client("sns"), stack.client("sqs"), stack.topic_arn, event_id=event_id
        ) as collector,
    ):

        def collect() -> None:
            try:
                collected.extend(
                    collector.collect(
                        until=_AnsweredTracker(bodies, stop_collecting),
                        timeout_s=options.timeout_s,
                        idle_s=idle_s,
                    )
                )
            except (BotoCoreError, ClientError, RuntimeError) as exc:
                collector_errors.append(exc)  # raised again by the main thread below

        thread = threading.Thread(target=collect, name="seats-demo-collector", daemon=True)
        thread.start()
        try:
            say(f"sending {len(bodies)} reservation messages ({options.duplicates_pct:g}% duplicates) ...")
            started = time.monotonic()
            report = send_messages(stack.client("sqs"), stack.queue_url, bodies, concurrency=SEND_CONCURRENCY)
            say(f"sent {report.sent} in {report.elapsed_s:.1f} s; waiting for every outcome ...")
            thread.join(timeout=options.timeout_s + 5)
            elapsed = time.monotonic() - started
        finally:
            stop_collecting.set()
            thread.join(timeout=10)
        if collector_errors:
            raise LocalStackError(f"collecting outcomes failed: {collector_errors[0]}") from collector_errors[
                0
            ]
        # Every message was answered; the deletes of the last batches may still be in flight.
        runner.drain(stack.queue_depth, quiet_s=0.5, timeout_s=30, deleted=report.sent)
        say("waiting for the ticket issuer to number every sale, then auditing the numbers ...")
        defects = _audit_when_numbered(stack, event_id)
    stats = runner.stats
    inventory = next(
        (
            c
            for c in OperatorTable(stack.client("dynamodb"), stack.table_name).get_event(event_id)
            if c.seat_class == seat_class
        ),
        None,
    )
    summary = summarize(
        capacity=options.capacity,
        bodies=bodies,
        outcomes=collected,
        inventory=inventory,
        elapsed_s=elapsed,
        dlq_depth=_dlq_depth(stack),
        workers=workers,
        shards=shards,
    )
    summary.update(
        {
            "event_id": event_id,
            "seats_per_batch": round(seats_per_batch, 1),
            "recommended_shards": recommended,
            "duplicates_pct": options.duplicates_pct,
            "send_failed": report.failed,
            "invocations": stats.invocations,
            "messages_delivered": stats.messages,
            "handler_errors": stats.handler_errors,
            "batch_item_failures": stats.item_failures,
            "mean_invocation_ms": stats.as_dict()["mean_invocation_ms"],
            "reservations_numbered": stats.reservations_numbered,
            "tickets_defects": len(defects),
            "tickets_audit": defects[:20] or "ok",
            "log_dir": str(stack.log_dir),
        }
    )
    status = stack.contention_status()
    if status is not None:  # the layer's counters since the stack started (all its runs)
        summary["aws_contention"] = status["counters"]
    return OnSaleRun(summary=summary, bodies=bodies, outcomes=collected, inventory=inventory)
