"""`--output json|table|text` for every command that prints data, as the AWS CLI spells it.

- `table` (the default): aligned columns and sentences for people;
- `json`: one JSON document (a stream of outcomes: one JSON object per line), for programs;
- `text`: one record per line, values separated by tabs in the order of the JSON fields, no
  header, `None` for a missing value (as the AWS CLI's text output), for `cut`, `awk` and shells.

`--json` is kept, hidden, as another way to say `--output json` (scripts written before).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterable, Mapping
from enum import StrEnum
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])


class OutputFormat(StrEnum):
    TABLE = "table"
    JSON = "json"
    TEXT = "text"


def output_option(function: F) -> F:
    """Adds `--output json|table|text` (and the hidden `--json`); the command gets `output: OutputFormat`."""

    @functools.wraps(function)
    def command(*args: Any, output: str, as_json: bool, **kwargs: Any) -> Any:
        return function(*args, output=OutputFormat.JSON if as_json else OutputFormat(output), **kwargs)

    command = click.option("--json", "as_json", is_flag=True, hidden=True, help="The same as --output json.")(
        command
    )
    command = click.option(
        "--output",
        type=click.Choice([f.value for f in OutputFormat]),
        default=OutputFormat.TABLE.value,
        show_default=True,
        help="table for people, json for programs, text (tab-separated, one record per line) for shells.",
    )(command)
    return command  # type: ignore[return-value]


def print_json(document: Any) -> None:
    click.echo(json.dumps(document))


def _text_value(value: Any) -> str:
    if value is None:
        return "None"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, dict | list):
        return json.dumps(value, separators=(",", ":"))
    return " ".join(str(value).split())


def text_line(record: Mapping[str, Any]) -> str:
    """One record as tab-separated values, in the order of its fields."""
    return "\t".join(_text_value(value) for value in record.values())


def print_text(records: Iterable[Mapping[str, Any]]) -> None:
    for record in records:
        click.echo(text_line(record))
