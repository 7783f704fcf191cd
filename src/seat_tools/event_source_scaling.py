"""How Lambda's SQS event source mapping reads the queue and grows its concurrency, in its two modes;
the simulation models it and `seats onsale plan` plans with it. Sources: docs/reference/sources.md.

- Both modes read the queue with `ReceiveMessage`, at most 10 messages a call
  (`SQS_RECEIVE_LIMIT`), long polling when the queue is empty; a batch of `BatchSize` messages is
  gathered from several calls, until it is full or `MaximumBatchingWindowInSeconds` has passed.
- Standard mode (the default): 5 batches at once as messages arrive, then up to 300 more
  concurrent invocations a minute while messages wait, up to `ScalingConfig.MaximumConcurrency`
  (at most 1,250 per mapping) (https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-scaling.html).
  AWS documents no rate for a standard-mode reader: each of them is modelled as reading its batch
  call after call (each call its latency) and then invoking the function with it.
- Provisioned mode (`ProvisionedPollerConfig`, template parameter `EventPollers`): event pollers
  running before the first message. The Lambda developer guide (same page): "each event poller
  can handle up to 1 MB/sec of throughput, up to 10 concurrent invokes, or up to 10 Amazon SQS
  polling API calls per second" (also the AWS News Blog of 2025-11-14); so a poller receives at
  most 10 x 10 = 100 messages a second (`MESSAGES_PER_EVENT_POLLER_S`). The API reference calls
  a poller "a compute unit that provides approximately 5 MBps of throughput": the cautious 1 MB/s
  is the default, 5 MB/s an option. `MinimumPollers` (2-200) run from the start; Lambda adds
  pollers up to `MaximumPollers` (2-2,000), "quickly adding up to 1,000 concurrency per minute"
  (100 pollers a minute) when it "detects the growing backlog within seconds". The template sets
  the minimum and the maximum to the same number. Billed per poller-hour
  (`pricing.PRICES["event_poller"]`), for as long as the pollers are set.
- Provisioned concurrency (the template's `ProvisionedConcurrency`): that many execution
  environments initialised before the first invocation, so the invocations they take pay only
  the first invocation's part of the cold start; more invocations than that start environments
  of their own, cold. Billed per GB-second configured, from enabling it to disabling it rounded
  up to 5 minutes (https://aws.amazon.com/lambda/pricing/), and their invocations' duration at a
  lower rate (`pricing.PRICES["lambda_provisioned_concurrency"]`, `["lambda_duration_provisioned"]`).
"""

from __future__ import annotations

import math

SQS_RECEIVE_LIMIT = 10  # messages per ReceiveMessage (and per DeleteMessageBatch, SendMessageBatch)
# Lambda long-polls an empty queue; SQS's longest wait (WaitTimeSeconds) is 20 s.
LONG_POLL_S = 20.0

INITIAL_CONCURRENT_BATCHES = 5
SCALE_UP_PER_MINUTE = 300
STANDARD_MODE_MAX_CONCURRENCY = 1_250  # per event source mapping, without a MaximumConcurrency

INVOCATIONS_PER_EVENT_POLLER = 10
RECEIVES_PER_EVENT_POLLER_S = 10.0  # "up to 10 Amazon SQS polling API calls per second"
MESSAGES_PER_EVENT_POLLER_S = RECEIVES_PER_EVENT_POLLER_S * SQS_RECEIVE_LIMIT
EVENT_POLLER_BYTES_PER_S = 1_000_000.0  # "up to 1 MB/sec" (the developer guide; cautious)
EVENT_POLLER_BYTES_PER_S_API_REFERENCE = 5_000_000.0  # "approximately 5 MBps" (the API reference)
MIN_EVENT_POLLERS = 2  # an SQS mapping in provisioned mode needs at least 2
MAX_MINIMUM_EVENT_POLLERS = 200  # ProvisionedPollerConfig.MinimumPollers is at most 200
MAX_MAXIMUM_EVENT_POLLERS = 2_000  # ProvisionedPollerConfig.MaximumPollers is at most 2,000
POLLER_CONCURRENCY_PER_MINUTE = 1_000  # "quickly adding up to 1,000 concurrency per minute"
# "detects the growing backlog within seconds": how many is not documented; assumed.
POLLER_BACKLOG_DETECTION_S = 5.0
EVENT_POLLER_BILLED_MINIMUM_S = 60.0  # pollers are billed per second, at least a minute
# Assumed: the pollers are set this long before the sale's first message (an event source
# mapping's update takes minutes to apply) and set back to 0 once the sale is answered.
EVENT_POLLER_LEAD_S = 600.0
PROVISIONED_CONCURRENCY_BILLING_STEP_S = 300.0  # billed from enabling to disabling, in 5-minute steps
# Assumed: set 10 minutes before the sale's first message (allocating the environments takes
# minutes) and removed once the sale is answered.
PROVISIONED_CONCURRENCY_LEAD_S = 600.0


def scale_up_delay_s(index: int) -> float:
    """Seconds of backlog before standard mode runs the `index`-th concurrent batch (from 0): 5 at
    once, then up to 300 more a minute."""
    if index < INITIAL_CONCURRENT_BATCHES:
        return 0.0
    return 60.0 * (index - INITIAL_CONCURRENT_BATCHES + 1) / SCALE_UP_PER_MINUTE


def scale_up_seconds(containers: int) -> float:
    """Seconds of backlog before standard mode runs `containers` batches at once."""
    return scale_up_delay_s(containers - 1) if containers > 0 else 0.0


def poller_added_every_s() -> float:
    """Seconds between two pollers provisioned mode adds while a backlog lasts (1,000
    concurrency a minute, 10 invocations a poller: one every 0.6 s)."""
    return 60.0 * INVOCATIONS_PER_EVENT_POLLER / POLLER_CONCURRENCY_PER_MINUTE


def poller_ramp_seconds(minimum: int, maximum: int) -> float:
    """Seconds of backlog before provisioned mode runs `maximum` pollers, from `minimum`."""
    if maximum <= minimum:
        return 0.0
    return POLLER_BACKLOG_DETECTION_S + (maximum - minimum) * poller_added_every_s()


def event_pollers_for(containers: int) -> int:
    """Event pollers that run `containers` invocations at once: 10 each, at least 2."""
    return max(MIN_EVENT_POLLERS, -(-containers // INVOCATIONS_PER_EVENT_POLLER))


def event_pollers_for_messages(messages_per_s: float) -> int:
    """Event pollers whose documented receive calls deliver `messages_per_s` (100 a second each:
    10 calls of at most 10 messages), at least 2."""
    return max(MIN_EVENT_POLLERS, math.ceil(messages_per_s / MESSAGES_PER_EVENT_POLLER_S))


def event_poller_billed_s(sale_s: float) -> float:
    """Seconds each event poller is billed for a sale answered in `sale_s` seconds: set
    `EVENT_POLLER_LEAD_S` before it, back to 0 after it, at least a minute."""
    return max(EVENT_POLLER_BILLED_MINIMUM_S, EVENT_POLLER_LEAD_S + sale_s)


def provisioned_concurrency_billed_s(sale_s: float) -> float:
    """Seconds provisioned concurrency is billed for a sale answered in `sale_s` seconds: set
    `PROVISIONED_CONCURRENCY_LEAD_S` before it, removed after it, rounded up to 5 minutes."""
    step = PROVISIONED_CONCURRENCY_BILLING_STEP_S
    return math.ceil((PROVISIONED_CONCURRENCY_LEAD_S + sale_s) / step) * step


def check_event_pollers(pollers: int, maximum: int | None = None) -> None:
    """Raises ValueError unless `pollers` is 0 (standard mode) or 2 to 200, and `maximum` (None:
    the same) is at least `pollers` and at most 2,000."""
    if pollers and not MIN_EVENT_POLLERS <= pollers <= MAX_MINIMUM_EVENT_POLLERS:
        raise ValueError(
            f"event pollers must be 0 (standard mode) or {MIN_EVENT_POLLERS} to"
            f" {MAX_MINIMUM_EVENT_POLLERS}, not {pollers}"
        )
    if maximum is not None and pollers and not pollers <= maximum <= MAX_MAXIMUM_EVENT_POLLERS:
        raise ValueError(
            f"the most event pollers must be {pollers} (the minimum) to {MAX_MAXIMUM_EVENT_POLLERS:,},"
            f" not {maximum}"
        )
