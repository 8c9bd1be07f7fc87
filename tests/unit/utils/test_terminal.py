from traverse_crawl.utils.terminal import escape_controls, escape_line_controls


def test_every_control_character_is_shown_escaped():
    hostile = "a\x1b]8;;http://evil/\x07b\x1b[2J\rc\x9b\u202ed\x7f"
    assert escape_controls(hostile) == (
        "a\\x1b]8;;http://evil/\\x07b\\x1b[2J\\x0dc\\x9b\\u202ed\\x7f"
    )
    assert escape_controls("x\ny\tz") == "x\\x0ay\\x09z"
    assert escape_line_controls("x\ny\tz\x1b") == "x\ny\tz\\x1b"
    assert escape_controls("plain é 漢字") == "plain é 漢字"
