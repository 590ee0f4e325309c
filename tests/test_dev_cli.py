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
