"""`python -m fleetsim ...`"""

from fleetsim.cli import main

raise SystemExit(main())
