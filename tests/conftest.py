"""Shared fixtures: where ../shared is, and an isolated user cache for every test."""

from __future__ import annotations

from pathlib import Path

import pytest
from _shared import SHARED, SKIP_TAG, missing_reason


@pytest.fixture
def shared_dir() -> Path:
    if not (SHARED / "golden").is_dir():
        pytest.skip(missing_reason(SHARED))
    return SHARED


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """End the run with one line counting the tests skipped for want of shared data, so a
    checkout outside the sibling layout cannot silently run a third of the suite. (An outermost
    wrapper, so the line comes after pytest's short summary of the skip reasons.)"""
    yield
    n = sum(SKIP_TAG in _skip_reason(rep) for rep in terminalreporter.stats.get("skipped", []))
    if n:
        terminalreporter.write_line(f"{n} test{'s' if n != 1 else ''} skipped: shared data not found at "
                                    f"{SHARED} {SKIP_TAG}", yellow=True, bold=True)


def _skip_reason(report) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:  # (path, lineno, "Skipped: reason")
        return str(longrepr[2])
    return str(longrepr)


@pytest.fixture(scope="session")
def dev_dir() -> Path:
    """The dev corpora (`corpora/dev/`: web_sample, target_wiki, raw WARCs); session-scoped so
    module fixtures that build models or attribute folders from them can use it too."""
    dev = SHARED / "corpora" / "dev"
    if not (dev / "web_sample.jsonl.gz").exists():
        pytest.skip(f"dev corpora not found under {dev} {SKIP_TAG}")
    return dev


@pytest.fixture
def resources_dir(shared_dir: Path) -> Path:
    return shared_dir / "golden" / "rpv2_resources"


@pytest.fixture(autouse=True, scope="session")
def _sample_sources_walked_once():
    """`build_sample` walks the standard library and /usr/share/doc (~1.4 s) on every call, and a
    dozen test modules build the sample; the machine's files do not change during a test process,
    so the default sources are walked once per process. (Explicit `SampleSources`, which tests
    point at temporary folders, are walked every time.)"""
    from textsieve import sample

    walk = sample._collect_candidates
    walked: dict[str, dict] = {}

    def once(sources=None):
        if sources is not None:
            return walk(sources)
        if "default" not in walked:
            walked["default"] = walk(None)
        return {name: list(found) for name, found in walked["default"].items()}

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sample, "_collect_candidates", once)
        yield


@pytest.fixture(autouse=True)
def _isolated_user_cache(tmp_path_factory, monkeypatch) -> None:
    """Tests never read or fill the real per-user resources cache."""
    cache = tmp_path_factory.mktemp("xdg-cache")
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    monkeypatch.delenv("TEXTSIEVE_RESOURCES", raising=False)


#: Tests over ~2.5 s on the 2-core dev machine (`pytest --durations=0`), as `file::name` or
#: `file::name[param]`; with whole slow modules below they make the quick suite
#: (`pytest -m "not slow"`, under 90 s). A listed name that matches no test fails collection,
#: so a rename cannot silently move a slow test into the quick suite.
SLOW_TESTS = {
    # a run, interrupted (~6 s)
    "test_annotate_whole_shards.py::test_ctrl_c_stops_a_run_and_its_workers_without_a_traceback",
    "test_warm_start.py::test_a_killed_command_takes_its_server_and_every_pool_worker_with_it",  # kills a run (~2.5 s)
    "test_arrow_arrays.py::test_annotate_dedup_and_pii_run_without_pandas",  # eight fresh CLI processes (~7 s)
    "test_source_stackexchange.py::test_html_text_equals_beautifulsoup_on_every_golden_html_string",  # bs4 x 5,574
    "test_source_wikipedia.py::test_every_page_decision_and_cleaned_text",  # 293 pages cleaned (~4 s)
    "test_source_wikipedia.py::test_memory_stays_flat_in_the_dump_size",  # writes and reads a 100 MB dump
    "test_embed.py::test_pipeline_embeds_dedups_semantically_and_targets_then_reruns_as_a_noop",  # 5 stages, twice
    "test_embed.py::test_embeds_with_the_network_cut_off",  # a fresh interpreter loads the model
    "test_learned_embed.py::test_boosted_embedding_model_end_to_end_in_select",  # train x2, apply, select
    "test_learned_embed.py::test_reference_scores_with_nested_C_lift_the_sql_model",  # trains 2 reference models
    "test_train_shards.py::test_killed_run_publishes_nothing_and_resumes",  # a CLI subprocess slowed, killed
    "test_train_shards.py::test_shuffle_is_global_and_identical_across_runs_workers_and_memory",  # 5 runs, a pool
    "test_select_shards.py::test_identical_across_runs_and_workers_rerun_is_a_noop",  # 6 runs, a 2-worker pool
    "test_decontaminate.py::test_cli_end_to_end_with_a_recipe",  # two worker processes map the index
    "test_hf_datasets.py::test_saved_dataset_annotated_in_place_and_joined_back",
    "test_hf_datasets.py::test_every_column_survives_select",
    "test_hf_datasets.py::test_hub_layout_folder_of_parquet_and_arrow_shards",
    "test_dolma.py::test_dolma_mixer_on_exported_attributes_keeps_what_select_keeps",
    "test_dolma.py::test_export_writes_documents_when_they_are_elsewhere",
    "test_dolma.py::test_import_attributes_written_by_dolma_taggers",
    "test_rpv2_card_recipe.py::test_docs_release_imports_like_the_release",
    "test_import_rpv2.py::test_annotate_of_raw_content_equals_imported_signals",
    "test_import_rpv2.py::test_fuzzy_on_released_bands_equals_annotated_bands_and_recipes_run",
    "test_import_rpv2.py::test_export_round_trips_byte_identically",
    "test_extract.py::test_pipeline_extracts_first_and_the_report_shows_it",
    "test_extract.py::test_workers_and_formats_give_the_same_records",
    "test_extract.py::test_killed_run_publishes_nothing_and_the_rerun_adopts_finished_shards",
    "test_extract.py::test_cli_summary_line",
    "test_extract.py::test_rerun_keeps_changed_input_reruns_other_settings_refused",
    "test_dedup_lines.py::test_killed_run_publishes_nothing_and_resumes",
    "test_annotate.py::test_empty_and_huge_documents",
    "test_annotate_whole_shards.py::test_workers_end_with_a_killed_run_and_the_rerun_equals_a_clean_run",
    "test_pipeline.py::test_example_pipeline_runs_on_the_sample_and_records_its_resolved_config",  # 6 s: a pipeline
    "test_extract.py::test_dev_warcs_give_text_not_markup",  # 3.5 s: every dev WARC record
    "test_annotate_whole_shards.py::test_shards_in_workers_give_the_one_worker_files",  # 4 s: 1 and 2 workers, twice
    "test_extract.py::test_extract_with_language_id_never_loads_numba",  # 4 s: a fresh interpreter extracts
    "test_output_checks.py::test_the_api_refuses_a_tokenizer_written_over_its_corpus",  # 3.8 s: trains a tokenizer
    "test_extract_blocks.py::test_cascade_sends_the_doubtful_pages_to_trafilatura_and_says_so",  # 2.9 s: 150 pages
    "test_extract_blocks.py::test_auto_sends_the_pages_whose_main_content_collapsed_to_trafilatura",  # ~6 s: 43 pages
    "test_local_pool.py::test_settle_lets_running_tasks_end_before_the_error_goes_on[True]",  # 2.6 s: waits on a task
    "test_models_langid.py::test_model_tables_are_cached_once_and_a_damaged_cache_is_rebuilt",  # 2.5 s: 3 model loads
    "test_annotate_whole_shards.py::test_a_failing_shard_fails_the_run_in_one_line_and_a_rerun_resumes",
    "test_annotate.py::test_golden_files_exact_through_cli_and_export",
    "test_annotate.py::test_output_identical_for_any_worker_count_and_batch_size",
    "test_dedup_exact.py::test_annotate_folder_equals_raw_inputs",
    "test_dedup_exact.py::test_exact_first_occurrence_kept",
    "test_dedup_exact.py::test_other_settings_get_their_own_set",
    "test_dedup_fuzzy.py::test_clusters_equal_rpv2_golden_and_export",
    "test_dedup_fuzzy.py::test_default_verifies_exactly",
    "test_dedup_fuzzy.py::test_deterministic_across_shard_names_order_and_workers",
    "test_dedup_fuzzy.py::test_exact_verification_hashes_equal_set_jaccard",
    "test_dedup_fuzzy.py::test_keep_and_verify_policies",
    "test_dedup_fuzzy.py::test_show_prints_members_and_jaccard",
    "test_dedup_fuzzy.py::test_show_without_cluster_lists_the_largest",
    "test_dedup_fuzzy.py::test_tiny_memory_forces_passes_same_output",
    "test_dsir.py::test_fit_writes_attribute_set_and_model",
    "test_dsir_embed.py::test_wiki_docs_in_the_pool_get_higher_weights",  # annotate + embed a pool
    "test_eval_lm.py::test_eval_lm_cli_on_dev_corpus",
    "test_fast_minhash.py::test_kernel_equals_reference_definition",
    "test_fsspec_stages.py::test_memory_attributes_through_every_stage",
    "test_fuzz_readers.py::test_fuzz_readers",
    "test_fuzz_readers.py::test_fuzz_extract_page_reader",
    "test_lang_wordlists.py::test_languages_without_lists_get_null_and_are_counted",
    "test_learned.py::test_cross_validated_quality_beats_majority",
    "test_minhash.py::test_golden_bands",
    "test_model_requests.py::test_naming_one_model_signal_keeps_the_other_models_columns",
    "test_models_classifier.py::test_fasttext_backend_and_user_bin",
    "test_models_classifier.py::test_linear_classifier_trains_and_separates",
    "test_models_langid.py::test_fasttext_language_id_model",
    "test_models_langid.py::test_lang_auto_picks_word_lists",
    "test_perplexity.py::test_heldout_cutoffs_and_wiki_vs_web",
    "test_perplexity.py::test_train_lm_cli_annotate_tsm_and_arpa",
    "test_pipeline.py::test_dry_run_prints_the_plan",
    "test_pipeline_rules.py::test_dry_run_of_the_example_with_a_typo_fails_with_did_you_mean",
    "test_python_api.py::test_crashing_worker_fails_fast_with_one_clear_error",
    "test_python_api.py::test_plain_script_without_main_guard_uses_workers",
    "test_python_api.py::test_python_api_doc_runs",
    "test_python_api.py::test_python_api_notebook_runs",  # a Jupyter kernel runs the notebook session
    "test_reference_golden.py::test_golden_exact[rpv2_signals_dev.jsonl.gz]",
    "test_report.py::test_locate_both_layouts",
    "test_resume.py::test_killed_runs_resume_to_identical_outputs",
    "test_resume_parts.py::test_killed_annotate_resumes_from_its_last_finished_part",
    "test_resume_parts.py::test_killed_dedup_exact_and_fuzzy_rerun_without_overwrite",
    "test_resume_parts.py::test_killed_dsir_fit_resumes",
    "test_resume_parts.py::test_select_resumes_an_interrupted_run_and_never_needs_overwrite_for_it",
    "test_sample.py::test_count_and_info",
    "test_sample.py::test_deterministic_and_atomic",
    "test_sample.py::test_max_docs_respected",
    "test_select_combined.py::test_line_rules_still_cut_the_drawn_documents",
    "test_select_combined.py::test_one_step_selects_the_same_documents_as_the_two_step_route",
    "test_select_engine.py::test_bundled_funnels_match_independent_computation",
    "test_select_engine.py::test_c4_materialized_lines_cut_by_spans",
    "test_select_engine.py::test_line_rule_fast_path_over_many_row_groups",
    "test_shared_skips.py::test_skips_print_reason_and_summary_line",
    "test_resource_limits.py::test_dedup_exact_tree_peak_within_memory",
    "test_resource_limits.py::test_huge_document_is_skipped_and_memory_stays_small",
    "test_resource_limits.py::test_dedup_fuzzy_tree_peak_within_memory",
    "test_report.py::test_language_from_the_lang_field_and_parquet_sources",  # annotates + reports twice
    "test_hf_datasets.py::test_cli_reads_a_saved_folder_by_its_state",
    "test_disk_full.py::test_disk_full_is_one_line_and_leaves_no_partial_file[annotate]",
    "test_disk_full.py::test_disk_full_is_one_line_and_leaves_no_partial_file[dsir fit]",
    "test_extensions.py::test_registered_model_kind_adds_its_signal_in_workers",  # a 2-worker pool
    "test_learned_embed.py::test_pipeline_learn_section_applies_the_model_for_select_and_reruns_when_it_changes",
    "test_disk_full.py::test_disk_full_is_one_line_and_leaves_no_partial_file[dedup exact: output]",
    "test_embed.py::test_default_model_is_wordllamas_own_inference_of_the_normalised_text",  # loads the model
    "test_extensions.py::test_registered_signal_is_annotated_by_workers_and_selected_on",  # a 2-worker pool
    "test_resume_parts.py::test_killed_per_document_set_stages_resume_to_identical_sets",  # 3 runs per stage
    "test_resume_parts.py::test_killed_dedup_semantic_reruns_to_the_same_set",  # embeds twice, 3 runs
    "test_extract.py::test_a_folder_with_a_wet_file_among_its_archives_is_read_and_the_wet_named",  # ~3.5 s
    "test_resume_parts.py::test_killed_import_rpv2_resumes_to_the_same_shards",
    "test_write_lock.py::test_a_second_writer_fails_naming_the_holder_and_a_killed_holders_lock_is_taken",
    "test_write_lock.py::test_a_second_writer_is_refused_in_every_stage_family",  # shares the annotate fixture
    "test_output_checks.py::test_learn_onto_a_published_attribute_shard_and_train_tokenizer_onto_its_corpus",
    "test_output_checks.py::test_an_edited_annotate_json_is_refused_naming_it",  # annotate + select twice
    "test_import_rpv2.py::test_export_is_published_as_one_unit_and_import_refuses_a_killed_one",
    "test_io.py::test_a_zstd_file_of_one_big_frame_reads_whole",  # 53 MB read twice
    "test_extract.py::test_library_log_records_follow_textsieves_levels",  # three CLI runs with workers
    # measured at 2.5-3.1 s each on the 2-core machine (issue 26's additions pushed the quick suite past 90 s)
    "test_pipeline_registry.py::test_the_cli_module_loads_no_pyarrow_before_main_chooses_its_memory_pool",
    "test_extract.py::test_annotate_on_a_warc_warns_and_points_at_extract",
    "test_extract.py::test_oversized_pages_are_counted_and_a_gzip_bomb_is_not_inflated",
    "test_publish_and_paths.py::test_fuzzy_killed_while_switching_is_finished_by_the_next_reader",
    "test_publish_and_paths.py::test_txt_folders_and_underscore_inputs_are_shards_downstream",
    "test_embed.py::test_another_model_under_the_same_name_is_refused",
    "test_extensions.py::test_a_signal_defined_in_main_says_why_workers_lack_it",
    "test_mix.py::test_the_plan_says_why_a_source_is_encoded",
    "test_resource_limits.py::test_work_dirs_live_under_the_output_and_are_cleaned",  # 2.2 s
    "test_dolma.py::test_export_import_round_trip",  # 2.1 s
    "test_disk_full.py::test_disk_full_is_one_line_and_leaves_no_partial_file[select]",  # 2.4 s
    # measured at 1.8-2.8 s each when issue 30's source tests pushed the quick suite to 107 s
    "test_eval_kl.py::test_news_closer_to_wiki_than_usenet_and_random",
    "test_extensions.py::test_registered_reader_feeds_annotate_dedup_and_select",
    "test_redact.py::test_load_regions_converts_only_the_selected_rows",
    "test_doc_set.py::test_rows_follow_annotate_and_rerun_is_a_noop",
    "test_publish_and_paths.py::test_a_footer_pointing_outside_the_inputs_is_refused",
    "test_source_stage.py::test_two_phases_decide_across_units_and_count_every_reason[2]",
    "test_disk_full.py::test_disk_full_is_one_line_and_leaves_no_partial_file[dedup fuzzy: output]",
    "test_dedup_lines.py::test_flags_follow_ccnets_rule_per_group_and_spans_are_annotates",
    "test_perplexity.py::test_scorer_equals_the_arpa_twin_and_round_trips_through_arpa",
    "test_lang_wordlists.py::test_lang_auto_falls_back_to_a_close_language_with_lists",
    "test_pipeline_rules.py::test_a_real_run_fails_before_annotate_runs",  # its fixture: 4.7 s
    "test_source_stage.py::test_reference_mode_applies_the_filter_and_the_rest_is_identical",
    "test_mix.py::test_rerun_is_a_noop_and_other_settings_are_refused",
    "test_annotate_rate.py::test_run_reports_measured_compile_apart",
    "test_resource_limits.py::test_memory_below_the_minimum_is_refused_with_it",
    "test_dedup_exact.py::test_same_bytes_for_any_worker_count[mode1]",
    # ~1.5-2.3 s each, with a quicker sibling left in the quick suite (it sat at 90-100 s)
    "test_mix.py::test_plan_reads_stored_counts_and_a_finished_mix_returns_at_once",
    "test_mix.py::test_infeasible_mix_flagged_before_anything_is_written[change0-epochs > max_epochs 1]",
    "test_disk_full.py::test_mix_on_a_full_disk_names_its_folder_and_removes_its_staging_at_once[60000]",
    "test_extract.py::test_html_pages_keep_ids_and_main_content",
    "test_duplicate_ids.py::test_a_shards_id_table_is_dropped_when_the_shard_is_done",
    "test_extract.py::test_a_page_past_the_page_timeout_is_left_out_counted_and_named",  # ~3.5 s, 3 runs
    "test_extract_blocks.py::test_model_is_read_offline_and_output_is_deterministic",  # 3 CLI processes
    "test_extract_blocks.py::test_retraining_reproduces_the_shipped_model_file",  # trafilatura x 495, 3 fits
}
SLOW_MODULES = {"test_docs_commands.py", "test_ray.py", "test_bombs.py",  # bombs: 256 MiB inflated, 4 processes
                "test_embed_transformer.py",  # imports torch, builds a model (~10 s) before any test
                "test_stage_in_one_module.py",  # a pipeline run in a fresh process (~5 s)
                "test_warc_lenient.py"}  # builds the sample crawl, extracts it four times (~4 s)
#: Module or session fixtures that cost 3 s or more to build (they annotate, extract, fit or train
#: before the first test): every test that uses one is slow, so the quick suite does not pay for
#: the build. The tests of those areas that do not need the fixture stay in the quick suite.
SLOW_FIXTURES = {
    "test_source_stackexchange.py": "runs",  # both modes over the two dev sites (2-5 s, mostly LID-176)
    "test_fuzz_files.py": "file_seeds",  # builds the sample, trains a tokenizer, publishes (~5 s)
    "test_report.py": "run_dir",  # annotate + two dedups + DSIR + select on the dev pool
    "test_extract.py": "extracted",  # extracts the sample crawl
    "test_tokens.py": "env",  # annotates 200 docs and trains a tokenizer
    "test_dsir.py": "fitted",  # annotates a pool slice and fits DSIR on target_wiki
    "test_pipeline_training.py": "folder",  # trains a BPE for a training-stage pipeline
    "test_models_classifier.py": "linear_model",  # trains the linear classifier on the dev corpora
    "test_dsir_embed.py": "pool",  # annotates and embeds a pool
    "test_model_requests.py": "data",  # trains a classifier on the dev corpora
    "test_select_combined.py": "routes",  # annotates, dedups and fits DSIR two ways
    "test_select_engine.py": "corpus",  # annotates 3,000 dev documents
    "test_notebook_display.py": "annotated",  # builds and annotates 90 sample documents (~4 s)
    "test_source_arxiv.py": "runs",  # the 7 shared arXiv tars through the stage in both modes (~3 s)
    "test_source_books.py": "runs",  # 36 books through source (4 runs), annotate, dedup simhash, select (~20 s)
    "test_source_wikipedia.py": "golden_runs",  # the 8 shared dumps through the stage in both modes (~10 s)
}
KILL_MODULES = {"test_resume.py", "test_resume_parts.py"}
BROWSER_TESTS = {"test_report.py::test_report_renders_in_chromium", "test_report.py::test_views_render_in_chromium"}


def pytest_collection_modifyitems(config, items):
    """Markers by where a test lives and what it needs: slow, ray, kill, browser, shared."""
    seen = set()
    for item in items:
        module = item.path.name
        name = f"{module}::{item.originalname}"
        for key in (name, f"{module}::{item.name}"):
            if key in SLOW_TESTS:
                seen.add(key)
                item.add_marker(pytest.mark.slow)
        if module in SLOW_MODULES or SLOW_FIXTURES.get(module) in set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)
        if module == "test_ray.py":
            item.add_marker(pytest.mark.ray)
        if module in KILL_MODULES or "killed" in item.name:
            item.add_marker(pytest.mark.kill)
        if name in BROWSER_TESTS:  # starts Chromium (~3 s each)
            item.add_marker(pytest.mark.browser)
            item.add_marker(pytest.mark.slow)
        if {"shared_dir", "resources_dir"} & set(getattr(item, "fixturenames", ())) \
                or getattr(item.module, "SHARED", None) is not None:
            item.add_marker(pytest.mark.shared)
    here = Path(__file__).resolve().parent
    whole_suite = all(Path(str(a)).resolve() == here for a in config.args)
    if whole_suite and not config.option.keyword and not config.option.markexpr:
        unknown = SLOW_TESTS - seen
        if unknown:
            raise pytest.UsageError(f"tests/conftest.py SLOW_TESTS names no collected test: {sorted(unknown)}")
