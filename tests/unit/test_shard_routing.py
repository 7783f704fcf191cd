"""logic.shards.pick_shard: where a container goes when it needs a shard item."""

from __future__ import annotations

import random

from seat_inventory.logic.shards import SHARD_IN_USE_SECONDS, pick_shard, shards_with
from seat_inventory.models import ShardSurvey

NOW = 1000.0


def test_an_item_another_container_took_from_a_moment_ago_is_not_picked() -> None:
    survey = [
        ShardSurvey(0, 50, NOW - 0.05),
        ShardSurvey(1, 50, NOW - SHARD_IN_USE_SECONDS - 0.01),
        ShardSurvey(2, 50, NOW - 0.1),
    ]
    picks = {pick_shard(survey, 1, NOW, random.Random(seed)) for seed in range(50)}
    assert picks == {ShardSurvey(1, 50, NOW - SHARD_IN_USE_SECONDS - 0.01)}


def test_only_items_with_the_seats_count_and_the_fuller_ones_are_drawn_more_often() -> None:
    survey = [ShardSurvey(n, seats, None) for n, seats in enumerate([0, 3, 40, 30, 20, 10])]
    picks = [pick_shard(survey, 5, NOW, random.Random(seed)).shard for seed in range(1000)]  # type: ignore[union-attr]
    assert set(picks) == {2, 3, 4, 5}  # the four with 5 seats or more (40, 30, 20, 10)
    counts = [picks.count(shard) for shard in (2, 3, 4, 5)]
    assert counts == sorted(counts, reverse=True) and counts[0] > 2.5 * counts[3]  # 4:3:2:1
    assert [s.shard for s in shards_with(survey, 5)] == [2, 3, 4, 5]


def test_none_when_every_item_with_the_seats_is_in_use_or_none_has_them() -> None:
    busy = [ShardSurvey(0, 50, NOW), ShardSurvey(1, 2, None)]
    assert pick_shard(busy, 5, NOW, random.Random(1)) is None  # wait for shard 0, or share it
    assert shards_with(busy, 5) == [ShardSurvey(0, 50, NOW)]
    assert pick_shard([ShardSurvey(0, 4, None)], 5, NOW, random.Random(1)) is None
    assert shards_with([ShardSurvey(0, 4, None)], 5) == []


def test_when_sharing_items_in_use_count_and_the_draw_spreads_over_them() -> None:
    survey = [ShardSurvey(n, seats, NOW) for n, seats in enumerate([40, 30, 20, 10])]
    assert pick_shard(survey, 5, NOW, random.Random(1)) is None
    picked = {pick_shard(survey, 5, NOW, random.Random(seed), share=True).shard for seed in range(100)}  # type: ignore[union-attr]
    assert picked == {0, 1, 2, 3}  # not all on the fullest: the containers left over spread out


def test_containers_surveying_at_once_spread_over_equal_items() -> None:
    # 64 containers starting together see 64 equal idle items (a sale's first second): a draw
    # over all of them, not over the fuller half, so that fewer meet on one item.
    survey = [ShardSurvey(n, 313, None) for n in range(64)]
    picks = {pick_shard(survey, 2, NOW, random.Random(seed)).shard for seed in range(400)}  # type: ignore[union-attr]
    assert picks == set(range(64))
