#!/usr/bin/env python3
"""Checks that every target's imports equal its declared dependencies (Package.swift is the real module graph).

For each Swift target, the package's own modules it imports (any `import`, `@testable import`, `package import`,
...) must be exactly the package targets it lists in `dependencies`: an import that is not declared builds only by
luck of the build order, and a declared module that is never imported links code nobody uses. Prints each
difference and exits 1 if there is any. Run from the package root: `dist/check-imports.py`.
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
        imported &= set(targets)
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
    for problem in problems:
        print(f"check-imports: {problem}", file=sys.stderr)
    if problems:
        print(f"check-imports: {len(problems)} difference(s) between imports and Package.swift", file=sys.stderr)
        return 1
    print(f"check-imports: PASS ({len(targets)} targets)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
