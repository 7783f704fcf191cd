"""Settings are read once from the environment, with clear errors."""

from __future__ import annotations

import pytest

from seat_inventory.settings import ConfigurationError, Settings


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
        }
    )
    assert (
        settings.default_seat_class,
        settings.max_seats_per_reservation,
        settings.rejection_record_ttl_days,
    ) == ("STALLS", 4, 30)
    assert settings.metrics_namespace == "Shows"


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
