"""What a Gluon region that returns a tile costs a Triton host: Liger-Kernel's layer-norm forward
(fp32 rows of 4096, 8 warps, as Liger launches it) with its row statistics as a Gluon region,
against the kernel as written. Static figures from the fused binary.

    python bench/region_tiles.py [--target sm90a] [--json build/region_tiles.json]

- ``tile back``: the region returns ``mean``, the centered tile and ``rstd``; the tile arrives
  in the host in Triton's default layout and is converted to the one the host's stores use.
- ``reduced only``: the region returns ``mean`` and ``rstd``; the host keeps the tile and
  centers it itself.
- ``port's layout``: the region computes in one element a thread (as ``hybrid port start``
  writes it), so the loaded tile is converted on entry; ``host's layout``: in the layout Triton
  gives the host's loads (16 bytes a thread), where that conversion folds away.
"""
from __future__ import annotations

import argparse

import triton
import triton.language as tl
from rich.console import Console
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

import hybrid
from bench.output import table, write_json
from interop.targets import TARGETS
from interop.triton import compat

BLOCK, NUM_WARPS = 4096, 8
SIGNATURE = {"y_ptr": "*fp32", "x_ptr": "*fp32", "w_ptr": "*fp32", "b_ptr": "*fp32", "mean_ptr": "*fp32",
             "rstd_ptr": "*fp32", "stride": "i32", "n_cols": "i32", "eps": "fp32"}


def region_layout(target: str):
    """The layout a region written like a port uses: one element per thread, whole warps along the row."""
    return gl.BlockedLayout([1], [TARGETS[target].warp_size], [NUM_WARPS], [0])


def host_layout(target: str):
    """The layout Triton gives the host's fp32 row loads: 16 bytes per thread (checked in the TTGIR)."""
    return gl.BlockedLayout([4], [TARGETS[target].warp_size], [NUM_WARPS], [0])


@gluon.jit
def stats_with_tile(x, n_cols, eps, BLOCK: gl.constexpr, L: gl.constexpr):
    x = gl.convert_layout(x, L)
    mean = gl.sum(x, axis=0) / n_cols
    centered = gl.where(gl.arange(0, BLOCK, layout=L) < n_cols, x - mean, 0.0)
    rstd = gl.rsqrt(gl.sum(centered * centered, axis=0) / n_cols + eps)
    return mean, centered, rstd


@gluon.jit
def stats_only(x, n_cols, eps, BLOCK: gl.constexpr, L: gl.constexpr):
    mean, _, rstd = stats_with_tile(x, n_cols, eps, BLOCK, L)
    return mean, rstd


@triton.jit
def layer_norm(y_ptr, x_ptr, w_ptr, b_ptr, mean_ptr, rstd_ptr, stride, n_cols, eps, BLOCK: tl.constexpr,
               L: tl.constexpr, REGION: tl.constexpr):
    """Liger's ``_layer_norm_forward_kernel`` (``REGION`` 0), with its row statistics from
    ``stats_with_tile`` (1) or ``stats_only`` (2)."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0)
    b = tl.load(b_ptr + cols, mask=mask, other=0.0)
    if REGION == 0:
        mean = tl.sum(x, axis=0) / n_cols
        centered = tl.where(mask, x - mean, 0.0)
        rstd = tl.rsqrt(tl.sum(centered * centered, axis=0) / n_cols + eps)
    elif REGION == 1:
        mean, centered, rstd = stats_with_tile(x, n_cols, eps, BLOCK, L)
    else:
        mean, rstd = stats_only(x, n_cols, eps, BLOCK, L)
        centered = tl.where(mask, x - mean, 0.0)
    tl.store(mean_ptr + row, mean)
    tl.store(rstd_ptr + row, rstd)
    tl.store(y_ptr + row * stride + cols, centered * rstd * w + b, mask=mask)


#: variant -> (REGION, the region's layout for a target)
VARIANTS = {"triton": (0, region_layout),
            "tile back, port's layout": (1, region_layout),
            "tile back, host's layout": (1, host_layout),
            "reduced only, port's layout": (2, region_layout),
            "reduced only, host's layout": (2, host_layout)}


def measure(target: str) -> list[dict]:
    rows = []
    kernel = hybrid.jit(layer_norm)
    for name, (region, layout) in VARIANTS.items():
        fb = hybrid.compile(kernel, SIGNATURE, {"BLOCK": BLOCK, "L": layout(target), "REGION": region}, target=target,
                            num_warps=NUM_WARPS, divisible=("stride", ))   # a launch with rows of 4096
        totals = fb.report()["totals"]
        rows.append({"variant": name, "shared_bytes": totals["shared_bytes"], "instructions": totals["instructions"],
                     "converts": fb.asm["ttgir"].count("ttg.convert_layout"), "regions": len(fb.regions)})
    return rows


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="sm90a", choices=list(TARGETS))
    parser.add_argument("--json", default="build/region_tiles.json")
    args = parser.parse_args(argv)
    rows = measure(args.target)
    Console(width=120).print(table(
        f"Liger layer-norm forward, fp32 rows of {BLOCK}, {NUM_WARPS} warps, {args.target}",
        ("variant", "shared memory (B)", "instructions", "convert_layout ops (TTGIR)", "Gluon regions"),
        ([r["variant"], str(r["shared_bytes"]), str(r["instructions"]), str(r["converts"]), str(r["regions"])]
         for r in rows)))
    write_json(args.json, {"target": args.target, "triton": compat.TRITON_VERSION, "rows": rows})


if __name__ == "__main__":
    main()
