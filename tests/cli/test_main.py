from hivedlab.cli.main import COMMANDS


def test_top_level_help_lists_every_command(cli):
    result = cli("--help")
    assert result.code == 0
    for name in COMMANDS:
        assert f"  {name}" in result.out


def test_no_command_is_a_usage_error(cli):
    result = cli()
    assert result.code == 2


def test_unknown_command_suggests_the_closest(cli):
    result = cli("valdiate")
    assert result.code == 2
    assert "did you mean 'validate'" in result.err


def test_version(cli):
    result = cli("--version")
    assert result.code == 0 and result.out.startswith("hivedlab ")


def test_every_command_module_is_listed_and_has_the_command_interface():
    """The command table is read through importlib, which the import-layer contract cannot see: this test is its
    check that the table and the modules agree."""
    import importlib
    import pkgutil

    import hivedlab.cli.commands as commands

    modules = {info.name for info in pkgutil.iter_modules(commands.__path__)}
    assert modules == {entry.module for entry in COMMANDS.values()}
    for name, entry in COMMANDS.items():
        module = importlib.import_module(f"hivedlab.cli.commands.{entry.module}")
        parser = module.build_parser(f"hivedlab {name}")
        assert parser.prog == f"hivedlab {name}" and callable(module.run)


def test_a_reader_that_leaves_the_pipe_gets_no_traceback():
    """`hivedlab --help | head -0`: the reader has gone before the first line; the command stops quietly."""
    import os
    import subprocess
    import sys

    read_end, write_end = os.pipe()
    os.close(read_end)  # nobody will read: the first write fails with EPIPE
    try:
        done = subprocess.run([sys.executable, "-c", "import sys; from hivedlab.cli.main import main; "
                               "sys.exit(main(['--help']))"], stdout=write_end, stderr=subprocess.PIPE, timeout=60)
    finally:
        os.close(write_end)
    err = done.stderr.decode()
    assert done.returncode == 141 and "Traceback" not in err and "BrokenPipe" not in err, err
