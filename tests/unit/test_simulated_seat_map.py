"""The simulation's store (`seat_tools.simulation.dynamodb`) on a mapped class: containers on a
virtual clock take seats through the contention model (row items, records, counters), each seat
once; the write units are those docs/guides/seat-maps.md gives."""

from __future__ import annotations

import json
import random

from seat_inventory.dal.seat_rows import MAX_CONCURRENT_SECTION_QUERIES
from seat_inventory.logic.inventory_hints import InventoryHints
from seat_inventory.logic.reserve_seats import QueueMessage, reserve_seats
from seat_inventory.logic.seat_map import load_json
from seat_inventory.models import Outcome, ReservationOutcome, SeatKey
from seat_inventory.settings import Settings
from seat_tools.contention.model import ContentionModel, ContentionSettings, read_units
from seat_tools.simulation.dynamodb import ROW_ITEM_BYTES, SimulatedTable, section_query
from seat_tools.simulation.memory_store import InMemoryInventoryStore
from seat_tools.simulation.scheduler import VirtualScheduler
from tests.fakes import RecordingPublisher
from tests.unit.test_simulation import _Clock

SETTINGS = Settings(
    table_name="t", outcomes_topic_arn="arn:aws:sns:us-east-1:1:t", rejection_record_ttl_days=15
)
MAP = {
    "classes": {"A": {"orphans": "allow"}},
    "sections": [{"id": "S", "class": "A", "rows": [{"id": f"R{r}", "seats": 10} for r in range(1, 4)]}],
}


def mapped_table(
    seat_map: dict,
) -> tuple[VirtualScheduler, InMemoryInventoryStore, ContentionModel, SimulatedTable]:
    """Event "e" with `seat_map` in the simulation's store, behind the contention model, seed 1."""
    scheduler = VirtualScheduler(start=1_800_000_000.0)
    data = InMemoryInventoryStore()
    data.add_seat_map("e", load_json(json.dumps(seat_map)))
    model = ContentionModel(ContentionSettings(), clock=scheduler.now, rng=random.Random(1))
    return scheduler, data, model, SimulatedTable(data, model, seed=1)


def test_containers_on_the_contention_model_take_each_seat_once() -> None:
    scheduler, data, _, table = mapped_table(MAP)
    answers: list[ReservationOutcome] = []

    def container(n: int) -> None:
        clock = _Clock(scheduler)
        store = table.client(clock)
        hints = InventoryHints()
        publisher = RecordingPublisher()
        for batch in range(4):
            messages = [
                QueueMessage(
                    f"m-{n}-{batch}-{i}",
                    json.dumps(
                        {
                            "reservation_id": f"r-{n}-{batch}-{i}",
                            "event_id": "e",
                            "seat_class": "A",
                            "quantity": 2,
                            "customer_id": f"c-{n}",
                        }
                    ),
                )
                for i in range(2)
            ]
            result = reserve_seats(
                messages, store=store, publisher=publisher, settings=SETTINGS, clock=clock, hints=hints
            )
            assert result.failed_message_ids == []
        answers.extend(publisher.published)

    for n in range(4):
        scheduler.spawn(f"container-{n}", lambda n=n: container(n))
    scheduler.run()

    taken = [seat for a in answers if a.outcome is Outcome.CONFIRMED for seat in a.seats or ()]
    assert len(taken) == len(set(taken)) == 30  # 32 pairs asked, 15 fit: each seat sold once
    assert sum(1 for a in answers if a.outcome is Outcome.SOLD_OUT) == 32 - 15
    rows = data.seat_rows[SeatKey("e", "A")].values()
    assert sum(r.sold for r in rows) == 30 and sum(r.available for r in rows) == 0
    assert table.requests["TransactWriteItems"] >= 15  # one per take (plus the ones refused)
    # The race was real: containers met on the same row items (conflicts, retried in place) and
    # placed on stale views (guards refused, the rows learned and the request placed again).
    cancelled = table.model.counters().transactions_cancelled
    assert cancelled.get("TransactionConflict", 0) > 0 and cancelled.get("ConditionalCheckFailed", 0) > 0


def test_a_view_of_the_class_is_one_query_per_section_billed_by_the_bytes_it_returns() -> None:
    # Given a class of two sections: 3 row items and 12 row items (ROW_ITEM_BYTES each)
    two_sections = {
        "classes": {"A": {"orphans": "allow"}},
        "sections": [
            {"id": "S", "class": "A", "rows": [{"id": f"R{r}", "seats": 10} for r in range(1, 4)]},
            {"id": "T", "class": "A", "rows": [{"id": f"R{r}", "seats": 10} for r in range(1, 13)]},
        ],
    }
    scheduler, _, model, table = mapped_table(two_sections)
    seen: list[int] = []

    def container() -> None:
        rows = table.client(_Clock(scheduler)).read_seat_rows(SeatKey("e", "A"))
        seen.append(len(rows))

    # When a container reads the whole class
    scheduler.spawn("container", container)
    scheduler.run()

    # Then: one Query per section, each billed as its items' bytes rounded up to 4 KB, eventually
    # consistent (half): 3 x 400 bytes -> 0.5 units, 12 x 400 = 4,800 bytes -> 1 unit
    assert seen == [15]
    assert table.requests["Query"] == 2
    assert 3 * ROW_ITEM_BYTES <= 4096 < 12 * ROW_ITEM_BYTES <= 8192
    assert model.counters().read_units_consumed == 0.5 + 1.0
    assert section_query(SeatKey("e", "A"), "T", 12).read_units == read_units(4800, consistent=False) == 1.0


def test_a_view_of_many_sections_is_read_sixteen_queries_at_a_time() -> None:
    # Given a class of 48 sections (as each of the stadium's)
    sections = [{"id": f"S{n}", "class": "A", "rows": [{"id": "R1", "seats": 10}]} for n in range(48)]
    scheduler, _, _, table = mapped_table({"classes": {"A": {"orphans": "allow"}}, "sections": sections})
    took: list[float] = []

    def container() -> None:
        started = scheduler.now()
        rows = table.client(_Clock(scheduler)).read_seat_rows(SeatKey("e", "A"))
        took.append(scheduler.now() - started)
        assert len(rows) == 48

    scheduler.spawn("container", container)
    scheduler.run()

    # Then 48 Queries in three rounds of 16 (MAX_CONCURRENT_SECTION_QUERIES, as the DAL sends
    # them), each round as long as its slowest: about 3 single-item latencies (p50 7.55 ms, p90
    # 11.3 ms), not 48 of them one after the other (about 0.36 s)
    assert MAX_CONCURRENT_SECTION_QUERIES == 16
    assert table.requests["Query"] == 48
    assert 3 * 0.00755 < took[0] < 3 * 0.030


def test_named_rows_are_one_consistent_batch_get_each_item_its_own_units() -> None:
    scheduler, _, model, table = mapped_table(MAP)

    def container() -> None:
        table.client(_Clock(scheduler)).read_seat_rows(SeatKey("e", "A"), ["S-R1#0", "S-R2#0"])

    scheduler.spawn("container", container)
    scheduler.run()

    assert table.requests["BatchGetItem"] == 1
    assert model.counters().read_units_consumed == 2.0  # 1 unit each: strongly consistent, under 4 KB


def test_claims_sent_together_grant_the_first_answered_one_unit_each() -> None:
    # Given two containers claiming the same slice at the same moment, a third another slice
    scheduler, data, model, table = mapped_table(MAP)
    granted: dict[str, bool] = {}

    def container(owner: str, part: str) -> None:
        now = scheduler.now()
        store = table.client(_Clock(scheduler))
        granted[owner] = store.claim(SeatKey("e", "A"), part, owner, now=now, until=now + 0.5)

    for owner, part in (("a", "0"), ("b", "0"), ("c", "1")):
        scheduler.spawn(owner, lambda owner=owner, part=part: container(owner, part))
    scheduler.run()

    # Then one of the two holds slice 0, the third slice 1: each claim a 1-unit UpdateItem
    assert sorted(granted.values()) == [False, True, True] and granted["c"]
    holder = data.claims[(SeatKey("e", "A"), "0")][0]
    assert granted[holder] and holder in ("a", "b")
    assert table.requests["UpdateItem"] == 3
    assert model.counters().write_units_consumed == 3.0
