"""Open an HTML page in headless Chromium (Debian's ``chromium``) as a reader would, and report what
went wrong: images that did not decode, console messages, and a screenshot to check for a blank page.

Needs the ``chromium`` package (``apt-get install chromium``); ``EVALMIX_CHROMIUM`` may name
another binary.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np

# After the load event: count the images and those that did not decode, and write both into the DOM
# so that --dump-dom shows them. It logs nothing, so any console message comes from the page.
_PROBE = """<script>
window.addEventListener("load", function () {
  var imgs = Array.prototype.slice.call(document.images);
  var broken = imgs.filter(function (i) { return !(i.complete && i.naturalWidth > 0); }).length;
  document.body.setAttribute("data-probe-images", String(imgs.length));
  document.body.setAttribute("data-probe-broken", String(broken));
});
</script>"""


def chromium_binary() -> str | None:
    """Path of the Chromium binary, or None."""
    return os.environ.get("EVALMIX_CHROMIUM") or shutil.which("chromium") or (
        "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None)


@dataclass(frozen=True)
class PageCheck:
    n_images: int
    n_broken: int
    console: list[str]
    screenshot: np.ndarray  # H x W x 3 floats in [0, 1]

    @property
    def dominant_share(self) -> float:
        """Share of the screenshot's pixels that have its most common colour (1.0: blank)."""
        px = np.round(self.screenshot[..., :3] * 255).astype(np.uint8).reshape(-1, 3)
        _, counts = np.unique(px, axis=0, return_counts=True)
        return float(counts.max() / counts.sum())


def _run(binary: str, args: list[str], url: str, profile: Path) -> subprocess.CompletedProcess:
    cmd = [binary, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
           "--no-first-run", "--disable-extensions", f"--user-data-dir={profile}",
           "--enable-logging=stderr", "--v=0", "--virtual-time-budget=5000", *args, url]
    env = dict(os.environ, HOME=str(profile))
    return subprocess.run(cmd, capture_output=True, text=True, timeout=180, env=env)


def check_page(html: Path, workdir: Path, *, width: int = 1280, height: int = 2000) -> PageCheck:
    """Render ``html`` in headless Chromium: broken images, console messages and a screenshot."""
    import matplotlib.image as mpimg

    binary = chromium_binary()
    if binary is None:
        raise RuntimeError("Chromium not found: install Debian's chromium package (apt-get install "
                           "chromium) or set EVALMIX_CHROMIUM")
    workdir.mkdir(parents=True, exist_ok=True)
    page = workdir / "probed.html"
    text = html.read_text(encoding="utf-8")
    page.write_text(text.replace("</body>", _PROBE + "</body>") if "</body>" in text else text + _PROBE,
                    encoding="utf-8")
    url = page.resolve().as_uri()
    dom = _run(binary, ["--dump-dom"], url, workdir / "profile-dom")
    if dom.returncode != 0:
        raise RuntimeError(f"chromium --dump-dom failed ({dom.returncode}): {dom.stderr[-2000:]}")
    body = re.search(r"<body[^>]*>", dom.stdout)
    attrs = dict(re.findall(r'data-probe-(\w+)="(\d+)"', body.group(0) if body else ""))
    if "images" not in attrs:
        raise RuntimeError("the page's load event never ran (no probe result in the DOM)")
    console = [line for line in dom.stderr.splitlines() if re.search(r":CONSOLE[:(]", line)]
    shot = workdir / "screenshot.png"
    res = _run(binary, [f"--screenshot={shot}", f"--window-size={width},{height}"], url,
               workdir / "profile-shot")
    if res.returncode != 0 or not shot.exists():
        raise RuntimeError(f"chromium --screenshot failed ({res.returncode}): {res.stderr[-2000:]}")
    console += [line for line in res.stderr.splitlines() if re.search(r":CONSOLE[:(]", line)]
    return PageCheck(n_images=int(attrs["images"]), n_broken=int(attrs["broken"]), console=console,
                     screenshot=mpimg.imread(shot))
