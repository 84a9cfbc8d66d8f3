"""The README's main job (examples/classify_image.py) keeps working, on the default image and
on a user's own file, and fails clearly on a bad path."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

SCRIPT = Path(__file__).resolve().parents[2] / "examples" / "classify_image.py"


def run_demo(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True)


@pytest.mark.slow
def test_demo_on_users_image(tmp_path):
    from sklearn.datasets import load_sample_image

    path = tmp_path / "flower.png"
    Image.fromarray(np.asarray(load_sample_image("flower.jpg"))).save(path)
    proc = run_demo("--image", str(path), "--runs", "3", "--save", str(tmp_path / "m.vmfb"))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert f"on {path}" in proc.stdout
    assert "top-5 identical" in proc.stdout
    assert "latency (median of 3):  xgen_mlir" in proc.stdout
    assert (tmp_path / "m.vmfb").stat().st_size > 1_000_000  # 3.5M weights inside


def test_demo_bad_image_path(tmp_path):
    proc = run_demo("--image", str(tmp_path / "missing.jpg"))
    assert proc.returncode == 1
    assert "missing.jpg" in proc.stderr and "Traceback" not in proc.stderr
