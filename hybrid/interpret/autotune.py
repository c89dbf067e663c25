"""``@triton.autotune`` and ``@triton.heuristics`` kernels in the interpreter.

The autotuner times its configs on a GPU; the interpreter cannot, so it runs the config the
autotuner tries first (its first after ``prune_configs_by``), as a kernel with one config
runs. With ``HYBRID_INTERPRET_ALL_CONFIGS=1`` it runs every config, each from the same inputs
(as the autotuner restores them between trials), and checks that each writes what the first
wrote: a config that computes something else is an error naming it.
"""
from __future__ import annotations

import os

from triton.runtime import Autotuner, Heuristics

from .errors import InterpretError

ALL_CONFIGS = "HYBRID_INTERPRET_ALL_CONFIGS"


def is_wrapped(kernel) -> bool:
    return isinstance(kernel, (Autotuner, Heuristics))


def launch_wrapped(launch, kernel, grid, args: tuple, kwargs: dict, target) -> None:
    """Run ``kernel`` (an ``Autotuner`` or ``Heuristics``) through ``launch`` (``hybrid.interpret.launch``)."""
    if isinstance(kernel, Heuristics):   # as upstream's Heuristics.run: each value sees the ones before
        kwargs = dict(kwargs)
        for name, heuristic in kernel.values.items():
            kwargs[name] = heuristic({**dict(zip(kernel.arg_names, args)), **kwargs})
        return launch(kernel.fn, grid, *args, target=target, **kwargs)
    configs = pruned_configs(kernel, args, kwargs)
    every = os.environ.get(ALL_CONFIGS, "0") not in ("", "0")
    named = {**dict(zip(kernel.arg_names, args)), **kwargs}
    tensors = {name: v for name, v in named.items() if hasattr(v, "clone") and hasattr(v, "copy_")}
    inputs = {name: t.clone() for name, t in tensors.items()} if every and len(configs) > 1 else None
    first = None
    for i, config in enumerate(configs if every else configs[:1]):
        if i:
            for name, t in tensors.items():
                t.copy_(inputs[name])
        run_kwargs = {**kwargs, **config.all_kwargs()}
        if config.pre_hook is not None:
            config.pre_hook({**named, **run_kwargs})
        try:
            launch(kernel.fn, grid, *args, target=target, **run_kwargs)
        except Exception as exc:
            if hasattr(exc, "add_note"):
                exc.add_note(f"(interpreting autotune config {config})")
            raise
        if inputs is None:
            continue
        if first is None:
            first, first_config = {name: t.clone() for name, t in tensors.items()}, config
            continue
        _check_same(kernel, tensors, first, config, first_config)


def pruned_configs(kernel: Autotuner, args: tuple, kwargs: dict) -> list:
    """The autotuner's configs for these arguments after its ``prune_configs_by``, in its order."""
    kernel.nargs = dict(zip(kernel.arg_names, args))
    try:
        return kernel.prune_configs(kwargs)
    finally:
        kernel.nargs = None


def _check_same(kernel, tensors: dict, first: dict, config, first_config) -> None:
    import torch
    for name, t in tensors.items():
        try:
            torch.testing.assert_close(t, first[name], equal_nan=True)
        except AssertionError as exc:
            raise InterpretError(f"autotune config {config} of {kernel.base_fn.__name__} writes {name} differently "
                                 f"from config {first_config}:\n{exc}") from None
