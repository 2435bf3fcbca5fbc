"""The report's CJK font: Noto Sans SC (SIL Open Font License 1.1), as the `pylopdf-fonts-zh-cn` package ships it.

The charts set their Chinese text in it through matplotlib (registered from the package's file, no system font needed),
and report.html declares it with `@font-face` pointing at a copy beside the report, so that the page shows and
prints Chinese text on a machine without a CJK font.
"""

from __future__ import annotations

import filecmp
from functools import cache
from pathlib import Path

import pylopdf_fonts_zh_cn

from hivedlab.basics.errors import HivedlabError
from hivedlab.basics.files import write_atomic
from hivedlab.rundir import FONTS

CJK_FAMILY = "Noto Sans SC"
LATIN_FAMILY = "DejaVu Sans"  # matplotlib's own font
REPORT_FONT = f"{FONTS}/NotoSansSC-Regular.otf"  # where report.html finds its copy, relative to the report


def cjk_font_file() -> Path:
    path = Path(pylopdf_fonts_zh_cn.sans_path())
    if not path.is_file():
        raise HivedlabError(f"the CJK font {path.name} of the pylopdf-fonts-zh-cn package is missing: reinstall "
                            "hivedlab")
    return path


@cache
def register_with_matplotlib() -> str:
    """Make the packaged CJK font known to matplotlib (first call only); returns its family name."""
    from matplotlib import font_manager

    font_manager.fontManager.addfont(str(cjk_font_file()))
    return CJK_FAMILY


def needs_cjk(text: str) -> bool:
    """Whether `text` has a character from the CJK blocks (radicals to the compatibility forms, fullwidth forms)."""
    return any("\u2e80" <= char <= "\ufaff" or "\uff00" <= char <= "\uffef" for char in text)


def copy_report_font(out_dir: Path) -> Path:
    """Put the font beside the report (once: an identical copy is left as it is); returns its path."""
    source, target = cjk_font_file(), out_dir / REPORT_FONT
    if not (target.is_file() and filecmp.cmp(source, target, shallow=False)):
        write_atomic(target, source.read_bytes())
    return target
