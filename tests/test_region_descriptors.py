"""A Triton kernel's tensor descriptor passed into a Gluon function: on sm90a and sm100a the
function takes it as Gluon's TMA descriptor, in the shared layout Triton's passes gave it (made
on the device, or a ``TensorDescriptor`` argument), compiled to one kernel and interpreted as the
all-Triton kernel; on sm80 and AMD, where Triton lowers it to a pointer, shape and strides, as a
``hybrid.PointerDescriptor`` of those, loaded and stored through as Triton's lowering does
(``hybrid.load_block``/``store_block``: one function for every target)."""
import re

import pytest
import torch
import triton.language as tl
from triton.experimental.gluon import language as gl
from triton.tools.tensor_descriptor import TensorDescriptor

import hybrid
from hybrid.port.compare import figures
from interop.errors import LayoutError, RegionError
from tests import region_descriptor_kernels as k

pytestmark = pytest.mark.version

LINE = k.double_tiles.fn.__code__.co_firstlineno + 6   # the call of load_tile (after two decorators)
TMA_OPS = ("ttng.async_tma_copy_global_to_local", "ttng.async_tma_copy_local_to_global")
HOST_SIGNATURE = {"x_desc": "tensordesc<fp16[64, 64]>", "y_desc": "tensordesc<fp16[64, 64]>"}


def _layout(target: str):
    lanes = [8, 8] if target.startswith("gfx") else [4, 8]
    return gl.BlockedLayout([1, 8], lanes, [4, 1], [1, 0])


def _constexprs(target: str) -> dict:
    return {"BM": k.BM, "BN": k.BN, "L": _layout(target)}


def _interpreted(kernel, target: str) -> tuple:
    x = torch.randn(128, 64).half()
    y = torch.zeros_like(x)
    with hybrid.interpreting(target):
        kernel[(2, )](x, y, 128, 64, **_constexprs(target), num_warps=4)
    return x, y


@pytest.mark.parametrize("target", ["sm90a", "sm100a"])
def test_a_device_descriptor_enters_a_gluon_region_as_a_tma_descriptor(target):
    built = hybrid.compile(k.double_tiles, k.SIGNATURE, _constexprs(target), target, num_warps=4,
                           divisible=("M", "N"))
    ttgir = built.asm["ttgir"]
    assert built.kernel_entries == 1 and "tt.call" not in ttgir and "hybrid_gluon_in" not in ttgir
    assert all(op in ttgir for op in TMA_OPS) and ttgir.count("ttng.tensormap_create") == 2
    # the region's buffers are in the descriptor's layout: the one Triton's passes gave it
    assert "64x64xf16, #shared>" in ttgir.split("ttng.reinterpret_tensor_descriptor")[1].split("\n")[0]
    assert "!ttg.memdesc<64x64xf16, #shared, #smem, mutable>" in ttgir
    x, y = _interpreted(k.double_tiles, target)
    torch.testing.assert_close(y, x * 2, rtol=0, atol=0)


@pytest.mark.parametrize("target", ["sm90a", "sm100a"])
def test_the_interpreter_agrees_with_the_all_triton_kernel(target):
    torch.manual_seed(0)
    _, hybrid_out = _interpreted(k.double_tiles, target)
    torch.manual_seed(0)
    _, triton_out = _interpreted(k.double_tiles_triton, target)
    torch.testing.assert_close(hybrid_out, triton_out, rtol=0, atol=0)


@pytest.mark.parametrize("target", ["sm90a", "sm100a"])
def test_a_host_tensor_descriptor_argument_enters_a_gluon_region(target):
    constexprs = {"BM": k.BM, "L": _layout(target)}
    built = hybrid.compile(k.double_host_tiles, HOST_SIGNATURE, constexprs, target, num_warps=4)
    ttgir = built.asm["ttgir"]
    assert built.kernel_entries == 1 and all(op in ttgir for op in TMA_OPS) and "ttng.tensormap_create" not in ttgir
    x = torch.randn(128, 64).half()
    y = torch.zeros_like(x)
    with hybrid.interpreting(target):
        k.double_host_tiles[(2, )](TensorDescriptor.from_tensor(x, [64, 64]), TensorDescriptor.from_tensor(y, [64, 64]),
                                   **constexprs, num_warps=4)
    torch.testing.assert_close(y, x * 2, rtol=0, atol=0)


@pytest.mark.parametrize("target", ["sm80", "gfx942"])
def test_without_tma_a_device_descriptor_enters_a_gluon_region_as_triton_lowers_it(target):
    """The Gluon function takes the pointer, shape and strides and loads and stores through them
    as Triton's lowering of ``desc.load``/``desc.store`` does: the all-Triton kernel's loads and
    stores, its instruction count within 2%, and its results in the interpreter."""
    built, triton_built = (hybrid.compile(kernel, k.SIGNATURE, _constexprs(target), target, num_warps=4,
                                          divisible=("M", "N")) for kernel in (k.double_blocks, k.double_tiles_triton))
    ttgir = built.asm["ttgir"]
    assert built.kernel_entries == 1 and "tt.call" not in ttgir and "hybrid_gluon_in" not in ttgir
    assert "tensordesc" not in ttgir and not any(op in ttgir for op in TMA_OPS)
    assert ttgir.count("tt.load ") == ttgir.count("tt.store ") == 1
    code = built.asm["amdgcn" if target.startswith("gfx") else "ptx"]
    triton_code = triton_built.asm["amdgcn" if target.startswith("gfx") else "ptx"]
    for access in (r"global_load|buffer_load|ld\.global", r"global_store|buffer_store|st\.global"):
        assert len(re.findall(access, code)) == len(re.findall(access, triton_code)) > 0
    assert figures(built)["instructions"] <= figures(triton_built)["instructions"] * 1.02
    torch.manual_seed(0)
    x, hybrid_out = _interpreted(k.double_blocks, target)
    torch.manual_seed(0)
    _, triton_out = _interpreted(k.double_tiles_triton, target)
    torch.testing.assert_close(hybrid_out, triton_out, rtol=0, atol=0)
    torch.testing.assert_close(hybrid_out, x * 2, rtol=0, atol=0)


@pytest.mark.parametrize("target", ["sm90a", "sm100a"])
def test_the_portable_gluon_function_copies_by_tma_where_the_target_has_it(target):
    built = hybrid.compile(k.double_blocks, k.SIGNATURE, _constexprs(target), target, num_warps=4, divisible=("M", "N"))
    assert all(op in built.asm["ttgir"] for op in TMA_OPS) and "tt.load " not in built.asm["ttgir"]
    x, y = _interpreted(k.double_blocks, target)
    torch.testing.assert_close(y, x * 2, rtol=0, atol=0)


@pytest.mark.parametrize("target", ["sm80", "gfx942"])
def test_without_tma_a_host_descriptor_enters_with_its_padding_option(target):
    """A ``TensorDescriptor`` argument's padding option is a kernel argument there: the region's
    loads read it (NaN where the host asked for it, past the tensor's last row)."""
    constexprs = {"BM": k.BM, "L": _layout(target)}
    built = hybrid.compile(k.padded_host_blocks, {"x_desc": HOST_SIGNATURE["x_desc"], "y_ptr": "*fp16"}, constexprs,
                           target, num_warps=4)
    ttgir = built.asm["ttgir"]
    padding = re.search(r"%([\w.]+): i1\b", ttgir.split("tt.func public")[1].split("{")[0]).group(1)
    assert re.search(rf"arith\.select %{re.escape(padding)}, ", ttgir), padding
    for option, fill in (("zero", 0.0), ("nan", float("nan"))):
        x = torch.randn(100, 64).half()
        y = torch.full((128, 64), 7.0).half()
        with hybrid.interpreting(target):
            k.padded_host_blocks[(2, )](TensorDescriptor.from_tensor(x, [64, 64], padding=option), y, **constexprs,
                                        num_warps=4)
        torch.testing.assert_close(y[:100], x, rtol=0, atol=0)
        torch.testing.assert_close(y[100:], torch.full((28, 64), fill).half(), rtol=0, atol=0, equal_nan=True)


@pytest.mark.parametrize("target", ["sm80", "gfx942"])
def test_without_tma_a_tma_copy_through_the_descriptor_is_refused_alike_saying_what_to_use(target):
    """``load_tile`` copies by TMA (``desc.layout``, ``desc.dtype``): a PointerDescriptor has
    neither, named by the compiler and the interpreter alike, at the call site."""
    with pytest.raises(RegionError) as compiled:
        hybrid.compile(k.double_tiles, k.SIGNATURE, _constexprs(target), target, num_warps=4, divisible=("M", "N"))
    with pytest.raises(RegionError) as interpreted:
        _interpreted(k.double_tiles, target)
    assert str(compiled.value) == str(interpreted.value)
    text = str(compiled.value)
    assert "a tensor descriptor from Triton code has no 'dtype' here" in text and "hybrid.PointerDescriptor" in text
    assert f"region_descriptor_kernels.py:{LINE}" in text and "hybrid.load_block(desc, offsets, layout)" in text
    assert compiled.value.function == interpreted.value.function == "load_tile"


def test_a_buffer_in_another_layout_than_the_descriptors_is_refused_naming_both():
    """Refused on every Triton (3.6 does not verify the layouts of a TMA copy and would build it),
    and by the interpreter, at the copy's line."""
    with pytest.raises(RegionError) as caught:
        hybrid.compile(k.load_into_another_layout, k.SIGNATURE, _constexprs("sm90a"), "sm90a", num_warps=4,
                       divisible=("M", "N"))
    text = str(caught.value)
    assert caught.value.function == "load_tile_swizzled_64" and "the layouts must be the same" in text
    assert "descriptor in #ttg.nvmma_shared<{swizzlingByteWidth = 128" in text
    assert "shared buffer in #ttg.nvmma_shared<{swizzlingByteWidth = 64" in text
    assert "allocate the buffers a descriptor's copies use in desc.layout" in text
    with pytest.raises(LayoutError) as interpreted:
        _interpreted(k.load_into_another_layout, "sm90a")
    text = str(interpreted.value)
    copy_line = k.load_tile_swizzled_64.fn.__code__.co_firstlineno + 7
    assert f"region_descriptor_kernels.py:{copy_line} in load_tile_swizzled_64" in text, text
    assert "descriptor in NVMMASharedLayout(swizzle_byte_width=128" in text
    assert "shared buffer in NVMMASharedLayout(swizzle_byte_width=64" in text and "the layouts must be the same" in text


@pytest.mark.parametrize("target", ["sm90a", "sm100a"])
def test_a_descriptor_enters_a_gluon_region_in_a_loop_as_the_all_triton_kernel_loads_it(target):
    """Attention's inner loop: the Gluon function loads a block through the descriptor each iteration."""
    built = hybrid.compile(k.row_block_sums, k.SIGNATURE, _constexprs(target), target, num_warps=4,
                           divisible=("M", "N"))
    ttgir = built.asm["ttgir"]
    assert built.kernel_entries == 1 and "hybrid_gluon_in" not in ttgir
    assert ttgir.count("ttng.async_tma_copy_global_to_local") == 1 and "scf.for" in ttgir
    x = torch.randn(128, 256).half()
    outs = []
    for kernel in (k.row_block_sums, k.row_block_sums_triton):
        outs.append(torch.zeros(128, 64).half())
        with hybrid.interpreting(target):
            kernel[(2, )](x, outs[-1], 128, 256, **_constexprs(target), num_warps=4)
    torch.testing.assert_close(outs[0], outs[1], rtol=0, atol=0)
    assert outs[0].abs().sum() > 0


def test_a_pointer_descriptors_region_lowering_is_keyed_by_its_fields():
    """A Triton region taking a ``PointerDescriptor`` (a port's probe, on sm80 or AMD) is cached
    under a key of the view's field types, the same in every process (no object addresses)."""
    from interop.lowering import lowering_cache, pointer_descriptors
    ty = tl.tensor_descriptor_type(tl.block_type(tl.float16, [64, 64]), tl.tuple_type([tl.int32, tl.int32]),
                                   tl.tuple_type([tl.int64, tl.int64]))
    runtime, zero = (lowering_cache._describe(pointer_descriptors.view_type(ty, padding)) for padding in (None, False))
    assert "0x" not in runtime + zero and runtime != zero
    assert "shape: (int32, int32)" in runtime and "strides: (int64, int64)" in runtime
