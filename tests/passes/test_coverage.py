"""Every pass of the pipeline (``interop.pipeline``) has an IR-level test here: a test declares the
passes it runs with ``@pytest.mark.ir_pass(name, ...)``, and a pass added to a pipeline without
one fails this check."""
import importlib
import pkgutil

import tests.passes
from interop import pipeline


def declared() -> set[str]:
    """The pass names the tests of ``tests.passes`` declare (read from their marks, so that the
    check holds when this file runs alone)."""
    names: set[str] = set()
    for info in pkgutil.iter_modules(tests.passes.__path__):
        if info.name.startswith("test_"):
            module = importlib.import_module(f"tests.passes.{info.name}")
            for name, function in vars(module).items():
                if name.startswith("test_"):
                    names.update(n for mark in getattr(function, "pytestmark", []) if mark.name == "ir_pass"
                                 for n in mark.args)
    return names


def test_every_pass_of_both_pipelines_has_an_ir_level_test():
    missing = sorted(_names() - declared())
    assert not missing, f"passes without an IR-level test in tests/passes (mark it @pytest.mark.ir_pass(name)): {missing}"


def test_a_declared_pass_is_one_of_the_pipelines():
    unknown = sorted(declared() - _names())
    assert not unknown, f"tests declare passes no pipeline of interop/pipeline.py has (renamed?): {unknown}"


def _names() -> set[str]:
    return {p.name for p in pipeline.TRITON_HOST + pipeline.GLUON_HOST}
