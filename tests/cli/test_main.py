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
