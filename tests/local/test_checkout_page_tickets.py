"""The example checkout page shows a sale's tickets as QR codes (docs/guides/checkin.md), in headless
Chromium: each QR code drawn is read back from a screenshot (zxing-cpp) and is the ticket's secret,
which verifies with the event's public key and lets the ticket in at the gate once."""

from __future__ import annotations

import io
import uuid
from typing import Any

import pytest
import requests
import zxingcpp
from PIL import Image
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.wait import WebDriverWait

from seat_inventory.dal.gate_table import GateTable
from seat_inventory.gate_models import CheckinList, TicketClaim
from seat_inventory.logic.ticket_credentials import parse_key_ring, read_secret
from seat_inventory.models import SeatKey
from seat_tools.local.runner import LocalRunner, runner_config
from seat_tools.local.stack import LocalStack
from seat_tools.operator_commands import OperatorTable
from tests.local.test_checkout_page import browser  # noqa: F401  (the module's Chromium)

pytestmark = pytest.mark.local_stack


def test_the_page_shows_each_ticket_as_a_qr_code_of_its_secret(local_stack: LocalStack, browser: Any) -> None:  # noqa: F811
    driver = browser
    assert local_stack.checkout_page_url is not None and local_stack.api_url is not None
    # Given an event, its check-in list, and the function's workers with the ticket issuer
    event_id = f"qr-{uuid.uuid4().hex[:6]}"
    OperatorTable(local_stack.client("dynamodb"), local_stack.table_name).create_seat_class(
        SeatKey(event_id, "GA"), 50
    )
    GateTable(local_stack.client("dynamodb"), local_stack.table_name).write_checkin_list(
        CheckinList(event_id, "main")
    )
    with LocalRunner(runner_config(local_stack, workers=1, issuer=True)):
        # When a buyer reserves 2 seats on the page
        driver.get(f"{local_stack.checkout_page_url}?event={event_id}")
        wait = WebDriverWait(driver, 120)
        wait.until(
            expected_conditions.presence_of_element_located((By.CSS_SELECTOR, "tr[data-seat-class=GA]"))
        )
        quantity = driver.find_element(By.ID, "quantity")
        quantity.clear()
        quantity.send_keys("2")
        driver.find_element(By.ID, "reserve").click()
        wait.until(expected_conditions.text_to_be_present_in_element((By.ID, "outcome"), "CONFIRMED:"))
        # Then, once the issuer numbered the sale, the page draws two QR codes
        wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#tickets .qr svg")) == 2)
        codes = driver.find_elements(By.CSS_SELECTOR, "#tickets .qr")
        shown = [(code.get_attribute("data-secret"), code.screenshot_as_png) for code in codes]
        labels = [item.text for item in driver.find_elements(By.CSS_SELECTOR, "#tickets .ticket p")]

    ring = parse_key_ring(
        local_stack.client("ssm").get_parameter(Name=local_stack.ticket_key_parameter, WithDecryption=True)[
            "Parameter"
        ]["Value"]
    )
    serials = []
    for secret, png in shown:
        # each QR code reads back as the ticket's secret (the scanner's view of the phone)
        [read] = zxingcpp.read_barcodes(Image.open(io.BytesIO(png)))
        assert read.format == zxingcpp.BarcodeFormat.QRCode
        assert read.text == secret
        claim = read_secret(read.text, ring.public_keys(event_id), event_id=event_id)
        assert isinstance(claim, TicketClaim) and claim.seat_class == "GA"
        serials.append(claim.ticket.serial)
    assert sorted(serials) == [1, 2]
    assert [label.split(":")[0] for label in labels] == ["Ticket 1", "Ticket 2"]
    # and the secret read from the screen lets its ticket in once at the gate
    body = {"event_id": event_id, "list": "main", "gate": "g1", "secret": shown[0][0]}
    first = requests.post(f"{local_stack.api_url}/checkins", json={**body, "nonce": "p-1"}, timeout=60).json()
    again = requests.post(f"{local_stack.api_url}/checkins", json={**body, "nonce": "p-2"}, timeout=60).json()
    assert (first["result"], again["result"]) == ("ADMITTED", "ALREADY_CHECKED_IN")
