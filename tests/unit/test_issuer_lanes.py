"""The ticket issuer's lanes at the edge: the event that starts one, and the adapter that starts
them with Lambda's asynchronous Invoke (docs/guides/tickets.md, "Lanes")."""

from __future__ import annotations

import json

import boto3
import pytest
from botocore.stub import ANY, Stubber

from seat_inventory.issuer_lanes import LambdaLaneStarter, LaneEventError, lane_event, parse_lane_event
from seat_inventory.models import IssuerLane

ARN = "arn:aws:lambda:us-east-1:123456789012:function:seats-IssueTicketsFunction-abc"


def test_a_lanes_event_is_read_back_and_the_schedules_is_no_lane() -> None:
    assert parse_lane_event(lane_event(3, 8, 1_800_000_060.5)) == (IssuerLane(3, 8), 1_800_000_060.5)
    assert parse_lane_event({"version": "0", "detail-type": "Scheduled Event"}) is None


@pytest.mark.parametrize(
    "event",
    [
        {"lane": 0, "lanes": 8, "until": 1.0},  # lane 0 is the scheduled run's
        {"lane": 8, "lanes": 8, "until": 1.0},
        {"lane": 1, "lanes": 3, "until": 1.0},
        {"lane": 1, "lanes": 8},
        {"lane": "one", "lanes": 8, "until": 1.0},
        {"lane": 1, "lanes": 8, "until": "inf"},
    ],
)
def test_an_event_that_names_a_lane_it_cannot_be_is_refused_in_one_line(event: dict[str, object]) -> None:
    with pytest.raises(LaneEventError, match="not an issuer lane's event"):
        parse_lane_event(event)


def test_the_starter_invokes_the_function_asynchronously_once_a_lane_and_names_those_it_could_not() -> None:
    client = boto3.client("lambda", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    stubber = Stubber(client)
    sent: list[dict[str, object]] = []
    for lane in (1, 2, 3):
        if lane == 2:
            stubber.add_client_error("invoke", "TooManyRequestsException", http_status_code=429)
        else:
            stubber.add_response(
                "invoke",
                {"StatusCode": 202},
                {"FunctionName": ARN, "InvocationType": "Event", "Payload": ANY},
            )
    original = client.invoke

    def recording(**params: object) -> object:
        sent.append(json.loads(params["Payload"]))  # type: ignore[arg-type]
        return original(**params)

    client.invoke = recording  # type: ignore[method-assign]
    with stubber:
        # one call at a time, so the stubbed answers meet the lanes in order
        starter = LambdaLaneStarter(client, ARN)
        failed = [lane for lane in (1, 2, 3) if starter.start_lanes([lane], 4, 1_800_000_060.0)]
    assert failed == [2]
    assert sent == [lane_event(lane, 4, 1_800_000_060.0) for lane in (1, 2, 3)]
    stubber.assert_no_pending_responses()
