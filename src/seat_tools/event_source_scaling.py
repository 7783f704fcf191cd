"""How Lambda's SQS event source mapping grows its concurrency, in its two modes; the simulation
models it and `seats onsale plan` plans with it.

- Standard mode (the default): 5 batches at once as messages arrive, then up to 300 more
  concurrent invocations a minute while messages wait, up to `ScalingConfig.MaximumConcurrency`
  (https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-scaling.html).
- Provisioned mode (`ProvisionedPollerConfig`, template parameter `EventPollers`): event pollers
  that are running before the first message. Each runs up to 10 invocations at once: AWS gives
  20,000 concurrent invocations at the 2,000-poller maximum (AWS News Blog, "AWS Lambda enhances
  event processing with provisioned mode for SQS event-source mapping", 2025-11-14). The template
  sets the minimum and the maximum to the same number, so the concurrency is there from the
  first message and never grows past it. Billed per poller-hour (`pricing.PRICES["event_poller"]`).
- Provisioned concurrency (on an alias or version the mapping would invoke; template.yaml does not
  set it yet, docs/explanation/simulation.md): that many execution environments initialised before the first
  invocation, so the invocations they take pay no cold start; more invocations than that start
  environments of their own, cold. Billed per GB-second configured, from enabling it to
  disabling it rounded up to 5 minutes (https://aws.amazon.com/lambda/pricing/), and their
  invocations' duration at a lower rate (`pricing.PRICES["lambda_provisioned_concurrency"]`,
  `["lambda_duration_provisioned"]`).
"""

from __future__ import annotations

import math

INITIAL_CONCURRENT_BATCHES = 5
SCALE_UP_PER_MINUTE = 300
INVOCATIONS_PER_EVENT_POLLER = 10
MIN_EVENT_POLLERS = 2  # an SQS mapping in provisioned mode needs at least 2
MAX_MINIMUM_EVENT_POLLERS = 200  # ProvisionedPollerConfig.MinimumPollers is at most 200
EVENT_POLLER_BILLED_MINIMUM_S = 60.0  # pollers are billed per second, at least a minute
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


def event_pollers_for(containers: int) -> int:
    """Event pollers that run `containers` invocations at once: 10 each, at least 2."""
    return max(MIN_EVENT_POLLERS, -(-containers // INVOCATIONS_PER_EVENT_POLLER))


def provisioned_concurrency_billed_s(sale_s: float) -> float:
    """Seconds provisioned concurrency is billed for a sale answered in `sale_s` seconds: set
    `PROVISIONED_CONCURRENCY_LEAD_S` before it, removed after it, rounded up to 5 minutes."""
    step = PROVISIONED_CONCURRENCY_BILLING_STEP_S
    return math.ceil((PROVISIONED_CONCURRENCY_LEAD_S + sale_s) / step) * step


def check_event_pollers(pollers: int) -> None:
    """Raises ValueError unless `pollers` is 0 (standard mode) or 2 to 200."""
    if pollers and not MIN_EVENT_POLLERS <= pollers <= MAX_MINIMUM_EVENT_POLLERS:
        raise ValueError(
            f"event pollers must be 0 (standard mode) or {MIN_EVENT_POLLERS} to"
            f" {MAX_MINIMUM_EVENT_POLLERS}, not {pollers}"
        )
