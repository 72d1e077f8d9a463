"""Tiles and GlobalTensors in notebooks (``_repr_html_``), ``pto.show`` heat maps and
``ptoisa run --show``: the HTML is parsed with the stdlib, the PNG header read with it."""

from __future__ import annotations

import struct
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

import ptoisa as pto
from ptoisa.cli import main
from ptoisa.display import EDGE, gm_html, tile_html
from ptoisa.errors import PtoError
from ptoisa.targets import get_target

ROOT = Path(__file__).resolve().parents[1]


class Table(HTMLParser):
    """The first table of a document: caption text, header cells, body rows of cells
    (tag, attributes, text)."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.caption = ""
        self.head: list[tuple[str, dict[str, str], str]] = []
        self.rows: list[list[tuple[str, dict[str, str], str]]] = []
        self._where = ""
        self._cell: tuple[str, dict[str, str]] | None = None
        self._text = ""
        self.tables = 0
        self.feed(text)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "table":
            self.tables += 1
        elif tag in ("caption", "thead", "tbody"):
            self._where = tag
        elif tag == "tr" and self._where == "tbody":
            self.rows.append([])
        elif tag in ("td", "th"):
            self._cell = (tag, {k: v or "" for k, v in attrs})
            self._text = ""

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None:
            cell = (*self._cell, self._text)
            (self.head if self._where == "thead" else self.rows[-1]).append(cell)
            self._cell = None
        elif tag == "caption":
            self._where = ""

    def handle_data(self, data: str) -> None:
        if self._where == "caption":
            self.caption += data
        elif self._cell is not None:
            self._text += data


def _cls(cell: tuple[str, dict[str, str], str]) -> str:
    return cell[1].get("class", "")


def test_tile_table_marks_the_valid_region_and_greys_pads() -> None:
    a = np.arange(32, dtype=np.float32).reshape(4, 8) / 4
    with pto.target("cpu"):
        t = pto.Tile(pto.TileType.Vec, np.float32, 4, 8, valid=(3, 5), name="acc")
        t.load_numpy(a)
        doc = Table(t._repr_html_())
    assert doc.tables == 1
    assert [c[2] for c in doc.head] == [""] + [str(c) for c in range(8)]
    assert len(doc.rows) == 4
    for r, row in enumerate(doc.rows):
        assert row[0][:1] == ("th",) and row[0][2] == str(r)
        cells = row[1:]
        assert len(cells) == 8
        for c, cell in enumerate(cells):
            assert float(cell[2]) == a[r, c]
            inside = r < 3 and c < 5
            assert _cls(cell) == ("valid" if inside else "pad")
            style = cell[1].get("style", "")
            if not inside:
                assert "background:#ececec" in style and "color:#9a9a9a" in style
                assert "pad" in cell[1]["title"]
            # the valid region's right and bottom edges are drawn
            assert ("border-right" in style) == (inside and c == 4)
            assert ("border-bottom" in style) == (inside and r == 2)
    assert sum(_cls(c) == "valid" for row in doc.rows for c in row) == 15
    assert sum(_cls(c) == "pad" for row in doc.rows for c in row) == 17
    for part in ("Tile 'acc'", "f32", "4x8", "valid 3x5", "ND layout", "loc Vec"):
        assert part in doc.caption


def test_caption_and_values_are_escaped() -> None:
    with pto.target("cpu"):
        t = pto.Tile(pto.TileType.Vec, np.float32, 1, 8, name='<b>&"x')
        t.load_numpy(np.full((1, 8), np.nan, np.float32))
        text = t._repr_html_()
    assert "<b>" not in text and "&lt;b&gt;&amp;" in text
    doc = Table(text)
    assert doc.caption.startswith("Tile '<b>&\"x'")
    assert [c[2] for c in doc.rows[0][1:]] == ["nan"] * 8


def test_a_1024x1024_tile_is_elided_with_its_full_shape_said() -> None:
    cpu = get_target("cpu")
    big = cpu.derive("cpu_big_ub", buffers={**cpu.buffers, "UB": 8 << 20})
    a = np.arange(1 << 20, dtype=np.int32).reshape(1024, 1024)
    with pto.target(big):
        t = pto.Tile(pto.TileType.Vec, np.int32, 1024, 1024, valid=(1000, 1020))
        t.load_numpy(a)
        doc = Table(tile_html(t))
    shown = list(range(EDGE)) + list(range(1024 - EDGE, 1024))
    head = [c[2] for c in doc.head[1:]]
    assert head == [str(c) for c in shown[:EDGE]] + ["\u2026"] + [str(c) for c in shown[EDGE:]]
    assert len(doc.rows) == 2 * EDGE + 1
    assert _cls(doc.rows[EDGE][1]) == "ellipsis"
    body = [row for k, row in enumerate(doc.rows) if k != EDGE]
    assert [row[0][2] for row in body] == [str(r) for r in shown]
    for r, row in zip(shown, body, strict=True):
        cells = [c for c in row[1:] if _cls(c) != "ellipsis"]
        assert [int(c[2]) for c in cells] == [int(a[r, c]) for c in shown]
        assert [_cls(c) for c in cells] == \
            ["valid" if r < 1000 and c < 1020 else "pad" for c in shown]
    assert "1024x1024" in doc.caption and "valid 1000x1020" in doc.caption
    assert "first and last 8" in doc.caption


def test_boxed_tile_shows_logical_values() -> None:
    a = np.arange(256, dtype=np.float32).reshape(16, 16)
    with pto.target("cpu"):
        t = pto.TileAcc(np.float32, 16, 16)
        t.load_numpy(a)
        doc = Table(t._repr_html_())
    got = np.array([[float(c[2]) for c in row[1:]] for row in doc.rows])
    np.testing.assert_array_equal(got, a)
    assert "NZ layout" in doc.caption and "loc Acc" in doc.caption


def test_a_tile_without_storage_is_shown_without_placing_it() -> None:
    with pto.target("cpu"):
        t = pto.Tile(pto.TileType.Vec, np.float16, 2, 16)
        doc = Table(t._repr_html_())
        assert not t.assigned
    assert "no values" in doc.caption
    assert all(c[2] == "" for row in doc.rows for c in row[1:])


def test_global_tensor_shows_its_2d_view() -> None:
    a = np.arange(2 * 4 * 8, dtype=np.float32).reshape(2, 4, 8)
    g = pto.GlobalTensor(a, name="x")
    doc = Table(g._repr_html_())
    got = np.array([[float(c[2]) for c in row[1:]] for row in doc.rows])
    np.testing.assert_array_equal(got, a.reshape(8, 8))
    assert all(_cls(c) == "valid" for row in doc.rows for c in row[1:])
    for part in ("GlobalTensor 'x'", "f32", "ND layout", "shape 1x1x2x4x8", "as 8x8",
                 "outer 1x1x2 folded into rows"):
        assert part in doc.caption
    # a strided window with an offset
    flat = np.arange(100, dtype=np.int32)
    w = pto.GlobalTensor(flat, shape=(4, 4), stride=(8, 1), offset=3)
    doc = Table(gm_html(w))
    got = np.array([[int(c[2]) for c in row[1:]] for row in doc.rows])
    np.testing.assert_array_equal(got, np.array([[3 + 8 * r + c for c in range(4)]
                                                 for r in range(4)]))
    assert "offset 3" in doc.caption and "stride [0, 0, 0, 8, 1]" in doc.caption


def test_large_global_tensor_is_elided() -> None:
    a = np.zeros((3000, 40), np.float16)
    a[-1, -1] = 7
    doc = Table(gm_html(pto.GlobalTensor(a)))
    assert len(doc.rows) == 2 * EDGE + 1
    assert doc.rows[-1][0][2] == "2999" and doc.rows[-1][-1][2] == "7"
    assert "as 3000x40" in doc.caption


def test_lockstep_tile_shows_one_block() -> None:
    x = np.arange(2 * 8 * 8, dtype=np.float32).reshape(16, 8)
    pages: list[str] = []

    def kernel(x: np.ndarray) -> None:
        b = pto.get_block_idx()
        g = pto.GlobalTensor(x, shape=(8, 8), stride=(8, 1), offset=b * 64)
        t = pto.Tile(pto.TileType.Vec, np.float32, 8, 8)
        pto.TLOAD(t, g)
        pages.extend([tile_html(t), tile_html(t, block=1), tile_html(t, block=-1)])

    pto.launch(kernel, x, blocks=2, lockstep=True)
    for page, b in zip(pages, (0, 1, 1), strict=True):
        doc = Table(page)
        got = np.array([[float(c[2]) for c in row[1:]] for row in doc.rows])
        np.testing.assert_array_equal(got, x[8 * b:8 * b + 8])
        assert f"block {b} of 2" in doc.caption


def test_package_import_does_not_import_matplotlib() -> None:
    out = subprocess.run([sys.executable, "-c", "import sys, ptoisa; "
                          "print('matplotlib' in sys.modules)"],
                         capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "False"


def _png_size(path: Path) -> tuple[int, int]:
    """(width, height) from the PNG signature and IHDR chunk."""
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n" and head[12:16] == b"IHDR"
    return struct.unpack(">II", head[16:24])


def test_show_draws_a_heat_map_png(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    with pto.target("cpu"):
        t = pto.Tile(pto.TileType.Vec, np.float32, 8, 16, valid=(5, 9))
        t.load_numpy(np.random.default_rng(0).standard_normal((8, 16)))
        fig = pto.show(t, path=tmp_path / "t.png")
    assert _png_size(tmp_path / "t.png") == (640, 480)
    ax = fig.axes[0]
    img = ax.images[0].get_array()
    assert img.shape == (8, 16)
    assert img.mask[5:, :].all() and img.mask[:, 9:].all() and not img.mask[:5, :9].any()
    assert len(ax.patches) == 1  # the valid region's outline
    pto.show(pto.GlobalTensor(np.ones((4, 3, 32), np.float16)), path=tmp_path / "g.png")
    pto.show(np.arange(10), path=tmp_path / "a.png")
    assert _png_size(tmp_path / "g.png") == _png_size(tmp_path / "a.png") == (640, 480)


def test_show_without_matplotlib_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(PtoError, match=r"pip install 'ptoisa\[plot\]'"):
        pto.show(np.zeros((2, 2)))


def test_show_refuses_what_it_cannot_draw() -> None:
    pytest.importorskip("matplotlib")
    with pto.target("cpu"):
        t = pto.Tile(pto.TileType.Vec, np.float32, 8, 8)
        with pytest.raises(PtoError, match="no storage yet"):
            pto.show(t)
    with pytest.raises(PtoError, match="numeric array"):
        pto.show(np.array(["a"]))


SOFTMAX = ROOT / "examples" / "softmax.pto"


def test_run_show_writes_arrays_and_tiles(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                          ) -> None:
    pytest.importorskip("matplotlib")
    x = np.random.default_rng(1).standard_normal((45, 64)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    out = tmp_path / "res"
    rc = main(["run", str(SOFTMAX), "--blocks", "6", "--arg", f"x={tmp_path / 'x.npy'}",
               "--arg", "out=zeros:45x64:f32", "--arg", "n_rows=45", "--out", str(out),
               "--show", "out", "--show", "%t"])
    assert rc == 0
    text = capsys.readouterr().out
    assert f"show: {out / 'out.png'}" in text and f"show: {out / 't.png'}" in text
    assert _png_size(out / "out.png") == _png_size(out / "t.png") == (640, 480)


@pytest.mark.parametrize(("name", "message"), [
    ("%nope", "no pointer argument or tile named %nope (known: %mx, %out, %sm, %t, %tmp, %x)"),
    ("n_rows", "argument %n_rows is a scalar, not an array"),
])
def test_run_show_rejects_unknown_names_before_running(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, message: str) -> None:
    pytest.importorskip("matplotlib")
    rc = main(["run", str(SOFTMAX), "--arg", "x=zeros:8x64:f32", "--arg", "out=zeros:8x64:f32",
               "--arg", "n_rows=8", "--show", name, "--out", str(tmp_path)])
    assert rc == 1
    assert message in capsys.readouterr().err
    assert not list(tmp_path.iterdir())  # nothing ran, nothing written


def test_coded_types_show_their_numbers() -> None:
    """fp4 E2M1 codes 0..7 are 0, 0.5, 1, 1.5, 2, 3, 4, 6 (the OCP MX table)."""
    codes = (np.arange(128, dtype=np.uint8) % 16).reshape(2, 64)
    with pto.target("a5"):
        t = pto.Tile(pto.TileType.Vec, "f4E2M1x2", 2, 64)
        t.load_numpy(codes)
        doc = Table(tile_html(t))
    assert [c[2] for c in doc.rows[0][1:9]] == ["0", "0.5", "1", "1.5", "2", "3", "4", "6"]
    assert "f4E2M1x2" in doc.caption
