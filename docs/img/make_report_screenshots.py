"""Screenshots of the report page for docs/report.md (headless Chromium, Debian's ``chromium``).

Writes the AI4Math report (or, without ../shared, the bundled example's) to a temporary folder,
renders the whole page once, and crops three views: the top of the page, the odds-ratio section
and the table of corrected procedures.  Run from the repository root:

    python docs/img/make_report_screenshots.py
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))

from PIL import Image  # noqa: E402  (pillow comes with matplotlib)

from evalmix.cli import main  # noqa: E402

WIDTH = 1100
SHOTS = {  # file -> (first section id, section id where the crop ends, or None for a fixed height)
    "report_top.png": ("", "accuracy"),
    "report_odds_ratios.png": ("odds_ratios", "slice_means"),
    "report_corrections.png": ("corrections", "fits"),
}
_PROBE = """<script>
window.addEventListener("load", function () {
  var pos = {};
  document.querySelectorAll("section").forEach(function (s) {
    pos[s.id] = Math.round(s.getBoundingClientRect().top + window.scrollY); });
  pos["_end"] = document.documentElement.scrollHeight;
  document.body.setAttribute("data-probe", JSON.stringify(pos));
});
</script>"""


def chromium(args: list[str], url: str, profile: Path) -> str:
    cmd = ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
           f"--user-data-dir={profile}", "--virtual-time-budget=5000", *args, url]
    return subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=300).stdout


def main_() -> None:
    shared = ROOT.parent / "shared" / "data" / "ai4math" / "ai4math_runs.csv"
    data = shared if shared.exists() else ROOT / "data" / "example_runs.csv"
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        assert main(["report", str(data), "-o", str(tmp / "out"), "--title", "AI4Math: repeated runs"]) == 0
        page = tmp / "out" / "probed.html"
        page.write_text((tmp / "out" / "index.html").read_text().replace("</body>", _PROBE + "</body>"))
        url = page.as_uri()
        dom = chromium(["--dump-dom", f"--window-size={WIDTH},1000"], url, tmp / "p1")
        pos = json.loads(re.search(r"data-probe=\"([^\"]+)\"", dom).group(1).replace("&quot;", '"'))
        full = tmp / "full.png"
        chromium([f"--screenshot={full}", f"--window-size={WIDTH},{pos['_end']}"], url, tmp / "p2")
        img = Image.open(full).convert("RGB")
        for name, (start, end) in SHOTS.items():
            top = max(pos.get(start, 0) - 10, 0)
            bottom = min(pos.get(end, top + 1400), top + 1400)
            crop = img.crop((0, top, WIDTH, bottom))
            crop = crop.resize((WIDTH * 3 // 4, (bottom - top) * 3 // 4), Image.LANCZOS)
            crop.quantize(colors=128).save(Path(__file__).parent / name, optimize=True)
            print(name, crop.size)


if __name__ == "__main__":
    main_()
