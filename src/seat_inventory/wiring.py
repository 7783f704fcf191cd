"""Builds the real adapters (boto3 clients, table, publisher) from the settings, once per container."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import boto3
from botocore.config import Config

from seat_inventory.dal.inventory_table import InventoryTable
from seat_inventory.issuer_lanes import STARTS_AT_ONCE, LambdaLaneStarter
from seat_inventory.logic.admission_tokens import KeyRing, KeyRingError, TokenVerifier, parse_key_ring
from seat_inventory.logic.inventory_hints import InventoryHints
from seat_inventory.models import RetryableError
from seat_inventory.publishing.sns_publisher import MAX_CONCURRENT_CALLS, SnsOutcomePublisher
from seat_inventory.settings import Settings

if TYPE_CHECKING:
    # Only for the annotation: each handler passes in the `metrics` its decorator flushes.
    from aws_lambda_powertools import Metrics

# botocore retries throttling and 5xx itself (standard mode) before the service sees an error;
# short timeouts keep one slow call from eating the whole function timeout. botocore's
# client-side parameter validation is off: every request is built by the data-access code (input
# is checked by parsing.py first), DynamoDB and SNS validate each request themselves, and walking
# a 100-action transaction's shapes costs about a fifth of a batch's CPU (scripts/measure_function_cpu.py).
CLIENT_CONFIG = Config(
    retries={"mode": "standard", "max_attempts": 4},
    connect_timeout=3,
    read_timeout=10,
    max_pool_connections=16,
    parameter_validation=False,
)


class SystemClock:
    def now(self) -> float:
        return time.time()

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


Ring = TypeVar("Ring")

# After a failed refresh the keys last read are still used for this long (SSM throttled or
# unreachable for a moment must not stop a sale); past it the messages with tokens are retried.
ADMISSION_KEYS_STALE_SECONDS = 900


class SsmKeyRing(Generic[Ring]):
    """A key ring from an SSM SecureString parameter, through Powertools Parameters
    (`SSMProvider`, its cache on the container's monotonic clock): read on first use (never at
    import or cold start), kept for `refresh_seconds` (a rotation reaches every container within
    it), then read again; one GetParameter per container per refresh. `parse` reads the value and
    raises `parse_error` for a malformed one; `what` names the ring in errors.

    A parameter that cannot be read, or holds no valid ring, raises `RetryableError` (the
    messages or scans are retried, not refused: a refusal is final), unless a ring read within
    `ADMISSION_KEYS_STALE_SECONDS` is at hand.
    """

    def __init__(
        self,
        session: boto3.session.Session,
        name: str,
        refresh_seconds: int,
        *,
        parse: Callable[[str], Ring],
        parse_error: type[ValueError],
        what: str,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._session = session
        self._name = name
        self._refresh_seconds = refresh_seconds
        self._parse = parse
        self._parse_error = parse_error
        self._what = what
        self._clock = clock
        self._parameters: Any = None
        self._ring: Ring | None = None
        self._read_at = 0.0  # when the ring in use was read

    def __call__(self) -> Ring | None:
        if self._parameters is None:
            self._parameters = _ssm_parameters(self._session, lambda: self._clock() - self._read_at)
        parameters = self._parameters
        parameters.fetched = False
        try:
            raw = parameters.get(self._name, max_age=self._refresh_seconds, decrypt=True)
            if parameters.fetched:
                self._ring, self._read_at = self._parse(raw), self._clock()
            return self._ring
        except (parameters.errors, self._parse_error) as exc:
            parameters.clear_cache()  # read again at the next use
            if self._ring is not None and self._clock() - self._read_at < ADMISSION_KEYS_STALE_SECONDS:
                return self._ring
            why = f": {exc}" if isinstance(exc, self._parse_error) else f" not read: {exc}"
            raise RetryableError(f"{self._what}: SSM parameter {self._name}{why}") from exc


def ssm_admission_keys(
    session: boto3.session.Session,
    name: str,
    refresh_seconds: int,
    clock: Callable[[], float] = time.monotonic,
) -> SsmKeyRing[KeyRing]:
    """The admission key ring (docs/guides/admission.md), read on the first message that carries
    a token."""
    return SsmKeyRing(
        session,
        name,
        refresh_seconds,
        parse=parse_key_ring,
        parse_error=KeyRingError,
        what="admission keys",
        clock=clock,
    )


def _ssm_parameters(session: boto3.session.Session, age: Callable[[], float]) -> Any:
    """Powertools' SSM provider whose cached value is fresh while `age()` (seconds since the ring
    in use was read) is under its max_age (imported on first use: it costs the cold start nothing)."""
    from aws_lambda_powertools.utilities.parameters import SSMProvider
    from aws_lambda_powertools.utilities.parameters.base import ExpirableValue
    from aws_lambda_powertools.utilities.parameters.exceptions import GetParameterError

    class Parameters(SSMProvider):
        errors = GetParameterError
        fetched = False  # the last get read SSM (the value was not cached)

        def has_not_expired_in_cache(self, key: tuple[Any, ...]) -> bool:
            return key in self.store and age() < self.store[key].ttl  # type: ignore[operator]

        def add_to_cache(self, key: tuple[Any, ...], value: Any, max_age: int) -> None:
            self.fetched = True
            self.store[key] = ExpirableValue(value, max_age)  # type: ignore[arg-type]

    return Parameters(boto3_session=session, boto_config=CLIENT_CONFIG)


def admission_verifier(settings: Settings, session: boto3.session.Session) -> TokenVerifier:
    """Verifies admission tokens with the keys of the configured parameter (none when not set)."""
    if not settings.admission_key_parameter:
        return TokenVerifier(lambda: None)
    return TokenVerifier(
        ssm_admission_keys(session, settings.admission_key_parameter, settings.admission_key_refresh_seconds)
    )


@dataclass(frozen=True, slots=True)
class Adapters:
    settings: Settings
    store: InventoryTable
    publisher: SnsOutcomePublisher
    clock: SystemClock
    hints: InventoryHints
    admission: TokenVerifier = field(default_factory=lambda: TokenVerifier(lambda: None))


def build_adapters(
    settings: Settings,
    session: boto3.session.Session | None = None,
    *,
    dynamodb_connections: int = 16,
    publish_calls: int = MAX_CONCURRENT_CALLS,
) -> Adapters:
    """Creates the clients; endpoints and credentials come from the usual AWS variables
    (AWS_ENDPOINT_URL, AWS_ENDPOINT_URL_DYNAMODB, AWS_PROFILE, ...), so local emulators just work.
    `dynamodb_connections` and `publish_calls` size the DynamoDB client's connection pool and the
    publisher's (the ticket issuer's are larger: its series run at once)."""
    session = session or boto3.session.Session()
    dynamodb_config = CLIENT_CONFIG.merge(Config(max_pool_connections=max(16, dynamodb_connections)))
    # a publication's calls and the 10 of one under way (`SnsOutcomePublisher.publish_soon`)
    sns_config = CLIENT_CONFIG.merge(
        Config(max_pool_connections=max(16, publish_calls + MAX_CONCURRENT_CALLS))
    )
    return Adapters(
        settings=settings,
        store=InventoryTable(session.client("dynamodb", config=dynamodb_config), settings.table_name),
        publisher=SnsOutcomePublisher(
            session.client("sns", config=sns_config),
            settings.outcomes_topic_arn,
            max_concurrent_calls=publish_calls,
        ),
        clock=SystemClock(),
        hints=InventoryHints(),
        admission=admission_verifier(settings, session),
    )


def lane_starter(function_arn: str, session: boto3.session.Session | None = None) -> LambdaLaneStarter:
    """The ticket issuer's lane starter: a Lambda client invoking `function_arn` (its own)."""
    session = session or boto3.session.Session()
    config = CLIENT_CONFIG.merge(Config(max_pool_connections=STARTS_AT_ONCE))
    return LambdaLaneStarter(session.client("lambda", config=config), function_arn)


class ContainerAdapters:
    """The adapters of one Lambda container: built on the first invocation, reused while it is warm.

    Each handler module keeps one; `get` takes the factory at call time, so tests that patch the
    handler module's `build_adapters` are honoured.
    """

    def __init__(self, metrics: Metrics) -> None:
        self._metrics = metrics
        self._adapters: Adapters | None = None

    def get(self, factory: Callable[[Settings], Adapters]) -> Adapters:
        """Settings read from the environment once, the metrics' namespace and `service` dimension
        set from them (not from whatever the environment held when Powertools was imported), the
        adapters built."""
        if self._adapters is None:
            settings = Settings.from_env(os.environ)
            self._metrics.namespace = settings.metrics_namespace
            self._metrics.service = settings.service_name
            self._adapters = factory(settings)
        return self._adapters

    def reset(self) -> None:
        """Forgets the cached clients, as a new container would (tests and the local runner use it)."""
        self._adapters = None
