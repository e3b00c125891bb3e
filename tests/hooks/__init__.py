"""Fault and timing injection for the kill/resume tests, kept out of textsieve itself.

* `slow_progress`: slow every stage down (a sleep per progress update) in the `textsieve`
  subprocesses a test starts and then SIGKILLs: `subprocess.run(cmd, env=slow_progress.slowed_env(0.2))`.
  It reaches them through `sitecustomize.py` in this folder, which `slowed_env` puts first on
  their PYTHONPATH.
* `disk_full`: make a folder full (writes under it fail with ENOSPC after N bytes) in the
  subprocesses a test starts: `subprocess.run(cmd, env=disk_full.full_env(folder, n))`, through
  the same `sitecustomize.py`.
* `tree_rss`: run a command and measure the peak RSS of its whole process tree (the sum of each
  process's own peak), for the memory-budget tests.
* `ray_kill`: make a Ray worker process die mid-run (in-process monkeypatching; the Ray workers
  import this package from the tests folder, which `tests/test_ray.py` puts on their path).
"""
