"""The ``uqzoo`` command gives JAX one CPU device per core; the library never does.

JAX's device count is fixed once per process, so every check runs in a fresh
interpreter, with the user's JAX settings removed from its environment unless
the check sets them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from uqzoo.cli import cpu_devices_for_cli
from uqzoo.predictive import default_workers

# Runs the real entry point (argv None: the command owns its process) with the
# fit itself replaced by a probe of what JAX and HMC's "auto" rule see.
_CLI_PROBE = """
import json, sys
import uqzoo.cli as cli

def probe(args):
    import jax
    from uqzoo.methods import hmc
    from uqzoo.spec import MLPSpec
    method = hmc.resolve_chain_method(MLPSpec(2, 2, hidden=(10, 10)), 1000, hmc.Config())
    print(json.dumps({"devices": len(jax.devices("cpu")), "auto": method}))
    return 0

cli._cmd_fit = probe
sys.argv = ["uqzoo", "fit", "hmc", "--out", "unused.nc"]
sys.exit(cli.main(ARGV))
"""


def _probe(code: str, tmp_path, **env) -> dict:
    environ = {k: v for k, v in os.environ.items()
               if k not in ("XLA_FLAGS", "JAX_NUM_CPU_DEVICES")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300, cwd=tmp_path, env={**environ, **env})
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize(("environ", "configured", "cores", "expected"), [
    ({}, -1, 2, 2),
    ({}, -1, 16, 16),
    ({}, -1, 1, None),                       # one core: nothing to gain
    ({}, 3, 2, None),                        # JAX_NUM_CPU_DEVICES or an earlier update
    ({"XLA_FLAGS": "--xla_force_host_platform_device_count=1"}, -1, 2, None),
    ({"XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false"}, -1, 2, 2),
])
def test_cli_device_rule(environ, configured, cores, expected):
    assert cpu_devices_for_cli(environ, configured, cores) == expected


def test_uqzoo_command_gives_jax_a_device_per_core(tmp_path):
    seen = _probe(_CLI_PROBE.replace("ARGV", "None"), tmp_path)
    cores = default_workers()
    assert seen["devices"] == cores
    assert seen["auto"] == ("parallel" if cores > 1 else "vectorized")


def test_uqzoo_command_keeps_the_users_device_setting(tmp_path):
    code = _CLI_PROBE.replace("ARGV", "None")
    flags = _probe(code, tmp_path, XLA_FLAGS="--xla_force_host_platform_device_count=1")
    assert flags == {"devices": 1, "auto": "vectorized"}
    assert _probe(code, tmp_path, JAX_NUM_CPU_DEVICES="3")["devices"] == 3


def test_main_called_from_python_changes_no_setting(tmp_path):
    """main(argv) inside someone else's program is a library call."""
    seen = _probe(_CLI_PROBE.replace("ARGV", '["fit", "hmc", "--out", "unused.nc"]'), tmp_path)
    assert seen == {"devices": 1, "auto": "vectorized"}


def test_library_fit_changes_no_setting(tmp_path):
    code = """
import json
import uqzoo as uz
data = uz.datasets.load("sim-teacher", p=2, n_train=40, n_test=5, seed=0)
uz.fit("hmc", uz.MLPSpec(2, 2, hidden=(3,)), data, seed=0, progress_bar=False,
       num_warmup=5, num_samples=10, num_chains=2)
import jax
print(json.dumps({"configured": jax.config.values["jax_num_cpu_devices"],
                  "devices": len(jax.devices("cpu"))}))
"""
    assert _probe(code, tmp_path) == {"configured": -1, "devices": 1}
