"""``cz.output``: the one byte formatter, and errors printed without rich markup."""

from __future__ import annotations

import pytest
import typer
from hypothesis import given
from hypothesis import strategies as st

from cz import output


@given(st.integers(0, 10**18))
def test_human_bytes_reads_back_within_its_rounding(n: int) -> None:
    text = output.human_bytes(n)
    number, unit = text.split(" ")
    scale = {"B": 1, "kB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12, "PB": 10**15}[unit]
    assert abs(float(number) * scale - n) <= 0.05 * scale + 0.5
    if unit != "PB":
        assert float(number) < 1000


def test_human_bytes_examples() -> None:
    assert output.human_bytes(999) == "999 B"
    assert output.human_bytes(1000) == "1.0 kB"
    assert output.human_bytes(1_376_469) == "1.4 MB"


def test_fail_prints_user_text_verbatim(capsys: pytest.CaptureFixture[str]) -> None:
    output.err.width = 200
    with pytest.raises(typer.Exit) as raised:
        output.fail("no store at [bold]/tmp/[red]x[/red]")
    assert raised.value.exit_code == output.EXIT_RUNTIME
    assert "error: no store at [bold]/tmp/[red]x[/red]" in capsys.readouterr().err
