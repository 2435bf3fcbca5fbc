from hivedlab.basics.text import display_width, pad


def test_a_cjk_character_takes_two_columns() -> None:
    assert display_width("ab") == 2
    assert display_width("符合") == 4
    assert display_width("ＡＢ") == 4  # fullwidth forms


def test_pad_fills_to_the_display_width_and_never_cuts() -> None:
    assert pad("符合", 6) == "符合  "
    assert pad("ok", 4) == "ok  "
    assert pad("不符合预期", 4) == "不符合预期"
