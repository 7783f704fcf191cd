"""Lambda entry point of the gate's routes of the checkout API (docs/guides/checkin.md), behind API
Gateway's Lambda proxy integration:

- `GET  /reservations/{id}/tickets`: the buyer's tickets, each live one with its secret;
- `GET  /transfers/{id}`: the ticket a transfer passed on, with the receiver's secret;
- `POST /transfers`: pass a ticket on (or re-issue its secret to its holder);
- `POST /checkins`: one scan at a gate;
- `POST /checkins/uploads`: a scanner's offline scans.

Thin: the route's body is parsed, one function of `logic.checkin` or `logic.transfer_tickets`
decides, the answer is mapped to a status code. A transient fault answers 503 with Retry-After:
the scanner or page sends the same request again (same nonce, same transfer id) and gets the
answer it would have got. The five routes are dispatched here rather than by Powertools' event
handler, whose import costs about 0.1 s of each cold start here (`python -X importtime`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from seat_inventory.gate_models import GATE_ID, TRANSFER_ID, GateResult, ScanAnswer, TransferAnswer
from seat_inventory.gate_wiring import build_gate
from seat_inventory.logic.checkin import Gate, ScanRequest, check_in, parse_scan, upload_scans
from seat_inventory.logic.transfer_tickets import (
    parse_transfer,
    reservation_tickets,
    transfer_ticket,
    transfer_view,
)
from seat_inventory.models import RetryableError
from seat_inventory.observability import logger, metrics, tracer
from seat_inventory.settings import Settings

_gate: tuple[Settings, Gate] | None = None
# The answers a scanner must not take as a ticket's fault: a malformed request.
_BAD_REQUEST = frozenset({GateResult.INVALID})


def reset_container() -> None:
    """Forgets the cached clients, as a new container would (tests and the local runner use it)."""
    global _gate
    _gate = None


def _the_gate() -> tuple[Settings, Gate]:
    """Settings read from the environment once per container and the gate built from them
    (`build_gate` is looked up now, so tests can patch this module's name)."""
    global _gate
    if _gate is None:
        settings = Settings.from_env(os.environ)
        metrics.namespace = settings.metrics_namespace
        metrics.service = settings.service_name
        _gate = (settings, build_gate(settings))
    return _gate


def _scan_document(answer: ScanAnswer) -> dict[str, Any]:
    first = answer.first
    return {
        "result": answer.result.value,
        "reason": answer.reason,
        "nonce": answer.nonce,
        "ticket": answer.ticket,
        "seat_class": answer.seat_class,
        "seat": answer.seat,
        "first_scan": None
        if first is None
        else {"at": first.at_ms, "gate": first.gate, "offline": first.offline, "nonce": first.nonce},
        "conflicts": [
            {
                "reason": c.reason,
                "first": {"at": c.first.at_ms, "gate": c.first.gate, "nonce": c.first.nonce},
                "second": None
                if c.second is None
                else {"at": c.second.at_ms, "gate": c.second.gate, "nonce": c.second.nonce},
            }
            for c in answer.conflicts
        ],
        "replay": answer.replay,
    }


def _transfer_document(answer: TransferAnswer) -> dict[str, Any]:
    return {
        "result": answer.result.value,
        "reason": answer.reason,
        "transfer_id": answer.transfer_id,
        "ticket": answer.ticket,
        "secret": answer.secret,
        "generation": answer.generation,
        "duplicate": answer.duplicate,
    }


def _body(event: Mapping[str, Any]) -> dict[str, Any] | None:
    try:
        body = json.loads(event.get("body") or "")
    except ValueError:
        return None
    return body if isinstance(body, dict) else None


def _count(result: GateResult) -> None:
    """One business metric per answer: Gate<Result> (GateAdmitted, GateAlreadyCheckedIn, ...)."""
    metrics.add_metric(name="Gate" + result.value.title().replace("_", ""), unit=MetricUnit.Count, value=1)


def _post_checkin(gate: Gate, event: Mapping[str, Any]) -> tuple[int, Any]:
    body = _body(event)
    if body is None:
        return 400, {"message": "the body must be a JSON object"}
    request = parse_scan(body)
    answer = request if isinstance(request, ScanAnswer) else check_in(gate, request)
    _count(answer.result)
    return (400 if answer.result in _BAD_REQUEST else 200), _scan_document(answer)


def _post_upload(gate: Gate, event: Mapping[str, Any]) -> tuple[int, Any]:
    body = _body(event)
    scans = body.get("scans") if body is not None else None
    if not isinstance(scans, list):
        return 400, {
            "message": 'the body must be {"scans": [...]}: each scan as POST /checkins takes it,'
            " with scanned_at"
        }
    answers = upload_scans(gate, scans)
    for answer in answers:
        _count(answer.result)
    return 200, {"answers": [_scan_document(a) for a in answers]}


def _post_transfer(gate: Gate, event: Mapping[str, Any]) -> tuple[int, Any]:
    body = _body(event)
    if body is None:
        return 400, {"message": "the body must be a JSON object"}
    request = parse_transfer(body)
    answer = request if isinstance(request, TransferAnswer) else transfer_ticket(gate, request)
    _count(answer.result)
    status = {GateResult.TRANSFERRED: 200, GateResult.INVALID: 400}.get(answer.result, 409)
    return status, _transfer_document(answer)


def _get_tickets(gate: Gate, event: Mapping[str, Any]) -> tuple[int, Any]:
    reservation_id = (event.get("pathParameters") or {}).get("id", "")
    if not TRANSFER_ID.fullmatch(reservation_id):
        return 400, {"message": "the reservation id must be 1 to 128 characters A-Z a-z 0-9 . _ : @ -"}
    view = reservation_tickets(gate, reservation_id)
    if view is None:
        return 404, {"message": f"no reservation {reservation_id} is recorded"}
    return 200, view


def _get_transfer(gate: Gate, event: Mapping[str, Any]) -> tuple[int, Any]:
    transfer_id = (event.get("pathParameters") or {}).get("id", "")
    if not TRANSFER_ID.fullmatch(transfer_id):
        return 400, {"message": "the transfer id must be 1 to 128 characters A-Z a-z 0-9 . _ : @ -"}
    view = transfer_view(gate, transfer_id)
    if view is None:
        return 404, {"message": f"no transfer {transfer_id} is recorded"}
    return 200, view


ROUTES: dict[tuple[str, str], Callable[[Gate, Mapping[str, Any]], tuple[int, Any]]] = {
    ("POST", "/checkins"): _post_checkin,
    ("POST", "/checkins/uploads"): _post_upload,
    ("POST", "/transfers"): _post_transfer,
    ("GET", "/reservations/{id}/tickets"): _get_tickets,
    ("GET", "/transfers/{id}"): _get_transfer,
}


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler(capture_response=False)
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    settings, gate = _the_gate()
    route = ROUTES.get((str(event.get("httpMethod", "")).upper(), str(event.get("resource", ""))))
    headers = {"Content-Type": "application/json", "Access-Control-Allow-Origin": settings.cors_origin}
    if route is None:
        status, document = 404, {"message": "no such route"}
        metrics.add_metric(name="GateUnknownRoute", unit=MetricUnit.Count, value=1)
    else:
        try:
            status, document = route(gate, event)
            metrics.add_metric(name="GateRequests", unit=MetricUnit.Count, value=1)
        except RetryableError as exc:
            logger.warning("gate request failed transiently", extra={"error": str(exc)})
            headers["Retry-After"] = "1"
            status, document = 503, {"message": "try again with the same request (same nonce or transfer id)"}
    return {"statusCode": status, "headers": headers, "body": json.dumps(document)}


__all__ = ["GATE_ID", "ROUTES", "ScanRequest", "lambda_handler", "reset_container"]
