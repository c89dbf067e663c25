"""Compile entry: one validated request, the build settings, the hybrid sources ``triton.compile``
takes, and the hooks that route cross-language calls and extend Triton's stages."""
