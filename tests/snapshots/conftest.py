"""Fixtures for the snapshot tests: small and real SGLang package trees, SSH source parameters."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from sgl_scan.snapshots import ssh
from tests.support.gitrepo import copy_package, write_files
from tests.support.releases import release_tree, release_wheel

@pytest.fixture(autouse=True)
def _ctimes_settle_at_once(monkeypatch):
    """In-process SSH pulls trust every ctime, however fresh: these tests edit a file and pull within
    milliseconds, faster on a quick machine than `ssh.SETTLE_FINE`. What a fresh ctime does is tested
    on its own (test_ssh_stamps.py, test_ssh_listing.py), with the windows set there."""
    monkeypatch.setattr(ssh, "SETTLE_FINE", 0.0)
    monkeypatch.setattr(ssh, "SETTLE_COARSE", 0.0)


# A tiny package that exercises every scope rule (see sgl_scan/snapshots/scope.py).
MINI_FILES = {
    "__init__.py": "",
    "version.py": '__version__ = "9.9.9"\n',
    "srt/__init__.py": "",
    "srt/server_args.py": "class ServerArgs:\n    speculative_algorithm: str = None\n",
    "srt/arg_groups/spec.py": "SPEC = 1\n",
    "srt/speculative/spec_info.py": "class SpeculativeAlgorithm:\n    EAGLE = 1\n",
    "srt/speculative/sub/deep.py": "DEEP = 1\n",
    "srt/speculative/notes.txt": "not python\n",
    "srt/models/llama_eagle3.py": "class LlamaForCausalLMEagle3:\n    pass\n",
    "srt/models/qwen_dflash.py": "class DFlash:\n    pass\n",
    "srt/models/llama.py": "def load(self, name):\n    if 'd2t' in name:\n        self.hot_token_id = 1\n",
    "srt/models/conv.py": "import torch\nlayer = torch.nn.Dropout2d\nup = torch.nn.UpsamplingNearest2d\n",
    "srt/models/sub/eagle_helper.py": "X = 'd2t'\n",
    "srt/managers/scheduler.py": "from x import SpeculativeAlgorithm\n",
    "srt/managers/io_struct.py": "class Req:\n    pass\n",
    "srt/managers/deep/worker.py": "self.spec_algorithm = None\n",
    "srt/layers/linear.py": "class Linear:\n    pass\n",
    "srt/layers/boundary.py": "def defer(plan):\n    return plan._speculative_algo.is_eagle()\n",
    "srt/plugins/my_spec.py": (
        "from sglang.srt.speculative.spec_info import SpeculativeAlgorithm\n\n\n"
        "@SpeculativeAlgorithm.register('MY_SPEC')\ndef _factory(server_args):\n    return object\n"
    ),
}
MINI_SPECULATIVE = sorted(
    "sglang/" + p for p in (
        "version.py", "srt/server_args.py", "srt/arg_groups/spec.py", "srt/speculative/spec_info.py",
        "srt/speculative/sub/deep.py", "srt/models/llama_eagle3.py", "srt/models/qwen_dflash.py",
        "srt/models/llama.py", "srt/models/sub/eagle_helper.py", "srt/managers/scheduler.py",
        "srt/managers/deep/worker.py", "srt/layers/boundary.py", "srt/plugins/my_spec.py",
    )
)
MINI_FULL = sorted(["sglang/version.py"] + ["sglang/" + p for p in MINI_FILES if p.startswith("srt/") and p.endswith(".py")])


def make_mini_package(folder: Path) -> Path:
    """Write the tiny package to `folder/sglang` and return that package folder."""
    package = folder / "sglang"
    write_files(package, MINI_FILES)
    return package


@pytest.fixture
def mini_package(tmp_path) -> Path:
    return make_mini_package(tmp_path / "remote")


@pytest.fixture(scope="session")
def real_package(tmp_path_factory) -> Path:
    """A copy of sglang 0.5.23's package (all srt/*.py, version.py, _version.py from the wheel)."""
    target = tmp_path_factory.mktemp("sglang-0.5.23") / "sglang"
    copy_package(release_tree("0.5.23") / "sglang", target)
    with zipfile.ZipFile(release_wheel("0.5.23")) as archive:
        (target / "_version.py").write_bytes(archive.read("sglang/_version.py"))
    return target


def ssh_params(server, remote_root: Path | str | None, **extra) -> dict:
    """Source parameters (as the CLI passes them) that reach `server`."""
    params = {
        "host": server.host, "port": server.port, "user": server.user, "identity": str(server.client_key),
        "known_hosts": str(server.known_hosts), "remote_root": str(remote_root) if remote_root else None,
        "connect_timeout": 10.0,
    }
    params.update(extra)
    return params
