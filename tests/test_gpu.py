"""The examples on a real GPU against torch (skipped without one)."""
import pytest

from examples import (attention, layernorm, matmul, matmul_gluon_epilogue, matmul_wgmma, memcpy, mma_handoff, softmax,
                      softmax_gluon_stats, strided_copy, tile_matmul, tma_stage)
from examples.run import check, current_gpu_target


@pytest.mark.gpu
@pytest.mark.parametrize("example", [softmax, tile_matmul, softmax_gluon_stats, matmul_gluon_epilogue, memcpy,
                                     strided_copy, layernorm, matmul, matmul_wgmma, attention, mma_handoff, tma_stage])
def test_example_matches_torch(example):
    target = current_gpu_target()
    if target is None:
        pytest.skip("GPU architecture not among the built targets")
    if target in getattr(example, "SKIP", {}):
        pytest.skip(example.SKIP[target])
    for _ in range(2):   # fresh random inputs each time
        error = check(example, target)
        assert error == error, "NaN in the output: an element was not written"
        assert error <= example.TOLERANCE
