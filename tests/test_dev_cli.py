"""``python -m sbcrawl_dev``: every command and benchmark answers --help, and serve-sim's errors are one line."""

from __future__ import annotations

import socket

import pytest

from sbcrawl_dev.__main__ import BENCHES, COMMANDS, main


def _help(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    with pytest.raises(SystemExit) as exit_info:
        main([*argv, "--help"])
    assert exit_info.value.code == 0
    return capsys.readouterr().out


def test_the_listings_name_every_command_and_benchmark(capsys):
    top = _help(capsys)
    assert top.startswith("usage: python -m sbcrawl_dev")
    assert all(f"\n  {name} " in top for name in COMMANDS)
    benches = _help(capsys, "bench")
    assert all(f"\n  {name} " in benches for name in BENCHES)


@pytest.mark.parametrize("name", [name for name in COMMANDS if name != "bench"])
def test_every_command_answers_help_with_its_own_options(capsys, name):
    assert _help(capsys, name).startswith(f"usage: python -m sbcrawl_dev {name} ")


@pytest.mark.parametrize("name", list(BENCHES))
def test_every_benchmark_answers_help_with_its_own_options(capsys, name):
    assert _help(capsys, "bench", name).startswith(f"usage: python -m sbcrawl_dev bench {name} ")


def test_an_unknown_benchmark_is_refused(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["bench", "nosuch"])
    assert exit_info.value.code == 2
    assert "invalid choice: 'nosuch'" in capsys.readouterr().err


def test_serve_sim_errors_are_one_line(capsys):
    assert main(["serve-sim", "nosuch"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown site profile 'nosuch'" in err
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        assert main(["serve-sim", "tiny", "--port", str(busy.getsockname()[1])]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot listen" in err
    for port in ("70000", "-1"):
        assert main(["serve-sim", "tiny", "--port", port]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"--port must be from 0 (any free port) to 65535, not {port}" in err


def test_serve_lake_writes_what_lake_load_and_airflow_need(tmp_path):
    """serve-lake: a local S3 and catalog, and catalog.json / airflow.env (private files) that reach them."""
    import json
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-m", "sbcrawl_dev", "serve-lake", "--dir", str(tmp_path)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        printed = []
        while not (printed and printed[-1].startswith("S3 on http://127.0.0.1:")):  # once S3 and the catalog answer
            printed.append(proc.stdout.readline())
            assert printed[-1], proc.stderr.read()  # it ended instead
        props = json.loads((tmp_path / "catalog.json").read_text())
        from pyiceberg.catalog import load_catalog

        catalog = load_catalog("local", **{k: v for k, v in props.items() if k != "namespace"})
        catalog.create_namespace_if_not_exists(props["namespace"])
        assert (props["namespace"],) in catalog.list_namespaces()
        env = (tmp_path / "airflow.env").read_text()
        assert "AIRFLOW_CONN_SBCRAWL_LOCAL_S3=" in env and "AIRFLOW_CONN_SBCRAWL_LOCAL_LAKE=" in env
        assert all((tmp_path / name).stat().st_mode & 0o077 == 0 for name in ("catalog.json", "airflow.env"))
        printed += [proc.stdout.readline(), proc.stdout.readline()]
        assert props["s3.secret-access-key"] not in "".join(printed)
    finally:
        proc.terminate()
        proc.wait(timeout=60)
