"""Fixtures: see the module that fills this in."""
