"""Build hook for the wheel (the project's metadata is in pyproject.toml).

The checkout keeps the package as app/ (the design's layout; `python -m app` there); installed, it is
`webgpu_convtranspose`, a name no other project's package takes (`app` is common in web projects and is an
unrelated distribution on PyPI): package_dir maps every app/ package to it. Every import inside the package is
relative, so the same sources work under both names.

A checkout keeps the op contract, bench cases, WGSL templates, tuning tables and the web app at the repository
root; the wheel carries them as package data under webgpu_convtranspose/_data, where app/contract.py finds them
through importlib.resources. test.json (18 MB of cases with their expected outputs) is not shipped: `cases` and
the Tests view take any case file, and a checkout generates test.json (tools/gen_test_cases.py).
"""
import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
NAME = "webgpu_convtranspose"
SOURCE = "app"
PACKAGE_DATA = ["manifest.json", "metadata.json", "bench.json", "templates/*.wgsl.jinja",
                "tuning/*.json", "web/*.html", "web/*.css", "web/runtime/*.mjs", "web/runtime/*.d.ts",
                "web/views/*.mjs", "web/views/*.proto"]


def packages() -> dict:
    """Every package under app/ (those with an __init__.py) -> its installed name under NAME."""
    found = {}
    for init in sorted((HERE / SOURCE).rglob("__init__.py")):
        parts = init.parent.relative_to(HERE / SOURCE).parts
        if "__pycache__" not in parts and "_data" not in parts:
            found[".".join((NAME,) + parts)] = "/".join((SOURCE,) + parts)
    return found


class BuildWithData(build_py):
    def run(self):
        super().run()
        target = Path(self.build_lib) / NAME / "_data"
        if target.exists():
            shutil.rmtree(target)  # no file removed from the checkout lingers in a later wheel
        for pattern in PACKAGE_DATA:
            for src in sorted(HERE.glob(pattern)):
                dest = target / src.relative_to(HERE)
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(src, dest)


# setuptools' own build folder (build/lib, build/bdist.*), kept out of build/, which in a checkout holds the Pyodide
# assets that `serve.py` assembles (.gitignore ignores it)
BUILD_BASE = ".setuptools-build"
PACKAGES = packages()
setup(packages=list(PACKAGES), package_dir=PACKAGES, cmdclass={"build_py": BuildWithData},
      options={"build": {"build_base": str(HERE / BUILD_BASE)}})
