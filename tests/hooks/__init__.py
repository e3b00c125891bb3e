"""Fault and timing injection for the kill/resume tests, kept out of textsieve itself.

* `slow_progress`: slow every stage down (a sleep per progress update) in the `textsieve`
  subprocesses a test starts and then SIGKILLs: `subprocess.run(cmd, env=slow_progress.slowed_env(0.2))`.
  It reaches them through `sitecustomize.py` in this folder, which `slowed_env` puts first on
  their PYTHONPATH.
* `ray_kill`: make a Ray worker process die mid-run (in-process monkeypatching; the Ray workers
  import this package from the tests folder, which `tests/test_ray.py` puts on their path).
"""
