"""Fault injection at the ticket issuer's AWS call sites, on the on-sale of test_fault_injection.py.

Each cell plays the theatre's part of that on-sale (sales, holds confirmed, cancelled and run out,
with the sweeper run until it settles), then runs IssueTicketsFunction once a "minute" until a run
finds nothing left to do, with one fault at one of its call sites: transient (the first few calls
fail, then none) or permanent (every call). The issuer has its own boto3 session, so only its
calls are hit. Afterwards the event's ticket numbers are audited (`seats tickets audit`: 1..N once
each, every sale numbered, the ledger in agreement) and every numbered reservation must have been
announced TICKETED with the numbers its record holds. A permanent fault may leave sales waiting,
never a gap, a duplicate or a wrong announcement. docs/explanation/reliability.md has the issuer's fault matrix.

Not in the grid: the issuer's BatchGetItem of the ledger's outbox, which only runs when an earlier
run left batches unannounced (the SNS cells exercise it without a fault on it).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import boto3
import pytest

from seat_inventory.handlers import issue_tickets as issuer_module
from seat_inventory.models import TicketSeries
from seat_tools.operator_commands import OperatorTable
from seat_tools.ticket_reports import audit_event
from tests.depth import is_deep
from tests.integration.conftest import REGION, LambdaContext, adapters_factory, load_event
from tests.integration.test_fault_injection import (
    DYNAMODB_ERRORS,
    FAULTS,
    PERMANENT,
    SNS_ERRORS,
    CallSite,
    Fault,
    Injection,
    OnSale,
    on_sale,  # noqa: F401 - the fixture, used by name
    queues,  # noqa: F401 - the fixture, used by name
    sweep_until_settled,
)

EVENT = "theatre"
MAX_ISSUES = 8  # scheduled runs before the test gives up waiting for the issuer to settle
ALARM_RUNS = 5

ISSUER_SITES = [
    CallSite("issuer", "dynamodb.Query", *DYNAMODB_ERRORS, what="index and outbox"),
    CallSite("issuer", "dynamodb.GetItem", *DYNAMODB_ERRORS, what="numbering format and counter"),
    CallSite("issuer", "dynamodb.TransactWriteItems", *DYNAMODB_ERRORS, transactional=True, what="numbering"),
    CallSite("issuer", "sns.PublishBatch", *SNS_ERRORS),
    CallSite("issuer", "dynamodb.UpdateItem", *DYNAMODB_ERRORS, what="outbox"),
]
# Bounded (docs/contributing/testing.md): CI runs two faults at each site, the one that stops the call and the
# one that loses its reply (16 tests, 28 s here); `make test-deep` every fault (28 tests, 43 s;
# about 100 s with the machine loaded).
CI_FAULTS = ("throttling", "reply lost after success")
CELLS = [
    pytest.param(site, fault, id=f"{site.name}-{fault.name}", marks=pytest.mark.bounded)
    for site in ISSUER_SITES
    for fault in FAULTS
    if (site.transactional or not fault.transactional_only) and (is_deep() or fault.name in CI_FAULTS)
]


@dataclass
class Issuing:
    on_sale: OnSale
    session: boto3.session.Session
    results: list[dict[str, Any]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    ticketed: list[dict[str, Any]] = field(default_factory=list)

    @property
    def table(self) -> OperatorTable:
        return OperatorTable(self.on_sale.stack.dynamodb, self.on_sale.stack.table_name)

    def run_once(self) -> dict[str, Any] | None:
        """One scheduled run; None when it raised (a failed invocation, the alarm's metric)."""
        try:
            result = issuer_module.lambda_handler(load_event("issue_schedule.json"), LambdaContext())
        except Exception as exc:  # noqa: BLE001 - Lambda counts any exception as a failed invocation
            self.errors.append(type(exc).__name__)
            result = None
        else:
            self.results.append(result)
        self.ticketed += [d for d in self.on_sale.stack.outcomes() if d["outcome"] == "TICKETED"]
        return result

    def until_settled(self) -> None:
        for _ in range(MAX_ISSUES):
            result = self.run_once()
            idle = result is not None and not (
                result["numbered"] or result["published"] or result["unpublished"]
            )
            # (a batch committed by a run whose reply was lost waits in the ledger's outbox: the
            # next run announces it)
            if idle and not self.table.find_unpublished_batches(10):
                return
        pytest.fail(f"the issuer did not settle in {MAX_ISSUES} runs: {self.results} {self.errors}")

    def play(self) -> None:
        """The theatre's on-sale, the sweeper until settled, and the outcomes read so far."""
        run = self.on_sale.play(whole_burst=False)
        sweep_until_settled(self.on_sale.stack, run)
        self.on_sale.stack.outcomes()


@pytest.fixture
def issuing(on_sale: OnSale, monkeypatch: pytest.MonkeyPatch) -> Iterator[Issuing]:  # noqa: F811
    """The issuer on a session of its own (so a fault hits only it), on the on-sale's clock."""
    session = boto3.session.Session(region_name=REGION)
    monkeypatch.setenv("ISSUE_SECONDS", "1")
    monkeypatch.setattr(issuer_module, "build_adapters", adapters_factory(session, on_sale.clock))
    issuer_module.reset_container()
    yield Issuing(on_sale, session)
    issuer_module.reset_container()


def numbered_records(issuing: Issuing) -> dict[str, list[str]]:
    """Reservation id -> its ticket numbers as the records say (serials, one series)."""
    table = OperatorTable(issuing.on_sale.stack.dynamodb, issuing.on_sale.stack.table_name)
    return {
        r.reservation_id: [str(n) for n in r.ticket_numbers]
        for r in table.read_event_sales(EVENT)
        if r.ticket_first is not None
    }


def assert_announced_as_recorded(issuing: Issuing) -> dict[str, list[str]]:
    """Every TICKETED outcome carries the numbers its record holds; returns the records' numbers."""
    records = numbered_records(issuing)
    for document in issuing.ticketed:
        assert document["tickets"] == records[document["reservation_id"]], document
    return records


def test_without_faults_the_issuer_numbers_every_sale_once_and_announces_it(issuing: Issuing) -> None:
    issuing.play()
    issuing.until_settled()
    table = OperatorTable(issuing.on_sale.stack.dynamodb, issuing.on_sale.stack.table_name)
    assert audit_event(table, EVENT) == []
    records = assert_announced_as_recorded(issuing)
    # t-0 and tv-0 were sold then cancelled (void numbers), h-0, h-1 and hv-0 held then confirmed
    assert set(records) == {"t-0", "tv-0", "h-0", "h-1", "hv-0"}
    assert sorted(int(n) for ns in records.values() for n in ns) == list(range(1, 10))
    assert sorted(d["reservation_id"] for d in issuing.ticketed) == sorted(records)
    assert issuing.errors == [] and len(issuing.results) == 2


@pytest.mark.parametrize(("site", "fault"), CELLS)
def test_a_transient_fault_at_an_issuer_call_site_leaves_the_numbers_sound(
    issuing: Issuing, site: CallSite, fault: Fault
) -> None:
    issuing.play()
    injection = Injection(fault.times)
    fault.install(site)(issuing.session, site, injection)

    issuing.until_settled()

    # (A lost reply of the numbering transaction or of the outbox's update: it took effect on the
    # event's one batch, so there is no second call of the site to lose the reply of.)
    took_effect = fault.name == "reply lost after success" and site.operation in (
        "dynamodb.TransactWriteItems",
        "dynamodb.UpdateItem",
    )
    assert injection.fired == (1 if took_effect else fault.times), "the call site was not exercised"
    table = OperatorTable(issuing.on_sale.stack.dynamodb, issuing.on_sale.stack.table_name)
    assert audit_event(table, EVENT) == []
    records = assert_announced_as_recorded(issuing)
    assert len(records) == 5
    # Every numbered reservation was announced; twice only when SNS took a batch whose reply was
    # lost, or its outbox entry could not be cleared (at least once, docs/guides/tickets.md)
    assert {d["reservation_id"] for d in issuing.ticketed} == set(records)
    announced_twice = len(issuing.ticketed) > len(records)
    may_repeat = (site.operation, fault.name) == ("sns.PublishBatch", "reply lost after success") or (
        site.operation == "dynamodb.UpdateItem"
    )
    assert announced_twice <= may_repeat, issuing.ticketed
    assert TicketSeries(EVENT, 0) and table.read_ticket_counters(EVENT, 1) == {0: 10}


@pytest.mark.parametrize("site", ISSUER_SITES, ids=[site.name for site in ISSUER_SITES])
def test_a_permanent_fault_at_an_issuer_call_site_never_leaves_a_gap_or_a_duplicate(
    issuing: Issuing, site: CallSite
) -> None:
    issuing.play()
    injection = Injection(None)
    PERMANENT.install(site)(issuing.session, site, injection)

    for _ in range(ALARM_RUNS):
        issuing.run_once()

    assert injection.fired > 0
    table = OperatorTable(issuing.on_sale.stack.dynamodb, issuing.on_sale.stack.table_name)
    # Sales may wait for their numbers (or their announcement), never a gap, a duplicate, a
    # number past the counter or a ledger that disagrees with the records
    assert audit_event(table, EVENT, allow_pending=True) == []
    assert_announced_as_recorded(issuing)
    if site.operation.startswith("dynamodb."):
        # every run fails: IssueTicketsErrorsAlarm's metric
        assert len(issuing.errors) == ALARM_RUNS
    else:
        # numbered, never announced: the batch waits in the ledger's outbox for SNS to take it
        assert issuing.ticketed == [] and issuing.table.find_unpublished_batches(10)
        assert audit_event(table, EVENT) == []
