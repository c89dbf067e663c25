"""Machine-code parity of ports written from Triton's IR (``hybrid.port.from_ttgir``).

    python bench/port_parity.py [--targets all] [--only NAME,NAME] [--json PATH]

Each ``@triton.jit`` function a kernel of ``bench/parity_ports.py`` calls (vector add's ``add``,
the matmul's ``leaky_relu`` and its ``mainloop``, layer norm's ``row_moments_triton``, upstream layer norm's
``load_row``, its normalization and store ``normalize_store`` (an expression the kernel shares with
it) and backward's ``accumulate_partial`` (a lock spun on in a ``while`` loop), upstream seeded
dropout's ``dropout_store`` (``tl.rand``'s Philox constants), upstream layer norm forward's mean loop's
``row_block`` (as the tutorial loops, and in a pipelined loop: its load a caller load the loop pipelines),
upstream matmul's ``k_loop`` (its K loop as a helper) and upstream fused softmax's
``softmax_row`` (the row, inside the kernel's pipelined loop; and that loop as a function,
``softmax_row_loop``) in their Triton kernels, attention's
``kv_loop`` (and under a causal mask, at two sites: ``multisite_cases``), the descriptor persistent
matmul's ``persistent_tiles_desc``, its ``k_loop_desc`` and ``store_tile_desc`` taking the descriptors its
all-Triton kernel made (TMA descriptors on sm90a/sm100a, ``hybrid.PointerDescriptor`` elsewhere) and its
subtiled epilogue ``store_tile_subtiled`` (upstream's EPILOGUE_SUBTILE), upstream fused attention's inner
loop ``_attn_fwd_inner`` (K and V descriptors in) and its backward's ``_attn_bwd_dkdv`` and
``_attn_bwd_dq`` (each called at two sites), and where the target has TMA ``tile_pids``,
``k_loop_desc`` and ``store_tile_desc`` taking the descriptors a Gluon host made; in a Gluon host, and ``add``, ``leaky_relu``
and ``persistent_tiles_desc`` in their all-Triton kernels too), and
every one a kernel of the examples calls directly (built as the example's ``run()`` launches it on
``problem(*CHECK_SIZE)``), is ported for each target and swapped back into its kernel; the kernel is built with and without
the port and their machine code compared: SASS (``cuobjdump``) or
AMDGCN instructions, registers, shared memory, the build's boundary conversions and the kernel's conversions that
move data (``movement.moving_conversions``). Goal:
every row ports, instructions within 2%, shared memory no higher, no added conversions, and no
caveat (a port whose loads the kernel's own loop pipelined is not that kernel's machine code). A
row that is refused says why (the op and its line).
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rich.console import Console  # noqa: E402

import hybrid  # noqa: E402
from bench import parity_ports as pp  # noqa: E402
from bench.kernels import SUITE, load  # noqa: E402
from bench.output import table, write_json  # noqa: E402
from bench.parity import figures  # noqa: E402
from examples import attention  # noqa: E402
from examples.layernorm import row_moments_triton  # noqa: E402
from examples.layouts import has_tma, row_layout, stores_from_dot_layout, tile_layout, vector_layout  # noqa: E402
from hybrid.port import PortError, from_ttgir, with_region  # noqa: E402
from hybrid.port.compare import as_hybrid  # noqa: E402
from hybrid.port.launch import build_for_problem, run_variant  # noqa: E402
from hybrid.port.names import is_triton, jit_callees, jit_function  # noqa: E402
from hybrid.port.render import has_problem  # noqa: E402
from triton.runtime import JITFunction  # noqa: E402
from interop.triton.frontend import GluonJITFunction  # noqa: E402
from interop.boundaries.movement import moving_conversions  # noqa: E402
from interop.targets import TARGETS  # noqa: E402

INSTRUCTION_GOAL = 1.02
COLUMNS = ("function", "kernel", "host", "target", "instr port / orig", "regs port / orig", "smem B port / orig", "boundary cvt",
           "kernel cvt", "goal")
MATMUL = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "K": "i32"}
LAYERNORM = {"x_ptr": "*fp16", "w_ptr": "*fp16", "b_ptr": "*fp16", "y_ptr": "*fp16", "n_cols": "i32", "eps": "fp32"}


def cases(target: str) -> list[tuple]:
    """(function, kernel, signature, constexprs, options) for every ported call."""
    matmul = pp.matmul_act_gluon_host_constexprs(target)
    tiles = {k: v for k, v in attention.tiles(target, 64).items() if k in ("BM", "BN")}
    options = attention.options(target, 64)
    return [
        (pp.add, pp.add_gluon_host, {"x_ptr": "*fp32", "y_ptr": "*fp32", "z_ptr": "*fp32", "n": "i32"},
         {"BLOCK": 1024, "L": vector_layout(target, pp.NUM_WARPS)}, {"num_warps": pp.NUM_WARPS}),
        (pp.leaky_relu, pp.matmul_act_gluon_host, MATMUL, matmul, {"num_warps": pp.NUM_WARPS, "divisible": ("K", )}),
        (pp.mainloop, pp.matmul_act_gluon_host, MATMUL, matmul, {"num_warps": pp.NUM_WARPS, "divisible": ("K", )}),
        (row_moments_triton, pp.layernorm_gluon_host, LAYERNORM,
         {"BM": 4, "BN": 1024, "L": row_layout(target, pp.NUM_WARPS, 1024, 8)},
         {"num_warps": pp.NUM_WARPS, "divisible": ("n_cols", )}),
        (pp.add, pp.add_triton, {"x_ptr": "*fp32", "y_ptr": "*fp32", "z_ptr": "*fp32", "n": "i32"},
         {"BLOCK": 1024}, {"num_warps": pp.NUM_WARPS}),
        (pp.leaky_relu, pp.matmul_act_triton, MATMUL, pp.MATMUL_TILES,
         {"num_warps": pp.NUM_WARPS, "divisible": ("K", )}),
        (pp.load_row, pp.layer_norm_fwd, pp.LAYER_NORM, {"BLOCK_SIZE": 1024}, {"num_warps": pp.NUM_WARPS}),
        (pp.accumulate_partial, pp.layer_norm_bwd_dx, pp.LAYER_NORM_BWD, {"GROUP_SIZE_M": 64, "BLOCK_SIZE_N": 1024},
         {"num_warps": 8}),
        (pp.normalize_store, pp.layer_norm_fwd_store, pp.LAYER_NORM_STORE, {"BLOCK_SIZE": 1024},
         {"num_warps": pp.NUM_WARPS}),
        (pp.dropout_store, pp.seeded_dropout, pp.SEEDED_DROPOUT, {"BLOCK_SIZE": 1024}, {"num_warps": pp.NUM_WARPS}),
        *((pp.row_block, kernel, pp.LAYER_NORM_MEAN, {"BLOCK_SIZE": 1024},
           {"num_warps": pp.NUM_WARPS, "divisible": ("stride", "N")})
          for kernel in (pp.layer_norm_mean, pp.layer_norm_mean_pipelined)),
        (pp.k_loop, pp.matmul_k_loop, pp.MATMUL_K_LOOP, pp.MATMUL_K_LOOP_TILES,
         {"num_warps": pp.NUM_WARPS, "num_stages": 2}),
        *((fn, kernel, pp.SOFTMAX_ROWS, {"BLOCK_SIZE": 1024, "num_stages": 2}, {"num_warps": 8})
          for fn, kernel in ((pp.softmax_row, pp.softmax_rows), (pp.softmax_row_loop, pp.softmax_rows_by_loop))),
        (attention.kv_loop, pp.attention_gluon_host, attention.SIGNATURE,
         {"HEAD_DIM": 64, **tiles, "L": tile_layout(target, options.get("num_warps", pp.NUM_WARPS)),
          "STORE_FROM_ACC": stores_from_dot_layout(target)},
         {"divisible": attention.DIVISIBLE, **options}),
        *((pp.persistent_tiles_desc, kernel, pp.PERSISTENT_SIGNATURE, pp.PERSISTENT_CONSTEXPRS,
           {"num_warps": pp.NUM_WARPS, "divisible": pp.PERSISTENT_DIVISIBLE})
          for kernel in (pp.matmul_descriptor_persistent_gluon_host, pp.matmul_descriptor_persistent)),
        *((fn, pp.matmul_descriptor_persistent_gluon_tma, pp.PERSISTENT_SIGNATURE, pp.PERSISTENT_CONSTEXPRS,
           {"num_warps": pp.NUM_WARPS, "divisible": pp.PERSISTENT_DIVISIBLE})
          for fn in ((pp.tile_pids, pp.k_loop_desc, pp.store_tile_desc) if has_tma(target) else ())),
        *((fn, pp.matmul_descriptor_persistent_tma, pp.PERSISTENT_SIGNATURE, pp.PERSISTENT_CONSTEXPRS,
           {"num_warps": pp.NUM_WARPS, "divisible": pp.PERSISTENT_DIVISIBLE})
          for fn in (pp.k_loop_desc, pp.store_tile_desc)),
        (pp.store_tile_subtiled, pp.matmul_descriptor_persistent_subtiled, pp.PERSISTENT_SIGNATURE,
         pp.PERSISTENT_CONSTEXPRS, {"num_warps": pp.NUM_WARPS, "divisible": pp.PERSISTENT_DIVISIBLE}),
        (pp._attn_fwd_inner, pp.attn_fwd, pp.ATTN_SIGNATURE, pp.ATTN_CONSTEXPRS, {"num_warps": 4, "num_stages": 2}),
        *multisite_cases(target),
    ]


def multisite_cases(target: str) -> list[tuple]:
    """Functions their kernel calls at sites Triton lowers differently, one port per
    specialization: attention's ``kv_loop`` under a causal mask (its unmasked blocks, then the
    masked diagonal, both called in ``attention_loop``), and the test kernels in upstream
    attention backward's pattern (``tests/multisite_port_kernels.py``: another constexpr and tile
    at each site, in a Triton host and, where warps are 32 wide as its layout's, a Gluon one;
    another tile shape only; another rank only), and upstream attention backward's own
    ``_attn_bwd_dkdv`` and ``_attn_bwd_dq`` in ``_attn_bwd`` (``bench/parity_ports.py``)."""
    from tests import multisite_port_kernels as m
    hosts = (m.k_two_phase, m.k_two_phase_gluon) if TARGETS[target].warp_size == 32 else (m.k_two_phase, )
    return [
        (attention.kv_loop, attention.attention_kernel, attention.SIGNATURE, attention.constexprs(target, 64, True),
         {"divisible": attention.DIVISIBLE, **attention.options(target)}),
        *((m.accumulate_rows, kernel, m.SIGNATURE, m.CONSTEXPRS, {"num_warps": 4}) for kernel in hosts),
        (m.scale_by_row_sums, m.k_two_shapes, m.SIGNATURE, {"N": 32}, {"num_warps": 4}),
        (m.exp2_f32, m.k_two_ranks, m.SIGNATURE, {"N": 16}, {"num_warps": 4}),
        *((fn, pp._attn_bwd, pp.ATTN_BWD_SIGNATURE, pp.ATTN_BWD_CONSTEXPRS, pp.ATTN_BWD_OPTIONS)
          for fn in (pp._attn_bwd_dkdv, pp._attn_bwd_dq)),
    ]


def example_cases(target: str) -> list[tuple]:
    """(function, kernel, signature, constexprs, options) for every @triton.jit function that a
    kernel of an example (``bench.kernels.SUITE``) calls directly, built as the example's ``run()``
    launches it on ``problem(*CHECK_SIZE)``; a kernel that cannot be built so is a ``str`` (why)."""
    out: list = []
    for example in load(SUITE):
        if not has_problem(example):
            continue
        for name, kernel in vars(example).items():
            kernel = jit_function(kernel)
            if not isinstance(kernel, JITFunction) or kernel.fn.__module__ != example.__name__:
                continue
            called = [fn for fn in jit_callees(kernel).values() if is_triton(fn)]
            variant = run_variant(example, name) if called else None
            if variant is None:
                continue
            try:
                signature, constexprs, options = build_for_problem(example, name, variant, target)
            except Exception as exc:   # noqa: BLE001 - a row that says why
                out.append(f"{example.__name__}.{name}: not built from problem() here ({type(exc).__name__}: {exc})")
                continue
            out.extend((fn, kernel, signature, constexprs, options) for fn in called)
    return out


def kernel_name(kernel) -> str:
    """``module.kernel``, the module's last name only (two examples name their kernel alike)."""
    fn = jit_function(kernel)
    return f"{fn.fn.__module__.rsplit('.', 1)[-1]}.{fn.__name__}"


def is_gluon(kernel) -> bool:
    return isinstance(jit_function(kernel), GluonJITFunction)


def row(fn, kernel, signature: dict, constexprs: dict, options: dict, target: str) -> dict:
    out = {"function": fn.__name__, "kernel": kernel_name(kernel),
           "host": "gluon" if is_gluon(kernel) else "triton", "target": target}
    original = hybrid.compile(as_hybrid(kernel), signature, constexprs, target, **options)
    out["original"] = _figures(original, target)
    try:
        ported = from_ttgir.port(kernel, fn, signature, constexprs, target, **options)
    except PortError as exc:
        out["refused"] = str(exc)
        return out
    out["made_in_place"] = sorted(ported.made_in_place)   # what the caller could make in the port's layouts
    out["caveats"] = list(ported.caveats)   # what the kernel with the port does differently (its loop's pipelining)
    out["differs"] = ported.differs          # why its machine code differs, where the port knows
    candidate = from_ttgir.load_port(ported.source, ported.name, Path(f"{ported.name}.py"))
    swapped = hybrid.compile(with_region(kernel, fn, candidate), signature, constexprs, target, **options)
    out["port"] = _figures(swapped, target)
    port, orig = out["port"], out["original"]
    out["ratio"] = port["instructions"] / orig["instructions"] if orig["instructions"] else None
    # "No added conversions" counts the kernel's that move data: a boundary conversion the
    # all-Triton kernel also makes (an MMA tile converted for its store) is not added by the port.
    out["goal"] = bool(out["ratio"] is not None and out["ratio"] <= INSTRUCTION_GOAL
                       and port["shared_bytes"] <= orig["shared_bytes"]
                       and port["moving_conversions"] <= orig["moving_conversions"] and not ported.caveats)
    return out


def _figures(compiled, target: str) -> dict:
    """``bench.parity.figures`` with the build's boundary conversions and the kernel's conversions
    that move data (``moving_conversions``)."""
    return figures(compiled) | {"conversions": sum(b.conversions for b in compiled.boundaries),
                                "moving_conversions": moving_conversions(compiled.asm["ttgir"], target)}


def cells(r: dict) -> tuple:
    if "refused" in r:
        return (r["function"], r.get("kernel", ""), r["host"], r["target"], "refused", "", "", "", "",
                r["refused"].split(": ", 1)[-1][:90])
    p, o = r["port"], r["original"]
    return (r["function"], r["kernel"], r["host"], r["target"], f"{p['instructions']} / {o['instructions']} ({r['ratio']:.3f})",
            f"{p['registers']} / {o['registers']}", f"{p['shared_bytes']} / {o['shared_bytes']}",
            f"{p['conversions']} / {o['conversions']}", f"{p['moving_conversions']} / {o['moving_conversions']}",
            "met" if r["goal"] else "MISSED" + (_differs_note(r) or _constants_note(r)) + _caveats_note(r))


def _constants_note(r: dict) -> str:
    """Why a Gluon-host row can miss with a port that has the region's ops: the caller's splat
    constants and index arithmetic, which the kernel with the region made in the region's layouts
    at its boundary."""
    names = r.get("made_in_place")
    return f" (the caller's {', '.join(names)}, made in place at the boundary, are converted)" if names else ""


def _differs_note(r: dict) -> str:
    """Why the kernel with the port is not the kernel's machine code, as the port says (AMD's buffer ops)."""
    return f" ({r['differs'].split(';')[0]})" if r.get("differs") else ""


def _caveats_note(r: dict) -> str:
    """A row whose port is not the kernel's machine code whatever its counts: the kernel's own loop
    pipelined the function's loads, which a Gluon call hides from Triton's pipeliner."""
    return " (the kernel's loop pipelined the function's loads; the port's are not)" if r.get("caveats") else ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", default="all")
    parser.add_argument("--only", default="")
    parser.add_argument("--json", default="build/port_parity.json")
    args = parser.parse_args()
    targets = list(TARGETS) if args.targets == "all" else args.targets.split(",")
    only = set(filter(None, args.only.split(",")))
    rows = []
    for target in targets:
        for case in cases(target) + example_cases(target):
            if isinstance(case, str):
                rows.append({"function": "", "kernel": case.split(":")[0], "host": "", "target": target,
                             "refused": case})
                continue
            fn, kernel, signature, constexprs, options = case
            if not only or fn.__name__ in only:
                try:
                    rows.append(row(fn, kernel, signature, constexprs, options, target))
                except Exception as exc:   # noqa: BLE001 - the original kernel itself does not build here
                    rows.append({"function": fn.__name__, "kernel": kernel_name(kernel), "host": "",
                                 "target": target,
                                 "refused": f"the kernel does not build: {type(exc).__name__}: {exc}"})
    Console().print(table("Ports written from Triton's IR, swapped back into their kernels", COLUMNS,
                          [cells(r) for r in rows]))
    write_json(args.json, rows)


if __name__ == "__main__":
    main()
