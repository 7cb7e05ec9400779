"""The documentation site's configuration (mkdocs.yml and docs/hooks/evalmix_site.py): every guide
in the nav, a reference page for every public name, every figure in the gallery.  CI builds the
site itself with ``mkdocs build --strict`` (.ci/run); these checks need no mkdocs."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import yaml

import evalmix

ROOT = Path(__file__).resolve().parents[2]


def _hooks():
    spec = importlib.util.spec_from_file_location("evalmix_site", ROOT / "docs" / "hooks" / "evalmix_site.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _nav_pages(entries) -> list[str]:
    pages = []
    for entry in entries:
        value = next(iter(entry.values())) if isinstance(entry, dict) else entry
        pages += _nav_pages(value) if isinstance(value, list) else [value]
    return pages


def test_every_guide_is_in_the_nav():
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8").replace("!!python", "#"))
    nav = _nav_pages(config["nav"])
    guides = sorted(p.name for p in (ROOT / "docs").glob("*.md"))
    assert sorted(p for p in nav if "/" not in p) == guides
    assert "reference/index.md" in nav and config["strict"] is True
    assert config["hooks"] == ["docs/hooks/evalmix_site.py"]


def test_a_reference_page_for_every_public_name():
    pages = _hooks().reference_pages()
    assert set(pages) == {f"reference/{n}.md" for n in evalmix.__all__} | {"reference/index.md"}
    index = pages["reference/index.md"]
    for name in evalmix.__all__:
        assert f"[`{name}`]({name}.md)" in index, name
        target = re.search(r"^::: (\S+)$", pages[f"reference/{name}.md"], re.M).group(1)
        # documented where it is defined (mkdocs --strict fails on a target that does not resolve)
        if name in evalmix._EXPORTS:
            assert target == f"evalmix.{evalmix._EXPORTS[name]}.{name}", target
    assert pages["reference/glmer.md"].startswith("# evalmix.glmer\n\n::: evalmix.glmm.glmer\n")


def test_every_figure_is_in_the_gallery():
    gallery = (ROOT / "docs" / "gallery.md").read_text(encoding="utf-8")
    shown = set(re.findall(r"\]\(img/([^)]+\.png)\)", gallery))
    assert shown == {p.name for p in (ROOT / "docs" / "img").glob("*.png")}


def test_links_out_of_docs_go_to_the_repository():
    class Page:
        class file:
            src_uri = "scores.md"

    text = _hooks().on_page_markdown("[nb](../notebooks/scores.ipynb) [g](glmm.md)", Page, None, None)
    assert text == "[nb](https://github.com/evalmix/evalmix/blob/main/notebooks/scores.ipynb) [g](glmm.md)"
