"""docs/inspect-extension.md states what the package registers with Inspect: checked against the code."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = (ROOT / "docs" / "inspect-extension.md").read_text()
HOOK = (ROOT / "src" / "evalmix" / "integrations" / "inspect_hooks.py").read_text()


def test_entry_point_is_the_one_the_page_names():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    target = project["entry-points"]["inspect_ai"]["evalmix"]
    assert target == "evalmix.integrations.inspect_hooks"
    assert f'evalmix = "{target}"' in PAGE
    assert (ROOT / "src" / Path(*target.split("."))).with_suffix(".py").is_file()


def test_hook_name_and_settings_match_the_code():
    assert re.search(r'@hooks\(name="evalmix_leaderboard"', HOOK)
    assert "`evalmix_leaderboard`" in PAGE
    listed = set(re.findall(r"`(EVALMIX_[A-Z_]+)`", PAGE))
    read = set(re.findall(r'"(EVALMIX_[A-Z_]+)"', HOOK)) | set(re.findall(r"``(EVALMIX_[A-Z_]+)``", HOOK))
    assert listed == read, (listed, read)
