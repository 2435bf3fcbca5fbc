from hivedlab.cli import main

raise SystemExit(main())
