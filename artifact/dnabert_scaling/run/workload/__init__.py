"""The training workload: the DNABERT-2 port (`model`), the released tokenizer (`tokenizer`),
GUE folders and the synthetic planted-motif stand-in (`data`)."""
