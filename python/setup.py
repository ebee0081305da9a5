"""Builds llmpack._llmpack with the project's CMake (the extension links the
C++ layers as static libraries), then packages it with the pure-Python
modules. Offline with Debian's packages:

    pip install --no-build-isolation ./python

Environment: LLMPACK_JOBS (parallel build jobs, default: all cores),
LLMPACK_CMAKE_ARGS (extra configure arguments).
"""

import os
import pathlib
import shlex
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent


class CMakeExtension(Extension):
    def __init__(self, name: str) -> None:
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    def build_extension(self, ext: Extension) -> None:
        if not (REPO / "CMakeLists.txt").exists():
            raise RuntimeError(f"llmpack sources not found at {REPO}; install from a checkout of the repository")
        build_dir = pathlib.Path(self.build_temp).resolve() / "cmake"
        build_dir.mkdir(parents=True, exist_ok=True)
        configure = [
            "cmake", "-S", str(REPO), "-B", str(build_dir),
            "-DCMAKE_BUILD_TYPE=Release",
            "-DLLMPACK_BUILD_TESTS=OFF",
            "-DLLMPACK_BUILD_PYTHON=ON",
            f"-DPython3_EXECUTABLE={sys.executable}",
        ]
        if shutil.which("ninja"):
            configure += ["-G", "Ninja"]
        configure += shlex.split(os.environ.get("LLMPACK_CMAKE_ARGS", ""))
        subprocess.run(configure, check=True)
        jobs = os.environ.get("LLMPACK_JOBS", str(os.cpu_count() or 1))
        subprocess.run(["cmake", "--build", str(build_dir), "--target", "_llmpack", "-j", jobs], check=True)
        built = sorted((build_dir / "python" / "llmpack").glob("_llmpack*.so"))
        if not built:
            raise RuntimeError(f"the CMake build produced no _llmpack module in {build_dir}/python/llmpack "
                               "(is pybind11 installed? apt install pybind11-dev)")
        target = pathlib.Path(self.get_ext_fullpath(ext.name))
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(built[0], target)


setup(ext_modules=[CMakeExtension("llmpack._llmpack")], cmdclass={"build_ext": CMakeBuild})
