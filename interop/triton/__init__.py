"""Everything this project takes from Triton beyond its public API, in one layer.

Triton's bindings, code generator, sources, layout classes, interpreter and Proton internals
move between releases; code outside this package imports only Triton's public modules
(``triton``, ``triton.language``, ``triton.experimental.gluon...``, ``triton.runtime``'s
exports, ``triton.knobs``, ``triton.testing``, ``triton.profiler``) and reaches the rest through
these modules, by public names (``tests/test_layering.py`` scans for it):

- ``compat``: what differs between Triton 3.6 and 3.9, and the hooks installed into Triton;
- ``bindings``: the MLIR bindings (``ir``, ``gluon_ir``, ``passes``);
- ``frontend``: the code generator, the sources ``triton.compile`` takes, backends and stages;
- ``language``: Triton's language core and Gluon's layout classes as the compiler sees them;
- ``interpreter``: Triton's interpreter, which ``hybrid.interpret`` extends;
- ``proton``: Proton's dialect builders.
"""
