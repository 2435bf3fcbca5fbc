import os
import stat

import pytest

from hivedlab.basics.files import write_atomic


def test_write_atomic_writes_whole_file_readable_by_others(tmp_path):
    target = tmp_path / "sub" / "report.md"
    old = os.umask(0o022)
    try:
        write_atomic(target, "hello\n")
    finally:
        os.umask(old)
    assert target.read_text(encoding="utf-8") == "hello\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o644


def test_write_atomic_leaves_old_file_and_no_temp_on_failure(tmp_path):
    target = tmp_path / "report.md"
    target.write_text("old", encoding="utf-8")
    with pytest.raises(TypeError):
        write_atomic(target, 42)  # type: ignore[arg-type]
    assert target.read_text(encoding="utf-8") == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["report.md"]
