"""`textsieve pii`: span signals of e-mail addresses, IPs, phone numbers, card numbers and IBANs."""

from __future__ import annotations

import argparse
import sys

from textsieve.commands.options import ExamplesFormatter, add_config_options, config_from_args, examples


def run(args: argparse.Namespace) -> int:
    from textsieve.stages.training.pii import PiiConfig, run_pii

    res = run_pii(config_from_args(PiiConfig, args))
    if not args.quiet:
        what = "already up to date" if res.skipped else f"{res.computed} shard(s) computed"
        print(f"pii: {res.documents:,} documents, {res.summary.get('ts_pii_count', 0):,} span(s) found; {what} "
              f"({res.seconds:.1f} s) -> {res.output}", file=sys.stderr)
    return 0


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    from textsieve.stages.training.pii import PiiConfig

    p = sub.add_parser("pii", parents=[common], help="find e-mails, IPs, phones, card numbers, IBANs (span signals)",
                       formatter_class=ExamplesFormatter,
                       epilog=examples("textsieve pii attrs/",
                                       "textsieve pii attrs/ --types email,ip --overwrite",
                                       "textsieve select attrs/ --recipe gopher --redact pii -o pii-redacted/"),
                       description="Write the attribute set ANNOTATED_DIR/_pii: per document the spans of e-mail "
                                   "addresses, IPv4/IPv6 addresses, phone numbers (libphonenumber), Luhn-checked "
                                   "payment card numbers and mod-97-checked IBANs (ts_pii_<type>) and their number "
                                   "(ts_pii_count). Recipes use `ts_pii_count == 0`; `select --redact pii` writes "
                                   "the chosen documents with each span replaced by a placeholder such as "
                                   "|||EMAIL_ADDRESS|||.")
    add_config_options(p, PiiConfig)
    p.set_defaults(func=run)
