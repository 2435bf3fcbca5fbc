"""Unpack an LMS export (one .zip / .tar.gz / .tgz per group) into one folder per group, refusing what is unsafe.

An archive from a student may hold `../../.bashrc`, absolute paths, symlinks, device files or a zip bomb. Members
like that are skipped and reported; sizes and member counts are capped; nothing is written outside the group's
folder and nothing is executed. `scripts/grade_all.sh` calls `main([ARCHIVES_DIR, DEST_DIR])` for the TA.
"""

from __future__ import annotations

import json
import shutil
import sys
import tarfile
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO

from hivedlab.basics.files import write_atomic

MAX_TOTAL_BYTES = 512 * 1024 * 1024
MAX_MEMBERS = 20_000
REPORT_NAME = ".unpack-report.json"  # what was refused, per group; `hivedlab grade` puts it into grades.md
REPORT_MAX_BYTES = 16 * 1024 * 1024
SUFFIXES = (".zip", ".tar.gz", ".tgz", ".tar")


@dataclass(frozen=True)
class Unpacked:
    group: str
    written: int
    skipped: tuple[str, ...]  # "member: reason"
    error: str | None = None


def group_name(archive: Path) -> str | None:
    for suffix in SUFFIXES:
        if archive.name.lower().endswith(suffix):
            return archive.name[: -len(suffix)]
    return None


def _safe_member(name: str) -> PurePosixPath | None:
    path = PurePosixPath(name.replace("\\", "/"))
    if path.is_absolute() or not path.parts or any(part in ("..", "") for part in path.parts):
        return None
    if ":" in path.parts[0]:  # a Windows drive letter
        return None
    return path


def _members(archive: Path) -> Iterator[tuple[str, str, int, IO[bytes] | None]]:
    """(name, kind: file|dir|other, size, stream) of each member; streams only for regular files."""
    if archive.name.lower().endswith(".zip"):
        with zipfile.ZipFile(archive) as zf:
            for info in zf.infolist():
                mode = (info.external_attr >> 16) & 0o170000
                if info.is_dir():
                    yield info.filename, "dir", 0, None
                elif mode not in (0, 0o100000):  # symlink, device, fifo stored by a Unix zip
                    yield info.filename, "other", info.file_size, None
                else:
                    with zf.open(info) as stream:
                        yield info.filename, "file", info.file_size, stream
        return
    with tarfile.open(archive) as tf:
        for member in tf:
            if member.isdir():
                yield member.name, "dir", 0, None
            elif member.isreg():
                member_stream = tf.extractfile(member)
                yield member.name, "file", member.size, member_stream
            else:
                yield member.name, "other", member.size, None


def unpack_archive(archive: Path, dest: Path, max_total: int = MAX_TOTAL_BYTES,
                   max_members: int = MAX_MEMBERS) -> Unpacked:
    group = group_name(archive) or archive.stem
    target = dest / group
    skipped: list[str] = []
    written = total = 0
    try:
        target.mkdir(parents=True, exist_ok=False)
    except FileExistsError:
        return Unpacked(group, 0, (), f"{target} already exists")
    try:
        for count, (name, kind, size, stream) in enumerate(_members(archive)):
            if count >= max_members:
                skipped.append(f"(the rest): more than {max_members} members")
                break
            if kind == "dir" and name.replace("\\", "/").rstrip("/") == ".":
                continue  # a tar made with `tar -C DIR .` names the group folder itself first
            rel = _safe_member(name)
            if rel is None:
                skipped.append(f"{name}: path leaves the group folder")
                continue
            if kind == "other":
                skipped.append(f"{name}: not a regular file (symlink or device)")
                continue
            out = target.joinpath(*rel.parts)
            if kind == "dir":
                out.mkdir(parents=True, exist_ok=True)
                continue
            if total + size > max_total:
                skipped.append(f"{name}: over the {max_total // (1024 * 1024)} MB limit")
                continue
            out.parent.mkdir(parents=True, exist_ok=True)
            with out.open("wb") as handle:
                copied = _copy_capped(stream, handle, max_total - total)
            if copied < 0:
                out.unlink()
                skipped.append(f"{name}: over the {max_total // (1024 * 1024)} MB limit (size was misstated)")
                break
            total += copied
            written += 1
    except (OSError, zipfile.BadZipFile, tarfile.TarError, EOFError, ValueError) as exc:
        return Unpacked(group, written, tuple(skipped), f"cannot unpack {archive.name}: {exc}")
    return Unpacked(group, written, tuple(skipped))


def _copy_capped(stream: IO[bytes] | None, handle: IO[bytes], budget: int) -> int:
    """Copy at most `budget` bytes; -1 when the member holds more (a zip bomb lies about its size)."""
    if stream is None:
        return 0
    copied = 0
    while True:
        chunk = stream.read(1 << 20)
        if not chunk:
            return copied
        copied += len(chunk)
        if copied > budget:
            return -1
        handle.write(chunk)


def unpack_all(archives: Path, dest: Path) -> list[Unpacked]:
    results = []
    for archive in sorted(archives.iterdir()):
        if archive.name.startswith("."):
            continue
        if archive.is_file() and not archive.is_symlink() and group_name(archive):
            results.append(unpack_archive(archive, dest))
        elif archive.is_dir() and not archive.is_symlink() and not (dest / archive.name).exists():
            # symlinks kept as links: the grader refuses escaping ones
            shutil.copytree(archive, dest / archive.name, symlinks=True)
            results.append(Unpacked(archive.name, 0, ()))
    return results


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print("usage: unpack ARCHIVES_DIR DEST_DIR (scripts/grade_all.sh runs it)", file=sys.stderr)
        return 2
    source, dest = Path(args[0]), Path(args[1])
    if not source.is_dir():
        print(f"unpack: error: {source} is not a folder", file=sys.stderr)
        return 2
    dest.mkdir(parents=True, exist_ok=True)
    code = 0
    notes: list[dict[str, object]] = []
    for result in unpack_all(source, dest):
        note = f"{result.group}: {result.written} file(s)"
        if result.skipped:
            note += f", skipped {len(result.skipped)}: " + "; ".join(result.skipped[:5])
        if result.error:
            note += f" — {result.error}"
            code = 1
        print(note)
        notes.append({"group": result.group, "written": result.written, "skipped": list(result.skipped),
                      "error": result.error})
    write_atomic(dest / REPORT_NAME, json.dumps(notes, ensure_ascii=False, indent=1) + "\n")
    return code


def read_report(submissions: Path) -> dict[str, tuple[str, ...]]:
    """group -> what unpacking refused or failed on (`REPORT_NAME` in the submissions folder; {} without one)."""
    path = submissions / REPORT_NAME
    if path.is_symlink() or not path.is_file() or path.stat().st_size > REPORT_MAX_BYTES:
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return {}
    notes: dict[str, tuple[str, ...]] = {}
    for entry in data if isinstance(data, list) else []:
        if isinstance(entry, dict) and isinstance(entry.get("group"), str):
            lines = [str(item) for item in entry.get("skipped") or [] if isinstance(item, str)]
            if isinstance(entry.get("error"), str):
                lines.append(entry["error"])
            if lines:
                notes[entry["group"]] = tuple(lines)
    return notes

