"""The README stays a newcomer's page, and every relative link in the docs leads somewhere."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", ROOT / "bench" / "RESULTS.md", ROOT / "examples" / "README.md",
         *sorted((ROOT / "docs").glob("*.md"))]


def without_code_blocks(text: str) -> str:
    return re.sub(r"```.*?```", "", text, flags=re.S)


def prose(text: str) -> str:
    """The text without code blocks and code spans, where brackets are code, not links."""
    return re.sub(r"`[^`\n]*`", "", without_code_blocks(text))


def anchors(page: Path) -> set[str]:
    """GitHub's anchors for a page's headings: lower case, punctuation dropped, spaces as dashes."""
    return {re.sub(r"[^\w\- ]", "", line.lstrip("#").strip().lower()).replace(" ", "-")
            for line in without_code_blocks(page.read_text()).splitlines() if re.match(r"#+ ", line)}


def test_the_readme_is_at_most_400_lines():
    assert len((ROOT / "README.md").read_text().splitlines()) <= 400, "README.md: move reference text to docs/"


def test_every_relative_link_and_anchor_resolves():
    broken = []
    for page in PAGES:
        for target in re.findall(r"\]\(([^)\s]+)\)", prose(page.read_text())):
            if re.match(r"[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            linked = (page.parent / path).resolve() if path else page
            if not linked.exists() or (anchor and linked.suffix == ".md" and anchor not in anchors(linked)):
                broken.append(f"{page.relative_to(ROOT)}: {target}")
    assert not broken, "links that lead nowhere:\n" + "\n".join(broken)
