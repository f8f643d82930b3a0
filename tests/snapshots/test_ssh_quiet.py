"""paramiko's own logging and its reader thread never reach the user's terminal: sgl-scan reports
connection failures in one line, and only `-v` shows paramiko's view."""

from __future__ import annotations

import logging
import socket
import time

import paramiko
import pytest

from sgl_scan.cli import main
from sgl_scan.errors import RemoteError
from sgl_scan.snapshots.sshconnect import Connector, Target, resolve_target


def _run(capsys, *args):
    with pytest.raises(SystemExit) as exc:
        main(list(args))
    return exc.value.code, capsys.readouterr()


def test_paramiko_log_records_stay_inside_unless_verbose(capsys, caplog):
    code, _ = _run(capsys, "rules")
    assert code == 0
    caplog.clear()
    logging.getLogger("paramiko.transport").error("Exception (client): Error reading SSH protocol banner")
    assert caplog.records == [] and capsys.readouterr().err == ""

    code, _ = _run(capsys, "-v", "rules")
    assert code == 0
    logging.getLogger("paramiko.transport").setLevel(logging.NOTSET)
    logging.getLogger("paramiko").setLevel(logging.NOTSET)
    logging.getLogger("paramiko.transport").error("shown with -v")
    assert {r.getMessage() for r in caplog.records} == {"shown with -v"}  # reaches the handlers
    _run(capsys, "rules")  # leave paramiko quiet for later tests


def test_no_paramiko_thread_outlives_a_failed_connection(monkeypatch):
    created = []

    class Recording(paramiko.Transport):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            created.append(self)

    monkeypatch.setattr(paramiko, "Transport", Recording)
    with socket.socket() as silent:  # accepts TCP (backlog) but never speaks SSH
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        target = Target("silent", "127.0.0.1", silent.getsockname()[1], "nobody", ())
        connector = Connector(timeout=0.3)
        with pytest.raises(RemoteError, match="did not answer"):
            with connector:
                connector.connect(target)
    assert len(created) == 1
    assert not created[0].is_alive()  # joined on close: nothing of paramiko's runs on after our error



@pytest.mark.slow
def test_closing_a_connection_does_not_wait_for_paramikos_poll(sshd_server):
    """paramiko's reader thread sleeps in `recv` with a 0.1 s timeout. On an idle connection (the
    server sends nothing) closing must not wait for that poll to end (about 25 ms a close here, up to
    100 ms); with the socket shut down first a close takes under a millisecond."""
    target = resolve_target(sshd_server.host, port=sshd_server.port, user=sshd_server.user,
                            identity=str(sshd_server.client_key), ssh_config="/dev/null")
    spent = 0.0
    for _ in range(5):
        connector = Connector(known_hosts=str(sshd_server.known_hosts), timeout=10.0)
        transport = connector.connect(target)
        time.sleep(0.02)  # the reader thread is back in its recv
        started = time.monotonic()
        connector.close()
        spent += time.monotonic() - started
        assert not transport.is_alive()
    assert spent < 0.05, f"5 closes took {spent:.3f} s"
