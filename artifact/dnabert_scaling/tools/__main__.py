"""``python -m dnabert_scaling.tools <subcommand>``: see :mod:`dnabert_scaling.tools.cli`."""

from dnabert_scaling.tools.cli import main

raise SystemExit(main())
