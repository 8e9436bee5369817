from dnabert_scaling.cli import main

raise SystemExit(main())
