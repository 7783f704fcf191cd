"""`seats waitlist simulate` on a small list: the seats released are offered in join order in one
sweeper run, and the figures it prints follow from the calls it metered."""

from __future__ import annotations

from click.testing import CliRunner

from seat_tools.cli.main import cli
from seat_tools.waitlist_simulation import simulate_waitlist, transaction_ms


def test_every_seat_released_is_offered_in_join_order_and_costed() -> None:
    run = simulate_waitlist(3_000, 400, shards=2, seed=3)
    # Every seat, but one when the next entry wants two: it waits for a second (never skipped).
    assert 399 <= run.seats_offered <= 400 and run.in_join_order
    assert 200 <= run.entries_offered <= 400  # entries of 1 or 2 seats
    assert run.sweeper_runs == 1
    assert run.transactions >= run.entries_offered / 45
    assert run.write_units >= 2 * run.actions
    assert run.modelled_seconds * 1000 >= run.transactions * transaction_ms(5)
    assert abs(run.cost_per_offer_usd * run.entries_offered - run.cost_usd) < 1e-6


def test_a_list_shorter_than_the_release_is_served_out_and_the_rest_goes_back_on_sale() -> None:
    run = simulate_waitlist(50, 400, seed=4)
    assert run.entries_offered == 50 and run.seats_offered < 400 and run.in_join_order


def test_the_command_prints_the_modelled_figures() -> None:
    result = CliRunner().invoke(cli, ["waitlist", "simulate", "--entries", "200", "--released", "30"])
    assert result.exit_code == 0, result.output
    assert "30 seats released at once" in result.output and "in join order: yes" in result.output
    assert "modelled time to offer them all" in result.output and "per million offers" in result.output
