#!/usr/bin/env python3
"""Checks that every target's imports equal its declared dependencies (Package.swift is the real module graph).

For each Swift target, the package's own modules it imports (any `import`, `@testable import`, `package import`,
...) must be exactly the package targets it lists in `dependencies`: an import that is not declared builds only by
luck of the build order, and a declared module that is never imported links code nobody uses. Prints each
difference and exits 1 if there is any. Run from the package root: `dist/check-imports.py`.

It also checks that a few test targets link no more than they should, through every dependency of their
dependencies (`LINKS_ONLY`): the model's tests link no store, TLS, server or PostgreSQL code.
"""
import json
import os
import re
import subprocess
import sys

IMPORT = re.compile(
    r"^\s*(?:@testable\s+|@_implementationOnly\s+|@preconcurrency\s+|(?:public|package|internal|private|fileprivate)\s+)*"
    r"import\s+(?:(?:struct|class|enum|func|var|let|protocol|typealias)\s+)?([A-Za-z_][A-Za-z0-9_]*)",
    re.MULTILINE)

# Test targets whose whole dependency graph is fixed: what they may link, through any path.
LINKS_ONLY = {
    "MemoModelTests": {"MemoModel", "MemoDiff", "MemoTestSupport"},
}


def dependencies(target):
    """The package targets `target` lists in `dependencies`."""
    names = set()
    for dependency in target.get("dependencies", []):
        for kind in ("byName", "target"):
            if kind in dependency:
                names.add(dependency[kind][0])
    return names


def main() -> int:
    package = json.loads(subprocess.run(
        ["swift", "package", "dump-package"], check=True, capture_output=True, text=True).stdout)
    targets = {target["name"]: target for target in package["targets"]}
    problems = []
    for name, target in sorted(targets.items()):
        if target["type"] in ("system", "binary", "plugin", "macro"):
            continue
        folder = target.get("path") or os.path.join("Tests" if target["type"] == "test" else "Sources", name)
        imported = set()
        for root, _, files in os.walk(folder):
            for file in files:
                if file.endswith(".swift"):
                    with open(os.path.join(root, file), encoding="utf-8") as source:
                        imported.update(IMPORT.findall(source.read()))
        # A target's module name is its name with each character Swift cannot use in one (a dash) as `_`.
        modules = {target_name.replace("-", "_"): target_name for target_name in targets}
        imported = {modules[module] for module in imported if module in modules}
        imported.discard(name)
        declared = set()
        for dependency in target.get("dependencies", []):
            for kind in ("byName", "target"):
                if kind in dependency and dependency[kind][0] in targets:
                    declared.add(dependency[kind][0])
        for module in sorted(imported - declared):
            problems.append(f"{name} imports {module} without declaring it")
        for module in sorted(declared - imported):
            # A system library target is used through the module its wrapper imports, or by the linker only.
            if targets[module]["type"] == "system":
                continue
            problems.append(f"{name} declares {module} and never imports it")
    for name, allowed in sorted(LINKS_ONLY.items()):
        linked, waiting = set(), [name]
        while waiting:
            for module in dependencies(targets[waiting.pop()]) & set(targets):
                if module not in linked:
                    linked.add(module)
                    waiting.append(module)
        for module in sorted(linked - allowed):
            problems.append(f"{name} links {module} (it may link only {', '.join(sorted(allowed))})")
    for problem in problems:
        print(f"check-imports: {problem}", file=sys.stderr)
    if problems:
        print(f"check-imports: {len(problems)} difference(s) between imports and Package.swift", file=sys.stderr)
        return 1
    print(f"check-imports: PASS ({len(targets)} targets)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
