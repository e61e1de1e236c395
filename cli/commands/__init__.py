"""The toolkit's commands, in one place (decision 0034).

One module per command or command group, each exposing ``register(app)``; :mod:`cz.app` registers
them. A command module parses options, calls the toolkit's packages (:mod:`cz.build`,
:mod:`cz.convert`, :mod:`cz.look`, :mod:`cz.publish`, ...) and turns their typed errors into
messages and exit codes; the work itself lives in those packages, never here.

- :mod:`~cz.commands.store`: ``cz validate``, ``cz inspect``
- :mod:`~cz.commands.build`: ``cz build`` (and the plan and result printing ``append`` shares)
- :mod:`~cz.commands.append`: ``cz append``
- :mod:`~cz.commands.publish`: ``cz publish``
- :mod:`~cz.commands.look`: ``cz quicklook``, ``cz series``, ``cz preview``, ``cz share``
- :mod:`~cz.commands.convert`: ``cz convert``, ``cz export``
- :mod:`~cz.commands.worker`: ``cz worker``
"""
