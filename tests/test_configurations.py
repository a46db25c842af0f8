"""Tunable variants declare their configurations as data (app/variants/base.py Configuration): each names the
shader structure it runs, one of the variant's declared structures; the cost model keeps a rate per (variant,
structure, dtype), a structure never measured taking its variant's; and the planner's candidates for adaptation and
autotuning are (variant, configuration)."""
from app import cost_model
from app.planner import candidates
from app.shapes import infer
from app.variants import VARIANTS
from tools.wgsl.matrix import devices, geometries

H200 = devices()["h200"]
STRIDE1 = infer((1, 64, 32, 32), (64, 64, 3, 3), None, {"pads": [1, 1, 1, 1]})


def test_configurations_are_named_once_and_run_declared_structures():
    declaring = [v for v in VARIANTS.values() if v.tunable is not None and v.tunable.configurations]
    assert {"phase_gemm", "phase_gemm_sgmat"} <= {v.name for v in declaring}
    for variant in declaring:
        names = [c.name for c in variant.tunable.configurations]
        assert len(set(names)) == len(names), variant.name
        for c in variant.tunable.configurations:
            assert c.structure == variant.tunable.structure(c.tiles) and c.structure.split("-split")[0] in \
                variant.tunable.structures, (variant.name, c.name)


def test_every_default_plan_runs_a_declared_structure():
    for caps in (H200, devices()["swiftshader"]):
        for geom in geometries()[::7]:
            for name in ("phase_gemm", "phase_gemm_sgmat"):
                plan = VARIANTS[name].configured(geom, caps)
                if hasattr(plan, "tiles"):
                    assert VARIANTS[name].structure(plan.tiles).split("-split")[0] in VARIANTS[name].tunable.structures


def features(structure: str) -> cost_model.Features:
    return cost_model.Features("phase_gemm", "float32", 1, 10**9, 1000, 256, 1, 0, 256000, structure=structure)


def test_a_structure_has_its_own_rate_and_an_unmeasured_one_takes_its_variants():
    model = {"resident": 1 << 15, "launch_ms": 0.01, "bytes_per_ms": 1e9, "invocation_ms": 0.0,
             "rates": {"phase_gemm/float32": 1000.0, "phase_gemm/cl/float32": 4000.0}}
    assert features("cl").key == "phase_gemm/cl/float32" and features("").key == "phase_gemm/float32"
    assert cost_model.predict(features("cl"), model) < cost_model.predict(features("rv"), model)
    assert cost_model.predict(features("rv"), model) == cost_model.predict(features(""), model)
    # tables fitted before structures had rates load as they are: a variant's rate serves each of its structures
    assert cost_model.rate(model, "phase_gemm", "float32", "gather") == 1000.0


def test_fit_keeps_a_rate_per_structure():
    rows = [(features("cl"), 1.0), (features("gather"), 4.0), (features("cl"), 1.1), (features("gather"), 4.2)]
    fitted = cost_model.fit(rows, sweeps=1)
    assert set(fitted["rates"]) == {"phase_gemm/cl/float32", "phase_gemm/gather/float32"}


def test_the_candidates_for_adaptation_are_variant_configurations_and_a_first_call_ranks_the_defaults_only():
    first = candidates(STRIDE1, H200)
    more = candidates(STRIDE1, H200, grid=2)
    assert all(c.origin != "configuration" for c, _ in first)
    configured = [(c.variant, VARIANTS[c.variant].structure(p.tiles)) for c, p in more if c.origin == "configuration"]
    assert ("phase_gemm", "rv") in configured and ("phase_gemm", "gather") in configured
    assert len({c.key() for c, _ in more}) == len(more)


def test_the_rules_thresholds_are_table_data_a_gpu_without_a_table_takes_its_class_and_no_class_runs_neutral():
    """An H100 (no table) ran the neutral structures 2-4x slower than the H200's thresholds on the `large` tier in
    float16 (docs/decisions.md#neutral-defaults): a GPU with no table takes the GPU class's thresholds."""
    import json
    from pathlib import Path

    from app import tuning_tables
    from app.caps import DeviceCaps
    from app.variants import phase_gemm, phase_gemm_sgmat

    path = Path(__file__).resolve().parents[1] / "tuning" / "nvidia-unknown-nvidia_h200.json"
    table = json.loads(path.read_text())
    h100 = DeviceCaps(features=H200.features, limits=H200.limits, vendor="nvidia", device="nvidia-h100",
                      subgroup_min_size=H200.subgroup_min_size, subgroup_max_size=H200.subgroup_max_size,
                      subgroup_matrix_configs=H200.subgroup_matrix_configs)
    swiftshader = devices()["swiftshader"]
    for module in (phase_gemm, phase_gemm_sgmat):
        measured = table["thresholds"][module.NAME]
        assert set(measured) == set(module.NEUTRAL) and module.rules(H200) == measured
        assert module.rules(h100) == measured  # the GPU class's
        assert module.rules(swiftshader) == module.NEUTRAL  # no software table has thresholds
    saved = tuning_tables._tables
    try:  # without the H200's table no GPU table has thresholds: the declarations' neutral ones
        tuning_tables._tables = [t for t in tuning_tables.in_use() if t.get("adapter") != table["adapter"]]
        for module in (phase_gemm, phase_gemm_sgmat):
            assert module.rules(h100) == module.NEUTRAL
        neutral = {"phase_gemm": {"gather"}, "phase_gemm_sgmat": {"staged", "staged-va"}}
        for geom in geometries()[::5]:
            for name, structures in neutral.items():
                t = VARIANTS[name].configured(geom, h100)
                if hasattr(t, "tiles"):
                    assert VARIANTS[name].structure(t.tiles) in structures and t.tiles.get("ks", 1) == 1, t.tiles
    finally:
        tuning_tables._tables = saved


def test_software_adapters_try_no_gpu_configuration():
    """SwiftShader compiles GPU tiles' unrolled loads for seconds each: its search and tuning never try them."""
    from app import tuner

    swiftshader = devices()["swiftshader"]
    found = [p.tiles for c, p in candidates(STRIDE1, swiftshader, grid=2)
             if c.variant == "phase_gemm" and c.origin in ("defaults", "configuration")]
    tuned = tuner.candidates("phase_gemm", {}, STRIDE1, swiftshader)
    assert found and all(t.get("direct") == 1 for t in found + tuned)


def test_a_configurations_params_name_only_what_the_defaults_name_so_a_store_takes_them():
    """A stored choice's params must be ones the variant's defaults name (app/store_entries.py): a configuration
    that leaves phase_gemm's cl or rv off leaves them out, as the defaults do."""
    from app.caps import DeviceCaps

    h100 = DeviceCaps(features=H200.features, limits=H200.limits, vendor="nvidia", device="nvidia-h100")
    variant = VARIANTS["phase_gemm"]
    defaults = variant.tunable.defaults(STRIDE1, h100)
    for configuration in variant.tunable.configurations:
        params = variant.tunable.resolve(configuration, STRIDE1, h100)
        if params is not None:
            assert set(params) <= set(defaults) | {k for k, v in configuration.tiles.items() if v}, configuration.name
