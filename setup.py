"""The compiled simulator core: build_core.py writes it from the package's @core functions,
Cython and the C compiler build it. Everything else is in pyproject.toml."""
import os
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import build_core  # noqa: E402
from Cython.Build import cythonize  # noqa: E402

pyx = os.path.join("src", "sgdsim", "_core.pyx")
build_core.write(pyx)
# -ffp-contract=off: no fused multiply-adds, so the compiled core rounds as Python does and
# gives the pure-Python path's answers to the bit; -g0: no debug information (a third of the
# compile time)
core = Extension("sgdsim._core", [pyx], extra_compile_args=["-O3", "-g0", "-ffp-contract=off"])


class BuildCore(build_ext):
    """GCC inlines the heaps' and the engine's small functions into their callers only when
    allowed larger functions than its default: 5 % fewer instructions per simulated op
    (docs/benchmarks.md). Other compilers build with the flags above."""

    def build_extensions(self):
        if "gcc" in os.path.basename(self.compiler.compiler_so[0]):
            for ext in self.extensions:
                ext.extra_compile_args.append("-finline-limit=2000")
        super().build_extensions()


setup(ext_modules=cythonize([core], quiet=True, compiler_directives={"language_level": 3}),
      cmdclass={"build_ext": BuildCore})
