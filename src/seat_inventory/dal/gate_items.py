"""The gate's items (docs/guides/checkin.md): keys, attribute names and conversions to the gate's models.

| item                     | pk                                        | sk            |
|--------------------------|-------------------------------------------|---------------|
| check-in list            | `CHECKINLIST#<event_id>`                  | `LIST#<name>` |
| a ticket on a list       | `CHECKIN#<event_id>#<series>#<serial>`    | `LIST#<name>` |
| transfer                 | `TRANSFER#<transfer_id>`                  | `TRANSFER`    |

- check-in list: `allow_reentry` (BOOL);
- a ticket's check-in item on a list (one per ticket and list: no two tickets share an item, so
  scans of different tickets never meet): `inside` (BOOL), `entered` and `last_in` (the first
  and the last entry, as a scan map), `version` (N, moved by every write), one attribute
  `scan#<nonce>` per scan (its answer, replayed to the same nonce), `conflicts` (L);
- a scan map: `n` nonce, `g` gate, `t` when (epoch ms), `d` `in`/`out`, `o` offline (BOOL); a
  scan's answer adds `r` result, `why` reason, `gen` the secret's generation, `m` whether it let
  someone in or out, `f` the entry an ALREADY_CHECKED_IN named; a conflict: `a`, `b` (scans,
  `b` absent for a revoked secret let in) and `why`;
- on a reservation record, per ticket passed on: `holder#<serial>` (M: `c` customer, `g`
  generation, `n` counted on the holder's per-customer counter, `t` transfer id, `at` epoch ms,
  `r` generation -> when its secret was revoked), `tickets_passed_on` (N: tickets others hold)
  and `tickets_transferred` (N: transfers made, for the export's Scan);
- transfer: `event_id`, `ticket_series`, `ticket_serial`, `reservation_id`, `from_customer`,
  `to_customer`, `generation`, `at` (epoch ms), `previous` (the transfer before, if any).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from seat_inventory.dal.items import number
from seat_inventory.gate_models import (
    CheckinState,
    Conflict,
    Direction,
    GateResult,
    Scan,
    ScanRecord,
    TicketHolder,
    TicketRef,
    TransferRecord,
)

CHECKIN_LIST_PREFIX = "CHECKINLIST#"
CHECKIN_PREFIX = "CHECKIN#"
LIST_SK_PREFIX = "LIST#"
TRANSFER_PREFIX = "TRANSFER#"
TRANSFER_SK = "TRANSFER"
SCAN_PREFIX = "scan#"
HOLDER_PREFIX = "holder#"


def checkin_list_key(event_id: str, name: str) -> dict[str, Any]:
    return {"pk": {"S": f"{CHECKIN_LIST_PREFIX}{event_id}"}, "sk": {"S": f"{LIST_SK_PREFIX}{name}"}}


def checkin_event_prefix(event_id: str) -> str:
    return f"{CHECKIN_PREFIX}{event_id}#"


def checkin_key(ticket: TicketRef, list_name: str) -> dict[str, Any]:
    pk = f"{checkin_event_prefix(ticket.event_id)}{ticket.series}#{ticket.serial}"
    return {"pk": {"S": pk}, "sk": {"S": f"{LIST_SK_PREFIX}{list_name}"}}


def transfer_key(transfer_id: str) -> dict[str, Any]:
    return {"pk": {"S": f"{TRANSFER_PREFIX}{transfer_id}"}, "sk": {"S": TRANSFER_SK}}


def scan_attribute(nonce: str) -> str:
    return f"{SCAN_PREFIX}{nonce}"


def holder_attribute(serial: int) -> str:
    return f"{HOLDER_PREFIX}{serial}"


def scan_value(scan: Scan) -> dict[str, Any]:
    value: dict[str, Any] = {
        "n": {"S": scan.nonce},
        "g": {"S": scan.gate},
        "t": number(scan.at_ms),
        "d": {"S": scan.direction.value},
    }
    if scan.offline:
        value["o"] = {"BOOL": True}
    return {"M": value}


def scan_from_value(value: Mapping[str, Any]) -> Scan:
    m = value["M"]
    return Scan(
        nonce=m["n"]["S"],
        gate=m["g"]["S"],
        at_ms=int(m["t"]["N"]),
        direction=Direction(m["d"]["S"]),
        offline=bool(m.get("o", {}).get("BOOL", False)),
    )


def scan_record_value(record: ScanRecord) -> dict[str, Any]:
    value = scan_value(record.scan)["M"]
    value.update(
        {
            "r": {"S": record.result.value},
            "why": {"S": record.reason},
            "gen": number(record.generation),
            "m": {"BOOL": record.moved},
        }
    )
    if record.first is not None:
        value["f"] = scan_value(record.first)
    return {"M": value}


def scan_record_from_value(value: Mapping[str, Any]) -> ScanRecord:
    m = value["M"]
    return ScanRecord(
        scan=scan_from_value(value),
        result=GateResult(m["r"]["S"]),
        reason=m["why"]["S"],
        generation=int(m["gen"]["N"]),
        moved=bool(m["m"]["BOOL"]),
        first=scan_from_value(m["f"]) if "f" in m else None,
    )


def conflict_value(conflict: Conflict) -> dict[str, Any]:
    value: dict[str, Any] = {"a": scan_value(conflict.first), "why": {"S": conflict.reason}}
    if conflict.second is not None:
        value["b"] = scan_value(conflict.second)
    return {"M": value}


def conflict_from_value(value: Mapping[str, Any], ticket: TicketRef, list_name: str) -> Conflict:
    m = value["M"]
    return Conflict(
        ticket=ticket,
        list_name=list_name,
        first=scan_from_value(m["a"]),
        second=scan_from_value(m["b"]) if "b" in m else None,
        reason=m["why"]["S"],
    )


def ticket_of_checkin(item: Mapping[str, Any]) -> tuple[TicketRef, str]:
    """The ticket and list a check-in item is of (from its keys)."""
    _, rest = item["pk"]["S"].split("#", 1)
    event_id, series, serial = rest.rsplit("#", 2)
    return TicketRef(event_id, int(series), int(serial)), item["sk"]["S"].removeprefix(LIST_SK_PREFIX)


def checkin_from_item(item: Mapping[str, Any] | None) -> CheckinState:
    """A check-in item as the gate's model (an empty state for no item)."""
    if not item:
        return CheckinState()
    ticket, list_name = ticket_of_checkin(item)
    scans = {
        name.removeprefix(SCAN_PREFIX): scan_record_from_value(value)
        for name, value in item.items()
        if name.startswith(SCAN_PREFIX)
    }
    return CheckinState(
        inside=bool(item.get("inside", {}).get("BOOL", False)),
        entered=scan_from_value(item["entered"]) if "entered" in item else None,
        last_in=scan_from_value(item["last_in"]) if "last_in" in item else None,
        scans=scans,
        conflicts=tuple(
            conflict_from_value(v, ticket, list_name) for v in item.get("conflicts", {}).get("L", [])
        ),
        version=int(item["version"]["N"]) if "version" in item else 0,
    )


def holder_value(holder: TicketHolder) -> dict[str, Any]:
    assert holder.customer_id is not None
    value: dict[str, Any] = {
        "c": {"S": holder.customer_id},
        "g": number(holder.generation),
        "n": {"BOOL": holder.counted},
        "r": {"M": {str(gen): number(at) for gen, at in sorted(holder.revoked_at.items())}},
    }
    if holder.transfer_id is not None:
        value["t"] = {"S": holder.transfer_id}
    if holder.at_ms is not None:
        value["at"] = number(holder.at_ms)
    return {"M": value}


def holder_from_item(
    item: Mapping[str, Any], serial: int, *, buyer: str | None, buyer_counted: bool
) -> TicketHolder:
    """Who holds ticket `serial` of a reservation record: its `holder#<serial>`, or the buyer."""
    value = item.get(holder_attribute(serial))
    if value is None:
        return TicketHolder(buyer, 0, buyer_counted)
    m = value["M"]
    return TicketHolder(
        customer_id=m["c"]["S"],
        generation=int(m["g"]["N"]),
        counted=bool(m["n"]["BOOL"]),
        transfer_id=m["t"]["S"] if "t" in m else None,
        at_ms=int(m["at"]["N"]) if "at" in m else None,
        revoked_at={int(gen): int(at["N"]) for gen, at in m.get("r", {}).get("M", {}).items()},
    )


def transfer_item(record: TransferRecord) -> dict[str, Any]:
    item: dict[str, Any] = {
        **transfer_key(record.transfer_id),
        "entity": {"S": "transfer"},
        "transfer_id": {"S": record.transfer_id},
        "event_id": {"S": record.ticket.event_id},
        "ticket_series": number(record.ticket.series),
        "ticket_serial": number(record.ticket.serial),
        "reservation_id": {"S": record.reservation_id},
        "to_customer": {"S": record.to_customer},
        "generation": number(record.generation),
        "at": number(record.at_ms),
    }
    if record.from_customer is not None:
        item["from_customer"] = {"S": record.from_customer}
    if record.previous is not None:
        item["previous"] = {"S": record.previous}
    return item


def transfer_from_item(item: Mapping[str, Any]) -> TransferRecord:
    return TransferRecord(
        transfer_id=item["transfer_id"]["S"],
        ticket=TicketRef(
            item["event_id"]["S"], int(item["ticket_series"]["N"]), int(item["ticket_serial"]["N"])
        ),
        reservation_id=item["reservation_id"]["S"],
        from_customer=item["from_customer"]["S"] if "from_customer" in item else None,
        to_customer=item["to_customer"]["S"],
        generation=int(item["generation"]["N"]),
        at_ms=int(item["at"]["N"]),
        previous=item["previous"]["S"] if "previous" in item else None,
    )
