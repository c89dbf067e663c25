"""Measurement: each stage's own time, Proton scopes per region, resources read off a binary."""
