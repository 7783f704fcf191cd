"""The template's checkout API on 127.0.0.1: the REST API `CheckoutApi` of template.yaml, executed.

Nothing here restates a route, a schema or a mapping: `ApiDefinition` reads the API's OpenAPI
definition (`DefinitionBody`, which template.yaml brings in from api/openapi.yaml with AWS::Include,
put in place as CloudFormation does by `read_template_document`), with the intrinsics resolved to
the local resources, and `LocalApiGateway.handle` does what API Gateway does with a request:

1. finds the route (an unknown path or method is answered 403 "Missing Authentication Token");
2. applies the route's request validator: required parameters, and the body against the
   route's JSON Schema model (jsonschema's Draft 4 validator, the draft API Gateway uses);
   a refusal is the gateway response BAD_REQUEST_BODY rendered with
   `$context.error.validationErrorString`;
3. renders the integration's request template (`mapping_templates.render`, airspeed-ext);
4. sends the rendered request, signed with SigV4, to the local engine of the integration's
   service (`sqs:path/...` to moto, `dynamodb:action/...` to DynamoDB Local), or for a `mock`
   integration takes the status code from the rendered template;
5. selects the integration response whose selection pattern matches the status code, renders
   its response template and maps its response parameters, then applies
   `$context.responseOverride`.

Local differences, on purpose: authentication (IAM, JWT, API keys), throttling and the
integrations' roles are not enforced; moto answers SQS's query protocol in XML only, so its
answer is converted to the JSON that SQS gives API Gateway (which asks for JSON); validation
messages are jsonschema's wording, not API Gateway's.
"""

from __future__ import annotations

import json
import re
import threading
import time
import uuid
import xml.etree.ElementTree as ElementTree
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

import urllib3
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from seat_tools.local.engines import FAKE_ACCESS_KEY_ID, FAKE_SECRET_ACCESS_KEY
from seat_tools.local.mapping_templates import InputVariable, MappingTemplateError, render
from seat_tools.local.template import Resolver, TemplateError, read_template_document

API_ID = "CheckoutApi"
LOCAL_API_ID = "local"
JSON = "application/json"
DYNAMODB_TARGET_PREFIX = "DynamoDB_20120810."
_URI = re.compile(r"arn:[^:]+:apigateway:([^:]+):([^:]+):(path|action)/(.*)")
_LAMBDA_URI = re.compile(r"arn:[^:]+:apigateway:[^:]+:lambda:path/2015-03-31/functions/(.+)/invocations")
_METHODS = ("get", "put", "post", "delete", "options", "head", "patch")


class ApiDefinitionError(TemplateError):
    """The template has no checkout API, or one the local gateway cannot run."""


@dataclass(frozen=True, slots=True)
class Route:
    method: str  # upper case
    resource_path: str  # as in the definition, e.g. /reservations/{id}
    pattern: re.Pattern[str]
    operation: Mapping[str, Any]

    def match(self, method: str, path: str) -> dict[str, str] | None:
        found = self.pattern.fullmatch(path)
        if found is None or method != self.method:
            return None
        return {name: unquote(value) for name, value in found.groupdict().items()}


@dataclass(frozen=True, slots=True)
class ApiDefinition:
    """The REST API of the template: its stage, routes, models, validators and gateway responses."""

    stage: str
    routes: tuple[Route, ...]
    schemas: Mapping[str, Any]
    validators: Mapping[str, Any]
    default_validator: str | None
    gateway_responses: Mapping[str, Any]

    @classmethod
    def from_template(
        cls, template_path: Path, resolver: Resolver, logical_id: str = API_ID
    ) -> ApiDefinition:
        """Reads `logical_id`'s DefinitionBody (the file it includes, api/openapi.yaml); references
        to the local resources are resolved, what the local stack does not build (roles) is left as
        written, as is never used."""
        document = read_template_document(template_path)
        resource = document["Resources"].get(logical_id)
        if not isinstance(resource, dict) or resource.get("Type") != "AWS::Serverless::Api":
            raise ApiDefinitionError(f"template has no AWS::Serverless::Api {logical_id!r}")
        properties = resource.get("Properties") or {}
        body = resolver.partial(properties.get("DefinitionBody"))
        if not isinstance(body, dict) or not isinstance(body.get("paths"), dict):
            raise ApiDefinitionError(f"{logical_id} has no DefinitionBody with paths")
        routes = []
        for resource_path, operations in body["paths"].items():
            regex = re.sub(r"\\\{([A-Za-z_][A-Za-z0-9_]*)\\\}", r"(?P<\1>[^/]+)", re.escape(resource_path))
            for method, operation in operations.items():
                if method in _METHODS:
                    routes.append(Route(method.upper(), resource_path, re.compile(regex), operation))
        return cls(
            stage=str(resolver.resolve(properties.get("StageName", "Prod"))),
            routes=tuple(routes),
            schemas=(body.get("components") or {}).get("schemas") or {},
            validators=body.get("x-amazon-apigateway-request-validators") or {},
            default_validator=body.get("x-amazon-apigateway-request-validator"),
            gateway_responses=body.get("x-amazon-apigateway-gateway-responses") or {},
        )

    def find(self, method: str, path: str) -> tuple[Route, dict[str, str]] | None:
        for route in self.routes:
            parameters = route.match(method, path)
            if parameters is not None:
                return route, parameters
        return None


@dataclass(frozen=True, slots=True)
class ApiRequest:
    method: str
    path: str  # below the stage, e.g. /reservations/r-1
    headers: Mapping[str, str]
    body: str = ""
    query: Mapping[str, str] = field(default_factory=dict)
    source_ip: str = "127.0.0.1"

    @property
    def content_type(self) -> str:
        """The body's media type, application/json when the request names none (as API Gateway)."""
        return (self.header("Content-Type") or JSON).split(";", 1)[0].strip().lower()

    def header(self, name: str) -> str | None:
        for key, value in self.headers.items():
            if key.lower() == name.lower():
                return value
        return None


@dataclass(frozen=True, slots=True)
class ApiResponse:
    status: int
    headers: Mapping[str, str]
    body: str


@dataclass(frozen=True, slots=True)
class IntegrationResult:
    status: int
    headers: Mapping[str, str]
    body: str


class ServiceBackends:
    """Sends a rendered integration request to the local engine of its service, signed like API
    Gateway signs it (SigV4; both engines accept any credentials)."""

    def __init__(self, endpoints: Mapping[str, str], region: str) -> None:
        self._endpoints = dict(endpoints)
        self._region = region
        self._credentials = Credentials(FAKE_ACCESS_KEY_ID, FAKE_SECRET_ACCESS_KEY)
        self._http = urllib3.PoolManager(
            maxsize=32, retries=False, timeout=urllib3.Timeout(connect=5, read=30)
        )

    def call(self, uri: str, headers: Mapping[str, str], body: str) -> IntegrationResult:
        match = _URI.fullmatch(uri)
        if match is None:
            raise ApiDefinitionError(f"integration uri {uri!r} is not an AWS service uri")
        _, service, kind, target = match.groups()
        endpoint = self._endpoints.get(service)
        if endpoint is None:
            raise ApiDefinitionError(f"no local engine serves {service!r} (integration uri {uri})")
        request_headers = {"Accept": JSON, **headers}
        if kind == "path":
            url = endpoint.rstrip("/") + "/" + target
        elif service == "dynamodb":
            url = endpoint.rstrip("/") + "/"
            request_headers["X-Amz-Target"] = DYNAMODB_TARGET_PREFIX + target
            request_headers["Content-Type"] = "application/x-amz-json-1.0"
        else:
            raise ApiDefinitionError(f"{service} action integrations are not supported locally ({uri})")
        signed = AWSRequest(method="POST", url=url, data=body.encode(), headers=request_headers)
        SigV4Auth(self._credentials, service, self._region).add_auth(signed)
        response = self._http.request("POST", url, body=body.encode(), headers=dict(signed.headers.items()))
        text = response.data.decode()
        if service == "sqs" and text.lstrip().startswith("<"):
            text = json.dumps(xml_to_json(text))
        return IntegrationResult(response.status, dict(response.headers.items()), text)


def xml_to_json(text: str) -> dict[str, Any]:
    """An SQS query-protocol XML answer as the JSON SQS answers with when asked for JSON:
    each element becomes a key (namespace dropped), leaves become strings."""

    def convert(element: ElementTree.Element) -> Any:
        children = list(element)
        if not children:
            return element.text
        return {child.tag.split("}", 1)[-1]: convert(child) for child in children}

    root = ElementTree.fromstring(text)
    return {root.tag.split("}", 1)[-1]: convert(root)}


class LocalApiGateway:
    """Runs API requests through the template's definition against the local engines."""

    def __init__(
        self,
        api: ApiDefinition,
        backends: ServiceBackends,
        *,
        account_id: str,
        clock: Callable[[], float] = time.time,
        functions: Callable[[str, dict[str, Any]], dict[str, Any]] | None = None,
    ) -> None:
        """`functions(arn, event)` runs a Lambda proxy route's function (`function_host`)."""
        self.api = api
        self._backends = backends
        self._account_id = account_id
        self._clock = clock
        self._functions = functions

    # ------------------------------------------------------------------ the request lifecycle
    def handle(self, request: ApiRequest) -> ApiResponse:
        found = self.api.find(request.method, request.path)
        context = self._context(request, found[0].resource_path if found else request.path)
        if found is None:
            return self._gateway_response(
                "MISSING_AUTHENTICATION_TOKEN", 403, "Missing Authentication Token", context, request, {}
            )
        route, path_parameters = found
        refusal = self._validate(route, request, path_parameters, context)
        if refusal is not None:
            return refusal
        try:
            return self._integrate(route, request, path_parameters, context)
        except MappingTemplateError:
            return self._gateway_response(
                "DEFAULT_5XX", 500, "Internal server error", context, request, path_parameters
            )
        except ApiDefinitionError as exc:  # something of the template the local gateway cannot run
            return ApiResponse(500, {"Content-Type": JSON}, json.dumps({"message": f"local API: {exc}"}))

    def _context(self, request: ApiRequest, resource_path: str) -> dict[str, Any]:
        now = self._clock()
        return {
            "requestId": str(uuid.uuid4()),
            "requestTimeEpoch": int(now * 1000),
            "requestTime": time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime(now)),
            "httpMethod": request.method,
            "resourcePath": resource_path,
            "path": f"/{self.api.stage}{request.path}",
            "stage": self.api.stage,
            "apiId": LOCAL_API_ID,
            "accountId": self._account_id,
            "identity": {"sourceIp": request.source_ip, "userAgent": request.header("User-Agent") or ""},
            "error": {},
        }

    def _input(self, body: str, request: ApiRequest, path_parameters: Mapping[str, str]) -> InputVariable:
        return InputVariable(body, path=path_parameters, querystring=request.query, header=request.headers)

    def _validate(
        self,
        route: Route,
        request: ApiRequest,
        path_parameters: Mapping[str, str],
        context: dict[str, Any],
    ) -> ApiResponse | None:
        operation = route.operation
        validator = self.api.validators.get(
            operation.get("x-amazon-apigateway-request-validator") or self.api.default_validator or "",
            {},
        )
        if validator.get("validateRequestParameters"):
            missing = [
                f"{parameter['in']}.{parameter['name']}"
                for parameter in operation.get("parameters", [])
                if parameter.get("required")
                and not {
                    "path": lambda n: path_parameters.get(n),
                    "query": lambda n: request.query.get(n),
                    "header": request.header,
                }[parameter["in"]](parameter["name"])
            ]
            if missing:
                message = f"Missing required request parameters: [{', '.join(missing)}]"
                return self._gateway_response(
                    "BAD_REQUEST_PARAMETERS", 400, message, context, request, path_parameters
                )
        # The model of the request's content type: none for another type (the integration's
        # passthrough behaviour decides then).
        content = ((operation.get("requestBody") or {}).get("content") or {}).get(request.content_type, {})
        schema = content.get("schema")
        if not validator.get("validateRequestBody") or schema is None:
            return None
        problems = self.body_problems(schema, request.body)
        if not problems:
            return None
        context["error"]["validationErrorString"] = "[" + ", ".join(problems) + "]"
        return self._gateway_response(
            "BAD_REQUEST_BODY", 400, "Invalid request body", context, request, path_parameters
        )

    def body_problems(self, schema: Mapping[str, Any], body: str) -> list[str]:
        """Why a body does not fit a route's model (empty when it does)."""
        import jsonschema

        try:
            document = json.loads(body) if body.strip() else None
        except ValueError as exc:
            return [f"Invalid JSON in request body: {exc}"]
        resolved = self._model(schema)
        validator = jsonschema.Draft4Validator(resolved)
        errors = sorted(validator.iter_errors(document), key=lambda e: (list(e.absolute_path), e.message))
        return [
            (f"{'.'.join(str(p) for p in error.absolute_path)}: " if error.absolute_path else "")
            + error.message
            for error in errors
        ]

    def _model(self, schema: Mapping[str, Any]) -> Mapping[str, Any]:
        reference = schema.get("$ref")
        if isinstance(reference, str):
            name = reference.rsplit("/", 1)[-1]
            if name not in self.api.schemas:
                raise ApiDefinitionError(f"model {reference!r} is not in components.schemas")
            return self.api.schemas[name]
        return schema

    def _integrate(
        self,
        route: Route,
        request: ApiRequest,
        path_parameters: Mapping[str, str],
        context: dict[str, Any],
    ) -> ApiResponse:
        integration = route.operation.get("x-amazon-apigateway-integration")
        if not isinstance(integration, dict):
            raise ApiDefinitionError(f"{route.method} {route.resource_path} has no integration")
        templates = integration.get("requestTemplates") or {}
        template = templates.get(request.content_type)
        if template is None and str(integration.get("passthroughBehavior", "")).lower() == "never":
            return self._gateway_response(
                "UNSUPPORTED_MEDIA_TYPE",
                415,
                "Unsupported Media Type",
                context,
                request,
                path_parameters,
            )
        if str(integration.get("type", "")).lower() == "aws_proxy":
            return self._proxy(route, integration, request, path_parameters, context)
        method_input = self._input(request.body, request, path_parameters)
        rendered = (
            render(template, input_variable=method_input, context=context) if template is not None else None
        )
        body = rendered.body if rendered is not None else request.body
        kind = str(integration.get("type", "")).lower()
        if kind == "mock":
            result = IntegrationResult(int(json.loads(body or "{}").get("statusCode", 200)), {}, "")
        elif kind == "aws":
            headers = self._integration_headers(integration, request, context)
            overrides = rendered.path_overrides if rendered is not None else {}
            uri = self._integration_uri(integration, request, context, overrides)
            try:
                result = self._backends.call(uri, headers, body)
            except (urllib3.exceptions.HTTPError, OSError):
                return self._gateway_response(
                    "INTEGRATION_FAILURE",
                    504,
                    "Endpoint request timed out",
                    context,
                    request,
                    path_parameters,
                )
        else:
            raise ApiDefinitionError(f"integration type {kind!r} is not supported locally")
        return self._respond(integration, result, request, path_parameters, context)

    def _proxy(
        self,
        route: Route,
        integration: Mapping[str, Any],
        request: ApiRequest,
        path_parameters: Mapping[str, str],
        context: dict[str, Any],
    ) -> ApiResponse:
        """A Lambda proxy route: the request as API Gateway's proxy event (format 1.0), the
        function's answer as the response (its status code, headers and body)."""
        match = _LAMBDA_URI.fullmatch(str(integration.get("uri", "")))
        if match is None or self._functions is None:
            raise ApiDefinitionError(
                f"{route.method} {route.resource_path}: no local function for {integration.get('uri')}"
            )
        event = {
            "resource": route.resource_path,
            "path": request.path,
            "httpMethod": request.method,
            "headers": dict(request.headers),
            "queryStringParameters": dict(request.query) or None,
            "pathParameters": dict(path_parameters) or None,
            "stageVariables": None,
            "requestContext": {**context, "resourcePath": route.resource_path},
            "body": request.body or None,
            "isBase64Encoded": False,
        }
        answer = self._functions(match.group(1), event)
        headers = {str(k): str(v) for k, v in (answer.get("headers") or {}).items()}
        return ApiResponse(int(answer.get("statusCode", 502)), headers, str(answer.get("body") or ""))

    def _integration_uri(
        self,
        integration: Mapping[str, Any],
        request: ApiRequest,
        context: Mapping[str, Any],
        overrides: Mapping[str, str],
    ) -> str:
        """The integration's uri with each `{name}` its integration request path parameter:
        `integration.request.path.<name>` mapped, then `$context.requestOverride.path.<name>`."""
        values: dict[str, str] = {}
        for target, source in (integration.get("requestParameters") or {}).items():
            if target.startswith("integration.request.path."):
                value = self._parameter_value(str(source), request, context, {})
                if value is not None:
                    values[target.removeprefix("integration.request.path.")] = value
        values.update(overrides)

        def value_of(match: re.Match[str]) -> str:
            name = match.group(1)
            if name not in values:
                raise ApiDefinitionError(f"integration uri {integration['uri']!r}: no value for {{{name}}}")
            return values[name]

        return re.sub(r"\{([A-Za-z0-9_.-]+)\}", value_of, str(integration["uri"]))

    def _integration_headers(
        self, integration: Mapping[str, Any], request: ApiRequest, context: Mapping[str, Any]
    ) -> dict[str, str]:
        headers: dict[str, str] = {}
        for target, source in (integration.get("requestParameters") or {}).items():
            if not target.startswith("integration.request.header."):
                continue
            value = self._parameter_value(str(source), request, context, {})
            if value is not None:
                headers[target.removeprefix("integration.request.header.")] = value
        return headers

    @staticmethod
    def _parameter_value(
        source: str,
        request: ApiRequest,
        context: Mapping[str, Any],
        integration_headers: Mapping[str, str],
    ) -> str | None:
        if len(source) >= 2 and source[0] == source[-1] == "'":
            return source[1:-1]
        if source.startswith("method.request.header."):
            return request.header(source.removeprefix("method.request.header."))
        if source.startswith("integration.response.header."):
            wanted = source.removeprefix("integration.response.header.").lower()
            return next((v for k, v in integration_headers.items() if k.lower() == wanted), None)
        if source.startswith("context."):
            value: Any = context
            for part in source.removeprefix("context.").split("."):
                value = value.get(part) if isinstance(value, dict) else None
            return None if value is None else str(value)
        raise ApiDefinitionError(f"parameter mapping {source!r} is not supported locally")

    def _respond(
        self,
        integration: Mapping[str, Any],
        result: IntegrationResult,
        request: ApiRequest,
        path_parameters: Mapping[str, str],
        context: dict[str, Any],
    ) -> ApiResponse:
        responses = integration.get("responses") or {}
        selected = next(
            (
                response
                for pattern, response in responses.items()
                if pattern != "default" and re.fullmatch(pattern, str(result.status))
            ),
            responses.get("default"),
        )
        if selected is None:
            return self._gateway_response(
                "DEFAULT_5XX", 500, "Internal server error", context, request, path_parameters
            )
        status = int(selected.get("statusCode", 200))
        headers = {"Content-Type": JSON}
        for target, source in (selected.get("responseParameters") or {}).items():
            if target.startswith("method.response.header."):
                value = self._parameter_value(str(source), request, context, result.headers)
                if value is not None:
                    headers[target.removeprefix("method.response.header.")] = value
        template = (selected.get("responseTemplates") or {}).get(JSON)
        if template is None:
            return ApiResponse(status, headers, result.body)
        rendered = render(
            template, input_variable=self._input(result.body, request, path_parameters), context=context
        )
        headers.update(rendered.header_overrides)
        return ApiResponse(rendered.status_override or status, headers, rendered.body)

    def _gateway_response(
        self,
        response_type: str,
        status: int,
        message: str,
        context: dict[str, Any],
        request: ApiRequest,
        path_parameters: Mapping[str, str],
    ) -> ApiResponse:
        """API Gateway's own answer (a refusal before or around the integration), customised by the
        definition's x-amazon-apigateway-gateway-responses (falling back to DEFAULT_4XX/5XX)."""
        context["error"].update(
            {"message": message, "messageString": json.dumps(message), "responseType": response_type}
        )
        fallback = "DEFAULT_4XX" if status < 500 else "DEFAULT_5XX"
        custom = (
            self.api.gateway_responses.get(response_type) or self.api.gateway_responses.get(fallback) or {}
        )
        headers = {"Content-Type": JSON}
        for target, source in (custom.get("responseParameters") or {}).items():
            if target.startswith("gatewayresponse.header."):
                value = self._parameter_value(str(source), request, context, {})
                if value is not None:
                    headers[target.removeprefix("gatewayresponse.header.")] = value
        template = (custom.get("responseTemplates") or {}).get(
            JSON, '{"message":$context.error.messageString}'
        )
        rendered = render(template, input_variable=self._input("", request, path_parameters), context=context)
        return ApiResponse(int(custom.get("statusCode", status)), headers, rendered.body)


# ---------------------------------------------------------------------- the HTTP server


class LocalApiServer:
    """Serves the gateway on 127.0.0.1 under /<stage>/ (as API Gateway's stage URL) and, when given,
    a folder of static files under /checkout/ (the example checkout page). A background thread."""

    def __init__(self, gateway: LocalApiGateway, *, port: int = 0, static_dir: Path | None = None) -> None:
        self.gateway = gateway
        self._static_dir = static_dir
        self._server = ThreadingHTTPServer(("127.0.0.1", port), self._handler_class())
        self._server.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def serves_static(self) -> bool:
        return self._static_dir is not None

    @property
    def api_url(self) -> str:
        return f"{self.base_url}/{self.gateway.api.stage}"

    def start(self) -> LocalApiServer:
        self._thread = threading.Thread(target=self._server.serve_forever, name="local-api", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # TCP_NODELAY: the body, written after the headers, does not wait for their ACK
            # (Nagle's algorithm with the client's delayed ACK: about 40 ms per answer).
            disable_nagle_algorithm = True

            def log_message(self, format: str, *args: Any) -> None:
                pass  # the engines' logs are the record; a line per request would flood the terminal

            def _serve(self) -> None:
                parts = urlsplit(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length).decode("utf-8", "replace") if length else ""
                stage_prefix = f"/{server.gateway.api.stage}"
                if parts.path.startswith(stage_prefix + "/"):
                    response = server.gateway.handle(
                        ApiRequest(
                            method=self.command,
                            path=parts.path[len(stage_prefix) :],
                            headers=dict(self.headers.items()),
                            body=body,
                            query=dict(parse_qsl(parts.query)),
                            source_ip=self.client_address[0],
                        )
                    )
                    self._send(response.status, response.headers, response.body.encode())
                    return
                if parts.path in ("/", "/checkout") and server.serves_static:
                    self._send(302, {"Location": "/checkout/"}, b"")
                    return
                if parts.path == "/checkout/config.js" and server.serves_static:
                    config = f"window.SEATS_API_URL = {json.dumps(server.api_url)};\n"
                    self._send(200, {"Content-Type": "text/javascript; charset=utf-8"}, config.encode())
                    return
                static = server._static_file(parts.path)
                if static is not None and self.command == "GET":
                    content_type = {
                        ".html": "text/html",
                        ".js": "text/javascript",
                        ".css": "text/css",
                    }.get(static.suffix, "application/octet-stream")
                    self._send(200, {"Content-Type": content_type + "; charset=utf-8"}, static.read_bytes())
                    return
                self._send(404, {"Content-Type": JSON}, b'{"message": "Not Found"}')

            def _send(self, status: int, headers: Mapping[str, str], payload: bytes) -> None:
                self.send_response(
                    status, HTTPStatus(status).phrase if status in HTTPStatus._value2member_map_ else ""
                )
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(payload)

            do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = do_HEAD = _serve

        return Handler

    def _static_file(self, path: str) -> Path | None:
        if self._static_dir is None:
            return None
        if not path.startswith("/checkout/"):
            return None
        relative = path.removeprefix("/checkout/") or "index.html"
        candidate = (self._static_dir / relative).resolve()
        if self._static_dir.resolve() not in candidate.parents or not candidate.is_file():
            return None
        return candidate
