"""A fresh venv that sees the packages of the interpreter running the tests.

`python -m venv --system-site-packages`, run from inside a virtualenv, links
the new venv to the *base* interpreter's site-packages, not to the
virtualenv's: the packages a user installed there (spaCy, torch,
spacy-bertram) are missing in it. So the venv is made without system
packages, and a .pth file adds every site directory of the running
interpreter after the venv's own, through `site.addsitedir` so that the .pth
files in them (editable installs among them) are processed as well.
"""

from __future__ import annotations

import site
import subprocess
import sys
from pathlib import Path
from typing import List

PTH_NAME = "_outer_site_packages.pth"


def site_dirs() -> List[str]:
    """Site directories of this interpreter, in its own order (a venv's, or the system's)."""
    dirs = list(site.getsitepackages())
    if site.ENABLE_USER_SITE:
        dirs.append(site.getusersitepackages())
    return [d for d in dict.fromkeys(dirs) if Path(d).is_dir()]


def make_venv(path: Path, with_pip: bool = True) -> Path:
    """Create the venv at `path`; returns its python."""
    command = [sys.executable, "-m", "venv", str(path)] + ([] if with_pip else ["--without-pip"])
    subprocess.run(command, check=True, capture_output=True, text=True)
    python = Path(path) / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    lines = [f"import site; site.addsitedir({directory!r})" for directory in site_dirs()]
    (Path(purelib) / PTH_NAME).write_text("\n".join(lines) + "\n", encoding="utf8")
    return python


if __name__ == "__main__":  # python fresh_venv.py PATH [--without-pip]
    print(make_venv(Path(sys.argv[1]), with_pip="--without-pip" not in sys.argv))
