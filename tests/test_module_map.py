"""Which test file tests which module (docs/architecture.md, "Tests").

A module ``resolver/PKG/NAME.py`` has a test file named for it when ``tests/`` (or ``tests/PKG/``)
holds ``test_NAME.py`` or ``test_PKG_NAME.py``, the latter also with a ``_SUFFIX``
(``test_refresh_wheels_rocm`` for ``refresh/wheels.py``); a package's ``__init__.py`` counts as a
module named for the package (``test_solve.py``, ``test_fleet_kube.py`` for ``fleet/``). Every
other module is in ``COVERED_ELSEWHERE`` with the test files that exercise it and why it has none
of its own. The test fails on a new module with neither, and on an entry that is stale (the module
is gone, now has a file of its own, or a named test file is gone), so the map stays true.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "resolver"
TESTS = ROOT / "tests"

_CLI = "a command: tested through the command line it serves"
_INIT = "re-exports only; its modules are tested"
_SOLVE = "one part of the solver: tested through solve()'s decisions"
_EXPLAIN = "one part of the explanation: tested through derive() and the golden files"
_FLEET = "one stage of `fleet plan`: tested through the fleet's plans and artifacts"
_PROBE = "a piece of the probe: tested through recorded probe inputs"
_REFRESH = "a piece of `matrix refresh`: tested against recorded upstream responses"
_DOCKERFILE = "one stage of `rocm-vllm dockerfile`: tested through the package's API and goldens"
_UTIL = "a helper: tested where its callers' bounds and faults are"

# module (relative to resolver/) -> (test files, relative to tests/; why no file of its own)
COVERED_ELSEWHERE: dict[str, tuple[tuple[str, ...], str]] = {
    "__init__.py": ((), "the package's version only"),
    "__main__.py": (("test_main.py",), "the console script's process: test_main runs it"),
    "artifacts/__init__.py": ((), _INIT),
    "artifacts/audit/__init__.py": (("audit/test_audit.py", "audit/test_bounds.py"), "the audit"),
    "artifacts/dockerfile/guard.py": (("test_dockerfile.py",), _DOCKERFILE),
    "artifacts/dockerfile/layout.py": (("test_dockerfile.py",), _DOCKERFILE),
    "artifacts/dockerfile/plan.py": (("test_dockerfile.py",), _DOCKERFILE),
    "artifacts/dockerfile/rendering.py": (
        ("test_dockerfile.py", "test_dockerfile_fidelity.py"),
        _DOCKERFILE,
    ),
    "cli/audit.py": (("audit/test_audit_images.py",), _CLI),
    "cli/crash.py": (("hostile/test_round4.py",), "the saved report of a bug: hostile inputs"),
    "cli/image.py": (("test_images.py", "test_workflow.py"), _CLI),
    "cli/matrix_cmd.py": (("test_cli_contract.py", "test_schemas.py", "test_table.py"), _CLI),
    "cli/probe.py": (("probe/test_probe_cli.py",), _CLI),
    "cli/refresh.py": (("refresh/test_refresh_failures.py",), _CLI),
    "data/build.py": (
        ("test_matrix.py", "hostile/test_data_files.py"),
        "the records built from the TOML: through matrix.load_dir and broken data files",
    ),
    "data/examples.py": (("test_node.py",), "the --example nodes: read as nodes"),
    "data/model.py": (("test_data_schema.py",), "the records: tested with the schema they make"),
    "data/overlay.py": (("refresh/test_overlay.py",), "the refreshed-data overlay"),
    "data/partitions.py": (("test_parallel.py",), "CPX/NPS partitions: tested with placement"),
    "explain/chain.py": (("test_derive.py", "test_words.py"), _EXPLAIN),
    "explain/derivation.py": (("test_derive.py", "test_explain.py"), _EXPLAIN),
    "explain/hints.py": (("test_derive.py", "test_routes.py"), _EXPLAIN),
    "explain/report.py": (("test_cli_check.py", "test_schemas.py"), "the --json answer"),
    "explain/rich.py": (("test_explain.py",), _EXPLAIN),
    "explain/steps.py": (("test_fleet.py", "test_explain.py"), _EXPLAIN),
    "explain/text.py": (("test_explain.py",), _EXPLAIN),
    "fleet/artifacts.py": (("test_fleet.py", "test_fleet_kube.py"), _FLEET),
    "fleet/hostlist.py": (("test_fleet_slurm.py",), _FLEET),
    "fleet/layout.py": (("test_fleet_fanout.py",), _FLEET),
    "fleet/plan.py": (("test_fleet.py",), _FLEET),
    "fleet/reports.py": (("test_fleet.py", "hostile/test_fleet_inputs.py"), _FLEET),
    "probe/__init__.py": (("probe/test_probe_fixtures.py", "probe/test_probe_live.py"), "probe"),
    "probe/facts.py": (("probe/test_probe_fixtures.py",), _PROBE),
    "probe/host.py": (("probe/test_probe_live.py",), _PROBE),
    "probe/rocminfo.py": (
        ("probe/test_probe_properties.py", "hostile/test_probe_inputs.py"),
        _PROBE,
    ),
    "probe/text.py": (("probe/test_probe_cli.py",), _PROBE),
    "probe/tools.py": (("probe/test_probe_live.py",), _PROBE),
    "refresh/__init__.py": ((), _INIT),
    "refresh/common.py": (("refresh/test_refresh_failures.py", "hostile/test_http.py"), _REFRESH),
    "refresh/diff.py": (("refresh/test_refresh_vllm.py",), _REFRESH),
    "refresh/hf.py": (("test_hfmodel.py", "refresh/test_models.py"), _REFRESH),
    "refresh/http.py": (("hostile/test_http.py",), _REFRESH),
    "refresh/rocm.py": (("refresh/test_refresh_failures.py",), _REFRESH),
    "refresh/runner.py": (("refresh/test_refresh_failures.py",), _REFRESH),
    "solve/advisories.py": (("test_solve.py", "test_capabilities.py"), _SOLVE),
    "solve/checks/__init__.py": ((), _INIT),
    "solve/checks/amdgpu.py": (("test_solve_drivers.py", "test_properties.py"), _SOLVE),
    "solve/checks/driver.py": (("test_solve_drivers.py", "test_solve.py"), _SOLVE),
    "solve/checks/facts.py": (("test_solve.py",), _SOLVE),
    "solve/checks/gates.py": (("test_solve.py", "test_capabilities.py"), _SOLVE),
    "solve/checks/gpu.py": (("test_solve.py", "test_solve_strict.py"), _SOLVE),
    "solve/checks/listed.py": (("test_capabilities.py", "test_solve.py"), _SOLVE),
    "solve/checks/unknown.py": (("test_solve.py", "test_routes.py"), _SOLVE),
    "solve/checks/wheel.py": (("test_solve.py", "test_live_data.py"), _SOLVE),
    "solve/cuda/evaluation.py": (("test_solve_cuda.py", "test_cuda_old_releases.py"), _SOLVE),
    "solve/cuda/gpus.py": (("test_solve_cuda.py",), _SOLVE),
    "solve/cuda/listing.py": (("test_solve_cuda.py", "test_images.py"), _SOLVE),
    "solve/cuda/provider.py": (("test_solve_cuda.py",), _SOLVE),
    "solve/cuda/unread.py": (("test_solve_cuda.py", "test_cuda_old_releases.py"), _SOLVE),
    "solve/finding.py": (("test_words.py",), "findings as data: worded by explain/words.py"),
    "solve/host.py": (("test_host_blockers.py", "test_solve.py"), _SOLVE),
    "solve/modelspec.py": (
        ("test_solve_model.py", "test_cli_model.py"),
        "--model's request and answer records (issue 37), built and read by the model check",
    ),
    "solve/provider.py": (("test_solve.py", "test_properties.py"), _SOLVE),
    "solve/rank.py": (("test_solve.py", "test_routes.py"), _SOLVE),
    "solve/types.py": (("test_solve.py", "test_routes.py"), "the decision's records"),
    "util/__init__.py": ((), _INIT),
    "util/bounded.py": (("test_limits.py", "hostile/test_data_files.py"), _UTIL),
    "util/capture.py": (("test_fleet_slurm.py", "hostile/test_fleet_inputs.py"), _UTIL),
    "util/deadline.py": (("hostile/test_environment.py",), _UTIL),
    "util/errors.py": (("test_cli_contract.py",), "exit codes: the command contract"),
    "util/safety.py": (("test_matrix.py", "hostile/test_data_files.py"), _UTIL),
    "util/shell.py": (("test_cli_check.py", "test_fleet.py"), "quoting: every printed command"),
    "util/timestamps.py": (("test_images.py",), "ages said of cached answers"),
}


def _modules() -> list[str]:
    return sorted(
        str(p.relative_to(PACKAGE))
        for p in PACKAGE.rglob("*.py")
        if "__pycache__" not in p.parts and "_data" not in p.parts
    )


def named_test_files(module: str) -> list[str]:
    """The test files named for ``module`` (relative to resolver/), relative to tests/."""
    parts = Path(module).with_suffix("").parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    if not parts:
        return []
    *pkg, stem = parts
    stem = stem.lstrip("_")
    package = parts[-1] != Path(module).stem  # an __init__.py: named as its package
    exact = {f"test_{p}{stem}" for p in ("", *("_".join(pkg[i:]) + "_" for i in range(len(pkg))))}
    # A suffix only after a qualified name: test_host_blockers is not solve/host's nor probe/host's.
    qualified = exact if package else exact - {f"test_{stem}"}
    dirs = {
        TESTS,
        *(TESTS.joinpath(*pkg[: i + 1]) for i in range(len(pkg))),
        *(TESTS / p for p in pkg),
    }
    found = {
        str(f.relative_to(TESTS))
        for d in dirs
        if d.is_dir()
        for f in d.glob("test_*.py")
        if f.stem in exact or any(f.stem.startswith(s + "_") for s in qualified)
    }
    return sorted(found)


def test_every_module_has_a_test_file_named_for_it_or_says_where_it_is_tested() -> None:
    missing = [m for m in _modules() if not named_test_files(m) and m not in COVERED_ELSEWHERE]
    assert not missing, (
        f"no test file named for {missing}: add tests/test_<name>.py, or an entry to "
        "COVERED_ELSEWHERE naming the tests that cover it and why"
    )


def test_the_allow_list_is_not_stale() -> None:
    modules = set(_modules())
    for module, (files, why) in COVERED_ELSEWHERE.items():
        assert module in modules, f"{module} is gone: drop its entry"
        assert not named_test_files(module), f"{module} now has {named_test_files(module)}"
        assert why, module
        assert files or module.endswith("__init__.py"), f"{module}: name the tests that cover it"
        for f in files:
            assert (TESTS / f).is_file(), f"{module}: {f} does not exist"


if __name__ == "__main__":  # the table, for docs/architecture.md readers: module -> test files
    for m in _modules():
        named = named_test_files(m)
        files, why = COVERED_ELSEWHERE.get(m, ((), ""))
        print(f"{m:40} {', '.join(named or files) or '-'}{'' if named else f'  ({why})'}")
