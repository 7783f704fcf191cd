"""The price table the benchmark uses, and the figures it derives from counted requests and units.

Prices are AWS list prices for us-east-1 (N. Virginia), on-demand, beyond the free tiers, as
published on the pages below; they were written down on PRICES_AS_OF and not checked online by
the benchmark (it runs offline). Change them here to price another region or a later date.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

PRICES_AS_OF = "2026-11-23"
KB = 1024


@dataclass(frozen=True)
class Price:
    what: str
    usd: float
    per: str
    source: str


PRICES = {
    "dynamodb_write": Price(
        "DynamoDB on-demand write request unit",
        0.625 / 1e6,
        "WRU (1 KB standard write; a transactional write is 2 WRU per KB)",
        "https://aws.amazon.com/dynamodb/pricing/on-demand/",
    ),
    "dynamodb_read": Price(
        "DynamoDB on-demand read request unit",
        0.125 / 1e6,
        "RRU (4 KB strongly consistent read; transactional 2 per 4 KB)",
        "https://aws.amazon.com/dynamodb/pricing/on-demand/",
    ),
    "sqs_request": Price(
        "SQS standard queue request",
        0.40 / 1e6,
        "request (each 64 KB chunk of a request counts as one)",
        "https://aws.amazon.com/sqs/pricing/",
    ),
    "sns_publish": Price(
        "SNS standard topic publish",
        0.50 / 1e6,
        "request (each 64 KB chunk of published data; a PublishBatch is billed by its chunks)",
        "https://aws.amazon.com/sns/pricing/",
    ),
    "lambda_request": Price(
        "Lambda request", 0.20 / 1e6, "invocation", "https://aws.amazon.com/lambda/pricing/"
    ),
    "lambda_duration": Price(
        "Lambda duration, Arm (Graviton)",
        0.0000133334,
        "GB-second",
        "https://aws.amazon.com/lambda/pricing/",
    ),
    # Provisioned concurrency (Arm): the environments configured, per GB-second while set (from
    # enabling to disabling, rounded up to 5 minutes), and the duration of the invocations they
    # run, at a lower rate than on-demand's. The page's us-east-1 Arm rates; checked 2026-11-26
    # against what this project knew of them, not re-read (no internet where this was written).
    "lambda_provisioned_concurrency": Price(
        "Lambda provisioned concurrency, Arm (Graviton)",
        0.0000033334,
        "GB-second configured",
        "https://aws.amazon.com/lambda/pricing/",
    ),
    "lambda_duration_provisioned": Price(
        "Lambda duration on provisioned concurrency, Arm (Graviton)",
        0.0000077778,
        "GB-second",
        "https://aws.amazon.com/lambda/pricing/",
    ),
    # API Gateway, first tier of requests a month (REST APIs $3.50 per million, HTTP APIs $1.00);
    # whether a request answered 429 (throttled) is billed is not documented: the simulation
    # charges it (the cautious choice).
    "api_rest_request": Price(
        "API Gateway REST API request", 3.50 / 1e6, "request", "https://aws.amazon.com/api-gateway/pricing/"
    ),
    "api_http_request": Price(
        "API Gateway HTTP API request", 1.00 / 1e6, "request", "https://aws.amazon.com/api-gateway/pricing/"
    ),
    # Pre-warming (raising a table's or index's warm throughput above what it has): AWS bills it
    # ("you will be charged for those requests", the warm throughput page) at the rate of the
    # pricing page's "Warm throughput" section, which could not be read where this was written
    # (no internet). Assumed: one hour of provisioned capacity for each unit added, at the
    # us-east-1 provisioned rates ($0.00065 per WCU-hour, $0.00013 per RCU-hour). Change it here
    # once checked; docs/reference/sources.md says the same.
    "prewarm_write_unit": Price(
        "DynamoDB warm throughput, write unit per second added (assumed: one provisioned WCU-hour)",
        0.00065,
        "write unit per second of warm throughput added",
        "https://aws.amazon.com/dynamodb/pricing/on-demand/",
    ),
    "prewarm_read_unit": Price(
        "DynamoDB warm throughput, read unit per second added (assumed: one provisioned RCU-hour)",
        0.00013,
        "read unit per second of warm throughput added",
        "https://aws.amazon.com/dynamodb/pricing/on-demand/",
    ),
    # Provisioned mode of an SQS event source mapping: one Event Poller Unit per event poller,
    # billed per second with a minimum of a minute (the page's SQS example: $0.00925 per EPU-hour).
    "event_poller": Price(
        "Lambda event poller (provisioned mode, SQS)",
        0.00925,
        "EPU-hour (one event poller; per second, at least a minute)",
        "https://aws.amazon.com/lambda/pricing/",
    ),
}


def billed_write_units(counts: Mapping[str, Any], *, inventory_item_bytes: int) -> float:
    """DynamoDB write units billed for a run: puts as counted from their items, plus the keyed
    writes (updates, condition checks), each priced at the size of the item it touches.

    Keyed writes other than inventory items are customer counters and reservation status
    updates, all well under 1 KB; they are priced at 1 unit (times the transactional factor
    already in the count). The global secondary indexes' writes (a sold record entering
    TicketsToIssue, a hold entering HoldsByExpiry, ...) are added as counted
    (`counting.index_write_units`).
    """
    inventory_units = math.ceil(max(inventory_item_bytes, 1) / KB)
    return (
        float(counts.get("put_write_units", 0.0))
        + float(counts.get("index_write_units", 0.0))
        + counts.get("hot_item_writes", 0) * inventory_units
        + counts.get("other_key_writes", 0)
    )


def hot_item_write_units(counts: Mapping[str, Any], *, inventory_item_bytes: int) -> float:
    return counts.get("hot_item_writes", 0) * math.ceil(max(inventory_item_bytes, 1) / KB)


def billed_read_units(counts: Mapping[str, Any]) -> float:
    """Strongly consistent reads of items under 4 KB: one unit each (queries: one per request)."""
    return float(counts.get("reads", 0) + counts.get("query_requests", 0))


def requests_of(counts: Mapping[str, Any], service: str, operations: tuple[str, ...] = ()) -> int:
    """HTTP requests sent to `service` (optionally only these operations), retries included."""
    return sum(
        n
        for name, n in counts.get("http_requests", {}).items()
        if name.startswith(service + ".") and (not operations or name.split(".", 1)[1] in operations)
    )


@dataclass(frozen=True)
class CostBreakdown:
    dynamodb: float
    sqs: float
    sns: float
    lambda_: float
    event_pollers: float = 0.0  # provisioned mode's pollers (0: standard mode)
    provisioned_concurrency: float = 0.0  # the environments configured (0: none)
    api_gateway: float = 0.0  # the checkout API's requests (0: none through the API)
    pre_warming: float = 0.0  # the table's and index's warm throughput raised for the sale

    @property
    def total(self) -> float:
        return (
            self.dynamodb
            + self.sqs
            + self.sns
            + self.lambda_
            + self.event_pollers
            + self.provisioned_concurrency
            + self.api_gateway
            + self.pre_warming
        )

    def as_dict(self) -> dict[str, float]:
        return {
            "dynamodb": self.dynamodb,
            "sqs": self.sqs,
            "sns": self.sns,
            "lambda": self.lambda_,
            "event_pollers": self.event_pollers,
            "provisioned_concurrency": self.provisioned_concurrency,
            "api_gateway": self.api_gateway,
            "pre_warming": self.pre_warming,
            "total": self.total,
        }


def pre_warming_usd(added_write_units_per_s: float, added_read_units_per_s: float) -> float:
    """What raising warm throughput by these units per second costs, once (the assumed rate)."""
    return (
        max(0.0, added_write_units_per_s) * PRICES["prewarm_write_unit"].usd
        + max(0.0, added_read_units_per_s) * PRICES["prewarm_read_unit"].usd
    )


def cost_per_million(
    *,
    write_units: float,
    read_units: float,
    sqs_requests: int,
    sns_requests: int,
    invocations: int,
    gb_seconds: float,
    reservations: int,
    event_poller_hours: float = 0.0,
    provisioned_gb_seconds: float = 0.0,
    provisioned_concurrency_gb_seconds: float = 0.0,
    api_requests: int = 0,
    api_kind: str = "rest",
    pre_warming_usd: float = 0.0,
) -> CostBreakdown:
    """US dollars per million reservations, by service, from what one run used for `reservations`.
    `provisioned_gb_seconds`: the part of `gb_seconds` run on provisioned concurrency (billed at
    its rate); `provisioned_concurrency_gb_seconds`: the environments configured, for as long;
    `api_requests`: requests to the checkout API (`api_kind` "rest" or "http"), 429s included;
    `pre_warming_usd`: the one-time charge for the warm throughput the sale needed."""
    scale = 1e6 / max(reservations, 1)
    on_demand_gb_seconds = gb_seconds - provisioned_gb_seconds
    return CostBreakdown(
        dynamodb=scale
        * (write_units * PRICES["dynamodb_write"].usd + read_units * PRICES["dynamodb_read"].usd),
        sqs=scale * sqs_requests * PRICES["sqs_request"].usd,
        sns=scale * sns_requests * PRICES["sns_publish"].usd,
        lambda_=scale
        * (
            invocations * PRICES["lambda_request"].usd
            + on_demand_gb_seconds * PRICES["lambda_duration"].usd
            + provisioned_gb_seconds * PRICES["lambda_duration_provisioned"].usd
        ),
        event_pollers=scale * event_poller_hours * PRICES["event_poller"].usd,
        provisioned_concurrency=scale
        * provisioned_concurrency_gb_seconds
        * PRICES["lambda_provisioned_concurrency"].usd,
        api_gateway=scale * api_requests * PRICES[f"api_{api_kind}_request"].usd,
        pre_warming=scale * pre_warming_usd,
    )
