#!/usr/bin/env python3
"""`make lint`: no import circle between the Rust modules of a crate.

    check_imports.py CRATE_SRC_DIR...

A module is a file (`a/b.rs`, or `a/mod.rs` for `a`). Module A depends on module B when A
names B's items: in a `use` declaration (braces expanded) or in a path written inline
(`crate::store::random_hex`, `super::item::HEAD`, `$crate::api::pointer::Pointer`). A path
is resolved from where it is written (`crate`, `super`, `self`) to the deepest module file
it names. A module naming its own ancestors is not counted: a parent owns its children, and
what a child takes from its parent is the parent's own items or what it re-exports. Every
other dependency counts, so two files that name each other, or a longer loop, are a circle:
each is reported with the places that close it, and the exit status is 1.
"""
import os
import re
import sys

COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
STRING = re.compile(r'"(?:\\.|[^"\\])*"')
USE = re.compile(r"\buse\s+([^;]+);")
INLINE = re.compile(r"(?<![\w:])\$?(crate|super|self)((?:::[A-Za-z_][A-Za-z0-9_]*)+)")


def modules(src):
    """{module path (tuple): file} for every .rs file under `src`."""
    found = {}
    for dirpath, _, files in os.walk(src):
        for name in files:
            if not name.endswith(".rs"):
                continue
            rel = os.path.relpath(os.path.join(dirpath, name), src)
            parts = rel[:-3].split(os.sep)
            if parts[-1] in ("mod", "lib", "main"):
                parts = parts[:-1]
            found[tuple(parts)] = os.path.join(dirpath, name)
    return found


def expand(tree):
    """`a::{b, c::{d, e}}` → ["a::b", "a::c::d", "a::c::e"]."""
    tree = tree.replace(" ", "").replace("\n", "")
    depth, start = 0, None
    for i, c in enumerate(tree):
        if c == "{":
            if depth == 0:
                start = i
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                prefix, inner = tree[:start], tree[start + 1:i]
                parts, level, last = [], 0, 0
                for j, d in enumerate(inner):
                    level += d == "{"
                    level -= d == "}"
                    if d == "," and level == 0:
                        parts.append(inner[last:j])
                        last = j + 1
                parts.append(inner[last:])
                return [p for part in parts if part for p in expand(prefix + part)]
    return [tree]


def resolve(path, here, known):
    """The deepest known module that `path` (written in module `here`) names, or None."""
    segments = path.split("::")
    if segments[0] in ("crate", "$crate"):
        base, rest = (), segments[1:]
    elif segments[0] in ("super", "self"):
        base = here
        while segments and segments[0] in ("super", "self"):
            if segments[0] == "super":
                base = base[:-1]
            segments = segments[1:]
        rest = segments
    elif here + (segments[0],) in known:
        # A child module named without `self::` (2018 paths).
        base, rest = here, segments
    else:
        return None
    target = base
    for segment in rest:
        if target + (segment,) not in known:
            break
        target = target + (segment,)
    return target


def dependencies(known):
    """{module: {dependency: [lines that name it]}}."""
    graph = {}
    for module, path in known.items():
        with open(path, encoding="utf-8") as f:
            code = STRING.sub('""', COMMENT.sub("", f.read()))
        deps = graph.setdefault(module, {})
        paths = []
        for m in USE.finditer(code):
            paths += [(p, m.group(0)) for p in expand(m.group(1))]
        paths += [(m.group(0).lstrip("$"), m.group(0)) for m in INLINE.finditer(code)]
        for p, text in paths:
            target = resolve(p, module, known)
            if target is None or target == module or module[:len(target)] == target:
                continue
            deps.setdefault(target, []).append(" ".join(text.split())[:100])
    return graph


def circles(graph):
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    sys.setrecursionlimit(10_000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def name(module):
    return "::".join(module) or "crate"


def main(srcs):
    problems = 0
    for src in srcs:
        known = modules(src)
        graph = dependencies(known)
        for component in circles(graph):
            problems += 1
            print(f"{src}: import circle: {' , '.join(name(m) for m in component)}")
            members = set(component)
            for m in component:
                for dep, lines in sorted(graph[m].items()):
                    if dep in members:
                        print(f"  {name(m)} -> {name(dep)}: {lines[0]}")
    if problems:
        return 1
    print(f"check_imports: {len(srcs)} crate(s), no import circle")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
