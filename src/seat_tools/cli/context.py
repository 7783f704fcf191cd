"""Where the `seats` commands find the service: a deployed stack's outputs, or environment variables.

Resolution order for resource names:
1. `--stack-name NAME` (or SEATS_STACK_NAME): the CloudFormation outputs of that stack;
2. otherwise the variables the Lambda itself uses (TABLE_NAME, OUTCOMES_TOPIC_ARN) plus
   RESERVATIONS_QUEUE_URL and DEAD_LETTER_QUEUE_URL for the commands that need the queues.

Endpoints: `--endpoint-url` (or boto3's own AWS_ENDPOINT_URL / AWS_ENDPOINT_URL_<SERVICE>)
points every client at a local emulator; `--profile` and `--region` work as in the AWS CLI.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import boto3
import click
from botocore.config import Config
from botocore.utils import is_valid_endpoint_url, is_valid_ipv6_endpoint_url

from seat_tools.cli.errors import InvalidClientSettings, explain
from seat_tools.operator_commands import OperatorTable
from seat_tools.stack_outputs import OUTPUT_ENV_VARS

# Interactive commands fail fast on an unreachable endpoint: a 2 s connect timeout and one retry
# (the default 5 attempts with backoff took 17-28 s to say the endpoint is down). Reads keep
# botocore's 60 s timeout: long polls and transactions take time.
CLIENT_CONFIG = Config(
    connect_timeout=2, retries={"mode": "standard", "max_attempts": 2}, max_pool_connections=64
)


def check_endpoint_url(name: str, url: str) -> None:
    """Raises InvalidClientSettings for an endpoint URL botocore would refuse (as it does, but named)."""
    if not (is_valid_endpoint_url(url) or is_valid_ipv6_endpoint_url(url)):
        raise InvalidClientSettings(
            f"{name} {url!r} is not an endpoint URL: give one such as http://127.0.0.1:8000"
        )


@dataclass(frozen=True, slots=True)
class ResourceNames:
    table_name: str | None
    outcomes_topic_arn: str | None
    reservations_queue_url: str | None
    dead_letter_queue_url: str | None

    def require(self, *names: str) -> None:
        """Fails with one clear message naming every missing resource and how to provide it."""
        missing = [name for name in names if not getattr(self, name)]
        if missing:
            hints = {
                "table_name": "TABLE_NAME",
                "outcomes_topic_arn": "OUTCOMES_TOPIC_ARN",
                "reservations_queue_url": "RESERVATIONS_QUEUE_URL",
                "dead_letter_queue_url": "DEAD_LETTER_QUEUE_URL",
            }
            raise click.UsageError(
                "cannot find "
                + ", ".join(missing)
                + ": pass --stack-name (or set SEATS_STACK_NAME) for a deployed stack, or set "
                + ", ".join(hints[name] for name in missing)
            )


class CliContext:
    """Shared by every command: the boto3 session, endpoint and resolved resource names.

    Nothing is built until a command asks for it: `seats event --help` or `seats demo` work
    whatever the AWS profile, region or credentials.
    """

    def __init__(
        self,
        *,
        stack_name: str | None,
        region: str | None,
        profile: str | None,
        endpoint_url: str | None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.stack_name = stack_name
        self.endpoint_url = endpoint_url
        self.region = region
        self.profile = profile
        self._env = os.environ if env is None else env
        self._session: boto3.session.Session | None = None
        self._resources: ResourceNames | None = None
        self._outputs: dict[str, str] | None = None

    @property
    def session(self) -> boto3.session.Session:
        """The boto3 session, built on first use (an unknown profile raises ProfileNotFound here)."""
        if self._session is None:
            self._session = boto3.session.Session(profile_name=self.profile, region_name=self.region)
        return self._session

    def client(self, service: str) -> Any:
        session = self.session
        try:
            return session.client(service, endpoint_url=self.endpoint_url or None, config=CLIENT_CONFIG)  # type: ignore[call-overload]
        except ValueError as exc:
            # botocore says "Invalid endpoint: notaurl" (or a malformed region) as a plain ValueError.
            raise InvalidClientSettings(
                f"cannot build the {service} client: {exc}; check --endpoint-url / AWS_ENDPOINT_URL*"
                " (a URL such as http://127.0.0.1:8000) and --region"
            ) from exc

    def resources(self) -> ResourceNames:
        if self._resources is None:
            values = dict.fromkeys(OUTPUT_ENV_VARS.values())
            if self.stack_name:
                outputs = self.stack_outputs()
                for output, variable in OUTPUT_ENV_VARS.items():
                    values[variable] = outputs.get(output)
            else:
                for variable in OUTPUT_ENV_VARS.values():
                    values[variable] = self._env.get(variable) or None
            self._resources = ResourceNames(
                table_name=values["TABLE_NAME"],
                outcomes_topic_arn=values["OUTCOMES_TOPIC_ARN"],
                reservations_queue_url=values["RESERVATIONS_QUEUE_URL"],
                dead_letter_queue_url=values["DEAD_LETTER_QUEUE_URL"],
            )
        return self._resources

    def stack_outputs(self) -> dict[str, str]:
        """Every output of the stack named by --stack-name (read once); UsageError without one."""
        if not self.stack_name:
            raise click.UsageError("no stack: pass --stack-name (or set SEATS_STACK_NAME)")
        if self._outputs is None:
            self._outputs = self._stack_outputs(self.stack_name)
        return self._outputs

    def _stack_outputs(self, stack_name: str) -> dict[str, str]:
        try:
            stacks = self.client("cloudformation").describe_stacks(StackName=stack_name)["Stacks"]
        except Exception as exc:
            explained = explain(exc, doing=f"cannot read the outputs of stack {stack_name!r}")
            if explained is None:
                raise
            raise explained from exc
        return {output["OutputKey"]: output["OutputValue"] for output in stacks[0].get("Outputs", [])}

    def inventory_table(self) -> OperatorTable:
        resources = self.resources()
        resources.require("table_name")
        assert resources.table_name is not None
        return OperatorTable(self.client("dynamodb"), resources.table_name)
