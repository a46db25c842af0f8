"""Build hook for the wheel (the project's metadata is in pyproject.toml).

A checkout keeps the op contract, bench cases, WGSL templates, tuning tables and the web app at the
repository root; the wheel carries them as package data under app/_data, where app/contract.py finds them
through importlib.resources.
"""
import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
PACKAGE_DATA = ["manifest.json", "metadata.json", "bench.json", "test.json", "templates/*.wgsl.jinja",
                "tuning/*.json", "web/*.html", "web/*.css", "web/runtime/*.mjs", "web/runtime/*.d.ts", "web/views/*.mjs"]


class BuildWithData(build_py):
    def run(self):
        super().run()
        target = Path(self.build_lib) / "app" / "_data"
        if target.exists():
            shutil.rmtree(target)  # no file removed from the checkout lingers in a later wheel
        for pattern in PACKAGE_DATA:
            for src in sorted(HERE.glob(pattern)):
                dest = target / src.relative_to(HERE)
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(src, dest)


setup(cmdclass={"build_py": BuildWithData})
