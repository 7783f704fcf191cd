"""The ticket issuer on in-memory fakes: gapless, no duplicate, exactly once, whatever crashes.

Every test ends with the audit (`audit_tickets`) of the event: after any history, including a
crash between any two of the issuer's steps, a lost reply, a stale index and two issuers at once,
the numbers of each series are 1..N, each on one ticket, every sale numbered once it was drained.
"""

from __future__ import annotations

import contextlib
import json
import random
import zlib
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from seat_inventory.dal.items import unnumbered_bucket
from seat_inventory.logic.issue_tickets import (
    LANE_IDLE_ROUNDS,
    LANE_OVERDUE_MS,
    MAX_BATCH_SIZE,
    PROBE_SHARES,
    LaneFanOut,
    issue_tickets,
    plan_batch,
    run_issuer,
    series_of,
)
from seat_inventory.logic.reserve_seats import QueueMessage, reserve_seats
from seat_inventory.logic.sweep_holds import release_expired_holds
from seat_inventory.models import (
    WHOLE_INDEX,
    IssuerLane,
    Outcome,
    RequestType,
    ReservationOutcome,
    Throttled,
    TicketAssignment,
    TicketBatch,
    TicketFormat,
    TicketSeries,
    TransactionConflict,
    UnnumberedSale,
)
from seat_inventory.settings import Settings
from seat_tools.ticket_audit import audit_tickets
from tests.fakes import FakeClock, InMemoryInventoryStore, RecordingPublisher

SETTINGS = Settings(table_name="t", outcomes_topic_arn="arn:aws:sns:us-east-1:1:t", max_hold_seconds=3600)
NOW = 1_800_000_000
EVENT = "e-1"


class Crash(Exception):
    """The issuer's container dies here (not a fault the issuer handles)."""


def message(n: int, **body: object) -> QueueMessage:
    return QueueMessage(f"m-{n}", json.dumps(body))


class World:
    """The service's reservation path and the issuer on one store, one clock."""

    def __init__(self, capacity: int = 200, **format_: Any) -> None:
        self.store = InMemoryInventoryStore()
        self.store.add_event(EVENT, capacity=capacity)
        self.store.add_event(EVENT, capacity=capacity, seat_class="VIP")
        if format_:
            self.store.ticket_formats[EVENT] = TicketFormat(**format_)
        self.clock = FakeClock(time=NOW)
        self.store.clock_ms = lambda: int(self.clock.now() * 1000)
        self.published: list[ReservationOutcome] = []
        self.n = 0

    def send(self, **body: object) -> list[ReservationOutcome]:
        self.n += 1
        publisher = RecordingPublisher()
        reserve_seats(
            [message(self.n, **body)],
            store=self.store,
            publisher=publisher,
            settings=SETTINGS,
            clock=self.clock,
        )
        return publisher.published

    def reserve(self, rid: str, quantity: int = 1, seat_class: str = "GA") -> Outcome:
        return self.send(
            reservation_id=rid, event_id=EVENT, seat_class=seat_class, quantity=quantity, customer_id="c"
        )[0].outcome

    def hold(self, rid: str, quantity: int = 1) -> Outcome:
        return self.send(
            type="hold",
            reservation_id=rid,
            event_id=EVENT,
            seat_class="GA",
            quantity=quantity,
            customer_id="c",
            hold_seconds=120,
        )[0].outcome

    def confirm(self, rid: str) -> Outcome:
        return self.send(type="confirm", reservation_id=rid)[0].outcome

    def cancel(self, rid: str) -> Outcome:
        return self.send(type="cancel", reservation_id=rid)[0].outcome

    def sweep(self) -> None:
        release_expired_holds(self.store, RecordingPublisher(), self.clock, limit=1000)

    def issue(
        self, store: Any = None, publisher: Any = None, *, limit: int = 1000, batch_size: int = 3
    ) -> Any:
        recorder = RecordingPublisher()
        try:
            return issue_tickets(
                store or self.store, publisher or recorder, self.clock, limit=limit, batch_size=batch_size
            )
        finally:
            self.published.extend(recorder.published)

    def drain(self) -> None:
        for _ in range(50):
            self.issue()
            if not self.store.awaiting_tickets and not self.store.ledger_unpublished:
                return
        raise AssertionError("the issuer did not drain")

    def audit(self, *, allow_pending: bool = False) -> list[str]:
        return audit_tickets(
            {s.series: n for s, n in self.store.ticket_counters.items() if s.event_id == EVENT},
            [r for r in (self.store.record(i) for i in self.store.records) if r is not None],
            [b for (s, _), b in self.store.ledger.items() if s.event_id == EVENT],
            allow_pending=allow_pending,
        )

    def sold_seats(self) -> int:
        """Seats that were ever sold: numbered, or waiting for numbers."""
        return sum(self.store.records[i].quantity or 0 for i in self.store.records if self._was_sold(i))

    def _was_sold(self, rid: str) -> bool:
        return rid in self.store.tickets or rid in self.store.awaiting_tickets

    def ticketed(self) -> dict[str, tuple[str, ...]]:
        return {o.reservation_id: o.tickets or () for o in self.published if o.outcome is Outcome.TICKETED}


# ------------------------------------------------------------------------------ the plain path


def test_every_sale_gets_its_seats_numbers_in_sale_order_with_no_gap() -> None:
    # Given sales of 2, 1 and 3 seats, in that order
    world = World()
    for rid, quantity in (("r-a", 2), ("r-b", 1), ("r-c", 3)):
        assert world.reserve(rid, quantity) is Outcome.CONFIRMED
        world.clock.time += 1
    # When the issuer runs
    result = world.issue()
    # Then they have 1-2, 3, 4-6, published as TICKETED, and the audit is clean
    assert {r: world.store.tickets[r] for r in ("r-a", "r-b", "r-c")} == {
        "r-a": (0, 1),
        "r-b": (0, 3),
        "r-c": (0, 4),
    }
    assert world.store.ticket_counters[TicketSeries(EVENT, 0)] == 7
    assert world.ticketed() == {"r-a": ("1", "2"), "r-b": ("3",), "r-c": ("4", "5", "6")}
    assert all(o.request_type is RequestType.TICKET and o.event_id == EVENT for o in world.published)
    assert result.numbered == 3 and result.tickets == 6 and result.published == 3
    assert not world.store.awaiting_tickets and not world.store.ledger_unpublished
    assert world.audit() == []
    # And a second run has nothing to do
    again = world.issue()
    assert again.numbered == 0 and again.published == 0


def test_both_classes_share_the_events_series() -> None:
    world = World()
    world.reserve("r-ga", 2)
    world.reserve("r-vip", 1, seat_class="VIP")
    world.issue()
    assert sorted(world.store.tickets.values()) == [(0, 1), (0, 3)]
    assert world.audit() == []


def test_a_hold_is_numbered_only_once_confirmed_and_expired_or_cancelled_holds_never() -> None:
    world = World()
    assert world.hold("h-kept", 2) is Outcome.HELD
    assert world.hold("h-dropped") is Outcome.HELD
    assert world.hold("h-expired") is Outcome.HELD
    world.issue()
    assert world.store.tickets == {}
    assert world.confirm("h-kept") is Outcome.CONFIRMED
    assert world.cancel("h-dropped") is Outcome.CANCELLED
    world.clock.time += 600
    world.sweep()
    world.issue()
    assert world.store.tickets == {"h-kept": (0, 1)}
    assert world.store.ticket_counters[TicketSeries(EVENT, 0)] == 3
    assert world.audit() == []


def test_a_cancelled_ticket_keeps_its_number_void_and_the_number_is_never_reused() -> None:
    world = World()
    world.reserve("r-1", 2)
    world.issue()
    assert world.cancel("r-1") is Outcome.CANCELLED
    world.reserve("r-2", 1)
    world.issue()
    assert world.store.tickets == {"r-1": (0, 1), "r-2": (0, 3)}
    assert world.store.record("r-1").status is Outcome.CANCELLED  # type: ignore[union-attr]
    assert world.audit() == []


def test_a_sale_cancelled_before_it_was_numbered_still_gets_its_void_number() -> None:
    world = World()
    world.reserve("r-1", 2)
    world.cancel("r-1")
    world.issue()
    assert world.store.tickets == {"r-1": (0, 1)}
    assert world.audit() == []


def test_numbers_print_with_the_events_prefix_width_and_series() -> None:
    assert TicketFormat(prefix="EV-", width=6).label(0, 42) == "EV-000042"
    assert TicketFormat(series=4, prefix="EV-", width=5).label(3, 7) == "EV-3-00007"
    assert TicketFormat().label(0, 7) == "7"
    world = World(prefix="GIG-", width=4)
    world.reserve("r-1", 2)
    world.issue()
    assert world.ticketed() == {"r-1": ("GIG-0001", "GIG-0002")}


def test_several_series_are_each_gapless_and_a_sale_stays_in_its_series() -> None:
    # Given an event numbered in 4 series and 60 sales
    world = World(series=4)
    rids = [f"r-{i}" for i in range(60)]
    for rid in rids:
        world.reserve(rid, 1 + len(rid) % 3)
    # When the issuer runs
    world.drain()
    # Then each sale is in its series, and each series is 1..N
    for rid in rids:
        assert world.store.tickets[rid][0] == series_of(rid, 4)
    assert {s.series for s in world.store.ticket_counters} == {0, 1, 2, 3}
    assert sum(n - 1 for n in world.store.ticket_counters.values()) == world.sold_seats()
    assert world.audit() == []


def test_a_batch_never_exceeds_a_transactions_actions() -> None:
    sales = [UnnumberedSale(f"r-{i}", EVENT, 1, i) for i in range(MAX_BATCH_SIZE)]
    batch = plan_batch(TicketSeries(EVENT, 0), 5, sales)
    assert len(batch.assignments) + 2 <= 100
    assert batch.first == 5 and batch.next_after == 5 + MAX_BATCH_SIZE
    world = World()
    with pytest.raises(ValueError, match="batch_size"):
        world.issue(batch_size=MAX_BATCH_SIZE + 1)


# ------------------------------------------------------------------------------ faults


class CrashingPorts:
    """Counts every call the issuer makes to its store and publisher; the `at`-th raises Crash,
    before it took effect or (`after`) once it did (a reply lost with the container)."""

    STORE_CALLS = frozenset(
        {
            "find_unnumbered",
            "read_ticket_format",
            "read_next_number",
            "commit_numbers",
            "find_unpublished_batches",
            "mark_batches_published",
        }
    )

    def __init__(self, store: InMemoryInventoryStore, at: int, *, after: bool) -> None:
        self.store = store
        self.at = at
        self.after = after
        self.calls = 0
        self.crashed = False
        self.publisher = _PortProxy(self, RecordingPublisher(), {"publish"})
        self.ticket_store = _PortProxy(self, store, self.STORE_CALLS)

    def step(self, call: Callable[[], Any]) -> Any:
        self.calls += 1
        if self.calls == self.at and not self.after:
            self.crashed = True
            raise Crash(self.calls)
        result = call()
        if self.calls == self.at:
            self.crashed = True
            raise Crash(self.calls)
        return result


class _PortProxy:
    def __init__(self, ports: CrashingPorts, target: Any, counted: frozenset[str] | set[str]) -> None:
        self._ports = ports
        self._target = target
        self._counted = counted

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._target, name)
        if name not in self._counted:
            return attr
        return lambda *a, **k: self._ports.step(lambda: attr(*a, **k))


def _sales_for_crash_tests(world: World) -> None:
    for i in range(7):
        world.reserve(f"r-{i}", 1 + i % 3)
        world.clock.time += 1
    world.hold("h-1", 2)
    world.confirm("h-1")


# Calls of one round with 8 sales in batches of 3 and an earlier batch awaiting publication:
# find_unpublished, publish, mark, find_unnumbered, read_format, read_next, then 3 times commit,
# publish, mark (each batch announced as soon as it committed).
ROUND_CALLS = 15


def test_the_crash_points_cover_every_call_of_a_round() -> None:
    world = World()
    world.reserve("r-early", 2)
    world.issue(publisher=RecordingPublisher(refuse_all=True))
    _sales_for_crash_tests(world)
    ports = CrashingPorts(world.store, 0, after=False)
    issue_tickets(ports.ticket_store, ports.publisher, world.clock, limit=1000, batch_size=3)
    assert ports.calls == ROUND_CALLS


@pytest.mark.parametrize("after", [False, True], ids=["before", "after"])
@pytest.mark.parametrize("at", range(1, ROUND_CALLS + 1))
def test_a_crash_between_any_two_steps_leaves_no_gap_and_no_duplicate(at: int, after: bool) -> None:
    # Given numbered sales whose outcomes were not published (an earlier crash), and new sales
    world = World()
    world.reserve("r-early", 2)
    world.issue(publisher=RecordingPublisher(refuse_all=True))
    assert world.store.ledger_unpublished
    _sales_for_crash_tests(world)
    ports = CrashingPorts(world.store, at, after=after)
    # When the issuer dies at its `at`-th call
    with pytest.raises(Crash):
        issue_tickets(ports.ticket_store, ports.publisher, world.clock, limit=1000, batch_size=3)
    world.published.extend(ports.publisher._target.published)
    # Then what it left is sound, and a later run finishes the work
    assert world.audit(allow_pending=True) == []
    world.drain()
    assert world.audit() == []
    assert sum(n - 1 for n in world.store.ticket_counters.values()) == world.sold_seats() == 2 + 13 + 2
    # And every sale was announced with the numbers it has
    numbered = {r: tuple(str(n) for n in world.store.record(r).ticket_numbers) for r in world.store.tickets}  # type: ignore[union-attr]
    assert world.ticketed() == numbered


@pytest.mark.parametrize("fault", [TransactionConflict("c"), Throttled("t")], ids=["conflict", "throttle"])
def test_a_transient_fault_or_a_lost_reply_is_retried_without_a_gap(fault: Exception) -> None:
    world = World()
    _sales_for_crash_tests(world)
    world.store.fail_next_numbers = [fault]
    world.store.lose_next_numbers_reply = [TransactionConflict("reply lost")]
    result = world.issue()
    assert result.faults == 2 and not result.failed_series
    world.drain()
    assert world.audit() == []
    assert len(world.store.tickets) == 8


def test_a_fault_that_outlasts_the_attempts_leaves_the_series_for_the_next_round() -> None:
    world = World()
    _sales_for_crash_tests(world)
    world.store.fail_next_numbers = [Throttled("t")] * 10
    result = world.issue()
    assert result.failed_series and result.numbered == 0
    assert world.audit(allow_pending=True) == []
    world.drain()
    assert world.audit() == []


def test_a_stale_index_listing_numbered_sales_again_does_not_number_them_twice() -> None:
    world = World()
    world.reserve("r-1", 2)
    world.reserve("r-2", 1)
    world.issue()
    stale = {rid: UnnumberedSale(rid, EVENT, q, 0) for rid, q in (("r-1", 2), ("r-2", 1))}
    world.store.stale_unnumbered = stale
    world.reserve("r-3", 1)
    result = world.issue()
    assert world.store.tickets == {"r-1": (0, 1), "r-2": (0, 3), "r-3": (0, 4)}
    assert result.lost_races >= 1 and result.numbered == 1
    assert world.audit() == []


def test_two_issuers_at_once_number_each_sale_once() -> None:
    # Given sales, and a second issuer that commits while the first is between read and write
    world = World()
    _sales_for_crash_tests(world)
    world.store.before_numbers = lambda: world.issue(batch_size=2)
    # When the first issuer runs
    first = world.issue(batch_size=4)
    # Then the first lost its race, took the counter as it was and numbered what was left
    assert first.lost_races >= 1
    assert world.audit() == []
    assert sum(n - 1 for n in world.store.ticket_counters.values()) == world.sold_seats()


def test_run_issuer_goes_on_until_its_deadline() -> None:
    world = World()
    world.reserve("r-1")
    rounds = run_issuer(
        world.store, RecordingPublisher(), world.clock, limit=100, until=NOW + 5, idle_seconds=1
    )
    assert len(rounds) >= 4 and rounds[0].numbered == 1
    assert world.clock.now() <= NOW + 5


def test_no_batch_starts_past_the_deadline_and_the_next_run_numbers_the_rest_without_a_gap() -> None:
    # Given 7 sales, and SNS taking a second to answer each batch's outcomes
    world = World()
    for n in range(7):
        world.reserve(f"r-{n}")

    class SlowPublisher(RecordingPublisher):
        def publish(
            self,
            outcomes: Sequence[ReservationOutcome],
            *,
            retry_throttled: Callable[[int], bool] | None = None,
        ) -> list[ReservationOutcome]:
            world.clock.sleep(1.0)
            return super().publish(outcomes, retry_throttled=retry_throttled)

    publisher = SlowPublisher()
    # When a round with half a second left numbers batches of 3
    result = issue_tickets(
        world.store, publisher, world.clock, limit=1000, batch_size=3, deadline=world.clock.now() + 0.5
    )
    # Then it numbered and announced only the batch it started before the deadline
    assert (result.numbered, result.published, result.failed_series) == (3, 3, [])
    assert len(world.store.awaiting_tickets) == 4
    assert world.audit(allow_pending=True) == []
    # And a round that starts past its deadline still numbers each series' first batch (progress)
    late = issue_tickets(
        world.store, publisher, world.clock, limit=1000, batch_size=3, deadline=world.clock.now() - 1
    )
    assert late.numbered == 3 and len(world.store.awaiting_tickets) == 1
    # And the next run numbers the rest from where the counter stands: 1..7, no gap
    world.drain()
    assert world.audit() == []
    assert world.store.ticket_counters[TicketSeries(EVENT, 0)] == 8


# ------------------------------------------------------------------------------ model-based histories


@pytest.mark.parametrize("seed", range(30))
def test_random_histories_with_crashes_races_and_stale_reads_always_audit_clean(  # noqa: C901 - one history loop, a branch per step kind
    seed: int,
) -> None:
    rng = random.Random(seed)
    world = World(capacity=60, series=rng.choice([1, 1, 2, 3]))
    live_holds: list[str] = []
    sold: list[str] = []
    for step in range(80):
        world.clock.time += rng.choice([1, 5, 30])
        op = rng.random()
        rid = f"r-{seed}-{step}"
        if op < 0.3:
            if world.reserve(rid, rng.randint(1, 4), rng.choice(["GA", "VIP"])) is Outcome.CONFIRMED:
                sold.append(rid)
        elif op < 0.45:
            if world.hold(rid, rng.randint(1, 3)) is Outcome.HELD:
                live_holds.append(rid)
        elif op < 0.55 and live_holds:
            held = live_holds.pop(rng.randrange(len(live_holds)))
            if world.confirm(held) is Outcome.CONFIRMED:
                sold.append(held)
        elif op < 0.62 and (live_holds or sold):
            pool = live_holds if live_holds and rng.random() < 0.5 else sold
            if pool:
                world.cancel(pool.pop(rng.randrange(len(pool))))
        elif op < 0.67:
            world.clock.time += 200
            world.sweep()
        elif op < 0.75:
            ports = CrashingPorts(world.store, rng.randint(1, 12), after=rng.random() < 0.5)
            with contextlib.suppress(Crash):
                issue_tickets(
                    ports.ticket_store, ports.publisher, world.clock, limit=rng.randint(1, 20), batch_size=3
                )
            world.published.extend(ports.publisher._target.published)
        elif op < 0.82:
            world.store.before_numbers = lambda: world.issue(batch_size=rng.randint(1, 4))
            world.issue(batch_size=rng.randint(1, 5))
            world.store.before_numbers = None
        elif op < 0.88:
            # a stale index: numbered sales listed again
            numbered = list(world.store.tickets)
            rng.shuffle(numbered)
            world.store.stale_unnumbered = {
                r: UnnumberedSale(r, EVENT, world.store.records[r].quantity or 0, 0) for r in numbered[:3]
            }
            world.issue(limit=rng.randint(1, 10))
            world.store.stale_unnumbered = {}
        elif op < 0.93:
            world.store.fail_next_numbers = [rng.choice([TransactionConflict("c"), Throttled("t")])]
            world.store.lose_next_numbers_reply = [TransactionConflict("lost")] if rng.random() < 0.5 else []
            world.issue()
            world.store.fail_next_numbers = []
            world.store.lose_next_numbers_reply = []
        else:
            world.issue(limit=rng.randint(1, 10), batch_size=rng.randint(1, MAX_BATCH_SIZE))
        assert world.audit(allow_pending=True) == [], f"seed {seed} step {step}"
    world.drain()
    assert world.audit() == []
    assert sum(n - 1 for n in world.store.ticket_counters.values()) == world.sold_seats()
    assert all(r in world.store.tickets for r in sold)
    for rid, labels in world.ticketed().items():
        record = world.store.record(rid)
        fmt = world.store.ticket_formats.get(EVENT, TicketFormat())
        assert record is not None and labels == tuple(
            fmt.label(record.ticket_series or 0, n) for n in record.ticket_numbers
        )


# ------------------------------------------------------------------------------ the audit can fail


def _numbered_world() -> World:
    world = World()
    world.reserve("r-1", 2)
    world.reserve("r-2", 1)
    world.hold("h-1")
    world.issue()
    assert world.audit() == []
    return world


def test_the_audit_reports_a_gap_a_duplicate_and_a_number_past_the_counter() -> None:
    world = _numbered_world()
    world.store.tickets["r-2"] = (0, 2)  # r-2 now shares 2 with r-1, and 3 is on no ticket
    defects = world.audit()
    assert "series 0: 3 on no ticket (gap)" in defects
    assert "series 0: 2 on 2 tickets (r-1, r-2)" in defects
    world.store.tickets["r-2"] = (0, 9)
    assert "series 0: 9 on r-2 is past the counter's last number 3" in world.audit()


def test_the_audit_reports_unnumbered_sales_and_numbers_on_what_was_never_sold() -> None:
    world = _numbered_world()
    world.reserve("r-3")
    assert world.audit() == ["r-3: sold, waiting for the issuer (not numbered yet)"]
    assert world.audit(allow_pending=True) == []
    del world.store.awaiting_tickets["r-3"]
    assert world.audit() == ["r-3: sold (CONFIRMED) but not numbered nor waiting for numbers"]
    world.store.tickets["h-1"] = (0, 4)
    world.store.tickets["r-3"] = (0, 5)
    world.store.ticket_counters[TicketSeries(EVENT, 0)] = 6
    defects = world.audit()
    assert "h-1: numbered 4 in series 0 but its status is HELD" in defects


def test_the_audit_reports_a_ledger_that_disagrees_with_the_counter_or_the_records() -> None:
    world = _numbered_world()
    series = TicketSeries(EVENT, 0)
    world.store.ledger[(series, 4)] = TicketBatch(series, 4, (TicketAssignment("r-x", 4, 2),))
    world.store.ledger[(series, 1)] = TicketBatch(
        series, 1, plan_batch(series, 1, [UnnumberedSale("r-2", EVENT, 3, 0)]).assignments
    )
    defects = world.audit()
    assert "series 0: ledger gives 1..3 to r-2, its record does not say so" in defects
    assert "series 0: ledger ends at 5, counter at 3" in defects


# ------------------------------------------------------------------------------ lanes


class RecordingLanes:
    """A lane starter that records what it was asked to start; `refuse` lanes are not started."""

    def __init__(self, refuse: tuple[int, ...] = ()) -> None:
        self.refuse = set(refuse)
        self.started: list[tuple[int, int, float]] = []

    def start_lanes(self, lanes: Sequence[int], count: int, until: float) -> list[int]:
        self.started.extend((i, count, until) for i in lanes if i not in self.refuse)
        failed = [i for i in lanes if i in self.refuse]
        self.refuse.clear()  # a lane refused once starts when asked again
        return failed


class FindRecorder:
    """The store, recording the lane each `find_unnumbered` asked for."""

    def __init__(
        self, store: InMemoryInventoryStore, before: dict[int, Callable[[], object]] | None = None
    ) -> None:
        self.store = store
        self.asked: list[IssuerLane] = []
        self.before = before or {}  # run before the n-th find (from 0)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    def find_unnumbered(self, limit: int, lane: IssuerLane = WHOLE_INDEX) -> list[Any]:
        if len(self.asked) in self.before:
            self.before[len(self.asked)]()
        self.asked.append(lane)
        return self.store.find_unnumbered(limit, lane)


def _lane_world(sales: int = 40, series: int = 4) -> World:
    world = World(capacity=1_000, series=series)
    for n in range(sales):
        assert world.reserve(f"r-{n}") is Outcome.CONFIRMED
    return world


def test_a_lane_takes_whole_buckets_of_the_index_and_the_series_that_are_its_own() -> None:
    # A lane's sales are those of its buckets (the sale's CRC-32 modulo the buckets, 512)
    lane = IssuerLane(3, 8)
    for n in range(200):
        rid = f"r-{n}"
        assert lane.takes_sale(rid) == lane.takes_bucket(unnumbered_bucket(rid))
        # and with as many series as lanes or a multiple of it, the sale's series is the lane's
        assert lane.takes_sale(rid) == lane.takes_series(series_of(rid, 16))
    # Sales written when the index had 128 buckets (crc32 % 128) are in the same lane's and the
    # same probe share's buckets: every count divides 128
    for count in (2, 8, 64):
        for n in range(200):
            rid = f"old-{n}"
            old_bucket = zlib.crc32(rid.encode()) % 128
            assert IssuerLane.of_sale(rid, count).takes_bucket(old_bucket)
    assert WHOLE_INDEX.takes_sale("anything") and WHOLE_INDEX.takes_series(7)
    for count, index in ((3, 0), (128, 0), (4, 4), (4, -1)):
        with pytest.raises(ValueError):
            IssuerLane(index, count)


def test_lanes_number_each_their_share_and_together_every_sale_once_without_a_gap() -> None:
    # Given 40 sales numbered in 4 series, and 4 lanes
    world = _lane_world()
    # When each lane runs a round
    results = [
        issue_tickets(world.store, RecordingPublisher(), world.clock, limit=100, lane=IssuerLane(i, 4))
        for i in range(4)
    ]
    # Then each numbered its own sales only (series i of lane i), and together all of them
    for index, result in enumerate(results):
        assert result.numbered > 0
        assert {b.series.series for b in result.batches} == {index}
        assert all(
            IssuerLane(index, 4).takes_sale(a.reservation_id) for b in result.batches for a in b.assignments
        )
    assert sum(r.numbered for r in results) == 40 and not world.store.awaiting_tickets
    assert world.audit() == [] and not world.store.ledger_unpublished


def test_a_lane_publishes_only_its_own_series_from_the_outbox() -> None:
    # Given every series' batches committed, their outcomes refused by SNS (left in the outbox)
    world = _lane_world()
    refusing = RecordingPublisher(refuse_all=True)
    issue_tickets(world.store, refusing, world.clock, limit=100)
    assert {s.series for s, _ in world.store.ledger_unpublished} == {0, 1, 2, 3}
    # When lane 1 of 4 runs a round
    publisher = RecordingPublisher()
    issue_tickets(world.store, publisher, world.clock, limit=100, lane=IssuerLane(1, 4))
    # Then it announced series 1's batches, and left the others' to their lanes
    assert {s.series for s, _ in world.store.ledger_unpublished} == {0, 2, 3}
    assert {o.reservation_id for o in publisher.published} == {
        a.reservation_id for (s, _), b in world.store.ledger.items() if s.series == 1 for a in b.assignments
    }


def test_the_scheduled_run_starts_the_other_lanes_once_one_of_theirs_waits_then_numbers_its_own() -> None:
    # Given 40 sales waiting, and a scheduled run of an issuer with 4 lanes
    world = _lane_world()
    lanes = RecordingLanes()
    fan_out = LaneFanOut(lanes, 4, until=NOW + 60)
    # When its first round runs
    result = issue_tickets(world.store, RecordingPublisher(), world.clock, limit=100, lane=fan_out)
    # Then it started lanes 1-3 until the run's end, and numbered only lane 0's sales
    assert lanes.started == [(1, 4, NOW + 60), (2, 4, NOW + 60), (3, 4, NOW + 60)]
    assert result.found == 40 and 0 < result.numbered < 40
    assert all(IssuerLane(0, 4).takes_sale(a.reservation_id) for b in result.batches for a in b.assignments)
    # and from then on it takes its own lane only, starting no lane again
    assert fan_out.lane == IssuerLane(0, 4)
    issue_tickets(world.store, RecordingPublisher(), world.clock, limit=100, lane=fan_out)
    assert len(lanes.started) == 3


def test_a_lane_that_could_not_start_leaves_the_scheduled_run_numbering_everything_until_it_starts() -> None:
    # Given a scheduled run whose lane 2 cannot be started at first
    world = _lane_world()
    lanes = RecordingLanes(refuse=(2,))
    fan_out = LaneFanOut(lanes, 4, until=NOW + 60)
    # When its first round runs
    first = issue_tickets(world.store, RecordingPublisher(), world.clock, limit=100, lane=fan_out)
    # Then it numbered every sale it found (lanes 1 and 3, started, only race it: safe)
    assert first.numbered == 40 and world.audit() == []
    assert [i for i, _, _ in lanes.started] == [1, 3] and fan_out.pending == [2]
    # And when a sale of another lane waits again, it starts lane 2 only
    for n in range(40, 60):
        world.reserve(f"r-{n}")
    issue_tickets(world.store, RecordingPublisher(), world.clock, limit=100, lane=fan_out)
    assert [i for i, _, _ in lanes.started] == [1, 3, 2] and fan_out.pending == []


def test_after_a_round_that_found_nothing_the_whole_index_is_probed_a_share_at_a_time() -> None:
    # Given an issuer with nothing to number until a sale comes before its fourth round
    world = World()
    store = FindRecorder(world.store, before={3: lambda: world.reserve("r-1")})
    # When it runs rounds for 20 s
    rounds = run_issuer(store, RecordingPublisher(), world.clock, limit=100, until=NOW + 20, idle_seconds=1)
    # Then its first round took the whole index, each next one a share of it in turn
    assert store.asked[0] == WHOLE_INDEX
    assert store.asked[1:3] == [IssuerLane(1, PROBE_SHARES), IssuerLane(2, PROBE_SHARES)]
    # And the sale was found by its share within a cycle of shares, then the whole index again
    found_at = next(i for i, r in enumerate(rounds) if r.found)
    assert 3 <= found_at < 3 + PROBE_SHARES and sum(r.numbered for r in rounds) == 1
    assert store.asked[found_at].takes_sale("r-1") and store.asked[found_at + 1] == WHOLE_INDEX


def test_a_lane_started_but_never_run_leaves_its_sales_to_the_next_scheduled_run_once_overdue() -> None:
    # Given 40 sales in 4 series, and lanes that start (Lambda took the events) but never run
    world = _lane_world()
    lanes = RecordingLanes()

    def scheduled_run() -> Any:
        fan_out = LaneFanOut(lanes, 4, until=world.clock.now() + 60)
        return run_issuer(
            world.store,
            RecordingPublisher(),
            world.clock,
            limit=100,
            until=world.clock.now() + 3,
            lane=fan_out,
        )

    # When the scheduled run runs, then the next a minute later
    first = scheduled_run()
    assert 0 < sum(r.numbered for r in first) < 40  # lane 0's share only: the others are the lanes'
    world.clock.sleep(60)
    second = scheduled_run()
    # Then the next run's first round numbered the sales the lanes left, overdue (30 s), gapless
    assert sum(r.numbered for r in first + second) == 40 and not world.store.awaiting_tickets
    assert second[0].numbered == 40 - sum(r.numbered for r in first)
    assert world.audit() == [] and LANE_OVERDUE_MS == 30_000


def test_an_event_whose_series_are_not_a_multiple_of_the_lanes_is_numbered_without_races() -> None:
    # Given 40 sales of an event with one series, and 4 lanes
    world = _lane_world(series=1)
    # When lanes 1-3 run (started for another event): every sale is series 0's, lane 0's: they
    # number none, and end after their idle rounds
    for index in (1, 2, 3):
        rounds = run_issuer(
            world.store,
            RecordingPublisher(),
            world.clock,
            limit=100,
            until=NOW + 60,
            lane=IssuerLane(index, 4),
        )
        assert (
            rounds[0].found > 0 and sum(r.numbered for r in rounds) == 0 and len(rounds) == LANE_IDLE_ROUNDS
        )
    # Then the scheduled run starts no lane for them (none would number one) and numbers every
    # sale itself, in one series, without a lost race
    lanes = RecordingLanes()
    run = issue_tickets(
        world.store, RecordingPublisher(), world.clock, limit=100, lane=LaneFanOut(lanes, 4, NOW + 60)
    )
    assert lanes.started == [] and run.numbered == 40 and run.lost_races == 0
    assert world.audit() == []


def test_a_started_lane_ends_once_its_rounds_find_nothing() -> None:
    # Given a started lane with nothing to number, its run lasting 60 s
    world = World()
    rounds = run_issuer(
        world.store, RecordingPublisher(), world.clock, limit=100, until=NOW + 60, lane=IssuerLane(1, 4)
    )
    # Then it ended after LANE_IDLE_ROUNDS empty rounds, not at the run's end
    assert len(rounds) == LANE_IDLE_ROUNDS and world.clock.now() < NOW + 15
    # (the scheduled run, the whole index, goes on to its end)
    whole = run_issuer(
        world.store, RecordingPublisher(), world.clock, limit=100, until=world.clock.now() + 60
    )
    assert len(whole) > LANE_IDLE_ROUNDS
