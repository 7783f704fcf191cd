"""Writes template.yaml as CloudFormation processes it before SAM's transform: the files it brings in
with AWS::Include in place and its Fn::ForEach loops expanded (`seat_tools.local.template`).

`make security` runs checkov over this file: checkov reads neither AWS::Include nor Fn::ForEach
(it skips a loop's resources without a word), so the template as written would hide what the
loops create from its checks.

    python scripts/processed_template.py OUTPUT [TEMPLATE]
"""

from __future__ import annotations

import sys
from pathlib import Path

import yaml

from seat_tools.local.template import read_template_document

REPO = Path(__file__).resolve().parents[1]


def main(argv: list[str]) -> int:
    if len(argv) not in (1, 2):
        print("usage: processed_template.py OUTPUT [TEMPLATE]", file=sys.stderr)
        return 2
    template = Path(argv[1]) if len(argv) == 2 else REPO / "template.yaml"
    output = Path(argv[0])
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(yaml.safe_dump(read_template_document(template), sort_keys=False, width=110))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
