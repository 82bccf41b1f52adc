"""``python -m a2ad.cli``, the same as the ``a2ad`` script."""

from . import main

main()
