"""The paper-style report: a notebook shipped as code (``template``), executed with nbclient on
this interpreter's kernel and converted to one self-contained HTML page (``build``). The text and
tables come from ``content``, the figures from ``figures``."""
