"""Upstream attention backward (tutorial 06, ``bench/parity_ports.py``): ``_attn_bwd`` calls
``_attn_bwd_dkdv`` and ``_attn_bwd_dq`` each twice, masked diagonal blocks on half-size tiles
(``MASK=True``), then the blocks below (``MASK=False``). A port written for the first site and
swapped into both computed dK, dV and dQ off by about 20%; ported per site, the kernel with the ports
computes the kernel's gradients, each site running its own port (interpreter)."""
import math
import re

import pytest
import torch

from bench import parity_ports as pp
from hybrid.port import compare, from_ttgir

TARGET = "sm90a"
N_CTX, HEAD_DIM, SM_SCALE = 128, 64, 0.5
RCP_LN2 = 1.0 / math.log(2)


def problem() -> tuple:
    """``_attn_bwd``'s arguments as upstream's backward passes them (one batch, one head, causal):
    K pre-scaled by ``sm_scale / ln 2``, M the forward's row log2-sum-exp2, D = rowsum(O * dO)."""
    torch.manual_seed(0)
    q, k, v, do = (torch.randn(1, 1, N_CTX, HEAD_DIM).mul(0.5).half() for _ in range(4))
    arg_k = (k.float() * (SM_SCALE * RCP_LN2)).half()
    qk = q[0, 0].float() @ arg_k[0, 0].float().T
    qk = qk.masked_fill(~torch.ones(N_CTX, N_CTX, dtype=torch.bool).tril(), float("-inf"))
    m = torch.logsumexp(qk * math.log(2), dim=1) * RCP_LN2
    o = torch.exp2(qk - m[:, None]) @ v[0, 0].float()
    delta = (o * do[0, 0].float()).sum(1)
    dq, dk, dv = (torch.full_like(q, float("nan")) for _ in range(3))
    return (q, arg_k, v, SM_SCALE, do, dq, dk, dv, m.reshape(1, 1, N_CTX).contiguous(),
            delta.reshape(1, 1, N_CTX).contiguous(), *q.stride(), 1, N_CTX)   # strides, H, N_CTX


def _compare(fn, candidate):
    """``_attn_bwd`` with ``candidate`` for ``fn``, on upstream's grid (N_CTX // BLOCK_N1, 1, Z * H):
    program 0's dQ has no unmasked block, program 1's has; every other call loops."""
    constexprs = {k: v for k, v in pp.ATTN_BWD_CONSTEXPRS.items() if k != "stride_d"}   # q.stride()[3], 1
    return compare(pp._attn_bwd, region=fn, candidate=candidate, grid=(N_CTX // constexprs["BLOCK_N1"], 1, 1),
                   args=problem(), kwargs={**constexprs, "num_warps": 4}, interpret=True, target=TARGET,
                   machine_code_report=False, atol=1e-2, rtol=1e-2)


@pytest.mark.slow
@pytest.mark.parametrize("fn, lines", [(pp._attn_bwd_dkdv, "dkdv"), (pp._attn_bwd_dq, "dq")])
def test_attention_backward_helpers_ported_per_site_compute_the_kernels_gradients(fn, lines, tmp_path):
    """Each helper gets a port per site (MASK=True, then MASK=False, picked by MASK), and
    ``_attn_bwd`` with them writes the dQ, dK and dV it writes without them, both sites' ports run.
    The first site's port with its guards dropped, swapped into both (what was written before),
    computes another gradient: these inputs tell the sites apart."""
    options = {k: v for k, v in pp.ATTN_BWD_OPTIONS.items()}
    ported = from_ttgir.port(pp._attn_bwd, fn, pp.ATTN_BWD_SIGNATURE, pp.ATTN_BWD_CONSTEXPRS, TARGET, **options)
    name = ported.name
    assert len(ported.sites) == 2 and "MASK=True" in ported.sites[0] and "MASK=False" in ported.sites[1]
    candidate = from_ttgir.load_port(ported.source, name, tmp_path / f"{name}.py")
    result = _compare(fn, candidate)
    assert result.ok and [o.name for o in result.outputs] == ["DQ", "DK", "DV"], result.report()
    assert result.site_runs == {f"{name}_0": 2, f"{name}_1": 2}, result.report()   # two programs, each site

    unguarded = re.sub(r"\n    gl\.static_assert\([^\n]*", "", ported.source)
    first_only = from_ttgir.load_port(unguarded, f"{name}_0", tmp_path / f"{name}_first.py")
    assert not _compare(fn, first_only).ok
