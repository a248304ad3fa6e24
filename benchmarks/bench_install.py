"""What production carries (issue 24): the base install's size and the commands' start-up time.

- The base install, made the image's way (Dockerfile) in a throwaway virtualenv: every
  dependency from requirements.lock with `--require-hashes --no-deps`, then the project with
  `--no-deps`. Its site-packages (pip included, as in any virtualenv) goal <= 230 MB; there,
  `tas validate`, `tas controller --help` and `tas descheduler --help` work, and `tas run` and
  `tas simulate` say which extra they need (exit 2, one line) instead of failing at import.
- `tas extender --help` (goal <= 0.35 s) and `tas --help` (goal <= 0.5 s): the median of 5 real
  processes of the base install's `tas`, next to the interpreter's own start (`python -c pass`)
  as the floor.

Installing reaches the package index (pip's cache makes a second run quick); each step is
bounded in time, and a failed install is reported and leaves the timings to the project's
virtualenv.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.report import Figure, print_figure

ROOT = Path(__file__).resolve().parent.parent
GOAL_SITE_PACKAGES_MB = 230.0
GOAL_EXTENDER_HELP_S = 0.35
GOAL_HELP_S = 0.5
RUNS = 5
INSTALL_TIMEOUT_S = 600.0
DEMO_POLICY = ROOT / "deploy" / "health-metric-demo" / "health-policy.yaml"


def _run(args: list[str], *, timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=timeout)


def base_install(directory: Path) -> Path | None:
    """A virtualenv with the base install in `directory`; its python, or None (said why)."""
    python = directory / "bin" / "python"
    steps = [
        [sys.executable, "-m", "venv", str(directory)],
        [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
         "--require-hashes", "--no-deps", "-r", str(ROOT / "requirements.lock")],
        [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
         "--no-deps", str(ROOT)],
    ]  # fmt: skip
    for step in steps:
        try:
            done = _run(step, timeout=INSTALL_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            print(f"  base install: {' '.join(step[-3:])} took over {INSTALL_TIMEOUT_S:g} s")
            return None
        if done.returncode != 0:
            print(f"  base install failed: {' '.join(step[-3:])}: {done.stderr.strip()[-500:]}")
            return None
    return python


def site_packages_mb(python: Path) -> float:
    path = _run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"])
    root = Path(path.stdout.strip())
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file()) / 1e6


def median_seconds(args: list[str]) -> float:
    times = []
    for _ in range(RUNS):
        started = time.perf_counter()
        done = _run(args)
        times.append(time.perf_counter() - started)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(args)} exited {done.returncode}: {done.stderr}")
    return statistics.median(times)


def runs(python: Path, args: list[str]) -> None:
    """`tas ARGS` on the base install exits 0."""
    done = _run([str(python.parent / "tas"), *args])
    print(f"  base install: tas {args[0]} -> exit {done.returncode} "
          f"| goal: exit 0: {'MET' if done.returncode == 0 else 'MISSED'}")  # fmt: skip


def say_extra(python: Path, args: list[str], extra: str) -> None:
    """`tas ARGS` on the base install: one line naming the extra, exit 2, no traceback."""
    done = _run([str(python.parent / "tas"), *args])
    said = done.stderr.strip()
    ok = done.returncode == 2 and f"[{extra}]" in said and "Traceback" not in said
    print(f"  base install: tas {' '.join(args)} -> exit {done.returncode}: {said[-300:]!r} "
          f"| goal: names [{extra}], exit 2: {'MET' if ok else 'MISSED'}")  # fmt: skip


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="tas-base-") as directory:
        python = base_install(Path(directory) / "venv")
        if python is not None:
            print_figure(
                Figure(
                    "base install site-packages (requirements.lock, then the project)",
                    site_packages_mb(python),
                    "MB",
                    max_value=GOAL_SITE_PACKAGES_MB,
                )
            )
            runs(python, ["validate", str(DEMO_POLICY)])
            runs(python, ["controller", "--help"])
            runs(python, ["descheduler", "--help"])
            say_extra(python, ["run", "--duration", "1s"], "demo")
            say_extra(python, ["simulate", "--all"], "sim")
            where = "the base install"
        else:
            python = Path(sys.executable)
            where = "the project's virtualenv (the base install failed)"
        tas = [str(python.parent / "tas")]
        floor = median_seconds([str(python), "-c", "pass"])
        print(f"  start-up, median of {RUNS} processes of {where}'s tas:")
        for args, goal in (
            (["extender", "--help"], GOAL_EXTENDER_HELP_S),
            (["--help"], GOAL_HELP_S),
        ):
            print_figure(
                Figure(
                    f"tas {' '.join(args)}",
                    median_seconds([*tas, *args]),
                    "s",
                    floor=floor,
                    floor_name="python -c pass",
                    max_value=goal,
                )
            )


if __name__ == "__main__":
    main()
