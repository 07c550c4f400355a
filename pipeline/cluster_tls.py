"""TLS with per-run credentials for clusters whose workers run elsewhere (Slurm jobs, SSH hosts).

The credentials are one self-signed certificate and key made for the run
(:func:`temporary_security`), written as files only the owner can read into a private folder that is
removed when the cluster closes; a client without them cannot connect to the scheduler.

Slurm: the folder is made in ``shared_temp_directory`` (seen by the compute nodes) and the
workers' jobs name its files (dask-jobqueue would otherwise keep its own copies for as long as the
cluster object lives, which outlasts a run in a Python session).

SSH: SSHCluster starts the remote scheduler and workers from a JSON spec on their command line and
hands them the caller's Dask configuration through an environment variable, so a
:class:`distributed.security.Security` object cannot be passed to them, and anything put in that
configuration is readable in the remote host's process table while the processes start.  The
credentials therefore travel as files: before the cluster starts, each host receives a private
folder (0700) holding the run's certificate and key (0600), written over the SSH connection's
standard input (never a command line); the inherited configuration names only the files' paths.
The folders are removed when the cluster is closed (and on a failed start).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

#: where the per-run folders go on every host (the same absolute path everywhere, as the inherited
#: Dask configuration is one for all hosts; the random part makes the name unguessable)
REMOTE_ROOT = "/tmp"
CA_FILE = "ca.pem"
CREDENTIALS_FILE = "credentials.pem"


#: how long a run's certificate is valid (a run that lasts longer needs a new cluster)
VALID_DAYS = 365


def temporary_security() -> Any:
    """A :class:`~distributed.security.Security` with credentials made for this run, in memory:
    one self-signed certificate (also the CA) and its key for every role, encryption required —
    ``Security.temporary()``'s layout with an elliptic-curve key (P-256, about 128-bit security)
    instead of RSA-2048, whose prime search cost 0.1-0.5 s of every run's start."""
    import datetime as dt

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID
    from distributed.security import Security

    key = ec.generate_private_key(ec.SECP256R1())
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "dask-internal")])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("dask-internal")]), critical=False)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=VALID_DAYS))
        .sign(key, hashes.SHA256())
    )
    cert_pem = cert.public_bytes(serialization.Encoding.PEM).decode()
    roles = ("scheduler", "worker", "client")
    parts = {f"tls_{role}_key": key_pem for role in roles} | {f"tls_{role}_cert": cert_pem for role in roles}
    return Security(require_encryption=True, tls_ca_file=cert_pem, **parts)


def _temporary_credentials() -> tuple[Any, str, str]:
    """A new Security (in memory) and its CA and key+certificate as PEM text."""
    security = temporary_security()
    # one self-signed certificate (also the CA) and its key for all roles
    return security, security.tls_ca_file, security.tls_scheduler_key + security.tls_scheduler_cert


def _file_security(ca: str, credentials: str) -> Any:
    from distributed.security import Security

    roles = ("scheduler", "worker", "client")
    files = {f"tls_{role}_{part}": credentials for role in roles for part in ("cert", "key")}
    return Security(tls_ca_file=ca, require_encryption=True, **files)


@contextlib.contextmanager
def shared_credentials(shared_folder: str | Path) -> Iterator[Any]:
    """Write this run's credentials into a private folder under ``shared_folder``, yield a
    :class:`~distributed.security.Security` naming those files, remove the folder at the end."""
    _, ca_pem, credentials_pem = _temporary_credentials()
    try:
        folder = Path(tempfile.mkdtemp(prefix=".sdc-pipeline-tls-", dir=shared_folder))  # 0700
    except OSError as e:
        raise OSError(f"cannot write the run's TLS credentials into {shared_folder}: {e.strerror}") from None
    try:
        for name, text in ((CA_FILE, ca_pem), (CREDENTIALS_FILE, credentials_pem)):
            with os.fdopen(os.open(folder / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as f:
                f.write(text)
        yield _file_security(str(folder / CA_FILE), str(folder / CREDENTIALS_FILE))
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _folder_name() -> str:
    return f"{REMOTE_ROOT}/sdc-pipeline-tls-{secrets.token_hex(16)}"


async def _on_hosts(hosts: list[str], connect_options: dict[str, Any], commands: list[tuple[str, str]]) -> None:
    """Run ``commands`` (shell command, standard input) on every host, stopping at the first failure."""
    import asyncssh

    async def one(host: str) -> None:
        async with asyncssh.connect(host, **connect_options) as conn:
            for command, stdin in commands:
                result = await conn.run(command, input=stdin, check=False)
                if result.exit_status != 0:
                    # the command and its error output name paths only, never the credentials
                    raise RuntimeError(f"{host}: `{command}` failed: {str(result.stderr).strip()}")

    await asyncio.gather(*(one(h) for h in dict.fromkeys(hosts)))


def tls_settings(folder: str) -> dict[str, Any]:
    """Dask configuration under which every remote process requires TLS with the run's files."""
    ca, credentials = f"{folder}/{CA_FILE}", f"{folder}/{CREDENTIALS_FILE}"
    settings: dict[str, Any] = {
        "distributed.comm.require-encryption": True,
        "distributed.comm.default-scheme": "tls",
        "distributed.comm.tls.ca-file": ca,
    }
    for role in ("scheduler", "worker", "client"):
        settings[f"distributed.comm.tls.{role}.cert"] = credentials
        settings[f"distributed.comm.tls.{role}.key"] = credentials
    return settings


@contextlib.contextmanager
def remote_credentials(hosts: list[str], connect_options: dict[str, Any]) -> Iterator[tuple[Any, dict[str, Any]]]:
    """Make this run's TLS credentials, copy them to every host, yield them, remove them again.

    Yields the :class:`~distributed.security.Security` for this process (the cluster object and
    the client) and the Dask configuration to set while the remote processes are started.
    """
    security, ca_pem, credentials_pem = _temporary_credentials()
    folder = _folder_name()
    write = [
        (f"umask 077 && mkdir -m 700 {folder}", ""),
        (f"umask 077 && cat > {folder}/{CA_FILE}", ca_pem),
        (f"umask 077 && cat > {folder}/{CREDENTIALS_FILE}", credentials_pem),
    ]
    try:
        asyncio.run(_on_hosts(hosts, connect_options, write))
        yield security, tls_settings(folder)
    finally:
        with contextlib.suppress(Exception):  # a host that went away keeps a folder of dead credentials
            asyncio.run(_on_hosts(hosts, connect_options, [(f"rm -rf {folder}", "")]))
