#!/usr/bin/env python3
"""Module dependency graph of a Rust crate, from its `crate::` paths.

    scripts/modgraph.py [CRATE_SRC_DIR] [--depth N] [--check]

Every `crate::a::b` path in a module's source (use lines and inline paths,
comments and doc comments excluded) is an edge from that module to `a::b`,
cut to N path components (default 1: top-level modules; `daemon/proto.rs`
counts as `daemon::proto` at depth 2, `daemon` at depth 1). Prints the edges
one per line (`from -> to`), then the import cycles found (strongly
connected components of more than one module). `--check` exits 1 when there
is a cycle.
"""
import pathlib
import re
import sys


def module_of(src: pathlib.Path, path: pathlib.Path, depth: int) -> str:
    parts = list(path.relative_to(src).with_suffix("").parts)
    if parts[-1] in ("mod", "lib", "main"):
        parts = parts[:-1]
    return "::".join(parts[:depth]) or "crate"


def strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return "\n".join(line.split("//", 1)[0] for line in text.splitlines())


def edges(src: pathlib.Path, depth: int):
    out = set()
    for path in sorted(src.rglob("*.rs")):
        me = module_of(src, path, depth)
        text = strip_comments(path.read_text())
        parent = path.relative_to(src).with_suffix("").parts[:-1]
        targets = []
        # crate::a::b, crate::{a, b::c}
        for m in re.finditer(r"\bcrate::(\{[^}]*\}|[A-Za-z_][\w:]*)", text):
            body = m.group(1)
            items = [i.strip() for i in body.strip("{}").split(",")] if body.startswith("{") else [body]
            targets += [i.split("::") for i in items if i]
        # super::x: the parent module (`super::{a, b}` names items or
        # modules of the parent; a non-module item is an edge to the parent)
        for m in re.finditer(r"\bsuper::(\{[^}]*\}|[A-Za-z_][\w:]*)", text):
            body = m.group(1)
            items = [i.strip() for i in body.strip("{}").split(",")] if body.startswith("{") else [body]
            if path.stem == "mod" or not parent and path.stem in ("lib", "main"):
                continue  # super of a crate root / dir module: outside, skip
            targets += [list(parent) + i.split("::") for i in items if i]
        # child::x written from a directory module's mod.rs (relative paths)
        if path.stem == "mod":
            for child in sorted(p.stem for p in path.parent.glob("*.rs") if p.stem != "mod"):
                if re.search(r"(?<![\w:])" + child + r"::", text):
                    targets.append(list(parent) + [child])
        for t in targets:
            mods = []
            for p in t:
                if not p or not (p[0].islower() or p[0] == "_") or p in ("self",):
                    break
                mods.append(p)
            # keep only components that are modules (files or directories)
            real = []
            for p in mods:
                cand = src.joinpath(*real, p)
                if cand.with_suffix(".rs").exists() or cand.is_dir():
                    real.append(p)
                else:
                    break
            if not real:
                continue
            to = "::".join(real[:depth])
            if to != me:
                out.add((me, to))
    return sorted(out)


def cycles(es):
    graph = {}
    for a, b in es:
        graph.setdefault(a, set()).add(b)
        graph.setdefault(b, set())
    index, low, stack, on, sccs, n = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = n[0]
        n[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                sccs.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sccs


def main():
    args = sys.argv[1:]
    depth = 1
    if "--depth" in args:
        i = args.index("--depth")
        depth = int(args[i + 1])
        del args[i : i + 2]
    check = "--check" in args
    args = [a for a in args if a != "--check"]
    src = pathlib.Path(args[0] if args else "host-driver/src")
    es = edges(src, depth)
    for a, b in es:
        print(f"{a} -> {b}")
    cs = cycles(es)
    if cs:
        for c in cs:
            print("cycle: " + " <-> ".join(c))
    else:
        print("no cycles")
    sys.exit(1 if cs and check else 0)


if __name__ == "__main__":
    main()
