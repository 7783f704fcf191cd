"""The long-running tests' sizes: bounded by default, full with SEATS_TEST_DEPTH=deep."""

from __future__ import annotations

import pytest

from tests.depth import DEPTH_ENV, depth, is_deep, sized


@pytest.fixture
def no_sizes(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    monkeypatch.delenv(DEPTH_ENV, raising=False)
    monkeypatch.delenv("SEATS_EXAMPLE_SIZE", raising=False)
    return monkeypatch


def test_the_default_is_the_bounded_size(no_sizes: pytest.MonkeyPatch) -> None:
    assert (depth(), is_deep()) == ("ci", False)
    assert sized("SEATS_EXAMPLE_SIZE", ci=60, deep=300) == 60


def test_deep_runs_the_full_size(no_sizes: pytest.MonkeyPatch) -> None:
    no_sizes.setenv(DEPTH_ENV, "Deep")
    assert (depth(), is_deep()) == ("deep", True)
    assert sized("SEATS_EXAMPLE_SIZE", ci=60, deep=300) == 300


def test_a_tests_own_variable_overrides_either(no_sizes: pytest.MonkeyPatch) -> None:
    no_sizes.setenv("SEATS_EXAMPLE_SIZE", "7")
    assert sized("SEATS_EXAMPLE_SIZE", ci=60, deep=300) == 7
    no_sizes.setenv(DEPTH_ENV, "deep")
    assert sized("SEATS_EXAMPLE_SIZE", ci=60, deep=300) == 7


def test_a_bad_value_is_refused_in_one_line(no_sizes: pytest.MonkeyPatch) -> None:
    no_sizes.setenv(DEPTH_ENV, "full")
    with pytest.raises(ValueError, match=r"^SEATS_TEST_DEPTH is ci or deep, not 'full'$"):
        depth()
    no_sizes.setenv(DEPTH_ENV, "ci")
    no_sizes.setenv("SEATS_EXAMPLE_SIZE", "many")
    with pytest.raises(ValueError, match=r"^SEATS_EXAMPLE_SIZE is a whole number, not 'many'$"):
        sized("SEATS_EXAMPLE_SIZE", ci=60, deep=300)
