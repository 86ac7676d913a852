"""The package's metadata as ``pip install ./clients/python`` records it, and its typing."""

import importlib.util
import pathlib
import re
import subprocess
import sys
import tempfile
import tomllib
import unittest

import hearth

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _can_build_offline() -> bool:
    """Whether pip can build the package without downloading its build backend."""
    if importlib.util.find_spec("setuptools") is None:
        return False
    if importlib.util.find_spec("wheel") is not None:
        return True
    import setuptools
    major, minor = (int(p) for p in setuptools.__version__.split(".")[:2])
    return (major, minor) >= (70, 1)


class PackagingTest(unittest.TestCase):
    def test_pyproject_matches_the_package(self) -> None:
        project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
        self.assertEqual(project["version"], hearth.__version__)
        self.assertTrue(project["description"])
        self.assertEqual(project["requires-python"], ">=3.11")
        versions = [c for c in project["classifiers"] if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c)]
        self.assertIn("Programming Language :: Python :: 3.11", versions)
        self.assertIn("Typing :: Typed", project["classifiers"])
        self.assertTrue((ROOT / "hearth" / "py.typed").exists(), "PEP 561 marker")

    @unittest.skipUnless(_can_build_offline(), "setuptools (70.1 or later, or with wheel) is not installed: pip would fetch it")
    def test_pip_install_records_version_description_and_python_versions(self) -> None:
        with tempfile.TemporaryDirectory() as target:
            r = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-build-isolation",
                                "--no-deps", "--target", target, str(ROOT)], capture_output=True, text=True, timeout=300)
            self.assertEqual(r.returncode, 0, r.stderr)
            meta = next(pathlib.Path(target).glob("hearth_client-*.dist-info/METADATA")).read_text()
            self.assertIn(f"Version: {hearth.__version__}", meta)
            self.assertIn("Summary: asyncio client for the Hearth realtime document database daemon (hearthd)", meta)
            self.assertIn("Requires-Python: >=3.11", meta)
            self.assertIn("Classifier: Programming Language :: Python :: 3.11", meta)
            self.assertTrue((pathlib.Path(target) / "hearth" / "py.typed").exists(), "py.typed is installed")
