"""Requests offered to the checkout API, as API Gateway throttles them (docs/explanation/simulation.md).

API Gateway throttles with token buckets (its "Throttle requests" page): the stage's (the
template's `ApiThrottlingRateLimit` / `ApiThrottlingBurstLimit`, 1,000 / 2,000 by default) and
the account's in the region (10,000 requests a second, burst 5,000, by default; shared by every
API of the account). A request takes a token from both, or is answered 429 Too Many Requests and
sends nothing. Each accepted request is one SQS `SendMessage` (the REST API's SQS integration),
which makes it visible after the call's latency.

The modelled client (`ApiSettings.client_retries`) sends a request answered 429 again after a
full-jitter exponential back-off (a random pause up to 1 s, 2 s, 4 s, ..., at most 20 s: the
AWS SDKs' standard mode for throttling), up to that many times; by default it does not retry,
and the request stays refused (counted: `api.refused`). Whatever the client does, every 429 is
an answer API Gateway gave, counted in `api.responses_429`.
"""

from __future__ import annotations

import heapq
import random
from dataclasses import dataclass, field

from seat_tools.simulation.event_source import LatencyModel, Message

API_KINDS = ("rest", "http")
# API Gateway's default account throttle per region (the API Gateway quotas page).
ACCOUNT_RATE_LIMIT = 10_000.0
ACCOUNT_BURST_LIMIT = 5_000.0
# The template's stage throttle (ApiThrottlingRateLimit / ApiThrottlingBurstLimit defaults).
STAGE_RATE_LIMIT = 1_000.0
STAGE_BURST_LIMIT = 2_000.0
CLIENT_BACKOFF_BASE_S = 1.0
CLIENT_BACKOFF_CAP_S = 20.0


@dataclass(frozen=True)
class ApiSettings:
    """The checkout API's throttles, its kind (for its price) and the client's retries."""

    kind: str = "rest"
    rate_limit: float = STAGE_RATE_LIMIT
    burst_limit: float = STAGE_BURST_LIMIT
    account_rate_limit: float = ACCOUNT_RATE_LIMIT
    account_burst_limit: float = ACCOUNT_BURST_LIMIT
    client_retries: int = 0

    def __post_init__(self) -> None:
        if self.kind not in API_KINDS:
            raise ValueError(f"the API is rest or http, not {self.kind!r}")
        for name in ("rate_limit", "burst_limit", "account_rate_limit", "account_burst_limit"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be positive, not {getattr(self, name)}")
        if not 0 <= self.client_retries <= 10:
            raise ValueError(f"client retries must be 0 to 10, not {self.client_retries}")


@dataclass
class ApiTally:
    """What API Gateway answered."""

    offered: int = 0  # requests the clients made (first attempts)
    attempts: int = 0  # every request API Gateway saw, retries included
    accepted: int = 0  # sent on to SQS
    responses_429: int = 0  # answered Too Many Requests (each attempt)
    refused: int = 0  # requests still refused after the client's retries
    refused_at: list[float] = field(default_factory=list)  # when each 429 was answered

    def as_dict(self) -> dict[str, int]:
        return {
            "offered": self.offered,
            "attempts": self.attempts,
            "accepted": self.accepted,
            "responses_429": self.responses_429,
            "refused": self.refused,
        }


class _Bucket:
    def __init__(self, rate: float, burst: float, now: float) -> None:
        self.rate = rate
        self.capacity = burst
        self.tokens = burst
        self.at = now

    def refill(self, now: float) -> float:
        if now > self.at:
            self.tokens = min(self.capacity, self.tokens + (now - self.at) * self.rate)
            self.at = now
        return self.tokens


def through_api(
    offered: list[tuple[float, int, str]],
    settings: ApiSettings,
    send_latency: LatencyModel,
    rng: random.Random,
) -> tuple[list[Message], ApiTally]:
    """The messages the API puts on the queue for requests `offered` as (time, request index,
    message id), sorted by time; and what it answered."""
    tally = ApiTally(offered=len(offered))
    start = offered[0][0] if offered else 0.0
    stage = _Bucket(settings.rate_limit, settings.burst_limit, start)
    account = _Bucket(settings.account_rate_limit, settings.account_burst_limit, start)
    # (time, order, attempt, request, message id, first attempt's time)
    pending = [
        (at, order, 0, request, message_id, at) for order, (at, request, message_id) in enumerate(offered)
    ]
    heapq.heapify(pending)
    order = len(pending)
    messages: list[Message] = []
    while pending:
        at, _, attempt, request, message_id, first = heapq.heappop(pending)
        tally.attempts += 1
        if stage.refill(at) >= 1 and account.refill(at) >= 1:
            stage.tokens -= 1
            account.tokens -= 1
            tally.accepted += 1
            sent = at + send_latency.sample(rng)
            messages.append(Message(message_id, request, sent, requested_at=first))
            continue
        tally.responses_429 += 1
        tally.refused_at.append(at)
        if attempt < settings.client_retries:
            pause = rng.random() * min(CLIENT_BACKOFF_BASE_S * 2**attempt, CLIENT_BACKOFF_CAP_S)
            heapq.heappush(pending, (at + pause, order, attempt + 1, request, message_id, first))
            order += 1
        else:
            tally.refused += 1
    messages.sort(key=lambda m: m.sent_at)
    return messages, tally
