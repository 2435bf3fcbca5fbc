"""The repository documents itself: no file cites a document outside it, every `docs/` page it names exists, and
the pages that describe the house as it is (architecture, benchmarks, the README) name only files and modules it has.

Code, plans, schemas, fixtures and tests cite the pages under `docs/` (e.g. `docs/openpai-model.md#framework-names`);
those citations must resolve: the page exists and, where an anchor is given, the page has that heading.
"""

from __future__ import annotations

import glob
import importlib
import re
import subprocess
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
THIS = Path(__file__).resolve()
SKIP_DIRS = {".git", ".venv", "venv", "build", "out", "__pycache__", ".pytest_cache", ".ruff_cache", ".mypy_cache"}

# A Markdown file named anywhere (`x.md`, `dir/x.md`, `../dir/x.md`), not inside a URL: it must be one of the
# repository's, or one hivedlab writes (a name the package's code spells as a string, e.g. its report files).
MD_NAME = re.compile(r"(?<![\w/.:%-])((?:\.\./)*(?:[\w.-]+/)*[\w-][\w.-]*\.md)(?![\w.-])")
SECTION_NUMBER = re.compile(r"§ ?\d")  # a numbered section: the docs pages are cited by heading, not by number
WRITTEN_MD = re.compile(r"[\"']([\w.-]+\.md)[\"']")
DOCS_LINK = re.compile(r"(?<![\w/.-])docs/([A-Za-z0-9_.-]+\.md)(?:#([A-Za-z0-9_-]+))?")
MORE_ANCHORS = re.compile(r"(?:^|[\s,(])#([a-z0-9][a-z0-9_-]*)")
MD_LINK = re.compile(r"\]\(([^)\s:#]*\.md)?(?:#([^)\s]+))?\)")
# The pages that describe the house as it is (the history is in docs/changelog.md): every path and module they name
# exists. A path is a backticked name under one of the repository's folders (`<id>` and `{a,b}` stand for any name);
# a module is `hivedlab.x.y`, possibly followed by attributes (`hivedlab.cli.main.COMMANDS`).
HOUSE_PAGES = ("docs/architecture.md", "docs/benchmarks.md", "README.md")
REPO_PATH = re.compile(r"`((?:src|tests|docs|configs|jobs|labs|scripts|benchmarks|report_templates|\.ci)/[^`\s#…]*)`")
MODULE_NAME = re.compile(r"(?<![\w./-])hivedlab(?:\.\w+)+")


def tracked_files() -> list[Path]:
    try:
        done = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, timeout=60, check=True)
        names = [name for name in done.stdout.decode("utf-8").split("\0") if name]
        if names:
            return [ROOT / name for name in names]
    except (OSError, subprocess.SubprocessError):
        pass
    return [p for p in ROOT.rglob("*") if p.is_file() and not SKIP_DIRS.intersection(p.relative_to(ROOT).parts)]


@cache
def texts() -> dict[Path, str]:
    out: dict[Path, str] = {}
    for path in tracked_files():
        if path.resolve() == THIS or not path.is_file():
            continue
        try:
            out[path] = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
    return out


def slug(heading: str) -> str:
    """GitHub's anchor for a Markdown heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


@cache
def anchors(page: Path) -> frozenset[str]:
    seen: dict[str, int] = {}
    found: set[str] = set()
    fenced = False
    for line in page.read_text(encoding="utf-8").splitlines():
        found.update(re.findall(r"<a (?:id|name)=\"([^\"]+)\"", line))  # explicit HTML anchors
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        heading = re.match(r"#{1,6} (.+)", line)
        if fenced or not heading:
            continue
        base = slug(heading.group(1))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return frozenset(found)


def where(path: Path, text: str, pos: int) -> str:
    return f"{path.relative_to(ROOT)}:{text.count(chr(10), 0, pos) + 1}"


def _in_repository(path: Path, name: str, known: frozenset[str]) -> bool:
    """`name`, as written in `path`, is a file of the repository (from the file's folder or from the root) or a
    Markdown file the repository has or hivedlab writes by that name."""
    for base in (path.parent, ROOT):
        target = (base / name).resolve()
        if target.is_relative_to(ROOT) and target.exists():
            return True
    return not name.startswith("../") and Path(name).name in known


def known_markdown() -> frozenset[str]:
    files = texts()
    written = {name for path, text in files.items() if path.suffix == ".py" and ROOT / "tests" not in path.parents
               for name in WRITTEN_MD.findall(text)}
    return frozenset({p.name for p in files if p.suffix == ".md"} | written)


def test_no_file_cites_a_document_outside_the_repository():
    known = known_markdown()
    hits = [
        f"{where(path, text, m.start())}: {m.group(1)!r}"
        for path, text in texts().items()
        if ".md" in text
        for m in MD_NAME.finditer(text)
        if not _in_repository(path, m.group(1), known)
    ]
    hits += [f"{where(path, text, m.start())}: numbered section" for path, text in texts().items() if "§" in text
             for m in SECTION_NUMBER.finditer(text)]
    assert not hits, "cite the pages under docs/ instead:\n" + "\n".join(hits)


def test_every_cited_docs_page_and_anchor_exists():
    broken = []
    for path, text in texts().items():
        if "docs/" not in text:
            continue
        for line_no, line in enumerate(text.splitlines(), 1):
            for m in DOCS_LINK.finditer(line):
                page = ROOT / "docs" / m.group(1)
                if not page.is_file():
                    broken.append(f"{path.relative_to(ROOT)}:{line_no}: no page docs/{m.group(1)}")
                    continue
                wanted = [m.group(2)] if m.group(2) else []
                if m.group(2):  # "docs/x.md#a, #b": further anchors of the same page on that line
                    rest = line[m.end():]
                    stop = DOCS_LINK.search(rest)
                    wanted += MORE_ANCHORS.findall(rest[: stop.start()] if stop else rest)
                broken += [
                    f"{path.relative_to(ROOT)}:{line_no}: docs/{m.group(1)} has no heading #{anchor}"
                    for anchor in wanted
                    if anchor not in anchors(page)
                ]
    assert not broken, "\n".join(broken)


def test_links_between_markdown_pages_resolve():
    broken = []
    for path, text in texts().items():
        if path.suffix != ".md":
            continue
        for m in MD_LINK.finditer(text):
            target = (path.parent / m.group(1)).resolve() if m.group(1) else path
            if not target.is_file():
                broken.append(f"{where(path, text, m.start())}: no file {m.group(1)}")
            elif m.group(2) and target.suffix == ".md" and m.group(2) not in anchors(target):
                broken.append(f"{where(path, text, m.start())}: {target.name} has no heading #{m.group(2)}")
    assert not broken, "\n".join(broken)


@pytest.mark.parametrize(
    ("text", "outside"),
    [
        ("(spec/somewhere-else.md §1.5)", True),
        ("see experiments-elsewhere.md 4.2", True),
        ("`../beside/NOTES.md`", True),
        ("docs/hived-model.md#restart-and-recovery", False),
        ("the TA's grades.md", False),  # a file hivedlab writes
        ("https://example.org/guide/intro.md", False),
        ("[the architecture](architecture.md)", False),  # beside the citing page, docs/
    ],
)
def test_a_markdown_name_must_be_the_repositorys(text, outside):
    cited = [m.group(1) for m in MD_NAME.finditer(text)]
    missing = [name for name in cited if not _in_repository(ROOT / "docs" / "page.md", name, known_markdown())]
    assert bool(missing) is outside, cited


@pytest.mark.parametrize(
    ("heading", "anchor"),
    [
        ("HiveD's inspect API", "hiveds-inspect-api"),
        ("`schedule(pod, spec, suggested_nodes, phase)`", "schedulepod-spec-suggested_nodes-phase"),
        ("Framework, pods and events", "framework-pods-and-events"),
    ],
)
def test_slug(heading, anchor):
    assert slug(heading) == anchor


def _path_exists(name: str) -> bool:
    pattern = re.sub(r"<[^>]*>|\{[^}]*\}", "*", name)
    return bool(glob.glob(pattern, root_dir=ROOT))


@cache
def _package_data() -> dict[str, str]:
    """Package-data names that are folders of the checkout (`hivedlab.labs.experiments` → `labs/experiments`)."""
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")  # [tool.setuptools.package-dir]'s lines
    return dict(re.findall(r'^"(hivedlab\.[\w.]+)" = "([^"]+)"$', pyproject, re.M))


def _module_exists(dotted: str) -> bool:
    """`dotted` is a module of the package, or a module's attribute, or a package-data folder."""
    if dotted in _package_data():
        return (ROOT / _package_data()[dotted]).is_dir()
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found: object = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attribute in parts[cut:]:
            if not hasattr(found, attribute):
                return False
            found = getattr(found, attribute)
        return True
    return False


@pytest.mark.parametrize("page", HOUSE_PAGES)
def test_a_house_page_names_only_files_and_modules_that_exist(page):
    text = (ROOT / page).read_text(encoding="utf-8")
    stale = [f"{where(ROOT / page, text, m.start())}: no file {m.group(1)}" for m in REPO_PATH.finditer(text)
             if not _path_exists(m.group(1).rstrip(".,:;"))]
    stale += [f"{where(ROOT / page, text, m.start())}: no module or name {m.group(0)}"
              for m in MODULE_NAME.finditer(text) if not _module_exists(m.group(0))]
    assert not stale, "names the moves made stale (docs/changelog.md has where they went):\n" + "\n".join(stale)


@pytest.mark.parametrize(
    ("name", "exists"),
    [
        ("hivedlab.cli.main.COMMANDS", True),
        ("hivedlab.labs.experiments", True),
        ("hivedlab.group.inventory", False),
        ("hivedlab.cli.main.NO_SUCH_TABLE", False),
    ],
)
def test_a_module_name_is_checked_down_to_its_attribute(name, exists):
    assert _module_exists(name) is exists


def test_a_path_may_stand_for_many_files():
    assert _path_exists("labs/experiments/<id>.yaml") and _path_exists("src/hivedlab/{cli,runner}/__init__.py")
    assert not _path_exists("src/hivedlab/checker/plans.py")


def _table_rows(page: str, heading: str) -> list[str]:
    section = page.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]
    return [line for line in section.splitlines() if line.startswith("| `")]


@pytest.mark.parametrize("heading", ["What each benchmark measures", "Latest figures"])
def test_every_benchmark_has_one_row_in_each_table_of_its_page(heading):
    rows = _table_rows((ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8"), heading)
    for script in sorted((ROOT / "benchmarks").glob("bench_*.py")):
        assert sum(row.startswith(f"| `{script.name}`") for row in rows) == 1, f"{heading}: one row for {script.name}"
