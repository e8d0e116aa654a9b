"""sluice on Airflow: one pipeline as N shards, with dynamic task mapping over the shard indexes.

    prepare  ->  shard.expand(index=[0 .. N-1])  ->  finalize

`prepare` starts the paid job once (`sluice prepare`) and records it where the shards find it (the pipeline's state
directory, and next to the output). Each mapped `shard` task runs `sluice run --shard auto` with its index in
SLUICE_SHARD_INDEX; a failed task is retried by Airflow and resumes from its own checkpoints. `finalize` fails,
naming the missing shards, unless every shard has committed.

The workers must share the pipeline's state directory and the output (a shared volume, or `path: s3://…` for the
output). Set the Airflow Variables `sluice_pipeline` (path of the pipeline file on the workers) and
`sluice_shards` (default 4), and the connection details in the environment of the workers (SLUICE_BASE_URL,
SLUICE_API_KEY: never put the key in the DAG).
"""

from __future__ import annotations

import os
import subprocess

import pendulum
from airflow.decorators import dag, task
from airflow.models import Variable

SHARDS = int(Variable.get("sluice_shards", default_var="4"))


def sluice(*args: str, env: dict[str, str] | None = None) -> None:
    """Runs the sluice CLI; a non-zero exit fails the task (exit 3 = locked, 2 = config: see the README)."""
    # Shards meet in Postgres or in one Parquet/JSONL path (`write: append`); a DuckDB file takes one writer at a time.
    pipeline = Variable.get("sluice_pipeline", default_var="/opt/sluice/pipelines/company_profiles_postgres.yaml")
    command = ["npx", "sluice", args[0], pipeline, *args[1:], "--log-format", "json"]
    subprocess.run(command, check=True, env={**os.environ, **(env or {})})


@dag(
    dag_id="sluice_sharded",
    schedule="30 2 * * *",
    start_date=pendulum.datetime(2025, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    tags=["sluice"],
)
def sluice_sharded():
    @task(retries=2)
    def prepare() -> list[int]:
        sluice("prepare", "--shards", str(SHARDS))
        return list(range(SHARDS))

    @task(retries=3, max_active_tis_per_dagrun=SHARDS)
    def shard(index: int) -> int:
        sluice("run", "--shard", "auto", env={"SLUICE_SHARD_INDEX": str(index), "SLUICE_SHARD_COUNT": str(SHARDS)})
        return index

    @task(trigger_rule="all_done")
    def finalize(done: list[int]) -> None:
        sluice("finalize", "--shard-count", str(SHARDS))

    finalize(shard.expand(index=prepare()))


sluice_sharded()
