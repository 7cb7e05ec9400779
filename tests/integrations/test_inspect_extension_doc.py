"""docs/inspect-extension.md states what the package registers with Inspect: checked against the code."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
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


STOPPING = ROOT / "src" / "evalmix" / "integrations" / "inspect_stopping.py"


def _listing(category: str) -> list[str]:
    """The entries (name and link, then author) under one category heading of the listing."""
    section = PAGE.split(f"## {category}\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^- \*\*\[([^\]]+)\]\(([^)]+)\)\*\* — (\S+)", section, flags=re.M)


SITE = "https://evalmix.github.io/evalmix/"  # mkdocs.yml's site_url


def _docs_page(link: str) -> Path:
    """The docs/ page a link into the documentation site shows (site/ -> index.md, site/x/ -> x.md)."""
    assert link.startswith(SITE), link
    return ROOT / "docs" / f"{link.removeprefix(SITE).strip('/') or 'index'}.md"


def test_the_early_stopping_manager_is_listed_as_inspect_lists_extensions():
    import inspect as pyinspect

    from evalmix.integrations import inspect_stopping
    from evalmix.integrations.inspect_stopping import SequentialStopping

    (entry,) = _listing("Early Stopping")
    name, link, author = entry
    assert name == f"evalmix: {SequentialStopping.__name__}" and author == "evalmix"
    assert _docs_page(link).is_file() and "SequentialStopping" in _docs_page(link).read_text()
    # the manager's registered name, module and options, as the page states them
    assert f"`{SequentialStopping.name}`" in PAGE
    assert f"`{inspect_stopping.__name__}`" in PAGE and STOPPING.is_file()
    options = [p for p in pyinspect.signature(SequentialStopping).parameters]
    row = next(line for line in PAGE.splitlines() if "`SequentialStopping`" in line and line.startswith("|"))
    assert re.findall(r"`(\w+)`", row.split("options", 1)[1].split("|", 1)[0]) == options
    # Inspect's EarlyStopping protocol: the coroutines it calls, each named on the page
    for method in ("start_task", "schedule_sample", "complete_sample", "complete_task"):
        assert pyinspect.iscoroutinefunction(getattr(SequentialStopping, method)), method
        assert f"`{method}`" in row
    # the example on the page is the one the module documents, and it parses
    example = PAGE.split("```python\n", 1)[1].split("```", 1)[0]
    compile(example, "inspect-extension.md", "exec")
    assert "early_stopping=SequentialStopping(target_width=0.05)" in example
    assert "early_stopping=SequentialStopping(target_width=0.05)" in (inspect_stopping.__doc__ or "")
    # the tests the page cites exist
    for cited in re.findall(r"`(tests/test_\w+\.py)`", row):
        assert (ROOT / cited).is_file(), cited


def test_the_analysis_entry_is_still_the_package():
    (entry,) = _listing("Analysis")
    assert entry == ("evalmix", SITE, "evalmix") and _docs_page(SITE).is_file()
