"""report.html as a browser shows and prints it: Debian's headless chromium, print media at A4's printable width.

The browser checks are skipped only where chromium is not installed; .ci/run installs it, so CI always runs them."""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hivedlab.checker.report.build import build_report
from hivedlab.checker.report.fonts import CJK_FAMILY, REPORT_FONT, cjk_font_file
from hivedlab.cli.main import main
from tests.support.chromium import A4_PRINTABLE_PX, Browser, chromium_binary
from tests.support.paths import FIXTURES

CHROMIUM = chromium_binary()
needs_chromium = pytest.mark.skipif(CHROMIUM is None,
                                    reason="Debian's chromium is not installed (.ci/run installs it)")

PROBE = """(async () => {
  await document.fonts.ready;
  const faces = await document.fonts.load('16px "FAMILY"', '实验报告 Lab report').catch(() => []);
  const images = [...document.images];
  await Promise.all(images.map(image => image.decode().catch(() => null)));
  const root = document.documentElement;
  const wide = [...document.body.querySelectorAll('*')]
    .filter(element => element.getBoundingClientRect().right > root.clientWidth + 1);
  return {
    declared: [...document.fonts].map(face => [face.family.replace(/"/g, ''), face.status]),
    loaded: faces.map(face => face.family.replace(/"/g, '')),
    bodyFont: getComputedStyle(document.body).fontFamily,
    scrollWidth: root.scrollWidth, clientWidth: root.clientWidth,
    wide: wide.slice(0, 10).map(element => element.tagName.toLowerCase()),
    images: images.map(image => [image.getAttribute('src'), image.naturalWidth]),
    charts: [...document.querySelectorAll('figure.chart')].map(figure => [
      figure.querySelector('svg').getBoundingClientRect().width, getComputedStyle(figure).breakInside]),
    page: [...document.styleSheets].flatMap(sheet => [...sheet.cssRules])
      .filter(rule => rule instanceof CSSPageRule).map(rule => rule.style.getPropertyValue('size')),
  };
})()""".replace("FAMILY", CJK_FAMILY)


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fixture run with a contrast run (its charts sit side by side in a table), reported in both languages."""
    run = tmp_path_factory.mktemp("print") / "run"
    shutil.copytree(FIXTURES / "report" / "run-sim", run)
    assert main(["run", "gang", "--scheduler", "default", "--out", str(run), "--no-report"]) == 0
    build_report(run, "zh")
    build_report(run, "en", out_dir=run / "en")
    return run


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    assert CHROMIUM is not None
    opened = Browser(CHROMIUM)
    yield opened
    opened.close()


def _printed(browser: Browser, page: Path) -> dict[str, Any]:
    browser.open_printed(page)
    measured: dict[str, Any] = browser.evaluate(PROBE)
    return measured


def test_the_page_declares_its_font_beside_it_and_its_print_rules(run: Path) -> None:
    html = (run / "report.html").read_text(encoding="utf-8")
    font_face = re.search(r"@font-face \{[^}]*\}", html)
    assert font_face and f'url("{REPORT_FONT}")' in font_face.group(0) and CJK_FAMILY in font_face.group(0)
    assert (run / REPORT_FONT).read_bytes() == cjk_font_file().read_bytes()
    assert re.search(rf'code, pre \{{ font-family: [^;]*"{CJK_FAMILY}"', html)  # Chinese in code has its font too
    assert "@page { size: A4" in html and re.search(r"figure\.chart[^{]*\{[^}]*break-inside: avoid", html)
    before = (run / REPORT_FONT).stat().st_mtime_ns
    build_report(run, "zh")
    assert (run / REPORT_FONT).stat().st_mtime_ns == before  # an identical copy is left as it is


@needs_chromium
@pytest.mark.parametrize("where", ["", "en"])
def test_the_report_prints_on_a4_with_its_cjk_font_and_every_chart(run: Path, browser: Browser, where: str) -> None:
    folder = run / where if where else run
    measured = _printed(browser, folder / "report.html")
    assert (folder / REPORT_FONT).is_file()
    assert [CJK_FAMILY, "loaded"] in measured["declared"] and measured["loaded"] == [CJK_FAMILY]
    assert measured["bodyFont"].startswith(f'"{CJK_FAMILY}"')
    assert [size.lower() for size in measured["page"]] == ["a4"]
    assert measured["clientWidth"] == A4_PRINTABLE_PX
    assert measured["scrollWidth"] <= measured["clientWidth"] and measured["wide"] == []
    assert all(width > 0 for _, width in measured["images"])
    assert len(measured["charts"]) == 5 + 1  # the five experiments' and the contrast run's
    assert all(0 < width <= A4_PRINTABLE_PX and rule == "avoid" for width, rule in measured["charts"])


@needs_chromium
def test_a_page_whose_font_is_missing_is_caught(run: Path, browser: Browser, tmp_path: Path) -> None:
    """The probe itself: a report without its font beside it, and with a table wider than A4, fails the checks."""
    page = tmp_path / "report.html"
    html = (run / "report.html").read_text(encoding="utf-8")
    page.write_text(html.replace("<body>", '<body><table><tr><td style="white-space: nowrap">'
                                 + "x" * 400 + "</td></tr></table>", 1), encoding="utf-8")
    measured = _printed(browser, page)
    assert measured["loaded"] == [] and [CJK_FAMILY, "error"] in measured["declared"]
    assert measured["scrollWidth"] > measured["clientWidth"] and "td" in measured["wide"]


FONT_NOTE = """(async () => {
  await document.fonts.ready;
  for (let i = 0; i < 50 && !document.fonts.check('1em "FAMILY"', "中"); i++) {
    await new Promise(done => setTimeout(done, 20));
  }
  await new Promise(done => setTimeout(done, 50));
  const note = document.getElementById("font-missing");
  return {shown: !note.hidden && note.getBoundingClientRect().height > 0, text: note.innerText};
})()""".replace("FAMILY", CJK_FAMILY)


@needs_chromium
def test_the_page_says_so_when_its_font_is_missing(run: Path, browser: Browser, tmp_path: Path) -> None:
    browser.open_printed(run / "report.html")
    assert browser.evaluate(FONT_NOTE)["shown"] is False  # in its run folder, beside fonts/: nothing to say
    alone = tmp_path / "report.html"
    shutil.copy(run / "report.html", alone)  # copied without its fonts/ folder
    browser.open_printed(alone)
    note = browser.evaluate(FONT_NOTE)
    assert note["shown"] is True
    assert "copy the fonts/ folder together with report.html" in note["text"]
    assert f"{REPORT_FONT}" in note["text"] and "请把 fonts/ 文件夹与 report.html" in note["text"]
