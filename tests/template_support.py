"""The tests' view of template.yaml, on top of the package's reader (`seat_tools.local.template`).

The document, the table and the function's environment come from the same code the local stack
builds from, so the tests cannot read the template differently from it. What is left here only
serves assertions: the raw document, with parameter defaults kept in their YAML types.

The document is the template as CloudFormation processes it: the files template.yaml brings in
with AWS::Include (api/openapi.yaml, monitoring/dashboard.yaml) are in place
(`seat_tools.local.template.resolve_includes`), as CloudFormation puts them before any other
transform; `read_template_document(path, includes=False)` gives the file as written.
"""

from __future__ import annotations

import copy
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from seat_tools.local.template import StackTemplate, read_template_document
from seat_tools.local.template import load_template as load_stack_template


@dataclass(frozen=True)
class Template:
    document: dict[str, Any]
    stack: StackTemplate

    def resource(self, logical_id: str) -> dict[str, Any]:
        return self.document["Resources"][logical_id]

    def properties(self, logical_id: str) -> dict[str, Any]:
        return self.resource(logical_id).get("Properties", {})

    def parameter_default(self, name: str) -> Any:
        return self.document["Parameters"][name].get("Default")

    def resolve(self, value: Any) -> Any:
        """Resolves `Ref` to a parameter's default (typed as in the YAML); other values stay as they are."""
        if (
            isinstance(value, dict)
            and set(value) == {"Ref"}
            and value["Ref"] in self.document.get("Parameters", {})
        ):
            return self.parameter_default(value["Ref"])
        return value

    def table_create_request(self, name: str) -> dict[str, Any]:
        return self.stack.table.create_table_request(name)

    @property
    def table_ttl_attribute(self) -> str | None:
        return self.stack.table.ttl_attribute

    def function_environment(self, overrides: dict[str, str]) -> dict[str, str]:
        """The reservation function's variables (Globals merged, parameters at their defaults), then
        `overrides`; the variables naming resources (the table, the topic) must be overridden."""
        env: dict[str, Any] = {**self.stack.function.environment, **overrides}
        unresolved = {name: value for name, value in env.items() if not isinstance(value, (str, int))}
        if unresolved:
            raise ValueError(f"function variables the tests cannot resolve: {unresolved}")
        return {name: str(value) for name, value in env.items()}


def load_template(path: Path) -> Template:
    return Template(read_template_document(path), load_stack_template(path))


class _NoManagedPolicyNames:
    """SAM asks IAM for the ARNs of managed policies named in `Policies`; the template names none."""

    def load(self) -> dict[str, str]:
        return {}


def sam_translate(
    document: dict[str, Any],
    code_uri: str = "s3://seat-inventory-code/function.zip",
    parameter_values: dict[str, str] | None = None,
) -> dict[str, Any]:
    """The template as CloudFormation receives it after SAM's transform (as `sam deploy` sends it),
    with every function's code at `code_uri` (where `sam package` would have put it) and the
    parameter values CloudFormation gives the transform. `document` has its AWS::Include files in
    place (`load_template` does it): CloudFormation runs that transform before SAM's."""
    from samtranslator.translator.transform import transform

    document = copy.deepcopy(document)
    for resource in document["Resources"].values():
        if resource["Type"] == "AWS::Serverless::Function":
            resource["Properties"]["CodeUri"] = code_uri
    region = os.environ.get("AWS_DEFAULT_REGION")
    os.environ["AWS_DEFAULT_REGION"] = "us-east-1"  # the transform builds ARNs with the region
    try:
        return transform(document, parameter_values or {}, _NoManagedPolicyNames())
    finally:
        if region is None:
            del os.environ["AWS_DEFAULT_REGION"]
        else:
            os.environ["AWS_DEFAULT_REGION"] = region
