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
