"""cmake --install's part for the package: where it goes, and that the
installed package imports and looks for psflow in the prefix."""

import os
import subprocess
import sys

import pytest

BUILD_DIR = os.environ.get("PSFLOW_BUILD_DIR")


@pytest.mark.skipif(not BUILD_DIR, reason="run through ctest, which sets PSFLOW_BUILD_DIR")
@pytest.mark.parametrize("prefix,site", [
    ("/usr", "lib/python3/dist-packages"),
    ("/usr/local", "lib/python%d.%d/dist-packages" % sys.version_info[:2]),
])
def test_install_into_debian_dist_packages(tmp_path, prefix, site):
    script = os.path.join(BUILD_DIR, "python", "cmake_install.cmake")
    subprocess.run(["cmake", "-DCMAKE_INSTALL_PREFIX=" + prefix, "-P", script], check=True,
                   env=dict(os.environ, DESTDIR=str(tmp_path)), capture_output=True)
    package_dir = str(tmp_path) + prefix + "/" + site
    assert os.path.isfile(os.path.join(package_dir, "psflow", "distribute", "coordinator.py"))
    out = subprocess.run(
        [sys.executable, "-c",
         "import psflow, psflow._build_info as b; print(psflow.__file__); print(b.BINARY_DIRS)"],
        check=True, capture_output=True, text=True, cwd=str(tmp_path),
        env=dict(os.environ, PYTHONPATH=package_dir)).stdout.splitlines()
    assert out[0].startswith(package_dir)
    assert out[1] == "('%s/bin',)" % prefix
