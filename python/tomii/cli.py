"""The `tomii` console command: the runtime's command line (`tomii run`, `tomii schedulers`,
`tomii knobs`, `tomii schema`), run inside Python so that a graph JSON can name Python kernels
("module.function", imported by name) next to those of `--dylib` libraries. Six commands are
Python's own: `tomii sweep` (tomii.experiments), `tomii tune` (tomii.tune), `tomii new` and
`tomii sdk` (tomii.scaffold), `tomii build` (tomii.build) and `tomii migrate` (tomii.migrate).

The schedulers and kernel plugins shipped inside the package are found by name, after those of
`$TOMII_SCHEDULER_PATH`. The console command enters through `tomii_command` (a package of its
own), which keeps a Ctrl-C from breaking the import of this one.
"""

from __future__ import annotations

import os
import signal
import sys

from ._tomii import cli_main
from .plugins import PACKAGED_PLUGINS


def main(argv: list[str] | None = None) -> int:
    """Runs the command line `argv` (default: this process's arguments); returns the exit status."""
    arguments = sys.argv if argv is None else ["tomii", *argv]
    if arguments[1:2] == ["sweep"]:
        # The one command written in Python: sweeps, tables and figures (tomii.experiments).
        from .experiments.config import main as sweep_main

        return sweep_main(arguments[2:])
    if arguments[1:2] == ["tune"]:
        # Tuning strategies compared on the same budget and verifier (tomii.tune).
        from .tune.config import main as tune_main

        return tune_main(arguments[2:])
    if arguments[1:2] == ["new"]:
        # A new scheduler project, outside any repository (tomii.scaffold).
        from .scaffold import main as new_main

        return new_main(arguments[2:])
    if arguments[1:2] == ["migrate"]:
        # A Tomii 1.2 checkout pointed at this installation (tomii.migrate).
        from .migrate import main as migrate_main

        return migrate_main(arguments[2:])
    if arguments[1:2] == ["build"]:
        # A kernel plugin (a Rust crate, a Tomii 1.2 crate unchanged, or a C header) into a library.
        from .build import main as build_main

        return build_main(arguments[2:])
    if arguments[1:2] == ["sdk"]:
        # Where the plugin SDK that projects build against is.
        from .scaffold import sdk_main

        return sdk_main(arguments[2:])
    # As the native binary: Ctrl-C stops the command at once.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    if PACKAGED_PLUGINS.is_dir():
        path = os.environ.get("TOMII_SCHEDULER_PATH", "")
        os.environ["TOMII_SCHEDULER_PATH"] = os.pathsep.join(
            p for p in (path, str(PACKAGED_PLUGINS)) if p
        )
    sys.stdout.flush()
    return int(cli_main(arguments))


if __name__ == "__main__":
    sys.exit(main())
