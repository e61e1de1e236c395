"""``python -m cz``: the same program as the ``cz`` command."""

from cz._entry import main

main()
