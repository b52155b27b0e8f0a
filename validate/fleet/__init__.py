"""``validate fleet``: many engine configurations measured at once on a Ray cluster (docs/fleet.md).

plan.py     the plan file: axes, exclusions, the load, resources
jobs.py     its expansion into jobs with stable ids and their `validate run` commands
guided.py   --guided K: the K loads per job where the capacity model is least sure
store.py    the fleet folder: fleet.jsonl (one line per state change), jobs/<id>/ as `validate run` writes them
worker.py   one attempt of one job on a Ray worker: `validate run` as a child process
runner.py   the driver: one Ray task per attempt, retries, resume
progress.py the live view
command.py  the subcommand

Only runner.py and command.py's run touch Ray, and only when a plan is run: the rest of validate needs no Ray.
"""
