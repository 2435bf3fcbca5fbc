"""Unpack an LMS export (one .zip / .tar.gz / .tgz / .tar or folder per group) into one folder per group, refusing
what is unsafe, and say what each entry was: a zip, a tar, a folder, or "not an archive: <why>", with its files.

An archive from a student may hold `../../.bashrc`, absolute paths, symlinks, device files or a zip bomb. Members
like that are skipped and reported; sizes and member counts are capped; nothing is written outside the group's
folder and nothing is executed. A file named like an archive that is not one (a broken zip) gets no group folder: the
grader lists it under "Needs a look" with why. `scripts/grade_all.sh` calls `main([ARCHIVES_DIR, DEST_DIR])`.
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


MAX_SHOWN = 12  # top-level entries named per export entry in what `main` prints


@dataclass(frozen=True)
class Unpacked:
    group: str
    written: int
    skipped: tuple[str, ...]  # "member: reason"
    error: str | None = None
    kind: str = ""  # zip | tar | folder | "not an archive: <why>"
    entry: str = ""  # the export entry's own name
    files: tuple[str, ...] = ()  # the files found in it, relative to the group folder

    def line(self) -> str:
        """What `main` prints for this entry: its kind and the files found in it."""
        if self.kind.startswith("not an archive"):
            graded = "not graded: needs a look" if self.error else "not a group: ignored"
            return f"{self.entry}: {self.kind} ({graded})"
        shown = summary(self.files)
        note = f"{self.entry}: {self.kind} -> {self.group}/, {len(self.files)} file(s)"
        note += f": {shown}" if shown else ""
        if self.skipped:
            note += f"; skipped {len(self.skipped)}: " + "; ".join(self.skipped[:5])
        return note + (f" — {self.error}" if self.error else "")


def summary(files: tuple[str, ...]) -> str:
    """The files found, by top-level entry: each file by name, each folder with how many files it holds."""
    counts: dict[str, int] = {}
    for file in files:
        head, sep, _ = file.partition("/")
        key = head + sep
        counts[key] = counts.get(key, 0) + 1
    parts = [key if not key.endswith("/") else f"{key} ({n})" for key, n in sorted(counts.items())]
    return ", ".join(parts[:MAX_SHOWN]) + (f", … {len(parts) - MAX_SHOWN} more" if len(parts) > MAX_SHOWN else "")


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


def archive_kind(archive: Path) -> str:
    """zip, tar, or "not an archive: <why>" (what the file holds, whatever its name says)."""
    if group_name(archive) is None:
        return f"not an archive: its name does not end in {', '.join(SUFFIXES)}"
    if archive.name.lower().endswith(".zip"):
        return "zip" if zipfile.is_zipfile(archive) else "not an archive: not a zip file"
    try:
        with tarfile.open(archive):
            return "tar"
    except (OSError, tarfile.TarError, EOFError) as exc:
        return f"not an archive: not a tar file ({exc})"


def unpack_archive(archive: Path, dest: Path, max_total: int = MAX_TOTAL_BYTES,
                   max_members: int = MAX_MEMBERS) -> Unpacked:
    group = group_name(archive) or archive.stem
    kind = archive_kind(archive)
    if kind.startswith("not an archive"):  # named like an archive: a group's submission that cannot be read
        return Unpacked(group, 0, (), kind if group_name(archive) else None, kind, archive.name)
    target = dest / group
    skipped: list[str] = []
    files: list[str] = []
    written = total = 0
    try:
        target.mkdir(parents=True, exist_ok=False)
    except FileExistsError:
        return Unpacked(group, 0, (), f"{target} already exists", kind, archive.name)
    try:
        for count, (name, member_kind, size, stream) in enumerate(_members(archive)):
            if count >= max_members:
                skipped.append(f"(the rest): more than {max_members} members")
                break
            if member_kind == "dir" and name.replace("\\", "/").rstrip("/") == ".":
                continue  # a tar made with `tar -C DIR .` names the group folder itself first
            rel = _safe_member(name)
            if rel is None:
                skipped.append(f"{name}: path leaves the group folder")
                continue
            if member_kind == "other":
                skipped.append(f"{name}: not a regular file (symlink or device)")
                continue
            out = target.joinpath(*rel.parts)
            if member_kind == "dir":
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
            files.append(rel.as_posix())
    except (OSError, zipfile.BadZipFile, tarfile.TarError, EOFError, ValueError) as exc:
        return Unpacked(group, written, tuple(skipped), f"cannot unpack {archive.name}: {exc}", kind, archive.name,
                        tuple(sorted(files)))
    return Unpacked(group, written, tuple(skipped), None, kind, archive.name, tuple(sorted(files)))


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


def _folder_files(folder: Path) -> tuple[str, ...]:
    """The files in a copied folder, relative to it (symlinks listed, not followed)."""
    return tuple(sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file() or p.is_symlink()))


def unpack_all(archives: Path, dest: Path) -> list[Unpacked]:
    """Every export entry, in name order: archives unpacked, folders copied, anything else said why not."""
    results = []
    for archive in sorted(archives.iterdir()):
        if archive.name.startswith("."):
            continue
        if archive.is_symlink():
            results.append(Unpacked(archive.name, 0, (), None, "not an archive: a symlink (not followed)",
                                    archive.name))
        elif archive.is_file():
            results.append(unpack_archive(archive, dest))
        elif archive.is_dir():
            target = dest / archive.name
            if target.exists():
                results.append(Unpacked(archive.name, 0, (), f"{target} already exists", "folder", archive.name))
                continue
            # symlinks inside kept as links: the grader refuses escaping ones
            shutil.copytree(archive, target, symlinks=True)
            files = _folder_files(target)
            results.append(Unpacked(archive.name, len(files), (), None, "folder", archive.name, files))
        else:
            results.append(Unpacked(archive.name, 0, (), None, "not an archive: not a regular file or folder",
                                    archive.name))
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
        print(result.line())
        code = 1 if result.error else code
        notes.append({"group": result.group, "entry": result.entry, "kind": result.kind, "written": result.written,
                      "skipped": list(result.skipped), "error": result.error})
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

