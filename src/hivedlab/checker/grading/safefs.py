"""Reading a group's folder without trusting it.

A submission is data from students: a symlink may point at a TA's home, a "log" may be a FIFO that blocks
forever or a 20 GB file. Every read goes through `GroupFolder`, which refuses paths that resolve outside the
group folder, anything that is not a regular file, and files over a size cap — with a reason, never an exception
the batch has to catch by accident.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

DEFAULT_MAX_BYTES = 64 * 1024 * 1024  # an evidence log of a real run is a few MB; 64 MB is generous
DEFAULT_MAX_FILES = 5000  # a run directory holds a few dozen files; more is reported as a folder too big
MAX_LISTED = 200_000  # entries looked at in one folder: names only, so a flooded folder cannot hide `out/`


class UnsafeFile(Exception):
    """A file the grader refuses to read; `reason` is a short English sentence, `code` a stable id."""

    def __init__(self, rel: str, code: str, reason: str) -> None:
        super().__init__(f"{rel}: {reason}")
        self.rel = rel
        self.code = code
        self.reason = reason


@dataclass(frozen=True)
class GroupFolder:
    """A group's folder; `rel` paths are relative to `root` and use '/'."""

    root: Path
    max_bytes: int = DEFAULT_MAX_BYTES

    @cached_property
    def real_root(self) -> Path:
        """The folder itself, resolved once: a group's folder does not move while it is graded."""
        return Path(os.path.realpath(self.root))

    @cached_property
    def _root_prefix(self) -> str:
        return os.path.join(str(self.real_root), "")

    def _inside(self, real: str) -> bool:
        return real == str(self.real_root) or real.startswith(self._root_prefix)

    @cached_property
    def _links(self) -> dict[str, bool]:
        """Whether each path looked at under the resolved folder is a symlink (a group's files are read in one go)."""
        return {}

    def _real(self, rel: str) -> str:
        """`os.path.realpath(root/rel)`: `rel`'s parts walked from the resolved folder, one lstat each (remembered);
        a symlink among them, or a '.', is resolved by os.path.realpath itself."""
        parts = rel.split("/")
        if "." not in parts:
            path = str(self.real_root)
            for part in parts:
                path = os.path.join(path, part)
                linked = self._links.get(path)
                if linked is None:
                    try:
                        linked = stat.S_ISLNK(os.lstat(path).st_mode)
                    except OSError:  # missing, or below a file: realpath keeps such a part as it is
                        linked = False
                    self._links[path] = linked
                if linked:
                    break
            else:
                return path
        return os.path.realpath(os.path.join(self.root, rel))

    def _resolve(self, rel: str) -> Path:
        if not rel or rel.startswith("/") or "\\" in rel or any(part in ("..", "") for part in rel.split("/")):
            raise UnsafeFile(rel, "bad-path", "not a plain relative path")
        real = self._real(rel)
        if not self._inside(real):
            raise UnsafeFile(rel, "symlink-outside", "a symlink that leads outside the group folder")
        return Path(real)

    def exists(self, rel: str) -> bool:
        """Whether `rel` exists at all (a dangling or escaping symlink counts: the grader reports it)."""
        return os.path.lexists(self.root / rel)

    def is_dir(self, rel: str) -> bool:
        try:
            real = self._resolve(rel)
        except UnsafeFile:
            return False
        return real.is_dir()

    def read_bytes(self, rel: str, max_bytes: int | None = None) -> bytes:
        """The file's bytes; raises UnsafeFile for an escaping symlink, a non-regular file or an oversized file."""
        cap = self.max_bytes if max_bytes is None else max_bytes
        real = self._resolve(rel)
        flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
        try:
            fd = os.open(real, flags)
        except FileNotFoundError:
            raise UnsafeFile(rel, "missing", "missing") from None
        except OSError as exc:
            raise UnsafeFile(rel, "unreadable", f"cannot be read ({exc.strerror or exc})") from None
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise UnsafeFile(rel, "not-a-file", "not a regular file")
            if info.st_size > cap:
                raise UnsafeFile(rel, "too-large",
                                 f"larger than the {cap // (1024 * 1024)} MB cap ({info.st_size} bytes)")
            chunks = []
            remaining = cap + 1
            while remaining > 0:
                chunk = os.read(fd, min(remaining, 1 << 20))
                if not chunk:
                    break
                chunks.append(chunk)
                remaining -= len(chunk)
            data = b"".join(chunks)
            if len(data) > cap:  # grew while we read it
                raise UnsafeFile(rel, "too-large", f"larger than the {cap // (1024 * 1024)} MB cap")
            return data
        finally:
            os.close(fd)

    def checked_path(self, rel: str, max_bytes: int | None = None) -> Path:
        """The resolved path of a regular file inside the folder under the size cap, for a reader that opens it
        itself (the evidence reader streams); raises UnsafeFile like `read_bytes`."""
        cap = self.max_bytes if max_bytes is None else max_bytes
        real = self._resolve(rel)
        try:
            info = os.stat(real)
        except FileNotFoundError:
            raise UnsafeFile(rel, "missing", "missing") from None
        except OSError as exc:
            raise UnsafeFile(rel, "unreadable", f"cannot be read ({exc.strerror or exc})") from None
        if not stat.S_ISREG(info.st_mode):
            raise UnsafeFile(rel, "not-a-file", "not a regular file")
        if info.st_size > cap:
            raise UnsafeFile(rel, "too-large", f"larger than the {cap // (1024 * 1024)} MB cap ({info.st_size} bytes)")
        return real

    def read_text(self, rel: str, max_bytes: int | None = None) -> str:
        data = self.read_bytes(rel, max_bytes)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise UnsafeFile(rel, "not-utf8", f"not UTF-8 text (byte {exc.start})") from None

    def list_dir(self, rel: str = "") -> list[str]:
        """Sorted entry names of a folder inside the group folder ([] when it is missing or refused); at most
        MAX_LISTED entries are looked at (in on-disk order), which `overfull` reports."""
        try:
            real = self._resolve(rel) if rel else self.real_root
        except UnsafeFile:
            return []
        try:
            with os.scandir(real) as entries:
                names = []
                for count, entry in enumerate(entries):
                    if count >= MAX_LISTED:
                        break
                    names.append(entry.name)
        except OSError:
            return []
        return sorted(names)

    def overfull(self, rel: str = "", limit: int = DEFAULT_MAX_FILES) -> int | None:
        """How many entries the folder holds (up to MAX_LISTED) when that is more than `limit`, else None."""
        count = len(self.list_dir(rel))
        return count if count > limit else None

    def escaping_symlinks(self, max_entries: int = DEFAULT_MAX_FILES) -> list[str]:
        """Relative paths of symlinks anywhere in the folder that lead outside it (not followed)."""
        found: list[str] = []
        seen = 0
        for dirpath, dirnames, filenames in os.walk(self.root, followlinks=False):
            for name in sorted(dirnames + filenames):
                seen += 1
                if seen > max_entries:
                    return found
                full = os.path.join(dirpath, name)
                if os.path.islink(full) and not self._inside(os.path.realpath(full)):
                    found.append(Path(full).relative_to(self.root).as_posix())
        return sorted(found)
