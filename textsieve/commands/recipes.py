"""`textsieve recipes`: the bundled selection recipes and the rule language (`select` is a stage)."""

from __future__ import annotations

import argparse

from textsieve.commands.tree import CommandTree


def run_recipes(args: argparse.Namespace) -> int:
    from textsieve.recipes.language import bundled_recipes, bundled_text

    if args.name:
        print(bundled_text(args.name), end="")
        return 0
    recipes = bundled_recipes()
    width = max(map(len, recipes), default=0)  # names are not all short (rpv2-card-gopher)
    for name, about in recipes.items():
        print(f"{name:<{width}}  {about}")
    return 0


def register(tree: CommandTree) -> None:
    from textsieve.recipes import language as recipe_mod

    r = tree.parser("recipes", help="list bundled selection recipes (rule language in --help)",
                    formatter_class=argparse.RawDescriptionHelpFormatter,
                    description="Bundled recipes for `textsieve select --recipe NAME`; give a NAME to print its "
                                "YAML (copy it to start your own).\n\nRecipe file:\n  name: my-recipe\n"
                                "  models: {quality: model.json}   # optional learned filters\n  rules:\n"
                                "    word_count: \"rps_doc_word_count between 50 and 100000\"\n"
                                "    short_lines: \"line: rps_lines_num_words >= 5\"\n\n"
                                + recipe_mod.__doc__.split("\n", 2)[2])
    r.add_argument("name", nargs="?", default=None, help="print this bundled recipe")
    r.set_defaults(func=run_recipes)
