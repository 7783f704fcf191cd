"""`seats waitlist simulate`: a waiting list of many entries served after a release of many seats,
run through the service's own code on the in-memory store, with each DynamoDB call the sweeper makes
metered: how long offering every seat takes and what an offer costs (modelled).

The model (docs/guides/waiting-list.md, "How fast a list is served"): the sweeper's calls run one
after another, as the code makes them; each takes the p50 latency published for its kind
(docs/reference/sources.md, "DynamoDB latency": `PutItem` 7.55 ms for a single-item read or write,
`TransactWriteItems` 25.3 ms at 5 items and 32.1 ms at 25, extrapolated linearly); a
transactional write costs 2 write units per item (each under 1 KB), a plain write 1, a consistent
read 1 read unit per 4 KB (a place is about 200 bytes) or per item of a `BatchGetItem`; prices are
`seat_tools.bench.pricing.PRICES`. Joins and the release are not metered.
"""

from __future__ import annotations

import dataclasses
import json
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from seat_inventory.logic.offer_rounds import run_offer_rounds
from seat_inventory.logic.reserve_seats import QueueMessage, reserve_seats
from seat_inventory.logic.waitlist_entries import JOINS_PER_TRANSACTION, join_waitlist
from seat_inventory.models import (
    WAITLIST_LANES,
    LaneWrite,
    ListedReturn,
    ListRefused,
    Outcome,
    Place,
    Rebalance,
    RequestType,
    ReservationOutcome,
    ReservationRequest,
    SeatKey,
    WaitingList,
)
from seat_inventory.settings import Settings
from seat_inventory.transaction import lane_actions, rebalance_actions, return_actions
from seat_tools.bench.pricing import PRICES
from seat_tools.simulation.memory_store import InMemoryInventoryStore

KEY = SeatKey("waitlist-sim", "GA")
SINGLE_ITEM_MS = 7.55
PLACE_BYTES = 200


def transaction_ms(items: int) -> float:
    """The p50 latency of a `TransactWriteItems` of `items` (linear through 5 and 25 items)."""
    return 25.3 + (items - 5) * (32.1 - 25.3) / 20


@dataclass
class Meter:
    """What the metered calls cost: modelled milliseconds, write and read units, transactions."""

    ms: float = 0.0
    write_units: float = 0.0
    read_units: float = 0.0
    transactions: int = 0
    actions: int = 0
    calls: int = 0
    on: bool = False

    def single(self, *, writes: float = 0.0, reads: float = 0.0) -> None:
        if self.on:
            self.calls += 1
            self.ms += SINGLE_ITEM_MS
            self.write_units += writes
            self.read_units += reads

    def transaction(self, actions: int) -> None:
        if self.on:
            self.calls += 1
            self.transactions += 1
            self.actions += actions
            self.ms += transaction_ms(actions)
            self.write_units += 2 * actions


@dataclass
class MeteredStore(InMemoryInventoryStore):
    """The in-memory store, each waiting list call metered as the table would serve it."""

    meter: Meter = field(default_factory=Meter)

    def read_waitlist(self, key: SeatKey) -> WaitingList | None:
        self.meter.single(reads=1 + WAITLIST_LANES)
        return super().read_waitlist(key)

    def read_places(self, key: SeatKey, lane: int, *, after: str, before: str, limit: int) -> list[Place]:
        places = super().read_places(key, lane, after=after, before=before, limit=limit)
        self.meter.single(reads=max(1, math.ceil(len(places) * PLACE_BYTES / 4096)))
        return places

    def fence_lanes(self, key: SeatKey, lanes: Sequence[int], frontier: str) -> None:
        for _ in lanes:
            self.meter.single(writes=1)
        super().fence_lanes(key, lanes, frontier)

    def write_lanes(self, writes: Sequence[LaneWrite]) -> list[ListRefused | None]:
        for write in writes:
            self.meter.transaction(len(lane_actions(write)))
        return super().write_lanes(writes)

    def rebalance(self, rebalance: Rebalance) -> ListRefused | None:
        self.meter.transaction(len(rebalance_actions(rebalance)))
        return super().rebalance(rebalance)

    def return_listed(self, back: ListedReturn) -> ListRefused | None:
        self.meter.transaction(len(return_actions(back)))
        return super().return_listed(back)


@dataclass
class _Clock:
    time: float = 1_800_000_000.0

    def now(self) -> float:
        return self.time

    def sleep(self, seconds: float) -> None:
        self.time += seconds


@dataclass
class WaitlistSimulation:
    """One run's figures (`ms`, units and costs modelled, see the module's docstring)."""

    entries: int
    seats_released: int
    shards: int
    seed: int
    entries_offered: int
    seats_offered: int
    sweeper_runs: int
    transactions: int
    actions: int
    calls: int
    modelled_seconds: float
    write_units: float
    read_units: float
    cost_usd: float
    cost_per_offer_usd: float
    in_join_order: bool

    def as_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), indent=2, sort_keys=True)


def simulate_waitlist(entries: int, released: int, *, shards: int = 1, seed: int = 1) -> WaitlistSimulation:
    """A class of `released` seats sold out, `entries` entries of 1 or 2 seats joined, every sale
    cancelled at once, and the sweeper run until no more seat can be offered."""
    rng = random.Random(seed)
    store = MeteredStore()
    store.add_event(KEY.event_id, capacity=released, shards=shards)
    store.open_waitlist(KEY, offer_seconds=900)
    clock = _Clock()
    settings = Settings(table_name="sim", outcomes_topic_arn="sim")
    sales = _sell_out(store, clock, settings, released)
    order = _join(store, clock, entries, rng)
    cancels = [
        QueueMessage(f"x-{rid}", json.dumps({"type": "cancel", "reservation_id": rid})) for rid in sales
    ]
    reserve_seats(
        cancels, store=store, publisher=_Publisher(), settings=settings, clock=clock, waitlist=store
    )
    store.meter.on = True
    runs = offered = seats = 0
    while True:
        runs += 1
        result = run_offer_rounds(store, _Publisher(), clock, limit=1000)
        offered, seats = offered + result.offered, seats + result.seats_offered
        if not result.offered:
            break
    store.meter.on = False
    got = {rid for rid, a in store.records.items() if a.outcome is Outcome.OFFERED}
    meter = store.meter
    cost = meter.write_units * PRICES["dynamodb_write"].usd + meter.read_units * PRICES["dynamodb_read"].usd
    return WaitlistSimulation(
        entries=entries,
        seats_released=released,
        shards=shards,
        seed=seed,
        entries_offered=offered,
        seats_offered=seats,
        sweeper_runs=runs - 1,
        transactions=meter.transactions,
        actions=meter.actions,
        calls=meter.calls,
        modelled_seconds=round(meter.ms / 1000, 3),
        write_units=meter.write_units,
        read_units=meter.read_units,
        cost_usd=round(cost, 6),
        cost_per_offer_usd=round(cost / offered, 9) if offered else 0.0,
        in_join_order=set(order[: len(got)]) == got,
    )


class _Publisher:
    """Publishes nothing anywhere (the run counts offers, not answers); never refuses."""

    def publish(self, outcomes: Sequence[ReservationOutcome], **_: Any) -> list[ReservationOutcome]:
        return []

    def publish_soon(self, outcomes: Sequence[ReservationOutcome], **_: Any) -> _Published:
        return _Published()


class _Published:
    def wait(self) -> list[ReservationOutcome]:
        return []


def _sell_out(store: MeteredStore, clock: _Clock, settings: Settings, seats: int) -> list[str]:
    """Sales of 10 seats (or fewer, the last) until the class is sold out; their reservation ids."""
    sales, messages = [], []
    for n in range(math.ceil(seats / 10)):
        rid, quantity = f"sale-{n}", min(10, seats - 10 * n)
        body = {
            "reservation_id": rid,
            "event_id": KEY.event_id,
            "quantity": quantity,
            "customer_id": f"b-{n}",
        }
        messages.append(QueueMessage(f"m-{rid}", json.dumps(body)))
        sales.append(rid)
    for start in range(0, len(messages), 10):
        batch = messages[start : start + 10]
        reserve_seats(batch, store=store, publisher=_Publisher(), settings=settings, clock=clock)
    return sales


def _join(store: MeteredStore, clock: _Clock, entries: int, rng: random.Random) -> list[str]:
    """`entries` requests refused SOLD_OUT (recorded) joining in transactions of the most a join
    takes, a millisecond apart; their reservation ids in join order."""
    order: list[str] = []
    for start in range(0, entries, JOINS_PER_TRANSACTION):
        refused = []
        for n in range(start, min(entries, start + JOINS_PER_TRANSACTION)):
            rid = f"w-{n}"
            request = ReservationRequest(
                f"m-{rid}",
                rid,
                KEY.event_id,
                KEY.seat_class,
                rng.randint(1, 2),
                f"c-{n}",
                RequestType.RESERVE,
                waitlist=True,
            )
            refusal = ReservationOutcome(
                rid,
                Outcome.SOLD_OUT,
                "sold out",
                KEY.event_id,
                KEY.seat_class,
                request.quantity,
                request.customer_id,
                remaining=0,
                message_id=request.message_id,
                request_type=RequestType.RESERVE,
            )
            refused.append((request, refusal))
        store.record_rejections([o for _, o in refused], expires_at=int(clock.now()) + 86_400)
        answers, _ = join_waitlist(KEY, refused, store=store, clock=clock)
        order += [rid for rid, a in answers.items() if a.outcome is Outcome.WAITLISTED]
        clock.time += 0.001
    return order


def describe(run: WaitlistSimulation) -> list[str]:
    """The run's figures as lines of text."""
    in_order = "yes" if run.in_join_order else "NO"
    return [
        f"{run.entries:,} entries waiting, {run.seats_released:,} seats released at once"
        f" ({run.shards} shard item(s), seed {run.seed})",
        f"offered: {run.seats_offered:,} seats to {run.entries_offered:,} entries, in join order: {in_order}",
        f"sweeper runs: {run.sweeper_runs}; {run.transactions:,} transactions ({run.actions:,} actions),"
        f" {run.calls:,} DynamoDB calls",
        f"modelled time to offer them all: {run.modelled_seconds:.1f} s"
        " (the sweeper's calls one after another at their p50 latency)",
        f"modelled cost: ${run.cost_usd:.4f} ({run.write_units:,.0f} write units,"
        f" {run.read_units:,.0f} read units); ${run.cost_per_offer_usd * 1e6:.2f} per million offers",
    ]
