#!/usr/bin/env python3
"""Check the links of README.md and docs/*.md: every relative link names a file
of the repository and, after '#', a heading of that file (GitHub's anchors);
no link leaves the repository. Prints each problem; exits 1 if there is one."""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def slug(heading):
    h = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return h.replace(" ", "-")


def lines_outside_code(text):
    fenced = False
    for n, line in enumerate(text.splitlines(), 1):
        if line.startswith("```"):
            fenced = not fenced
            continue
        if not fenced:
            yield n, line


def anchors(path):
    with open(path) as f:
        return {slug(l.lstrip("#")) for _, l in lines_outside_code(f.read()) if l.startswith("#")}


def main():
    files = ["README.md"] + sorted(
        os.path.join("docs", f) for f in os.listdir(os.path.join(ROOT, "docs")) if f.endswith(".md"))
    problems = 0
    for f in files:
        with open(os.path.join(ROOT, f)) as fh:
            text = fh.read()
        for n, line in lines_outside_code(text):
            for link in re.findall(r"\]\(([^)\s]+)\)", line):
                target, _, frag = link.partition("#")
                if re.match(r"[a-z][a-z0-9+.-]*:", link) or link.startswith("//"):
                    msg = "links outside the repository"
                elif target and not os.path.exists(os.path.join(ROOT, os.path.dirname(f), target)):
                    msg = "names a file that does not exist"
                elif frag and os.path.splitext(target or f)[1] == ".md" and frag not in anchors(
                        os.path.join(ROOT, os.path.dirname(f), target) if target else os.path.join(ROOT, f)):
                    msg = "names a heading that does not exist"
                else:
                    continue
                print(f"{f}:{n}: {link}: {msg}")
                problems += 1
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
