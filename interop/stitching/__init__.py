"""Stitching at the ttg level: splice lowered regions into the host, inline, connect results, fold
and sink boundary conversions, verify."""
