"""Start-up hook of the subprocesses the kill and disk-full tests start (see `slow_progress`,
`disk_full`); only on their PYTHONPATH, never on the test process's own."""

import disk_full
import slow_progress

slow_progress.install_from_env()
disk_full.install_from_env()
