from contextfold.cli import main

raise SystemExit(main())
