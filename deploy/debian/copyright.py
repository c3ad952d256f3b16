#!/usr/bin/env python3
"""Writes the package's /usr/share/doc/nvr-node/copyright (DEP-5) to stdout.

Usage, from the repository's root: python3 deploy/debian/copyright.py TRIPLE

It names what the package ships: the node, its classifier and UI (ours),
every crate linked into the nvr-node and nvr-classify binaries for TRIPLE,
the C that ring and libsqlite3-sys compile in, and the model. The crates are
those of `cargo tree -e normal,no-proc-macro` for each binary with its
default features (as deploy/package.sh builds them): no build or dev
dependencies, and no proc-macros, which run in the compiler and are not
linked. cargo metadata gives each crate's authors, licence and folder.

DEP-5's Files patterns are paths in the source the package is built from. A
registry crate has none in the checkout (cargo unpacks it into its own cache),
so it is named by the folder `cargo vendor --versioned-dirs vendor` gives it,
vendor/<name>-<version>/: that source made self-contained, the layout of
Debian's and Ubuntu's vendored-crate packages, versioned because two versions
of some crates are linked. Our patched crates keep their real vendor/ paths.
"""

import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OURS = ("nvr-node", "nvr-base", "nvr-classify", "nvr-classify-core")
BINARIES = ("nvr-node", "nvr-classify")
TRIPLES = (
    "x86_64-unknown-linux-gnu",
    "aarch64-unknown-linux-musl",
    "armv7-unknown-linux-gnueabihf",
)
APACHE = "Apache-2.0"
# A licence offered beside others is taken in this order: Apache-2.0 needs no
# text of its own (Debian's common-licenses has it), MIT is the usual other.
PREFERRED = (APACHE, "MIT", "ISC", "BSD-3-Clause", "BSD-2-Clause", "Zlib", "Unlicense")
# Where a crate keeps each licence's text, and words that text must hold
# (so that a README-like COPYING is not taken for the licence).
TEXT_FILES = {
    "MIT": (("LICENSE-MIT", "LICENSE-MIT.md", "LICENSE-MIT.txt", "LICENSE", "LICENSE.txt", "LICENSE.md"),
            "Permission is hereby granted"),
    "ISC": (("LICENSE-ISC", "LICENSE", "LICENSE.txt", "LICENSE.md"), "Permission to use, copy, modify"),
    "BSD-3-Clause": (("LICENSE-BSD", "LICENSE", "LICENSE.txt", "LICENSE.md"),
                     "Redistribution and use in source and binary forms"),
    "BSD-2-Clause": (("LICENSE-BSD", "LICENSE", "LICENSE.txt", "LICENSE.md"),
                     "Redistribution and use in source and binary forms"),
    "Zlib": (("LICENSE-ZLIB", "LICENSE-Zlib", "LICENSE", "LICENSE.txt", "LICENSE.md"), "provided 'as-is'"),
}


def cargo(*args):
    return subprocess.run(["cargo", *args], cwd=ROOT, check=True, capture_output=True, text=True).stdout


def linked_crates(triple):
    """{(name, version): set of our binaries linking it}."""
    linked = {}
    for binary in BINARIES:
        out = cargo("tree", "--locked", "-e", "normal,no-proc-macro", "--target", triple,
                    "-p", binary, "--prefix", "none", "--no-dedupe", "-f", "{p}")
        for line in out.splitlines():
            if line.strip():
                name, version = line.split()[:2]
                linked.setdefault((name, version.lstrip("v")), set()).add(binary)
    return linked


def packages(triple):
    meta = json.loads(cargo("metadata", "--locked", "--format-version", "1", "--filter-platform", triple))
    return {(p["name"], p["version"]): p for p in meta["packages"]}


def licence_ids(expression):
    """The choice a crate offers: a list of alternatives, each a list of ids all applying."""
    expression = expression.replace("/", " OR ")
    if "(" in expression:
        raise SystemExit(f"copyright.py: cannot read the licence expression {expression!r}")
    return [[i.strip() for i in alt.split(" AND ")] for alt in expression.split(" OR ")]


def choose(expression):
    alternatives = licence_ids(expression)
    for wanted in PREFERRED:
        for alt in alternatives:
            if alt == [wanted]:
                return alt
    return alternatives[0]


# A full Apache-2.0 text inside another licence's file (libm's says its contributors
# agree to both): Debian has it in common-licenses, and lintian refuses it inline.
EMBEDDED_APACHE = re.compile(
    r"^[ \t]*Apache License[ \t]*\n[ \t]*Version 2\.0, January 2004\n.*?END OF TERMS AND CONDITIONS[ \t]*\n"
    r"(?:\s*APPENDIX: How to apply the Apache License.*?limitations under the License\.[ \t]*\n)?",
    re.M | re.S)


def licence_text(pkg, licence, siblings):
    """The text in the crate's folder or, for a crate that ships none (nom-language), in that
    of a linked crate from the same repository with the same licence (nom): (text, whose)."""
    names, words = TEXT_FILES.get(licence, ((), None))
    for candidate in [pkg] + [s for s in siblings if s["repository"] == pkg["repository"] and s is not pkg
                              and s["license"] == pkg["license"] and pkg["repository"]]:
        for name in names:
            path = Path(candidate["manifest_path"]).parent / name
            if path.is_file():
                text = path.read_text(encoding="utf-8")
                if words in text:
                    text = EMBEDDED_APACHE.sub(
                        "[The Apache License, Version 2.0: on Debian systems, its complete text is in\n"
                        " /usr/share/common-licenses/Apache-2.0.]\n", text)
                    return text, candidate["name"]
    raise SystemExit(f"copyright.py: no {licence} text for {pkg['name']} {pkg['version']}; add its file to TEXT_FILES")


def field(name, lines):
    """A field whose value is `lines` (a list): first on the field's line, the rest continued."""
    return [f"{name}: {lines[0]}".rstrip()] + [f" {line}" for line in lines[1:]]


def body(text):
    """A licence text as DEP-5 continuation lines: a leading space, blank lines as ' .'."""
    lines = [line.rstrip().replace("\t", "        ") for line in text.strip("\n").splitlines()]
    return [f" {line}" if line.strip() else " ." for line in lines]


class Licences:
    """The stand-alone License paragraphs: one per distinct text, named MIT, or MIT~crate
    when crates' MIT texts differ (by their copyright lines, mostly)."""

    def __init__(self):
        self.texts = {}  # licence id -> {text: [crates]}

    def add(self, licence, text, crate):
        self.texts.setdefault(licence, {}).setdefault(text.strip(), []).append(crate)

    def name(self, licence, text):
        by_text = self.texts[licence]
        if len(by_text) == 1:
            return licence
        return f"{licence}~{min(by_text[text.strip()])}"

    def paragraphs(self):
        out = {APACHE: [f"License: {APACHE}",
                        " Licensed under the Apache License, Version 2.0 (the \"License\");",
                        " you may not use this file except in compliance with the License.",
                        " .",
                        " On Debian systems, the complete text of the Apache License, Version 2.0,",
                        " can be found in \"/usr/share/common-licenses/Apache-2.0\"."]}
        for licence, by_text in self.texts.items():
            for text in by_text:
                out[self.name(licence, text)] = [f"License: {self.name(licence, text)}"] + body(text)
        return [out[name] for name in sorted(out)]


def source_folder(pkg):
    """The crate's folder in the tree it is built from: a path crate's own (vendor/tiny_http),
    a registry crate's the one `cargo vendor --versioned-dirs vendor` gives it."""
    folder = Path(pkg["manifest_path"]).parent
    if pkg["source"] is None:
        return folder.relative_to(ROOT).as_posix()
    return f"vendor/{pkg['name']}-{pkg['version']}"


def copyright_of(pkg):
    authors = pkg["authors"] or [f"the {pkg['name']} authors"]
    if pkg["source"] is None and (Path(pkg["manifest_path"]).parent / "PATCHES.md").is_file():
        authors = authors + ["the nvr-node authors (the changes in PATCHES.md)"]
    return authors


def holders(folders):
    """The copyright holders named at the top of the C and assembly files in folders."""
    found = set()
    pattern = re.compile(r"Copyright\s+(?:\(c\)\s*)?(?:[0-9]{4}(?:\s*-\s*[0-9]{4})?,?\s*)*(.+)")
    for folder in folders:
        for path in sorted(folder.rglob("*")):
            if path.suffix not in (".c", ".h", ".S", ".inl", ".pl"):
                continue
            head = path.read_text(encoding="utf-8", errors="replace")[:2000]
            for match in pattern.finditer(head):
                holder = match.group(1).strip(" */").rstrip(".")
                holder = re.sub(r"\.?\s*All [Rr]ights [Rr]eserved$", "", holder).strip()
                if holder:
                    found.add(holder)
    return sorted(found)


def licence_line(parts):
    """The License field of a Files paragraph, written once every crate's texts are in (a
    text's short name depends on the others): parts are names or (licence id, text) pairs."""
    return lambda names: "License: " + " and ".join(p if isinstance(p, str) else names.name(*p) for p in parts)


def ring_paragraphs(pkg, files, licences, linked):
    """ring: its own code under ISC; C and assembly from BoringSSL under Apache-2.0 or ISC,
    each file saying which at its top (ring's LICENSE); fiat-crypto's; once_cell's."""
    folder = Path(pkg["manifest_path"]).parent
    own = (folder / "LICENSE-other-bits").read_text(encoding="utf-8")
    licences.add("ISC", own, "ring")
    owner = [line.removeprefix("Copyright ").rstrip(".") for line in own.splitlines() if line.startswith("Copyright ")]
    c_dirs = [d for d in ("crypto", "include", "pregenerated") if (folder / d).is_dir()]
    return [
        field("Files", [f"{files}/*"]) + field("Copyright", owner or copyright_of(pkg))
        + [licence_line([("ISC", own)]),
           f"Comment: ring {pkg['version']} ({pkg['license']}); its own code is under ISC",
           f" (LICENSE-other-bits). {linked}"],
        field("Files", [f"{files}/{d}/*" for d in c_dirs])
        + field("Copyright", holders([folder / d for d in c_dirs]))
        + [licence_line([APACHE, ("ISC", own)]),
           "Comment: C and assembly from BoringSSL (and OpenSSL through it), compiled into the",
           " binaries. Per ring's LICENSE, code taken from BoringSSL under Apache-2.0 is under it",
           " and the rest under ISC, each file saying which at its top (the ISC files with",
           " the same permission notice as ring's own, under their own copyright line)."],
        field("Files", [f"{files}/third_party/fiat/*"])
        + ["Copyright: 2015-2020 the fiat-crypto authors", f"License: {APACHE}"],
        field("Files", [f"{files}/src/polyfill/once_cell/*"])
        + ["Copyright: the once_cell authors", f"License: {APACHE}",
           "Comment: Offered under MIT OR Apache-2.0; distributed here under Apache-2.0."],
    ]


def sqlite_paragraph(pkg, files, licences):
    """libsqlite3-sys's `bundled` SQLite amalgamation, compiled into the node."""
    header = (Path(pkg["manifest_path"]).parent / "sqlite3" / "sqlite3.h").read_text(encoding="utf-8")
    version = re.search(r'#define SQLITE_VERSION\s+"([^"]+)"', header).group(1)
    blessing = re.search(r"The author disclaims copyright.*?taking more than you give\.", header, re.S).group(0)
    licences.add("public-domain", "\n".join(line.lstrip("*").strip() for line in blessing.splitlines()), "SQLite")
    return (field("Files", [f"{files}/sqlite3/*"])
            + ["Copyright: D. Richard Hipp and the SQLite authors, who disclaim it",
               "License: public-domain",
               f"Comment: SQLite {version}, the amalgamation libsqlite3-sys's `bundled` feature",
               " compiles into the node."])


def model_paragraph():
    """The model's origin, as deploy/model/install-model.sh writes it to SOURCE."""
    script = (ROOT / "deploy/model/install-model.sh").read_text(encoding="utf-8")
    variables = {}
    for name, value in re.findall(r"^(\w+)=([^\s\"]+)$", script, re.M):
        variables[name] = re.sub(r"\$(\w+)", lambda m: variables.get(m.group(1), m.group(0)), value)
    text = re.search(r'^source_text="(.*?)"$', script, re.M | re.S).group(1)
    text = re.sub(r"\$(\w+)", lambda m: variables[m.group(1)], text)
    return (["Files: usr/share/nvr-node/model/*",
             "Copyright: Google LLC",
             f"License: {APACHE}",
             "Comment: SSD MobileNetV2 trained on COCO (quantised), with its labels."]
            + body(text))


def crate_paragraphs(pkg, binaries, licences, siblings):
    files = source_folder(pkg)
    linked = "Linked into " + " and ".join(sorted(binaries)) + "."
    if pkg["name"] == "ring":
        return ring_paragraphs(pkg, files, licences, linked)
    chosen = choose(pkg["license"])
    parts = []
    borrowed = ""
    for licence_id in chosen:
        if licence_id == APACHE:
            parts.append(APACHE)
            continue
        text, whose = licence_text(pkg, licence_id, siblings)
        if whose != pkg["name"]:
            borrowed = f" The crate ships no licence file; the text is {whose}'s, from the same repository."
        licences.add(licence_id, text, pkg["name"])
        parts.append((licence_id, text))
    if len(licence_ids(pkg["license"])) == 1:
        comment = f"Under {pkg['license']}. {linked}{borrowed}"
    else:
        comment = f"Offered under {pkg['license']}; distributed here under {' and '.join(chosen)}. {linked}{borrowed}"
    out = [field("Files", [f"{files}/*"]) + field("Copyright", copyright_of(pkg))
           + [licence_line(parts), f"Comment: {comment}"]]
    if pkg["name"] == "libsqlite3-sys":
        out.append(sqlite_paragraph(pkg, files, licences))
    return out


def render(paragraph, licences):
    return [line(licences) if callable(line) else line for line in paragraph]


def main():
    if len(sys.argv) != 2 or sys.argv[1] not in TRIPLES:
        raise SystemExit(f"usage: python3 deploy/debian/copyright.py {{{'|'.join(TRIPLES)}}}")
    triple = sys.argv[1]
    linked = linked_crates(triple)
    meta = packages(triple)
    missing = sorted(set(linked) - set(meta))
    if missing:
        raise SystemExit(f"copyright.py: cargo metadata does not know {missing}")
    licences = Licences()
    items = []
    for key in sorted(linked):
        if key[0] not in OURS:
            items.extend(crate_paragraphs(meta[key], linked[key], licences, [meta[k] for k in sorted(linked)]))
    paragraphs = [
        ["Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/",
         "Upstream-Name: nvr-node",
         f"Comment: Generated by deploy/debian/copyright.py for {triple}.",
         " The crates are those linked into nvr-node and nvr-classify (cargo tree",
         " -e normal,no-proc-macro: no build or dev dependencies, no proc-macros). Cargo",
         " fetches the crates.io ones, pinned by Cargo.lock, into its registry; each is named",
         " here by the folder `cargo vendor --versioned-dirs vendor` puts it in, which is",
         " that tree made self-contained. vendor/tiny_http and vendor/tract-tflite are",
         " patched copies in the repository. A crate offered under Apache-2.0 among other",
         " licences is distributed here under Apache-2.0."],
        ["Files: *",
         "Copyright: the nvr-node authors",
         f"License: {APACHE}",
         "Comment: The node (nvr-node, nvr-base), the classifier (nvr-classify,",
         " nvr-classify-core), the web UI (www/, compiled into the node) and the",
         " service files. Offered under MIT OR Apache-2.0; distributed here under Apache-2.0."],
        model_paragraph(),
    ]
    paragraphs += [render(item, licences) for item in items]
    paragraphs += licences.paragraphs()
    sys.stdout.write("\n\n".join("\n".join(p) for p in paragraphs) + "\n")


if __name__ == "__main__":
    main()
