"""`seats reserve | hold | confirm | cancel`: send one request of the message contract, and with
`--wait` print the answer the service publishes.

`--wait` subscribes a temporary queue to the outcomes topic before sending (as `seats watch`
does, removed afterwards), then prints the outcome whose reservation id and type match the
request (for a reserve or hold, the answer recorded in the table if SNS has not delivered it
within a few seconds: a new subscription may start late on AWS). Exit status with `--wait`:
0 when the answer is the one asked for (CONFIRMED for a reservation or a confirm, HELD for a
hold, CANCELLED for a cancel), 1 for any other answer (SOLD_OUT, EXPIRED, ...) or when none came
within `--timeout`.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from typing import Any

import click
from botocore.exceptions import BotoCoreError, ClientError

from seat_inventory.models import Outcome
from seat_inventory.parsing import MAX_ID_LENGTH, MAX_SEAT_CLASS_LENGTH, id_problem
from seat_inventory.publishing.sns_publisher import outcome_document
from seat_tools.cli.context import CliContext
from seat_tools.cli.errors import ExitCode, explain
from seat_tools.cli.output import OutputFormat, output_option, print_json, print_text, text_line
from seat_tools.traffic import OutcomeCollector, reservation_body

pass_cli = click.make_pass_decorator(CliContext)

DEFAULT_WAIT_TIMEOUT_S = 60.0
# --wait reads the recorded answer of a reserve or hold when SNS has not delivered it by then.
RECORD_GRACE_S = 5.0
RECORD_POLL_S = 2.0
# The answer each request type asks for; any other answer exits 1 under --wait.
WANTED = {
    "reserve": Outcome.CONFIRMED.value,
    "hold": Outcome.HELD.value,
    "confirm": Outcome.CONFIRMED.value,
    "cancel": Outcome.CANCELLED.value,
}


def _checked_id(name: str, value: str, max_length: int, hint: str) -> str:
    problem = id_problem(name, value, max_length)
    if problem:
        raise click.BadParameter(problem, param_hint=hint)
    return value


def _failed(action: str, exc: Exception) -> click.ClickException:
    return explain(exc, doing=f"{action} failed") or click.ClickException(f"{action} failed: {exc}")


def _wait_options(function: Callable[..., Any]) -> Callable[..., Any]:
    function = click.option(
        "--timeout",
        type=click.FloatRange(min=0),
        default=DEFAULT_WAIT_TIMEOUT_S,
        show_default=True,
        help="With --wait: give up after this many seconds.",
    )(function)
    return click.option(
        "--wait",
        is_flag=True,
        help="Print the service's answer (through a temporary subscription to the outcomes topic).",
    )(function)


def _new_reservation_id(given: str | None, prefix: str) -> str:
    return _checked_id(
        "reservation_id", given or f"{prefix}-{uuid.uuid4().hex[:12]}", MAX_ID_LENGTH, "--reservation-id"
    )


def _send(
    obj: CliContext,
    body: dict[str, Any],
    *,
    wait: bool,
    timeout: float,
    output: OutputFormat,
    event_id: str | None = None,
) -> None:
    """Sends `body`; with `wait`, subscribes first and prints the matching outcome."""
    resources = obj.resources()
    resources.require("reservations_queue_url", *(["outcomes_topic_arn"] if wait else []))
    request_type = str(body.get("type", "reserve"))
    sqs = obj.client("sqs")
    if not wait:
        message_id = _send_message(sqs, resources.reservations_queue_url, body, request_type)
        _print_sent(body["reservation_id"], message_id, output)
        return
    assert resources.outcomes_topic_arn is not None
    collector = OutcomeCollector(obj.client("sns"), sqs, resources.outcomes_topic_arn, event_id=event_id)
    try:
        with collector:
            message_id = _send_message(sqs, resources.reservations_queue_url, body, request_type)
            if output is OutputFormat.TABLE:
                click.echo(
                    f"sent {request_type} {body['reservation_id']} (message {message_id});"
                    " waiting for the answer",
                    err=True,
                )
            recorded = (
                _recorded_answer(obj, body["reservation_id"], message_id)
                if resources.table_name and request_type in ("reserve", "hold")
                else None
            )
            answer = _await_answer(collector, body["reservation_id"], request_type, timeout, recorded)
    except (ClientError, BotoCoreError) as exc:
        raise _failed(f"waiting for the answer to {body['reservation_id']}", exc) from exc
    if answer is None:
        raise click.ClickException(
            f"no answer to {request_type} {body['reservation_id']} within {timeout:g} s (it was sent:"
            f" `seats reservation show {body['reservation_id']}` later, or `seats dlq show`)"
        )
    _print_answer(answer, output)
    if answer.get("outcome") != WANTED.get(request_type):
        raise click.exceptions.Exit(ExitCode.FAILED)


def _send_message(sqs: Any, queue_url: str | None, body: dict[str, Any], request_type: str) -> str:
    try:
        response = sqs.send_message(QueueUrl=queue_url, MessageBody=json.dumps(body, separators=(",", ":")))
    except (ClientError, BotoCoreError) as exc:
        raise _failed(f"sending the {request_type}", exc) from exc
    return str(response["MessageId"])


def _recorded_answer(
    obj: CliContext, reservation_id: str, message_id: str
) -> Callable[[], dict[str, Any] | None]:
    """Reads the answer recorded for this very message (a reserve or hold), as it was published."""

    def read() -> dict[str, Any] | None:
        record = obj.inventory_table().get_reservation_record(reservation_id)
        if record is None or record.answer.message_id != message_id:
            return None
        return outcome_document(record.answer)

    return read


def _await_answer(
    collector: OutcomeCollector,
    reservation_id: str,
    request_type: str,
    timeout: float,
    recorded: Callable[[], dict[str, Any] | None] | None = None,
) -> dict[str, Any] | None:
    """The outcome answering this request (same reservation id and type), or None after `timeout`.

    On AWS, SNS may start delivering to a new subscription a few seconds late, and miss the
    answer. So after RECORD_GRACE_S the answer recorded in the table for a reserve or hold (the
    same document) is read too, every RECORD_POLL_S (a GetItem each).
    """
    started = time.monotonic()
    deadline = started + timeout
    next_record_read = started + RECORD_GRACE_S
    while (left := deadline - time.monotonic()) > 0:
        for document in collector.poll(wait_seconds=1 if left >= 1 else 0):
            if document.get("reservation_id") == reservation_id and document.get("type") == request_type:
                return document
        if recorded is not None and time.monotonic() >= next_record_read:
            answer = recorded()
            if answer is not None:
                return answer
            next_record_read = time.monotonic() + RECORD_POLL_S
        if left < 1:
            time.sleep(min(0.1, left))
    return None


def _print_sent(reservation_id: str, message_id: str, output: OutputFormat) -> None:
    document = {"reservation_id": reservation_id, "message_id": message_id}
    if output is OutputFormat.JSON:
        print_json(document)
    elif output is OutputFormat.TEXT:
        print_text([document])
    else:
        click.echo(f"reservation_id {reservation_id}")
        click.echo(f"message_id     {message_id}")


def _print_answer(document: dict[str, Any], output: OutputFormat) -> None:
    if output is OutputFormat.JSON:
        print_json(document)
    elif output is OutputFormat.TEXT:
        click.echo(text_line(document))
    else:
        width = max(len(name) for name in document)
        for name, value in document.items():
            if value is not None:
                click.echo(f"{name:<{width}}  {value}")


def _seat_request(
    event_id: str, quantity: int, customer: str, seat_class: str | None, reservation_id: str
) -> dict[str, Any]:
    return reservation_body(
        reservation_id=reservation_id,
        event_id=_checked_id("event_id", event_id, MAX_ID_LENGTH, "EVENT_ID"),
        quantity=quantity,
        customer_id=_checked_id("customer", customer, MAX_ID_LENGTH, "--customer"),
        seat_class=None
        if seat_class is None
        else _checked_id("seat_class", seat_class, MAX_SEAT_CLASS_LENGTH, "--seat-class"),
    )


def _mapped_options(function: Callable[..., None]) -> Callable[..., None]:
    """--seat (repeatable), --split and --accessible: a request on a mapped class.

    See docs/guides/seat-maps.md.
    """
    function = click.option(
        "--accessible", is_flag=True, help="Mapped class: wheelchair and companion seats may be given."
    )(function)
    function = click.option(
        "--split", is_flag=True, help="Mapped class, best available: seats apart when no block fits."
    )(function)
    return click.option(
        "--seat",
        "seats",
        multiple=True,
        help="Mapped class: a chosen seat id (e.g. S101-R12-7); repeat for each seat. Replaces --quantity.",
    )(function)


def _with_seats(
    body: dict[str, Any], quantity: int | None, seats: tuple[str, ...], split: bool, accessible: bool
) -> dict[str, Any]:
    """The request with its mapped-class fields; --quantity or --seat, one of the two."""
    if (quantity is None) == (not seats):
        raise click.UsageError("give --quantity N (best available, or a counted class) or --seat ID ...")
    if seats:
        body.pop("quantity")
        body["seats"] = list(seats)
    if split:
        body["split"] = True
    if accessible:
        body["accessible"] = True
    return body


_CUSTOMER_OPTION = click.option("--customer", required=True, help="Customer id sent with the request.")
_SEAT_CLASS_OPTION = click.option("--seat-class", help="Seat class (default: the service's).")
_ADMISSION_TOKEN_OPTION = click.option(
    "--admission-token",
    help="Admission token for a class that requires one (`seats tokens issue`; docs/guides/admission.md).",
)


@click.command()
@click.argument("event_id")
@click.option("--quantity", type=click.IntRange(min=1), help="Seats to reserve.")
@_CUSTOMER_OPTION
@_SEAT_CLASS_OPTION
@click.option("--reservation-id", help="Reservation id (the dedupe key); default r-<12 random hex>.")
@_mapped_options
@_ADMISSION_TOKEN_OPTION
@_wait_options
@output_option
@pass_cli
def reserve(
    obj: CliContext,
    event_id: str,
    quantity: int | None,
    customer: str,
    seat_class: str | None,
    reservation_id: str | None,
    seats: tuple[str, ...],
    split: bool,
    accessible: bool,
    admission_token: str | None,
    wait: bool,
    timeout: float,
    output: OutputFormat,
) -> None:
    """Send one reservation request for EVENT_ID to the reservations queue.

    Send the same --reservation-id again to see the service answer a duplicate. With --wait,
    print the answer (exit 0 when CONFIRMED, 1 otherwise).
    """
    reservation_id = _new_reservation_id(reservation_id, "r")
    body = _seat_request(event_id, quantity or len(seats), customer, seat_class, reservation_id)
    body = _with_seats(body, quantity, seats, split, accessible)
    if admission_token is not None:
        body["admission_token"] = admission_token
    _send(obj, body, wait=wait, timeout=timeout, output=output, event_id=event_id)


@click.command()
@click.argument("event_id")
@click.option("--quantity", type=click.IntRange(min=1), help="Seats to hold.")
@_CUSTOMER_OPTION
@_SEAT_CLASS_OPTION
@click.option(
    "--hold-seconds",
    type=click.IntRange(min=60),
    help="How long the seats are kept (the service's default 600 s when omitted; at most MaxHoldSeconds).",
)
@click.option("--reservation-id", help="Reservation id (the dedupe key); default h-<12 random hex>.")
@_mapped_options
@_ADMISSION_TOKEN_OPTION
@_wait_options
@output_option
@pass_cli
def hold(
    obj: CliContext,
    event_id: str,
    quantity: int | None,
    customer: str,
    seat_class: str | None,
    hold_seconds: int | None,
    reservation_id: str | None,
    seats: tuple[str, ...],
    split: bool,
    accessible: bool,
    admission_token: str | None,
    wait: bool,
    timeout: float,
    output: OutputFormat,
) -> None:
    """Hold seats of EVENT_ID while the buyer pays; `seats confirm ID` sells them, `seats cancel ID`
    gives them back, and the sweeper releases them when the hold expires.

    With --wait, print the answer (exit 0 when HELD, 1 otherwise).
    """
    body = {
        "type": "hold",
        **_seat_request(
            event_id, quantity or len(seats), customer, seat_class, _new_reservation_id(reservation_id, "h")
        ),
    }
    body = _with_seats(body, quantity, seats, split, accessible)
    if hold_seconds is not None:
        body["hold_seconds"] = hold_seconds
    if admission_token is not None:
        body["admission_token"] = admission_token
    _send(obj, body, wait=wait, timeout=timeout, output=output, event_id=event_id)


def _change_command(request_type: str, summary: str) -> click.Command:
    """`seats confirm|cancel RESERVATION_ID [--customer C] [--wait]`: one command per change type."""

    @click.command(request_type, help=summary)
    @click.argument("reservation_id")
    @click.option(
        "--customer", help="The reservation's customer id; when given, any other is refused (INVALID)."
    )
    @_wait_options
    @output_option
    @pass_cli
    def command(
        obj: CliContext,
        reservation_id: str,
        customer: str | None,
        wait: bool,
        timeout: float,
        output: OutputFormat,
    ) -> None:
        body: dict[str, Any] = {
            "type": request_type,
            "reservation_id": _checked_id("reservation_id", reservation_id, MAX_ID_LENGTH, "RESERVATION_ID"),
        }
        if customer is not None:
            body["customer_id"] = _checked_id("customer", customer, MAX_ID_LENGTH, "--customer")
        _send(obj, body, wait=wait, timeout=timeout, output=output)

    return command


confirm = _change_command(
    "confirm",
    "Confirm the hold RESERVATION_ID: its seats are sold (answered EXPIRED if it ran out first)."
    " With --wait, print the answer (exit 0 when CONFIRMED, 1 otherwise).",
)
cancel = _change_command(
    "cancel",
    "Cancel RESERVATION_ID (a hold or a sale): its seats go back on sale."
    " With --wait, print the answer (exit 0 when CANCELLED, 1 otherwise).",
)
