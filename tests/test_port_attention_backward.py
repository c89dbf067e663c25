"""Upstream attention backward (tutorial 06, ``bench/parity_ports.py``): ``_attn_bwd`` calls
``_attn_bwd_dkdv`` and ``_attn_bwd_dq`` each twice, masked diagonal blocks on half-size tiles
(``MASK=True``), then the blocks below (``MASK=False``). A port written for the first site and
swapped into both computed dK, dV and dQ off by about 20%; ported per site, the kernel with the ports
computes the kernel's gradients, each site running its own port (interpreter)."""
import re

import pytest

from bench import parity_ports as pp
from bench.port_runs import Run, _attention_backward, check
from hybrid.port import from_ttgir

TARGET = "sm90a"


def _compare(fn, candidate, tmp_path):
    """``_attn_bwd`` with ``candidate`` for ``fn``, launched as upstream's backward launches it
    (``bench/port_runs.py``): program 0's dQ has no unmasked block, program 1's has; every other
    call loops."""
    run = Run(fn, pp._attn_bwd, pp.ATTN_BWD_SIGNATURE, pp.ATTN_BWD_CONSTEXPRS, pp.ATTN_BWD_OPTIONS,
              _attention_backward)
    return check(run, TARGET, "cpu", tmp_path, candidate=candidate)


@pytest.mark.slow
@pytest.mark.parametrize("fn", [pp._attn_bwd_dkdv, pp._attn_bwd_dq], ids=["dkdv", "dq"])
def test_attention_backward_helpers_ported_per_site_compute_the_kernels_gradients(fn, tmp_path):
    """Each helper gets a port per site (MASK=True, then MASK=False, picked by MASK), and
    ``_attn_bwd`` with them writes the dQ, dK and dV it writes without them, both sites' ports run.
    The first site's port with its guards dropped, swapped into both (what was written before),
    computes another gradient: these inputs tell the sites apart."""
    ported = from_ttgir.port(pp._attn_bwd, fn, pp.ATTN_BWD_SIGNATURE, pp.ATTN_BWD_CONSTEXPRS, TARGET,
                             **pp.ATTN_BWD_OPTIONS)
    name = ported.name
    assert len(ported.sites) == 2 and "MASK=True" in ported.sites[0] and "MASK=False" in ported.sites[1]
    candidate = from_ttgir.load_port(ported.source, name, tmp_path / f"{name}.py")
    result = _compare(fn, candidate, tmp_path)
    assert result.ok and [o.name for o in result.outputs] == ["DQ", "DK", "DV"], result.report()
    assert result.site_runs == {f"{name}_0": 2, f"{name}_1": 2}, result.report()   # two programs, each site

    unguarded = re.sub(r"\n    gl\.static_assert\([^\n]*", "", ported.source)
    first_only = from_ttgir.load_port(unguarded, f"{name}_0", tmp_path / f"{name}_first.py")
    assert not _compare(fn, first_only, tmp_path).ok
