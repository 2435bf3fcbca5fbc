"""Every command reads the inventory through `load_group`: the same problem is said the same way (file, line, key,
text) by each, an error where the command cannot work without what is missing, a warning printed once elsewhere."""

from __future__ import annotations

import pytest

from tests.support.paths import ROOT

EXAMPLE = (ROOT / "configs" / "group.example.yaml").read_text(encoding="utf-8")
COMMANDS = ("run", "validate", "deploy-inputs", "doctor", "accounts", "scheduler-config")

# (id, what to change in the example, the line it is said at (text on that line), what is said, where it is an error)
CASES = [
    ("usr", ("    user: bob\n", "    usr: bob\n"), "usr: bob",
     "members[1].usr: unknown key 'usr': did you mean 'user'?", ()),
    ("hostnme", ("    hostname: hostname-carol\n", "    hostnme: hostname-carol\n"), "- name: Carol",
     "members[2].hostname: Carol is a worker and needs its hostname: it is the K8s node name in the HiveD config "
     "('hostnme' here: did you mean 'hostname'?)", ("run", "validate", "deploy-inputs", "doctor", "scheduler-config")),
    ("no-ip", ("    ip: 192.0.2.13\n", ""), "- name: Dan", "members[3].ip: Dan is a cluster machine and needs its ip",
     ("deploy-inputs", "doctor")),
    ("bad-ip", ("    ip: 192.0.2.13\n", "    ip: 10.0.1\n"), "ip: 10.0.1",
     "members[3].ip: ip '10.0.1' is not an IP address", COMMANDS),
]


def _argv(command: str, inventory: str, tmp_path) -> list[str]:
    return {
        "run": ["run", "gang", "--no-report", "--inventory", inventory, "--out", str(tmp_path / "run")],
        "validate": ["validate", inventory],
        "deploy-inputs": ["deploy-inputs", "--inventory", inventory, "--out", str(tmp_path / "inputs"),
                          "--lang", "en"],
        "doctor": ["doctor", "--inventory", inventory],
        "accounts": ["accounts", "--inventory", inventory, "--tokens-out", str(tmp_path / "tokens")],
        "scheduler-config": ["scheduler-config", "two-vc", "--inventory", inventory],
    }[command]


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize(("change", "at", "said", "error_in"), [case[1:] for case in CASES],
                         ids=[case[0] for case in CASES])
def test_each_command_says_each_problem_alike(cli, tmp_path, monkeypatch, quick_charts, command, change, at, said,
                                              error_in):
    monkeypatch.setenv("HIVEDLAB_SSH_PASSWORD", "paiopen")
    for name in ("HIVEDLAB_PAI_TOKEN_FILE", "HIVEDLAB_PAI_TOKEN", "HIVEDLAB_PAI_URL"):
        monkeypatch.delenv(name, raising=False)
    text = EXAMPLE.replace(*change)
    assert text != EXAMPLE
    inventory = tmp_path / "group.yaml"
    inventory.write_text(text, encoding="utf-8")
    line = next(n for n, row in enumerate(text.splitlines(), 1) if at in row)
    result = cli(*_argv(command, str(inventory), tmp_path))
    output = result.out + result.err
    where = f"{inventory}:{line}"
    message = said.split(": ", 1)[1] if command == "validate" else said  # validate names the key by its pointer
    assert f"{where}" in output and message in output, output
    if command in error_in:
        assert result.code != 0
        assert any("error" in row and message in row for row in output.splitlines()), output
    else:
        assert output.count(message) == 1  # a warning, printed once
        assert any("warning" in row and message in row for row in output.splitlines()), output
