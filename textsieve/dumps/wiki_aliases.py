"""Namespace names that mark media and category links, per Wikipedia language.

The Hugging Face `wikipedia` builder that RedPajama-1T ran (rpv1-sources spec, 4.3) removes a
wikilink whose title starts with a media prefix (`File`, `Image`, `Media` or a name of the
language's namespaces -2 (Media) and 6 (File)) and keeps a category link (`Category` or a name
of namespace 14) as the bare category name. Which names count is language data from MediaWiki,
not logic, so it lives here as data.

Source: each Wikipedia's MediaWiki namespace names and aliases for namespaces -2, 6 and 14 as
its siteinfo API reports them (`api.php?action=query&meta=siteinfo&siprop=namespaces|
namespacealiases`), in the snapshot of December 2021 that the builder's tables hold, for the
twenty languages RedPajama-1T processed (rpv1-sources spec, 4.1) and the languages of the dev
dumps (fo, ja, vi; en and simple have only the English names). A dump's own
`<siteinfo><namespaces>` gives the current namespace names but not the aliases (`画像` for ja,
`Зображення` for uk, `Hình` for vi), which pages still use; `tests/test_source_wikipedia.py`
checks that every dev dump's siteinfo names are in these tables. For a language not listed
here the names come from the dump's siteinfo alone (`wiki_clean.link_prefixes`).
"""

from __future__ import annotations

#: the names every language accepts (MediaWiki's canonical English namespace names)
MEDIA_PREFIXES = ("File", "Image", "Media")
CATEGORY_PREFIXES = ("Category",)

#: language -> extra names of namespaces -2 and 6, in the snapshot's order (the order only
#: matters for how the reference joins them into one regular expression)
MEDIA_ALIASES: dict[str, tuple[str, ...]] = {
    "en": (), "simple": (),
    "bg": ("Медия", "Файл", "Картинка"),
    "ca": ("Fitxer", "Imatge"),
    "cs": ("Soubor", "Média", "Obrázok"),
    "da": ("Billede", "Fil"),
    "de": ("Medium", "Datei", "Bild"),
    "es": ("Medio", "Archivo", "Imagen"),
    "fo": ("Miðil", "Mynd"),
    "fr": ("Média", "Fichier"),
    "hr": ("Mediji", "DT", "Slika", "F", "Datoteka"),
    "hu": ("Kép", "Fájl", "Média"),
    "it": ("Immagine",),
    "ja": ("メディア", "ファイル", "画像"),
    "nl": ("Bestand", "Afbeelding"),
    "pl": ("Plik", "Grafika"),
    "pt": ("Multimédia", "Ficheiro", "Arquivo", "Imagem"),
    "ro": ("Fişier", "Imagine", "Fișier"),
    "ru": ("Медиа", "Файл", "Изображение"),
    "sl": ("Slika", "Datoteka"),
    "sr": ("Датотека", "Medij", "Slika", "Медија", "Datoteka", "Медиј", "Medija", "Слика"),
    "sv": ("Fil", "Bild"),
    "uk": ("Медіа", "Медиа", "Файл", "Изображение", "Зображення"),
    "vi": ("Phương_tiện", "Tập_tin", "Hình", "Tập tin", "Phương tiện"),
}

#: language -> extra names of namespace 14
CATEGORY_ALIASES: dict[str, tuple[str, ...]] = {
    "en": (), "simple": (),
    "bg": ("Категория",),
    "ca": ("Categoria",),
    "cs": ("Kategorie",),
    "da": ("Kategori",),
    "de": ("Kategorie",),
    "es": ("CAT", "Categoría"),
    "fo": ("Bólkur",),
    "fr": ("Catégorie",),
    "hr": ("CT", "KT", "Kategorija"),
    "hu": ("Kategória",),
    "it": ("CAT", "Categoria"),
    "ja": ("カテゴリ",),
    "nl": ("Categorie",),
    "pl": ("Kategoria",),
    "pt": ("Categoria",),
    "ro": ("Categorie",),
    "ru": ("Категория", "К"),
    "sl": ("Kategorija",),
    "sr": ("Kategorija", "Категорија"),
    "sv": ("Kategori",),
    "uk": ("Категория", "Категорія"),
    "vi": ("Thể_loại", "Thể loại"),
}
