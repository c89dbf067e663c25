"""The runtime loader: architecture selection and every error before a launch (CPU); the launch
itself against torch on a GPU."""
import ast
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("cffi", reason="the bundle loader is built on cffi")

import hybrid  # noqa: E402
from hybrid.loader import (ArgumentError, DriverNotFound, GridError, HashMismatch, NoBinaryForDevice,  # noqa: E402
                           select_target)

ROOT = Path(__file__).resolve().parents[1]
NO_DRIVER = "libhybrid-no-such-driver.so"
TARGETS = {"sm80": {"isa": "sm_80"}, "sm90a": {"isa": "sm_90a"}, "sm100a": {"isa": "sm_100a"},
           "gfx942": {"isa": "gfx942"}, "gfx950": {"isa": "gfx950"}}


@pytest.mark.parametrize("device, expected", [
    ("sm_80", "sm80"), ("sm_86", "sm80"), ("sm_89", "sm80"),   # exact, then same major, older minor
    ("sm_90", "sm90a"), ("sm_100", "sm100a"), ("gfx942", "gfx942"), ("gfx950", "gfx950")])
def test_architecture_selection(device, expected):
    assert select_target(TARGETS, device) == expected


def test_exact_architecture_wins_over_a_compatible_one():
    assert select_target({"sm80": {"isa": "sm_80"}, "sm86": {"isa": "sm_86"}}, "sm_86") == "sm86"
    assert select_target({"sm80": {"isa": "sm_80"}, "sm86": {"isa": "sm_86"}}, "sm_87") == "sm86"


@pytest.mark.parametrize("device", ["sm_75", "sm_103", "sm_120", "gfx90a"])
def test_no_compatible_binary(device):
    # sm_90a / sm_100a binaries are architecture-specific; AMD code objects run on their exact gfx only.
    with pytest.raises(NoBinaryForDevice, match=f"no binary for this GPU \\({device}\\); it has: sm80 \\(sm_80\\), "):
        select_target(TARGETS, device)


def test_load_names_what_the_bundle_has(softmax_bundle):
    _, path = softmax_bundle
    with pytest.raises(NoBinaryForDevice, match=r"bundle 'softmax_kernel' .*\(gfx950\); it has: sm80 \(sm_80\), "
                                                r"sm90a \(sm_90a\), gfx942 \(gfx942\)"):
        hybrid.load_bundle(path, arch="gfx950")
    assert hybrid.load_bundle(path, arch="sm_86").target == "sm80"


def test_hash_mismatch(softmax_bundle, tmp_path):
    _, path = softmax_bundle
    copy = shutil.copytree(path, tmp_path / "b")
    entry = json.loads((copy / "manifest.json").read_text())["targets"]["sm90a"]
    binary = bytearray((copy / entry["file"]).read_bytes())
    binary[len(binary) // 2] ^= 1
    (copy / entry["file"]).write_bytes(bytes(binary))
    with pytest.raises(HashMismatch, match=f"{entry['file']} has sha256 .* the manifest says {entry['sha256']}"):
        hybrid.load_bundle(copy, arch="sm_90")
    assert hybrid.load_bundle(copy, arch="sm_80").target == "sm80"   # the other binaries stay usable


def test_missing_driver_library(softmax_bundle):
    _, path = softmax_bundle
    with pytest.raises(DriverNotFound, match=f"cannot open the CUDA driver library '{NO_DRIVER}'"):
        hybrid.load_bundle(path, driver_library=NO_DRIVER)
    kernel = hybrid.load_bundle(path, arch="gfx942", driver_library="libamdhip64-" + NO_DRIVER)
    with pytest.raises(DriverNotFound, match="cannot open the HIP runtime library"):
        kernel[(4, )](0, 0, 10, 10, 10)   # valid arguments: the driver is the first thing missing


def test_cluster_launches_are_refused_clearly(softmax_bundle):
    kernel = hybrid.load_bundle(softmax_bundle[1], arch="sm_90", driver_library=NO_DRIVER)
    kernel.manifest = {**kernel.manifest, "targets": {"sm90a": {**kernel.entry, "num_ctas": 2}}}
    with pytest.raises(hybrid.loader.BundleError, match="num_ctas=2"):
        kernel[(1, )](0, 0, 1, 1, 1)


@pytest.mark.parametrize("args, message", [
    ((0, 0, 1, 1), r"softmax_kernel takes 5 arguments \(x_ptr, y_ptr, n_rows, n_cols, stride\); got 4"),
    ((0, 0, 1, 1, 1, 1), "takes 5 arguments"),
    ((0, 0, 1.5, 1, 1), "n_rows: expected an int for i32, got float"),
    ((0, 0, True, 1, 1), "n_rows: expected an int for i32, got bool"),
    ((0, 0, 1 << 31, 1, 1), "n_rows: 2147483648 does not fit i32"),
    (("0", 0, 1, 1, 1), "x_ptr: expected a GPU tensor or an integer address for \\*fp32, got str"),
    ((-1, 0, 1, 1, 1), "x_ptr: -1 is not a 64-bit address"),
])
def test_wrong_arguments(softmax_bundle, args, message):
    kernel = hybrid.load_bundle(softmax_bundle[1], arch="sm_90", driver_library=NO_DRIVER)
    with pytest.raises(ArgumentError, match=message):
        kernel[(1, )](*args)


def test_wrong_tensor_arguments(softmax_bundle):
    torch = pytest.importorskip("torch")
    kernel = hybrid.load_bundle(softmax_bundle[1], arch="sm_90", driver_library=NO_DRIVER)
    with pytest.raises(ArgumentError, match=r"x_ptr: \*fp32 expects a torch.float32 tensor, got torch.float16"):
        kernel[(1, )](torch.zeros(4, dtype=torch.float16), 0, 1, 1, 1)
    with pytest.raises(ArgumentError, match="y_ptr: the tensor is on cpu; pass a GPU tensor"):
        kernel[(1, )](0, torch.zeros(4), 1, 1, 1)
    with pytest.raises(GridError, match=r"softmax_kernel\[grid\]: grid \(1, 2, 3, 4\): expected 1 to 3 dimensions"):
        kernel[(1, 2, 3, 4)](0, 0, 1, 1, 1)


def test_launch_path_calls_no_triton_code():
    """The loader and the bundle reader use cffi and the driver only (the package imports still load Triton)."""
    for path in (ROOT / "hybrid" / "loader.py", ROOT / "scheduler" / "bundle.py"):
        tree = ast.parse(path.read_text())
        modules = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
        modules += [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
        assert not [m for m in modules if m.split(".")[0] in ("triton", "hybrid", "interop", "torch")], path


LAUNCH = """
import os, sys, torch, triton
import hybrid
from examples import softmax
kernel = hybrid.load_bundle(sys.argv[1])
x = torch.randn(1000, 97, device="cuda")
y = torch.full_like(x, float("nan"))
kernel[(triton.cdiv(1000, softmax.BM), )](x, y, 1000, 97, x.stride(0))
torch.cuda.synchronize()
print((y - torch.softmax(x.double(), dim=1).float()).abs().max().item(), kernel.target)
print(os.listdir(os.environ["TRITON_CACHE_DIR"]))
"""


@pytest.mark.slow
@pytest.mark.gpu
def test_bundle_launches_in_a_fresh_process_and_matches_torch(tmp_path):
    from examples.run import current_gpu_target
    from scheduler import InlineExecutor, build, plan
    from scheduler.bundle import write_bundles

    target = current_gpu_target()
    if target is None:
        pytest.skip("GPU architecture not among the built targets")
    results = build(plan(["examples.softmax:softmax_kernel"], [target]), hybrid.compile, executor=InlineExecutor())
    path = write_bundles(results, tmp_path)["softmax_kernel"]
    empty_cache = tmp_path / "triton-cache"
    empty_cache.mkdir()
    proc = subprocess.run([sys.executable, "-c", LAUNCH, str(path)], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "TRITON_CACHE_DIR": str(empty_cache),
                               "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])},
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    error, chosen = proc.stdout.split("\n")[0].split()
    assert chosen == target and float(error) <= 1e-5
    assert proc.stdout.split("\n")[1] == "[]"   # nothing compiled: no JIT, no launcher built


def test_the_loader_imports_without_the_compiler():
    """Launching from a bundle needs cffi and the bundle reader only: ``import hybrid.loader``
    leaves the compiler (``interop``, ``hybrid.compile``, the scheduler's builds), Triton and the
    signature checks' ``cryptography`` (needed only with trusted keys) unloaded."""
    probe = ("import sys, hybrid.loader; print(sorted(m for m in sys.modules if m.split('.')[0] in "
             "('interop', 'triton', 'torch', 'cryptography') or m in "
             "('hybrid.compiler', 'hybrid.jit_functions', 'scheduler.builds')))")
    proc = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                          capture_output=True, text=True, timeout=60, check=True)
    assert proc.stdout.strip() == "[]", proc.stdout
    assert callable(hybrid.load_bundle) and callable(hybrid.jit) and "sm90a" in hybrid.TARGETS   # still reachable
