"""``ptoisa export MODULE.py:FN [--blocks N] [--target T] --arg NAME=VALUE ... [-o OUT]``."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import PtoError, SourceLoc
from . import export


def load_kernel(ref: str) -> Callable[..., Any]:
    """``path/to/module.py:fn`` (or ``package.module:fn``) -> the function."""
    import importlib
    import importlib.util
    import sys

    path, sep, fn = ref.rpartition(":")
    if not sep or not path or not fn:
        raise PtoError(f"expected MODULE.py:FUNCTION, got {ref!r}")
    if path.endswith(".py") or "/" in path:
        p = Path(path)
        if not p.is_file():
            raise PtoError(f"cannot read {path}: no such file")
        spec = importlib.util.spec_from_file_location(p.stem, p)
        if spec is None or spec.loader is None:
            raise PtoError(f"cannot import {path}")
        mod = importlib.util.module_from_spec(spec)
        sys.path.insert(0, str(p.resolve().parent))
        sys.modules.setdefault(p.stem, mod)
        try:
            spec.loader.exec_module(mod)
        except SyntaxError as e:  # the user's file: located there, not "a bug in ptoisa"
            raise PtoError(f"SyntaxError: {e.msg}", loc=_loc(e.filename or path, e.lineno or 1,
                                                             e.offset or 1, e.text)) from None
        except Exception as e:  # noqa: BLE001 - the module's own code raised on import
            raise user_error(e, f"importing {path} raised") from None
        finally:
            sys.path.pop(0)
    else:
        try:
            mod = importlib.import_module(path)
        except ModuleNotFoundError as e:
            raise PtoError(f"cannot import {path}: no module named {e.name!r}") from None
        except SyntaxError as e:
            raise PtoError(f"SyntaxError: {e.msg}", loc=_loc(e.filename or path, e.lineno or 1,
                                                             e.offset or 1, e.text)) from None
        except Exception as e:  # noqa: BLE001 - the module's own code raised on import
            raise user_error(e, f"importing {path} raised") from None
    kernel = getattr(mod, fn, None)
    if not callable(kernel):
        have = ", ".join(n for n, v in vars(mod).items()
                         if inspect.isfunction(v) and v.__module__ == mod.__name__)
        raise PtoError(f"{path} has no function {fn!r} (functions: {have or 'none'})")
    return kernel  # type: ignore[no-any-return]


def _loc(file: str, line: int, col: int = 1, text: str | None = None) -> SourceLoc:
    """A location in the user's file, named relative to the current directory when in it."""
    p = Path(file).resolve()
    name = str(p.relative_to(Path.cwd())) if p.is_relative_to(Path.cwd()) else file
    return SourceLoc(name, line, max(col, 1), (text or "").rstrip("\n"))


def _in_ptoisa(filename: str) -> bool:
    return Path(filename).resolve().is_relative_to(_PACKAGE)


_PACKAGE = Path(__file__).resolve().parents[1]


def user_error(e: BaseException, what: str) -> PtoError:
    """A PtoError located at the last line of the user's own code that ``e`` went through
    (``what``: how it came about, e.g. "kernel softmax raised")."""
    import linecache
    import traceback

    frames = [f for f in traceback.extract_tb(e.__traceback__) if not _in_ptoisa(f.filename)]
    msg = f"{what} {type(e).__name__}: {' '.join(str(e).split())[:300]}"
    if not frames:
        return PtoError(msg)
    f = frames[-1]
    line = linecache.getline(f.filename, f.lineno or 1)
    col = len(line) - len(line.lstrip()) + 1
    return PtoError(msg, loc=_loc(f.filename, f.lineno or 1, col, line))


def user_raised(e: BaseException) -> bool:
    """Whether ``e`` was raised by code outside ptoisa (the user's kernel, or numpy called by
    it), not inside ptoisa (where it would be a bug of ptoisa)."""
    import traceback

    tb = traceback.extract_tb(e.__traceback__)
    return bool(tb) and not _in_ptoisa(tb[-1].filename)


def random_array(shape: tuple[int, ...], dt: np.dtype[Any], seed: int = 0) -> np.ndarray:
    """``rand:SHAPE:DTYPE``: seeded uniform values in [-4, 4), integers for integer types (the
    same array for the same shape, type and seed)."""
    rng = np.random.default_rng(seed)
    if np.issubdtype(dt, np.integer):
        info = np.iinfo(dt)
        return rng.integers(max(info.min, -4), min(info.max, 4) + 1, shape).astype(dt)
    return rng.uniform(-4, 4, shape).astype(dt)


def arg_value(spec: str, name: str) -> Any:
    """A ``--arg`` value: FILE.npy, ``zeros:SHAPE[:DTYPE]``, ``rand:SHAPE[:DTYPE]`` (seeded
    uniform values in [-4, 4), integers for integer types), or a number."""
    from .. import dtypes

    kind, _, rest = spec.partition(":")
    if kind in ("zeros", "rand") and rest:
        shape_s, _, dt_s = rest.partition(":")
        try:
            shape = tuple(int(d) for d in shape_s.split("x"))
            dt = dtypes.dtype(dt_s or "f32")
        except (PtoError, KeyError, TypeError, ValueError):
            raise PtoError(f"argument {name}: expected {kind}:SHAPE[:DTYPE] (e.g. "
                           f"{kind}:45x64:f32), got {spec!r}") from None
        if kind == "zeros":
            return np.zeros(shape, dt.np)
        return random_array(shape, dt.np)
    if spec.endswith(".npy"):
        try:
            return np.load(spec, allow_pickle=False)
        except (OSError, ValueError) as e:
            raise PtoError(f"argument {name}: cannot read {spec}: {e}") from None
    for conv in (lambda s: int(s, 0), float):
        try:
            return conv(spec)
        except ValueError:
            pass
    raise PtoError(f"argument {name}: expected FILE.npy, zeros:SHAPE:DTYPE, rand:SHAPE:DTYPE or "
                   f"a number, got {spec!r}")


def kernel_args(kernel: Callable[..., Any], specs: list[str]) -> list[Any]:
    """The kernel's arguments from ``NAME=VALUE`` / ``INDEX=VALUE`` specs (parameters with
    defaults may be left out)."""
    params = list(inspect.signature(kernel).parameters.values())
    given: dict[int, Any] = {}
    for s in specs:
        key, eq, val = s.partition("=")
        if not eq:
            raise PtoError(f"--arg takes NAME=VALUE, got {s!r}")
        idx = next((k for k, p in enumerate(params) if p.name == key), None)
        if idx is None and key.isdigit() and int(key) < len(params):
            idx = int(key)
        if idx is None:
            names = ", ".join(p.name for p in params)
            raise PtoError(f"--arg {key}: the kernel has no such parameter ({names})")
        given[idx] = arg_value(val, params[idx].name)
    out: list[Any] = []
    for k, p in enumerate(params):
        if k in given:
            out.append(given[k])
        elif p.default is not inspect.Parameter.empty:
            out.append(p.default)
        elif p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            break
        else:
            missing = [q.name for j, q in enumerate(params) if j not in given
                       and q.default is inspect.Parameter.empty
                       and q.kind not in (q.VAR_POSITIONAL, q.VAR_KEYWORD)]
            raise PtoError(f"missing --arg for {', '.join(missing)} (FILE.npy, "
                           "zeros:SHAPE:DTYPE, rand:SHAPE:DTYPE or a number)")
    return out


def cli_export(ns: Any) -> int:
    """``ptoisa export MODULE.py:FN [--blocks N] [--target T] [--arg NAME=VALUE] [-o OUT]``."""
    import sys

    kernel = load_kernel(ns.kernel)
    args = kernel_args(kernel, ns.arg or [])
    try:
        text = export(kernel, *args, blocks=ns.blocks, target=ns.target, name=ns.name,
                      verify=not ns.no_verify)
    except PtoError:
        raise
    except Exception as e:  # noqa: BLE001 - the kernel's own code raised: the user's line
        if not user_raised(e):
            raise  # (inside ptoisa: a bug of ours)
        raise user_error(e, f"kernel {getattr(kernel, '__name__', ns.kernel)} raised") from None
    if ns.output:
        Path(ns.output).write_text(text)
        print(f"{ns.output}: {len(text.splitlines())} lines, {ns.blocks} block(s), target "
              f"{ns.target}" + ("" if ns.no_verify else ", same bits as the eager kernel"),
              file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0
