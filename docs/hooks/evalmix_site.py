"""mkdocs hooks of the documentation site (mkdocs.yml, ``hooks:``).

- One API reference page per public name of ``evalmix.__all__``, generated at build time (so that
  a new export gets its page without a file to add), and ``reference/index.md`` listing them by the
  module that owns them.
- Links from a guide to a file of the repository outside ``docs/`` (``../notebooks/...``) point at
  the repository on GitHub, where the file is.

:func:`reference_pages` is plain Python (no mkdocs import): ``tests/project/test_docs_site.py``
checks it covers every public name.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
REPO = "https://github.com/evalmix/evalmix/blob/main"
# the headings of the reference index, by the owning module's first part
GROUPS = {
    "data": "The runs table and example data", "stats": "Descriptive statistics, tests and resampling",
    "core": "Errors, warnings and tables", "mixed": "Mixed-model results", "glmm": "Mixed models: glmer",
    "lmm": "Mixed models: lmer", "ordinal": "Mixed models: clmm", "tmb": "Mixed models: glmmTMB",
    "inference": "Marginal means, contrasts and model selection", "io": "Harness log readers",
    "studies": "Studies: reliability, rankings, judges, arena, IRT, sequential, power",
    "reporting": "The study report", "bayes": "Bayesian models", "plots": "Figures", "simulate": "Simulation",
    "module": "Modules",
}


def _owner(name: str) -> str:
    """The module that defines ``evalmix.<name>`` (``"module"`` for the public modules themselves)."""
    import evalmix

    # read from the lazy namespace's tables, so that listing the pages imports no engine
    if name in evalmix._EXPORTS:
        return f"evalmix.{evalmix._EXPORTS[name]}"
    if name in evalmix._SUBMODULES:
        return "module"
    return str(getattr(evalmix, name).__module__)  # the errors and warnings, imported eagerly


def reference_pages() -> dict[str, str]:
    """``{path under docs/: markdown}``: a page for every name of ``evalmix.__all__`` and the index."""
    sys.path.insert(0, str(ROOT / "src"))
    import evalmix

    pages: dict[str, str] = {}
    groups: dict[str, list[str]] = {}
    for name in evalmix.__all__:
        owner = _owner(name)
        target = f"evalmix.{name}" if owner == "module" else f"{owner}.{name}"
        pages[f"reference/{name}.md"] = (
            f"# evalmix.{name}\n\n::: {target}\n    options:\n      show_root_heading: false\n"
            f"      show_root_toc_entry: false\n")
        if owner == "module":
            key = "module"
        else:
            key = owner.removeprefix("evalmix.").split(".")[0]
            key = key if key in GROUPS else "core"
        groups.setdefault(key, []).append(name)
    lines = ["# API reference", "",
             "Every public name of `evalmix` (`evalmix.__all__`), one page each, grouped by the module that "
             "owns it. The guides (left) explain when to use each and the R function it matches.", ""]
    for key, heading in GROUPS.items():
        if key in groups:
            lines += [f"## {heading}", "", " · ".join(f"[`{n}`]({n}.md)" for n in sorted(groups[key])), ""]
    pages["reference/index.md"] = "\n".join(lines)
    return pages


def on_config(config: Any) -> Any:
    # the reference pages join the nav under "API reference", after its index, in name order
    pages = sorted(p for p in reference_pages() if p != "reference/index.md")
    for i, entry in enumerate(config["nav"]):
        if isinstance(entry, dict) and "API reference" in entry:
            config["nav"][i] = {"API reference": ["reference/index.md",
                                                  *({p.removeprefix("reference/").removesuffix(".md"): p}
                                                    for p in pages)]}
    return config


def on_files(files: Any, config: Any) -> Any:
    from mkdocs.structure.files import File

    for path, text in reference_pages().items():
        files.append(File.generated(config, path, content=text))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    # a link that leaves docs/ (../notebooks/scores.ipynb) goes to the repository's file
    depth = page.file.src_uri.count("/")
    up = "\\.\\./" * (depth + 1)
    return re.sub(rf"\]\({up}([^)]+)\)", lambda m: f"]({REPO}/{m.group(1)})", markdown)
