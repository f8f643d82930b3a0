"""`--speculative-algorithm` (argparse and annotated config field) and `add_*_choices` hooks."""

from sgl_scan.analyzer.extractors.options import OptionsExtractor
from sgl_scan.analyzer.extractors.records import HookRecord, OptionRecord
from tests.analyzer.extractors.driver import records

EX = OptionsExtractor()


def test_argparse_with_literal_and_named_choices():
    found = records('''
        SPEC_CHOICES = ["EAGLE"]

        class ServerArgs:
            @staticmethod
            def add_cli_args(parser):
                parser.add_argument(
                    "--speculative-algorithm",
                    type=str,
                    choices=["EAGLE", "EAGLE3", "NEXTN"],
                )
                parser.add_argument("--speculative-algorithm", choices=SPEC_CHOICES)
                parser.add_argument("--speculative-draft-model-path", type=str)
                logger.info("use --speculative-algorithm EAGLE")
    ''', EX, "sglang/srt/server_args.py")
    options = [r for r in found if isinstance(r, OptionRecord)]
    assert [(o.line, o.kind, o.choices, o.values, o.function) for o in options] == [
        (7, "argument", None, ("EAGLE", "EAGLE3", "NEXTN"), "sglang.srt.server_args.ServerArgs.add_cli_args"),
        (12, "argument", "SPEC_CHOICES", (), "sglang.srt.server_args.ServerArgs.add_cli_args"),
    ]


def test_annotated_config_field_but_not_parameters_or_plain_annotations():
    found = records('''
        from typing import Annotated as A, Optional


        class SpecArgs:
            speculative_algorithm: A[
                Optional[str],
                "Speculative algorithm.",
            ] = None


        class Other:
            speculative_algorithm: Optional[str] = None


        def f(speculative_algorithm: Optional[str]):
            speculative_algorithm: A[str, "x"] = "EAGLE"
    ''', EX, "sglang/srt/arg_groups/fields/spec.py")
    options = [r for r in found if isinstance(r, OptionRecord)]
    assert [(o.line, o.kind, o.function) for o in options] == [
        (6, "config_field", "sglang.srt.arg_groups.fields.spec.SpecArgs")]


def test_choice_hooks_function_and_alias_forms():
    found = records('''
        LOAD_FORMAT_CHOICES = ["auto"]


        def add_load_format_choices(choices):
            LOAD_FORMAT_CHOICES.extend(choices)


        add_attention_backend_choices = ATTENTION_BACKEND_CHOICES.extend

        add_deterministic_attention_backend_choices = (
            DETERMINISTIC_ATTENTION_BACKEND_CHOICES.extend
        )
        add_chunked_prefix_cache_attention_backend = CHUNKED.append
        add_load_format_choices(["x"])
    ''', EX, "sglang/srt/arg_groups/choices.py")
    hooks = [(h.name, h.kind, h.choices, h.line) for h in found if isinstance(h, HookRecord)]
    assert hooks == [
        ("add_load_format_choices", "function", "LOAD_FORMAT_CHOICES", 5),
        ("add_attention_backend_choices", "alias", "ATTENTION_BACKEND_CHOICES", 9),
        ("add_deterministic_attention_backend_choices", "alias", "DETERMINISTIC_ATTENTION_BACKEND_CHOICES", 11),
    ]


def test_trigger():
    assert EX.trigger.search('parser.add_argument(\n    "--speculative-algorithm",')
    assert EX.trigger.search("add_x_choices = X.extend")
    assert EX.trigger.search("    speculative_algorithm: A[\n")
    assert not EX.trigger.search('msg = f"--speculative-algorithm={x}"')
    assert not EX.trigger.search("    add_load_format_choices(['x'])")
