"""The limits every transaction of the service obeys, and how far one group's settlement goes."""

from __future__ import annotations

# DynamoDB allows 100 actions per transaction (docs/reference/sources.md): one inventory update, one record
# per reservation and, when the class has a per-customer limit, one counter update per customer.
MAX_ACTIONS_PER_TRANSACTION = 100
# Without a per-customer limit: one inventory update plus 99 reservation records.
MAX_RESERVATIONS_PER_TRANSACTION = MAX_ACTIONS_PER_TRANSACTION - 1
# Each refused round teaches the planner something (a recorded duplicate, the seats left, a
# missing event, a closed sale, a changed status); under heavy contention the state can change
# between rounds, so bound it. A conflict or throttling teaches nothing and is bounded by the
# deadline instead (`logic.retry_deadline`); newly learned customers' counters are bounded by the
# group's customers: neither counts as a round. A bound, not a tuning: the runs of
# docs/explanation/sharding.md ("How to size K",
# `seats simulate --requests 1000000 --containers 64 --shards 64`)
# hand back no message, so no group reached it.
MAX_SETTLE_ROUNDS = 8
