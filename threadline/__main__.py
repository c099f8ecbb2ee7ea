"""`python -m threadline`: the same command as the `threadline` script."""

from threadline.cli import main

raise SystemExit(main())
