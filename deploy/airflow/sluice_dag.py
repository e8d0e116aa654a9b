"""sluice on Airflow: one pipeline as N shards, each step a pod of the sluice image, the shards mapped dynamically.

    prepare  ->  shard (one mapped task per index 0 .. N-1)  ->  finalize

`prepare` starts the paid job once (`sluice prepare`) and records it where the shards find it (the pipeline's state
directory, and next to the output). Each mapped `shard` task runs `sluice run --shard auto` with its index in
SLUICE_SHARD_INDEX; a failed task is retried by Airflow and resumes from its own checkpoints. `finalize` fails,
naming the missing shards, unless every shard has committed.

The image is the repository's Dockerfile: `docker build -t sluice:0.1.0 .` at the repository's root, pushed where
your cluster pulls from (then put that name in IMAGE). The pods mount the pipeline from the ConfigMap
`sluice-pipeline` and share the volume `sluice-data` (ReadWriteMany) for the state directory and the output (or
`path: s3://…` for the output), as the Kubernetes recipe does; the API key comes from the Secret `sluice-api`, never
from the DAG. Set the Airflow Variable `sluice_shards` (default 4) to change the number of shards.
"""

from __future__ import annotations

import pendulum
from airflow.decorators import dag
from airflow.models import Variable
from airflow.providers.cncf.kubernetes.operators.pod import KubernetesPodOperator
from airflow.providers.cncf.kubernetes.secret import Secret
from kubernetes.client import models as k8s

IMAGE = "sluice:0.1.0"
PIPELINE = "/etc/sluice/pipeline.yaml"
SHARDS = int(Variable.get("sluice_shards", default_var="4"))
SERVICE = {"SLUICE_BASE_URL": "https://api.brightdata.com"}

API_KEY = Secret(deploy_type="env", deploy_target="SLUICE_API_KEY", secret="sluice-api", key="api-key")
VOLUMES = [
    k8s.V1Volume(name="pipeline", config_map=k8s.V1ConfigMapVolumeSource(name="sluice-pipeline")),
    k8s.V1Volume(name="data", persistent_volume_claim=k8s.V1PersistentVolumeClaimVolumeSource(claim_name="sluice-data")),
]
MOUNTS = [
    k8s.V1VolumeMount(name="pipeline", mount_path="/etc/sluice", read_only=True),
    k8s.V1VolumeMount(name="data", mount_path="/data"),
]
# The image's unprivileged user; fsGroup lets it write to the data volume.
SECURITY = k8s.V1PodSecurityContext(run_as_non_root=True, run_as_user=1000, run_as_group=1000, fs_group=1000)


def sluice(task_id: str, *args: str, **kwargs) -> dict:
    """A pod running `sluice <command> <pipeline> <args>`; a non-zero exit fails the task (3 = locked, 2 = config)."""
    return dict(
        task_id=task_id,
        name=f"sluice-{task_id}",
        image=IMAGE,
        cmds=["sluice"],
        arguments=[args[0], PIPELINE, *args[1:], "--log-format", "json"],
        secrets=[API_KEY],
        volumes=VOLUMES,
        volume_mounts=MOUNTS,
        security_context=SECURITY,
        get_logs=True,
        **kwargs,
    )


@dag(
    dag_id="sluice_sharded",
    schedule="30 2 * * *",
    start_date=pendulum.datetime(2025, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    tags=["sluice"],
)
def sluice_sharded():
    prepare = KubernetesPodOperator(**sluice("prepare", "prepare", "--shards", str(SHARDS)), env_vars=SERVICE, retries=2)
    # Shards meet in Postgres or in one Parquet/JSONL path (`write: append`); a DuckDB file takes one writer at a time.
    shard = KubernetesPodOperator.partial(
        **sluice("shard", "run", "--shard", "auto"), retries=3, max_active_tis_per_dagrun=SHARDS
    ).expand(env_vars=[{**SERVICE, "SLUICE_SHARD_INDEX": str(i), "SLUICE_SHARD_COUNT": str(SHARDS)} for i in range(SHARDS)])
    finalize = KubernetesPodOperator(
        **sluice("finalize", "finalize", "--shard-count", str(SHARDS)), env_vars=SERVICE, trigger_rule="all_done"
    )
    prepare >> shard >> finalize


sluice_sharded()
