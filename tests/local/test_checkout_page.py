"""The example checkout page (examples/checkout/), driven in headless Chromium through Selenium, reserving
through the local checkout API that the local stack serves next to it.

Needs Chromium and its driver (Debian's `chromium` and `chromium-driver`): `make test` installs them
(scripts/install_system_packages.sh); without them the test is skipped locally and fails in CI.
`SEATS_UPDATE_SCREENSHOT=1` also writes the seat-map test's final screenshot to docs/assets/checkout-page.png.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.select import Select
from selenium.webdriver.support.wait import WebDriverWait

from seat_inventory.models import SeatKey
from seat_tools.local.runner import LocalRunner, runner_config
from seat_tools.local.stack import LocalStack
from seat_tools.operator_commands import OperatorTable
from seat_tools.seat_map_commands import SaleRules
from seat_tools.seat_map_files import load_file
from tests.system_tools import require_tools

pytestmark = pytest.mark.local_stack

# Headless without a desktop session, a sandbox, a GPU or network chatter of its own (a container
# running as root has none of them); a fresh profile each run (--user-data-dir, added below).
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--window-size=900,820",
)
SCREENSHOT = Path(__file__).resolve().parents[2] / "docs" / "assets" / "checkout-page.png"
CLUB_MAP = Path(__file__).resolve().parents[2] / "examples" / "seat_maps" / "club.csv"


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    tools = require_tools("chromium", "chromedriver")
    options = Options()
    options.binary_location = tools["chromium"]
    for argument in CHROMIUM_FLAGS:
        options.add_argument(argument)
    options.add_argument(f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}")
    # The driver given explicitly: Selenium never downloads one.
    driver = webdriver.Chrome(service=Service(executable_path=tools["chromedriver"]), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def test_the_checkout_page_reserves_and_shows_the_answer_and_the_seats_left(
    local_stack: LocalStack, browser: object, tmp_path: Path
) -> None:
    driver = browser
    assert local_stack.checkout_page_url is not None
    # Given an event with two seat classes, VIP kept in 2 shards (the page reads its own route),
    # and the function's workers running
    event_id = f"page-{uuid.uuid4().hex[:6]}"
    table = OperatorTable(local_stack.client("dynamodb"), local_stack.table_name)
    table.create_seat_class(SeatKey(event_id, "GA"), 120)
    table.create_seat_class(SeatKey(event_id, "VIP"), 8, shards=2)
    with LocalRunner(runner_config(local_stack, workers=1)):
        # When a buyer opens the page, asks for the seats of the event
        driver.get(local_stack.checkout_page_url)  # type: ignore[attr-defined]
        wait = WebDriverWait(driver, 60)
        driver.find_element(By.ID, "event").send_keys(event_id)  # type: ignore[attr-defined]
        driver.find_element(By.ID, "show-seats").click()  # type: ignore[attr-defined]
        wait.until(
            expected_conditions.presence_of_element_located((By.CSS_SELECTOR, "tr[data-seat-class=VIP]"))
        )
        # picks 3 VIP seats and reserves
        Select(driver.find_element(By.ID, "seat-class")).select_by_value("VIP")  # type: ignore[attr-defined]
        quantity = driver.find_element(By.ID, "quantity")  # type: ignore[attr-defined]
        quantity.clear()
        quantity.send_keys("3")
        driver.find_element(By.ID, "reserve").click()  # type: ignore[attr-defined]

        # Then the page polls until the answer arrives, and shows it with the seats left
        wait.until(expected_conditions.text_to_be_present_in_element((By.ID, "outcome"), "CONFIRMED:"))
        wait.until(
            expected_conditions.text_to_be_present_in_element(
                (By.CSS_SELECTOR, "tr[data-seat-class=VIP] td:nth-child(2)"), "5"
            )
        )
        outcome = driver.find_element(By.ID, "outcome").text  # type: ignore[attr-defined]
        ga_left = driver.find_element(By.CSS_SELECTOR, "tr[data-seat-class=GA] td:nth-child(2)").text  # type: ignore[attr-defined]
        shot = tmp_path / "checkout-page.png"
        driver.save_screenshot(str(shot))  # type: ignore[attr-defined]

    assert outcome.startswith("CONFIRMED: ") and "reservation " in outcome
    assert ga_left == "120"
    # and the table agrees with the page
    vip = table.read_inventory(SeatKey(event_id, "VIP"))
    assert vip is not None and (vip.available, vip.sold) == (5, 3)
    assert shot.stat().st_size > 10_000


def drawn_seats(driver: Any) -> dict[str, str]:
    """Seat id -> state of every seat drawn, read in one script (the page redraws its map)."""
    pairs = driver.execute_script(
        "return [...document.querySelectorAll('circle.seat')].map(c => [c.dataset.seat, c.dataset.state]);"
    )
    return {seat: state for seat, state in pairs}


def test_the_checkout_page_draws_a_seat_map_and_reserves_chosen_and_best_seats(
    local_stack: LocalStack, browser: object, tmp_path: Path
) -> None:
    driver: Any = browser
    assert local_stack.checkout_page_url is not None
    # Given an event with the club's seat map (class TABLES, sections A and B) beside a
    # counted class, and the function's workers running
    event_id = f"page-{uuid.uuid4().hex[:6]}"
    table = OperatorTable(local_stack.client("dynamodb"), local_stack.table_name)
    seat_map = load_file(str(CLUB_MAP))
    table.create_seat_map(event_id, seat_map, SaleRules())
    table.create_seat_class(SeatKey(event_id, "GA"), 50)
    with LocalRunner(runner_config(local_stack, workers=1)):
        # When a buyer opens the page with the event, picks the mapped class
        driver.get(f"{local_stack.checkout_page_url}?event={event_id}")
        wait = WebDriverWait(driver, 60)
        wait.until(
            expected_conditions.presence_of_element_located((By.CSS_SELECTOR, "tr[data-seat-class=TABLES]"))
        )
        Select(driver.find_element(By.ID, "seat-class")).select_by_value("TABLES")
        # Then the map is drawn: every seat of the map, free but for the map's blocked seats
        wait.until(
            expected_conditions.presence_of_element_located((By.CSS_SELECTOR, 'circle[data-seat="A-R2-3"]'))
        )
        drawn = drawn_seats(driver)
        assert set(drawn) == set(seat_map.classes["TABLES"].seats)
        blocked = {seat.seat_id for seat in seat_map.classes["TABLES"].seats.values() if seat.blocked}
        assert {seat for seat, state in drawn.items() if state != "free"} == blocked
        # When they click the wheelchair seat A-R1-1 ("Accessible seats" not ticked): not chosen
        driver.find_element(By.CSS_SELECTOR, 'circle[data-seat="A-R1-1"]').click()
        assert "Chosen" not in driver.find_element(By.ID, "chosen").text
        # When they click two seats and reserve
        for seat in ("A-R2-3", "A-R2-4"):  # a real click; nothing redraws the map meanwhile
            driver.find_element(By.CSS_SELECTOR, f'circle[data-seat="{seat}"]').click()
        assert "A-R2-3, A-R2-4" in driver.find_element(By.ID, "chosen").text
        driver.find_element(By.ID, "reserve").click()
        # Then the answer names those seats and the map shows them sold
        wait.until(
            expected_conditions.text_to_be_present_in_element((By.ID, "outcome"), "seats A-R2-3, A-R2-4")
        )
        assert driver.find_element(By.ID, "outcome").text.startswith("CONFIRMED: ")
        wait.until(lambda d: drawn_seats(d).get("A-R2-3") == drawn_seats(d).get("A-R2-4") == "sold")
        # When they then ask for the best 2 (nothing chosen)
        first_answer = driver.find_element(By.ID, "outcome").text
        quantity = driver.find_element(By.ID, "quantity")
        quantity.clear()
        quantity.send_keys("2")
        driver.find_element(By.ID, "reserve").click()
        wait.until(
            lambda d: (
                d.find_element(By.ID, "outcome").text not in (first_answer, "")
                and "; seats " in d.find_element(By.ID, "outcome").text
            )
        )
        outcome = driver.find_element(By.ID, "outcome").text
        best = outcome.rsplit("; seats ", 1)[1].rstrip(")").split(", ")
        wait.until(lambda d: all(drawn_seats(d).get(seat) == "sold" for seat in best))
        shown = {seat for seat, state in drawn_seats(driver).items() if state == "sold"}
        shot = tmp_path / "checkout-page.png"
        driver.set_window_size(900, 1150)  # the whole page: the map and the answer below it
        driver.save_screenshot(str(shot))

    # Then the answer was the best 2 and the page, the answer and the table agree
    assert outcome.startswith("CONFIRMED: ") and len(best) == 2
    rows = table.read_seat_rows(SeatKey(event_id, "TABLES"))
    sold = {
        f"{row_id.split('#')[0]}-{p}"
        for row_id, row in rows.items()
        for p, state in row.states.items()
        if state.value == "S"
    }
    assert sold == shown == {"A-R2-3", "A-R2-4", *best}
    assert shot.stat().st_size > 10_000
    if os.environ.get("SEATS_UPDATE_SCREENSHOT") == "1":
        shutil.copyfile(shot, SCREENSHOT)


def basket_lines(driver: Any) -> list[str]:
    """The basket's lines as shown, read in one script (the page redraws the basket after every answer)."""
    lines: list[str] = driver.execute_script(
        "return [...document.querySelectorAll('#basket li')].map(li => li.textContent);"
    )
    return lines


def add_line(driver: Any, seat_class: str, quantity: int) -> None:
    Select(driver.find_element(By.ID, "seat-class")).select_by_value(seat_class)
    field = driver.find_element(By.ID, "quantity")
    field.clear()
    field.send_keys(str(quantity))
    driver.find_element(By.ID, "add-line").click()


def test_the_checkout_page_buys_a_basket_as_one_order_all_or_nothing(
    local_stack: LocalStack, browser: object
) -> None:
    driver: Any = browser
    assert local_stack.checkout_page_url is not None
    # Given an event with three classes (CHILD kept in 2 shards), and the function's workers running
    event_id = f"page-{uuid.uuid4().hex[:6]}"
    table = OperatorTable(local_stack.client("dynamodb"), local_stack.table_name)
    table.create_seat_class(SeatKey(event_id, "ADULT"), 20)
    table.create_seat_class(SeatKey(event_id, "CHILD"), 10, shards=2)
    table.create_seat_class(SeatKey(event_id, "PARKING"), 3)
    with LocalRunner(runner_config(local_stack, workers=1)):
        driver.get(f"{local_stack.checkout_page_url}?event={event_id}")
        wait = WebDriverWait(driver, 60)
        wait.until(
            expected_conditions.presence_of_element_located((By.CSS_SELECTOR, "tr[data-seat-class=PARKING]"))
        )
        # When a buyer puts 2 ADULT, 1 CHILD and 1 PARKING in the basket and buys it
        add_line(driver, "ADULT", 2)
        add_line(driver, "CHILD", 1)
        add_line(driver, "PARKING", 1)
        assert basket_lines(driver) == ["ADULT x 2", "CHILD x 1", "PARKING x 1"]
        driver.find_element(By.ID, "buy-basket").click()
        # Then the answer is one order with its lines, and the page shows every class's seats left
        wait.until(expected_conditions.text_to_be_present_in_element((By.ID, "outcome"), "CONFIRMED:"))
        bought = driver.find_element(By.ID, "outcome").text
        wait.until(
            expected_conditions.text_to_be_present_in_element(
                (By.CSS_SELECTOR, "tr[data-seat-class=PARKING] td:nth-child(2)"), "2"
            )
        )
        # (the page empties the basket once it has shown the answer and the seats left)
        wait.until(lambda d: basket_lines(d) == [])
        # When they then buy a basket of 1 ADULT and 3 PARKING (2 left)
        add_line(driver, "ADULT", 1)
        add_line(driver, "PARKING", 3)
        driver.find_element(By.ID, "buy-basket").click()
        # Then the whole order is refused, naming the line, and the basket stays to change
        wait.until(expected_conditions.text_to_be_present_in_element((By.ID, "outcome"), "SOLD_OUT:"))
        refused = driver.find_element(By.ID, "outcome").text
        # (read once the page is done with the answer: its buttons are back on after the basket's redraw)
        wait.until(lambda d: d.find_element(By.ID, "add-line").is_enabled())
        kept = basket_lines(driver)

    assert "4 seat(s) in 3 line(s) confirmed" in bought
    assert "lines ADULT x 2, CHILD x 1, PARKING x 1" in bought
    assert "line 2 (PARKING): requested 3 seat(s), 2 left" in refused
    assert kept == ["ADULT x 1", "PARKING x 3"]
    # and the table took the first order's every line and nothing of the second
    for seat_class, sold in (("ADULT", 2), ("CHILD", 1), ("PARKING", 1)):
        item = table.read_inventory(SeatKey(event_id, seat_class))
        assert item is not None and item.sold == sold and item.held == 0
