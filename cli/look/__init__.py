"""Look at a store and share it: ``cz quicklook``, ``cz series``, ``cz preview``, ``cz share``.

Modules of one concern each: :mod:`~cz.look.select` (bands, timesteps, levels, pixels),
:mod:`~cz.look.stretch` (value -> colour arithmetic), :mod:`~cz.look.expr` (band math),
:mod:`~cz.look.picture` (matplotlib/Pillow rendering), :mod:`~cz.look.quicklook`,
:mod:`~cz.look.series`, :mod:`~cz.look.viewer` (where the viewer bundle is),
:mod:`~cz.look.httpserve` (a Range + CORS static server), :mod:`~cz.look.share` and
:mod:`cz.commands.look` (the typer commands). Everything reads through ``chronozarr``'s public
API (``open_store``, ``Reader``); matplotlib is imported only where a picture is drawn.
"""
