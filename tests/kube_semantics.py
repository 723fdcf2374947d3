"""What a Kubernetes API server refuses in a Deployment or Service that the published schemas
(kubernetes-validate) let through: name lengths and syntax, label and annotation syntax,
resource quantities, port ranges and names, and the references between fields.

No API server runs on these machines (issue 40), so the rules are written out here from the API
server's validation (k8s.io/apimachinery/pkg/util/validation, pkg/apis/core/validation,
pkg/apis/apps/validation, resource.Quantity's grammar). ``problems`` names each violation; a
correct object gives none."""

from __future__ import annotations

import re
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

# IsDNS1123Label / IsDNS1123Subdomain / IsDNS1035Label
DNS1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
DNS1035_LABEL = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
# IsQualifiedName's name part, and a label value (empty allowed)
QUALIFIED_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
# IsValidPortName (IANA_SVC_NAME)
PORT_NAME = re.compile(r"[a-z0-9]([a-z0-9-]*[a-z0-9])?")
# IsEnvVarName
ENV_NAME = re.compile(r"[-._a-zA-Z][-._a-zA-Z0-9]*")
# resource.Quantity: <signedNumber><suffix>, suffix binary (Ki..Ei), decimal SI or exponent
QUANTITY = re.compile(
    r"(?P<num>[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+))"
    r"(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE][+-]?[0-9]+)?"
)
_SCALE = {
    "": 1,
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
    "Pi": 2**50,
    "Ei": 2**60,
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "k": 10**3,
    "M": 10**6,
    "G": 10**9,
    "T": 10**12,
    "P": 10**15,
    "E": 10**18,
}
MAX_ANNOTATIONS_BYTES = 256 * 1024  # TotalAnnotationSizeLimitB


def quantity(value: object) -> Decimal | None:
    """The value of a resource quantity (an int or a quantity string), None if not one."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return Decimal(value)
    if not isinstance(value, str):
        return None
    m = QUANTITY.fullmatch(value)
    if m is None:
        return None
    suffix = m["suffix"] or ""
    num = Decimal(m["num"])
    if suffix[:1] in ("e", "E"):
        return num * Decimal(10) ** int(suffix[1:])
    return num * Decimal(_SCALE[suffix])


def _qualified(key: str) -> str | None:
    """Why ``key`` is not a qualified name (label or annotation key), or None."""
    prefix, slash, name = key.rpartition("/")
    if slash and (len(prefix) > 253 or not DNS1123_SUBDOMAIN.fullmatch(prefix)):
        return f"prefix {prefix!r} is not a DNS subdomain of at most 253 characters"
    if not name or len(name) > 63 or not QUALIFIED_NAME.fullmatch(name):
        return f"name {name!r} is not a qualified name of at most 63 characters"
    return None


def _label_value(value: object) -> bool:
    return isinstance(value, str) and (
        value == "" or (len(value) <= 63 and QUALIFIED_NAME.fullmatch(value) is not None)
    )


def _labels(where: str, labels: object) -> Iterator[str]:
    if not isinstance(labels, dict):
        yield f"{where}: not a map"
        return
    for key, value in labels.items():
        why = _qualified(str(key))
        if why:
            yield f"{where} key {key!r}: {why}"
        if not _label_value(value):
            yield f"{where} {key!r}: value {value!r} is not a label value"


def _metadata(kind: str, meta: dict[str, Any]) -> Iterator[str]:
    name = str(meta.get("name", ""))
    if kind == "Service":  # ValidateServiceName: a DNS-1035 label
        if len(name) > 63 or not DNS1035_LABEL.fullmatch(name):
            yield f"metadata.name {name!r}: not a DNS-1035 label (Service)"
    elif len(name) > 253 or not DNS1123_SUBDOMAIN.fullmatch(name):
        yield f"metadata.name {name!r}: not a DNS-1123 subdomain"
    ns = meta.get("namespace")
    if ns is not None and (len(str(ns)) > 63 or not DNS1123_LABEL.fullmatch(str(ns))):
        yield f"metadata.namespace {ns!r}: not a DNS-1123 label"
    yield from _labels("metadata.labels", meta.get("labels", {}))
    annotations = meta.get("annotations", {})
    size = 0
    for key, value in annotations.items():
        why = _qualified(str(key))
        if why:
            yield f"metadata.annotations key {key!r}: {why}"
        if not isinstance(value, str):
            yield f"metadata.annotations {key!r}: value is not a string"
        size += len(str(key)) + len(str(value))
    if size > MAX_ANNOTATIONS_BYTES:
        yield f"metadata.annotations: {size} bytes (limit {MAX_ANNOTATIONS_BYTES})"


def _port(where: str, value: object) -> Iterator[str]:
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= 65535:
        yield f"{where}: {value!r} is not a port between 1 and 65535"


def _port_name(where: str, name: object) -> Iterator[str]:
    text = str(name)
    if (
        len(text) > 15
        or not PORT_NAME.fullmatch(text)
        or "--" in text
        or not re.search("[a-z]", text)
    ):
        yield f"{where}: {name!r} is not an IANA service name (at most 15 characters)"


def _resources(where: str, resources: dict[str, Any]) -> Iterator[str]:
    limits = resources.get("limits", {})
    requests = resources.get("requests", {})
    for part, values in (("limits", limits), ("requests", requests)):
        for name, value in values.items():
            q = quantity(value)
            if q is None or q < 0:
                yield f"{where}.{part}[{name}]: {value!r} is not a resource quantity"
                continue
            builtin = name in ("cpu", "memory", "ephemeral-storage") or name.startswith(
                "hugepages-"
            )
            if not builtin:
                # Extended resources: a qualified name outside kubernetes.io, whole numbers,
                # and a request equal to the limit (they cannot be overcommitted).
                why = _qualified(name)
                if why or "/" not in name or name.split("/")[0].endswith("kubernetes.io"):
                    yield f"{where}.{part}[{name}]: not an extended resource name"
                if q != q.to_integral_value():
                    yield f"{where}.{part}[{name}]: {value!r} is not a whole number"
                if part == "requests" and name in limits and quantity(limits[name]) != q:
                    yield f"{where}.requests[{name}]: differs from its limit"
    for name, value in requests.items():
        lim = quantity(limits.get(name)) if name in limits else None
        req = quantity(value)
        if lim is not None and req is not None and req > lim:
            yield f"{where}.requests[{name}]: more than its limit"


def _probe(where: str, probe: dict[str, Any], port_names: set[str]) -> Iterator[str]:
    port = probe.get("httpGet", {}).get("port")
    if isinstance(port, str):
        if port not in port_names:
            yield f"{where}.httpGet.port: names no container port ({port!r})"
    elif port is not None:
        yield from _port(f"{where}.httpGet.port", port)
    for key in ("periodSeconds", "failureThreshold", "timeoutSeconds", "successThreshold"):
        if key in probe and (not isinstance(probe[key], int) or probe[key] < 1):
            yield f"{where}.{key}: {probe[key]!r} is below 1"


def _container(where: str, c: dict[str, Any], volumes: set[str]) -> Iterator[str]:
    name = str(c.get("name", ""))
    if len(name) > 63 or not DNS1123_LABEL.fullmatch(name):
        yield f"{where}.name {name!r}: not a DNS-1123 label"
    port_names: set[str] = set()
    seen_ports: set[tuple[int, str]] = set()
    for i, p in enumerate(c.get("ports", [])):
        yield from _port(f"{where}.ports[{i}].containerPort", p.get("containerPort"))
        if "name" in p:
            yield from _port_name(f"{where}.ports[{i}].name", p["name"])
            if p["name"] in port_names:
                yield f"{where}.ports[{i}].name: {p['name']!r} repeated"
            port_names.add(p["name"])
        if p.get("protocol", "TCP") not in ("TCP", "UDP", "SCTP"):
            yield f"{where}.ports[{i}].protocol: {p.get('protocol')!r}"
        key = (p.get("containerPort"), p.get("protocol", "TCP"))
        if key in seen_ports:
            yield f"{where}.ports[{i}]: port and protocol repeated"
        seen_ports.add(key)
    for i, env in enumerate(c.get("env", [])):
        if not ENV_NAME.fullmatch(str(env.get("name", ""))):
            yield f"{where}.env[{i}].name {env.get('name')!r}: not an environment variable name"
    yield from _resources(f"{where}.resources", c.get("resources", {}))
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        if probe in c:
            yield from _probe(f"{where}.{probe}", c[probe], port_names)
    for i, mount in enumerate(c.get("volumeMounts", [])):
        if mount.get("name") not in volumes:
            yield f"{where}.volumeMounts[{i}]: names no volume ({mount.get('name')!r})"
        if not str(mount.get("mountPath", "")).startswith("/"):
            yield f"{where}.volumeMounts[{i}].mountPath: not absolute"


def _pod(where: str, pod: dict[str, Any]) -> Iterator[str]:
    volumes: set[str] = set()
    for i, v in enumerate(pod.get("volumes", [])):
        name = str(v.get("name", ""))
        if len(name) > 63 or not DNS1123_LABEL.fullmatch(name):
            yield f"{where}.volumes[{i}].name {name!r}: not a DNS-1123 label"
        if name in volumes:
            yield f"{where}.volumes[{i}].name {name!r}: repeated"
        volumes.add(name)
        if "emptyDir" in v and "sizeLimit" in v["emptyDir"]:
            q = quantity(v["emptyDir"]["sizeLimit"])
            if q is None or q <= 0:
                yield f"{where}.volumes[{i}].emptyDir.sizeLimit: not a positive quantity"
        if "hostPath" in v and not str(v["hostPath"].get("path", "")).startswith("/"):
            yield f"{where}.volumes[{i}].hostPath.path: not absolute"
    yield from _labels(f"{where}.nodeSelector", pod.get("nodeSelector", {}))
    yield from _affinity(where, pod.get("affinity", {}))
    names: set[str] = set()
    for i, c in enumerate(pod.get("containers", [])):
        if c.get("name") in names:
            yield f"{where}.containers[{i}].name: repeated"
        names.add(c.get("name"))
        yield from _container(f"{where}.containers[{i}]", c, volumes)


def _affinity(where: str, affinity: dict[str, Any]) -> Iterator[str]:
    required = affinity.get("nodeAffinity", {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution", {}
    )
    for t, term in enumerate(required.get("nodeSelectorTerms", [])):
        for e, expr in enumerate(term.get("matchExpressions", [])):
            at = f"{where}.affinity.nodeAffinity...nodeSelectorTerms[{t}].matchExpressions[{e}]"
            why = _qualified(str(expr.get("key", "")))
            if why:
                yield f"{at}.key: {why}"
            op, values = expr.get("operator"), expr.get("values", [])
            if op in ("In", "NotIn") and not values:
                yield f"{at}.values: must be non-empty for {op}"
            if op in ("Exists", "DoesNotExist") and values:
                yield f"{at}.values: must be empty for {op}"
            for value in values:
                if not _label_value(value):
                    yield f"{at}.values: {value!r} is not a label value"
    anti = affinity.get("podAntiAffinity", {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution", []
    )
    for i, term in enumerate(anti):
        if not term.get("topologyKey"):
            yield f"{where}.affinity.podAntiAffinity[{i}].topologyKey: required"
        yield from _labels(
            f"{where}.affinity.podAntiAffinity[{i}].labelSelector.matchLabels",
            term.get("labelSelector", {}).get("matchLabels", {}),
        )


def _int_or_percent(value: object) -> Decimal | None:
    if isinstance(value, int) and not isinstance(value, bool):
        return Decimal(value)
    if isinstance(value, str) and re.fullmatch(r"[0-9]+%", value):
        return Decimal(value[:-1])
    return None


def _deployment(doc: dict[str, Any]) -> Iterator[str]:
    spec = doc.get("spec", {})
    if not isinstance(spec.get("replicas", 1), int) or spec.get("replicas", 1) < 0:
        yield "spec.replicas: below 0"
    selector = spec.get("selector", {}).get("matchLabels", {})
    yield from _labels("spec.selector.matchLabels", selector)
    if not selector:
        yield "spec.selector: empty (an API server refuses it for apps/v1)"
    template_labels = spec.get("template", {}).get("metadata", {}).get("labels", {})
    yield from _labels("spec.template.metadata.labels", template_labels)
    if any(template_labels.get(k) != v for k, v in selector.items()):
        yield "spec.template.metadata.labels: do not match spec.selector"
    rolling = spec.get("strategy", {}).get("rollingUpdate")
    if rolling is not None:
        surge = _int_or_percent(rolling.get("maxSurge", "25%"))
        unavailable = _int_or_percent(rolling.get("maxUnavailable", "25%"))
        if surge is None or unavailable is None:
            yield "spec.strategy.rollingUpdate: not an int or a percentage"
        elif surge == 0 and unavailable == 0:
            yield "spec.strategy.rollingUpdate: maxSurge and maxUnavailable may not both be 0"
    yield from _pod("spec.template.spec", spec.get("template", {}).get("spec", {}))


def _service(doc: dict[str, Any], deployment: dict[str, Any] | None) -> Iterator[str]:
    spec = doc.get("spec", {})
    yield from _labels("spec.selector", spec.get("selector", {}))
    names: set[str] = set()
    container_ports: set[str] = set()
    if deployment is not None:
        pod = deployment.get("spec", {}).get("template", {})
        if any(
            pod.get("metadata", {}).get("labels", {}).get(k) != v
            for k, v in spec.get("selector", {}).items()
        ):
            yield "spec.selector: selects none of the Deployment's pods"
        for c in pod.get("spec", {}).get("containers", []):
            container_ports |= {p["name"] for p in c.get("ports", []) if "name" in p}
    ports = spec.get("ports", [])
    for i, p in enumerate(ports):
        yield from _port(f"spec.ports[{i}].port", p.get("port"))
        if len(ports) > 1 and "name" not in p:
            yield f"spec.ports[{i}].name: required when there are several ports"
        if "name" in p:
            if len(str(p["name"])) > 63 or not DNS1123_LABEL.fullmatch(str(p["name"])):
                yield f"spec.ports[{i}].name {p['name']!r}: not a DNS-1123 label"
            if p["name"] in names:
                yield f"spec.ports[{i}].name: repeated"
            names.add(p["name"])
        target = p.get("targetPort")
        if isinstance(target, str):
            yield from _port_name(f"spec.ports[{i}].targetPort", target)
            if deployment is not None and target not in container_ports:
                yield f"spec.ports[{i}].targetPort: names no container port ({target!r})"
        elif target is not None:
            yield from _port(f"spec.ports[{i}].targetPort", target)


def problems(docs: list[dict[str, Any]]) -> list[str]:
    """Every violation in one manifest file's objects (a Deployment and the Service in front of
    it), each prefixed with the object's kind and name."""
    out: list[str] = []
    deployment = next((d for d in docs if d.get("kind") == "Deployment"), None)
    for doc in docs:
        kind = str(doc.get("kind"))
        head = f"{kind} {doc.get('metadata', {}).get('name')}: "
        found = list(_metadata(kind, doc.get("metadata", {})))
        if kind == "Deployment":
            found += list(_deployment(doc))
        elif kind == "Service":
            found += list(_service(doc, deployment))
        out += [head + p for p in found]
    return out
