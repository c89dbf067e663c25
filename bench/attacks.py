"""Attacks on bundles, signing keys and launch limits: every case of ``bench/attack_cases.py`` against the
softmax example built for one or two targets, counted per family.

    python bench/attacks.py [--targets sm90a,gfx942] [--fast] [--json bench/attacks.json]

"Refused cleanly": the expected ``BundleError``/``ValueError`` (or, for keygen,
``FileExistsError``) with a one-line message that says what is wrong; "wrong": the attack was
accepted (a bundle loaded, a key read, a key pair written, a planted binary signed); "other": any
other failure, a hang included. ``--fast`` leaves out the case that builds through the command
line (a planted cache entry at ``hybrid build --sign``). The damaged-bundle rows of
``tests/test_bundle_trust.py`` run too (family "bundle trust"), on the sm90a binary where built, and
``tests/test_limits.py``'s grids, out-of-bounds accesses and shared memory (family "launch limits").
Goal: zero wrong, zero other.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rich.console import Console  # noqa: E402

from bench import attack_cases  # noqa: E402
from bench.kernels import environment  # noqa: E402
from bench.output import flagged, table, write_json  # noqa: E402
from scheduler.bundle import MANIFEST  # noqa: E402

COLUMNS = ("family", "cases", "refused cleanly", "wrong", "other")


def trust_cases(targets: list[str]) -> list[attack_cases.Case]:
    """``tests/test_bundle_trust.py``'s damaged bundles (they damage the sm90a record; a row that
    reads another target's is left out where that target is not built)."""
    if "sm90a" not in targets:
        return []
    from tests.test_bundle_trust import DAMAGE, RAW, amd_relabelled, sm80_relabelled

    def attack(damage, raw: bool = False):
        def run_it(a: attack_cases.Arena):
            folder = a.bundle(signed=False)
            if raw:
                (folder / MANIFEST).write_bytes(damage((folder / MANIFEST).read_bytes()))
            else:
                data = json.loads((folder / MANIFEST).read_text())
                damage(data, folder)
                (folder / MANIFEST).write_text(json.dumps(data))
            return a.load(folder, signed=False, target="sm90a")
        return run_it

    needs = {amd_relabelled: "gfx942", sm80_relabelled: "sm80"}
    return [attack_cases.Case("bundle trust", name, attack(damage), refusal) for name, damage, refusal in DAMAGE
            if needs.get(damage, "sm90a") in targets] + \
        [attack_cases.Case("bundle trust", f"manifest bytes: {name}", attack(damage, raw=True), r".")
         for name, damage in RAW.items()]


def limit_cases() -> list[attack_cases.Case]:
    """Launches past a GPU's limits: ``tests/test_limits.py``'s bad grids at the bundle loader
    (before any driver) and in the interpreter, and accesses out of bounds or shared memory over
    the target's in the interpreter, Gluon and Triton kernels alike; each must be one clear line,
    never a launch, a signal or a run."""
    import torch

    from hybrid import interpret
    from hybrid.interpret.bounds import OutOfBoundsError
    from interop.errors import SharedMemoryError
    from scheduler.grid import GridError
    from tests import limits_kernels as lk
    from tests.kernels import k_agree
    from tests.test_limits import BAD_GRIDS, L32, L64, _bundled, _copy

    def loader(grid, backend):
        return lambda a: _bundled(backend)[grid](1)

    def interpreted(grid):
        return lambda a: interpret.launch(k_agree, grid, torch.randn(128), torch.zeros(128), BLOCK=128, L1=L32,
                                          target="sm90a")

    def copy(language, load_at, store_at):
        return lambda a: _copy(language, torch.randn(128), torch.zeros(128), 128, load_at, store_at)

    def shared(target):
        layout = L64 if target.startswith("gfx") else L32
        return lambda a: interpret.launch(lk.g_big_shared, (1, ), torch.randn(128), torch.zeros(128), ROWS=512,
                                          BLOCK=128, L=layout, target=target)

    cases = [attack_cases.Case("launch limits", f"loader grid {g!r} ({b})", loader(g, b), ".", refused=(GridError, ))
             for g, b, _ in BAD_GRIDS if g != "8"]
    cases += [attack_cases.Case("launch limits", f"interpreter grid {g!r}", interpreted(g), ".", refused=(GridError, ))
              for g, b, _ in BAD_GRIDS if b == "cuda" and g != "8"]
    cases += [attack_cases.Case("launch limits", f"{language} {what} at element {at}", copy(language, *at_), "out-of-bounds",
                                refused=(OutOfBoundsError, ), detailed=True)
              for language in ("gluon", "triton")
              for what, at, at_ in (("load", 10**12, (10**12, 0)), ("store", 10**12, (0, 10**12)),
                                    ("load", 128, (1, 0)), ("load", -3, (-3, 0)))]
    cases += [attack_cases.Case("launch limits", f"256 KiB of shared memory on {t}", shared(t), "B of shared memory",
                                refused=(SharedMemoryError, ), detailed=True) for t in ("sm80", "sm90a", "sm100a", "gfx942", "gfx950")]
    return cases


def run(targets: list[str], slow: bool) -> dict:
    with tempfile.TemporaryDirectory(prefix="attacks-") as root:
        arena = attack_cases.arena(targets, Path(root))
        rows = []
        for case in attack_cases.cases(targets, slow) + trust_cases(targets) + limit_cases():
            kind, message = attack_cases.outcome(case, arena)
            rows.append({"family": case.family, "case": case.name, "outcome": kind, "message": message})
    families = []
    for family in dict.fromkeys(r["family"] for r in rows):
        mine = [r for r in rows if r["family"] == family]
        families.append({"family": family, "cases": len(mine), **{kind: sum(r["outcome"] == kind for r in mine)
                                                                 for kind in ("refused", "wrong", "error")}})
    return {"environment": environment(), "targets": targets, "families": families, "cases": rows}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", default="sm90a,gfx942")
    parser.add_argument("--fast", action="store_true", help="leave out the case that builds through the CLI")
    parser.add_argument("--json", default="bench/attacks.json")
    args = parser.parse_args(argv)
    result = run(args.targets.split(","), slow=not args.fast)
    console = Console(width=160)
    totals = {k: sum(f[k] for f in result["families"]) for k in ("cases", "refused", "wrong", "error")}
    console.print(table(f"Attacks on bundles and keys ({', '.join(result['targets'])}; Triton "
                        f"{result['environment']['triton']})", COLUMNS,
                        ([f["family"], str(f["cases"]), str(f["refused"]), flagged(f"{f['wrong']}" + (
                            " WRONG" if f["wrong"] else "")), flagged(f"{f['error']}" + (" FAILED" if f["error"] else ""))]
                         for f in [*result["families"], {"family": "all", **totals}])))
    for row in result["cases"]:
        if row["outcome"] != "refused":
            console.print(flagged(f"{'WRONG' if row['outcome'] == 'wrong' else 'FAILED'} {row['family']}: "
                                  f"{row['case']}: {row['message']}"), soft_wrap=True)
    write_json(args.json, result)
    return 0 if totals["cases"] == totals["refused"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
