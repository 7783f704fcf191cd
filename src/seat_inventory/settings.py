"""The function's settings: one typed object, read once from the environment at the edge."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from seat_inventory.models.tickets import ISSUER_LANE_COUNTS, MAX_ISSUER_LANES

DEFAULT_SEAT_CLASS = "GA"
DEFAULT_MAX_SEATS_PER_RESERVATION = 10
# SQS keeps a message for at most 14 days, so a rejection kept 15 days outlives every redelivery.
DEFAULT_REJECTION_RECORD_TTL_DAYS = 15
DEFAULT_METRICS_NAMESPACE = "SeatInventory"
# The `service` dimension of every metric (the alarms on our own metrics select it).
DEFAULT_SERVICE_NAME = "seat-inventory"
SECONDS_PER_DAY = 86_400
# The longest hold a message may ask for (template parameter MaxHoldSeconds); the shortest is 60 s.
DEFAULT_MAX_HOLD_SECONDS = 3600
MIN_MAX_HOLD_SECONDS = 60
# Most expired holds one sweeper run releases, so that a backlog drains over several runs
# well inside the function's timeout.
DEFAULT_SWEEP_LIMIT = 1000
# The ticket issuer (docs/guides/tickets.md): most waiting sales one round takes (100,000: a round's
# fixed work is spread over enough sales that 64 series keep ahead of 40,000 a second), how long one scheduled
# run goes on issuing (as long as its schedule, a minute: the next run starts as this one's last
# round ends, no gap; overlapping runs are safe), and how many series it numbers at once (64, the
# series an event of 40,000 confirmed a second is configured with; its connection and publish
# pools are sized from it, and a Lambda's 1,024 threads and file descriptors bound it).
DEFAULT_ISSUE_LIMIT = 100_000
DEFAULT_ISSUE_SECONDS = 60
DEFAULT_ISSUE_SERIES_AT_ONCE = 64
MAX_ISSUE_SERIES_AT_ONCE = 64
# Admission keys (docs/guides/admission.md) are read from SSM at most this often per container: a rotation
# reaches every container within this many seconds.
DEFAULT_ADMISSION_KEY_REFRESH_SECONDS = 60


class ConfigurationError(Exception):
    """A required setting is missing or malformed."""


def _positive_int(env: Mapping[str, str], name: str, default: int) -> int:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError as exc:
        raise ConfigurationError(f"{name} must be a whole number, got {raw!r}") from exc
    if value < 1:
        raise ConfigurationError(f"{name} must be at least 1, got {value}")
    return value


def _max_hold_seconds(env: Mapping[str, str]) -> int:
    value = _positive_int(env, "MAX_HOLD_SECONDS", DEFAULT_MAX_HOLD_SECONDS)
    if value < MIN_MAX_HOLD_SECONDS:
        raise ConfigurationError(f"MAX_HOLD_SECONDS must be at least {MIN_MAX_HOLD_SECONDS}, got {value}")
    return value


def _issue_series_at_once(env: Mapping[str, str]) -> int:
    value = _positive_int(env, "ISSUE_SERIES_AT_ONCE", DEFAULT_ISSUE_SERIES_AT_ONCE)
    if value > MAX_ISSUE_SERIES_AT_ONCE:
        raise ConfigurationError(
            f"ISSUE_SERIES_AT_ONCE must be at most {MAX_ISSUE_SERIES_AT_ONCE}, got {value}"
        )
    return value


def _issue_lanes(env: Mapping[str, str]) -> int:
    value = _positive_int(env, "ISSUE_LANES", 1)
    if value not in ISSUER_LANE_COUNTS:
        raise ConfigurationError(
            f"ISSUE_LANES must be a power of two from 1 to {MAX_ISSUER_LANES}, got {value}"
        )
    return value


@dataclass(frozen=True, slots=True)
class Settings:
    """Everything the reservation function needs to know about its deployment."""

    table_name: str
    outcomes_topic_arn: str
    default_seat_class: str = DEFAULT_SEAT_CLASS
    max_seats_per_reservation: int = DEFAULT_MAX_SEATS_PER_RESERVATION
    rejection_record_ttl_days: int = DEFAULT_REJECTION_RECORD_TTL_DAYS
    metrics_namespace: str = DEFAULT_METRICS_NAMESPACE
    service_name: str = DEFAULT_SERVICE_NAME
    max_hold_seconds: int = DEFAULT_MAX_HOLD_SECONDS
    sweep_limit: int = DEFAULT_SWEEP_LIMIT
    issue_limit: int = DEFAULT_ISSUE_LIMIT
    issue_seconds: int = DEFAULT_ISSUE_SECONDS
    issue_series_at_once: int = DEFAULT_ISSUE_SERIES_AT_ONCE
    issue_lanes: int = 1  # issuer runs numbering at once (docs/guides/tickets.md, "Lanes")
    # The SSM parameter (SecureString) holding the admission key ring; empty: no key, every token
    # is refused as forged (classes that do not require admission are not affected).
    admission_key_parameter: str = ""
    admission_key_refresh_seconds: int = DEFAULT_ADMISSION_KEY_REFRESH_SECONDS
    # The gate (docs/guides/checkin.md): the SSM parameter (SecureString) holding the ticket key ring
    # (empty: no key, no secret is shown and every one is refused as forged), and the origin the
    # gate's API answers allow (the checkout API's ApiCorsOrigin).
    ticket_key_parameter: str = ""
    cors_origin: str = "*"

    @property
    def rejection_record_ttl_seconds(self) -> int:
        return self.rejection_record_ttl_days * SECONDS_PER_DAY

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Settings:
        """Reads the variables template.yaml sets on the function (see docs/reference/configuration.md)."""
        missing = [name for name in ("TABLE_NAME", "OUTCOMES_TOPIC_ARN") if not env.get(name)]
        if missing:
            raise ConfigurationError("missing environment variable(s): " + ", ".join(missing))
        return cls(
            table_name=env["TABLE_NAME"],
            outcomes_topic_arn=env["OUTCOMES_TOPIC_ARN"],
            default_seat_class=env.get("DEFAULT_SEAT_CLASS") or DEFAULT_SEAT_CLASS,
            max_seats_per_reservation=_positive_int(
                env, "MAX_SEATS_PER_RESERVATION", DEFAULT_MAX_SEATS_PER_RESERVATION
            ),
            rejection_record_ttl_days=_positive_int(
                env, "REJECTION_RECORD_TTL_DAYS", DEFAULT_REJECTION_RECORD_TTL_DAYS
            ),
            metrics_namespace=env.get("POWERTOOLS_METRICS_NAMESPACE") or DEFAULT_METRICS_NAMESPACE,
            service_name=env.get("POWERTOOLS_SERVICE_NAME") or DEFAULT_SERVICE_NAME,
            max_hold_seconds=_max_hold_seconds(env),
            sweep_limit=_positive_int(env, "SWEEP_LIMIT", DEFAULT_SWEEP_LIMIT),
            issue_limit=_positive_int(env, "ISSUE_LIMIT", DEFAULT_ISSUE_LIMIT),
            issue_seconds=_positive_int(env, "ISSUE_SECONDS", DEFAULT_ISSUE_SECONDS),
            issue_series_at_once=_issue_series_at_once(env),
            issue_lanes=_issue_lanes(env),
            admission_key_parameter=env.get("ADMISSION_KEY_PARAMETER") or "",
            admission_key_refresh_seconds=_positive_int(
                env, "ADMISSION_KEY_REFRESH_SECONDS", DEFAULT_ADMISSION_KEY_REFRESH_SECONDS
            ),
            ticket_key_parameter=env.get("TICKET_KEY_PARAMETER") or "",
            cors_origin=env.get("CORS_ORIGIN") or "*",
        )
