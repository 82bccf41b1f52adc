"""Agents: the user code a2ad runs (base.py) and the built-in ones."""
