"""A wheel against the host: ``python-mismatch``, ``glibc-too-old`` and
``host-rocm-mismatch`` (with ``python-unknown``, ``glibc-unknown``, ``host-rocm-unknown`` where the
node does not say, and ``host-rocm-shadowing``)."""

from __future__ import annotations

from packaging.version import Version

from resolver.data.model import WheelVariant
from resolver.data.node import Node
from resolver.solve.checks.facts import _from_record
from resolver.solve.finding import Phrase, finding
from resolver.solve.types import Advisory, Fact, Fix, HostChange, Reason
from resolver.util.versions import series


def wheel_checks(
    node: Node, wheel: WheelVariant, glibc: Version | None, glibc_src: str
) -> tuple[list[Reason], list[Advisory]]:
    """A wheel against the node's Python, glibc (``glibc``, from ``glibc_src``) and host ROCm."""
    reasons: list[Reason] = []
    warnings: list[Advisory] = []
    for r, w in (
        python_check(node, wheel),
        glibc_check(node, wheel, glibc, glibc_src),
        host_rocm_check(node, wheel),
    ):
        reasons.extend(r)
        warnings.extend(w)
    warnings.extend(host_rocm_shadowing(node, wheel))
    return reasons, warnings


def python_check(node: Node, wheel: WheelVariant) -> tuple[list[Reason], list[Advisory]]:
    """``python-mismatch`` (or ``python-unknown`` when the node's Python is not known)."""
    src = wheel.provenance.source
    py = node.python
    wanted = " or ".join(wheel.python)
    if py is None:
        w = finding("python-unknown", wheel=wheel.name, wanted=wanted, fit=wheel.python[0])
        return [], [
            Advisory(
                code="python-unknown", message=w.message, hint=w.hint, source=Phrase.verbatim(src)
            )
        ]
    if py in wheel.python:
        return [], []
    w = finding("python-mismatch", wheel=wheel.name, wanted=wanted, python=py, fit=wheel.python[0])
    return [
        Reason(
            code="python-mismatch",
            message=w.message,
            facts=(
                _from_record(w.facts[0], wheel),
                Fact(text=w.facts[1], source="vllm-project/vllm#44660"),
            ),
            hint=w.hint,
            fix=Fix(
                kind="python",
                text=w.fix,
                host=True,
                change=HostChange(kind="python", value=wheel.python[0]),
            ),
        )
    ], []


def glibc_check(
    node: Node, wheel: WheelVariant, glibc: Version | None, glibc_src: str
) -> tuple[list[Reason], list[Advisory]]:
    """``glibc-too-old`` (or ``glibc-unknown`` when the host's glibc is not known)."""
    src = wheel.provenance.source
    if glibc is None:
        w = finding("glibc-unknown", wheel=wheel.name, glibc_min=wheel.glibc_min)
        return [], [
            Advisory(
                code="glibc-unknown", message=w.message, hint=w.hint, source=Phrase.verbatim(src)
            )
        ]
    if glibc >= wheel.glibc_min:
        return [], []
    w = finding(
        "glibc-too-old",
        wheel=wheel.name,
        glibc_min=wheel.glibc_min,
        glibc=glibc,
        os=node.os or "the host",
    )
    return [
        Reason(
            code="glibc-too-old",
            message=w.message,
            facts=(
                _from_record(w.facts[0], wheel),
                Fact(text=w.facts[1], source=glibc_src or "probe"),
            ),
            hint=w.hint,
            fix=Fix(
                kind="os",
                text=w.fix,
                host=True,
                change=HostChange(kind="glibc", value=str(wheel.glibc_min)),
            ),
        )
    ], []


def host_rocm_check(node: Node, wheel: WheelVariant) -> tuple[list[Reason], list[Advisory]]:
    """``host-rocm-mismatch`` for a wheel that runs on the host's ROCm (``uses_host_rocm``):
    its torch loads /opt/rocm, so the host must have the wheel's ROCm series
    (``host-rocm-unknown`` when the node's ROCm is not known)."""
    if not wheel.uses_host_rocm or wheel.rocm is None:
        return [], []
    want = series(wheel.rocm)
    w = finding("host-rocm-mismatch", wheel=wheel.name, want=want, host=node.rocm_version)
    fact = _from_record(w.facts[0], wheel)
    if not node.rocm_version:
        unknown = finding("host-rocm-unknown", wheel=wheel.name, want=want)
        return [], [
            Advisory(
                code="host-rocm-unknown",
                message=unknown.message,
                hint=unknown.hint,
                source=Phrase.verbatim(wheel.provenance.source),
            )
        ]
    try:
        host = Version(node.rocm_version)
    except Exception:  # noqa: BLE001 - an unparsable probe value: treated as not the wheel's
        host = None
    if host is not None and series(host) == want:
        return [], []
    return [
        Reason(
            code="host-rocm-mismatch",
            message=w.message,
            facts=(fact,),
            hint=w.hint,
            fix=Fix(
                kind="rocm",
                text=w.fix,
                host=True,
                change=HostChange(kind="rocm", value=f"{want}.0"),
            ),
        )
    ], []


def host_rocm_shadowing(node: Node, wheel: WheelVariant) -> list[Advisory]:
    """``host-rocm-shadowing``: the host's ROCm libraries may shadow the wheel's (not for a
    wheel that uses the host's ROCm: there the host's ROCm is the one it runs on)."""
    if not node.rocm_version or wheel.rocm is None or wheel.uses_host_rocm:
        return []
    try:
        host_rocm = Version(node.rocm_version)
    except Exception:  # noqa: BLE001 - unparsable probe value: nothing to compare
        return []
    if series(host_rocm) == series(wheel.rocm):
        return []
    return [Advisory.said("host-rocm-shadowing", host=host_rocm, wheel=wheel.name, rocm=wheel.rocm)]
