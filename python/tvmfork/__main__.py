from tvmfork.cli import main

raise SystemExit(main())
