"""The README and docs/ stay true to the repository: the front page fits its 150 lines, every link and every
path they name exists, every `stormatrix ...` command line they show parses with the real CLI (commands,
subcommands and options), every `[section] key` they name is a key the code reads, the matrix reference is
the one the code generates, architecture.md stays short, and nothing sends a reader to ../shared.

Each check is tried on a bad example too, so a check that passed everything would fail here.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from functools import lru_cache
from pathlib import Path

import pytest

import paths

ROOT = paths.ROOT
DOCS = sorted([ROOT / "README.md", ROOT / "SECURITY.md", ROOT / "benchmarks" / "RESULTS.md",
               ROOT / "examples" / "README.md", *(ROOT / "docs").glob("*.md")])
#: the folders a path in the docs may start with (the repository's own)
TOP = ("harness", "analysis", "linux-host", "windows", "tests", "benchmarks", "docs", "scripts", "examples")
PATH_RE = re.compile(r"(?<![\w./~-])((?:%s)/[\w./-]*[\w/])" % "|".join(re.escape(t) for t in TOP))
LINK_RE = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
CODE_RE = re.compile(r"`([^`\n]+)`")
FENCE_RE = re.compile(r"```[a-z]*\n(.*?)```", re.S)
COMMAND_RE = re.compile(r"(?:^|[\s`(])stormatrix((?:\s+[^\s#`|;)]+)*)")
KEY_RE = re.compile(r"\[(\w+)\] ([a-z_][a-z0-9_]*)")


def doc_id(path: Path) -> str:
    return str(path.relative_to(ROOT))


# --- links and paths ---------------------------------------------------------------------------------------

def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped (not - or _), spaces to hyphens."""
    text = re.sub(r"[`*]", "", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    text = FENCE_RE.sub("", path.read_text())
    return {slug(m.group(1)) for m in re.finditer(r"^#+ (.+)$", text, re.M)}


def broken_links(path: Path) -> list[str]:
    bad = []
    for target in LINK_RE.findall(FENCE_RE.sub("", path.read_text())):
        if re.match(r"[a-z]+:", target):  # a URL: not ours to check
            continue
        file, _, anchor = target.partition("#")
        dest = (path.parent / file).resolve() if file else path
        if not dest.exists():
            bad.append(f"{target} (no such file)")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            bad.append(f"{target} (no heading #{anchor} in {dest.name})")
    return bad


def missing_paths(path: Path) -> list[str]:
    refs = {m.group(1).rstrip(".") for m in PATH_RE.finditer(path.read_text())}
    return sorted(r for r in refs if not (ROOT / r).exists() and not any(c in r for c in "*<>"))


@pytest.mark.parametrize("path", DOCS, ids=doc_id)
def test_every_link_resolves(path: Path) -> None:
    assert broken_links(path) == []


@pytest.mark.parametrize("path", DOCS, ids=doc_id)
def test_every_path_named_exists(path: Path) -> None:
    assert missing_paths(path) == []


def test_the_link_and_path_checks_find_what_is_broken(tmp_path: Path) -> None:
    doc = tmp_path / "x.md"
    doc.write_text("# Top\n[a](x.md#top) [b](nope.md) [c](x.md#elsewhere) [d](https://example.org/y)\n"
                   "see `harness/no_such_module.py` and harness/runner.py\n")
    assert broken_links(doc) == ["nope.md (no such file)", "x.md#elsewhere (no heading #elsewhere in x.md)"]
    assert missing_paths(doc) == ["harness/no_such_module.py"]
    assert slug("The demo's verdicts: rounds + repeats") == "the-demos-verdicts-rounds--repeats"


# --- command lines -----------------------------------------------------------------------------------------

@lru_cache(maxsize=1)
def parser() -> argparse.ArgumentParser:
    from stormatrix.cli import build_parser

    return build_parser()


def subparsers(p: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in p._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def options(p: argparse.ArgumentParser) -> set[str]:
    return {s for a in p._actions for s in a.option_strings}


def command_problem(words: list[str]) -> str | None:
    """What is wrong with ``stormatrix WORDS`` as the CLI reads it: a command, subcommand or option it lacks."""
    p, said = parser(), ["stormatrix"]
    while words and subparsers(p):
        choice = words[0]
        if choice.startswith("-"):
            break
        names = [c for c in choice.split("|")]  # `suite plan|run`: each alternative is a command
        unknown = [n for n in names if n not in subparsers(p)]
        if unknown:
            return f"{' '.join(said)} has no command {unknown[0]!r}"
        p, said, words = subparsers(p)[names[0]], said + [names[0]], words[1:]
    for word in words:
        for opt in re.findall(r"^(--?[a-zA-Z][\w-]*)", word.strip("[]()")):
            if opt not in options(p):
                return f"{' '.join(said)} has no option {opt}"
    return None


def command_lines(path: Path) -> list[list[str]]:
    """The `stormatrix ...` command lines of a doc: in code spans and code blocks (up to a comment)."""
    text = path.read_text()
    blocks = [re.sub(r"\\\n\s*", " ", block) for block in FENCE_RE.findall(text)]  # a line continued by \\
    spans = [line.split("  #")[0].split(" # ")[0] for block in blocks for line in block.splitlines()]
    spans += CODE_RE.findall(FENCE_RE.sub("", text))
    found = []
    for span in spans:
        for m in COMMAND_RE.finditer(span):
            words = m.group(1).split()
            if words and re.match(r"^[a-z]", words[0]):
                found.append(words)
    return found


EXAMPLES = sorted((ROOT / "examples").rglob("*.toml"))


def example_command_lines(path: Path) -> list[list[str]]:
    """The command lines an example file's comments give (``#   stormatrix ...``)."""
    return [m.group(1).split("  #")[0].split() for m in re.finditer(r"^#\s+stormatrix\s+(.+)$", path.read_text(), re.M)]


@pytest.mark.parametrize("path", DOCS + EXAMPLES, ids=doc_id)
def test_every_command_line_shown_is_one_the_cli_has(path: Path) -> None:
    lines = example_command_lines(path) if path.suffix == ".toml" else command_lines(path)
    problems = [f"stormatrix {' '.join(w)}: {p}" for w in lines if (p := command_problem(w))]
    assert problems == []


def test_the_command_check_finds_a_command_or_option_the_cli_lacks() -> None:
    assert command_problem(["suite", "plan", "x.toml", "--discover"]) is None
    assert command_problem(["fleet", "plan|deploy|destroy", "f.toml", "-o", "d"]) is None
    assert command_problem(["sweet", "plan"]) == "stormatrix has no command 'sweet'"
    assert command_problem(["suite", "plan|walk", "x"]) == "stormatrix suite has no command 'walk'"
    assert command_problem(["report", "r", "--workbook", "x"]) == "stormatrix report has no option --workbook"


def test_what_the_docs_say_of_suite_help_is_what_it_prints() -> None:
    out = subprocess.run([sys.executable, "-m", "stormatrix", "suite", "run", "--help"], capture_output=True,
                         text=True, timeout=120).stdout
    assert "SUITE_FILE" in out and "suite file" in out and "matrix file with a [suite]" not in out


# --- keys ----------------------------------------------------------------------------------------------------

@lru_cache(maxsize=1)
def all_keys() -> dict[str, set[str]]:
    sys.path.insert(0, str(ROOT / "scripts"))
    import matrix_keys

    keys: dict[str, set[str]] = {}
    for title, section in matrix_keys.sections():
        name = title.split("]")[0].strip("[")
        keys.setdefault(name, set()).update(section.fields)
    return keys


def unknown_keys(text: str) -> list[str]:
    keys = all_keys()
    return sorted({f"[{s}] {k}" for s, k in KEY_RE.findall(text) if s in keys and k not in keys[s]})


@pytest.mark.parametrize("path", DOCS, ids=doc_id)
def test_every_section_key_named_is_one_the_code_reads(path: Path) -> None:
    assert unknown_keys(path.read_text()) == []


def test_the_key_check_finds_a_key_no_section_has() -> None:
    assert unknown_keys("set `[proxmox] pin_cpus` and `[run] repeats`") == []
    assert unknown_keys("set `[proxmox] pin_cpu` and `[qemu] boot_ahaed`") == ["[proxmox] pin_cpu", "[qemu] boot_ahaed"]


def test_the_matrix_reference_is_the_one_the_code_generates() -> None:
    sys.path.insert(0, str(ROOT / "scripts"))
    import matrix_keys

    assert matrix_keys.embedded((ROOT / "docs" / "matrix.md").read_text()) == matrix_keys.tables(), \
        "docs/matrix.md's key tables differ from the code: run `.venv/bin/python scripts/matrix_keys.py --write`"


# --- the front page, architecture.md, ../shared ---------------------------------------------------------------

def test_the_readme_front_page_is_at_most_150_lines() -> None:
    assert len((ROOT / "README.md").read_text().splitlines()) <= 150


def test_architecture_is_at_most_1200_words_and_starts_where_to_start_reading() -> None:
    text = (ROOT / "docs" / "architecture.md").read_text()
    assert len(text.split()) <= 1200
    headings = re.findall(r"^## (.+)$", text, re.M)
    assert headings[:2] == ["Where to start reading", "Add a backend"], headings


def product_files() -> list[Path]:
    """What a user's clone holds besides the tests (which may read ../shared): every text file git tracks."""
    listed = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, timeout=60).stdout.split()
    return [ROOT / f for f in listed if not f.startswith("tests/") and (ROOT / f).is_file()
            and (ROOT / f).suffix in (".py", ".md", ".toml", ".ps1", ".psm1", ".psd1", ".sh", ".txt", "")]


def test_nothing_in_the_product_sends_a_reader_to_shared() -> None:
    bad = [str(p.relative_to(ROOT)) for p in product_files() if "../shared" in p.read_text(errors="replace")]
    assert bad == []
