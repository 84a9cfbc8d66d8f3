"""Build hook only (the project is declared in pyproject.toml): a wheel carries the
declarative folders pipelines/ and dialects/ under ``xgen_mlir/_data/``, where
``xgen_mlir._paths`` looks first. An editable install reads them from the checkout."""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
DATA_FOLDERS = ("pipelines", "dialects")


class BuildPyWithData(build_py):
    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        for name in DATA_FOLDERS:
            dst = Path(self.build_lib) / "xgen_mlir" / "_data" / name
            shutil.rmtree(dst, ignore_errors=True)
            shutil.copytree(ROOT / name, dst)


setup(cmdclass={"build_py": BuildPyWithData})
