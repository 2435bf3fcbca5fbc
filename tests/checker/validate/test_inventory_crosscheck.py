"""`hivedlab validate` given a HiveD config and the group's inventory checks the config's nodes against the workers;
a VC too many is named, with the fix."""

from __future__ import annotations

from tests.support.paths import ROOT

TWO_VC = (ROOT / "configs" / "hived" / "two-vc.yaml").read_text(encoding="utf-8")
EXAMPLE = str(ROOT / "configs" / "group.example.yaml")


def test_an_extra_vc_is_named_with_the_fix(cli, tmp_path):
    config = tmp_path / "extra.yaml"
    config.write_text(TWO_VC + "  vc2:\n    virtualCells:\n    - cellType: GPU-D-NODE-POOL.GPU-D-NODE\n"
                      "      cellNumber: 1\n", encoding="utf-8")
    result = cli("validate", str(config))
    assert result.code == 1
    (row,) = [line for line in result.out.splitlines() if "(/virtualClusters/vc2)" in line]
    assert "VCs vc1, vc2 together ask for 2 cells of chain GPU-D-NODE-POOL, which has 1" in row
    assert "remove vc2" in row and row.startswith(f"{config}:{TWO_VC.count(chr(10)) + 1}:")


def test_a_misspelt_node_is_caught_with_the_groups_inventory(cli, tmp_path):
    config = tmp_path / "typo.yaml"
    config.write_text(TWO_VC.replace("hostname-carol", "hostname-caro"), encoding="utf-8")
    assert cli("validate", str(config)).code == 0  # alone, HiveD accepts it
    for args in ((EXAMPLE, str(config)), (str(config), "--inventory", EXAMPLE)):
        result = cli("validate", *args)
        assert result.code == 1
        (row,) = [line for line in result.out.splitlines() if "hived-inventory" in line]
        assert "node hostname-caro is not a worker's hostname" in row and "did you mean hostname-carol?" in row
        assert "/physicalCluster/physicalCells/0/cellChildren/0/cellAddress" in row


def test_the_shipped_configs_match_the_example_group(cli):
    result = cli("validate", str(ROOT / "configs" / "hived" / "two-vc.yaml"), str(ROOT / "configs" / "hived" /
                                                                                  "one-vc.yaml"), EXAMPLE)
    assert result.code == 0 and "0 error(s), 0 warning(s)" in result.out


def test_a_bad_inventory_option_is_a_usage_error(cli, tmp_path):
    result = cli("validate", str(ROOT / "configs" / "hived" / "two-vc.yaml"), "--inventory", str(tmp_path / "no"))
    assert result.code == 2 and "--inventory" in result.err
