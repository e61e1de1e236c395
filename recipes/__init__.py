"""The ready recipes (docs/recipes.md), installed with the toolkit as ``cz.recipes``.

Read one with ``importlib.resources.files("cz.recipes") / "demo.yaml"``.
"""
