"""No file of the repository keeps the markers of an unresolved merge."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MARKER = re.compile(r"^(<{7} |>{7} |={7}$)", re.MULTILINE)


def test_no_merge_markers() -> None:
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True,
                           check=True).stdout.split()
    bad = []
    for name in files:
        path = ROOT / name
        if path.suffix not in {".py", ".md", ".toml", ".yml", ".yaml", ".R", ".txt", ".cfg", ""} \
                or not path.is_file():
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        bad += [f"{name}:{text.count(chr(10), 0, m.start()) + 1}" for m in MARKER.finditer(text)]
    assert not bad, "unresolved merge markers at " + ", ".join(bad)
