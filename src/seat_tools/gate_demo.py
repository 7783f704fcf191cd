"""A gate on the local stack (`seats checkin demo`, docs/guides/checkin.md), end to end through the
checkout API: a sale (POST /reservations, the function, the issuer), the buyers' tickets (GET
/reservations/{id}/tickets), doors opening (every ticket scanned at one of the gates at once, some
again at another gate, a scanner's replay), a transfer (the old secret refused, the new one let
in), and two offline scanners that let the same ticket in (their uploads: one conflict naming both
scans, then duplicates). The summary's checks must all hold.
"""

from __future__ import annotations

import random
import time
import uuid
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import requests

from seat_inventory.gate_models import CheckinList
from seat_inventory.models import SeatKey
from seat_tools.gate_scanner import OfflineScanner
from seat_tools.local.runner import LocalRunner, runner_config
from seat_tools.local.stack import LocalStack
from seat_tools.operator_commands import OperatorTable

TICKETS_WAIT_S = 120.0


@dataclass(frozen=True, slots=True)
class GateDemoOptions:
    reservations: int = 40
    gates: int = 10
    rescans: int = 10
    seed: int | None = None


def run_gate_demo(
    options: GateDemoOptions, stack: LocalStack, *, progress: Callable[[str], None] | None = None
) -> dict[str, Any]:
    """Runs the demo on a started stack (a fresh event, so a stack can host several); the summary."""
    say = progress or (lambda message: None)
    rng = random.Random(options.seed)
    api = stack.api_url
    if api is None:
        raise RuntimeError("the local stack serves no checkout API")
    http = requests.Session()
    event_id = f"gate-{uuid.uuid4().hex[:8]}"
    table = OperatorTable(stack.client("dynamodb"), stack.table_name)
    table.create_seat_class(SeatKey(event_id, "GA"), options.reservations * 4)
    table.set_max_per_customer(SeatKey(event_id, "GA"), 4)
    from seat_inventory.dal.gate_table import GateTable

    gates = GateTable(stack.client("dynamodb"), stack.table_name)
    gates.write_checkin_list(CheckinList(event_id, "main"))
    gates.write_checkin_list(CheckinList(event_id, "yard", allow_reentry=True))
    sales = {f"{event_id}-r{n}": rng.randint(1, 4) for n in range(options.reservations)}
    say(f"event {event_id}: {len(sales)} reservations through POST /reservations ...")
    with LocalRunner(runner_config(stack, workers=2, issuer=True)):
        for rid, quantity in sales.items():
            body: dict[str, Any] = {"event_id": event_id, "quantity": quantity, "customer_id": f"c-{rid}"}
            answer = http.post(f"{api}/reservations", json=body, headers={"Idempotency-Key": rid}, timeout=30)
            answer.raise_for_status()
        say("waiting for every sale to be numbered, then reading each buyer's tickets ...")
        tickets = _wait_for_tickets(http, api, sales)
    secrets = [t["secret"] for rid in sales for t in tickets[rid]]
    say(f"{len(secrets)} tickets; doors open: each scanned once at one of {options.gates} gates at once ...")
    opened = time.monotonic()
    results = _scan_all(http, api, event_id, secrets, options.gates)
    doors_s = time.monotonic() - opened
    again = rng.sample(secrets, min(options.rescans, len(secrets)))
    second = [_scan(http, api, event_id, s, gate="late", nonce=uuid.uuid4().hex) for s in again]
    replay_nonce = uuid.uuid4().hex
    replay = [_scan(http, api, event_id, secrets[0], gate="g-yard", nonce=replay_nonce, checkin_list="yard")]
    replay.append(
        _scan(http, api, event_id, secrets[0], gate="g-yard", nonce=replay_nonce, checkin_list="yard")
    )

    say("a transfer: a buyer passes on a ticket not yet used on the yard list ...")
    first_rid = list(sales)[1]
    old = tickets[first_rid][0]["secret"]
    transfer = http.post(
        f"{api}/transfers",
        json={
            "transfer_id": f"{event_id}-t1",
            "secret": old,
            "from_customer_id": f"c-{first_rid}",
            "to_customer_id": "friend",
        },
        timeout=30,
    ).json()
    old_on_yard = _scan(http, api, event_id, old, gate="g-yard", nonce=uuid.uuid4().hex, checkin_list="yard")
    new_on_yard = _scan(
        http,
        api,
        event_id,
        transfer.get("secret") or "",
        gate="g-yard",
        nonce=uuid.uuid4().hex,
        checkin_list="yard",
    )

    say("two offline scanners let the same ticket in on the yard list; their uploads ...")
    export = _export(stack, event_id)
    victim = tickets[list(sales)[-1]][0]["secret"]
    now_ms = int(time.time() * 1000)
    east, west = (OfflineScanner(export, gate, "yard") for gate in ("east", "west"))
    east.scan(victim, at_ms=now_ms)
    west.scan(victim, at_ms=now_ms + 2000)
    first_upload = http.post(
        f"{api}/checkins/uploads", json={"scans": east.journal + west.journal}, timeout=30
    ).json()
    second_upload = http.post(
        f"{api}/checkins/uploads", json={"scans": east.journal + west.journal}, timeout=30
    ).json()
    uploads = [a["result"] for a in first_upload["answers"]]
    conflict = first_upload["answers"][-1]["conflicts"]
    counted = Counter(r["result"] for r in results)
    summary: dict[str, Any] = {
        "event_id": event_id,
        "tickets": len(secrets),
        "scanned_at_once": len(results),
        "admitted": counted["ADMITTED"],
        "doors_open_s": round(doors_s, 2),
        "scans_per_s_local": round(len(results) / doors_s, 1) if doors_s else None,
        "second_scans_refused": sum(r["result"] == "ALREADY_CHECKED_IN" for r in second),
        "replay_same_answer": replay[0]["result"] == replay[1]["result"] == "ADMITTED"
        and replay[1]["replay"],
        "transfer": transfer.get("result"),
        "old_secret_after_transfer": old_on_yard["result"],
        "new_secret_after_transfer": new_on_yard["result"],
        "offline_uploads": uploads,
        "offline_conflict_gates": [conflict[0]["first"]["gate"], conflict[0]["second"]["gate"]]
        if conflict
        else [],
        "reuploads": [a["result"] for a in second_upload["answers"]],
    }
    summary["checks"] = {
        "every ticket admitted once": summary["admitted"] == len(secrets) == len(results),
        "second scans refused": summary["second_scans_refused"] == len(again),
        "a replayed nonce gets its first answer": bool(summary["replay_same_answer"]),
        "the old secret is revoked, the new one admits": (
            transfer.get("result"),
            old_on_yard["result"],
            new_on_yard["result"],
        )
        == ("TRANSFERRED", "REVOKED", "ADMITTED"),
        "the offline double entry is one conflict with both scans": uploads == ["ACCEPTED", "CONFLICT"]
        and summary["offline_conflict_gates"] == ["east", "west"],
        "uploads are taken once": summary["reuploads"] == ["DUPLICATE", "DUPLICATE"],
    }
    return summary


def gate_checks_passed(summary: dict[str, Any]) -> bool:
    return all(summary["checks"].values())


def _wait_for_tickets(
    http: requests.Session, api: str, sales: dict[str, int]
) -> dict[str, list[dict[str, Any]]]:
    deadline = time.monotonic() + TICKETS_WAIT_S
    found: dict[str, list[dict[str, Any]]] = {}
    while len(found) < len(sales):
        for rid, quantity in sales.items():
            if rid in found:
                continue
            answer = http.get(f"{api}/reservations/{rid}/tickets", timeout=30)
            if answer.status_code == 200 and len(answer.json()["tickets"]) == quantity:
                found[rid] = answer.json()["tickets"]
        if len(found) < len(sales):
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"{len(sales) - len(found)} sale(s) not numbered after {TICKETS_WAIT_S:.0f} s"
                )
            time.sleep(1.0)
    return found


def _scan(
    http: requests.Session,
    api: str,
    event_id: str,
    secret: str,
    *,
    gate: str,
    nonce: str,
    checkin_list: str = "main",
) -> dict[str, Any]:
    body = {"event_id": event_id, "list": checkin_list, "gate": gate, "nonce": nonce, "secret": secret}
    for _ in range(5):
        answer = http.post(f"{api}/checkins", json=body, timeout=60)
        if answer.status_code != 503:
            return dict(answer.json())
        time.sleep(0.2)  # a transient fault: the same scan again (same nonce)
    raise RuntimeError(f"scan {nonce} kept failing transiently")


def _scan_all(
    http: requests.Session, api: str, event_id: str, secrets: list[str], gates: int
) -> list[dict[str, Any]]:
    def one(item: tuple[int, str]) -> dict[str, Any]:
        index, secret = item
        return _scan(
            requests.Session(), api, event_id, secret, gate=f"g{index % gates}", nonce=uuid.uuid4().hex
        )

    with ThreadPoolExecutor(gates) as pool:
        return list(pool.map(one, enumerate(secrets)))


def _export(stack: LocalStack, event_id: str) -> dict[str, Any]:
    from seat_inventory.dal.gate_table import GateTable
    from seat_inventory.logic.checkin import Gate, export_for_scanners
    from seat_inventory.logic.ticket_credentials import parse_key_ring
    from seat_inventory.publishing.sns_publisher import SnsOutcomePublisher
    from seat_inventory.wiring import SystemClock

    ring = parse_key_ring(
        stack.client("ssm").get_parameter(Name=stack.ticket_key_parameter, WithDecryption=True)["Parameter"][
            "Value"
        ]
    )
    table = GateTable(stack.client("dynamodb"), stack.table_name)
    gate = Gate(table, lambda: ring, SystemClock(), SnsOutcomePublisher(stack.client("sns"), stack.topic_arn))
    return export_for_scanners(gate, event_id, table.read_checkin_lists(event_id))
