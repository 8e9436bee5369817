"""One rank of `train`: `rank` (the orchestrator, the subcommand) and its parts: `options`, `task`,
`step`, `log`, `rundir`, `distributed` (rank, world, process group), `buckets` (the DDP comm hook)."""
