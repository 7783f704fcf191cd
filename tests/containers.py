"""What the unit tests of capacity pools, mapped pools and orders share (tests/unit/test_pools.py,
test_mapped_pools.py, test_orders.py): the settings and time they run at, the messages they send
(one class's `take`, a multi-line `order`) and `Container`, one Lambda instance's `reserve_seats`
with hints of its own, on the in-memory store (tests/fakes.py)."""

from __future__ import annotations

import json
from typing import Any

from seat_inventory.logic.admission_tokens import KeyRing, TokenVerifier
from seat_inventory.logic.inventory_hints import InventoryHints
from seat_inventory.logic.reserve_seats import QueueMessage, reserve_seats
from seat_inventory.models import ReservationOutcome
from seat_inventory.settings import Settings
from seat_tools.admission_keys import fixed_keys
from tests.fakes import FakeClock, InMemoryInventoryStore, RecordingPublisher
from tests.writes import spy_writes

SETTINGS = Settings(table_name="t", outcomes_topic_arn="arn:aws:sns:us-east-1:1:t", max_hold_seconds=3600)
NOW = 1_800_000_000
TTL = 15 * 86_400
RING = KeyRing("k1", {"k1": b"k" * 32})  # the key ring tokens are issued and checked with


def message(n: int, **body: object) -> QueueMessage:
    return QueueMessage(f"m-{n}", json.dumps(body))


def take(
    n: int,
    seat_class: str,
    quantity: int = 1,
    *,
    rid: str | None = None,
    hold: int | None = None,
    **extra: object,
) -> QueueMessage:
    """Message m-n: reservation r-n (or `rid`) of `quantity` seats of `seat_class` of event e-1 for
    customer c-n, a hold of `hold` seconds when given; `extra` goes into the body as it is."""
    body: dict[str, object] = {
        "reservation_id": rid or f"r-{n}",
        "event_id": "e-1",
        "seat_class": seat_class,
        "quantity": quantity,
        "customer_id": f"c-{n}",
        **extra,
    }
    if hold is not None:
        body.update(type="hold", hold_seconds=hold)
    return message(n, **body)


def order(
    n: int, *lines: tuple[str, int], rid: str | None = None, hold: int | None = None, **extra: object
) -> QueueMessage:
    """Message m-n: order o-n (or `rid`) of event e-1 with a line per (class, quantity), for customer
    c-n (or `customer`), a hold of `hold` seconds when given; other `extra` goes into the body."""
    body: dict[str, object] = {
        "reservation_id": rid or f"o-{n}",
        "event_id": "e-1",
        "customer_id": extra.pop("customer", f"c-{n}"),
        "lines": [{"seat_class": c, "quantity": q} for c, q in lines],
        **extra,
    }
    if hold is not None:
        body.update(type="hold", hold_seconds=hold)
    return QueueMessage(f"m-{n}", json.dumps(body))


def counting_pool_refusals(store: InMemoryInventoryStore) -> list[object]:
    """From now on, every write of `store` that a pool refused is appended to the list returned."""
    refusals: list[object] = []

    def counting(write: Any, refused: Any) -> None:
        if refused is not None and refused.pools_refused:
            refusals.append(refused)

    spy_writes(store, counting)
    return refusals


class StepClock:
    """One container's clock: time passes only while it waits."""

    def __init__(self) -> None:
        self.time = float(NOW)

    def now(self) -> float:
        return self.time

    def sleep(self, seconds: float) -> None:
        self.time += seconds

    def wait_for_aws(self, seconds: float, cause: str | None = None) -> None:
        """As the simulation's clock: `cause` names a refusal's limit (unused here)."""
        self.time += seconds


class Container:
    """One Lambda instance: `reserve_seats` on `store` with its own hints (`hints`, default fresh
    ones), checking admission tokens with `ring` when given; `published` holds the last run's
    answers."""

    def __init__(
        self,
        store: InMemoryInventoryStore,
        clock: FakeClock,
        *,
        ring: KeyRing | None = None,
        hints: InventoryHints | None = None,
    ) -> None:
        self.store, self.clock, self.hints = store, clock, hints or InventoryHints()
        self.admission = {"admission": TokenVerifier(fixed_keys(ring))} if ring is not None else {}
        self.published: list[ReservationOutcome] = []

    def run(self, *messages: QueueMessage) -> Any:
        publisher = RecordingPublisher()
        result = reserve_seats(
            list(messages),
            store=self.store,
            publisher=publisher,
            settings=SETTINGS,
            clock=self.clock,
            hints=self.hints,
            **self.admission,
        )
        self.published = publisher.published
        return result

    def answer(self, message_id: str) -> ReservationOutcome:
        [found] = [o for o in self.published if o.message_id == message_id]
        return found

    def answered(self, *messages: QueueMessage) -> dict[str, ReservationOutcome]:
        """Runs `messages`, none of which may fail; their answers by message id."""
        result = Container.run(self, *messages)
        assert result.failed_message_ids == []
        return {o.message_id or "": o for o in self.published}
