"""The world-size sweep: `driver` (the plan, `sweep.json`, the subcommand), `spec` (one run of it),
`local` (the torchrun executor), `record` (a run's record whichever executor ran it)."""
