"""The local SeaweedFS: reachable, loopback-only, secret-safe, and gone after stop (no orphans)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from sbcrawl_dev.infra.seaweedfs import (
    CREDENTIALS_FILE,
    SeaweedFS,
    SeaweedFSError,
    find_weed_binary,
    listening_sockets,
    pick_ports,
)


def _alive(pid: int) -> bool:
    """True while the process exists and is not a zombie."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _wait_dead(pid: int, timeout: float = 15.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not _alive(pid):
            return True
        time.sleep(0.1)
    return False


def test_weed_binary_is_found() -> None:
    out = subprocess.run([str(find_weed_binary()), "version"], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0
    assert "version" in out.stdout


def test_ports_are_distinct_and_admin_leaves_room_for_its_worker() -> None:
    ports = pick_ports()
    values = [getattr(ports, name) for name in ports.__dataclass_fields__]
    assert len(set(values)) == len(values)
    assert ports.admin_grpc == ports.admin + 10000 <= 65535
    assert all(f.startswith("-") and "=" in f for f in ports.flags())


def test_s3_roundtrip_in_a_fresh_bucket(seaweed: SeaweedFS, seaweed_bucket: str) -> None:
    client = seaweed.boto3_client()
    assert client.list_objects_v2(Bucket=seaweed_bucket).get("KeyCount", 0) == 0
    client.put_object(Bucket=seaweed_bucket, Key="site/objects/abc", Body=b"hello lake")
    body = client.get_object(Bucket=seaweed_bucket, Key="site/objects/abc")["Body"].read()
    assert body == b"hello lake"
    # The configured bucket exists from the start.
    client.head_bucket(Bucket=seaweed.bucket)


def test_fresh_buckets_do_not_share_objects(seaweed: SeaweedFS, seaweed_bucket: str) -> None:
    # Runs after the round trip above: its object must not be visible here.
    assert seaweed_bucket != seaweed.bucket
    assert seaweed.boto3_client().list_objects_v2(Bucket=seaweed_bucket).get("KeyCount", 0) == 0


def test_catalog_serves_the_table_bucket_as_warehouse(seaweed: SeaweedFS) -> None:
    url = f"{seaweed.catalog_uri}/v1/config?warehouse={seaweed.table_bucket}"
    with urllib.request.urlopen(url, timeout=10) as resp:
        config = json.load(resp)
    assert config["defaults"]["warehouse"] == f"s3://{seaweed.table_bucket}"
    assert seaweed.startup_seconds is not None and seaweed.startup_seconds < 60


def test_everything_listens_on_loopback_only(seaweed: SeaweedFS) -> None:
    assert seaweed.pid is not None and seaweed.ports is not None
    sockets = listening_sockets(seaweed.pid)
    assert sockets, "weed mini listens on nothing?"
    assert {addr for addr, _ in sockets} == {"127.0.0.1"}
    chosen = {getattr(seaweed.ports, name) for name in seaweed.ports.__dataclass_fields__}
    assert {port for _, port in sockets} <= chosen


def test_secret_stays_out_of_log_repr_and_command_line(seaweed: SeaweedFS) -> None:
    secret = seaweed.secret_key
    assert secret not in seaweed.log_path.read_text(errors="replace")
    assert secret not in repr(seaweed)
    assert secret.encode() not in Path(f"/proc/{seaweed.pid}/cmdline").read_bytes()


def test_airflow_connection_values(seaweed: SeaweedFS) -> None:
    conn = json.loads(seaweed.airflow_conn_json())
    assert conn == {
        "conn_type": "aws",
        "login": seaweed.access_key,
        "password": seaweed.secret_key,
        "extra": {"endpoint_url": seaweed.s3_endpoint, "region_name": "us-east-1"},
    }
    uri = urllib.parse.urlsplit(seaweed.airflow_conn_uri())
    assert uri.scheme == "aws"
    assert urllib.parse.unquote(uri.username or "") == seaweed.access_key
    assert urllib.parse.unquote(uri.password or "") == seaweed.secret_key
    assert dict(urllib.parse.parse_qsl(uri.query)) == conn["extra"]
    assert seaweed.airflow_env("lake_s3") == {"AIRFLOW_CONN_LAKE_S3": seaweed.airflow_conn_json()}


def test_pyiceberg_properties_have_the_s3_tables_shape(seaweed: SeaweedFS) -> None:
    props = seaweed.pyiceberg_properties()
    assert props["type"] == "rest"
    assert props["uri"] == seaweed.catalog_uri
    assert props["warehouse"] == seaweed.table_bucket
    assert props["rest.sigv4-enabled"] == "true"
    assert props["rest.signing-name"] == "s3tables"
    assert props["client.access-key-id"] == props["s3.access-key-id"] == seaweed.access_key


@pytest.mark.slow
def test_stop_leaves_no_process_and_frees_ports_and_data_survives_restart(tmp_path: Path) -> None:
    server = SeaweedFS(tmp_path / "sw")
    with server:
        pid = server.pid
        assert pid is not None and server.ports is not None
        first_ports = server.ports
        server.boto3_client().put_object(Bucket=server.bucket, Key="kept", Body=b"1")
    assert not server.running
    assert _wait_dead(pid, timeout=1), f"weed mini (pid {pid}) still alive after stop()"
    with pytest.raises(OSError):
        os.kill(pid, 0)
    reuse = SeaweedFS(tmp_path / "sw", access_key=server.access_key, secret_key=server.secret_key)
    with reuse:
        # New ports every start: mini.options from the first run must not bring the old ones back.
        assert reuse.ports is not None and reuse.ports.s3 != first_ports.s3
        assert reuse.boto3_client().get_object(Bucket=reuse.bucket, Key="kept")["Body"].read() == b"1"
    # stop() is idempotent.
    reuse.stop()


@pytest.mark.slow
def test_start_timeout_reports_log_tail_and_stops_the_process(tmp_path: Path) -> None:
    server = SeaweedFS(tmp_path / "sw", start_timeout=0.01)
    with pytest.raises(SeaweedFSError) as info:
        server.start()
    message = str(info.value)
    assert "did not become ready within" in message
    assert str(server.log_path) in message
    assert "weed mini" in message  # the log tail (our command line header, at least) is included
    assert not server.running


@pytest.mark.slow
@pytest.mark.parametrize("how", ["sigterm", "sigkill"])
def test_run_until_interrupted_serves_then_leaves_no_orphan(tmp_path: Path, how: str) -> None:
    """SIGTERM: clean shutdown, exit 0. SIGKILL of the owner: the kernel takes weed down with it."""
    directory = tmp_path / "serve"
    code = (
        "import sys; from sbcrawl_dev.infra.seaweedfs import run_until_interrupted as r; sys.exit(r(sys.argv[1]))"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")}
    proc = subprocess.Popen(
        [sys.executable, "-c", code, str(directory)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    try:
        lines = []
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            if line.startswith("Press Ctrl+C"):
                break
        output = "".join(lines)
        assert "S3 endpoint:" in output, output
        weed_pid = int(output.split("(pid ", 1)[1].split(")", 1)[0])
        assert _alive(weed_pid)
        creds = (directory / CREDENTIALS_FILE).read_text()
        secret = creds.split("AWS_SECRET_ACCESS_KEY='", 1)[1].split("'", 1)[0]
        assert secret and secret not in output
        assert oct((directory / CREDENTIALS_FILE).stat().st_mode & 0o777) == "0o600"
        proc.send_signal(signal.SIGTERM if how == "sigterm" else signal.SIGKILL)
        rc = proc.wait(timeout=30)
        if how == "sigterm":
            rest = proc.stdout.read()
            assert rc == 0, rest
            assert "SeaweedFS stopped." in rest
        assert _wait_dead(weed_pid), f"weed (pid {weed_pid}) outlived its owner ({how})"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
