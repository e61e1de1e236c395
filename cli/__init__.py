"""cz: the chronozarr toolkit (recipes, STAC resolution, compositing, build, append, publish)."""
