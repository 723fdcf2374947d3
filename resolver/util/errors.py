"""One error hierarchy. Each error knows its exit code, a one-line message and a hint.

Library code raises these; only ``resolver.cli`` turns them into output and an exit status.
Exit codes (also in docs/exit-codes.md): 0 a path exists, 1 no path / something changed,
2 bad usage or bad input, 3 a broken data file, 4 a registry, upstream HTTP or Slurm failure,
5 a Docker Engine failure; 70 an internal error (``cli.crash``: a bug, with a saved report).
"""

from __future__ import annotations


class ResolverError(Exception):
    """Base class: ``message`` says what happened, ``hint`` what to do next."""

    exit_code: int = 2
    reference: str = "resolver-error"

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message


class UsageError(ResolverError):
    """The command line asks for something that cannot be done (conflicting or bad flags)."""

    exit_code = 2
    reference = "usage"


class InputError(ResolverError):
    """A value or file given by the user cannot be used (malformed version, unreadable file)."""

    exit_code = 2
    reference = "bad-input"


class UnknownGfxError(InputError):
    """A gfx target that the data does not know."""

    reference = "unknown-gfx"


class ModelError(InputError):
    """A model given by ``--model`` cannot be read: no such id or file, not a config.json, or a
    field missing or out of bounds (the message names the field)."""

    reference = "bad-model"


class ProbeError(InputError):
    """A probe input (rocminfo, amd-smi, sysfs) could not be read at all."""

    reference = "probe-input"


class MatrixError(ResolverError):
    """A data file is broken: names the file, the record and the field."""

    exit_code = 3
    reference = "matrix-data"


class UnsafeValueError(MatrixError):
    """A repo, ref, tag or gfx that could inject shell or Dockerfile syntax."""

    reference = "unsafe-value"


class UnsafeInputError(InputError):
    """A flag value with shell or Dockerfile syntax (exit 2: the user's input, not the data)."""

    reference = "unsafe-input"


class RegistryError(ResolverError):
    """A container registry or upstream HTTP source failed (401, 404, timeout, bad JSON)."""

    exit_code = 4
    reference = "registry"


class RegistryUnreachableError(RegistryError):
    """The registry did not answer (connection refused, timeouts, 429/5xx after retries): the one
    failure after which a cached digest may stand in, said as such."""

    reference = "registry-unreachable"


class SlurmError(ResolverError):
    """Slurm's own tools failed: no sinfo/srun on PATH, no controller answering (exit 4, like
    another service that did not answer)."""

    exit_code = 4
    reference = "slurm"


class KubectlError(ResolverError):
    """kubectl is missing or could not list the cluster's nodes (exit 4, like another service)."""

    exit_code = 4
    reference = "kubectl"


class DockerEngineError(ResolverError):
    """The Docker Engine is not reachable or an engine operation failed."""

    exit_code = 5
    reference = "docker-engine"
