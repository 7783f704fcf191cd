"""`seats onsale check` against the stack created on moto's CloudFormation from template.yaml
(the same translation and stack as tests/integration/test_deploy_path.py), ready and not ready.

The target is 1,800 reservations per second. By the plan's arithmetic (docs/guides/size-a-sale.md) it needs
3 containers (1,800 / 800), 3 shard items in the class, 1,800 x 4.19 / 0.8 = 9,436 warm write
units (the sale's 2.02 and the ticket issuer's 2.17 per reservation), 1,800 x (1 + 2 x 3) / 99 /
0.8 = 159 warm read units, an API throttle of 1,800 with a burst of 3,600, and 3 containers of
Lambda concurrency. The template's defaults fall short on three of them (one shard, a new table's
4,000 write units, the API's 1,000 requests per second).

What moto could not emulate, and what the test does instead:
- `GetAccountSettings` is not implemented ("Not yet implemented", HTTP 404). The module adds it to
  moto's Lambda responses: `ConcurrentExecutions` from moto's own knob
  `MOTO_LAMBDA_CONCURRENCY_QUOTA` (1,000 when unset) and `UnreservedConcurrentExecutions` that
  minus the functions' reserved concurrency, as moto's `PutFunctionConcurrency` counts it.
- `OnDemandThroughput` is neither stored nor reported by moto (`CreateTable`, `UpdateTable`, the
  CloudFormation resource): the maximum is checked on the arithmetic
  (tests/unit/test_onsale_plan.py) and on the reader's parsing of AWS's answer (botocore Stubber).
- `DescribeLimits` answers fixed table quotas of 10,000 units (AWS's default is 40,000), so the
  target here stays under 10,000 x 0.8 / 4.19 = 1,908 per second; a quota shortfall is checked
  on the arithmetic only.
- moto's CloudFormation skips `AWS::ApiGateway::Stage` (NOT_EMULATED in test_deploy_path.py): the
  test deploys stage v1 through the API with the throttle the template's MethodSettings give
  (`ApiThrottlingRateLimit`, `ApiThrottlingBurstLimit` at their defaults), then changes it with
  `UpdateStage`, as an operator would.
- moto reports `WarmThroughput` (a new table's 4,000 / 12,000 by default) and lets `UpdateTable`
  change it, and keeps `ScalingConfig.MaximumConcurrency` and the reserved concurrency as set.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import boto3
import pytest
from click.testing import CliRunner, Result
from moto.awslambda import urls as lambda_urls
from moto.awslambda.responses import LambdaResponse

from seat_tools.cli.main import cli
from tests.integration import test_deploy_path
from tests.integration.test_deploy_path import REGION, STACK, DeployedStack

EVENT = "onsale-concert"
SEAT_CLASS = "GA"
RATE = "1800"
ACCOUNT_SETTINGS_PATH = r"{0}/(?P<api_version>[^/]+)/account-settings/?$"

# The stack of test_deploy_path.py, created again for this module (its own moto server).
deployed = test_deploy_path.deployed


def _get_account_settings(self: LambdaResponse) -> tuple[int, dict[str, str], str]:
    """GetAccountSettings for moto, which lacks it (see the module docstring)."""
    limit = int(os.environ.get("MOTO_LAMBDA_CONCURRENCY_QUOTA", "1000"))
    reserved = sum(int(f.reserved_concurrency or 0) for f in self.backend.list_functions())
    body = {
        "AccountLimit": {
            "TotalCodeSize": 80530636800,
            "CodeSizeUnzipped": 262144000,
            "CodeSizeZipped": 52428800,
            "ConcurrentExecutions": limit,
            "UnreservedConcurrentExecutions": limit - reserved,
        },
        "AccountUsage": {"TotalCodeSize": 0, "FunctionCount": len(self.backend.list_functions())},
    }
    return 200, {}, json.dumps(body)


@pytest.fixture(scope="module")
def lambda_account_settings() -> Iterator[None]:
    """Adds GetAccountSettings to moto's Lambda before the server builds its routes."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(lambda_urls.url_paths, ACCOUNT_SETTINGS_PATH, LambdaResponse.dispatch)
        patch.setattr(LambdaResponse, "get_account_settings", _get_account_settings, raising=False)
        yield


@dataclass
class OnSaleStack:
    deployed: DeployedStack
    session: boto3.session.Session
    template_rate: str
    template_burst: str

    def client(self, service: str) -> Any:
        return self.session.client(service, endpoint_url=self.deployed.endpoint)

    @property
    def mapping_uuid(self) -> str:
        [mapping] = self.client("lambda").list_event_source_mappings(
            FunctionName=self.deployed.outputs["ReserveSeatsFunctionName"]
        )["EventSourceMappings"]
        return str(mapping["UUID"])

    def configure(
        self,
        *,
        shards: int,
        warm_write: int,
        api_rate: str,
        api_burst: str,
        maximum_concurrency: int = 10,
        reserved_concurrency: int | None = None,
        mapping_enabled: bool = True,
        event_pollers: int | None = None,
    ) -> None:
        """Puts the stack and the event in this state, through the APIs an operator would use."""
        result = seats("event", "reshard", EVENT, "--seat-class", SEAT_CLASS, "--shards", str(shards))
        assert result.exit_code == 0, result.output
        self.client("dynamodb").update_table(
            TableName=self.deployed.outputs["InventoryTableName"],
            WarmThroughput={"WriteUnitsPerSecond": warm_write, "ReadUnitsPerSecond": 12_000},
        )
        self.client("apigateway").update_stage(
            restApiId=self.deployed.outputs["CheckoutApiId"],
            stageName="v1",
            patchOperations=[
                {"op": "replace", "path": "/*/*/throttling/rateLimit", "value": api_rate},
                {"op": "replace", "path": "/*/*/throttling/burstLimit", "value": api_burst},
            ],
        )
        lambda_client = self.client("lambda")
        # the two modes are exclusive: the other one's configuration is passed empty (removed)
        scaling: dict[str, Any] = {"MaximumConcurrency": maximum_concurrency}
        pollers: dict[str, Any] = {}
        if event_pollers is not None:
            scaling, pollers = {}, {"MinimumPollers": event_pollers, "MaximumPollers": event_pollers}
        lambda_client.update_event_source_mapping(
            UUID=self.mapping_uuid,
            ScalingConfig=scaling,
            ProvisionedPollerConfig=pollers,
            Enabled=mapping_enabled,
        )
        function = self.deployed.outputs["ReserveSeatsFunctionName"]
        if reserved_concurrency is None:
            lambda_client.delete_function_concurrency(FunctionName=function)
        else:
            lambda_client.put_function_concurrency(
                FunctionName=function, ReservedConcurrentExecutions=reserved_concurrency
            )

    def configure_ready(self, **changes: Any) -> None:
        """What the plan says 1,800 reservations per second need, with `changes` on top."""
        self.configure(
            **({"shards": 3, "warm_write": 10_000, "api_rate": "1800", "api_burst": "3600"} | changes)
        )


def seats(*args: str) -> Result:
    return CliRunner().invoke(cli, ["--stack-name", STACK, *args], catch_exceptions=False)


def check(*args: str) -> Result:
    """`seats onsale check --stack-name S --event E ...`, as docs/reference/cli.md writes it."""
    return CliRunner().invoke(
        cli, ["onsale", "check", "--stack-name", STACK, "--event", EVENT, *args], catch_exceptions=False
    )


def short_items(result: Result) -> set[str]:
    document = json.loads(result.output)
    return {f["item"] for f in document["findings"] if not f["ok"]}


@pytest.fixture(scope="module")
def stack(lambda_account_settings: None, deployed: DeployedStack, template: Any) -> OnSaleStack:
    session = boto3.session.Session(region_name=REGION)
    parameters = template.document["Parameters"]
    on_sale = OnSaleStack(
        deployed,
        session,
        template_rate=str(parameters["ApiThrottlingRateLimit"]["Default"]),
        template_burst=str(parameters["ApiThrottlingBurstLimit"]["Default"]),
    )
    # The stage CloudFormation would create (moto skips AWS::ApiGateway::Stage): v1, throttled
    # by the template's MethodSettings at the parameters' defaults.
    apigateway = on_sale.client("apigateway")
    api_id = deployed.outputs["CheckoutApiId"]
    assert deployed.outputs["CheckoutApiUrl"].endswith("/v1")
    apigateway.create_deployment(restApiId=api_id, stageName="v1")
    apigateway.update_stage(
        restApiId=api_id,
        stageName="v1",
        patchOperations=[
            {"op": "replace", "path": "/*/*/throttling/rateLimit", "value": on_sale.template_rate},
            {"op": "replace", "path": "/*/*/throttling/burstLimit", "value": on_sale.template_burst},
        ],
    )
    created = seats("event", "create", EVENT, "--capacity", "100000", "--seat-class", SEAT_CLASS)
    assert created.exit_code == 0, created.output
    return on_sale


def test_the_template_defaults_are_not_ready_for_1800_per_second_and_each_shortfall_is_named(
    stack: OnSaleStack,
) -> None:
    # Given the stack as the template deploys it and a class of one shard item
    stack.configure(shards=1, warm_write=4_000, api_rate=stack.template_rate, api_burst=stack.template_burst)

    # When the operator checks it for 1,800 reservations per second
    result = check("--rate", RATE)

    # Then it is not ready, and the three short items say what they have and what is needed
    assert result.exit_code == 1, result.output
    lines = result.output.splitlines()
    short = [line for line in lines if line.startswith("SHORT")]
    assert len(short) == 3, result.output
    assert any(
        "seat class GA shard items: 1" in line and "(needs >= 3; supports 800/s)" in line for line in short
    )
    assert any("table warm write units/s: 4,000 (needs >= 9,436; supports 763/s)" in line for line in short)
    assert any(
        "POST /reservations, rate / burst: 1,000 / 2,000 (needs >= 1,800 / 3,600" in line for line in short
    )
    assert lines[-1].startswith("NOT READY: 3 of"), result.output
    assert "supports about 763 reservations/s, capped by table warm write units/s" in lines[-1]
    assert short_items(check("--rate", RATE, "--output", "json")) == {
        "shards:GA",
        "warm_write_units",
        "api_throttle",
    }


def test_the_stack_set_as_the_plan_says_is_ready(stack: OnSaleStack) -> None:
    # Given the values `seats onsale plan --rate 1800` prints
    plan = json.loads(CliRunner().invoke(cli, ["onsale", "plan", "--rate", RATE, "--output", "json"]).output)
    values = {i["item"]: i["value"] for i in plan["items"]}
    assert (values["maximum_concurrency"], values["shards"], values["warm_write_units"]) == (3, 3, 10_000)
    assert values["api_throttle"] == "1,800 / 3,600"
    stack.configure_ready(maximum_concurrency=values["maximum_concurrency"])

    # When the stack is checked for that rate
    result = check("--rate", RATE)

    # Then every finding is ok and the check exits 0
    assert result.exit_code == 0, result.output
    assert not [line for line in result.output.splitlines() if line.startswith("SHORT")]
    assert result.output.splitlines()[-1].startswith("READY: the stack supports about 1,800")
    document = json.loads(check("--rate", RATE, "--output", "json").output)
    assert document["ready"] is True
    found = {f["item"]: f for f in document["findings"]}
    # read from the live resources, not the template
    assert found["maximum_concurrency"]["have"] == "3"
    assert found["warm_write_units"]["have"] == "10,000"
    assert found["lambda_concurrency"]["have"] == "1,000 (account limit 1,000)"
    assert found["table_quota"]["have"] == "10,000 / 10,000"  # moto's DescribeLimits


def test_in_provisioned_mode_the_event_pollers_are_read_in_place_of_maximum_concurrency(
    stack: OnSaleStack,
) -> None:
    # Given the ready stack whose event source runs in provisioned mode with 2 event pollers
    stack.configure_ready(event_pollers=2)

    # When it is checked for 1,800 per second (3 containers)
    result = check("--rate", RATE, "--output", "json")

    # Then the pollers' 20 invocations are read from the mapping and the stack is ready
    assert result.exit_code == 0, result.output
    found = {f["item"]: f for f in json.loads(result.output)["findings"]}
    assert "maximum_concurrency" not in found
    assert found["event_pollers"]["have"] == "2 event pollers (20 invocations at once, no scale-up)"
    assert found["event_pollers"]["supports"] == 16_000
    stack.configure_ready()  # back to standard mode for the other tests


@pytest.mark.parametrize(
    ("change", "item"),
    [
        ({"maximum_concurrency": 2}, "maximum_concurrency"),
        ({"mapping_enabled": False}, "maximum_concurrency"),
        ({"reserved_concurrency": 2}, "lambda_concurrency"),
        ({"shards": 2}, "shards:GA"),
        ({"warm_write": 9_000}, "warm_write_units"),
        ({"api_rate": "1799"}, "api_throttle"),
        ({"api_burst": "3599"}, "api_throttle"),
    ],
)
def test_one_shortfall_makes_the_stack_not_ready_and_is_the_only_finding(
    stack: OnSaleStack, change: dict[str, Any], item: str
) -> None:
    # Given the ready stack with one setting below what 1,800 per second need
    stack.configure_ready(**change)

    # When it is checked
    result = check("--rate", RATE, "--output", "json")

    # Then it is not ready, on exactly that item
    assert result.exit_code == 1, result.output
    assert short_items(result) == {item}
    assert json.loads(result.output)["ready"] is False


def test_the_accounts_unreserved_concurrency_caps_the_containers(
    stack: OnSaleStack, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given an account whose whole concurrency is 2 (a new account's can be that low)
    stack.configure_ready()
    monkeypatch.setenv("MOTO_LAMBDA_CONCURRENCY_QUOTA", "2")

    # When the stack is checked for 1,800 per second (3 containers)
    result = check("--rate", RATE, "--output", "json")

    # Then the account's concurrency is the shortfall
    assert result.exit_code == 1, result.output
    assert short_items(result) == {"lambda_concurrency"}


def test_without_a_rate_it_prints_the_rate_the_stack_supports_and_what_caps_it(stack: OnSaleStack) -> None:
    # Given the ready stack, whose API stage allows 1,400 requests per second
    stack.configure_ready(api_rate="1400", api_burst="2800")

    # When it is checked without a rate
    result = check()

    # Then it says the stack supports 1,400 per second, capped by the API, and exits 0
    assert result.exit_code == 0, result.output
    assert "at the rate it supports" in result.output.splitlines()[0]
    assert result.output.splitlines()[-1] == (
        "READY: the stack supports about 1,400 reservations/s,"
        " capped by checkout API throttle for POST /reservations, rate / burst"
    )


def test_without_a_rate_a_disabled_event_source_is_not_ready(stack: OnSaleStack) -> None:
    # Given the event source mapping disabled: nothing is consumed at any rate
    stack.configure_ready(mapping_enabled=False)

    # When it is checked without a rate
    result = check()

    # Then it is not ready, on the mapping
    assert result.exit_code == 1, result.output
    assert "mapping DISABLED" in result.output


def test_an_unknown_event_or_seat_class_is_one_line_and_exit_1(stack: OnSaleStack) -> None:
    unknown_event = CliRunner().invoke(
        cli, ["onsale", "check", "--stack-name", STACK, "--event", "no-such-event"], catch_exceptions=False
    )
    assert unknown_event.exit_code == 1
    assert unknown_event.output.strip().splitlines() == [
        f"Error: event 'no-such-event' not found in {stack.deployed.outputs['InventoryTableName']}"
    ]
    unknown_class = check("--seat-class", "VIP")
    assert unknown_class.exit_code == 1
    assert unknown_class.output.strip() == f"Error: event '{EVENT}' has no seat class VIP"
