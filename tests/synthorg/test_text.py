"""synthorg.text.clip_lines: lines kept whole while they fit, never a cut inside a word."""

import pytest

from synthorg.text import MARK, clip_lines


@pytest.mark.parametrize(
    ("text", "limit", "expected"),
    [
        ("  fits\nas it is \n", 20, "fits\nas it is"),
        # the first line that does not fit is clipped after a word
        ("one two\nthree four five six", 19, "one two\nthree four…"),
        # after a sentence when that keeps at least half of the room
        ("head\nFirst part. Second part goes on", 24, "head\nFirst part. …"),
        # no boundary of the next line fits: the mark ends the text on a line of its own
        ("head\nunbreakableword and more", 10, f"head\n{MARK}"),
        # not even the mark fits after the kept lines: the last kept line gives way
        ("abc\ndefgh\nxyz", 9, f"abc\n{MARK}"),
        ("unbreakableword", 5, MARK),
    ],
)
def test_clip_lines(text, limit, expected):
    clipped = clip_lines(text, limit)
    assert clipped == expected
    assert len(clipped) <= limit
