"""Shared pytest fixtures for the lvsnic cocotb testbenches."""
import os
import subprocess
import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def lvsnic_bin():
    """Builds (once) and returns the release `lvsnic` binary."""
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "lvsnic"], cwd=ROOT, check=True)
    return os.path.join(ROOT, "target", "release", "lvsnic")


@pytest.fixture(scope="session")
def vectors_dir(tmp_path_factory):
    """Test vectors from `lvsnic vectors` on generated traffic, or the
    directory named by LVSNIC_VECTORS."""
    given = os.environ.get("LVSNIC_VECTORS")
    if given:
        return given
    d = tmp_path_factory.mktemp("vectors")
    exe = lvsnic_bin()
    pcap = str(d / "in.pcap")
    rules = os.path.join(ROOT, "examples", "rules.txt")
    director = os.path.join(ROOT, "examples", "director.toml")
    subprocess.run([exe, "traffic", "--rules", rules, "--director", director, "--seed", "11",
                    "--connections", "40", "--malformed", "0.05", "--other", "0.1", "--output", pcap],
                   check=True, stdout=subprocess.DEVNULL)
    out = str(d / "vec")
    subprocess.run([exe, "vectors", "--rules", rules, "--director", director, "--input", pcap,
                    "--out", out, "--flow-buckets-log2", "8", "--action-log2", "8", "--vip-count", "16"],
                   check=True, stdout=subprocess.DEVNULL)
    return out
