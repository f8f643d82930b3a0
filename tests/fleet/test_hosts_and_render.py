"""Host lists (arguments, hosts file, ssh-config patterns) and the fleet reporters' handling of hostile text."""

from __future__ import annotations

import json

import pytest

from sgl_scan.errors import ConfigError
from sgl_scan.fleet.hosts import HostEntry, collect_hosts, hosts_from_ssh_config, parse_hosts_file
from sgl_scan.fleet.model import FleetHost, FleetReport
from sgl_scan.reports.fleet import render_fleet


def test_hosts_file_comments_roots_and_duplicates(tmp_path):
    hosts = tmp_path / "hosts.txt"
    hosts.write_text("# fleet\n\ngpu-1\ngpu-2 /root/sglang/python/sglang  # patched box\n'gpu 3' \"/a b/sglang\"\ngpu-1\n")
    assert parse_hosts_file(str(hosts)) == [
        HostEntry("gpu-1"), HostEntry("gpu-2", "/root/sglang/python/sglang"), HostEntry("gpu 3", "/a b/sglang"),
        HostEntry("gpu-1"),
    ]
    entries = collect_hosts(["gpu-0", "gpu-1"], str(hosts), None, None, "/default/sglang")
    assert [e.label for e in entries] == [
        "gpu-0:/default/sglang", "gpu-1:/default/sglang", "gpu-2:/root/sglang/python/sglang", "gpu 3:/a b/sglang"]


@pytest.mark.parametrize("text, message", [
    ("gpu-1 /a /b\n", "hosts.txt:1: expected 'HOST [REMOTE_ROOT]', got 3 words"),
    ("ok\n'unclosed\n", "hosts.txt:2: No closing quotation"),
])
def test_hosts_file_errors_name_the_line(tmp_path, text, message):
    hosts = tmp_path / "hosts.txt"
    hosts.write_text(text)
    with pytest.raises(ConfigError) as info:
        parse_hosts_file(str(hosts))
    assert str(info.value).endswith(message)


def test_missing_hosts_and_options_are_usage_errors(tmp_path):
    with pytest.raises(ConfigError, match="hosts file not found"):
        parse_hosts_file(str(tmp_path / "nope.txt"))
    with pytest.raises(ConfigError, match="give hosts"):
        collect_hosts([], None, None, None, None)
    with pytest.raises(ConfigError, match="is not a host name"):
        collect_hosts(["-oProxyCommand=x"], None, None, None, None)


def test_ssh_config_patterns_take_concrete_hosts_only(tmp_path):
    config = tmp_path / "config"
    config.write_text("Host *\n  User root\nHost gpu-1 gpu-2 bastion\n  Port 22\nHost gpu-*\n  User x\n"
                      "Host gpu-3\n  HostName 127.0.0.1\nHost !gpu-4 gpu-5\n")
    assert [e.host for e in hosts_from_ssh_config("gpu-*", str(config))] == ["gpu-1", "gpu-2", "gpu-3", "gpu-5"]
    with pytest.raises(ConfigError, match="no Host in .* matches 'cpu-\\*'"):
        hosts_from_ssh_config("cpu-*", str(config))


PAYLOAD = "gpu\x1b]52;c;cHduZWQ=\x07\x1b[2J<img src=x onerror=alert(1)>|`[UPDATE](http://evil.invalid)"


def _failed_only() -> FleetReport:
    host = FleetHost(label="gpu-1", host="gpu-1", remote_root=None, error=f"remote said: {PAYLOAD}")
    return FleetReport(hosts=(host,), groups=(), baseline=None, diffs=(), scope="speculative", tool_version="0")


def test_remote_text_stays_inert_in_every_format():
    report = _failed_only()
    text = render_fleet(report, "text")
    assert "\x1b" not in text and "\x07" not in text and "\\x1b]52" in text
    md = render_fleet(report, "markdown")
    assert "\x1b" not in md and "\x07" not in md
    row = next(line for line in md.splitlines() if line.startswith("| `gpu-1"))
    assert "<img" not in row.replace("`", "").split("error:")[0]
    assert row.count(" | ") == 5  # the payload's pipe did not open a new cell
    html = render_fleet(report, "html")
    assert "<img src=x" not in html and "&lt;img src=x" in html
    doc = json.loads(render_fleet(report, "json"))
    assert doc["hosts"][0]["error"].endswith(PAYLOAD)


def test_cli_usage_errors_exit_2_before_any_connection(tmp_path):
    from click.testing import CliRunner

    from sgl_scan.cli import cli

    runner = CliRunner()
    result = runner.invoke(cli, ["fleet", "gpu-1", "--ssh-config", str(tmp_path / "missing")], standalone_mode=False)
    assert isinstance(result.exception, ConfigError) and result.exception.exit_code == 2
    assert "ssh config file not found" in str(result.exception)
    result = runner.invoke(cli, ["fleet", "gpu-1", "--format", "sarif"])
    assert result.exit_code == 2 and "sarif" in result.output
