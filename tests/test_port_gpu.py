"""Ports on a real GPU (skipped without one): each upstream-style helper ported by ``hybrid port``
for the GPU's target, swapped into its kernel, computes what the kernel without it computes,
and both are timed (``hybrid.port.compare``). The interpreter checks the same ports on the CPU
(``test_port_ttgir``)."""
import pytest

torch = pytest.importorskip("torch")

from bench import parity_ports as pp  # noqa: E402
from examples.run import current_gpu_target  # noqa: E402
from hybrid.port import compare, from_ttgir  # noqa: E402


def _layer_norm_store(device):
    M, N = 64, 1000
    x, w, b = (torch.randn(*shape, device=device).half() for shape in ((M, N), (N, ), (N, )))
    return (M, ), (x, torch.zeros(M, N, device=device).half(), w, b, torch.zeros(M, device=device),
                   torch.zeros(M, device=device), N, N, 1e-5), 1e-2


def _dropout(device):
    n = 100_000
    return ((n + 1023) // 1024, ), (torch.randn(n, device=device), torch.zeros(n, device=device), n, 0.5, 123), 0


def _layer_norm_bwd(device):
    M, N, groups = 64, 1000, 64
    h = lambda *shape: torch.randn(*shape, device=device).half()   # noqa: E731
    x, dy, w = h(M, N), h(M, N), h(N)
    mean, rstd = x.float().mean(1), 1 / (x.float().var(1, unbiased=False) + 1e-5).sqrt()
    zeros = lambda *shape, **kw: torch.zeros(*shape, device=device, **kw)   # noqa: E731
    return (M, ), (zeros(M, N).half(), dy, zeros(groups, N).half(), zeros(groups, N).half(), x, w, mean, rstd,
                   zeros(2 * groups, dtype=torch.int32), N, N), 2e-2


def _softmax_rows(device):
    rows, cols = 4096, 1000   # (strides of 1000: no multiple of 16, as the port is written for)
    x = torch.randn(rows, cols, device=device)
    return (132, ), (torch.zeros_like(x), x, cols, cols, rows, cols), 1e-5


def _layer_norm_mean(device):
    rows, cols = 512, 4096   # (fp16 rows of a stride that is a multiple of 16, as the port is written for)
    return (rows, ), (torch.randn(rows, cols, device=device).half(), torch.zeros(rows, device=device), cols,
                      cols), 1e-4


CASES = {
    "softmax_row": (pp.softmax_row, pp.softmax_rows, pp.SOFTMAX_ROWS, {"BLOCK_SIZE": 1024, "num_stages": 2},
                    {"num_warps": 8}, _softmax_rows),   # its load a caller load, pipelined by the kernel's row loop
    "row_block": (pp.row_block, pp.layer_norm_mean_pipelined, pp.LAYER_NORM_MEAN, {"BLOCK_SIZE": 1024},
                  {"num_warps": 4, "divisible": ("stride", "N")}, _layer_norm_mean),
    "normalize_store": (pp.normalize_store, pp.layer_norm_fwd_store, pp.LAYER_NORM_STORE, {"BLOCK_SIZE": 1024},
                        {"num_warps": 4}, _layer_norm_store),
    "dropout_store": (pp.dropout_store, pp.seeded_dropout, pp.SEEDED_DROPOUT, {"BLOCK_SIZE": 1024}, {"num_warps": 4},
                      _dropout),
    "accumulate_partial": (pp.accumulate_partial, pp.layer_norm_bwd_dx, pp.LAYER_NORM_BWD,
                           {"GROUP_SIZE_M": 64, "BLOCK_SIZE_N": 1024}, {"num_warps": 8}, _layer_norm_bwd),
}


@pytest.mark.gpu
@pytest.mark.parametrize("name", list(CASES))
def test_a_port_computes_on_the_gpu_what_its_kernel_computes(name, tmp_path):
    target = current_gpu_target()
    if target is None:
        pytest.skip("GPU architecture not among the built targets")
    fn, kernel, signature, constexprs, options, inputs = CASES[name]
    ported = from_ttgir.port(kernel, fn, signature, constexprs, target, **options)
    candidate = from_ttgir.load_port(ported.source, ported.name, tmp_path / f"{ported.name}.py")
    grid, args, tolerance = inputs("cuda")
    result = compare(kernel, region=fn, candidate=candidate, grid=grid, args=args,
                     kwargs={**constexprs, "num_warps": options["num_warps"]}, interpret=False, target=target,
                     atol=tolerance, rtol=tolerance)
    assert result.ok, result.report()
    assert set(result.times_ms) == {"original", "candidate"}, result.report()
    print(result.report())
