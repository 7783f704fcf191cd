"""The example checkout page (examples/checkout/) with a waiting list, in headless Chromium through
the local checkout API: a buyer refused for lack of seats joins the list and sees their position, a
seat comes back and the sweeper offers it, and the buyer takes the offer (docs/guides/waiting-list.md).
Needs Chromium and its driver, as tests/local/test_checkout_page.py.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.select import Select
from selenium.webdriver.support.wait import WebDriverWait

from seat_inventory.logic.offer_rounds import run_offer_rounds
from seat_inventory.logic.reserve_seats import QueueMessage, reserve_seats
from seat_inventory.models import Outcome, SeatKey
from seat_inventory.settings import Settings
from seat_inventory.wiring import SystemClock
from seat_tools.local.runner import LocalRunner, runner_config
from seat_tools.local.stack import LocalStack
from seat_tools.operator_commands import OperatorTable
from tests.fakes import RecordingPublisher
from tests.local.test_checkout_page import browser  # noqa: F401  (the module's Chromium)

pytestmark = pytest.mark.local_stack


def test_the_page_joins_the_waiting_list_shows_the_position_and_takes_the_offer(
    local_stack: LocalStack,
    browser: Any,  # noqa: F811
) -> None:
    driver = browser
    assert local_stack.checkout_page_url is not None
    # Given a class of 2 seats, sold out, with a waiting list open, and the function's workers running
    event_id = f"wait-{uuid.uuid4().hex[:6]}"
    key = SeatKey(event_id, "GA")
    table = OperatorTable(local_stack.client("dynamodb"), local_stack.table_name)
    table.create_seat_class(key, 2)
    table.open_waitlist(key, offer_seconds=600)
    settings = Settings(table_name=local_stack.table_name, outcomes_topic_arn="unused")
    clock = SystemClock()

    def send(body: dict[str, Any]) -> Outcome:
        message = QueueMessage(f"m-{uuid.uuid4().hex}", json.dumps(body))
        publisher = RecordingPublisher()
        reserve_seats(
            [message], store=table, publisher=publisher, settings=settings, clock=clock, waitlist=table
        )
        return publisher.published[0].outcome

    sale = {"reservation_id": f"{event_id}-sale", "event_id": event_id, "quantity": 2, "customer_id": "first"}
    assert send(sale) is Outcome.CONFIRMED
    with LocalRunner(runner_config(local_stack, workers=1)):
        # When a buyer asks for 2 seats and ticks "join the waiting list"
        driver.get(f"{local_stack.checkout_page_url}?event={event_id}")
        wait = WebDriverWait(driver, 60)
        wait.until(
            expected_conditions.presence_of_element_located((By.CSS_SELECTOR, "tr[data-seat-class=GA]"))
        )
        Select(driver.find_element(By.ID, "seat-class")).select_by_value("GA")
        quantity = driver.find_element(By.ID, "quantity")
        quantity.clear()
        quantity.send_keys("2")
        driver.find_element(By.ID, "waitlist").click()
        driver.find_element(By.ID, "reserve").click()
        # Then the page shows the entry's position
        wait.until(expected_conditions.text_to_be_present_in_element((By.ID, "outcome"), "WAITLISTED:"))
        wait.until(
            expected_conditions.text_to_be_present_in_element((By.ID, "waitlist-status"), "position 1")
        )
        # When the sale is cancelled and the sweeper serves the list
        assert send({"type": "cancel", "reservation_id": sale["reservation_id"]}) is Outcome.CANCELLED
        served = run_offer_rounds(table, RecordingPublisher(), clock, limit=10)
        assert served.offered == 1
        # Then the page shows the offer, and taking it confirms the seats
        wait.until(expected_conditions.text_to_be_present_in_element((By.ID, "waitlist-status"), "OFFERED"))
        driver.find_element(By.ID, "take-offer").click()
        wait.until(expected_conditions.text_to_be_present_in_element((By.ID, "waitlist-status"), "CONFIRMED"))
    item = table.read_inventory(key)
    assert item is not None and (item.available, item.held, item.sold) == (0, 0, 2)
