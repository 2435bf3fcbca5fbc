from hivedlab.cli.main import main

raise SystemExit(main())
