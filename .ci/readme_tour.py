"""Run README.md's tour against an installed evalmix, from the current (empty) directory.

`.ci/wheel` builds the wheel, installs it (not editable) in a fresh virtual environment and runs
this script from an empty directory: every python block of README's "A short tour" section runs in
order, then every command of its command-line tour except those that name files of a checkout
(the Inspect log fixtures under tests/).  The script fails when evalmix is imported from a
checkout rather than from the installed wheel, or when the directory is not empty at the start.

    python .ci/readme_tour.py README.md [--quick]

``--quick`` leaves out the tour's slowest commands (calibrate, report, irt).
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

SLOW = {"calibrate", "report", "irt"}


def tour(readme: Path) -> tuple[list[str], list[str]]:
    """README's tour: its python blocks and its command lines (continuations joined, comments cut)."""
    text = readme.read_text(encoding="utf-8")
    section = text[text.index("## A short tour"):]
    section = section[:section.index("\n## ", 3)]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    shell = "\n".join(re.findall(r"```bash\n(.*?)```", section, re.S)).replace("\\\n", " ")
    commands = [line.split("  #")[0].strip() for line in shell.splitlines() if line.strip().startswith("evalmix ")]
    return blocks, commands


def main() -> int:
    readme, quick = Path(sys.argv[1]).resolve(), "--quick" in sys.argv[2:]
    here = Path.cwd()
    if any(here.iterdir()):
        sys.exit(f"run the tour from an empty directory ({here} is not empty)")
    import matplotlib

    matplotlib.use("Agg")
    import evalmix

    location = Path(evalmix.__file__).resolve()
    if "site-packages" not in location.parts:
        sys.exit(f"evalmix is imported from {location}, not from an installed wheel")
    print(f"evalmix {evalmix.__version__} from {location.parent}")
    blocks, commands = tour(readme)
    assert blocks and commands, "README.md has no tour"
    for i, block in enumerate(blocks, 1):
        start = time.perf_counter()
        exec(compile(block, f"README.md tour block {i}", "exec"), {"__name__": "__tour__"})
        print(f"python block {i}: ok ({time.perf_counter() - start:.1f} s)")
    for command in commands:
        argv = shlex.split(command)
        if any(a.startswith("tests/") for a in argv) or (quick and argv[1] in SLOW):
            print(f"left out: {command}")
            continue
        start = time.perf_counter()
        done = subprocess.run(argv, capture_output=True, text=True)
        if done.returncode != 0:
            print(done.stdout[-2000:], done.stderr[-2000:], sep="\n")
            sys.exit(f"failed ({done.returncode}): {command}")
        print(f"ok ({time.perf_counter() - start:.1f} s): {command}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
