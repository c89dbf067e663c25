"""What every step does to a module through Triton's bindings, whatever it rewrites: walking a
function's ops (``walk``), the users, producers and owners of values (``uses``), verifying
(``verify``), canonicalizing (``canonicalize``), copying (``copy``), a value replaced by a load of
the buffer holding it (``shared_loads``), and MLIR's diagnostics in Python errors (``diagnostics``)."""
