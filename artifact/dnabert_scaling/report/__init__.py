"""The paper-style report: a notebook shipped as code (``template``), executed with nbclient on
this interpreter's kernel and converted to one self-contained HTML page (``build``, which first runs
``check`` on folders without current verdicts). The result sets come from ``results``, the text and
tables from the section modules (``front``, ``verdict_sections``, ``metric_tables``, ``timeline``,
``appendices``; ``content`` re-exports them), the figures from ``figures``."""
