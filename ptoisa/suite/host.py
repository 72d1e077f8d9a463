"""What a ``tilelang_st`` testcase's host code passes to its kernel: read from ``launch.cpp``
(the launcher wrapping ``KERNEL<<<N, ...>>>(...)``) and ``main.cpp`` (which data file fills which
host buffer), never compiled or run.

A launcher's parameters are the host's buffers (pointers, in order) and scalars it was given.
Each argument of the kernel call is one of:

* a pointer into a buffer, at an element offset: ``(__gm__ T *)p``, ``(__gm__ T *)(a_ + 16)``
  (``a_`` a local alias ``U *a_ = (U *)a;`` of parameter ``a``: offsets count ``U`` elements);
* a scalar parameter of the launcher (``slope``), which the host reads from a data file;
* a scalar copied from a host buffer (``std::memcpy(&scalar, scalar_ptr, ...)``);
* a constant expression: literals (``3``, ``0x4200``, ``3.0f``), casts, the file's named
  constants (``static constexpr float S = 3.0f;``, ``#define``), ``bits_to_float(0x...U)``,
  ``+ - * /`` between them. Its value is taken in the C type the kernel's declaration gives
  the parameter and passed bit for bit (``unsigned short 0x4200`` to an ``f16`` is 3.0).
"""

from __future__ import annotations

import ast
import re
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

#: C element types of the host code, by name
C_TYPES: dict[str, str] = {
    "float": "float32", "double": "float64", "half": "float16", "__fp16": "float16",
    "bfloat16_t": "bfloat16", "int8_t": "int8", "uint8_t": "uint8", "char": "int8",
    "signed char": "int8", "unsigned char": "uint8", "int16_t": "int16",
    "uint16_t": "uint16", "short": "int16", "unsigned short": "uint16", "int": "int32",
    "int32_t": "int32", "uint32_t": "uint32", "unsigned int": "uint32", "unsigned": "uint32",
    "int64_t": "int64", "uint64_t": "uint64", "long": "int64", "unsigned long": "uint64",
    "long long": "int64", "unsigned long long": "uint64", "size_t": "uint64", "bool": "bool",
    "void": "uint8",
}


@dataclass(frozen=True)
class Buf:
    """A pointer ``offset`` bytes into launcher parameter ``param``."""

    param: int
    offset: int


@dataclass(frozen=True)
class Param:
    """Scalar launcher parameter ``param``, passed on as it is."""

    param: int


@dataclass(frozen=True)
class Load:
    """A scalar of C type ``ctype`` copied from the first bytes of launcher parameter
    ``param`` (a host pointer)."""

    param: int
    ctype: str


@dataclass(frozen=True)
class Value:
    """A constant."""

    value: int | float


Arg = Buf | Param | Load | Value


@dataclass
class Launcher:
    """One launcher: its parameters ``(ctype, name, is_pointer)`` (the stream left out), the
    kernel it calls on how many blocks, each kernel argument, and the C types the kernel's
    declaration gives its parameters (None where the file has no declaration)."""

    name: str
    params: list[tuple[str, str, bool]]
    kernel: str
    blocks: int
    args: list[Arg]
    kernel_ctypes: list[str] | None = None
    #: the data file (key) each launcher parameter is read from, from main.cpp
    files: dict[str, int] = field(default_factory=dict)
    #: the launcher parameters whose buffers main.cpp writes out (empty: not known)
    outputs: frozenset[int] = frozenset()


def strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def _balanced(text: str, i: int, open_: str = "(", close: str = ")") -> int:
    """The index just past the bracket closing the one at ``text[i]``."""
    depth = 0
    for j in range(i, len(text)):
        if text[j] == open_:
            depth += 1
        elif text[j] == close:
            depth -= 1
            if depth == 0:
                return j + 1
    return len(text)


def split_args(text: str) -> list[str]:
    """Comma-separated arguments at bracket depth 0."""
    out, depth, cur = [], 0, ""
    for ch in text:
        if ch in "([{<":
            depth += 1
        elif ch in ")]}>":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


def _param(decl: str) -> tuple[str, str, bool]:
    """``__gm__ float *src`` -> ("float", "src", True)."""
    d = re.sub(r"\b(__gm__|const|volatile|__restrict__|restrict)\b", " ", decl)
    m = re.match(r"\s*(.*?)\s*(\**)\s*(\w+)\s*$", d)
    if m is None:
        return d.strip(), "", False
    ctype = " ".join(m.group(1).split())
    return ctype, m.group(3), bool(m.group(2))


def constants(text: str) -> dict[str, str]:
    """Named constants of a host file: ``constexpr`` / ``const`` definitions and
    ``#define``s."""
    out = {m.group(1): m.group(2).strip() for m in re.finditer(
        r"(?:static\s+)?(?:constexpr|const)\s+[\w\s]+?\s+(\w+)\s*=\s*([^;]+);", text)}
    out.update({m.group(1): m.group(2).strip() for m in re.finditer(
        r"^\s*#define\s+(\w+)\s+(.+?)\s*$", text, flags=re.M)})
    return out


_CAST = re.compile(r"^\(\s*(?:__gm__\s+)?[A-Za-z_][\w\s]*\**\s*\)\s*(?=[\w(.+-])")


def _strip(expr: str) -> str:
    """``expr`` without casts and enclosing parentheses at its start."""
    e = expr.strip()
    while True:
        m = _CAST.match(e)
        if m is not None and not re.fullmatch(r"\(\s*\d+\s*\)", m.group(0).strip()):
            e = e[m.end():].strip()
            continue
        if e.startswith("(") and _balanced(e, 0) == len(e):
            e = e[1:-1].strip()
            continue
        return e


def evaluate(expr: str, consts: dict[str, str], depth: int = 0) -> int | float | None:
    """A constant C expression's value (None when it is not one)."""
    if depth > 8:
        return None
    e = _strip(expr)
    m = re.fullmatch(r"bits_to_float\s*\(\s*(.+)\s*\)", e)
    if m is not None:
        bits = evaluate(m.group(1), consts, depth + 1)
        if not isinstance(bits, int):
            return None
        return float(struct.unpack("<f", struct.pack("<I", bits & 0xFFFFFFFF))[0])
    names = set(re.findall(r"\b[A-Za-z_]\w*\b", e))
    sub: dict[str, Any] = {}
    for n in names:
        if n not in consts:
            return None
        v = evaluate(consts[n], consts, depth + 1)
        if v is None:
            return None
        sub[n] = v
    py = re.sub(r"\b(0[xX][0-9a-fA-F]+|\d+)[uUlL]+\b", r"\1", e)
    py = re.sub(r"(\d\.?\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)[fF]\b", r"\1", py)
    py = re.sub(r"\(\s*[A-Za-z_][\w\s]*\**\s*\)", "", py)  # inner casts
    try:
        tree = ast.parse(py, mode="eval")
    except SyntaxError:
        return None
    return _eval_node(tree.body, sub)


def _eval_node(n: ast.AST, names: dict[str, Any]) -> int | float | None:
    if isinstance(n, ast.Constant) and isinstance(n.value, (int, float)):
        return n.value
    if isinstance(n, ast.Name):
        return names.get(n.id)
    if isinstance(n, ast.UnaryOp) and isinstance(n.op, (ast.USub, ast.UAdd)):
        v = _eval_node(n.operand, names)
        return None if v is None else (-v if isinstance(n.op, ast.USub) else v)
    if isinstance(n, ast.BinOp):
        a, b = _eval_node(n.left, names), _eval_node(n.right, names)
        if a is None or b is None:
            return None
        if isinstance(n.op, ast.Add):
            return a + b
        if isinstance(n.op, ast.Sub):
            return a - b
        if isinstance(n.op, ast.Mult):
            return a * b
        if isinstance(n.op, ast.Div):
            if b == 0:
                return None
            return a // b if isinstance(a, int) and isinstance(b, int) else a / b
    return None


def itemsize(ctype: str) -> int:
    name = C_TYPES.get(ctype, "uint8")
    return 2 if name == "bfloat16" else np.dtype(name).itemsize


def launchers(d: Path) -> dict[str, Launcher]:
    """The launchers of ``launch.cpp`` by name (empty when the folder has none)."""
    try:
        text = strip_comments((d / "launch.cpp").read_text())
    except OSError:
        return {}
    consts = constants(text)
    decls: dict[str, list[str]] = {}
    for m in re.finditer(r"\bvoid\s+(\w+)\s*\(([^)]*)\)\s*;", text):
        decls[m.group(1)] = [_param(p)[0] for p in split_args(m.group(2))]
    out: dict[str, Launcher] = {}
    for m in re.finditer(r"\bvoid\s+(\w+)\s*\(([^)]*)\)\s*\{", text):
        body = text[m.end() - 1:_balanced(text, m.end() - 1, "{", "}")]
        call = re.search(r"(\w+)\s*<<<\s*([^,>]+)\s*,[^>]*>>>\s*\(", body)
        if call is None:
            continue
        params = [_param(p) for p in split_args(m.group(2))]
        params = [p for p in params if p[1] and p[1] != "stream"]
        blocks = evaluate(call.group(2), consts)
        inner = body[call.end() - 1:_balanced(body, call.end() - 1)][1:-1]
        args = [_arg(a, params, body, consts) for a in split_args(inner)]
        if any(a is None for a in args):
            continue
        out[m.group(1)] = Launcher(m.group(1), params, call.group(1),
                                   blocks if isinstance(blocks, int) else 1,
                                   [a for a in args if a is not None],
                                   decls.get(call.group(1)))
    return out


def _arg(expr: str, params: list[tuple[str, str, bool]], body: str,
         consts: dict[str, str]) -> Arg | None:
    index = {p[1]: i for i, p in enumerate(params)}
    e = _strip(expr)
    m = re.fullmatch(r"(\w+)\s*(?:\+\s*(.+))?", e, flags=re.S)
    if m is not None and not m.group(1)[0].isdigit():
        name, off = m.group(1), m.group(2)
        elem = None
        if name in index:
            ctype, _, ptr = params[index[name]]
            if not ptr:
                return Param(index[name]) if off is None else None
            elem = ctype
        else:
            alias = re.search(rf"([\w\s]+?)\s*\*\s*{name}\s*=\s*\(\s*[\w\s]+\*\s*\)\s*(\w+)\s*;",
                              body)
            if alias is not None and alias.group(2) in index:
                elem = " ".join(alias.group(1).split())
                name = alias.group(2)
            else:
                cp = re.search(rf"memcpy\s*\(\s*&\s*{name}\s*,\s*(?:\([\w\s*]*\)\s*)?(\w+)\s*,",
                               body)
                decl = re.search(rf"([\w\s]+?)\s+{name}\s*;", body)
                if cp is not None and decl is not None and cp.group(1) in index and off is None:
                    return Load(index[cp.group(1)], " ".join(decl.group(1).split()))
        if elem is not None:
            k = 0 if off is None else evaluate(off, consts)
            if not isinstance(k, int):
                return None
            return Buf(index[name], k * itemsize(elem))
    v = evaluate(expr, consts)
    return None if v is None else Value(v)


def main_files(d: Path, launcher: Launcher) -> dict[str, int]:
    """Data file key -> launcher parameter, where ``main.cpp`` reads ``KEY.bin`` into a host
    buffer (``xHost``) that its launch call passes (as ``xDevice`` or ``xHost``)."""
    try:
        text = strip_comments((d / "main.cpp").read_text())
    except OSError:
        return {}
    reads: dict[str, str] = {}
    for m in re.finditer(r"ReadFile\s*\(", text):
        args = split_args(text[m.end() - 1:_balanced(text, m.end() - 1)][1:-1])
        key = re.search(r'"/?(\w+)\.bin"', args[0]) if args else None
        if key is None or len(args) < 3:
            continue
        reads[key.group(1)] = _stem(args[2])
    return _by_launch_call(text, launcher, reads)


def main_outputs(d: Path, launcher: Launcher) -> frozenset[int]:
    """The launcher parameters whose buffer ``main.cpp`` writes out (``WriteFile(path, xHost,
    size)`` of a buffer its launch call passes): a kernel may write other buffers too (a
    source reused as scratch), whose bytes upstream never compares."""
    try:
        text = strip_comments((d / "main.cpp").read_text())
    except OSError:
        return frozenset()
    writes: dict[str, str] = {}
    for m in re.finditer(r"WriteFile\s*\(", text):
        args = split_args(text[m.end() - 1:_balanced(text, m.end() - 1)][1:-1])
        if len(args) >= 3:
            writes[_stem(args[1])] = _stem(args[1])
    return frozenset(_by_launch_call(text, launcher, writes).values())


def _by_launch_call(text: str, launcher: Launcher, stems_of: dict[str, str]) -> dict[str, int]:
    """Key -> launcher parameter, for the keys whose buffer stem (``stems_of``) a launch call
    of ``main.cpp`` with the launcher's parameter count passes."""
    calls = []
    for m in re.finditer(r"\blaunch\w*\s*\(|\b" + re.escape(launcher.name) + r"\s*\(", text):
        inner = text[m.end() - 1:_balanced(text, m.end() - 1)][1:-1]
        calls.append([_stem(a) for a in split_args(inner)])
    n = len(launcher.params)
    for stems in calls:
        stems = [s for s in stems if s != "stream"]
        if len(stems) != n:
            continue
        out = {k: stems.index(s) for k, s in stems_of.items() if s in stems}
        if out:
            return out
    return {}


def _stem(expr: str) -> str:
    e = _strip(expr).lstrip("&*")
    e = re.sub(r"\.(c_str|data)\(\)$", "", e)
    return re.sub(r"(Device|Dev|HostOrig|Host)$", "", e)


__all__ = ["Buf", "C_TYPES", "Launcher", "Load", "Param", "Value", "constants", "evaluate",
           "launchers", "main_files", "main_outputs", "split_args", "strip_comments"]
