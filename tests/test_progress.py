"""ptoisa/progress.py: the progress line of long work, with a fake terminal and a fake clock;
and the commands that draw it (silent off a terminal and with --quiet)."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest

import ptoisa as pto
from ptoisa import cli, progress
from ptoisa.progress import Progress

VEC_ADD = Path(__file__).resolve().parents[1] / "examples" / "vec_add.pto"


class FakeTTY(io.StringIO):
    def isatty(self) -> bool:
        return True


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def _bar(total: int | None = 10, **kw: object) -> tuple[Progress, FakeTTY, Clock]:
    tty, clock = FakeTTY(), Clock()
    return Progress(total, "work", stream=tty, clock=clock, **kw), tty, clock  # type: ignore


def test_line_count_rate_eta_rewritten_in_place() -> None:
    bar, tty, clock = _bar(delay=0.5, interval=0.1)
    with bar:
        clock.t += 2.0
        bar.update(5)          # 5 in 2 s: 2.5/s, 5 left: 2 s
        assert tty.getvalue() == "\rwork: 5/10 (50%) 2.5/s ETA 0:02"
        clock.t += 0.05
        bar.update()           # within the redraw interval: nothing new
        assert tty.getvalue().count("\r") == 1
        clock.t += 0.95
        bar.update(4)          # 10 of 10 in 3 s: no ETA; the shorter line pads the longer one
        last = tty.getvalue().rsplit("\r", 1)[1]
        assert last.rstrip() == "work: 10/10 (100%) 3.3/s"
        assert len(last) == len("work: 5/10 (50%) 2.5/s ETA 0:02")
    width = len(last)
    assert tty.getvalue().endswith("\r" + " " * width + "\r")   # erased at the end


def test_short_work_prints_nothing() -> None:
    bar, tty, clock = _bar(delay=0.5)
    with bar:
        clock.t += 0.4
        bar.update(10)
    assert tty.getvalue() == ""


def test_unknown_total_and_long_eta() -> None:
    bar, tty, clock = _bar(None, delay=0)
    clock.t += 4
    bar.update(10)
    assert tty.getvalue() == "\rwork: 10 2.5/s"
    bar2, _, clock2 = _bar(10_000, delay=0)
    clock2.t += 1
    bar2.update(1)
    assert bar2.line().endswith("ETA 2:46:39")


def test_silent_off_a_terminal_quiet_or_disabled(monkeypatch: pytest.MonkeyPatch) -> None:
    plain = io.StringIO()
    bar = Progress(3, "x", stream=plain, delay=0)
    bar.update(3)
    bar.close()
    assert plain.getvalue() == "" and not bar.enabled
    prev = progress.set_quiet(True)
    try:
        assert not _bar(delay=0)[0].enabled
    finally:
        progress.set_quiet(prev)
    monkeypatch.setenv("PTOISA_PROGRESS", "0")
    assert not _bar(delay=0)[0].enabled


def test_only_the_outermost_work_draws() -> None:
    outer, _, _ = _bar(delay=0)
    with outer:
        inner, tty, clock = _bar(delay=0)
        clock.t += 1
        inner.update()
        assert not inner.enabled and tty.getvalue() == ""
    assert _bar(delay=0)[0].enabled          # the outer one ended


def test_clear_then_redraw_at_once() -> None:
    bar, tty, clock = _bar(delay=0, interval=10)
    clock.t += 1
    bar.update()
    bar.clear()
    assert tty.getvalue().endswith("\r" + " " * len("work: 1/10 (10%) 1.0/s ETA 0:09") + "\r")
    bar.update()                               # redrawn though the interval has not passed
    assert tty.getvalue().endswith("\rwork: 2/10 (20%) 2.0/s ETA 0:04")
    n = len(tty.getvalue())
    bar.before_output(io.StringIO())           # a file: the line stays
    assert len(tty.getvalue()) == n
    bar.before_output(FakeTTY())               # the terminal: erased
    assert tty.getvalue().endswith(" \r")


# ---- the commands that draw it ------------------------------------------------------------------

@pytest.fixture
def terminal(monkeypatch: pytest.MonkeyPatch) -> FakeTTY:
    """stderr is a terminal (set in the test's call phase: pytest's capture puts its own
    sys.stderr back between setup and call)."""
    tty = FakeTTY()
    monkeypatch.setattr(progress, "DELAY", 0.0)
    monkeypatch.setattr(progress, "INTERVAL", 0.0)
    return tty


def _on(tty: FakeTTY, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stderr", tty)


def test_block_by_block_launch_shows_blocks(terminal: FakeTTY,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    _on(terminal, monkeypatch)
    x = np.ones(3 * 4096, np.float32)
    z = np.zeros_like(x)
    pto.load(VEC_ADD).run("vec_add", x, x, z, blocks=3, lockstep=False)
    assert "\ra2a3: blocks: 3/3 (100%)" in terminal.getvalue()
    np.testing.assert_array_equal(z, 2 * x)


def test_cli_run_quiet_draws_nothing(terminal: FakeTTY, monkeypatch: pytest.MonkeyPatch,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    _on(terminal, monkeypatch)
    argv = ["run", str(VEC_ADD), "--blocks", "2", "--lockstep", "off", "--arg",
            "x=rand:8192:f32", "--arg", "y=rand:8192:f32", "--arg", "z=zeros:8192:f32"]
    assert cli.main(argv) == 0
    assert "blocks: 2/2" in terminal.getvalue()
    terminal.seek(0)
    terminal.truncate(0)
    assert cli.main([*argv, "--quiet"]) == 0
    assert terminal.getvalue() == ""
    assert not progress._quiet                  # --quiet lasts one command


def test_sanitized_run_counts_instructions(terminal: FakeTTY,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    _on(terminal, monkeypatch)
    x = np.ones(4096, np.float32)
    pto.load(VEC_ADD).vec_add(x, x, np.zeros_like(x), sanitize=True)
    assert "\rsanitize: instructions: 4 " in terminal.getvalue()   # 2 TLOAD, TADD, TSTORE


def test_conformance_progress(terminal: FakeTTY, monkeypatch: pytest.MonkeyPatch,
                              shared_dir: Path) -> None:
    from ptoisa.conformance import run_pack

    if not (shared_dir / "conformance").is_dir():
        pytest.skip("the conformance pack is not beside the checkout (../shared/conformance)")
    _on(terminal, monkeypatch)
    out = io.StringIO()
    run_pack(shared_dir / "conformance", "cpu", out=out, only=["TADD"])
    drawn = terminal.getvalue()
    n = out.getvalue().count("\n") - 1
    assert f"\rconformance (cpu): {n}/{n} (100%)" in drawn and drawn.endswith("\r")
    assert out.getvalue().splitlines()[-1].endswith(" skipped (target cpu)")


def test_tprint_on_the_same_terminal_erases_the_line(terminal: FakeTTY,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """TPRINT writes to stdout; when that is the terminal too, the line goes first."""
    _on(terminal, monkeypatch)
    monkeypatch.setattr("sys.stdout", terminal)

    def k() -> None:
        t = pto.Tile(pto.TileType.Vec, np.float32, 1, 8)
        pto.TEXPANDS(t, 1.0)
        pto.TPRINT(t)

    pto.launch(k, blocks=2, lockstep=False)
    text = terminal.getvalue()
    first = text.index("a2a3: blocks: 1/2")
    # after the line was drawn, it is erased (spaces, then \r) before the next TPRINT
    assert "\r=== [TPRINT" in text[first:] or " \r===" in text[first:]
    assert "blocks: 1/2 (50%)" not in text[text.rindex("TPRINT"):]
