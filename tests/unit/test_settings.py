"""Settings are read once from the environment, with clear errors."""

from __future__ import annotations

import os
from unittest.mock import patch

import boto3
import pytest
from aws_lambda_powertools import Metrics
from botocore.validate import ParamValidationDecorator

from seat_inventory.handlers.issue_tickets import issuer_adapters
from seat_inventory.settings import ConfigurationError, Settings
from seat_inventory.wiring import ContainerAdapters, build_adapters


def test_defaults_apply_when_only_the_resources_are_given() -> None:
    settings = Settings.from_env({"TABLE_NAME": "t", "OUTCOMES_TOPIC_ARN": "arn"})
    assert settings == Settings(table_name="t", outcomes_topic_arn="arn")
    assert (
        settings.default_seat_class,
        settings.max_seats_per_reservation,
        settings.rejection_record_ttl_days,
    ) == ("GA", 10, 15)
    assert settings.rejection_record_ttl_seconds == 15 * 86_400


def test_every_variable_is_read() -> None:
    settings = Settings.from_env(
        {
            "TABLE_NAME": "t",
            "OUTCOMES_TOPIC_ARN": "arn",
            "DEFAULT_SEAT_CLASS": "STALLS",
            "MAX_SEATS_PER_RESERVATION": "4",
            "REJECTION_RECORD_TTL_DAYS": "30",
            "POWERTOOLS_METRICS_NAMESPACE": "Shows",
            "POWERTOOLS_SERVICE_NAME": "box-office",
        }
    )
    assert (
        settings.default_seat_class,
        settings.max_seats_per_reservation,
        settings.rejection_record_ttl_days,
    ) == ("STALLS", 4, 30)
    assert (settings.metrics_namespace, settings.service_name) == ("Shows", "box-office")


def test_the_metrics_get_their_namespace_and_service_from_the_settings_not_from_import_time() -> None:
    metrics = Metrics(namespace="ImportTime", service="import-time")
    container = ContainerAdapters(metrics)
    env = {"TABLE_NAME": "t", "OUTCOMES_TOPIC_ARN": "arn", "POWERTOOLS_SERVICE_NAME": "box-office"}
    with patch.dict(os.environ, env, clear=True):
        container.get(lambda settings: settings)  # type: ignore[arg-type,return-value]
    assert (metrics.namespace, metrics.service) == ("SeatInventory", "box-office")


def test_missing_resources_are_named() -> None:
    with pytest.raises(
        ConfigurationError, match="missing environment variable\\(s\\): TABLE_NAME, OUTCOMES_TOPIC_ARN"
    ):
        Settings.from_env({})


@pytest.mark.parametrize(
    ("raw", "message"), [("ten", "must be a whole number, got 'ten'"), ("0", "must be at least 1, got 0")]
)
def test_malformed_numbers_are_refused(raw: str, message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        Settings.from_env({"TABLE_NAME": "t", "OUTCOMES_TOPIC_ARN": "a", "MAX_SEATS_PER_RESERVATION": raw})


def test_the_issuers_settings_are_read_and_its_series_at_once_bounded() -> None:
    env = {"TABLE_NAME": "t", "OUTCOMES_TOPIC_ARN": "arn"}
    defaults = Settings.from_env(env)
    # One run as long as the schedule's minute, rounds of 100,000, 64 series at once
    assert (defaults.issue_seconds, defaults.issue_limit, defaults.issue_series_at_once) == (60, 100_000, 64)
    given = Settings.from_env({**env, "ISSUE_SECONDS": "45", "ISSUE_LIMIT": "9", "ISSUE_SERIES_AT_ONCE": "8"})
    assert (given.issue_seconds, given.issue_limit, given.issue_series_at_once) == (45, 9, 8)
    for bad in ("0", "65", "many"):
        with pytest.raises(ConfigurationError, match="ISSUE_SERIES_AT_ONCE"):
            Settings.from_env({**env, "ISSUE_SERIES_AT_ONCE": bad})
    # One lane unless ISSUE_LANES says more: a power of two up to 64
    assert defaults.issue_lanes == 1 and Settings.from_env({**env, "ISSUE_LANES": "32"}).issue_lanes == 32
    for bad in ("0", "3", "128", "many"):
        with pytest.raises(ConfigurationError, match="ISSUE_LANES"):
            Settings.from_env({**env, "ISSUE_LANES": bad})


def test_the_issuers_pools_are_sized_from_its_series_at_once() -> None:
    settings = Settings(table_name="t", outcomes_topic_arn="arn", issue_series_at_once=8)
    with patch.dict(os.environ, {"AWS_DEFAULT_REGION": "us-east-1"}):
        adapters = issuer_adapters(settings)
    # 8 series, each publishing a batch's 10 PublishBatch calls at once, and a connection each
    # (and 10 for a publication under way, which the reserve function's parts use)
    assert adapters.publisher._max_concurrent_calls == 80
    assert adapters.publisher._client.meta.config.max_pool_connections == 80 + 10
    assert adapters.store._client.meta.config.max_pool_connections == 8 + 16


def test_every_service_client_skips_botocores_own_parameter_validation() -> None:
    """The service builds every request itself and AWS validates it; botocore walking each
    100-action transaction's shapes again is a fifth of a batch's CPU."""
    from seat_inventory.gate_wiring import build_gate

    settings = Settings(table_name="t", outcomes_topic_arn="arn")
    with patch.dict(os.environ, {"AWS_DEFAULT_REGION": "us-east-1"}):
        built = [build_adapters(settings), issuer_adapters(settings), build_gate(settings)]
    clients = [
        client for adapters in built for client in (adapters.store._client, adapters.publisher._client)
    ]
    assert len(clients) == 6
    for client in clients:
        # botocore wraps the serializer in its validator only when validation is on
        assert not isinstance(client._serializer, ParamValidationDecorator)
    validating = boto3.session.Session(region_name="us-east-1").client("dynamodb")
    assert isinstance(validating._serializer, ParamValidationDecorator)
