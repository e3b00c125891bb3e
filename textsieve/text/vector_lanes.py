"""The scaffolding shared by the lane-parallel hash kernels (SHA-1 in `dedup.sha1_kernel`, MD5 in
`text.md5_lanes`): how many lanes a vector register holds here, the check that a kernel's
arrays are the (rows, LANES) uint32 tables it expects, and the LLVM IR helpers a
``@intrinsic`` compression uses to load, store, splat and rotate ``<LANES x i32>`` rows.
Each kernel keeps only its own rounds."""

from __future__ import annotations

from typing import Any

from llvmlite import ir
from numba.core import config, types


def _default_lanes() -> int:
    # numba.core.config sets its options at import time, so they are invisible to type checkers
    if getattr(config, "CPU_NAME", None) or getattr(config, "CPU_FEATURES", None):  # portable/AOT builds: conservative
        return 8
    try:
        import llvmlite.binding as llvm

        return 16 if llvm.get_host_cpu_features().get("avx512f", False) else 8
    except Exception:  # pragma: no cover - exotic llvmlite builds
        return 8


#: messages hashed per vector compression (one 512-bit or 256-bit register of uint32)
LANES = _default_lanes()


def lane_tables(*arrays: Any) -> bool:
    """Are the intrinsic's arguments all C-contiguous 2-D uint32 arrays (its (rows, LANES) tables)?"""
    return all(isinstance(a, types.Array) and (a.dtype, a.ndim, a.layout) == (types.uint32, 2, "C") for a in arrays)


class LaneIR:
    """IR helpers over the (rows, LANES) uint32 arrays passed to an intrinsic: `rows(k)` are
    pointers to each array's rows as ``<LANES x i32>`` vectors."""

    def __init__(self, context: Any, builder: ir.IRBuilder, signature: Any, args: Any):
        self.builder = builder
        self.i32 = ir.IntType(32)
        self.vec = ir.VectorType(self.i32, LANES)
        self.ptrs = [builder.bitcast(context.make_array(t)(context, builder, a).data, self.vec.as_pointer())
                     for t, a in zip(signature.args, args)]

    def row(self, arg: int, i: int) -> Any:
        """Pointer to row `i` of argument `arg`."""
        return self.builder.gep(self.ptrs[arg], [ir.Constant(ir.IntType(64), i)])

    def load(self, arg: int, n: int) -> list[Any]:
        """Rows 0..n-1 of argument `arg`, as vectors."""
        return [self.builder.load(self.row(arg, i), align=4) for i in range(n)]

    def store(self, arg: int, values: list[Any]) -> None:
        for i, v in enumerate(values):
            self.builder.store(v, self.row(arg, i), align=4)

    def splat(self, x: int) -> Any:
        """The constant `x` in every lane."""
        return ir.Constant(self.vec, [ir.Constant(self.i32, x)] * LANES)

    def rotl(self, x: Any, n: int) -> Any:
        """Rotate every lane left by `n` bits."""
        b = self.builder
        return b.or_(b.shl(x, self.splat(n)), b.lshr(x, self.splat(32 - n)))
