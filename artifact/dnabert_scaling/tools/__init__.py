"""Build, test and shipping tools, kept apart from the runtime stages (run, traces, metrics,
verdicts, report), none of which imports them: ``synth`` writes study-shaped synthetic traces for
the tests and benchmarks, ``compact`` shrinks Kineto traces to what the analysis reads (used by
``scripts/import_reference.py`` to ship the reference traces), ``containerlint`` checks the Apptainer
definition file and the shell scripts. ``python -m dnabert_scaling.tools <subcommand>`` runs them
from the command line (``tools/cli.py``)."""
