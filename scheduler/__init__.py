"""Per-target compile planning and parallel builds of mixed kernels."""
from .build import BuildJob, BuildResult, build_all

__all__ = ["BuildJob", "BuildResult", "build_all"]
