"""The intrinsic evaluation's printed table: Spearman per set, subset and system, with the CIs.

Each row gives the difference to the set's baseline with its 95% CI and a
verdict; a BERTRAM system with contexts also its difference to bertram_form.
"""
from __future__ import annotations

from typing import Any, List, Mapping

from .intrinsic import CONTEXT_COUNTS, SET_NAMES


def _set_header(key: str, data: Mapping[str, Any]) -> str:
    coverage = data.get("definitions")
    covered = ("" if not coverage else
               f"; dictionary entries for {coverage['with_definitions']} of {coverage['rare_words']} rare words")
    return _set_detail(key, data) + covered


def _set_detail(key: str, data: Mapping[str, Any]) -> str:
    if key == "crw":
        detail = (f"{data['pairs']} pairs, {data['rare_words']} rare words "
                  f"({data['rare_words_without_contexts']} without contexts)")
    elif key == "card":
        dropped = ", ".join(f"{n} {why}" for why, n in data["dropped"].items()) or "none"
        contexts = ("form only" if data["rare_words_with_contexts"] is None else
                    f"store contexts for {data['rare_words_with_contexts']} of {data['rare_words']} words")
        detail = f"{data['pairs']} of {data['pairs_read']} pairs kept (dropped: {dropped}); {contexts}"
    else:
        files = ", ".join(f"{name} {n}" for name, n in data["files"].items())
        detail = f"items: {files}; nonce written {data['nonce']!r}; rho = mean over items"
    return f"{SET_NAMES[key]} ({data['path']}): {detail}"


def _verdict(difference: Mapping[str, Any]) -> str:
    if difference["no_difference"]:
        return "no difference"
    return "higher" if difference["low"] > 0 else "lower"


def _difference(diff: Mapping[str, Any]) -> str:
    ci = f"[{diff['low']:+.3f}, {diff['high']:+.3f}]"
    return f"{diff['estimate']:>+9.3f}  {ci:<18}{_verdict(diff)}"


def format_table(metrics: Mapping[str, Any]) -> str:
    """Spearman per set, subset and system; each difference to the baseline with its CI."""
    lines: List[str] = []
    for key, data in metrics["sets"].items():
        lines.append(_set_header(key, data))
        width = max([14] + [len(subset) + 2 for subset in data["subsets"]])  # "with_definitions" is 16
        lines.append(f"{'subset':<{width}}{'system':<18}{'n':>5}{'rho':>8}{'diff':>9}  {'95% CI':<18}"
                     f"(diff: system - {data['baseline']})")
        for subset, cell in data["subsets"].items():
            if not cell["systems"]:
                lines.append(f"{subset:<{width}}{'-':<18}{cell['n']:>5}  {cell.get('note', '')}")
            for name, entry in cell["systems"].items():
                row = f"{subset:<{width}}{name:<18}{entry['n']:>5}{entry['spearman']:>8.3f}"
                if entry.get("difference") is not None:
                    row += _difference(entry["difference"])
                if entry.get("vs_form") is not None:
                    row += "  | vs bertram_form" + _difference(entry["vs_form"])
                lines.append(row.rstrip())
        lines.append("")
    if metrics["sets"]:
        lines.append(f"95% CIs: paired bootstrap, {metrics.get('bootstrap')} resamples of pairs (Chimeras: items), "
                     f"seed {metrics.get('seed')}; 'no difference' where the CI contains 0."
                     + (f" Fold {metrics['fold']} of the rare words." if metrics.get("fold") else ""))
    cap = metrics.get("model_max_contexts")
    capped = [f"bertram_{k}" for k in CONTEXT_COUNTS if cap is not None and k > cap]
    if capped:
        lines.append(f"The model reads at most {cap} contexts per word (its max_contexts): "
                     f"{', '.join(capped)} used {cap}.")
    if metrics.get("message"):
        lines.append(metrics["message"])
    return "\n".join(lines).rstrip() + "\n"
