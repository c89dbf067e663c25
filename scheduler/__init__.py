"""One fused binary per (kernel, specialization, target): planning, parallel builds, a
content-addressed cache and bundles for the runtime loader (``hybrid.load_bundle``)."""
from .build import BuildResult, InlineExecutor, build
from .cache import Cache
from .plan import Job, plan

__all__ = ["BuildResult", "Cache", "InlineExecutor", "Job", "build", "plan"]
