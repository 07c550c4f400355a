"""Issue 35, item 6: credentials written into the free-text settings of a cluster config (a Slurm
job script's lines, worker arguments, #SBATCH options) are redacted in what a run records
(``describe``: manifest.json and the history); ordinary settings are kept as written."""

from __future__ import annotations

import json

from pipeline.cluster import REDACTED, describe, load_cluster_config


def test_slurm_free_text_credentials_are_redacted() -> None:
    cfg = load_cluster_config(
        {
            "type": "slurm",
            "job_script_prologue": [
                "export AWS_SECRET_ACCESS_KEY=PLANTED-aws",
                "export AWS_ACCESS_KEY_ID=AKIAPLANTEDPLANTED00",
                'export HF_TOKEN="PLANTED tok"',
                "pip install --index-url https://ana:PLANTED-pw@pypi.example/simple sdc-pipeline",
                "source ~/venv/bin/activate",
                "module load python/3.11",
            ],
            "worker_extra_args": ["--api-token", "PLANTED-arg", "--nthreads", "2", "--password=PLANTED-eq"],
            "job_extra_directives": ["--qos=normal", "--comment=db_password=PLANTED-dir"],
        }
    )
    described = describe(cfg)
    assert "PLANTED" not in json.dumps(described)
    assert described["job_script_prologue"][0] == f"export AWS_SECRET_ACCESS_KEY={REDACTED}"
    assert described["job_script_prologue"][3] == (
        f"pip install --index-url https://ana:{REDACTED}@pypi.example/simple sdc-pipeline"
    )
    # what is not a credential stays as written
    assert described["job_script_prologue"][4:] == ["source ~/venv/bin/activate", "module load python/3.11"]
    assert described["worker_extra_args"][:4] == ["--api-token", REDACTED, "--nthreads", "2"]
    assert described["job_extra_directives"][0] == "--qos=normal"
    assert described["memory"] == "4GiB" and described["walltime"] == "01:00:00"
