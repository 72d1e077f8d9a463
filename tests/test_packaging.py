"""What the wheel must carry: every non-Python file of the package matches the package-data
globs of pyproject.toml (.ci/run builds the wheel and checks the same from the other side),
and the version has one source."""

from __future__ import annotations

import fnmatch
import tomllib
from pathlib import Path

import ptoisa

ROOT = Path(__file__).resolve().parents[1]


def test_package_data_covers_every_non_python_file() -> None:
    conf = tomllib.loads((ROOT / "pyproject.toml").read_text())
    globs = conf["tool"]["setuptools"]["package-data"]["ptoisa"]
    pkg = ROOT / "ptoisa"
    data = [p.relative_to(pkg).as_posix() for p in pkg.rglob("*")
            if p.is_file() and p.suffix not in (".py", ".pyc") and "__pycache__" not in p.parts]
    assert {"py.typed", "__init__.pyi", "cycles/a2a3_fit.json"} <= set(data)
    missing = [d for d in data if not any(fnmatch.fnmatch(d, g) for g in globs)]
    assert missing == [], f"add to [tool.setuptools.package-data] in pyproject.toml: {missing}"


def test_version_has_one_source() -> None:
    conf = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in conf["project"] and "version" in conf["project"]["dynamic"]
    assert conf["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "ptoisa.__version__"}
    assert ptoisa.__version__.count(".") == 2
