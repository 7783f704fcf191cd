"""Reads template.yaml for the tests (cfn-lint's decoder understands the short-form intrinsics)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cfnlint.decode import decode_str


@dataclass(frozen=True)
class Template:
    document: dict[str, Any]

    def resource(self, logical_id: str) -> dict[str, Any]:
        return self.document["Resources"][logical_id]

    def properties(self, logical_id: str) -> dict[str, Any]:
        return self.resource(logical_id).get("Properties", {})

    def parameter_default(self, name: str) -> Any:
        return self.document["Parameters"][name].get("Default")

    def resolve(self, value: Any) -> Any:
        """Resolves `Ref` to a parameter's default; other intrinsics are returned as they are."""
        if (
            isinstance(value, dict)
            and set(value) == {"Ref"}
            and value["Ref"] in self.document.get("Parameters", {})
        ):
            return self.parameter_default(value["Ref"])
        return value

    def table_create_request(self, name: str) -> dict[str, Any]:
        props = self.properties("InventoryTable")
        request: dict[str, Any] = {
            "TableName": name,
            "KeySchema": [dict(k) for k in props["KeySchema"]],
            "AttributeDefinitions": [dict(a) for a in props["AttributeDefinitions"]],
            "BillingMode": props.get("BillingMode", "PROVISIONED"),
        }
        if props.get("GlobalSecondaryIndexes"):
            request["GlobalSecondaryIndexes"] = [dict(i) for i in props["GlobalSecondaryIndexes"]]
        return request

    @property
    def table_ttl_attribute(self) -> str | None:
        spec = self.properties("InventoryTable").get("TimeToLiveSpecification")
        return spec["AttributeName"] if spec and spec.get("Enabled") else None

    def function_environment(self, overrides: dict[str, str]) -> dict[str, str]:
        """Globals + the function's variables, parameters at their defaults, then `overrides`."""
        env: dict[str, Any] = {}
        env.update(
            self.document.get("Globals", {}).get("Function", {}).get("Environment", {}).get("Variables", {})
        )
        env.update(self.properties("ReserveSeatsFunction").get("Environment", {}).get("Variables", {}))
        resolved = {name: self.resolve(value) for name, value in env.items()}
        resolved.update(overrides)
        unresolved = {name: value for name, value in resolved.items() if not isinstance(value, (str, int))}
        if unresolved:
            raise ValueError(f"function variables the tests cannot resolve: {unresolved}")
        return {name: str(value) for name, value in resolved.items()}


def load_template(path: Path) -> Template:
    document, matches = decode_str(path.read_text())
    if matches:
        raise ValueError(f"template.yaml does not parse: {matches}")
    return Template(document)
