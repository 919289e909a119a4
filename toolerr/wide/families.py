"""Word families of single tools' failures (Go, git, Maven, Roo Code): fixable evidence for
the last tier of classification (toolerr.wide.rules), looked up only when the tool's marker
occurs in the text. Data only, like toolerr.wide.words.
"""

from __future__ import annotations

# Words of one tool's failures, looked up only when the tool's marker occurs in the text
# (fewer scans of every failure; the same answers for the texts these tools print).
FIXABLE_FAMILIES: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        ".go:",
        (
            "undefined: ",
            "declared and not used",
            "imported and not used",
            "syntax error: ",
            "panic: runtime error:",
        ),
    ),
    # Roo Code's diff tool
    (
        "iff",
        (
            "unable to apply all diff parts",
            "Unable to apply diff to file",
            "Diff block is malformed",
        ),
    ),
    (
        "git",
        (
            "(non-fast-forward)",
            "Updates were rejected because",
            "non-fast-forward updates were rejected",
            "not a git repository",
            "Not a git repository",
            "不是 git 仓库",
            "unknown revision or path not in the working tree",
            "ignored by one of your .gitignore files",
            "repository rule violations",  # GitHub's push protection
            "has no upstream branch",  # a push before `--set-upstream`
            # a push the remote refused because it holds commits the branch lacks (round 12:
            # ` ! [rejected]  main -> main (fetch first)`)
            "(fetch first)",
        ),
    ),
    # Maven: javac's errors, surefire's failed tests
    (
        "[ERROR]",
        (
            "cannot find symbol",
            "COMPILATION ERROR",
            "Compilation failure",
            "There are test failures",
        ),
    ),
)
