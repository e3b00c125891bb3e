"""Build hook for textsieve's optional native kernels (everything else is in pyproject.toml).

``textsieve/native/*.c`` use no Python API: each is compiled into a plain shared library that
``textsieve.native`` loads with ctypes, so building them needs only a C compiler, not the Python
headers. They are optional: when one cannot be built, pip still installs textsieve and its
callers fall back to the numba kernels (same values, a one-time JIT compile, more memory).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "textsieve.native._rpv2_minhash",
            sources=["textsieve/native/rpv2_minhash.c"],
            extra_compile_args=["-O3", "-std=gnu11", "-Wno-psabi"],
            optional=True,
        ),
        Extension(  # annotate's raw-text scan and word statistics: no JIT wait, no numba in the worker
            "textsieve.native._annotate_scan",
            sources=["textsieve/native/annotate_scan.c"],
            extra_compile_args=["-O3", "-std=gnu11", "-ffp-contract=off"],
            libraries=["m"],
            optional=True,
        ),
        Extension(  # the extraction engine's kernels: boilerplate marking, blocks, features, the classifier's trees
            "textsieve.native._extract",
            sources=["textsieve/native/extract_kernels.c"],
            extra_compile_args=["-O3", "-std=gnu11", "-ffp-contract=off", "-Wno-psabi"],
            libraries=["m"],
            optional=True,
        ),
        Extension(  # py3langid's DFA walk and scores: language id without importing numba
            "textsieve.native._langid",
            sources=["textsieve/native/langid_kernels.c"],
            extra_compile_args=["-O3", "-std=gnu11", "-ffp-contract=off"],
            libraries=["m"],
            optional=True,
        ),
    ]
)
