"""The README and docs/ say only what is there: links resolve, make targets exist, and every
``smartcache`` subcommand and flag they name is in that subcommand's --help.

What counts as naming a command: inside a fenced code block (not one marked python, toml or
json) or an inline code span,
``smartcache SUB --flag …`` (also ``…/bin/smartcache`` and ``python -m smartcache.cli``),
``make TARGET`` and ``make serve ARGS="--flag …"``; and the first cell of a table row under
a heading that names `smartcache SUB` (the flag tables of docs/configuration.md). The
checker is tested on pages made to fail, so a pass means something.
"""

from __future__ import annotations

import argparse
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from smartcache.cli import build_parser

ROOT = Path(__file__).resolve().parents[1]
README_LIMIT = 12_000

FENCE = re.compile(r"^```([^\n]*)\n(.*?)^```", re.M | re.S)
NOT_SHELL = {"python", "toml", "json", "jsonl"}     # code in another language names no command
SPAN = re.compile(r"`([^`]+)`")
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$", re.M)
COMMAND = re.compile(r"(?:^|(?<=[\s/(]))(?:smartcache|python3? -m smartcache\.cli)\s+([a-z][\w-]*)(.*)", re.S)
MAKE = re.compile(r"(?:^|(?<=[\s(]))make\s+([a-z][\w-]*)((?:\s+ARGS=\"[^\"]*\")?)")
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")


@dataclass(frozen=True)
class Problem:
    page: str
    what: str

    def __str__(self) -> str:
        return f"{self.page}: {self.what}"


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: markup dropped, lower case, punctuation out, spaces to '-'.

    >>> slug("Decision quality: the learned verifier (issue 10)")
    'decision-quality-the-learned-verifier-issue-10'
    >>> slug("`smartcache serve` flags")
    'smartcache-serve-flags'
    """
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).replace("`", "")
    return re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")


def anchors(text: str) -> set[str]:
    found: set[str] = set()
    for _, title in HEADING.findall(FENCE.sub("", text)):
        base, n = slug(title), 0
        while (candidate := base if n == 0 else f"{base}-{n}") in found:
            n += 1
        found.add(candidate)
    return found


def code_pieces(text: str) -> list[str]:
    """Fenced blocks split into commands (backslash continuations joined), then inline spans."""
    pieces: list[str] = []
    for language, block in FENCE.findall(text):
        if language.strip().lower() not in NOT_SHELL:
            pieces += block.replace("\\\n", " ").splitlines()
    pieces += SPAN.findall(FENCE.sub("", text))
    return pieces


def commands(piece: str) -> list[tuple[str, str]]:
    """(subcommand or 'make:TARGET', the text its flags are in) for each command in a piece."""
    found = []
    for match in COMMAND.finditer(piece):
        rest = re.split(r"&&|;|\s#\s|\s#$", match.group(2))[0]
        found.append((match.group(1), rest))
    for match in MAKE.finditer(piece):
        found.append((f"make:{match.group(1)}", match.group(2)))
    return found


def table_flags(text: str) -> list[tuple[str, str]]:
    """(subcommand, first cell) of each table row under a heading naming `smartcache SUB`."""
    found, current = [], None
    for line in FENCE.sub("", text).splitlines():
        heading = HEADING.match(line)
        if heading:
            named = re.search(r"`smartcache ([a-z][\w-]*)`", heading.group(2))
            current = named.group(1) if named else None
        elif current and line.startswith("|") and not re.fullmatch(r"\|[\s|:-]+\|?", line):
            found.append((current, line.split("|")[1]))
    return found


def subcommand_help() -> dict[str, str]:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {name: p.format_help() for name, p in sub.choices.items()}


def make_targets(makefile: Path) -> set[str]:
    return set(re.findall(r"^([A-Za-z][\w-]*)\s*:(?!=)", makefile.read_text(encoding="utf-8"), re.M))


# A record of a removed part says, near its top, the commit its commands still run at: its
# links are checked, its commands are not (they name subcommands and flags that are gone).
RECORD = re.compile(r"[Tt]he commands on this page run at commit `([0-9a-f]{7,40})`")
RECORD_WITHIN = 15      # lines from the top


def record_commit(text: str) -> str | None:
    """The commit a record page names near its top; None for any other page."""
    found = RECORD.search("\n".join(text.splitlines()[:RECORD_WITHIN]))
    return found.group(1) if found else None


def check(page: Path, text: str, *, root: Path, helps: dict[str, str], targets: set[str]) -> list[Problem]:
    name = str(page.relative_to(root)) if page.is_relative_to(root) else page.name
    problems: list[Problem] = []
    prose = FENCE.sub("", text)
    for target in LINK.findall(SPAN.sub("", prose)):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):          # http:, https:, mailto:
            continue
        path, _, fragment = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            problems.append(Problem(name, f"link to {target}: no such file"))
        elif fragment and dest.suffix == ".md" and fragment not in anchors(dest.read_text(encoding="utf-8")):
            problems.append(Problem(name, f"link to {target}: no such heading"))
    commit = record_commit(text)
    if commit is not None:
        if not _is_commit(root, commit):
            problems.append(Problem(name, f"a record of commit {commit}: no such commit"))
        return problems
    named = [c for piece in code_pieces(text) for c in commands(piece)] + table_flags(text)
    for command, rest in named:
        if command.startswith("make:"):
            target = command[5:]
            if target not in targets:
                problems.append(Problem(name, f"make {target}: no such target in the Makefile"))
                continue
            command = "serve" if target == "serve" and rest else None      # ARGS go to smartcache serve
            if command is None:
                continue
        if command not in helps:
            problems.append(Problem(name, f"smartcache {command}: no such subcommand"))
            continue
        for flag in FLAG.findall(rest):
            if not re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", helps[command]):
                problems.append(Problem(name, f"smartcache {command} {flag}: not in its --help"))
    return problems


def _is_commit(root: Path, commit: str) -> bool:
    """Whether the repository holds ``commit`` (True where git or the history is not there: a
    source tarball's docs are checked as far as they can be)."""
    try:
        run = subprocess.run(["git", "-C", str(root), "rev-parse", "--verify", "--quiet", f"{commit}^{{commit}}"],
                             capture_output=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return True
    if run.returncode == 0:
        return True
    shallow = subprocess.run(["git", "-C", str(root), "rev-parse", "--is-shallow-repository"], capture_output=True,
                             text=True, timeout=30)
    return shallow.returncode != 0 or shallow.stdout.strip() == "true"


@pytest.fixture(scope="module")
def helps() -> dict[str, str]:
    return subcommand_help()


@pytest.mark.parametrize("page", pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_link_target_and_flag_on_the_page_exists(page, helps):
    problems = check(page, page.read_text(encoding="utf-8"), root=ROOT, helps=helps,
                     targets=make_targets(ROOT / "Makefile"))
    assert not problems, "\n".join(map(str, problems))


def test_the_readme_is_short_and_holds_the_first_session():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.encode()) <= README_LIMIT
    blocks = "\n".join(block for _, block in FENCE.findall(readme))
    assert re.search(r"^make serve\b", blocks, re.M) and re.search(r"^make test\b", blocks, re.M)
    assert "x-smartcache-status: miss" in blocks and "x-smartcache-status: hit" in blocks
    assert "from openai import OpenAI" in blocks


def test_the_pages_are_linked_from_the_readme():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    linked = {t.partition("#")[0] for t in LINK.findall(readme)}
    for page in sorted((ROOT / "docs").glob("*.md")):
        assert f"docs/{page.name}" in linked, f"docs/{page.name} is not linked from the README"


BAD_PAGE = """# A page

See [the API](http-api.md), [a gap](missing.md), [a heading](#a-page), [no heading](#nowhere)
and [no such section](other.md#nowhere).

```sh
make serve ARGS="--port 9000 --no-such-serve-flag"
make no-such-target
smartcache serve --port 1 --bogus \\
  --also-bogus
.venv/bin/smartcache eval --cases x.jsonl   # --not-checked-comment
smartcache frobnicate --x
```

Inline: `smartcache train --data d --made-up` and `smartcache.gateway.sign_session` (not a command).

```python
from smartcache import SmartCache   # python: not a command
```

## `smartcache serve` flags

| flag | what |
|---|---|
| `--port` | fine |
| `--not-a-serve-flag` | wrong |
"""


def test_the_checker_finds_what_is_wrong(tmp_path, helps):
    (tmp_path / "http-api.md").write_text("# API\n")
    (tmp_path / "other.md").write_text("# Other\n")
    page = tmp_path / "page.md"
    page.write_text(BAD_PAGE)
    found = {p.what for p in check(page, BAD_PAGE, root=tmp_path, helps=helps,
                                   targets={"serve", "test"})}
    assert found == {
        "link to missing.md: no such file",
        "link to #nowhere: no such heading",
        "link to other.md#nowhere: no such heading",
        "smartcache serve --no-such-serve-flag: not in its --help",
        "make no-such-target: no such target in the Makefile",
        "smartcache serve --bogus: not in its --help",
        "smartcache serve --also-bogus: not in its --help",
        "smartcache frobnicate: no such subcommand",
        "smartcache train --made-up: not in its --help",
        "smartcache serve --not-a-serve-flag: not in its --help",
    }


def test_a_record_page_names_a_commit_near_its_top_and_only_its_commands_go_unchecked(tmp_path, helps):
    root = Path(__file__).resolve().parent.parent
    head = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    if head.returncode != 0:
        pytest.skip("not a git checkout: the commit a record names cannot be checked")
    gone = "Run `smartcache frobnicate --x` and read [that](missing.md).\n"
    record = f"# Removed part\n\nThe commands on this page run at commit `{head.stdout.strip()}`.\n\n{gone}"
    found = {p.what for p in check(tmp_path / "r.md", record, root=root, helps=helps, targets=set())}
    assert found == {"link to missing.md: no such file"}         # links still checked, commands not
    unknown = record.replace(head.stdout.strip(), "0123456789abcdef0123")
    shallow = subprocess.run(["git", "-C", str(root), "rev-parse", "--is-shallow-repository"], capture_output=True,
                             text=True).stdout.strip() == "true"
    if not shallow:         # a shallow clone cannot tell a missing commit from one it did not fetch
        assert "a record of commit 0123456789abcdef0123: no such commit" in {
            p.what for p in check(tmp_path / "r.md", unknown, root=root, helps=helps, targets=set())}
    # A page that mentions the convention further down is a page like any other.
    quoting = "# Notes\n" + "\ntext\n" * 20 + record
    assert "smartcache frobnicate: no such subcommand" in {
        p.what for p in check(tmp_path / "q.md", quoting, root=root, helps=helps, targets=set())}
