"""Per-region lowering: a Triton region alone through Triton's passes (with its host's axis facts),
a Gluon region for the layouts its host chose, and the target checks both share."""
