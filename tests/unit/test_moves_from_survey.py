"""A sharded class whose items each hold fewer seats than a request (the sell-out's last seats):
the seats move into one item in the same transaction, planned from the survey of the items and
guarded by each donor's `available >=`, without a consistent read of the whole class (which any
write in flight on one of its items refuses); a SOLD_OUT still rests on that read alone
(docs/explanation/sharding.md, "Taking seats")."""

from __future__ import annotations

import dataclasses
import json
import random
from collections.abc import Sequence
from dataclasses import dataclass, field

from seat_inventory.logic.inventory_hints import InventoryHints
from seat_inventory.logic.reserve_seats import QueueMessage, reserve_seats
from seat_inventory.logic.shards import gather_moves, gather_target
from seat_inventory.models import (
    Outcome,
    ReservationOutcome,
    SeatClassInventory,
    SeatKey,
    ShardSurvey,
    Take,
    WriteRefused,
)
from seat_inventory.settings import Settings
from tests.fakes import FakeClock, InMemoryInventoryStore, RecordingPublisher
from tests.writes import GroupWrite

SETTINGS = Settings(table_name="t", outcomes_topic_arn="arn:aws:sns:us-east-1:1:t")
KEY = SeatKey("e-1", "GA")
NOW = 1000.0


@dataclass
class SpyStore(InMemoryInventoryStore):
    """The in-memory store, noting whole reads and each write; `stale` (shard -> seats) makes its
    surveys show those shards as they were before another container took from them."""

    whole_reads: int = 0
    writes: list[GroupWrite] = field(default_factory=list)
    stale: dict[int, int] = field(default_factory=dict)

    def read_inventory(
        self, key: SeatKey, *, whole: bool = True, customers: Sequence[str] = ()
    ) -> SeatClassInventory | None:
        if whole and not customers:
            self.whole_reads += 1
        return super().read_inventory(key, whole=whole, customers=customers)

    def survey_shards(self, key: SeatKey, shard_items: int) -> list[ShardSurvey]:
        survey = super().survey_shards(key, shard_items)
        return [dataclasses.replace(s, available=self.stale.get(s.shard, s.available)) for s in survey]

    def take(self, take: Take) -> WriteRefused | None:
        self.writes.append(GroupWrite.of(take.parts[0], take))
        return super().take(take)

    def record_rejections(
        self, outcomes: Sequence[ReservationOutcome], *, expires_at: int
    ) -> WriteRefused | None:
        self.writes.append(GroupWrite.rejections(outcomes, expires_at))
        return super().record_rejections(outcomes, expires_at=expires_at)


def send(store: SpyStore, quantities: Sequence[int]) -> dict[str, Outcome]:
    messages = [
        QueueMessage(
            f"m-{n}",
            json.dumps(
                {"reservation_id": f"r-{n}", "event_id": KEY.event_id, "quantity": q, "customer_id": f"c-{n}"}
            ),
        )
        for n, q in enumerate(quantities)
    ]
    result = reserve_seats(
        messages,
        store=store,
        publisher=RecordingPublisher(),
        settings=SETTINGS,
        clock=FakeClock(),
        hints=InventoryHints(random.Random(5)),
    )
    assert result.handed_back == {}
    return {o.reservation_id: o.outcome for o in result.published}


def shards_consistent(store: SpyStore) -> bool:
    item = store.inventory[KEY]
    return all(s.available + s.held + s.sold == s.capacity and s.available >= 0 for s in item.shard_seats())


def test_seats_spread_one_per_item_move_into_one_item_without_a_whole_read() -> None:
    store = SpyStore()
    store.add_event(KEY.event_id, 8, shards=8)  # one seat on each of 8 items

    answers = send(store, [2, 3])

    assert answers == {"r-0": Outcome.CONFIRMED, "r-1": Outcome.CONFIRMED}
    (write,) = store.writes
    # 5 seats: the target's own seat and 4 moved in, each move from another item.
    assert write.seats_taken == 5 and sum(write.moves.values()) == 4 and write.shard not in write.moves
    assert store.whole_reads == 0
    assert store.inventory[KEY].available == 3 and store.inventory[KEY].sold == 5
    assert shards_consistent(store)


def test_a_survey_showing_too_few_seats_leaves_the_sold_out_to_a_whole_read() -> None:
    store = SpyStore()
    store.add_event(KEY.event_id, 4, shards=4)

    answers = send(store, [2, 2, 2])

    # 4 seats over 4 items: two requests confirmed with moves, the third refused after a
    # consistent read of every item showed none left.
    assert answers == {"r-0": Outcome.CONFIRMED, "r-1": Outcome.CONFIRMED, "r-2": Outcome.SOLD_OUT}
    assert store.whole_reads == 1
    assert store.inventory[KEY].available == 0 and store.inventory[KEY].sold == 4
    assert shards_consistent(store)


def test_a_donor_that_gave_its_seats_since_the_survey_refuses_the_move_and_nothing_is_oversold() -> None:
    store = SpyStore()
    store.add_event(KEY.event_id, 4, shards=4)
    # Another container took shards 1-3's seats since: the survey still shows them.
    for shard in (1, 2, 3):
        store.stale[shard] = 1
    item = store.inventory[KEY]
    store.inventory[KEY] = dataclasses.replace(
        item,
        available=1,
        sold=3,
        shards=tuple(
            s if s.shard == 0 else dataclasses.replace(s, available=0, sold=1) for s in item.shard_seats()
        ),
    )

    answers = send(store, [2])

    # The move's guard refused (its donor has nothing left); the whole read then shows 1 seat.
    assert answers == {"r-0": Outcome.SOLD_OUT}
    assert store.writes[0].moves and store.whole_reads == 1
    assert store.inventory[KEY].available == 1 and store.inventory[KEY].sold == 3
    assert shards_consistent(store)


def test_the_target_is_drawn_from_the_idle_items_with_seats_and_the_idle_donors_give_first() -> None:
    survey = [
        ShardSurvey(0, 1, NOW),  # in use: neither target nor first donor
        ShardSurvey(1, 3, None),
        ShardSurvey(2, 3, None),
        ShardSurvey(3, 1, None),
        ShardSurvey(4, 0, None),
    ]
    targets = [gather_target(survey, NOW, random.Random(seed)).shard for seed in range(700)]
    assert set(targets) == {1, 2, 3}  # never the item in use, nor one without seats
    assert targets.count(1) > 2 * targets.count(3) and targets.count(2) > 2 * targets.count(3)  # 3:3:1
    target = survey[1]
    assert gather_moves(survey, target, 5, NOW) == {2: 2}
    assert gather_moves(survey, target, 7, NOW) == {2: 3, 3: 1}
    assert gather_moves(survey, target, 8, NOW) == {2: 3, 3: 1, 0: 1}
