"""The CLI and configuration reference pages are generated (scripts/gen_reference.py) and committed:
they must be what the code and template.yaml give now, so the docs cannot drift from them."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import click

from seat_tools.cli.main import cli

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "gen_reference.py"


def generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_reference", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_committed_reference_pages_are_current() -> None:
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--check"], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr


def test_every_command_has_its_help_on_the_cli_page() -> None:
    page = generator().cli_page()

    def names(command: click.Command, path: str) -> list[str]:
        found = [path]
        if isinstance(command, click.Group):
            for name, sub in command.commands.items():
                if not sub.hidden:
                    found += names(sub, f"{path} {name}")
        return found

    for path in names(cli, "seats"):
        assert f"\n## {path}\n" in page, path
        assert f"Usage: {path} " in page, path


def test_every_parameter_and_output_is_on_the_configuration_page(tmp_path: Path) -> None:
    module = generator()
    page = module.configuration_page()
    template = module.read_template_document(module.TEMPLATE, includes=False)
    for name in template["Parameters"]:
        assert f"| `{name}` |" in page, name
    for name in template["Outputs"]:
        assert f"| `{name}` |" in page, name


def test_a_changed_default_makes_the_page_stale(tmp_path: Path) -> None:
    module = generator()
    default = module.read_template_document(module.TEMPLATE, includes=False)["Parameters"]["BatchSize"][
        "Default"
    ]
    text = module.TEMPLATE.read_text()
    batch_size = re.compile(r"(\n  BatchSize:\n(?:    .*\n)*?    Default: )(\d+)")
    assert batch_size.search(text)
    changed = tmp_path / "template.yaml"
    changed.write_text(batch_size.sub(lambda m: m.group(1) + str(default - 1), text, count=1))
    for include in ("api", "monitoring"):
        (tmp_path / include).symlink_to(REPO / include)
    before, after = module.configuration_page(), module.configuration_page(changed)
    assert f"| `BatchSize` | `{default}` |" in before
    assert f"| `BatchSize` | `{default - 1}` |" in after
