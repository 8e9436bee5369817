"""dnabert-scaling: where does the time go when DNABERT-2 fine-tuning scales over GPUs with DDP."""

__version__ = "0.1.0"
