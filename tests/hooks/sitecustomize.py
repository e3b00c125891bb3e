"""Start-up hook of the subprocesses the kill tests slow down (see `slow_progress`); only on
their PYTHONPATH, never on the test process's own."""

import slow_progress

slow_progress.install_from_env()
