"""Build hook for textsieve's one optional native kernel (everything else is in pyproject.toml).

``textsieve/native/rpv2_minhash.c`` uses no Python API: it is compiled into a plain shared
library that ``textsieve.native`` loads with ctypes, so building it needs only a C compiler,
not the Python headers. It is optional: when it cannot be built, pip still installs textsieve
and the MinHash signatures fall back to the numba kernel (same values, more memory).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "textsieve.native._rpv2_minhash",
            sources=["textsieve/native/rpv2_minhash.c"],
            extra_compile_args=["-O3", "-std=gnu11", "-Wno-psabi"],
            optional=True,
        )
    ]
)
