"""`textsieve resources add|show`: the stop-word and bad-word lists."""

from __future__ import annotations

import argparse

from textsieve.commands.tree import CommandTree


def run(args: argparse.Namespace) -> int:
    from textsieve.signals.resources import (
        BUNDLED_DIR,
        add_resources,
        load_word_lists,
        missing_message,
        resolve_resources_dir,
    )

    if args.action == "add":
        dest = add_resources(args.dir)
        print(f"installed word lists into {dest}")
        return 0
    where = resolve_resources_dir(args.resources)
    lists = load_word_lists(where)
    print(f"bundled lists (RPv2's, see NOTICE.md there): {BUNDLED_DIR}")
    print(f"your lists, laid over them: {where or '(none: textsieve resources add DIR installs some)'}")
    for lang in sorted(set(lists.stop_words) | set(lists.bad_words)):
        print(f"  {lang}: {len(lists.stop_words.get(lang, ()))} stop words, "
              f"{len(lists.bad_words.get(lang, ()))} bad words")
    if lists.missing:
        print(missing_message(lists.missing))
    return 0


def register(tree: CommandTree) -> None:
    sub, common = tree.top, tree.common
    r = sub.add_parser("resources", parents=[common], help="install or show the stop-word / bad-word lists")
    rsub = r.add_subparsers(dest="action", required=True, metavar="ACTION")
    radd = rsub.add_parser("add", help="copy a word-list folder (stopwords/{lang}.json, ldnoobw/{lang}) "
                           "into the per-user cache: its lists replace the bundled ones of their "
                           "languages and add languages")
    radd.add_argument("dir", metavar="DIR")
    rshow = rsub.add_parser("show", help="which word lists textsieve would use")
    rshow.add_argument("--resources", default=None, metavar="DIR")
    r.set_defaults(func=run)
