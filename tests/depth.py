"""How big the long-running tests run: bounded in `make test` and CI, full with `make test-deep`.

`SEATS_TEST_DEPTH=ci` (the default) runs each long-running tier at a bounded size, so that the whole
suite stays well under 20 minutes on 2 cores while every tier still runs; `SEATS_TEST_DEPTH=deep`
(`make test-deep`) runs the full sizes. A test's own variable (say `SEATS_MODEL_EXAMPLES`) still
overrides either. docs/contributing/testing.md lists the bounded tests and their two sizes; their marker is
`bounded` (`pytest -m bounded` runs just them).
"""

from __future__ import annotations

import os

DEPTH_ENV = "SEATS_TEST_DEPTH"
DEPTHS = ("ci", "deep")


def depth() -> str:
    """`ci` or `deep`, from SEATS_TEST_DEPTH (default `ci`); anything else is a usage error."""
    value = os.environ.get(DEPTH_ENV, "ci").strip().lower() or "ci"
    if value not in DEPTHS:
        raise ValueError(f"{DEPTH_ENV} is ci or deep, not {value!r}")
    return value


def is_deep() -> bool:
    return depth() == "deep"


def sized(variable: str, *, ci: int, deep: int) -> int:
    """The size a bounded test runs at: `variable` when set, else its CI or its deep size."""
    given = os.environ.get(variable)
    if given is not None:
        try:
            return int(given)
        except ValueError:
            raise ValueError(f"{variable} is a whole number, not {given!r}") from None
    return deep if is_deep() else ci
