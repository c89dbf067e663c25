"""The conformance suite: every kernel of ``tests/conformance_kernels.py`` (the patterns of
upstream's Gluon and Triton tutorials) compiled for every target and run in the interpreter.

Where a kernel's ops exist it must build (one kernel entry) and the interpreter must compute
what torch computes; elsewhere the compiler and the interpreter must raise the same error
(``TargetError`` for a kernel, ``RegionError`` for a region, word for word). Compiles run in
one subprocess per target (a signal costs only the case that raised it: the rest run in a new
one), shared by the xdist workers through a file under pytest's session temp folder.
"""
import fcntl
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from hybrid import interpret  # noqa: E402
from hybrid.interpret.autotune import is_wrapped  # noqa: E402
from interop.targets import TARGETS  # noqa: E402
from tests.conformance_kernels import CASES  # noqa: E402

pytestmark = [pytest.mark.version, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[1]


def _compile_target(target: str) -> dict:
    """Each case's compile result for ``target``; a case whose compile ends in a signal is
    recorded as such and the remaining cases go to a fresh process."""
    results: dict = {}
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    while len(results) < len(CASES):
        todo = [name for name in CASES if name not in results]
        proc = subprocess.run([sys.executable, "-m", "tests.conformance_kernels", target, *todo], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=900)
        started = None
        for line in proc.stdout.splitlines():
            record = json.loads(line)
            if record.pop("start", False):
                started = record["case"]
            else:
                results[record.pop("case")] = record
                started = None
        if proc.returncode != 0:
            if started is None:
                raise AssertionError(f"the compile process for {target} failed:\n{proc.stderr[-3000:]}")
            results[started] = {"signal": -proc.returncode, "stderr": proc.stderr[-3000:]}
    return results


@pytest.fixture(scope="session")
def compiled(tmp_path_factory):
    """``compiled(target)``: the results of ``_compile_target``, computed once per test session."""
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent   # shared by the workers of this session
    seen: dict = {}

    def get(target: str) -> dict:
        if target not in seen:
            path = root / f"conformance-{target}.json"
            with open(root / f"conformance-{target}.lock", "w") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                if not path.exists():
                    path.write_text(json.dumps(_compile_target(target)))
            seen[target] = json.loads(path.read_text())
        return seen[target]

    return get


def _interpret(case, launch, target: str) -> None:
    interpret.launch(case.kernel, launch.grid, *launch.args.values(), target=target, **launch.constexprs,
                     **launch.options)


def test_launch_arguments_are_the_kernels_runtime_parameters_in_order():
    for case in CASES.values():
        kernel = case.kernel.fn if is_wrapped(case.kernel) else case.kernel
        launch = case.launch("sm90a")
        runtime = [name for name in kernel.arg_names if name not in launch.constexprs]
        assert list(launch.args) == [name for name in runtime if name in launch.args], case.name


@pytest.mark.parametrize("target", list(TARGETS))
@pytest.mark.parametrize("name", list(CASES))
def test_compiler_and_interpreter_agree(name, target, compiled):
    case = CASES[name]
    result = compiled(target)[name]
    assert "signal" not in result, f"{name} on {target}: the compiler died of signal {result.get('signal')}:\n" \
                                   f"{result.get('stderr')}"
    launch = case.launch(target)
    if target in case.targets:
        assert result.get("entries") == 1, f"{name} should build for {target}:\n{result.get('traceback')}"
        _interpret(case, launch, target)
        for output, reference in launch.expected.items():
            torch.testing.assert_close(launch.output(output).float(), reference.float(), atol=launch.tolerance,
                                       rtol=launch.tolerance, equal_nan=False, msg=lambda m: f"{output}: {m}")
        return
    assert result.get("error") in ("TargetError", "RegionError"), \
        f"{name} cannot exist on {target}: expected a TargetError or RegionError, got {result}"
    with pytest.raises(Exception) as raised:
        _interpret(case, launch, target)
    assert (type(raised.value).__name__, str(raised.value)) == (result["error"], result["message"])


def _table_row(feature) -> str:
    names = ", ".join(f"`{name.removeprefix('_core.')}{'*' if name.endswith(('.', '_')) else ''}`"
                      for name in feature.builtins) or ", ".join(f"type `{d}`" for d in feature.dtypes) \
        or "(ttg ops only)"
    marks = " | ".join("yes" if feature.available(t) else "-" for t in TARGETS.values())
    return f"| {feature.what} | {names} | {marks} |"


def test_the_docs_show_the_architecture_table_as_it_is():
    from interop.targets.arch import FEATURES
    doc = (ROOT / "docs" / "errors.md").read_text()
    missing = [row for row in map(_table_row, FEATURES) if row not in doc]
    assert not missing, "docs/errors.md's architecture table is out of date; rows now:\n" + "\n".join(missing)


def test_the_module_walk_names_an_op_the_target_lacks_and_its_line():
    """The backstop behind the builtin checks: ops in a built module (a Triton region's too)."""
    from interop.targets import arch
    from interop.triton.bindings import ir
    from interop.triton.frontend import GluonASTSource, make_backend
    from tests import interp_kernels as ik

    launch = CASES["wgmma"].launch("sm90a")
    signature = {name: "*fp16" if t.dtype == torch.float16 else "*fp32" for name, t in launch.args.items()}
    source = GluonASTSource(ik.wgmma_kernel, {**signature, **{k: "constexpr" for k in launch.constexprs}},
                            launch.constexprs)
    backend = make_backend(TARGETS["sm90a"])
    options = backend.parse_options({"num_warps": 4})
    context = ir.context()
    ir.load_dialects(context)
    backend.load_dialects(context)
    module = source.make_ir(TARGETS["sm90a"], options, backend.get_codegen_implementation(options),
                            backend.get_module_map(), context)
    assert arch.misplaced_ops(module, TARGETS["sm90a"]) == []
    found = arch.misplaced_ops(module, TARGETS["sm100a"])
    assert [(m.op, m.feature.what) for m in found] == [("ttng.warp_group_dot", "Hopper warpgroup MMA (wgmma)")]
    line = next(i for i, text in enumerate((ROOT / "tests/interp_kernels.py").read_text().splitlines(), 1)
                if "acc = warpgroup_mma(" in text)
    assert found[0].where.endswith(f"tests/interp_kernels.py:{line}")
