"""The lock files match pyproject.toml, and the image installs from them with hashes.

Covered: each lock (`make lock`) pins every requirement of its part of pyproject.toml (the
base, the base with its extras, the build backend) at a version inside the requirement's range,
and pins as direct requirements exactly those (a dependency removed from pyproject.toml, or
moved to an extra, makes the lock stale); every pin carries sha256 hashes and the files hold no
other kind of line, so `pip install --require-hashes` accepts them; the Dockerfile installs the
base lock with `--require-hashes --no-deps` and the project itself with `--no-deps` (nothing
unpinned arrives), built by the locked backend.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
PROJECT = PYPROJECT["project"]

#: Each lock and the extras it adds to the base (make lock); requirements-test.lock is what
#: `make test` installs, [test,sim].
LOCKS: dict[str, tuple[str, ...]] = {
    "requirements.lock": (),
    "requirements-demo.lock": ("demo",),
    "requirements-sim.lock": ("sim",),
    "requirements-test.lock": ("test", "sim"),
}
BUILD_LOCK = "requirements-build.lock"
#: How uv's `# via` names a requirement of pyproject.toml itself.
FROM_PYPROJECT = f"{PROJECT['name']} (pyproject.toml)"

_PIN = re.compile(
    r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)==(?P<version>[^\s;\\]+)\s*(?:;(?P<marker>[^\\]*))?\\$"
)
_HASH = re.compile(r"^\s+--hash=sha256:[0-9a-f]{64}( \\)?$")
_COMMENT = re.compile(r"^\s*#")


@dataclass
class Pin:
    name: str
    version: str
    marker: str | None
    hashes: int = 0
    via: list[str] = field(default_factory=list)


def read_lock(path: Path) -> list[Pin]:
    """The pins of a lock file; fails on any line that is neither a pin, a hash nor a comment."""
    pins: list[Pin] = []
    via = False
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        if pin := _PIN.match(line):
            marker = pin["marker"].strip() if pin["marker"] else None
            pins.append(Pin(canonicalize_name(pin["name"]), pin["version"], marker))
            via = False
        elif _HASH.match(line):
            assert pins, f"{path.name}:{number}: a hash before any pin"
            pins[-1].hashes += 1
        elif _COMMENT.match(line):
            text = line.strip().removeprefix("#").strip()
            if pins and text.startswith("via"):
                via = True
                text = text.removeprefix("via").strip()
            if pins and via and text:
                pins[-1].via.append(text)
        else:
            pytest.fail(f"{path.name}:{number}: not a hashed pin: {line!r}")
    return pins


def requirements(extras: tuple[str, ...]) -> list[Requirement]:
    texts = list(PROJECT["dependencies"])
    for extra in extras:
        texts += PROJECT["optional-dependencies"][extra]
    return [Requirement(text) for text in texts]


def _assert_pinned_in_range(pins: list[Pin], wanted: list[Requirement], lock: str) -> None:
    for requirement in wanted:
        name = canonicalize_name(requirement.name)
        versions = [pin.version for pin in pins if pin.name == name]
        assert versions, f"{lock}: {requirement} is not pinned (make lock)"
        for version in versions:
            assert requirement.specifier.contains(version, prereleases=True), (
                f"{lock}: {name}=={version} is outside {requirement} (make lock)"
            )


@pytest.mark.parametrize("lock", list(LOCKS))
def test_each_lock_pins_every_requirement_of_its_extras_inside_its_range(lock: str) -> None:
    _assert_pinned_in_range(read_lock(ROOT / lock), requirements(LOCKS[lock]), lock)


@pytest.mark.parametrize("lock", list(LOCKS))
def test_each_lock_s_direct_requirements_are_exactly_pyproject_s(lock: str) -> None:
    direct = {pin.name for pin in read_lock(ROOT / lock) if FROM_PYPROJECT in pin.via}
    wanted = {canonicalize_name(r.name) for r in requirements(LOCKS[lock])}
    assert direct == wanted, f"{lock} is stale: run make lock"


def test_the_base_lock_carries_no_simulator_or_test_package() -> None:
    names = {pin.name for pin in read_lock(ROOT / "requirements.lock")}
    assert names.isdisjoint({"numpy", "matplotlib", "jsonschema", "distributed", "pytest"})


@pytest.mark.parametrize("lock", [*LOCKS, BUILD_LOCK])
def test_every_pin_carries_hashes(lock: str) -> None:
    pins = read_lock(ROOT / lock)
    assert pins
    assert [pin.name for pin in pins if pin.hashes == 0] == []


def test_the_build_lock_pins_the_build_backend_inside_its_range() -> None:
    wanted = [Requirement(text) for text in PYPROJECT["build-system"]["requires"]]
    pins = read_lock(ROOT / BUILD_LOCK)
    _assert_pinned_in_range(pins, wanted, BUILD_LOCK)
    assert {pin.name for pin in pins} == {canonicalize_name(r.name) for r in wanted}


def _dockerfile_commands() -> list[str]:
    """The Dockerfile's instructions, continuation lines joined, comments left out."""
    text = (ROOT / "Dockerfile").read_text(encoding="utf-8")
    lines = [line for line in text.splitlines() if not line.lstrip().startswith("#")]
    return [" ".join(c.split()) for c in "\n".join(lines).replace("\\\n", " ").splitlines() if c]


def test_the_image_installs_the_base_lock_with_hashes_and_the_project_alone() -> None:
    runs = [c for c in _dockerfile_commands() if c.startswith("RUN ")]
    installs = [part.strip() for c in runs for part in c[4:].split("&&") if "pip install" in part]
    assert any(
        "--require-hashes" in i and "--no-deps" in i and i.endswith(f"-r {BUILD_LOCK}")
        for i in installs
    ), installs
    assert any(
        "--require-hashes" in i and "--no-deps" in i and re.search(r"-r \S*requirements\.lock$", i)
        for i in installs
    ), installs
    # Every other install (the project's wheel) brings no dependency of its own.
    for install in installs:
        assert "--no-deps" in install, install
    wheels = [c for c in runs if "pip wheel" in c]
    assert wheels
    assert all("--no-deps" in c and "--no-build-isolation" in c for c in wheels)
    # Only the base: no extra is named anywhere the image installs.
    assert not any("[" in i or "-sim" in i or "-test" in i or "-demo" in i for i in installs)
