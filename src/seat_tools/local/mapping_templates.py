"""Renders API Gateway mapping templates (Velocity) locally, with the `$input`, `$util` and `$context`
variables that API Gateway gives a REST API's mapping templates.

The Velocity engine is `airspeed-ext`, the fork of airspeed that LocalStack maintains to run API
Gateway and AppSync templates: it adds the Java methods templates call on strings, lists and maps
(`$s.matches(regex)` with Java's whole-string semantics, `$s.length()`, `$list.size()`,
`$map.put(k, v)`, ...) and `#set` into nested maps (`#set($context.responseOverride.status = 404)`),
which upstream airspeed lacks (its `matches` only anchors at the start).

What is supported (docs/reference/http-api.md lists the same):
- `$input.body`, `$input.json(path)`, `$input.path(path)`, `$input.params()`, `$input.params(name)`
  (path, then query string, then header, as API Gateway looks them up; header names are
  case-insensitive). JSONPath: `$`, `.name`, `['name']` and `[index]` steps.
- `$util.escapeJavaScript`, `$util.parseJson`, `$util.urlEncode`, `$util.urlDecode`,
  `$util.base64Encode`, `$util.base64Decode`.
- `$context.requestId`, `requestTimeEpoch`, `requestTime`, `httpMethod`, `resourcePath`, `path`,
  `stage`, `apiId`, `accountId`, `identity.sourceIp`, `identity.userAgent`, `error.message`,
  `error.messageString`, `error.validationErrorString`, and the writable
  `responseOverride.status` / `responseOverride.header.<name>` and `requestOverride.path.<name>`
  (an integration request path parameter; each read back after rendering).
"""

from __future__ import annotations

import base64
import functools
import json
import re
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import airspeed

_STEP = re.compile(r"\.([A-Za-z_$][\w$-]*)|\[\s*'([^']*)'\s*\]|\[\s*\"([^\"]*)\"\s*\]|\[\s*(-?\d+)\s*\]")


class MappingTemplateError(Exception):
    """A template that does not parse or fails while rendering; API Gateway answers 500 then."""


def json_path(document: Any, path: str) -> Any:
    """The value at a JSONPath of the subset `$`, `.name`, `['name']`, `[index]`; None when absent."""
    path = path.strip()
    if not path.startswith("$"):
        raise MappingTemplateError(f"JSONPath {path!r} must start with $")
    position, value = 1, document
    while position < len(path):
        match = _STEP.match(path, position)
        if match is None:
            raise MappingTemplateError(f"JSONPath {path!r} is outside the supported subset")
        name, quoted, double_quoted, index = match.groups()
        key = name if name is not None else quoted if quoted is not None else double_quoted
        if key is not None:
            value = value.get(key) if isinstance(value, dict) else None
        else:
            position_index = int(index)
            value = (
                value[position_index]
                if isinstance(value, list) and -len(value) <= position_index < len(value)
                else None
            )
        position = match.end()
    return value


class InputVariable:
    """`$input`: the payload being mapped (method request or integration response) and the method
    request's parameters."""

    def __init__(
        self,
        body: str,
        *,
        path: Mapping[str, str] | None = None,
        querystring: Mapping[str, str] | None = None,
        header: Mapping[str, str] | None = None,
    ) -> None:
        self.body = body
        self._path = dict(path or {})
        self._querystring = dict(querystring or {})
        self._header = dict(header or {})

    def _document(self) -> Any:
        if not self.body.strip():
            return {}
        try:
            return json.loads(self.body)
        except ValueError as exc:
            raise MappingTemplateError(f"$input: the payload is not JSON: {exc}") from exc

    def path(self, expression: str) -> Any:
        """The value at the JSONPath, as an object the template can navigate."""
        return json_path(self._document(), expression)

    def json(self, expression: str) -> str:
        """The value at the JSONPath as JSON text (a string comes out quoted)."""
        return json.dumps(json_path(self._document(), expression), separators=(",", ":"))

    def params(self, name: str | None = None) -> Any:
        if name is None:
            return {
                "path": dict(self._path),
                "querystring": dict(self._querystring),
                "header": dict(self._header),
            }
        if name in self._path:
            return self._path[name]
        if name in self._querystring:
            return self._querystring[name]
        for header, value in self._header.items():
            if header.lower() == name.lower():
                return value
        return ""


class UtilVariable:
    """`$util`, as API Gateway defines it for mapping templates."""

    @staticmethod
    def escapeJavaScript(text: Any) -> str:
        # Java's StringEscapeUtils.escapeJavaScript, which API Gateway uses: quotes, backslash,
        # slash and control characters are escaped (a single quote too, which JSON does not know).
        escaped = json.dumps(str(text), ensure_ascii=False)[1:-1]
        return escaped.replace("'", "\\'").replace("/", "\\/")

    @staticmethod
    def parseJson(text: Any) -> Any:
        try:
            return json.loads(str(text))
        except ValueError as exc:
            raise MappingTemplateError(f"$util.parseJson: not JSON: {text!r}") from exc

    @staticmethod
    def urlEncode(text: Any) -> str:
        return urllib.parse.quote_plus(str(text))

    @staticmethod
    def urlDecode(text: Any) -> str:
        return urllib.parse.unquote_plus(str(text))

    @staticmethod
    def base64Encode(text: Any) -> str:
        return base64.b64encode(str(text).encode()).decode()

    @staticmethod
    def base64Decode(text: Any) -> str:
        return base64.b64decode(str(text)).decode()


@dataclass
class Rendered:
    """A rendered template, what it asked to override in the response, and the integration
    request path parameters it set (`$context.requestOverride.path.<name>`)."""

    body: str
    status_override: int | None = None
    header_overrides: dict[str, str] = field(default_factory=dict)
    path_overrides: dict[str, str] = field(default_factory=dict)


@functools.lru_cache(maxsize=256)
def compiled_template(template: str) -> airspeed.Template:
    """The template parsed once: parsing is most of a render's time, and a parsed template merges
    any number of namespaces (its evaluation keeps no state)."""
    parsed = airspeed.Template(template)
    parsed.ensure_compiled()
    return parsed


def render(
    template: str,
    *,
    input_variable: InputVariable,
    context: Mapping[str, Any],
    stage_variables: Mapping[str, str] | None = None,
) -> Rendered:
    """Renders one mapping template as API Gateway would; `context` is copied, not changed."""
    context_variable: dict[str, Any] = json.loads(json.dumps(dict(context)))
    context_variable.setdefault("responseOverride", {}).setdefault("header", {})
    context_variable["responseOverride"].setdefault("status", None)
    context_variable.setdefault("requestOverride", {}).setdefault("header", {})
    context_variable["requestOverride"].setdefault("path", {})
    namespace = {
        "input": input_variable,
        "util": UtilVariable(),
        "context": context_variable,
        "stageVariables": dict(stage_variables or {}),
    }
    try:
        body = compiled_template(template).merge(namespace)
    except MappingTemplateError:
        raise
    except Exception as exc:  # airspeed raises its own and Python errors from the template's calls
        raise MappingTemplateError(f"mapping template failed: {exc}") from exc
    override = context_variable["responseOverride"]
    status = override.get("status")
    return Rendered(
        body=body,
        status_override=int(status) if status not in (None, "") else None,
        header_overrides={str(k): str(v) for k, v in override.get("header", {}).items()},
        path_overrides={
            str(k): str(v) for k, v in context_variable["requestOverride"].get("path", {}).items()
        },
    )
