"""Dask clients from cluster configuration files (``cluster_configs/*.yaml``).

One function, :func:`connect`, turns a config into a running :class:`distributed.Client`
(as a context manager that also closes any cluster it started).  Config kinds:

``local``       an embedded ``LocalCluster`` sized to the machine (the default)
``slurm``       ``dask_jobqueue.SLURMCluster``: workers are Slurm jobs, optional adaptive scaling
``kubernetes``  ``dask_kubernetes.operator.KubeCluster`` from a generated DaskCluster spec
``scheduler``   connect to an existing scheduler (``tcp://`` or ``tls://`` with certificates)
``ssh``         ``distributed.SSHCluster`` over a list of hosts

Unknown keys or invalid values raise :class:`TaskError` naming the file and the setting.  A
cluster that cannot start, or whose scheduler goes away during the work, raises a
:class:`PipelineError` saying so (see ``docs/clusters.md``).
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, field_validator, model_validator

from pipeline.config_io import YamlLines, read_yaml, validation_message
from pipeline.errors import PipelineError, TaskError
from pipeline.interrupts import children_ignore_sigint
from pipeline.results import json_text

log = logging.getLogger(__name__)


class _Config(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Adaptive(_Config):
    minimum: int = Field(1, ge=0)
    maximum: int = Field(4, ge=1)


class LocalConfig(_Config):
    """An embedded LocalCluster. ``n_workers``/``memory_limit`` "auto" size it to the machine."""

    type: Literal["local"]
    n_workers: int | Literal["auto"] = "auto"
    threads_per_worker: int = Field(1, ge=1)
    memory_limit: str | Literal["auto"] = "auto"
    processes: bool = True
    #: the scheduler's dashboard (e.g. "8787" on loopback, "0.0.0.0:8787" everywhere); none unless asked for
    dashboard_address: str | None = None
    #: plain TCP without authentication instead of TLS with per-run credentials (debugging only)
    insecure: bool = False


class SlurmConfig(_Config):
    """dask-jobqueue SLURMCluster: each Slurm job runs ``processes`` Dask workers."""

    type: Literal["slurm"]
    queue: str | None = None
    account: str | None = None
    cores: int = Field(2, ge=1)
    processes: int = Field(1, ge=1)
    memory: str = "4GiB"
    walltime: str = "01:00:00"
    interface: str | None = None
    local_directory: str | None = None
    log_directory: str | None = None
    python: str | None = None
    job_name: str | None = Field(None, description="Slurm job name of the workers (dask-jobqueue: dask-worker)")
    job_extra_directives: list[str] = []
    job_script_prologue: list[str] = []
    worker_extra_args: list[str] = []
    scheduler_options: dict[str, Any] = {}
    #: the scheduler's dashboard (e.g. "8787" on the login node's loopback); none unless asked for
    dashboard_address: str | None = None
    jobs: int = Field(1, ge=0, description="jobs to start when adaptive is not set")
    adaptive: Adaptive | None = None
    wait_for_workers: int = Field(1, ge=0)
    timeout_s: float = Field(300, gt=0)
    #: a folder the compute nodes also see, for the workers' copy of the run's TLS credentials
    #: (files readable by the owner only, removed when the run ends); default: the current folder
    shared_temp_directory: str | None = None
    #: plain TCP without authentication instead of TLS with per-run credentials
    insecure: bool = False


#: a Kubernetes resource quantity ("2", "500m", "4Gi", "1.5", "1e3")
_QUANTITY = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+|[KMGTPE]i|[numkMGTPE])?$")


class KubernetesConfig(_Config):
    """dask-kubernetes operator cluster."""

    type: Literal["kubernetes"]
    # dask-kubernetes' rule: an RFC 1123 label that still fits with "-scheduler" appended (63 characters)
    name: str = Field("sdc-pipeline", pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", max_length=53)
    namespace: str | None = None
    image: str = "ghcr.io/dask/dask:latest"
    n_workers: int = Field(2, ge=0)
    resources: dict[str, dict[str, str]] = {}
    env: dict[str, str] = {}
    worker_command: str = "dask-worker"
    adaptive: Adaptive | None = None
    #: serve the scheduler's dashboard inside the Kubernetes cluster (its Service); off unless asked for
    dashboard: bool = False

    @field_validator("resources")
    @classmethod
    def _quantities(cls, v: dict[str, dict[str, str]]) -> dict[str, dict[str, str]]:
        for kind, amounts in v.items():
            if kind not in ("requests", "limits"):
                raise ValueError(f"resources: expected 'requests' and/or 'limits', got {kind!r}")
            for res, q in amounts.items():
                if not _QUANTITY.match(q):
                    raise ValueError(f"resources.{kind}.{res}: {q!r} is not a Kubernetes quantity (e.g. 2, 500m, 4Gi)")
        return v


class TLSConfig(_Config):
    ca_file: str
    cert: str
    key: str


class SchedulerConfig(_Config):
    """An existing scheduler at ``address`` (``tcp://host:8786`` or ``tls://host:8786``)."""

    type: Literal["scheduler"]
    address: str
    tls: TLSConfig | None = None
    timeout_s: float = Field(30, gt=0)
    #: allow an unencrypted, unauthenticated tcp:// connection to a scheduler on another host
    insecure: bool = False

    @field_validator("address")
    @classmethod
    def _has_port(cls, v: str) -> str:
        if not re.fullmatch(r"(tcp|tls)://.+:\d+", v):
            raise ValueError(f"expected tcp://host:port or tls://host:port, got {v!r}")
        return v

    @model_validator(mode="after")
    def _encrypted(self) -> SchedulerConfig:
        if self.address.startswith("tls://") and self.tls is None:
            raise ValueError("a tls:// scheduler needs a 'tls' section with ca_file, cert and key")
        host = self.address.split("://", 1)[1].rsplit(":", 1)[0].strip("[]")
        if self.address.startswith("tcp://") and not _is_loopback(host) and not self.insecure:
            raise ValueError(
                f"tcp:// to {host} sends the data unencrypted to anyone who can reach the scheduler: use tls:// "
                "with a 'tls' section, or set 'insecure: true' if the network is trusted"
            )
        return self


class SSHConfig(_Config):
    """distributed.SSHCluster: the first host runs the scheduler, the others workers."""

    type: Literal["ssh"]
    hosts: list[str] = Field(min_length=2)
    connect_options: dict[str, Any] = {}
    worker_options: dict[str, Any] = {}
    scheduler_options: dict[str, Any] = {}
    #: the scheduler's dashboard on the first host (e.g. "8787" on its loopback); none unless asked for
    dashboard_address: str | None = None
    remote_python: str | None = None
    #: plain TCP without authentication instead of TLS with per-run credentials copied to every
    #: host (only on a network where nobody else can reach the hosts' ports)
    insecure: bool = False


def _is_loopback(host: str) -> bool:
    """Whether ``host`` is this machine (by name or address), without a DNS lookup."""
    import ipaddress

    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


ClusterConfig = Annotated[
    LocalConfig | SlurmConfig | KubernetesConfig | SchedulerConfig | SSHConfig, Field(discriminator="type")
]
_ADAPTER: TypeAdapter[Any] = TypeAdapter(ClusterConfig)
DEFAULT_CONFIG: dict[str, Any] = {"type": "local"}


def load_cluster_config(config: str | Path | dict[str, Any] | None) -> Any:
    """Validate a cluster config (a YAML path, a dict, or None for the local default).

    Relative TLS certificate paths in a YAML file are taken relative to the file's folder.
    """
    source = "cluster config"
    if config is None:
        data: Any = dict(DEFAULT_CONFIG)
    elif isinstance(config, dict):
        data = config
    else:
        source = str(config)
        data = read_yaml(config, "cluster config")
    if not isinstance(data, dict) or "type" not in data:
        raise TaskError(f"{source}: expected a mapping with a 'type' (local, slurm, kubernetes, scheduler, ssh)")
    if data["type"] not in ("local", "slurm", "kubernetes", "scheduler", "ssh"):
        raise TaskError(
            f"{source}: unknown cluster type {data['type']!r}; expected local, slurm, kubernetes, scheduler or ssh"
        )
    try:
        cfg = _ADAPTER.validate_python(data)
    except ValidationError as e:
        models = {"local": LocalConfig, "slurm": SlurmConfig, "kubernetes": KubernetesConfig}
        models |= {"scheduler": SchedulerConfig, "ssh": SSHConfig}
        lines = YamlLines(config) if isinstance(config, (str, Path)) else None
        message = validation_message(e, (data["type"],), model=models.get(data["type"]), lines=lines)
        raise TaskError(f"{source}: invalid cluster config: {message}") from None
    if isinstance(config, (str, Path)) and getattr(cfg, "tls", None) is not None:
        # certificate paths in a config file are relative to that file (e.g. certs/ca.pem beside it)
        base = Path(config).resolve().parent
        cfg.tls = TLSConfig(**{k: str(base / Path(v).expanduser()) for k, v in cfg.tls.model_dump().items()})
    return cfg


def local_size(cfg: LocalConfig) -> tuple[int, str]:
    """Workers and per-worker memory for a LocalCluster sized to this machine."""
    import psutil

    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    n = cpus // cfg.threads_per_worker if cfg.n_workers == "auto" else cfg.n_workers
    n = max(1, n)
    if cfg.memory_limit == "auto":
        # leave a quarter of the memory to the client process and the OS
        per = int(psutil.virtual_memory().total * 0.75 / n)
        return n, f"{per // 2**20}MiB"
    return n, cfg.memory_limit


#: the HTTP pages of a scheduler or worker whose dashboard is not asked for: the health check only
#: (what Kubernetes' probes read); no info pages, no metrics, nothing a request can break
HEALTH_ONLY = ["distributed.http.health"]


def dashboard_address(asked: str | None) -> str:
    """Where a scheduler's HTTP server listens: a free loopback port when no dashboard is asked
    for; an address without a host (``8787``, ``:8787``) on loopback; else as given
    (``0.0.0.0:8787``: every interface)."""
    if asked is None:
        return "127.0.0.1:0"
    host, _, port = str(asked).rpartition(":")
    return asked if host else f"127.0.0.1:{port}"


def http_config(asked: str | bool | None) -> dict[str, Any]:
    """Dask settings for the processes of a run without a dashboard (``asked`` None or False):
    scheduler and workers serve the health check only."""
    if asked:
        return {}
    return {"distributed.scheduler.http.routes": HEALTH_ONLY, "distributed.worker.http.routes": HEALTH_ONLY}


def _scheduler_http(asked: str | None) -> dict[str, Any]:
    """A scheduler's keywords for its HTTP server and dashboard (see :func:`dashboard_address`)."""
    return {"dashboard_address": dashboard_address(asked), "dashboard": asked is not None}


def _worker_http(asked: str | None, args: list[str]) -> list[str]:
    """``dask worker`` arguments: without a dashboard, its HTTP server on loopback only."""
    if asked is not None or any(a.startswith("--dashboard") for a in args):
        return args
    return [*args, "--no-dashboard", "--dashboard-address", "127.0.0.1:0"]


def slurm_cluster_kwargs(cfg: SlurmConfig) -> dict[str, Any]:
    """Keyword arguments for ``dask_jobqueue.SLURMCluster`` (the dashboard and the workers' HTTP
    servers where :func:`dashboard_address` and :func:`_worker_http` say, unless the config's
    ``scheduler_options`` or ``worker_extra_args`` say otherwise)."""
    kw: dict[str, Any] = {
        "cores": cfg.cores,
        "processes": cfg.processes,
        "memory": cfg.memory,
        "walltime": cfg.walltime,
        "job_extra_directives": cfg.job_extra_directives,
        "job_script_prologue": cfg.job_script_prologue,
        "worker_extra_args": _worker_http(cfg.dashboard_address, cfg.worker_extra_args),
        "scheduler_options": {**_scheduler_http(cfg.dashboard_address), **cfg.scheduler_options},
    }
    for name in ("queue", "account", "interface", "local_directory", "log_directory", "python", "job_name"):
        if getattr(cfg, name) is not None:
            kw[name] = getattr(cfg, name)
    return kw


def slurm_security_kwargs(cfg: SlurmConfig, stack: contextlib.ExitStack) -> dict[str, Any]:
    """TLS with credentials made for this run (``SLURMCluster`` keywords): files readable by the
    owner only in a private folder under ``shared_temp_directory``, removed when ``stack`` closes."""
    if cfg.insecure:
        return {}
    from pipeline.cluster_tls import shared_credentials

    security = stack.enter_context(shared_credentials(cfg.shared_temp_directory or Path.cwd()))
    return {"security": security, "protocol": "tls://"}


def kubernetes_spec(cfg: KubernetesConfig) -> dict[str, Any]:
    """The DaskCluster custom resource for this config (no cluster needed to build it). Without
    ``dashboard`` the scheduler and workers serve the health check only (the pods' probes)."""
    from dask_kubernetes.operator import make_cluster_spec

    env = dict(cfg.env)
    if not cfg.dashboard:
        env |= {f"DASK_{k.upper().replace('.', '__')}": json_text(v) for k, v in http_config(False).items()}
    spec = make_cluster_spec(
        name=cfg.name,
        image=cfg.image,
        n_workers=cfg.n_workers,
        resources=cfg.resources or None,
        env=env or None,
        worker_command=cfg.worker_command,
    )
    if not cfg.dashboard:
        (scheduler,) = spec["spec"]["scheduler"]["spec"]["containers"]
        scheduler["args"] = [*scheduler["args"], "--no-dashboard"]
    return spec


def _slurm_job_states(job_ids: list[str]) -> str:
    """``id STATE (reason)`` of Slurm jobs, for error messages (empty if squeue cannot tell)."""
    if not job_ids or shutil.which("squeue") is None:
        return ""
    try:
        out = subprocess.run(
            ["squeue", "-h", "-j", ",".join(job_ids), "-o", "%i %T (%r)"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return "; ".join(line.strip() for line in out.splitlines() if line.strip())


def _start_slurm(cfg: SlurmConfig, stack: contextlib.ExitStack) -> Any:
    """A SLURMCluster scaled as configured, its client, and its first workers (clear errors otherwise)."""
    from distributed import Client

    try:
        from dask_jobqueue import SLURMCluster
    except ImportError:
        raise TaskError("slurm clusters need dask-jobqueue: pip install 'sdc-pipeline[cluster]'") from None
    if shutil.which("sbatch") is None:
        raise TaskError("slurm cluster: 'sbatch' is not on PATH; run on a Slurm login/submit node")
    import dask

    try:
        with dask.config.set(http_config(cfg.dashboard_address)):  # the scheduler runs in this process
            cluster = SLURMCluster(**slurm_cluster_kwargs(cfg), **slurm_security_kwargs(cfg, stack))
    except (ValueError, TypeError, OSError) as e:
        raise TaskError(f"slurm cluster: cannot start the Dask scheduler for the jobs: {e}") from None
    stack.callback(close_cluster, cluster, "slurm", cancel=_scancel)
    if cfg.adaptive is not None:
        cluster.adapt(minimum=cfg.adaptive.minimum, maximum=cfg.adaptive.maximum)
    else:
        cluster.scale(jobs=cfg.jobs)
    client = stack.enter_context(Client(cluster))
    if cfg.wait_for_workers:
        try:
            client.wait_for_workers(cfg.wait_for_workers, timeout=cfg.timeout_s)
        except TimeoutError:
            states = _slurm_job_states([str(j.job_id) for j in cluster.workers.values() if j.job_id])
            where = f" worker logs: {cfg.log_directory};" if cfg.log_directory else ""
            raise TaskError(
                f"slurm cluster: {cfg.wait_for_workers} worker(s) did not connect within {cfg.timeout_s:g} s"
                f" (jobs: {states or 'none queued'});{where} check queue, account, memory, walltime and interface"
            ) from None
    return client


def _scancel(cluster: Any) -> None:
    """Cancel the cluster's Slurm jobs directly (when dask-jobqueue's own close did not finish)."""
    job_ids = [str(j.job_id) for j in list(cluster.workers.values()) if getattr(j, "job_id", None)]
    if job_ids and shutil.which("scancel") is not None:
        subprocess.run(["scancel", *job_ids], capture_output=True, timeout=60, check=False)


def close_cluster(cluster: Any, kind: str, cancel: Any = None) -> None:
    """Close a cluster this process started; a failure to close is logged, never raised.

    Closing runs while an error may be propagating (a worker that never connected, a lost
    scheduler).  distributed's ``SpecCluster`` asserts on workers whose start is still pending
    (seen with a Slurm job submitted into an unusable partition under load), and that assertion
    would replace the error the user needs.  ``cancel(cluster)`` is the fallback that releases
    the cluster's external resources (its Slurm jobs) when the close did not finish.
    """
    try:
        cluster.close()
    except Exception as e:  # any failure while shutting down: report it, keep the original outcome
        log.warning("%s cluster: closing it failed (%s: %s)", kind, type(e).__name__, e)
        if cancel is not None:
            try:
                cancel(cluster)
            except Exception as e2:
                log.warning("%s cluster: cancelling its jobs failed (%s: %s)", kind, type(e2).__name__, e2)


#: settings whose values are secrets, by name (SSH passwords and passphrases, tokens, keys)
_SECRET = re.compile(r"pass(word|phrase)?|pwd|token|secret|key|credential|auth", re.IGNORECASE)
REDACTED = "<redacted>"
_NAME = r"[A-Za-z_][\w.-]*"
#: credentials inside free text (a job script's lines, a worker's arguments, an #SBATCH option):
#: ``NAME=value`` / ``NAME: value`` / ``--name value`` with a secret-like name, the password of a
#: URL (``scheme://user:password@host``), an HTTP ``Authorization`` header, and well-known token shapes
_IN_TEXT = [
    (re.compile(r"(\b(?:Bearer|Basic|token)\s+)([A-Za-z0-9._~+/=-]{8,})", re.IGNORECASE), "header"),
    (re.compile(rf"((?:^|[\s;'\"]|--?)({_NAME})\s*[=:]\s*)(\"[^\"]*\"|'[^']*'|[^\s;'\"]+)"), "assignment"),
    (re.compile(rf"((?:^|\s)--?({_NAME})\s+)([^\s;'\"-][^\s;'\"]*)"), "option"),
    (re.compile(r"(://[^/\s:@]+:)([^@\s/]+)(@)"), "url"),
    (
        re.compile(r"\b(AKIA|ASIA)[0-9A-Z]{16}\b|\bgh[pousr]_[A-Za-z0-9]{20,}\b|\bxox[abpr]-[A-Za-z0-9-]{10,}\b"),
        "shape",
    ),
]


def redact_text(text: str) -> str:
    """``text`` with the credentials it seems to hold replaced by ``<redacted>`` (see :data:`_IN_TEXT`)."""
    for pattern, kind in _IN_TEXT:
        if kind in ("assignment", "option"):
            # a value may itself be an assignment (``--comment=db_password=…``): look inside it too
            text = pattern.sub(
                lambda m: m.group(1) + (REDACTED if _SECRET.search(m.group(2)) else redact_text(m.group(3))), text
            )
        elif kind == "url":
            text = pattern.sub(lambda m: m.group(1) + REDACTED + m.group(3), text)
        elif kind == "header":
            text = pattern.sub(lambda m: m.group(1) + REDACTED, text)
        else:
            text = pattern.sub(REDACTED, text)
    return text


def describe(cfg: Any) -> dict[str, Any]:
    """A JSON-able description of the config for run manifests and the history: TLS files by
    name only, and no secret — values of settings named like a password, passphrase, token,
    secret or key, and every value of an environment (``env``), are replaced by ``<redacted>``,
    and so are credentials inside free text (:func:`redact_text`: a job script's
    ``export AWS_SECRET_ACCESS_KEY=…``, ``--token …`` among a worker's arguments, a URL's password)."""
    d = cfg.model_dump()
    if d.get("tls"):
        d["tls"] = {k: Path(v).name for k, v in d["tls"].items()}
    return _redacted(d)


def _redacted(value: Any, name: str = "") -> Any:
    if name == "tls":  # certificate and key file names (describe keeps the names only), not secrets
        return value
    if isinstance(value, dict):
        if name == "env":
            return dict.fromkeys(value, REDACTED)
        return {k: _redacted(v, str(k)) for k, v in value.items()}
    if isinstance(value, list):
        out = [_redacted(v, name) for v in value]
        # an argument list: the value after an option named like a secret (["--token", "abc"])
        for i in range(1, len(out)):
            flag = value[i - 1]
            if isinstance(flag, str) and re.fullmatch(rf"--?{_NAME}", flag) and _SECRET.search(flag):
                out[i] = REDACTED
        return out
    if _SECRET.search(name) and value is not None:
        return REDACTED
    return redact_text(value) if isinstance(value, str) else value


def _local_security(cfg: LocalConfig) -> dict[str, Any]:
    """TLS with credentials made for this run: a process of another user (or of this one) that
    finds the scheduler's port cannot connect, read the workers' data or run code on them."""
    if not cfg.processes:  # threads in this process talk without a network
        return {}
    if cfg.insecure:
        return {"host": "127.0.0.1"}
    from pipeline.cluster_tls import temporary_security

    return {"host": "127.0.0.1", "protocol": "tls://", "security": temporary_security()}


def _start_ssh(cfg: SSHConfig, stack: contextlib.ExitStack) -> Any:
    """Scheduler and workers over SSH; TLS with this run's credentials unless ``insecure``."""
    import dask
    from distributed import Client, SSHCluster

    kw: dict[str, Any] = {"remote_python": cfg.remote_python} if cfg.remote_python else {}
    hosts = ", ".join(cfg.hosts)
    try:
        settings: dict[str, Any] = http_config(cfg.dashboard_address)
        if not cfg.insecure:
            from pipeline.cluster_tls import remote_credentials

            kw["security"], tls = stack.enter_context(remote_credentials(cfg.hosts, cfg.connect_options))
            settings |= tls
        # the remote processes inherit this configuration (paths of the credential files only)
        with dask.config.set(settings):
            cluster = SSHCluster(
                cfg.hosts,
                connect_options=cfg.connect_options,
                worker_options={"dashboard_address": "127.0.0.1:0", **cfg.worker_options}
                if cfg.dashboard_address is None
                else cfg.worker_options,
                scheduler_options={**_scheduler_http(cfg.dashboard_address), **cfg.scheduler_options},
                **kw,
            )
    except ImportError:
        raise TaskError("ssh clusters need asyncssh: pip install 'sdc-pipeline[cluster]'") from None
    except Exception as e:  # asyncssh and distributed raise many kinds (refused, auth, start timeout)
        raise TaskError(f"ssh cluster: cannot start Dask on {hosts}: {type(e).__name__}: {e}") from None
    stack.callback(close_cluster, cluster, "ssh")
    return stack.enter_context(Client(cluster))


#: glibc's mmap threshold for local worker processes, in bytes.  Dask's nanny starts workers with
#: ``MALLOC_TRIM_THRESHOLD_=65536``, which also turns off glibc's dynamic mmap threshold: every
#: array over 128 KiB is then a fresh mmap, page-faulted in and unmapped again when freed (the
#: kernels' temporaries of a million records are 8 MB each).  With the threshold at 32 MiB — the
#: largest glibc accepts; a larger value is silently ignored — such arrays reuse the worker's heap:
#: at 5M register records the workers' minor page faults fell 3-6x and their CPU by a third
#: (disclosure) and 10-20 % (identification risk) (measured 2026-12-02; CHANGELOG.md).
WORKER_MMAP_THRESHOLD = 32 * 2**20


def worker_malloc_config() -> dict[str, int]:
    """Dask config that starts local worker processes with :data:`WORKER_MMAP_THRESHOLD` (set
    before the process starts, as glibc reads it then); a threshold already configured is kept."""
    import dask

    key = "distributed.nanny.pre-spawn-environ"
    if "MALLOC_MMAP_THRESHOLD_" in (dask.config.get(key, default=None) or {}):
        return {}
    return {f"{key}.MALLOC_MMAP_THRESHOLD_": WORKER_MMAP_THRESHOLD}


def _local_dashboard(cfg: LocalConfig) -> dict[str, Any]:
    """The dashboard only where asked for (:func:`dashboard_address`: loopback unless the address
    names a host); otherwise the scheduler's health check alone on a free loopback port."""
    http = _scheduler_http(cfg.dashboard_address)
    return {"dashboard_address": http["dashboard_address"], "scheduler_kwargs": {"dashboard": http["dashboard"]}}


@contextlib.contextmanager
def connect(config: str | Path | dict[str, Any] | None = None) -> Iterator[Any]:
    """Start (or connect to) the configured cluster and yield a ``distributed.Client``.

    The client is the default for ``dask.compute`` inside the ``with`` block.
    """
    from distributed import Client

    cfg = load_cluster_config(config)
    # distributed sets its loggers up when imported; quiet them after that (INFO floods the console)
    for name in ("distributed", "distributed.shuffle._scheduler_plugin", "distributed.http.proxy"):
        logging.getLogger(name).setLevel(logging.ERROR)
    # a failed HTTP request (a browser on the dashboard) must not print a traceback into the terminal
    logging.getLogger("tornado.application").setLevel(logging.CRITICAL)
    with contextlib.ExitStack() as stack:
        if cfg.type == "local":
            import dask
            from distributed import LocalCluster

            from pipeline.worker_log import WorkerLogFile, check_worker_log, worker_log_path

            check_worker_log(worker_log_path())  # before any process starts
            n, mem = local_size(cfg)
            with (
                children_ignore_sigint(),
                dask.config.set({**worker_malloc_config(), **http_config(cfg.dashboard_address)}),
            ):
                cluster = LocalCluster(
                    n_workers=n,
                    threads_per_worker=cfg.threads_per_worker,
                    memory_limit=mem,
                    processes=cfg.processes,
                    **_local_security(cfg),
                    **_local_dashboard(cfg),
                    # a failed task's traceback goes to the worker log file, not the terminal
                    silence_logs=logging.CRITICAL,
                )
                # inside the block: a Ctrl-C held while the cluster started then closes it
                stack.callback(close_cluster, cluster, "local")
            client = stack.enter_context(Client(cluster))
            client.register_plugin(WorkerLogFile(str(worker_log_path())), name="sdc-worker-log")
        elif cfg.type == "slurm":
            client = _start_slurm(cfg, stack)
        elif cfg.type == "kubernetes":
            try:
                from dask_kubernetes.operator import KubeCluster
            except ImportError:
                raise TaskError(
                    "kubernetes clusters need dask-kubernetes: pip install 'sdc-pipeline[cluster]'"
                ) from None
            kw = {"namespace": cfg.namespace} if cfg.namespace else {}
            cluster = KubeCluster(custom_cluster_spec=kubernetes_spec(cfg), **kw)
            stack.callback(close_cluster, cluster, "kubernetes")
            if cfg.adaptive is not None:
                cluster.adapt(minimum=cfg.adaptive.minimum, maximum=cfg.adaptive.maximum)
            client = stack.enter_context(Client(cluster))
        elif cfg.type == "ssh":
            client = _start_ssh(cfg, stack)
        else:
            security = None
            if cfg.tls is not None:
                from distributed.security import Security

                for k, v in cfg.tls.model_dump().items():
                    if not Path(v).exists():
                        raise TaskError(f"scheduler config: tls.{k} file not found: {v}")
                security = Security(
                    tls_ca_file=cfg.tls.ca_file,
                    tls_client_cert=cfg.tls.cert,
                    tls_client_key=cfg.tls.key,
                    require_encryption=True,
                )
            try:
                client = stack.enter_context(Client(cfg.address, security=security, timeout=cfg.timeout_s))
            except OSError as e:
                raise TaskError(f"cannot reach the Dask scheduler at {cfg.address}: {e}") from None
        log.info("dask cluster: %s, dashboard %s", cfg.type, client.dashboard_link)
        address = client.scheduler.address
        try:
            yield client
        except Exception as e:
            if client.status == "running":
                raise
            # the client gave up reconnecting (after its timeout) and closed: the scheduler is gone
            raise PipelineError(
                f"lost the connection to the Dask scheduler at {address} ({cfg.type} cluster) and could not "
                "reconnect, so the work in progress is lost. No results were written; run the same command "
                "again to resume (finished units are reused)"
            ) from e
