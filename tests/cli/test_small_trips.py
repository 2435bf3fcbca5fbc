"""Issue #38's small trips: the SSH password asked without echo, `python3` in every command a student copies,
.gitignore covering what the README's examples write, the pre-commit text agreeing with the hook, `make run`
writing the example group's run apart from a group's own."""

from __future__ import annotations

import fnmatch
import getpass
import io
import re

import yaml

from tests.support.paths import ROOT

README = (ROOT / "README.md").read_text(encoding="utf-8")
EXAMPLE = str(ROOT / "configs" / "group.example.yaml")


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_ssh_password_is_asked_without_echo(cli, tmp_path, monkeypatch):
    monkeypatch.delenv("HIVEDLAB_SSH_PASSWORD", raising=False)
    asked = []
    monkeypatch.setattr(getpass, "getpass", lambda prompt: asked.append(prompt) or "typed-pw")
    monkeypatch.setattr("sys.stdin", _Terminal())
    result = cli("deploy-inputs", "--inventory", EXAMPLE, "--out", str(tmp_path / "d"))
    assert result.code == 0, result.err
    assert asked == ["SSH password of the Linux user (manual step 1.4) / Linux 用户的 SSH 密码: "]
    assert yaml.safe_load((tmp_path / "d" / "config.yaml").read_text())["password"] == "typed-pw"
    assert "typed-pw" not in result.out + result.err


def test_the_ssh_password_from_a_private_file(cli, tmp_path, monkeypatch):
    monkeypatch.delenv("HIVEDLAB_SSH_PASSWORD", raising=False)
    secret = tmp_path / "home" / "ssh-password"
    secret.parent.mkdir()
    secret.write_text("from-file\n", encoding="utf-8")
    secret.chmod(0o600)
    result = cli("deploy-inputs", "--inventory", EXAMPLE, "--out", str(tmp_path / "d"), "--password-file", str(secret))
    assert result.code == 0, result.err
    assert yaml.safe_load((tmp_path / "d" / "config.yaml").read_text())["password"] == "from-file"


def test_without_a_terminal_the_missing_password_says_where_to_put_it(cli, tmp_path, monkeypatch):
    monkeypatch.delenv("HIVEDLAB_SSH_PASSWORD", raising=False)
    result = cli("deploy-inputs", "--inventory", EXAMPLE, "--out", str(tmp_path / "d"))
    assert result.code == 2 and "HIVEDLAB_SSH_PASSWORD" in result.err and "--password-file" in result.err


def _copied_commands(text: str = README) -> list[str]:
    """Every command a student copies from the README (or another page): the lines of its code blocks and its code
    spans."""
    found, prose, inside = [], [], False
    for line in text.splitlines():
        if line.strip().startswith("```"):
            inside = not inside
        elif inside:
            found.append(line.strip())
        else:
            prose.append(line)
    return found + re.findall(r"`([^`\n]+)`", "\n".join(prose))


def test_every_copied_command_runs_python3():
    commands = _copied_commands()
    assert any(c.startswith("python3 labs/0") for c in commands)
    assert [c for c in commands if re.search(r"(^|\s)python\s+\S", c)] == []
    scripts = [path.read_text(encoding="utf-8") for path in (ROOT / "labs").glob("*.py")]
    assert all(not re.search(r"(^|[\s`])python labs/", text) for text in scripts)


def test_no_password_on_a_command_line_in_the_readme():
    assert [c for c in _copied_commands() if re.search(r"--password(\s|=)|PASSWORD=\S", c)] == []


def _ignored(path: str, patterns: list[str]) -> bool:
    top = "/" + path.strip("/").split("/")[0] + "/"
    return any(fnmatch.fnmatch(top, p if p.startswith("/") else "/" + p) for p in patterns)


def test_gitignore_covers_every_folder_the_readme_writes():
    patterns = [line.strip() for line in (ROOT / ".gitignore").read_text().splitlines()
                if line.strip() and not line.startswith("#")]
    pages = [README] + [page.read_text(encoding="utf-8") for page in sorted((ROOT / "docs").glob("*.md"))
                        if page.name != "changelog.md"]  # the README links the rest of its commands into docs/
    written = {m for page in pages for c in _copied_commands(page) for m in re.findall(r"--out\s+([\w./-]+)", c)
               if not m.startswith(("~", "/", "$")) and not m.isupper()}  # DIR, PATH: placeholders
    written |= {"env/", "out/", "out-example/"}  # 00_check_env.py's records, `run`'s default, `make run`'s run
    assert {"out-k8s", "grades/"} <= written
    assert sorted(w for w in written if not _ignored(w, patterns)) == []


def test_the_pre_commit_text_agrees_with_the_hook():
    (hook,) = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    scripts = re.findall(r"^(\S+) = ", pyproject.split("[project.scripts]")[1].split("\n[")[0], flags=re.MULTILINE)
    assert hook["language"] == "python" and hook["entry"].split()[0] in scripts  # pre-commit installs it
    said = (ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8")
    assert "nothing needs to be installed first" in said
    page = (ROOT / "docs" / "course-ci.md").read_text(encoding="utf-8")  # where the README's course-CI line leads
    section = page.split("## pre-commit", 1)[1].split("\n## ", 1)[0]
    assert "nothing needs to be installed first" in section and "PATH" not in section


def test_make_run_writes_the_example_groups_run_apart():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    out = re.search(r"^OUT\s+\?=\s+(\S+)", makefile, flags=re.MULTILINE).group(1)
    run = re.search(r"^run:.*\n\t(.*)$", makefile, flags=re.MULTILINE).group(1)
    assert "--inventory configs/group.example.yaml" in run and "--out $(OUT)" in run and out != "out"
    assert sum("make run    # " in line and f"{out}/report.md" in line for line in README.splitlines()) == 2
