"""Fn::ForEach loops (the AWS::LanguageExtensions transform's) expanded as CloudFormation expands them
(`seat_tools.local.template.expand_for_each`): the local stack, the tests and checkov (`make security`)
read template.yaml's alarms and log groups as the deployed stack gets them."""

from __future__ import annotations

import copy
import tomllib
from pathlib import Path
from typing import Any

import pytest
from samcli.lib.cfn_language_extensions.models import TemplateProcessingContext
from samcli.lib.cfn_language_extensions.processors.foreach import ForEachProcessor

from seat_tools.local.template import TemplateError, expand_for_each, read_template_document, resolve_includes

REPO = Path(__file__).resolve().parents[2]


def test_the_template_expands_as_sam_cli_expands_it() -> None:
    # Given template.yaml as written, its included files in place (CloudFormation's first step)
    written = resolve_includes(read_template_document(REPO / "template.yaml", includes=False), REPO)
    assert any(key.startswith("Fn::ForEach::") for key in written["Resources"])
    sam_cli = TemplateProcessingContext(fragment=copy.deepcopy(written))

    # When both expand its loops
    ForEachProcessor().process_template(sam_cli)
    ours = expand_for_each(written)

    # Then they agree, and the loops' resources are there
    assert ours == sam_cli.fragment
    assert {"SweepHoldsErrorsAlarm", "ReserveSeatsThrottlesAlarm", "IssueTicketsFunctionLogGroup"} <= set(
        ours["Resources"]
    )
    assert not [key for key in ours["Resources"] if key.startswith("Fn::")]
    assert read_template_document(REPO / "template.yaml") == ours


def resources(loops: dict[str, Any]) -> dict[str, Any]:
    return expand_for_each({"Resources": loops})["Resources"]


def test_the_identifier_is_replaced_in_keys_strings_and_refs_and_loops_nest() -> None:
    expanded = resources(
        {
            "Fn::ForEach::Outer": [
                "Name",
                ["Sweep", "Issue"],
                {
                    "Fn::ForEach::Inner": [
                        "Metric",
                        ["Errors", "Throttles"],
                        {
                            "${Name}${Metric}Alarm": {
                                "Type": "AWS::CloudWatch::Alarm",
                                "Properties": {
                                    "MetricName": {"Ref": "Metric"},
                                    "Value": {"Fn::Sub": "${${Name}Function}"},
                                    "Label": "${Name}/${Metric}",
                                },
                            }
                        },
                    ]
                },
            ]
        }
    )

    assert list(expanded) == [
        "SweepErrorsAlarm",
        "SweepThrottlesAlarm",
        "IssueErrorsAlarm",
        "IssueThrottlesAlarm",
    ]
    assert expanded["IssueThrottlesAlarm"]["Properties"] == {
        "MetricName": "Throttles",
        "Value": {"Fn::Sub": "${IssueFunction}"},
        "Label": "Issue/Throttles",
    }


def test_the_ampersand_form_drops_what_is_not_alphanumeric() -> None:
    expanded = resources(
        {
            "Fn::ForEach::Paths": [
                "Path",
                ["/a/b", "c-d"],
                {"Log&{Path}": {"Type": "T", "Properties": {"P": "${Path}"}}},
            ]
        }
    )

    assert expanded == {
        "Logab": {"Type": "T", "Properties": {"P": "/a/b"}},
        "Logcd": {"Type": "T", "Properties": {"P": "c-d"}},
    }


@pytest.mark.parametrize(
    ("loops", "refused"),
    [
        ({"Fn::ForEach::L": ["X", ["A", "A"], {"R${X}": {}}]}, "RA is produced twice"),
        ({"R": {}, "Fn::ForEach::L": ["X", [""], {"R${X}": {}}]}, "R is produced twice"),
        ({"Fn::ForEach::L": ["X", {"Ref": "Names"}, {"R${X}": {}}]}, "only a literal list of strings"),
        ({"Fn::ForEach::L": ["X", ["A"]]}, "must be [Identifier"),
    ],
    ids=["an item twice", "a key the template has", "a parameter's list", "no fragment"],
)
def test_what_cloudformation_would_refuse_is_refused(loops: dict[str, Any], refused: str) -> None:
    with pytest.raises(TemplateError, match=refused.replace("[", r"\[")):
        resources(loops)


def test_only_conditions_resources_and_outputs_are_expanded() -> None:
    document = {"Metadata": {"Fn::ForEach::Kept": ["X", ["A"], {"K${X}": "v"}]}, "Resources": {}}

    assert expand_for_each(document) == document


def test_samconfig_has_every_sam_command_expand_the_loops() -> None:
    # sam build, package, deploy, validate, sync and local read the template themselves: without
    # this they stop at the first loop (SAM CLI expands AWS::LanguageExtensions only when asked)
    config = tomllib.loads((REPO / "samconfig.toml").read_text())

    assert config["default"]["global"]["parameters"]["language_extensions"] is True
