"""SGL202 string-dispatch: code that branches on `speculative_algorithm` by comparing strings."""

from __future__ import annotations

from typing import Iterable

from sgl_scan.analyzer.model import Analysis
from sgl_scan.rules.base import Example, Rule
from sgl_scan.rules.common import literals_of, quoted
from sgl_scan.rules.finding import Finding


class StringDispatch(Rule):
    """
    ## What it does
    Flags a test that compares `speculative_algorithm` (or `spec_algorithm`, directly, after
    `.upper()`/`str(...)`/`(x or "")`, or through a local alias) with string literals where an
    algorithm the literals do not name **silently takes the default path**: the branch the literals
    select is skipped and nothing refuses. It is not reported where the answer for other
    algorithms is loud or deliberate (the analyzer's control-flow facts decide this):

    - guards that refuse: `if algo not in (...): raise`, `assert algo in (...)`, an `if` whose
      other side raises, or one that returns a rejection (`return False, reason`);
    - problems collected, then raised: an entry of a table `[(algo == "X" and ..., "why"), ...]`
      iterated by `for bad, why in table: if bad: raise`, or `if algo == "X": problems.append(...)`
      with `if problems: raise` below (a table or list that is only logged still counts as silent);
    - tests only reachable after such a guard (a new algorithm was already refused);
    - `!=` / `not in` tests, where a new algorithm *enters* the branch (`if algo != "NONE":`);
    - exemptions (`if algo in ("NGRAM", None): return`: a new algorithm gets the checks that follow)
      and conditional expressions that only pick message text;
    - the alias resolver itself (`if algo == "NEXTN": algo = "EAGLE"`).

    One finding per test expression (`algo == "NEXTN" or algo == "EAGLE"` is one).

    ## Why it matters
    A predicate such as `is_eagle()` is updated in one place when a new algorithm joins a family; a
    string comparison is not. A new algorithm silently falls through such a branch, so its server
    arguments, memory sizing or attention backend quietly take the defaults of "not this
    algorithm".

    ## Example
    ```python
    if server_args.speculative_algorithm in ("EAGLE", "EAGLE3"):   # SGL202
        server_args.speculative_eagle_topk = 1
    ```

    ## Use instead
    A predicate whose members are exactly the literals (the hint names it when one exists, or
    says which members a new one should cover):
    ```python
    if SpeculativeAlgorithm.from_string(server_args.speculative_algorithm).is_eagle():
        server_args.speculative_eagle_topk = 1
    ```
    """

    id = "SGL202"
    name = "string-dispatch"
    severity = "warning"
    message = "a new algorithm silently skips a branch selected by string literals"

    examples = (
        Example(
            {
                "sglang/srt/server_args.py": """\
class ServerArgs:
    speculative_algorithm = None
    speculative_eagle_topk = None

    def __post_init__(self):
        if self.speculative_algorithm in ("EAGLE", "EAGLE3"):  # expect
            self.speculative_eagle_topk = 1
        algo = self.speculative_algorithm
        if algo.upper() == "EAGLE":  # expect
            self.speculative_eagle_topk = 2
        if str(self.speculative_algorithm).upper() in ("EAGLE", None):  # expect
            self.speculative_eagle_topk = 3
        if (self.speculative_algorithm or "").upper() == "NGRAM":  # expect
            self.speculative_eagle_topk = 4
""",
            }
        ),
        Example(
            {
                # 0.5.23 arg_groups/speculative_hook.py:109: one finding for the whole expression
                "sglang/srt/arg_groups/speculative_hook.py": """\
def resolve(speculative_algorithm, is_gemma4_draft):
    if speculative_algorithm == "NEXTN" or speculative_algorithm == "EAGLE":  # expect
        if is_gemma4_draft:
            return "FROZEN_KV_MTP"
    return speculative_algorithm
""",
            },
            note="one finding per expression",
        ),
        Example(
            {
                "sglang/srt/server_args.py": """\
from sglang.srt.speculative.spec_info import SpeculativeAlgorithm


class ServerArgs:
    speculative_algorithm = None
    load_format = "auto"

    def __post_init__(self):
        if SpeculativeAlgorithm.from_string(self.speculative_algorithm).is_eagle():
            self.speculative_eagle_topk = 1
        if self.load_format == "EAGLE":
            self.load_format = "auto"
""",
            },
            note="predicates and unrelated strings are fine",
        ),
        Example(
            {
                # 0.5.23 arg_groups/speculative_hook.py:176 (a guard that raises), and
                # arg_groups/kv_cache_hook.py:590-608 (an assert allow-list, then tests it dominates)
                "sglang/srt/arg_groups/kv_cache_hook.py": """\
def handle(cfg):
    if cfg.speculative_use_block_verification:
        if cfg.speculative_algorithm not in ("EAGLE", "EAGLE3", "DFLASH", "DSPARK"):
            raise ValueError("--speculative-use-block-verification only supports EAGLE / EAGLE3")
    if cfg.speculative_algorithm == "EAGLE3" and cfg.is_gemma4_draft:
        raise ValueError("EAGLE3 is not supported for this draft architecture")


def unified(cfg):
    assert cfg.speculative_algorithm in ("DSPARK", "EAGLE", "EAGLE3", "DFLASH"), "not audited"
    if cfg.speculative_algorithm in ("EAGLE", "EAGLE3"):
        cfg.fused = True
    if cfg.speculative_algorithm != "NONE":
        cfg.spec = True
    if cfg.speculative_algorithm == "NEXTN":
        cfg.speculative_algorithm = "EAGLE"


def validate_lora(cfg):  # 0.5.23 arg_groups/lora_hook.py:247-263
    if cfg.speculative_algorithm in ["NGRAM", None]:
        return
    if cfg.speculative_algorithm not in ("EAGLE", "EAGLE3", "DFLASH", "DSPARK"):
        promoted = " (promoted)" if cfg.speculative_algorithm == "FROZEN_KV_MTP" else ""
        raise ValueError(f"LoRA is not compatible with {cfg.speculative_algorithm}{promoted}")
""",
            },
            note="guards, tests they dominate, !=, exemptions, message text and the alias resolver are fine",
        ),
        Example(
            {
                # 0.5.23 arg_groups/lora_hook.py:270-301: a table of unsupported combinations, raised below
                "sglang/srt/arg_groups/lora_hook.py": """\
def check_lora(cfg, ragged_mode):
    unsupported = [
        (
            cfg.speculative_algorithm == "DSPARK" and ragged_mode != "static",
            f"does not support SGLANG_RAGGED_VERIFY_MODE={ragged_mode!r}",
        ),
        (cfg.speculative_adaptive, "does not support --speculative-adaptive"),
    ]
    for is_unsupported, reason in unsupported:
        if is_unsupported:
            raise ValueError(f"LoRA with speculative decoding {reason}.")


def check_pages(cfg):
    problems = []
    if cfg.speculative_algorithm == "DSPARK" and cfg.page_size != 1:
        problems.append("DSPARK needs page size 1")
    if problems:
        raise ValueError("; ".join(problems))
""",
            },
            note="problems collected into a table or list that is raised are refusals",
        ),
        Example(
            {
                "sglang/srt/arg_groups/lora_hook.py": """\
def check_lora(cfg, ragged_mode):
    unsupported = [
        (
            cfg.speculative_algorithm == "DSPARK" and ragged_mode != "static",  # expect
            "ragged verify is experimental with LoRA",
        ),
    ]
    for is_unsupported, reason in unsupported:
        if is_unsupported:
            logger.warning(reason)


def draft_backend(cfg):
    choices = [(cfg.speculative_algorithm == "EAGLE", "flashinfer")]  # expect
    for matches, backend in choices:
        if matches:
            return backend
    return "triton"
""",
            },
            note="a table that is only logged, or one that picks a value, lets a new algorithm default silently",
        ),
    )

    def check(self, analysis: Analysis) -> Iterable[Finding]:
        inventory = analysis.inventory
        aliases = {k.upper(): v for k, v in inventory.aliases.items()}
        groups: dict[tuple, list] = {}
        for site in inventory.dispatch_sites:
            if site.via != "string":
                continue
            key = (site.location.path, site.decision_location or site.location)
            groups.setdefault(key, []).append(site)
        for sites in groups.values():
            if not any(_silent(site) for site in sites):
                continue
            if not any(literals_of(s) for s in sites if _silent(s)):
                continue  # only `is None` / `== None`: a test for "no speculative algorithm", which no new one is
            site = sites[0]
            literals = list(dict.fromkeys(lit for s in sites if _silent(s) for lit in literals_of(s)))
            members = sorted({aliases.get(lit.upper(), lit.upper()) for lit in literals})
            shown = ", ".join(quoted(s) for s in literals) or site.detail
            yield self.finding(
                analysis,
                site.location,
                f"speculative_algorithm compared with {shown}: any other algorithm silently skips this branch",
                symbol=f"{site.function}:{'|'.join(s.detail for s in sites)}",
                data={"literals": literals, "function": site.function, "algorithms": list(site.algorithms),
                      "members": members},
                hint=_hint(inventory, members),
            )


def _silent(site) -> bool:
    """A new algorithm reaches this test, skips the branch its literals select, and nothing refuses."""
    if site.negated or site.refuses or site.decision in ("assert", "exit", "message") or site.resolves_alias:
        return False
    if site.decision_location is None:  # no control-flow facts (outside a function body read)
        return True
    return site.new_algorithm in ("skips", "either") and not site.resolves_alias


def _hint(inventory, members: list[str]) -> str:
    wanted = set(members)
    exact = [p.name for p in inventory.predicates if set(p.members) == wanted]
    if exact:
        return f"dispatch on SpeculativeAlgorithm.{exact[0]}() (true for exactly {', '.join(members)}) instead of strings"
    return (f"no predicate is true for exactly {', '.join(members)}: add one (e.g. `return self in (...)` over those "
            "members) and dispatch on it instead of strings")
