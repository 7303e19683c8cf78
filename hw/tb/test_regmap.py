"""scripts/gen-regmap.py --check: passes on the committed tree and fails,
naming the file, when any generated file or the SystemRDL source changed
alone. Runs on a copy of the generator's inputs and outputs."""
import importlib.util
import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SCRIPT = os.path.join("scripts", "gen-regmap.py")
RDL = os.path.join("hw", "regmap", "lvsnic.rdl")


def generated_files():
    spec = importlib.util.spec_from_file_location("gen_regmap", os.path.join(ROOT, SCRIPT))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return sorted(mod.generated())


GENERATED = generated_files()


@pytest.fixture
def tree(tmp_path):
    """A copy of the script, the source and the committed generated files."""
    for rel in [SCRIPT, RDL] + GENERATED:
        dst = tmp_path / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(os.path.join(ROOT, rel), dst)
    return tmp_path


def check(tree):
    return subprocess.run([sys.executable, str(tree / SCRIPT), "--check"], capture_output=True, text=True)


def test_generates_every_artefact():
    assert GENERATED == sorted([
        "docs/registers.md", "hw/regmap/src/codes.rs", "hw/regmap/src/dma.rs", "hw/regmap/src/regs.rs",
        "hw/rtl/lvsnic_regs.vh", "hw/tb/unit/lvsnic_regs.py"])


def test_check_passes_on_the_committed_tree(tree):
    r = check(tree)
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("rel", GENERATED)
def test_check_fails_when_a_generated_file_is_edited(tree, rel):
    with open(tree / rel, "a") as fh:
        fh.write("\n")
    r = check(tree)
    assert r.returncode == 1 and rel in r.stderr and r.stderr.count(",") == 0, r.stderr


def test_check_fails_when_a_generated_file_is_missing(tree):
    rel = "hw/regmap/src/codes.rs"
    os.remove(tree / rel)
    r = check(tree)
    assert r.returncode == 1 and rel in r.stderr, r.stderr


def test_check_fails_when_the_source_changed_alone(tree):
    rdl = (tree / RDL).read_text()
    assert "TOO_BIG = 17" in rdl
    (tree / RDL).write_text(rdl.replace("TOO_BIG = 17", "TOO_BIG = 30"))
    r = check(tree)
    assert r.returncode == 1, r.stderr
    for rel in ["hw/rtl/lvsnic_regs.vh", "hw/regmap/src/codes.rs", "hw/tb/unit/lvsnic_regs.py", "docs/registers.md"]:
        assert rel in r.stderr
    # regenerating makes the copy current again
    subprocess.run([sys.executable, str(tree / SCRIPT)], check=True)
    assert check(tree).returncode == 0
