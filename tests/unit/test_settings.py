"""Settings are read once from the environment, with clear errors."""

from __future__ import annotations

import os
from unittest.mock import patch

import pytest
from aws_lambda_powertools import Metrics

from seat_inventory.settings import ConfigurationError, Settings
from seat_inventory.wiring import ContainerAdapters


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
